/* Simulator speed and memory at scale: ResNet-50 data parallel on dgx1-v100 nodes (fat tree,
 * InfiniBand EDR), one iteration, for growing device counts, with the flow network and with the
 * analytic one, folded (symmetry on: one device built for all, collectives without flows when
 * exact) and unfolded (every device built, every transfer a flow). Each point runs in its own
 * child process so its peak RSS is its own; wall time (sim_wall_s) and CPU time (user +
 * system of the child, the figure to compare on a shared machine) are medians of 3 runs. Each
 * row ends
 * with the dtsim command that simulates the same point (its sim_wall_s and the peak RSS of
 * /usr/bin/time -v are the same figures).
 * The allreduce is the ring (see the comment in measure()).
 * Targets (issue 16): flow, folded: 16384 GPUs in at most 1 s and 200 MB, 65536 GPUs in at
 * most 4 s and 1 GB, 1000000 GPUs accepted; at most 10 KB per device.
 * Usage: bench_scale [MAX_DEVICES [MAX_UNFOLDED]]   (defaults 1000000 and 4096) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simulate.h"

typedef struct {
  double wall_s;
  double cpu_s;           /* user + system CPU time of the whole child */
  long maxrss_kb;
  uint64_t events;
  double iteration_s;
} result;

static int run_child(int nodes, const char *net, int symmetry, result *out)
{
  int fd[2];
  if (pipe(fd) != 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    sim_scenario s;
    sim_scenario_init(&s);
    g_assert_true(sim_scenario_set(&s, "topology", "fat-tree", NULL, NULL));
    g_assert_true(sim_scenario_set(&s, "inter", "ib-edr", NULL, NULL));
    g_assert_true(sim_scenario_set(&s, "net-model", net, NULL, NULL));
    /* The ring allreduce: its collectives fold (one device for all, no flows where exact).
     * The default on GPUs, nccl, runs its channels as flows on every rank and does not fold
     * yet, which costs about 2e6 events at 256 GPUs (docs/architecture.md). */
    g_assert_true(sim_scenario_set(&s, "allreduce", "ring", NULL, NULL));
    s.nodes = nodes;
    s.symmetry = symmetry;
    sim_report r;
    sim_run_opts o = {0};
    GError *error = NULL;
    result res = {0};
    if (!sim_simulate(&s, &o, &r, &error)) {
      fprintf(stderr, "bench_scale: %s\n", error->message);
      _exit(1);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    res.wall_s = r.sim_wall_s;
    res.cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
                (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    res.maxrss_kb = ru.ru_maxrss;
    res.events = r.events;
    res.iteration_s = r.iteration_time_s;
    if (write(fd[1], &res, sizeof res) != sizeof res)
      _exit(1);
    _exit(0);
  }
  close(fd[1]);
  ssize_t got = read(fd[0], out, sizeof *out);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return got == sizeof *out && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
  int max_devices = argc > 1 ? atoi(argv[1]) : 1000000;
  int max_unfolded = argc > 2 ? atoi(argv[2]) : 4096;
  printf("# %s %d %d\n", argv[0], max_devices, max_unfolded);
  printf("%-9s %-8s %-9s %10s %10s %10s %8s %12s %14s  %s\n", "network", "devices", "symmetry",
         "wall_s", "cpu_s", "peak_MB", "KB/dev", "events", "iteration_ms", "command");
  const struct {
    const char *net;
    int symmetry;
    int max;
  } modes[] = {{"flow", 1, 1 << 30},
               {"flow", 0, max_unfolded},
               {"analytic", 1, 1 << 30},
               {"analytic", 0, max_unfolded}};
  const int counts[] = {64, 256, 1024, 4096, 16384, 65536, 262144, 1000000};
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
      int devices = counts[k];
      if (devices > max_devices || devices > modes[m].max)
        break;
      double walls[3], cpus[3];
      result r = {0};
      for (int rep = 0; rep < 3; rep++) {
        if (run_child(devices / 8, modes[m].net, modes[m].symmetry, &r) != 0) {
          fprintf(stderr, "bench_scale: %d devices failed\n", devices);
          return 1;
        }
        walls[rep] = r.wall_s;
        cpus[rep] = r.cpu_s;
      }
      qsort(walls, 3, sizeof walls[0], cmp);
      qsort(cpus, 3, sizeof cpus[0], cmp);
      printf("%-9s %-8d %-9s %10.4f %10.4f %10.1f %8.2f %12llu %14.3f  dtsim run --nodes %d "
             "--topology fat-tree --inter ib-edr --allreduce ring --net-model %s --symmetry %s --json\n",
             modes[m].net, devices, modes[m].symmetry ? "on" : "off", walls[1], cpus[1],
             r.maxrss_kb / 1024.0, r.maxrss_kb * 1.024 / devices, (unsigned long long)r.events,
             r.iteration_s * 1e3, devices / 8, modes[m].net, modes[m].symmetry ? "on" : "off");
      fflush(stdout);
    }
  return 0;
}
