/* Sweeps: one scenario expanded over lists of device counts, node counts, strategies,
 * allreduce algorithms and batches; every point simulated like `dtsim run`; the results printed
 * as a table, JSON lines or CSV, and plotted as SVG. The points are independent, so the MPI
 * driver can spread them over ranks (sim_sweep_run_point) and gather the reports. */
#ifndef DTSIM_SWEEP_H
#define DTSIM_SWEEP_H

#include <stdio.h>

#include "measure.h"
#include "scenario.h"

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

void sim_sweep_print_table(FILE *out, GPtrArray *points, const sim_report *reports);
void sim_sweep_print_json(FILE *out, GPtrArray *points, const sim_report *reports);
gboolean sim_sweep_write_csv(const char *path, GPtrArray *points, const sim_report *reports,
                             GError **error);
/* Two panels: throughput (samples/s) and scaling efficiency (%) against devices (log2). */
gboolean sim_sweep_write_svg(const char *path, const char *title, GPtrArray *points,
                             const sim_report *reports, GError **error);

#endif
