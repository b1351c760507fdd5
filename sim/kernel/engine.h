/* The discrete-event engine: an integer-picosecond clock, a future-event list, and observers.
 *
 * The engine knows nothing of devices, layers or networks. Models schedule callbacks on it and
 * report what they do as spans (a named interval on a track), links (an arrow from one track
 * to another) and counters; observers such as the Chrome trace writer subscribe to those
 * reports. Lifecycle: sim_engine_new() -> schedule / add observers -> sim_engine_run() ->
 * sim_engine_free().
 *
 * Events with equal time fire in the order they were scheduled (FIFO by a sequence number),
 * so the same inputs always give the same event order. */
#ifndef DTSIM_SIM_ENGINE_H
#define DTSIM_SIM_ENGINE_H

#include <glib.h>
#include "sim_time.h"

typedef struct sim_engine sim_engine;
typedef struct sim_event sim_event;

typedef void (*sim_event_fn)(sim_engine *engine, void *data, uint64_t arg);

/* What models read of the engine on nearly every event, at the start of the engine's record so
 * that the accessors below compile to one load in the caller (a call into engine.c was 2% of a
 * pipeline run's instructions). Written only by engine.c. */
typedef struct {
  sim_time_ps now;
  gboolean observed;      /* at least one observer subscribed */
} sim_engine_head;

sim_engine *sim_engine_new(void);
void sim_engine_free(sim_engine *engine);          /* NULL is allowed */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sim_engine, sim_engine_free)

static inline sim_time_ps sim_engine_now(const sim_engine *engine)
{
  return ((const sim_engine_head *)(const void *)engine)->now;
}

/* The place of a call, "file:line", relative to the source tree (the build maps the source
 * folder away with -fmacro-prefix-map). The scheduling macros below pass their caller's. */
#define SIM_HERE __FILE__ ":" G_STRINGIFY(__LINE__)

/* Schedules fn(engine, data, arg) at absolute time `at_ps`. Returns a handle that stays valid
 * until the event fires or is cancelled. An event in the past (at_ps < now) is a programming
 * error of the model that asks for it: nothing is scheduled, NULL is returned, the engine keeps
 * the first such error with the caller's file and line and the two times (sim_engine_error()),
 * and the run stops after the current event; later runs dispatch nothing. */
#define sim_engine_schedule_at(engine, at_ps, fn, data, arg)                                      \
  sim_engine__schedule_at(engine, at_ps, fn, data, arg, SIM_HERE)
/* The same, `delay_ps` (>= 0; a negative delay is the same error) after now; saturates at
 * SIM_TIME_MAX. */
#define sim_engine_schedule_in(engine, delay_ps, fn, data, arg)                                   \
  sim_engine__schedule_in(engine, delay_ps, fn, data, arg, SIM_HERE)
/* Removes a pending event. */
void sim_engine_cancel(sim_engine *engine, sim_event *event);
/* Moves a pending event to a new time (>= now); it takes a fresh sequence number, as if it
 * had been cancelled and scheduled again. A time in the past is the error above: the event
 * stays where it was and FALSE is returned. */
#define sim_engine_reschedule(engine, event, at_ps)                                               \
  sim_engine__reschedule(engine, event, at_ps, SIM_HERE)
/* What the macros call; `where` is the caller's SIM_HERE (a string that outlives the engine). */
sim_event *sim_engine__schedule_at(sim_engine *engine, sim_time_ps at_ps, sim_event_fn fn,
                                   void *data, uint64_t arg, const char *where);
sim_event *sim_engine__schedule_in(sim_engine *engine, sim_time_ps delay_ps, sim_event_fn fn,
                                   void *data, uint64_t arg, const char *where);
gboolean sim_engine__reschedule(sim_engine *engine, sim_event *event, sim_time_ps at_ps,
                                const char *where);
/* The first scheduling error, one line ("an event was scheduled at 99 ps, in the past (the
 * current time is 100 ps), by comm/net.c:1288"), or NULL. Owned by the engine. Owners check it after a run
 * (sim_exec_run() does) and fail with it. */
const char *sim_engine_error(const sim_engine *engine);
/* Time of a pending event. */
sim_time_ps sim_engine_event_time(const sim_engine *engine, const sim_event *event);

/* Dispatches events in (time, sequence) order until none is pending or sim_engine_stop() is
 * called. Returns the number of events dispatched by this call. */
uint64_t sim_engine_run(sim_engine *engine);
/* Dispatches events with time <= limit_ps only; the clock is left at the last event run. */
uint64_t sim_engine_run_until(sim_engine *engine, sim_time_ps limit_ps);
void sim_engine_stop(sim_engine *engine);
/* The watchdog: a run stops by itself once more than `events` events in a row have happened at
 * one simulated time (the clock has stopped advancing: a model rescheduling itself with zero
 * delay). Default SIM_STALL_EVENTS; 0 turns it off. */
