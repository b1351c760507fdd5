/* The engine: future-event list, dispatch loop, and the observer bus.
 *
 * The future-event list is a binary heap stored in an array of (time, sequence, event) entries,
 * so comparisons never touch the event itself; each event remembers its heap index, which makes
 * cancel and reschedule O(log n). Events come from a pool of slabs unless the build turns the
 * pool off (SIM_EVENT_POOL undefined), in which case every event is its own allocation so
 * AddressSanitizer and valgrind see each one. */
#include "engine.h"

#include <string.h>

struct sim_event {
  sim_event_fn fn;
  void *data;
  uint64_t arg;
  size_t heap_index;      /* position in engine->heap; SIZE_MAX when not pending */
  sim_event *next_free;   /* pool free list */
};

typedef struct {
  sim_time_ps time;
  uint64_t seq;
  sim_event *event;
} heap_entry;

typedef struct {
  const sim_observer_ops *ops;
  void *user;
} observer;

typedef struct {
  sim_proc_info info;     /* info.name owned */
} proc_rec;

typedef struct {
  sim_track_info info;    /* info.name owned */
} track_rec;

#define SLAB_EVENTS 4096

struct sim_engine {
  sim_time_ps now;
  uint64_t next_seq;
  heap_entry *heap;
  size_t heap_len, heap_cap;

  sim_event *free_list;
  GPtrArray *slabs;

  gboolean stopped;
  uint64_t events;
  uint64_t refused;
  uint64_t hash;
  gint64 wall_us;

  GArray *observers;      /* of observer */
  GArray *procs;          /* of proc_rec */
  GArray *tracks;         /* of track_rec */
  GHashTable *open_spans; /* span id -> sim_span* (only while observed) */
  uint64_t next_span_id;
  uint64_t next_link_id;
  gboolean finished;
};

/* ---- Event allocation ------------------------------------------------------------------ */

static sim_event *event_alloc(sim_engine *e)
{
#ifdef SIM_EVENT_POOL
  if (e->free_list == NULL) {
    sim_event *slab = g_new(sim_event, SLAB_EVENTS);
    g_ptr_array_add(e->slabs, slab);
    for (size_t i = 0; i < SLAB_EVENTS; i++) {
      slab[i].next_free = e->free_list;
      e->free_list = &slab[i];
    }
  }
  sim_event *ev = e->free_list;
  e->free_list = ev->next_free;
  return ev;
#else
  (void)e;
  return g_new(sim_event, 1);
#endif
}

static void event_release(sim_engine *e, sim_event *ev)
{
  ev->heap_index = SIZE_MAX;
#ifdef SIM_EVENT_POOL
  ev->next_free = e->free_list;
  e->free_list = ev;
#else
  (void)e;
  g_free(ev);
#endif
}

/* ---- Heap -------------------------------------------------------------------------------- */

static inline gboolean entry_less(const heap_entry *a, const heap_entry *b)
{
  return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static inline void heap_place(sim_engine *e, size_t i, heap_entry entry)
{
  e->heap[i] = entry;
  entry.event->heap_index = i;
}

static void heap_sift_up(sim_engine *e, size_t i)
{
  heap_entry moving = e->heap[i];
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!entry_less(&moving, &e->heap[parent]))
      break;
    heap_place(e, i, e->heap[parent]);
    i = parent;
  }
  heap_place(e, i, moving);
}

static void heap_sift_down(sim_engine *e, size_t i)
{
  heap_entry moving = e->heap[i];
  size_t n = e->heap_len;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= n)
      break;
    if (child + 1 < n && entry_less(&e->heap[child + 1], &e->heap[child]))
      child++;
    if (!entry_less(&e->heap[child], &moving))
      break;
    heap_place(e, i, e->heap[child]);
    i = child;
  }
  heap_place(e, i, moving);
}

static void heap_push(sim_engine *e, heap_entry entry)
{
  if (e->heap_len == e->heap_cap) {
    e->heap_cap = e->heap_cap ? e->heap_cap * 2 : 1024;
    e->heap = g_renew(heap_entry, e->heap, e->heap_cap);
  }
  e->heap[e->heap_len] = entry;
  entry.event->heap_index = e->heap_len;
  e->heap_len++;
  heap_sift_up(e, e->heap_len - 1);
}

/* Removes the entry at index i. */
static void heap_remove(sim_engine *e, size_t i)
{
  e->heap_len--;
  if (i == e->heap_len)
    return;
  heap_entry last = e->heap[e->heap_len];
  heap_place(e, i, last);
  if (i > 0 && entry_less(&last, &e->heap[(i - 1) / 2]))
    heap_sift_up(e, i);
  else
    heap_sift_down(e, i);
}

/* ---- Lifecycle ------------------------------------------------------------------------------ */

static void span_free(gpointer p) { g_free(p); }

