/* The timeline of a run: one CSV row per task of the graph (its kind, category, unit and
 * stream, start, end and duration in seconds, bytes and FLOPs), as `--csv` of `dtsim run`
 * writes it. A writer of results on the kernel's types (the task graph and its executor). */
#ifndef DTSIM_TRACES_TIMELINE_H
#define DTSIM_TRACES_TIMELINE_H

#include <glib.h>

#include "taskgraph.h"

/* Writes every task of `g` as run by `x` to `path`, whole or not at all. */
gboolean trace_timeline_write_csv(const char *path, const sim_graph *g, const sim_exec *x,
                                  GError **error);

#endif
