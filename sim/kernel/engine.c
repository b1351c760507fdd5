/* The engine: future-event list, dispatch loop, and the observer bus.
 *
 * The future-event list holds (time, sequence, event) entries, so ordering never touches the
 * event itself. It is a radix queue keyed by the integer picosecond time (below): time, then
 * sequence number (FIFO). A 4-ary heap, kept as a build option until it was measured against
 * the radix queue (bench_engine, hold model: 2.0e7 against 4.9e7 events per CPU second at 10^3
 * pending events, 3.8e6 against 1.1e7 at 10^6), was removed. Cancel and reschedule are lazy:
 * the event keeps the sequence number of its live entry, a rescheduled event gets a new entry,
 * and entries whose sequence no longer matches (stale) are dropped when they reach the front,
 * so neither needs to know where an entry sits. Events come from a pool of slabs unless the
 * build turns the pool off (SIM_EVENT_POOL undefined), in which case every event is its own
 * allocation so AddressSanitizer and valgrind see each one. */
#include "engine.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>

struct sim_event {
  sim_event_fn fn;
  void *data;
  uint64_t arg;
  sim_time_ps time;       /* when the live queue entry fires */
  uint64_t seq;           /* sequence number of the live queue entry; SEQ_DEAD if none */
  uint32_t refs;          /* queue entries (live or stale) pointing here */
  uint32_t index;         /* this event's index in the pool */
} __attribute__((aligned(64)));

#define SEQ_DEAD UINT64_MAX

/* 16 bytes, four to a 64-byte cache line. `tag` holds the entry's sequence number (high half)
 * and the event's pool index (low half). Sequence numbers stay below 2^32: before they would pass it, the pending events are renumbered from 0 in
 * their order (renumber()), so FIFO order among equal times always holds. */
typedef struct {
  sim_time_ps time;
  uint64_t tag;
} q_entry;

#define TAG(seq, index) (((uint64_t)(uint32_t)(seq) << 32) | (uint32_t)(index))
#define TAG_SEQ(tag) ((uint32_t)((tag) >> 32))
#define TAG_INDEX(tag) ((uint32_t)(tag))

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

#ifdef SIM_EVENT_POOL
#define SLAB_SHIFT 12     /* 4096 events per slab */
#else
#define SLAB_SHIFT 0      /* one allocation per event, freed when the event is */
#endif
#define SLAB_EVENTS (1u << SLAB_SHIFT)
/* The radix queue. Entries are kept relative to `last`, a time no later than any
 * queued entry (the time of the event dispatched last, or more): bucket 0 holds the entries at
 * `last`, in sequence order (a FIFO read from `head`); any other entry goes by the highest byte
 * L (0..7) in which its time differs from `last` and the value d of its time's byte L, to
 * bucket 1 + 256 L + d. Every time in a lower bucket is smaller than every time in a higher one,
 * so the next entries are in the lowest non-empty bucket, found through a bitmap and its
 * one-word summary. When bucket 0 is empty, `last` moves up to the smallest time in that bucket
 * and its entries go to bucket 0 or to lower levels: an entry moves at most once per level, 8
 * in all, and in practice once or twice (a delay of a few microseconds spans 3 bytes). */
#define RADIX_LEVELS 8
#define RADIX_BUCKETS (1 + 256 * RADIX_LEVELS)
#define RADIX_WORDS (256 * RADIX_LEVELS / 64)
#define RADIX_KEEP 64   /* entries an empty bucket's array may keep */
#define RADIX_SPARES 8  /* larger arrays kept for reuse by the next buckets that grow */
#define RADIX_SORT_MAX 1024  /* entries of a bucket of level 1 or 2 that may be sorted into the run */
#define RADIX_GROUP 32       /* a group of that sort of this many entries in any order is
                              * within its bound of moves (RADIX_MOVES) */
typedef struct {
  q_entry *items;
  uint32_t len, cap;
  uint32_t head;          /* bucket 0 only: first entry not yet taken */
} radix_bucket;

struct sim_engine {
  sim_engine_head head;   /* first: engine.h reads it through a cast */
  uint64_t next_seq;
  radix_bucket bucket[RADIX_BUCKETS];
  uint64_t full[RADIX_WORDS]; /* bit b - 1 set when bucket b (>= 1) holds entries */
  uint32_t full_words;    /* bit w set when full[w] is not zero */
  sim_time_ps last;       /* no queued time is smaller; bucket 0 holds the entries at it */
  int run_shift;          /* bucket 0 (the run) holds every queued t with (t ^ last) >> run_shift
                           * == 0, sorted by (time, sequence); 0: the entries at `last` only */
  size_t q_len;        /* entries in the queue, stale ones included */
  q_entry *spare[RADIX_SPARES]; /* arrays of more than RADIX_KEEP entries that emptied buckets
                                 * gave back, for buckets that grow past RADIX_KEEP */
  uint32_t spare_cap[RADIX_SPARES];
  uint32_t n_spare;
  size_t live;            /* pending events (queue entries that are not stale) */
  size_t stale;           /* stale queue entries */

