/* Wall time and peak memory of a ring allreduce of 1 MiB on 256 to 2048 ranks (32 to 256
 * DGX-1V nodes of 8 V100, InfiniBand EDR, fat tree), with the flow and the analytic network
 * models. Each case runs in its own child process so that its peak resident set (getrusage
 * ru_maxrss) is its own; memory should grow linearly with the ranks.
 *
 * Usage: bench_collective [--bytes SIZE] [--algorithm NAME] [--system S] [--inter F]
 *                         [--topology T] [--ranks LIST] [--steps] [--models LIST]
 * --steps runs rings step by step (2(n-1) x n flows) instead of one flow per rank and phase.
 * --models: any of analytic, flow, unshared (default all three). `unshared` is the flow model's
 * result computed without flows when no two transfers can share a link (exact, as symmetric
 * data parallelism runs its collectives; comm/coll/unshared.h); other algorithms say so.
 * Targets (2048 ranks): flow under 2 s and 200 MB, analytic under 10 ms. */
#include "coll.h"
#include "unshared.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
  const char *system, *inter, *topology, *algorithm;
  uint64_t bytes;
  comm_coll_form form;
} bench_opts;

/* User + system CPU time of this process, ms. */
static double cpu_ms(const struct rusage *ru)
{
  return ((double)ru->ru_utime.tv_sec + (double)ru->ru_stime.tv_sec) * 1e3 +
         ((double)ru->ru_utime.tv_usec + (double)ru->ru_stime.tv_usec) * 1e-3;
}

static void on_done(sim_engine *engine, void *user)
{
  *(gboolean *)user = TRUE;
}

/* Runs one case and prints its line; returns the exit status for the child. `unshared`: on the
 * flow network, compute the collective without flows when its transfers never share a link
 * (exact; comm/coll/unshared.h), as symmetric data parallelism does. */
static int run_case(const bench_opts *o, uint32_t ranks, comm_net_model model, gboolean unshared)
{
  g_autoptr(GError) error = NULL;
  gint64 t0 = g_get_monotonic_time();
  comm_cluster_spec spec = {.system = o->system, .nodes = ranks / 8, .devices_per_node = 8,
                            .inter = o->inter, .topology = o->topology};
  g_autoptr(comm_topology) topo = comm_topology_build(&spec, &error);
  if (!topo) {
    fprintf(stderr, "bench_collective: %s\n", error->message);
    return 2;
  }
  gint64 t1 = g_get_monotonic_time();
  g_autoptr(comm_coll_group) group = comm_coll_group_new(topo, NULL, 0);
  g_autoptr(sim_engine) engine = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(engine, topo, model);
  const comm_coll_algorithm *algo = comm_coll_algorithm_find(o->algorithm, "--algorithm", &error);
  if (!algo) {
    fprintf(stderr, "bench_collective: %s\n", error->message);
    return 2;
  }
  /* Reduction at a V100's HBM2 bandwidth / 3 (900 GB/s / 3: two reads and a write). */
  comm_coll_args args = {.op = COMM_COLL_ALLREDUCE, .bytes = o->bytes, .reduce_Bps = 300e9,
                         .form = o->form};
  if (unshared) {
    sim_time_ps duration = 0;
    uint64_t flows = 0;
    comm_coll_unshared_result res =
        comm_coll_unshared_time(net, group, algo, &args, &duration, &flows, &error);
    if (res == COMM_COLL_UNSHARED_ERROR) {
      fprintf(stderr, "bench_collective: %s\n", error->message);
      return 2;
    }
    gint64 t2 = g_get_monotonic_time();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    if (res == COMM_COLL_UNSHARED_SHARED) {
      printf("%6u %-9s %-19s (its transfers share links: runs as flows)\n", ranks, "unshared",
             algo ? comm_coll_algorithm_name(algo) : "?");
      return 0;
    }
    printf("%6u %-9s %-19s %10.3f %10.3f %10.3f %10.1f %10" G_GUINT64_FORMAT " %10d %12.3f "
           "%10.1f\n",
           ranks, "unshared", comm_coll_algorithm_name(comm_coll_resolve(algo, group, &args)),
           (t1 - t0) / 1e3, (t2 - t1) / 1e3, (t2 - t0) / 1e3, ru.ru_maxrss / 1024.0, flows, 0,
           sim_time_to_s(duration) * 1e6, cpu_ms(&ru));
    fflush(stdout);
    return 0;
  }
  g_autoptr(comm_coll) coll = comm_coll_new(net, group, algo, &args, &error);
  if (!coll) {
    fprintf(stderr, "bench_collective: %s\n", error->message);
    return 2;
  }
  gboolean done = FALSE;
  comm_coll_start(coll, on_done, &done);
  sim_engine_run(engine);
  gint64 t2 = g_get_monotonic_time();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double sim_s = sim_time_to_s(comm_coll_end_time(coll) - comm_coll_start_time(coll));
  printf("%6u %-9s %-19s %10.3f %10.3f %10.3f %10.1f %10" G_GUINT64_FORMAT " %10" G_GUINT64_FORMAT
         " %12.3f %10.1f\n",
         ranks, model == COMM_NET_FLOW ? "flow" : "analytic",
         comm_coll_algorithm_name(comm_coll_algorithm_used(coll)), (t1 - t0) / 1e3,
         (t2 - t1) / 1e3, (t2 - t0) / 1e3, ru.ru_maxrss / 1024.0, comm_coll_flows(coll),
         sim_engine_events(engine), sim_s * 1e6, cpu_ms(&ru));
  fflush(stdout);
  return done ? 0 : 1;
}

