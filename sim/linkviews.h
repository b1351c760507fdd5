/* Views of link load for `run` (--trace-links N, --link-heatmap FILE.svg): the options, and
 * the wiring of the flow network's per-flow reports to traces/linkload.h. */
#ifndef DTSIM_LINKVIEWS_H
#define DTSIM_LINKVIEWS_H

#include "chrome.h"
#include "comm_net.h"
#include "plan.h"
#include "scenario.h"

typedef struct sim_linkviews sim_linkviews;

/* Refuses --trace-links without --trace. Called by sim_scenario_check(). */
gboolean sim_linkviews_check(const sim_scenario *s, GError **error);
/* The heat map's file can be written (before anything is simulated). */
gboolean sim_linkviews_check_outputs(const sim_scenario *s, GError **error);
/* Starts recording what the views asked need; NULL (and no error) when none is asked. Refuses
 * a heat map of a folded run (collectives after the first of each kind are timed without
 * flows there) and of the analytic network. */
sim_linkviews *sim_linkviews_attach(const sim_scenario *s, const sim_plan *plan, gboolean folded,
                                    comm_net *net, const comm_topology *topo, gboolean tracing,
                                    GError **error);
/* Writes the busiest links' counters into the trace (if any) and the heat map (if asked). */
gboolean sim_linkviews_finish(sim_linkviews *v, trace_chrome *trace, sim_engine *engine,
                              sim_time_ps end_ps, const char *title, GError **error);
void sim_linkviews_free(sim_linkviews *v);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sim_linkviews, sim_linkviews_free)

#endif
