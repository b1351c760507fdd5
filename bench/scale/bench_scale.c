/* Simulator speed and memory at scale: ResNet-50 data parallel on dgx1-v100 nodes (fat tree,
 * InfiniBand EDR), one iteration, for growing device counts, with the flow network and with the
 * analytic one. Each point runs in its own child process so its peak RSS is its own; wall time
 * is the median of 3 runs.
 * Targets: 1024 GPUs with the flow network under 2 s; 16384 GPUs with the analytic network
 * under 2 s; memory growing at most linearly.
 * Usage: bench_scale [MAX_DEVICES]   (default 16384) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simulate.h"

typedef struct {
  double wall_s;
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
  int max_devices = argc > 1 ? atoi(argv[1]) : 16384;
  printf("%-9s %-8s %-9s %12s %10s %12s %14s\n", "network", "devices", "symmetry", "wall_s",
         "peak_MB", "events", "iteration_ms");
  const struct {
    const char *net;
    int symmetry;
    int max;
  } modes[] = {{"flow", 0, 4096}, {"analytic", 1, 1 << 30}, {"analytic", 0, 4096}};
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
    for (int devices = 64; devices <= max_devices && devices <= modes[m].max; devices *= 4) {
      double walls[3];
      result r = {0};
      for (int k = 0; k < 3; k++) {
        if (run_child(devices / 8, modes[m].net, modes[m].symmetry, &r) != 0) {
          fprintf(stderr, "bench_scale: %d devices failed\n", devices);
          return 1;
        }
        walls[k] = r.wall_s;
      }
      qsort(walls, 3, sizeof walls[0], cmp);
      printf("%-9s %-8d %-9s %12.4f %10.1f %12llu %14.3f\n", modes[m].net, devices,
             modes[m].symmetry ? "on" : "off", walls[1], r.maxrss_kb / 1024.0,
             (unsigned long long)r.events, r.iteration_s * 1e3);
      fflush(stdout);
    }
  return 0;
}
