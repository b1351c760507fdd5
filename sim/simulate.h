/* From a validated scenario to a report: build the cost table, the cluster, the strategy's
 * task graph, run it on the engine with the chosen network model, and measure. Shared by
 * `run`, `sweep` and the MPI driver. */
#ifndef DTSIM_SIMULATE_H
#define DTSIM_SIMULATE_H

#include "report.h"
#include "scenario.h"

typedef struct {
  gboolean with_speedup;      /* also simulate one device to report speedup and efficiency */
  const char *command_line;   /* recorded in the trace */
} sim_run_opts;

/* Simulates the scenario. Writes --trace and --csv if set. */
gboolean sim_simulate(const sim_scenario *s, const sim_run_opts *o, sim_report *out,
                      GError **error);

/* The cost table for a scenario's model, batch, precision and optimizer on `device_name`
 * (catalog name or INI file; the scenario's calibration overlay applies). */
sim_costs *sim_costs_build(const sim_scenario *s, const char *device_name, GError **error);

#endif
