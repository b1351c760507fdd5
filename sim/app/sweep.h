/* Sweeps: one scenario expanded over lists of device counts, node counts, strategies,
 * allreduce algorithms and batches; every point simulated like `dtsim run`; the results printed
 * as a table, JSON lines or CSV, and plotted as SVG by traces/sweep_out.c. The points are independent, so the MPI
 * driver can spread them over ranks (sim_sweep_run_point) and gather the reports. */
#ifndef DTSIM_SWEEP_H
#define DTSIM_SWEEP_H

#include <stdio.h>

#include "measure.h"
#include "scenario.h"
#include "sweep_out.h"

typedef struct {
  sim_scenario scenario;   /* the point's full scenario */
  char *variant;           /* what distinguishes its line in the plot: "ring, batch 64" */
  uint64_t devices;
} sim_sweep_point;

/* Expands the sweep axes of `base`. Errors name the option (e.g. a device count that is not a
 * multiple of the devices per node). */
GPtrArray *sim_sweep_expand(const sim_scenario *base, GError **error);
gboolean sim_sweep_run_point(const sim_sweep_point *point, sim_report *out, GError **error);
/* Speedup and scaling efficiency of each point against the one-device run of its variant. */
gboolean sim_sweep_add_speedups(GPtrArray *points, sim_report *reports, GError **error);

/* The points as their outputs show them (traces/sweep_out.h: table, JSON, CSV, SVG): a
 * GArray of trace_sweep_row pointing into `points`, which must outlive it. */
GArray *sim_sweep_rows(GPtrArray *points);

#endif
