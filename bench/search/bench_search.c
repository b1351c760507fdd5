/* Speed of `dtsim search` on a large job: GPT-3 175B on 1024 A100 (128 dgx-a100 nodes), global
 * batch 1536, when the 3d strategy and transformer workloads are built in; otherwise (no 3d
 * strategy registered) ResNet-50 on the same 1024 A100 at 32 samples per device, every CNN
 * family. The whole search (enumeration, every candidate on the analytic network, the best
 * --top K again on the flow network) on all processors, as `dtsim search` runs it.
 * Target: the GPT-3 search in at most 30 s on a 2-core machine.
 * Prints: candidates, wall and CPU seconds, configurations per second, the best three.
 * Usage: bench_search [NODES] [TOP]   (default 128 nodes, top 10) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "plan.h"
#include "strategy.h"
#include "search.h"
#include "util.h"

static double cpu_s(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
         1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static void set(sim_scenario *s, const char *key, const char *value)
{
  g_autoptr(GError) error = NULL;
  if (!sim_scenario_set(s, key, value, NULL, &error)) {
    fprintf(stderr, "bench_search: %s\n", error->message);
    exit(1);
  }
}

int main(int argc, char **argv)
{
  const char *nodes = argc > 1 ? argv[1] : "128";
  const char *top = argc > 2 ? argv[2] : "10";
  gboolean llm = sim_strategy_find("3d") != NULL;
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  set(&s, "system", "dgx-a100");
  set(&s, "nodes", nodes);
  set(&s, "top", top);
  if (llm) {
    set(&s, "model", "gpt3-175b");
    set(&s, "global-batch", "1536");
    set(&s, "precision", "bf16");
  } else {
    set(&s, "model", "resnet50");
    set(&s, "batch", "32");
  }
  g_autoptr(GError) error = NULL;
  gint64 t0 = g_get_monotonic_time();
  double c0 = cpu_s();
  g_autoptr(sim_search) S = NULL;
  if (!sim_search_check(&s, &error) || !(S = sim_search_new(&s, &error)) ||
      !sim_search_run(S, NULL, NULL, &error)) {
    fprintf(stderr, "bench_search: %s\n", error->message);
    return 1;
  }
  double wall = (double)(g_get_monotonic_time() - t0) * 1e-6, cpu = cpu_s() - c0;
  guint n = sim_search_n_candidates(S), rows = sim_search_n_rows(S);
  printf("search: %s on %s x dgx-a100%s\n", s.model, nodes,
         llm ? ", global batch 1536, 3d strategy" : ", 32 samples per device (no 3d strategy built in: CNN families)");
  printf("  %" G_GUINT64_FORMAT " combinations, %u simulated on the analytic network, %u on the flow network\n",
         sim_search_n_combinations(S), n, rows);
  printf("  wall %.2f s, CPU %.2f s on %u threads: %.1f configurations/s (wall), %.1f per CPU second\n",
         wall, cpu, sim_search_jobs(S), wall > 0 ? (n + rows) / wall : 0,
         cpu > 0 ? (n + rows) / cpu : 0);
  if (llm)
    printf("  target (GPT-3 175B, 1024 A100, at most 30 s): %s\n", wall <= 30 ? "met" : "NOT met");
  for (guint k = 0; k < rows && k < 3; k++) {
    const sim_search_result *r;
    guint i = sim_search_row(S, k, &r);
    printf("  %u. %-50s %10.3f ms %12.1f samples/s\n", k + 1, sim_search_label(S, i),
           r->report.iteration_time_s * 1e3, r->report.throughput_samples_per_s);
  }
  return 0;
}