#define SIM_STALL_EVENTS 20000000
void sim_engine_set_stall_limit(sim_engine *engine, uint64_t events);
/* TRUE when the watchdog stopped the last run. */
gboolean sim_engine_stalled(const sim_engine *engine);

uint64_t sim_engine_events(const sim_engine *engine);   /* dispatched since creation */
/* Events scheduled at SIM_TIME_MAX: a time reached only when a duration or a sum saturated
 * (about 106 days of simulated time). Owners turn a non-zero count into an error rather than
 * report a clipped result. */
uint64_t sim_engine_saturated(const sim_engine *engine);
/* FALSE with the user's error (exit status 2: the inputs ask for more than the clock holds)
 * when an event was scheduled at SIM_TIME_MAX. */
gboolean sim_engine_check_clock(const sim_engine *engine, GError **error);
size_t sim_engine_pending(const sim_engine *engine);
double sim_engine_wall_s(const sim_engine *engine);     /* wall-clock seconds inside run */
/* An order-sensitive hash of (time, sequence) of every dispatched event: equal hashes for two
 * runs mean the same events happened in the same order. */
uint64_t sim_engine_trace_hash(const sim_engine *engine);

/* Internal, for tests: makes `seq` the next sequence number (at most 2^32 - 1, where the
 * pending events are renumbered), to reach the renumbering without 4e9 schedule calls. */
void sim__engine_set_next_seq(sim_engine *engine, uint64_t seq);

/* ---- Tracks and observers -------------------------------------------------------------- */

/* What a process of the trace stands for; trace writers use it to order and colour. */
typedef enum {
  SIM_PROC_DEVICE,
  SIM_PROC_HOST,
  SIM_PROC_PARAM_SERVER,
  SIM_PROC_LINK,
  SIM_PROC_OTHER,
} sim_proc_kind;

typedef uint32_t sim_proc_id;
typedef uint32_t sim_track_id;   /* a thread (stream) of a process */

typedef struct {
  sim_proc_id id;
  sim_proc_kind kind;
  const char *name;
  int sort_index;
} sim_proc_info;

typedef struct {
  sim_track_id id;
  sim_proc_id proc;
  const char *name;
  int sort_index;
} sim_track_info;

/* A named interval of activity on a track: a compute kernel, a transfer, a collective step. */
typedef struct {
  uint64_t id;
  sim_track_id track;
  const char *name;       /* must stay valid until the span ends */
  const char *category;   /* "compute", "comm", "flow", "wait", ... */
  sim_time_ps start_ps;
  sim_time_ps end_ps;     /* valid in span_end only */
  uint64_t bytes;         /* bytes moved or touched, 0 if none */
  uint64_t flops;         /* FLOPs executed, 0 if none */
} sim_span;

/* Every callback may be NULL. Strings passed to callbacks live only during the call. */
typedef struct {
  void (*proc_added)(void *user, const sim_proc_info *proc);
  void (*track_added)(void *user, const sim_track_info *track);
  void (*span_begin)(void *user, const sim_span *span);
  void (*span_end)(void *user, const sim_span *span);
  /* An arrow from `from` at from_ps (e.g. a send) to `to` at to_ps (its receive). */
  void (*link)(void *user, uint64_t link_id, sim_track_id from, sim_time_ps from_ps,
               sim_track_id to, sim_time_ps to_ps, const char *name);
  void (*counter)(void *user, sim_proc_id proc, const char *name, sim_time_ps at_ps, double value);
  /* The simulation is over; end_ps is the time of the last event. */
  void (*finished)(void *user, sim_time_ps end_ps);
} sim_observer_ops;

/* Subscribes an observer. Processes and tracks registered earlier are replayed to it. */
void sim_engine_add_observer(sim_engine *engine, const sim_observer_ops *ops, void *user);
static inline gboolean sim_engine_has_observers(const sim_engine *engine)
{
  return ((const sim_engine_head *)(const void *)engine)->observed;
}

sim_proc_id sim_engine_add_proc(sim_engine *engine, sim_proc_kind kind, const char *name,
                                int sort_index);
sim_track_id sim_engine_add_track(sim_engine *engine, sim_proc_id proc, const char *name,
                                  int sort_index);

/* Reports activity. These are cheap no-ops (span ids still unique) when nobody observes. */
uint64_t sim_engine_span_begin(sim_engine *engine, sim_track_id track, const char *name,
                               const char *category, uint64_t bytes, uint64_t flops);
void sim_engine_span_end(sim_engine *engine, uint64_t span_id);
uint64_t sim_engine_link(sim_engine *engine, sim_track_id from, sim_time_ps from_ps,
                         sim_track_id to, sim_time_ps to_ps, const char *name);
void sim_engine_counter(sim_engine *engine, sim_proc_id proc, const char *name, double value);
/* Tells observers the run is over (called once by the owner after the last run). */
void sim_engine_finish(sim_engine *engine);

#endif
