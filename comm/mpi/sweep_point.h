/* The contract between dtsim-mpi sweep and the sweep of `dtsim sweep` (sim/): one point of a
 * sweep, by index, as the JSON line `dtsim run --json` prints. */
#ifndef DTSIM_SWEEP_POINT_H
#define DTSIM_SWEEP_POINT_H

#include <glib.h>

#include "scenario.h"

/* Returns the number of points of the sweep described by `sweep` (its axes: devices_list,
 * nodes_list, strategy_list, allreduce_list, batch_list, scaling), in the order `dtsim sweep`
 * prints them, or -1 with an error. When 0 <= index < that number, also simulates point
 * `index` and appends its JSON object (one line, no newline) to `json_line`; index -1 only
 * counts. Deterministic: the same point gives the same bytes on any rank. Writes no file: the
 * scenario's trace and csv outputs are ignored. */
int dtsim_sweep_point(const sim_scenario *sweep, int index, GString *json_line, GError **error);

#endif
