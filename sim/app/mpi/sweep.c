/* dtsim-mpi sweep: spreads the points of a `dtsim sweep` over the ranks and gathers one table.
 * Every rank expands the same sweep (sim_sweep_expand, deterministic); point i goes to rank
 * i mod size (cyclic, so neighbouring points, which cost about the same, land on different
 * ranks); each rank simulates its points (sim_sweep_run_point); rank 0 gathers the reports,
 * puts them back in point order and prints and writes exactly what `dtsim sweep` would (table
 * or --json, --csv, --plot), whatever the number of ranks. */
#include "comm_mpi_run.h"
#include "sweep.h"
#include "util.h"

#include <string.h>

int comm_mpi__cmd_sweep(comm_mpi_ctx *ctx, int argc, char **argv)
{
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  if (!comm_mpi__scenario(ctx, "[SCENARIO.ini] - a sweep spread over the ranks", NULL,
                          SIM_CMD_SWEEP, NULL, argc, argv, &s))
    return 0;
  g_autoptr(GError) error = NULL;
  if (s.trace) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                "--trace: a sweep writes no trace; run the point you want with 'dtsim run'");
    comm_mpi__fail_all(ctx, error);
  }
  g_autoptr(GPtrArray) points = sim_sweep_expand(&s, &error);
  if (points == NULL)
    comm_mpi__fail_all(ctx, error);
  guint n = points->len;

  /* This rank's points, simulated; a failure anywhere ends the job with that point's error. */
  g_autofree sim_report *mine = g_new0(sim_report, n / (guint)ctx->size + 1);
  guint count = 0;
  gboolean ok = TRUE;
  for (guint i = (guint)ctx->rank; ok && i < n; i += (guint)ctx->size, count++) {
    const sim_sweep_point *pt = points->pdata[i];
    ok = sim_sweep_run_point(pt, &mine[count], &error);
    if (!ok)
      g_prefix_error(&error, "%s, %" G_GUINT64_FORMAT " devices: ", pt->variant, pt->devices);
  }
  comm_mpi__agree(ctx, ok, error);

  /* Gather the reports as bytes (plain numbers, the same layout on every rank of this binary):
   * rank r sent the points r, r + size, r + 2 size, ... */
  g_autofree int *counts = NULL, *displs = NULL;
  g_autofree sim_report *gathered = NULL;
  if (ctx->rank == 0) {
    counts = g_new(int, ctx->size);
    displs = g_new(int, ctx->size);
    int off = 0;
    for (int r = 0; r < ctx->size; r++) {
      guint pr = n > (guint)r ? (n - (guint)r + (guint)ctx->size - 1) / (guint)ctx->size : 0;
      counts[r] = (int)(pr * sizeof(sim_report));
      displs[r] = off;
      off += counts[r];
    }
    gathered = g_new0(sim_report, MAX(n, 1));
  }
  MPI_Gatherv(mine, (int)(count * sizeof(sim_report)), MPI_BYTE, gathered, counts, displs,
              MPI_BYTE, 0, MPI_COMM_WORLD);
  if (ctx->rank != 0)
    return 0;

  g_autofree sim_report *reports = g_new0(sim_report, MAX(n, 1));
  for (int r = 0; r < ctx->size; r++)
    for (int k = 0; k < counts[r] / (int)sizeof(sim_report); k++)
      reports[(guint)r + (guint)k * (guint)ctx->size] =
          gathered[displs[r] / (int)sizeof(sim_report) + k];
  g_autoptr(GArray) rows = sim_sweep_rows(points);
  const trace_sweep_row *row = (const trace_sweep_row *)(gpointer)rows->data;
  if (!sim_sweep_add_speedups(points, reports, &error) ||
      (s.csv && !trace_sweep_write_csv(s.csv, row, rows->len, reports, &error)))
    comm_mpi__fail_here(ctx, error);
  if (s.plot) {
    g_autofree char *title = g_strdup_printf("%s, %s, %s scaling", s.model, s.system,
                                             s.scaling == SIM_SCALING_STRONG ? "strong" : "weak");
    if (!trace_sweep_write_svg(s.plot, title, row, rows->len, reports, &error))
      comm_mpi__fail_here(ctx, error);
  }
  if (s.json)
    trace_sweep_print_json(stdout, row, rows->len, reports);
  else
    trace_sweep_print_table(stdout, row, rows->len, reports);
  return 0;
}
