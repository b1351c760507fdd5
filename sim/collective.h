/* One collective on a modeled cluster, as `dtsim collective` runs it: the cluster, device and
 * precision come from the scenario's shared keys; each size runs on a fresh engine and network.
 * Lifecycle: sim_collective_prepare() -> sim_collective_run() per size ->
 * sim_collective_clear(). */
#ifndef DTSIM_COLLECTIVE_H
#define DTSIM_COLLECTIVE_H

#include "coll.h"
#include "scenario.h"

typedef struct {
  comm_topology *topology;
  comm_coll_group *group;      /* every device of the cluster */
  comm_coll_args args;         /* bytes set per run */
  const char *command_line;    /* recorded in a trace (set after prepare), or NULL */
} sim_collective;

typedef struct {
  uint64_t bytes;
  sim_time_ps time_ps;
  uint64_t flows, events, peak_flows;
  double wall_s;
  const char *algorithm;       /* the concrete algorithm "auto" or "nccl" chose (static) */
} sim_collective_result;

/* Builds the cluster and the arguments; errors name the key. */
gboolean sim_collective_prepare(const sim_scenario *s, sim_collective *c, GError **error);
gboolean sim_collective_run(const sim_scenario *s, const sim_collective *c, uint64_t bytes,
                            sim_collective_result *res, GError **error);
void sim_collective_clear(sim_collective *c);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(sim_collective, sim_collective_clear)

#endif