sim_engine *sim_engine_new(void)
{
  sim_engine *e = g_new0(sim_engine, 1);
  e->slabs = g_ptr_array_new_with_free_func(g_free);
  e->observers = g_array_new(FALSE, FALSE, sizeof(observer));
  e->procs = g_array_new(FALSE, FALSE, sizeof(proc_rec));
  e->tracks = g_array_new(FALSE, FALSE, sizeof(track_rec));
  e->open_spans = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, span_free);
  e->hash = 1469598103934665603ULL; /* FNV-1a offset basis */
  e->next_span_id = 1;
  e->next_link_id = 1;
  return e;
}

void sim_engine_free(sim_engine *e)
{
  if (!e)
    return;
#ifndef SIM_EVENT_POOL
  for (size_t i = 0; i < e->heap_len; i++)
    g_free(e->heap[i].event);
#endif
  g_free(e->heap);
  g_ptr_array_free(e->slabs, TRUE);
  for (guint i = 0; i < e->procs->len; i++)
    g_free((char *)g_array_index(e->procs, proc_rec, i).info.name);
  for (guint i = 0; i < e->tracks->len; i++)
    g_free((char *)g_array_index(e->tracks, track_rec, i).info.name);
  g_array_free(e->procs, TRUE);
  g_array_free(e->tracks, TRUE);
  g_array_free(e->observers, TRUE);
  g_hash_table_destroy(e->open_spans);
  g_free(e);
}

sim_time_ps sim_engine_now(const sim_engine *e) { return e->now; }

/* ---- Scheduling ----------------------------------------------------------------------------- */

sim_event *sim_engine_schedule_at(sim_engine *e, sim_time_ps at_ps, sim_event_fn fn, void *data,
                                  uint64_t arg)
{
  g_return_val_if_fail(e != NULL && fn != NULL, NULL);
  if (at_ps < e->now) {
    e->refused++;
    return NULL;
  }
  sim_event *ev = event_alloc(e);
  ev->fn = fn;
  ev->data = data;
  ev->arg = arg;
  heap_push(e, (heap_entry){at_ps, e->next_seq++, ev});
  return ev;
}

sim_event *sim_engine_schedule_in(sim_engine *e, sim_time_ps delay_ps, sim_event_fn fn,
                                  void *data, uint64_t arg)
{
  if (delay_ps < 0) {
    e->refused++;
    return NULL;
  }
  return sim_engine_schedule_at(e, sim_time_add_sat(e->now, delay_ps), fn, data, arg);
}

void sim_engine_cancel(sim_engine *e, sim_event *ev)
{
  g_return_if_fail(ev != NULL && ev->heap_index < e->heap_len && e->heap[ev->heap_index].event == ev);
  heap_remove(e, ev->heap_index);
  event_release(e, ev);
}

gboolean sim_engine_reschedule(sim_engine *e, sim_event *ev, sim_time_ps at_ps)
{
  g_return_val_if_fail(ev != NULL && ev->heap_index < e->heap_len, FALSE);
  if (at_ps < e->now) {
    e->refused++;
    return FALSE;
  }
  size_t i = ev->heap_index;
  heap_entry entry = {at_ps, e->next_seq++, ev};
  heap_entry old = e->heap[i];
  e->heap[i] = entry;
  if (entry_less(&entry, &old))
    heap_sift_up(e, i);
  else
    heap_sift_down(e, i);
  return TRUE;
}

sim_time_ps sim_engine_event_time(const sim_engine *e, const sim_event *ev)
{
  g_return_val_if_fail(ev != NULL && ev->heap_index < e->heap_len, -1);
  return e->heap[ev->heap_index].time;
}

/* ---- Running ------------------------------------------------------------------------------ */

static inline void mix_hash(sim_engine *e, uint64_t v)
{
  for (int i = 0; i < 8; i++) {
    e->hash ^= (v >> (8 * i)) & 0xff;
    e->hash *= 1099511628211ULL; /* FNV-1a prime */
  }
}

uint64_t sim_engine_run_until(sim_engine *e, sim_time_ps limit_ps)
{
  uint64_t start_events = e->events;
  gint64 t0 = g_get_monotonic_time();
  e->stopped = FALSE;
  while (!e->stopped && e->heap_len > 0) {
    heap_entry top = e->heap[0];
    if (top.time > limit_ps)
      break;
    heap_remove(e, 0);
    e->now = top.time;
    e->events++;
    mix_hash(e, (uint64_t)top.time);
    mix_hash(e, top.seq);
    sim_event *ev = top.event;
    sim_event_fn fn = ev->fn;
    void *data = ev->data;
    uint64_t arg = ev->arg;
    event_release(e, ev);
    fn(e, data, arg);
  }
  e->wall_us += g_get_monotonic_time() - t0;
  return e->events - start_events;
}

