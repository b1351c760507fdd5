/* Chrome trace writer: an observer of the engine that writes the Trace Event Format (JSON
 * object form) readable by Perfetto and chrome://tracing.
 *
 * Processes are the engine's processes (devices, hosts, parameter servers, links), threads
 * are their tracks (streams). Spans become complete ("X") slices; spans that overlap on one
 * track without nesting (concurrent flows on a link, say) are spread over extra lanes named
 * "TRACK #2", "TRACK #3", ... so that slices on one thread always nest. Links become flow
 * arrows ("s"/"f"), counters "C" events. Metadata ("M") comes first in the file.
 * Timestamps are microseconds with three decimals (nanoseconds), printed from integers so the
 * file is byte-identical across runs.
 *
 * The body is streamed to an anonymous temporary file while the simulation runs; close()
 * writes metadata and body to PATH.tmp-XXXXXX and renames it to PATH, so a failed or
 * interrupted run never leaves a partial trace. */
#ifndef DTSIM_TRACE_CHROME_H
#define DTSIM_TRACE_CHROME_H

#include <glib.h>

#include "engine.h"

typedef struct trace_chrome trace_chrome;

trace_chrome *trace_chrome_new(const char *path, GError **error);
void trace_chrome_free(trace_chrome *t);   /* abandons an unclosed trace; NULL allowed */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(trace_chrome, trace_chrome_free)

/* Subscribes to an engine. One writer may observe one engine. */
void trace_chrome_attach(trace_chrome *t, sim_engine *engine);
/* A key/value pair for the "otherData" object (e.g. the command line, the scenario). */
void trace_chrome_set_info(trace_chrome *t, const char *key, const char *value);
/* Samples large runs: only the first `n` processes of each kind (devices, hosts, servers,
 * links) are written, with their threads and events (0: all). */
void trace_chrome_set_max_procs(trace_chrome *t, uint32_t n);
uint32_t trace_chrome_hidden_procs(const trace_chrome *t);
/* Stops writing events after `max_events` (0: no limit); the file then says it was cut. */
void trace_chrome_set_limit(trace_chrome *t, uint64_t max_events);
uint64_t trace_chrome_events(const trace_chrome *t);
gboolean trace_chrome_truncated(const trace_chrome *t);
/* Writes the file and renames it into place. */
gboolean trace_chrome_close(trace_chrome *t, GError **error);
/* A counter event at a given time (views computed after the run: link load). */
void trace_chrome_counter_at(trace_chrome *t, sim_proc_id proc, const char *name,
                             sim_time_ps at_ps, double value);

/* Appends picoseconds as microseconds with three decimals. */
void trace__us(GString *out, sim_time_ps ps);

#endif
