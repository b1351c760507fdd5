/* dtsim-mpi search: spreads the simulations of a `dtsim search` over the ranks. Every rank
 * parses the same options and enumerates the same candidates (sim_search_new, deterministic);
 * candidate i goes to rank i mod size (cyclic, as dtsim-mpi sweep does, so neighbouring
 * candidates, which cost about the same, land on different ranks), each rank simulates its own
 * on --jobs threads, and every rank gathers all results, so each ranks them alike and the flow
 * phase's finalists are spread the same way. Rank 0 prints and writes exactly what `dtsim
 * search` would (table or --json, --csv, --plot), whatever the number of ranks. */
#include "comm_mpi_run.h"
#include "search.h"
#include "util.h"

#include <string.h>

/* Simulates this rank's share of the n listed candidates and gives every rank all n results
 * (the results are plain bytes, the same layout on every rank of this binary). */
static void spread(comm_mpi_ctx *ctx, const sim_search *S, gboolean flow, const guint *which,
                   guint n, sim_search_result *all)
{
  guint size = (guint)ctx->size, rank = (guint)ctx->rank;
  g_autofree sim_search_result *work = g_new0(sim_search_result, MAX(n, 1));
  g_autoptr(GError) error = NULL;
  gboolean ok = sim_search_evaluate(S, flow, which, n, rank, size, sim_search_jobs(S), NULL,
                                    NULL, work, &error);
  comm_mpi__agree(ctx, ok, error);
  /* Pack this rank's results (j = rank, rank + size, ...), gather, unpack. */
  guint count = n > rank ? (n - rank + size - 1) / size : 0;
  g_autofree sim_search_result *mine = g_new0(sim_search_result, MAX(count, 1));
  for (guint k = 0; k < count; k++)
    mine[k] = work[rank + k * size];
  g_autofree int *counts = g_new(int, size);
  g_autofree int *displs = g_new(int, size);
  int off = 0;
  for (guint r = 0; r < size; r++) {
    guint c = n > r ? (n - r + size - 1) / size : 0;
    counts[r] = (int)(c * sizeof(sim_search_result));
    displs[r] = off;
    off += counts[r];
  }
  g_autofree sim_search_result *gathered = g_new0(sim_search_result, MAX(n, 1));
  MPI_Allgatherv(mine, (int)(count * sizeof(sim_search_result)), MPI_BYTE, gathered, counts,
                 displs, MPI_BYTE, MPI_COMM_WORLD);
  for (guint r = 0; r < size; r++)
    for (guint k = 0; k < (guint)counts[r] / sizeof(sim_search_result); k++)
      all[r + k * size] = gathered[(guint)displs[r] / sizeof(sim_search_result) + k];
}

int comm_mpi__cmd_search(comm_mpi_ctx *ctx, int argc, char **argv)
{
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  if (!comm_mpi__scenario(ctx, "[SCENARIO.ini] - a search spread over the ranks", NULL,
                          SIM_CMD_SEARCH, sim_search_check, argc, argv, &s))
    return 0;
  g_autoptr(GError) error = NULL;
  /* Ranks on one machine share its cores: one thread each unless --jobs says otherwise. */
  if (!sim_scenario_given(&s, "jobs"))
    s.jobs = 1;
  g_autoptr(sim_search) S = sim_search_new(&s, &error);
  if (!S)
    comm_mpi__fail_all(ctx, error);
  const guint *wave;
  guint w;
  while ((w = sim_search_next_wave(S, &wave)) > 0) {
    g_autofree sim_search_result *out = g_new0(sim_search_result, w);
    spread(ctx, S, FALSE, wave, w, out);
    sim_search_wave_done(S, out);
  }
  sim_search_rank(S);
  guint K;
  const guint *which = sim_search_finalists(S, &K);
  if (K)
    spread(ctx, S, TRUE, which, K, sim_search_flow(S));
  sim_search_finish(S);
  if (ctx->rank != 0)
    return 0;
  g_autoptr(trace_search_table) table = sim_search_table(S);
  if ((s.csv && !trace_search_write_csv(table, s.csv, &error)) ||
      (s.plot && !trace_search_write_svg(table, s.plot, &error)))
    comm_mpi__fail_here(ctx, error);
  trace_search_print(table, s.json, stdout, s.json ? stderr : stdout);
  return 0;
}
