/* `dtsim search`: every parallel configuration of a job on a cluster, ranked (see search.h). */
#include "cli.h"
#include "search.h"
#include "util.h"

#include <unistd.h>

typedef struct {
  guint base, total;          /* evaluations before this phase, in all */
} progress_state;

static void progress(guint done, guint total, gpointer data)
{
  const progress_state *p = data;
  (void)total;
  const int width = 30;
  guint d = p->base + done;
  int filled = p->total ? (int)((uint64_t)d * width / p->total) : width;
  fprintf(stderr, "\r[%.*s%*s] %u/%u", filled, "##############################", width - filled,
          "", d, p->total);
  fflush(stderr);
}

int dtsim_cmd_search(int argc, char **argv)
{
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  g_autoptr(GError) error = NULL;
  if (!sim_search_parse_args(&s, argc, argv, &error))
    return dtsim_cli_fail("search", error);
  g_autoptr(sim_search) S = sim_search_new(&s, &error);
  if (!S)
    return dtsim_cli_fail("search", error);
  gboolean tty = isatty(STDERR_FILENO);
  guint n = sim_search_n_candidates(S);
  /* The bar counts the analytic evaluations, then the flow ones (at most --top more). */
  progress_state ps = {0, n + (guint)MIN((int64_t)n, s.top)};
  gint64 t0 = g_get_monotonic_time();
  const guint *wave;
  guint w;
  while ((w = sim_search_next_wave(S, &wave)) > 0) {
    g_autofree sim_search_result *out = g_new0(sim_search_result, w);
    if (!sim_search_evaluate(S, FALSE, wave, w, 0, 1, sim_search_jobs(S), tty ? progress : NULL,
                             &ps, out, &error)) {
      if (tty)
        fputs("\r\033[K", stderr);
      return dtsim_cli_fail("search", error);
    }
    sim_search_wave_done(S, out);
    ps.base += w;
  }
  sim_search_rank(S);
  /* Those the bound left out are gone: the bar ends at the simulations made. */
  n = sim_search_n_candidates(S);
  guint K;
  const guint *which = sim_search_finalists(S, &K);
  ps.base = n;
  ps.total = n + K;
  if (K && !sim_search_evaluate(S, TRUE, which, K, 0, 1, sim_search_jobs(S),
                                tty ? progress : NULL, &ps, sim_search_flow(S), &error)) {
    if (tty)
      fputs("\r\033[K", stderr);
    return dtsim_cli_fail("search", error);
  }
  sim_search_finish(S);
  double wall_s = (double)(g_get_monotonic_time() - t0) * 1e-6;
  if (tty)
    fputs("\r\033[K", stderr);
  g_autoptr(trace_search_table) table = sim_search_table(S);
  if (s.csv && !trace_search_write_csv(table, s.csv, &error))
    return dtsim_cli_fail("search", error);
  if (s.plot && !trace_search_write_svg(table, s.plot, &error))
    return dtsim_cli_fail("search", error);
  trace_search_print(table, s.json, stdout, s.json ? stderr : stdout);
  /* Wall-clock figures vary from run to run: on stderr, so the ranking on stdout does not. */
  fprintf(stderr, "search: %u simulations in %.2f s on %u threads (%.0f configurations/s)\n",
          n + K, wall_s, sim_search_jobs(S), wall_s > 0 ? (n + K) / wall_s : 0);
  return 0;
}
