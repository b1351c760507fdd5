/* Stragglers and failed links (--straggler DEVICE:FACTOR, --link-down A-B): their keys, their
 * checks, and what they do to a run. A straggler's compute tasks take FACTOR times as long; a
 * failed link is left out of the topology's routes (comm/topology.c). A straggler breaks the
 * symmetry that folds a data-parallel run onto one device: such a run is unfolded, and the
 * report says so. A 3-D run stays folded where that is exact (every straggler in one
 * data-parallel replica, which then stands for all) and is refused otherwise. */
#ifndef DTSIM_FAULTS_H
#define DTSIM_FAULTS_H

#include "comm_net.h"
#include "plan.h"
#include "scenario.h"

/* One --straggler item: a device by global rank ("5") or by name ("node1/dev3"). */
typedef struct {
  int64_t rank;                 /* >= 0, or -1 when named by node and local index */
  int64_t node, local;          /* when rank is -1 */
  double factor;                /* compute takes this many times as long, >= 1 */
  char text[48];                /* as given, for messages */
} sim_straggler;

/* Refuses what cannot be simulated: failed links on the analytic network (its collectives are
 * closed forms that see no route) or with --strategy 3d, stragglers with --strategy chaos.
 * Called by sim_scenario_check(). */
gboolean sim_faults_check(const sim_scenario *s, GError **error);

/* TRUE when a straggler is given: a folded data-parallel run must be unfolded. */
gboolean sim_faults_unfold(const sim_scenario *s);

/* The failed links of a scenario into a cluster spec (which keeps pointers into s). */
void sim_faults_spec(const sim_scenario *s, comm_cluster_spec *spec);

/* Slows the stragglers' units of a built plan. `folded_3d` with the tensor-parallel and
 * pipeline degrees of a folded 3-D plan (one unit per stage: tensor rank 0 of replica 0);
 * otherwise every straggler must be a unit of the plan. Writes what it did to the symmetry of
 * the run into note (empty when nothing changed), NUL-terminated within note_size. */
gboolean sim_faults_apply(const sim_scenario *s, const comm_topology *topo, sim_plan *plan,
                          gboolean folded_3d, uint32_t tp, uint32_t pp, char *note,
                          size_t note_size, GError **error);

#endif