uint64_t sim_engine_run(sim_engine *e) { return sim_engine_run_until(e, SIM_TIME_MAX); }
void sim_engine_stop(sim_engine *e) { e->stopped = TRUE; }
uint64_t sim_engine_events(const sim_engine *e) { return e->events; }
uint64_t sim_engine_refused(const sim_engine *e) { return e->refused; }
size_t sim_engine_pending(const sim_engine *e) { return e->heap_len; }
double sim_engine_wall_s(const sim_engine *e) { return (double)e->wall_us * 1e-6; }
uint64_t sim_engine_trace_hash(const sim_engine *e) { return e->hash; }

double sim_engine_events_per_s(const sim_engine *e)
{
  return e->wall_us > 0 ? (double)e->events / ((double)e->wall_us * 1e-6) : 0.0;
}

/* ---- Observers -------------------------------------------------------------------------- */

#define FOR_OBSERVERS(e, o)                                                                     \
  for (guint _i = 0; _i < (e)->observers->len; _i++)                                           \
    for (observer *o = &g_array_index((e)->observers, observer, _i); o; o = NULL)

void sim_engine_add_observer(sim_engine *e, const sim_observer_ops *ops, void *user)
{
  g_return_if_fail(e != NULL && ops != NULL);
  observer o = {ops, user};
  g_array_append_val(e->observers, o);
  for (guint i = 0; i < e->procs->len; i++)
    if (ops->proc_added)
      ops->proc_added(user, &g_array_index(e->procs, proc_rec, i).info);
  for (guint i = 0; i < e->tracks->len; i++)
    if (ops->track_added)
      ops->track_added(user, &g_array_index(e->tracks, track_rec, i).info);
}

gboolean sim_engine_has_observers(const sim_engine *e) { return e->observers->len > 0; }

sim_proc_id sim_engine_add_proc(sim_engine *e, sim_proc_kind kind, const char *name,
                                int sort_index)
{
  proc_rec r = {{(sim_proc_id)e->procs->len, kind, g_strdup(name), sort_index}};
  g_array_append_val(e->procs, r);
  FOR_OBSERVERS(e, o)
  if (o->ops->proc_added)
    o->ops->proc_added(o->user, &r.info);
  return r.info.id;
}

sim_track_id sim_engine_add_track(sim_engine *e, sim_proc_id proc, const char *name,
                                  int sort_index)
{
  g_return_val_if_fail(proc < e->procs->len, 0);
  track_rec r = {{(sim_track_id)e->tracks->len, proc, g_strdup(name), sort_index}};
  g_array_append_val(e->tracks, r);
  FOR_OBSERVERS(e, o)
  if (o->ops->track_added)
    o->ops->track_added(o->user, &r.info);
  return r.info.id;
}

const char *sim_engine_track_name(const sim_engine *e, sim_track_id track)
{
  g_return_val_if_fail(track < e->tracks->len, NULL);
  return g_array_index(e->tracks, track_rec, track).info.name;
}

uint64_t sim_engine_span_begin(sim_engine *e, sim_track_id track, const char *name,
                               const char *category, uint64_t bytes, uint64_t flops)
{
  uint64_t id = e->next_span_id++;
  if (e->observers->len == 0)
    return id;
  g_return_val_if_fail(track < e->tracks->len, id);
  sim_span *s = g_new(sim_span, 1);
  *s = (sim_span){id, track, name, category, e->now, -1, bytes, flops};
  g_hash_table_insert(e->open_spans, &s->id, s);
  FOR_OBSERVERS(e, o)
  if (o->ops->span_begin)
    o->ops->span_begin(o->user, s);
  return id;
}

void sim_engine_span_end(sim_engine *e, uint64_t span_id)
{
  if (e->observers->len == 0)
    return;
  sim_span *s = g_hash_table_lookup(e->open_spans, &span_id);
  g_return_if_fail(s != NULL);
  s->end_ps = e->now;
  FOR_OBSERVERS(e, o)
  if (o->ops->span_end)
    o->ops->span_end(o->user, s);
  g_hash_table_remove(e->open_spans, &span_id);
}

uint64_t sim_engine_link(sim_engine *e, sim_track_id from, sim_time_ps from_ps, sim_track_id to,
                         sim_time_ps to_ps, const char *name)
{
  uint64_t id = e->next_link_id++;
  FOR_OBSERVERS(e, o)
  if (o->ops->link)
    o->ops->link(o->user, id, from, from_ps, to, to_ps, name);
  return id;
}

void sim_engine_counter(sim_engine *e, sim_proc_id proc, const char *name, double value)
{
  FOR_OBSERVERS(e, o)
  if (o->ops->counter)
    o->ops->counter(o->user, proc, name, e->now, value);
}

void sim_engine_finish(sim_engine *e)
{
  if (e->finished)
    return;
  e->finished = TRUE;
  FOR_OBSERVERS(e, o)
  if (o->ops->finished)
    o->ops->finished(o->user, e->now);
}
