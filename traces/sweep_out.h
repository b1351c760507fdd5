/* The outputs of a sweep: one row per point as its table, JSON lines, CSV and plot show it,
 * with the point's report (report.h). The sweep itself (its points, their runs and speedups) is
 * sim/app/sweep.c's; sim_sweep_rows() makes these rows. */
#ifndef DTSIM_TRACES_SWEEP_OUT_H
#define DTSIM_TRACES_SWEEP_OUT_H

#include <glib.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

/* One point of a sweep. */
typedef struct {
  const char *variant;          /* its line in the plot: "ring, batch 64" */
  const char *model, *strategy, *allreduce;
  int64_t nodes, devices_per_node;
  int64_t batch;                /* per-device batch, samples */
  uint64_t devices;
} trace_sweep_row;

/* n rows and their reports r[0 .. n - 1]. */
void trace_sweep_print_table(FILE *out, const trace_sweep_row *rows, guint n, const sim_report *r);
void trace_sweep_print_json(FILE *out, const trace_sweep_row *rows, guint n, const sim_report *r);
gboolean trace_sweep_write_csv(const char *path, const trace_sweep_row *rows, guint n,
                               const sim_report *r, GError **error);
/* Two panels: throughput (samples/s) and scaling efficiency (%) against devices (log2). */
gboolean trace_sweep_write_svg(const char *path, const char *title, const trace_sweep_row *rows,
                               guint n, const sim_report *r, GError **error);

#endif