int main(int argc, char **argv)
{
  bench_opts o = {"dgx1-v100", "ib-edr", "fat-tree", "ring", 1 << 20, COMM_COLL_FORM_PIPELINED};
  const char *ranks_s = "256,512,1024,2048";
  const char *models_s = "analytic,flow,unshared";
  for (int i = 1; i < argc; i += 2) {
    g_autoptr(GError) e = NULL;
    if (g_str_equal(argv[i], "--steps")) {
      o.form = COMM_COLL_FORM_STEPS;
      i--;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "bench_collective: %s needs a value\n", argv[i]);
      return 2;
    }
    if (g_str_equal(argv[i], "--bytes")) {
      if (!dt_parse_size(argv[i + 1], "--bytes", &o.bytes, &e)) {
        fprintf(stderr, "bench_collective: %s\n", e->message);
        return 2;
      }
    } else if (g_str_equal(argv[i], "--algorithm")) {
      o.algorithm = argv[i + 1];
    } else if (g_str_equal(argv[i], "--system")) {
      o.system = argv[i + 1];
    } else if (g_str_equal(argv[i], "--inter")) {
      o.inter = argv[i + 1];
    } else if (g_str_equal(argv[i], "--topology")) {
      o.topology = argv[i + 1];
    } else if (g_str_equal(argv[i], "--models")) {
      models_s = argv[i + 1];
    } else if (g_str_equal(argv[i], "--ranks")) {
      ranks_s = argv[i + 1];
    } else {
      fprintf(stderr, "bench_collective: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  g_autoptr(GError) e = NULL;
  g_autoptr(GArray) ranks = dt_parse_int_list(ranks_s, "--ranks", 8, 1 << 20, &e);
  if (!ranks) {
    fprintf(stderr, "bench_collective: %s\n", e->message);
    return 2;
  }
  printf("# allreduce of %" G_GUINT64_FORMAT " bytes, %s nodes of 8, %s, %s, %s rings\n", o.bytes,
         o.system, o.inter, o.topology,
         o.form == COMM_COLL_FORM_STEPS ? "step-by-step" : "pipelined");
  printf("#");
  for (int i = 0; i < argc; i++)
    printf(" %s", argv[i]);
  printf("\n%6s %-9s %-19s %10s %10s %10s %10s %10s %10s %12s %10s\n", "ranks", "model",
         "algorithm", "build_ms", "run_ms", "wall_ms", "peak_MB", "flows", "events",
         "sim_time_us", "cpu_ms");
  fflush(stdout);
  const comm_net_model models[3] = {COMM_NET_ANALYTIC, COMM_NET_FLOW, COMM_NET_FLOW};
  int status = 0;
  const char *model_names[3] = {"analytic", "flow", "unshared"};
  g_auto(GStrv) wanted = g_strsplit(models_s, ",", -1);
  for (int m = 0; m < 3; m++) {
    if (!g_strv_contains((const char *const *)wanted, model_names[m]))
      continue;
    for (guint i = 0; i < ranks->len; i++) {
      pid_t pid = fork();
      if (pid < 0) {
        perror("bench_collective: fork");
        return 1;
      }
      if (pid == 0)
        _exit(run_case(&o, (uint32_t)g_array_index(ranks, int64_t, i), models[m], m == 2));
      int ws = 0;
      waitpid(pid, &ws, 0);
      if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
        status = 1;
    }
  }
  return status;
}