  sim_event **slabs;      /* event index -> slabs[index >> SLAB_SHIFT][index & mask] */
  size_t n_slabs, slabs_cap;
  sim_event *free_head;   /* pool: first released event (its `arg` holds the next's address), or
                           * NULL */
  uint32_t fresh;         /* pool: events of the last slab handed out (never-used ones follow) */
  GArray *free_index;     /* no pool: uint32_t indices of free events */

  gboolean stopped;
  uint64_t events;
  char *error;            /* the first scheduling error, or NULL */
  uint64_t saturated;
  uint64_t stall_limit;   /* consecutive events at one time before the watchdog stops a run */
  uint64_t same_time;     /* consecutive events dispatched at the current time */
  gboolean stalled;
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

static inline sim_event *event_at(const sim_engine *e, uint32_t index)
{
  return &e->slabs[index >> SLAB_SHIFT][index & (SLAB_EVENTS - 1)];
}

#ifdef SIM_EVENT_POOL
static void pool_grow(sim_engine *e);

/* Released events first (the last released first), then the never-used events of the last
 * slab in index order, then a new slab. A slab's events are written only as they are first
 * handed out, so a run that never has many events pending touches a few pages of its 4096
 * events rather than all of them (fresh pages cost a fault and zeroing each). */
static inline sim_event *event_alloc(sim_engine *e)
{
  sim_event *ev = e->free_head;
  if (G_LIKELY(ev != NULL)) {
    e->free_head = (sim_event *)(uintptr_t)ev->arg;
    return ev;
  }
  if (G_UNLIKELY(e->n_slabs == 0 || e->fresh == SLAB_EVENTS))
    pool_grow(e);
  ev = &e->slabs[e->n_slabs - 1][e->fresh];
  ev->index = (uint32_t)((e->n_slabs - 1) << SLAB_SHIFT) + e->fresh++;
  return ev;
}

/* Adds a slab of SLAB_EVENTS events, none handed out yet. */
static void pool_grow(sim_engine *e)
{
  g_assert(e->n_slabs < ((size_t)UINT32_MAX >> SLAB_SHIFT));
  if (e->n_slabs == e->slabs_cap) {
    e->slabs_cap = e->slabs_cap ? 2 * e->slabs_cap : 64;
    e->slabs = g_renew(sim_event *, e->slabs, e->slabs_cap);
  }
  e->slabs[e->n_slabs++] = g_aligned_alloc(SLAB_EVENTS, sizeof(sim_event), _Alignof(sim_event));
  e->fresh = 0;
}

static inline void event_release(sim_engine *e, sim_event *ev)
{
  ev->arg = (uintptr_t)e->free_head;
  e->free_head = ev;
}
#else
static sim_event *event_alloc(sim_engine *e)
{
  if (e->free_index->len == 0) {
    g_assert(e->n_slabs < UINT32_MAX);
    if (e->n_slabs == e->slabs_cap) {
      e->slabs_cap = e->slabs_cap ? 2 * e->slabs_cap : 64;
      e->slabs = g_renew(sim_event *, e->slabs, e->slabs_cap);
    }
    uint32_t index = (uint32_t)e->n_slabs;
    e->slabs[e->n_slabs++] = NULL;
    g_array_append_val(e->free_index, index);
  }
  uint32_t index = g_array_index(e->free_index, uint32_t, e->free_index->len - 1);
  g_array_set_size(e->free_index, e->free_index->len - 1);
  if (e->slabs[index] == NULL)
    e->slabs[index] = g_aligned_alloc(1, sizeof(sim_event), _Alignof(sim_event));
  sim_event *ev = event_at(e, index);
  ev->index = index;
  return ev;
}

static void event_release(sim_engine *e, sim_event *ev)
{
  uint32_t index = ev->index;
  /* Free the memory so AddressSanitizer catches any use of a fired event's handle. */
  g_aligned_free(ev);
  e->slabs[index] = NULL;
  g_array_append_val(e->free_index, index);
}
#endif

/* ---- Future-event list ----------------------------------------------------------------- */

/* One comparison: a live event's sequence number is below SEQ_LIMIT and unique among the
 * queued entries (renumber() drops the stale entries before it reuses numbers), and a dead
 * event's SEQ_DEAD matches no tag. */
static inline gboolean entry_live(const q_entry *en, const sim_event *ev)
{
  return TAG_SEQ(en->tag) == (uint32_t)ev->seq;
}

/* Drops an entry's reference to its event; frees the event when nothing points to it and it
 * is no longer live. */
static inline void entry_drop(sim_engine *e, sim_event *ev)
{
  if (--ev->refs == 0 && ev->seq == SEQ_DEAD)
    event_release(e, ev);
}


static inline void radix_mark(sim_engine *e, int b)
{
  if (b == 0)
    return;
  e->full[(b - 1) >> 6] |= (uint64_t)1 << ((b - 1) & 63);
  e->full_words |= 1u << ((b - 1) >> 6);
}

static inline void radix_unmark(sim_engine *e, int b)
{
  if (b == 0)
    return;
  uint64_t w = e->full[(b - 1) >> 6] &= ~((uint64_t)1 << ((b - 1) & 63));
  if (w == 0)
    e->full_words &= ~(1u << ((b - 1) >> 6));
}

/* Calls fn on every queued entry (bucket 0 from its head); fn returns FALSE to drop it. The
 * order within each bucket is kept. */
static void radix_filter(sim_engine *e, gboolean (*fn)(sim_engine *, q_entry *, void *),
                         void *user)
{
  size_t total = 0;
  for (int b = 0; b < RADIX_BUCKETS; b++) {
    radix_bucket *k = &e->bucket[b];
    uint32_t kept = 0;
    for (uint32_t i = b == 0 ? k->head : 0; i < k->len; i++)
      if (fn(e, &k->items[i], user))
        k->items[kept++] = k->items[i];
    k->len = kept;
    k->head = 0;
    total += kept;
    if (kept == 0)
      radix_unmark(e, b);
  }
  e->q_len = total;
}

static gboolean keep_live(sim_engine *e, q_entry *en, void *user)
{
  sim_event *ev = event_at(e, TAG_INDEX(en->tag));
  if (entry_live(en, ev))
    return TRUE;
  entry_drop(e, ev);
  return FALSE;
}

/* Drops the stale entries. */
static void q_compact(sim_engine *e)
{
  radix_filter(e, keep_live, NULL);
  e->stale = 0;
}

static inline int radix_bucket_of(const sim_engine *e, sim_time_ps t)
{
  uint64_t x = (uint64_t)t ^ (uint64_t)e->last;
  if (x == 0)
    return 0;
  int level = (63 - __builtin_clzll(x)) >> 3;
  return 1 + (level << 8) + (int)(((uint64_t)t >> (level << 3)) & 255);
}

/* Makes room for one more entry in a full bucket: a kept array given back by a bucket that
 * emptied, when one is larger, else twice the room. A ring of a few thousand ranks fills a few
 * buckets of a few hundred entries each round and empties them again: without the kept arrays
 * each grew from 16 entries by doubling and was freed at its refill (2.5% of such a run in
 * malloc, realloc and free). */
static void bucket_grow(sim_engine *e, radix_bucket *k)
{
  g_assert(k->cap < UINT32_MAX / 2);
  if (e->n_spare > 0 && k->cap >= RADIX_KEEP) {
    uint32_t i = e->n_spare - 1;
    if (e->spare_cap[i] > k->cap) {
      q_entry *items = e->spare[i];
      memcpy(items, k->items, (size_t)k->len * sizeof(q_entry));
      g_free(k->items);
      k->items = items;
      k->cap = e->spare_cap[i];
      e->n_spare--;
      return;
    }
  }
  k->cap = k->cap ? 2 * k->cap : 16;
  k->items = g_renew(q_entry, k->items, k->cap);
}

/* Keeps the array of a bucket that emptied (more than RADIX_KEEP entries) for the next bucket
 * that grows, or frees it when RADIX_SPARES are kept already: with 2049 buckets, arrays kept
 * by each at the size of its fullest moment would hold many times the pending entries. */
static void bucket_give_back(sim_engine *e, radix_bucket *k)
{
  if (e->n_spare < RADIX_SPARES) {
    e->spare[e->n_spare] = k->items;
    e->spare_cap[e->n_spare++] = k->cap;
  } else {
    g_free(k->items);
  }
  k->items = NULL;
  k->cap = 0;
}

static inline void radix_append(sim_engine *e, int b, q_entry entry)
{
  radix_bucket *k = &e->bucket[b];
  if (G_UNLIKELY(k->len == k->cap))
    bucket_grow(e, k);
  k->items[k->len++] = entry;
  if (k->len == 1)
    radix_mark(e, b);
}

static void radix_rebase(sim_engine *e, sim_time_ps last);

/* Puts an entry into the run (bucket 0) after every entry of time <= its own: its sequence
 * number is the largest yet, so (time, sequence) order holds. The shorter side moves: entries
 * before the place go one slot left when the array has room before `head` (an entry at the
 * current time goes near the front), else the entries after it go one slot right. */
static void run_insert(sim_engine *e, q_entry entry)
{
  radix_bucket *zero = &e->bucket[0];
  uint32_t lo = zero->head, hi = zero->len;
  if (lo < hi && zero->items[hi - 1].time <= entry.time)
    lo = hi;   /* at the end, where half of a ring's entries go: no search */
  while (lo < hi) {   /* first entry whose time is above entry.time */
    uint32_t mid = lo + (hi - lo) / 2;
    if (zero->items[mid].time <= entry.time)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (zero->head > 0 && lo - zero->head < zero->len - lo) {
    memmove(&zero->items[zero->head - 1], &zero->items[zero->head],
            (lo - zero->head) * sizeof(q_entry));
    zero->head--;
    zero->items[lo - 1] = entry;
    return;
  }
  if (G_UNLIKELY(zero->len == zero->cap)) {
    g_assert(zero->cap < UINT32_MAX / 2);
    zero->cap = zero->cap ? 2 * zero->cap : 16;
    zero->items = g_renew(q_entry, zero->items, zero->cap);
  }
  memmove(&zero->items[lo + 1], &zero->items[lo], (zero->len - lo) * sizeof(q_entry));
  zero->items[lo] = entry;
  zero->len++;
}

static inline void q_push(sim_engine *e, q_entry entry)
{
  if (G_UNLIKELY(entry.time < e->last))
    radix_rebase(e, entry.time);
  uint64_t x = (uint64_t)entry.time ^ (uint64_t)e->last;
  e->q_len++;
  if (x >> e->run_shift == 0) {
    /* Within the run's span: at `last` itself (a run of one time) it simply goes last. */
    if (e->run_shift == 0)
      radix_append(e, 0, entry);
    else
      run_insert(e, entry);
    return;
  }
  int level = (63 - __builtin_clzll(x)) >> 3;
  radix_append(e, 1 + (level << 8) + (int)(((uint64_t)entry.time >> (level << 3)) & 255), entry);
}

/* Sorts src[0..n) by time, stably, into dst, when the times differ only in the bytes below byte
 * `level` (1 or 2) and are nearly in order: a counting pass by the 6 bits just below byte
 * `level` (64 groups), then insertion within the groups. FALSE, with src untouched, when the
 * insertion would move more than RADIX_MOVES entries per entry on the whole (then spreading the
 * entries over the lower levels costs less). Entries of equal times never move past each
 * other, so a group crowded with a few distinct times (a ring's ranks that end their steps
 * together) sorts in one pass; the bound of the moves is that of groups of at most 32 entries
 * in any order. */
#define RADIX_MOVES (RADIX_GROUP / 2)
static gboolean run_sort(const q_entry *src, q_entry *dst, uint32_t n, int level)
{
  uint32_t count[64] = {0};
  int shift = 8 * level - 6;
  for (uint32_t i = 0; i < n; i++)
    count[((uint64_t)src[i].time >> shift) & 63]++;
  uint32_t sum = 0;
  for (int d = 0; d < 64; d++) {
    uint32_t c = count[d];
    count[d] = sum;
    sum += c;
  }
  for (uint32_t i = 0; i < n; i++)
    dst[count[((uint64_t)src[i].time >> shift) & 63]++] = src[i];
  uint64_t budget = (uint64_t)RADIX_MOVES * n;
  for (uint32_t i = 1; i < n; i++) {
    if (dst[i].time >= dst[i - 1].time)
      continue;
    q_entry en = dst[i];
    uint32_t j = i;
    for (; j > 0 && dst[j - 1].time > en.time; j--)
      dst[j] = dst[j - 1];
    dst[j] = en;
    if (G_UNLIKELY((budget -= MIN(budget, i - j)) == 0))
      return FALSE;
  }
  return TRUE;
}

/* Bucket 0 (the run) is empty and the queue is not: `last` moves up to the smallest time of the
 * lowest non-empty bucket, which becomes the run or is spread to lower levels. The buckets of
 * the other entries stay as they are: the new `last` agrees with the old one in every byte above
 * that bucket's level L, and has its digit in byte L. The bucket's entries, and every later time
 * t with (t ^ last) < 2^(8 L) (the run's span), are below every time of the other buckets.
 * - A bucket of level 0 holds one time, as does a lone entry: they become the run as they are
 *   (copied into bucket 0's array, which stays in cache, or by swapping the arrays).
 * - A bucket of level 1 or 2 (times within 256 ps or 65.5 ns of each other) of up to
 *   RADIX_SORT_MAX entries, whose times are nearly in order (run_sort()), is sorted by time, stably,
 *   into the run, whose span is then that of the bucket: later entries in it are inserted in
 *   order. One move per entry, where spreading to lower levels would move most entries twice
 *   and refill once per handful of entries.
 * - Any other bucket goes, in its order, to bucket 0 (the entries at the new `last`)
 *   or to lower levels (all empty): an entry moves at most once per level.
 * Entries of one time are therefore always in one bucket, in sequence order: a new entry has the
 * largest sequence number yet, and a bucket only ever receives new entries or, while it is
 * empty, the entries of a higher bucket in their order; the sort is stable. FIFO among equal
 * times costs nothing. */
static void radix_refill(sim_engine *e)
{
  radix_bucket *zero = &e->bucket[0];
  int w = __builtin_ctz(e->full_words);
  int b = 1 + (w << 6) + __builtin_ctzll(e->full[w]);
  radix_bucket *k = &e->bucket[b];
  uint32_t n = k->len;
  radix_unmark(e, b);
  k->len = 0;
  zero->head = 0;
  int level = (b - 1) >> 8;
  if ((level == 0 || n == 1) && n <= RADIX_KEEP) {
    if (G_UNLIKELY(zero->cap < n)) {
      zero->cap = RADIX_KEEP;
      zero->items = g_renew(q_entry, zero->items, zero->cap);
    }
    memcpy(zero->items, k->items, n * sizeof(q_entry));
    e->last = k->items[0].time;
    zero->len = n;
    e->run_shift = 0;
    return;
  }
  gboolean sorted = FALSE;
  if (level > 0 && level <= 2 && n <= RADIX_SORT_MAX) {
    if (zero->cap < n) {
      zero->cap = n;
      zero->items = g_renew(q_entry, zero->items, zero->cap);
    }
    sorted = run_sort(k->items, zero->items, n, level);
  }
  if (level == 0) {
    /* Many entries of one time: the bucket becomes bucket 0 (their arrays swap). */
    q_entry *items = zero->items;
    uint32_t cap = zero->cap;
    zero->items = k->items;
    zero->cap = k->cap;
    zero->len = n;
    k->items = items;
    k->cap = cap;
    e->last = zero->items[0].time;
    e->run_shift = 0;
  } else if (sorted) {
    zero->len = n;
    e->last = zero->items[0].time;
    e->run_shift = level << 3;
  } else {
    zero->len = 0;
    e->run_shift = 0;
    sim_time_ps min = k->items[0].time;
    for (uint32_t i = 1; i < n; i++)
      min = k->items[i].time < min ? k->items[i].time : min;
    e->last = min;
    for (uint32_t i = 0; i < n; i++)
      radix_append(e, radix_bucket_of(e, k->items[i].time), k->items[i]);
  }
  /* An emptied bucket keeps a small array only (bucket_give_back). */
  if (k->cap > RADIX_KEEP)
    bucket_give_back(e, k);
}

static inline q_entry *q_top(sim_engine *e)
{
  if (e->q_len == 0)
    return NULL;
  radix_bucket *zero = &e->bucket[0];
  if (zero->head == zero->len)
    radix_refill(e);
  return &zero->items[zero->head];
}

static inline void q_pop(sim_engine *e)
{
  e->bucket[0].head++;
  e->q_len--;
}

/* A time below `last` is scheduled (possible after sim_engine_run_until() looked at an event
 * past its limit): every entry is placed again relative to the new, lower `last`. */
static void radix_rebase(sim_engine *e, sim_time_ps last)
{
  size_t n = e->q_len, m = 0;
  q_entry *all = g_new(q_entry, n ? n : 1);
  for (int b = 0; b < RADIX_BUCKETS; b++) {
    radix_bucket *k = &e->bucket[b];
    for (uint32_t i = b == 0 ? k->head : 0; i < k->len; i++)
      all[m++] = k->items[i];
    k->len = k->head = 0;
  }
  memset(e->full, 0, sizeof e->full);
  e->full_words = 0;
  e->last = last;
  e->run_shift = 0;
  for (size_t i = 0; i < m; i++)
    radix_append(e, radix_bucket_of(e, all[i].time), all[i]);
  g_free(all);
}

static void note_stale(sim_engine *e)
{
  e->stale++;
  if (e->stale > 1024 && e->stale > e->q_len / 2)
    q_compact(e);
}

/* Sequence numbers at which the pending events are renumbered (the tag holds 32 bits). */
#define SEQ_LIMIT ((uint64_t)UINT32_MAX)

typedef struct {
  uint64_t seq;
  size_t pos;
} seq_pos;

static int seq_pos_cmp(const void *a, const void *b)
{
  uint64_t x = ((const seq_pos *)a)->seq, y = ((const seq_pos *)b)->seq;
  return (x > y) - (x < y);
}

/* Gives the pending events the sequence numbers 0, 1, ... in the order of their current ones;
 * every comparison between entries keeps its outcome, so every entry stays in its bucket and
 * the run stays sorted. */
static void renumber(sim_engine *e)
{
  q_compact(e);
  size_t n = e->q_len;
  q_entry **entries = g_new(q_entry *, n ? n : 1);
  size_t m = 0;
  for (int b = 0; b < RADIX_BUCKETS; b++)
    for (uint32_t i = b == 0 ? e->bucket[b].head : 0; i < e->bucket[b].len; i++)
      entries[m++] = &e->bucket[b].items[i];
  seq_pos *order = g_new(seq_pos, n ? n : 1);
  for (size_t i = 0; i < n; i++)
    order[i] = (seq_pos){event_at(e, TAG_INDEX(entries[i]->tag))->seq, i};
  qsort(order, n, sizeof *order, seq_pos_cmp);
  for (size_t k = 0; k < n; k++) {
    q_entry *en = entries[order[k].pos];
    sim_event *ev = event_at(e, TAG_INDEX(en->tag));
    ev->seq = k;
    en->tag = TAG(k, TAG_INDEX(en->tag));
  }
  g_free(order);
  g_free(entries);
  e->next_seq = n;
}

static inline uint64_t take_seq(sim_engine *e)
{
  if (G_UNLIKELY(e->next_seq >= SEQ_LIMIT))
    renumber(e);
  return e->next_seq++;
}

void sim__engine_set_next_seq(sim_engine *e, uint64_t seq)
{
  g_return_if_fail(seq >= e->next_seq && seq <= SEQ_LIMIT);
  e->next_seq = seq;
}

/* ---- Lifecycle ------------------------------------------------------------------------------ */

static void span_free(gpointer p) { g_free(p); }

sim_engine *sim_engine_new(void)
{
  sim_engine *e = g_new0(sim_engine, 1);
  e->free_index = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  e->free_head = NULL;
  e->observers = g_array_new(FALSE, FALSE, sizeof(observer));
  e->procs = g_array_new(FALSE, FALSE, sizeof(proc_rec));
  e->tracks = g_array_new(FALSE, FALSE, sizeof(track_rec));
  e->open_spans = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, span_free);
  e->hash = 1469598103934665603ULL; /* FNV-1a offset basis */
  e->next_span_id = 1;
  e->next_link_id = 1;
  e->stall_limit = SIM_STALL_EVENTS;
  return e;
}

void sim_engine_free(sim_engine *e)
{
  if (!e)
    return;
#ifdef SIM_EVENT_POOL
  for (size_t i = 0; i < e->n_slabs; i++)
    g_aligned_free(e->slabs[i]);
#else
  for (size_t i = 0; i < e->n_slabs; i++)
    g_aligned_free(e->slabs[i]);   /* events still pending or referenced by stale entries */
#endif
  g_free(e->slabs);
  g_array_free(e->free_index, TRUE);
  for (int b = 0; b < RADIX_BUCKETS; b++)
    g_free(e->bucket[b].items);
  for (uint32_t i = 0; i < e->n_spare; i++)
    g_free(e->spare[i]);
  for (guint i = 0; i < e->procs->len; i++)
    g_free((char *)g_array_index(e->procs, proc_rec, i).info.name);
  for (guint i = 0; i < e->tracks->len; i++)
    g_free((char *)g_array_index(e->tracks, track_rec, i).info.name);
  g_array_free(e->procs, TRUE);
  g_array_free(e->tracks, TRUE);
  g_array_free(e->observers, TRUE);
  g_hash_table_destroy(e->open_spans);
  g_free(e->error);
  g_free(e);
}

/* ---- Scheduling ----------------------------------------------------------------------------- */

/* Both schedule calls end here: at_ps is no earlier than now. */
static inline sim_event *schedule(sim_engine *e, sim_time_ps at_ps, sim_event_fn fn, void *data,
                                  uint64_t arg)
{
  if (G_UNLIKELY(at_ps == SIM_TIME_MAX))
    e->saturated++;
  sim_event *ev = event_alloc(e);
  ev->fn = fn;
  ev->data = data;
  ev->arg = arg;
  ev->time = at_ps;
  ev->seq = take_seq(e);
  ev->refs = 1;
  q_push(e, (q_entry){at_ps, TAG(ev->seq, ev->index)});
  e->live++;
  return ev;
}

/* Keeps the first scheduling error and stops the run; a model that asks for the past has a
 * bug, and whatever it computes from here on is wrong. */
static void refuse(sim_engine *e, const char *what, sim_time_ps ps, const char *where)
{
  if (!e->error)
    e->error = g_strdup_printf("an event was %s %" G_GINT64_FORMAT " ps, in the past (the "
                               "current time is %" G_GINT64_FORMAT " ps), by %s", what,
                               (gint64)ps, (gint64)e->head.now, where);
  e->stopped = TRUE;
}

sim_event *sim_engine__schedule_at(sim_engine *e, sim_time_ps at_ps, sim_event_fn fn, void *data,
                                   uint64_t arg, const char *where)
{
  g_return_val_if_fail(e != NULL && fn != NULL, NULL);
  if (G_UNLIKELY(at_ps < e->head.now)) {
    refuse(e, "scheduled at", at_ps, where);
    return NULL;
  }
  return schedule(e, at_ps, fn, data, arg);
}

sim_event *sim_engine__schedule_in(sim_engine *e, sim_time_ps delay_ps, sim_event_fn fn,
                                   void *data, uint64_t arg, const char *where)
{
  g_return_val_if_fail(e != NULL && fn != NULL, NULL);
  if (G_UNLIKELY(delay_ps < 0)) {
    refuse(e, "scheduled with a delay of", delay_ps, where);
    return NULL;
  }
  sim_time_ps at_ps;
  if (__builtin_add_overflow(e->head.now, delay_ps, &at_ps))
    at_ps = SIM_TIME_MAX;   /* saturates, as sim_time_add_sat() does */
  return schedule(e, at_ps, fn, data, arg);
}

void sim_engine_cancel(sim_engine *e, sim_event *ev)
{
  g_return_if_fail(ev != NULL && ev->seq != SEQ_DEAD);
  ev->seq = SEQ_DEAD;
  e->live--;
  note_stale(e);
}

gboolean sim_engine__reschedule(sim_engine *e, sim_event *ev, sim_time_ps at_ps,
                                const char *where)
{
  g_return_val_if_fail(ev != NULL && ev->seq != SEQ_DEAD, FALSE);
  if (G_UNLIKELY(at_ps < e->head.now)) {
    refuse(e, "moved to", at_ps, where);
    return FALSE;
  }
  if (at_ps == ev->time)
    return TRUE;  /* keeps its place among equal times */
  if (at_ps == SIM_TIME_MAX)
    e->saturated++;
  uint64_t seq = take_seq(e);   /* may renumber the old entry, which then goes stale */
  ev->time = at_ps;
  ev->seq = seq;
  ev->refs++;
  q_push(e, (q_entry){at_ps, TAG(ev->seq, ev->index)});
  note_stale(e);
  return TRUE;
}

sim_time_ps sim_engine_event_time(const sim_engine *e, const sim_event *ev)
{
  g_return_val_if_fail(ev != NULL && ev->seq != SEQ_DEAD, -1);
  return ev->time;
}

/* ---- Running ------------------------------------------------------------------------------ */

/* How far ahead of the dispatched event the loop prefetches records and data (events). */
#define PREFETCH_RECORD 4
#define PREFETCH_DATA 2

/* One multiply-rotate step per 64-bit word: cheap, and sensitive to order. */
static inline void mix_hash(sim_engine *e, uint64_t v)
{
  uint64_t h = (e->hash ^ v) * 0x9E3779B97F4A7C15ULL;
  e->hash = (h << 31) | (h >> 33);
}

uint64_t sim_engine_run_until(sim_engine *e, sim_time_ps limit_ps)
{
  if (e->error)
    return 0;   /* stopped for good by a scheduling error */
  uint64_t start_events = e->events;
  gint64 t0 = g_get_monotonic_time();
  e->stopped = FALSE;
  q_entry *topp;
  while (!e->stopped && (topp = q_top(e)) != NULL) {
    q_entry top = *topp;
    sim_event *ev = event_at(e, TAG_INDEX(top.tag));
    if (!entry_live(&top, ev)) {   /* stale: cancelled or rescheduled */
      q_pop(e);
      e->stale--;
      entry_drop(e, ev);
      continue;
    }
    if (top.time > limit_ps)
      break;
    q_pop(e);
    e->live--;
    if (top.time == e->head.now) {
      if (++e->same_time > e->stall_limit && e->stall_limit) {
        e->stalled = TRUE;
        e->stopped = TRUE;
      }
    } else {
      e->same_time = 0;
    }
    e->head.now = top.time;
    e->events++;
    mix_hash(e, (uint64_t)top.time);
    mix_hash(e, ev->seq);
    sim_event_fn fn = ev->fn;
    void *data = ev->data;
    uint64_t arg = ev->arg;
    ev->seq = SEQ_DEAD;
    entry_drop(e, ev);
    /* The next events are now at the top: start fetching their records and data while this
     * one runs, a few events ahead (when the events after this one are also at this time):
     * the record of the fourth next, and the data of the second next, whose record the
     * dispatches before fetched. A prefetch never faults, so a stale entry's pointer does no
     * harm. */
    {
      const radix_bucket *b0 = &e->bucket[0];
      uint32_t h = b0->head;
      if (h < b0->len)
        __builtin_prefetch(event_at(e, TAG_INDEX(b0->items[h].tag)));
      if (h + PREFETCH_RECORD < b0->len)
        __builtin_prefetch(event_at(e, TAG_INDEX(b0->items[h + PREFETCH_RECORD].tag)));
      if (h + PREFETCH_DATA < b0->len)
        __builtin_prefetch(event_at(e, TAG_INDEX(b0->items[h + PREFETCH_DATA].tag))->data);
    }
    fn(e, data, arg);
  }
  e->wall_us += g_get_monotonic_time() - t0;
  return e->events - start_events;
}

uint64_t sim_engine_run(sim_engine *e) { return sim_engine_run_until(e, SIM_TIME_MAX); }
void sim_engine_stop(sim_engine *e) { e->stopped = TRUE; }
void sim_engine_set_stall_limit(sim_engine *e, uint64_t events) { e->stall_limit = events; }
gboolean sim_engine_stalled(const sim_engine *e) { return e->stalled; }
uint64_t sim_engine_events(const sim_engine *e) { return e->events; }
const char *sim_engine_error(const sim_engine *e) { return e->error; }
uint64_t sim_engine_saturated(const sim_engine *e) { return e->saturated; }
gboolean sim_engine_check_clock(const sim_engine *e, GError **error)
{
  if (e->saturated == 0)
    return TRUE;
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
              "the simulated time overflows the clock (more than %.0f days at picosecond "
              "resolution): use smaller sizes, faster links or fewer iterations",
              sim_time_to_s(SIM_TIME_MAX) / 86400);
  return FALSE;
}
size_t sim_engine_pending(const sim_engine *e) { return e->live; }
double sim_engine_wall_s(const sim_engine *e) { return (double)e->wall_us * 1e-6; }
uint64_t sim_engine_trace_hash(const sim_engine *e) { return e->hash; }

