/* The scenario's side of the whole training run (trainrun_keys.c): the keys --train-tokens,
 * --train-samples, --gpu-hour-cost, --mtbf-hours, --checkpoint-interval-min,
 * --checkpoint-write-s and --restart-s, their checks, and the run's figures added to a report.
 * The computation itself is trainrun.h. */
#ifndef DTSIM_TRAINRUN_KEYS_H
#define DTSIM_TRAINRUN_KEYS_H

#include "measure.h"
#include "scenario.h"
#include "trainrun.h"

/* TRUE when the scenario asks for a whole run (--train-tokens or --train-samples). */
gboolean sim_trainrun_asked(const sim_scenario *s);
/* Refuses both targets at once, the run's other keys without a target, a zero MTBF or
 * interval. Called by sim_scenario_check(). */
gboolean sim_trainrun_check(const sim_scenario *s, GError **error);
/* The typed options of the run. */
void sim_trainrun_opts_from_scenario(const sim_scenario *s, sim_trainrun_opts *o);
/* Adds the whole run to a report of one steady iteration (nothing when none is asked). */
gboolean sim_trainrun_report(const sim_scenario *s, sim_report *r, GError **error);

#endif
