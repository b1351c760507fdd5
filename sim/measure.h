/* Measuring a run's report (traces/report.h) on its simulated timeline: device 0's streams
 * over the last iteration. */
#ifndef DTSIM_MEASURE_H
#define DTSIM_MEASURE_H

#include "plan.h"
#include "report.h"

/* Fills r from a finished execution of p. */
void sim_report_measure(sim_report *r, const sim_plan *p, const sim_exec *x);

#endif