/* ---- Observers -------------------------------------------------------------------------- */

#define FOR_OBSERVERS(e, o)                                                                     \
  for (guint _i = 0; _i < (e)->observers->len; _i++)                                           \
    for (observer *o = &g_array_index((e)->observers, observer, _i); o; o = NULL)

void sim_engine_add_observer(sim_engine *e, const sim_observer_ops *ops, void *user)
{
  g_return_if_fail(e != NULL && ops != NULL);
  observer o = {ops, user};
  g_array_append_val(e->observers, o);
  e->head.observed = TRUE;
  for (guint i = 0; i < e->procs->len; i++)
    if (ops->proc_added)
      ops->proc_added(user, &g_array_index(e->procs, proc_rec, i).info);
  for (guint i = 0; i < e->tracks->len; i++)
    if (ops->track_added)
      ops->track_added(user, &g_array_index(e->tracks, track_rec, i).info);
}

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

uint64_t sim_engine_span_begin(sim_engine *e, sim_track_id track, const char *name,
                               const char *category, uint64_t bytes, uint64_t flops)
{
  uint64_t id = e->next_span_id++;
  if (e->observers->len == 0)
    return id;
  g_return_val_if_fail(track < e->tracks->len, id);
  sim_span *s = g_new(sim_span, 1);
  *s = (sim_span){id, track, name, category, e->head.now, -1, bytes, flops};
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
  s->end_ps = e->head.now;
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
    o->ops->counter(o->user, proc, name, e->head.now, value);
}

void sim_engine_finish(sim_engine *e)
{
  if (e->finished)
    return;
  e->finished = TRUE;
  FOR_OBSERVERS(e, o)
  if (o->ops->finished)
    o->ops->finished(o->user, e->head.now);
}
