/* Task graph and executor (see taskgraph.h).
 *
 * Storage is flat: tasks in one array, the members of tasks of over two streams in another,
 * edges as (before, after) pairs turned into a compressed successor list when the executor is
 * made.
 * Each stream keeps the ids of its tasks in insertion order; the executor advances a cursor
 * per stream. Each task counts what it still waits for: its unfinished dependencies and the
 * member streams whose cursor has not reached it; it starts when the count reaches zero. */
#include "taskgraph.h"

#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>

/* 20 bytes per task (a pipeline run of 10^6 tasks writes them all while building, and the
 * executor reads each as it starts and ends; an unfolded 3-D run on 16384 devices holds 82
 * million): categories as indices, and a task of one or two streams (or shown on one) holds
 * them in place of an index into graph->members, so that starting or ending a transfer does
 * not read that array. What a task takes and its name (its duration, bytes, FLOPs or
 * algorithm) is a task_load kept once per distinct value in graph->loads: the same layer on
 * every device takes the same, so that 32 bytes per task become 4 and a table that stays in
 * the caches. */
#define INLINE_MEMBERS 2
#define NO_TASK ((sim_task_id)UINT32_MAX)
typedef struct {
  uint8_t kind : 5;        /* sim_task_kind */
  uint8_t shown : 1;       /* on no stream, shown on the stream at members_at (sim_graph_show_on) */
  uint8_t dups : 1;        /* a stream appears more than once among the members */
  uint8_t big_delta : 1;   /* its memory delta is in graph->deltas, not in member2 */
  int8_t op;
  uint16_t category;       /* index into graph->categories */
  uint32_t n_members;
  uint32_t members_at;     /* index into graph->members (streams); up to INLINE_MEMBERS members,
                            * or shown: the streams themselves, here and in member2 (see
                            * task_members()) */
  uint32_t member2;        /* the second member; a task of one member or none: its memory
                            * delta (bytes its unit holds more, or less, once it ends) while
                            * that fits in an int32_t */
  uint32_t load;           /* index into graph->loads */
} task_rec;

G_STATIC_ASSERT(sizeof(task_rec) == 20);

/* What a task takes and its name, compared and hashed as its four words (unused ones zero). */
typedef struct {
  sim_time_ps duration_ps; /* SIM_TASK_COMPUTE and SIM_TASK_DELAY */
  uint64_t bytes;
  union {
    uint64_t flops;                        /* SIM_TASK_COMPUTE */
    const comm_coll_algorithm *algorithm;  /* SIM_TASK_COLLECTIVE, or NULL */
  } u;
  const char *name;        /* in graph->strings */
} task_load;

typedef struct {
  sim_unit_id unit;
  const char *name;
  sim_task_id *tasks;      /* in insertion order */
  uint32_t n_tasks, cap_tasks;
} stream_rec;

typedef struct {
  sim_proc_kind kind;
  const char *name;
  uint32_t n_streams;
  uint64_t resident_bytes;
} unit_rec;

/* The executor's state of a task (defined here so that graph_block can make room for it). 16
 * bytes per task, read and written once or twice per event: what a run touches per task is kept
 * small so that more of it stays in cache, and fewer fresh pages are touched. Before the task
 * starts, `at` counts what it waits for (unfinished dependencies + distinct member streams
 * not yet arrived), >= 0; once it starts, `at` is ~start_ps (< 0: times are >= 0). Until the
 * task is done, `end` locates its successors, succ[first .. first + count) with first in its
 * low 32 bits and count in its high 32 (>= 0: count < 2^31); then it is ~end_ps (< 0). */
typedef struct {
  int64_t at;
  int64_t end;
} task_state;

#define CATEGORY_BITS 6
#define CATEGORY_CACHE (1u << CATEGORY_BITS)

typedef struct {
  const char *category;
  uint32_t index;
} category_slot;

/* A graph reserved at 512 KiB or more (sim_graph_reserve) holds in one mapping its task
 * records, its dependency pairs, and room for its executor's task states and successor lists:
 * the four arrays of a run then share huge pages instead of each filling its own or faulting
 * in 4 KiB at a time (the 3-D GPT-3 run of bench_scale --events: 1.6 MB in one 2 MiB page,
 * where the pairs and the executor's arrays took 90 faults from the heap). The rest of the
 * last huge page, zeroed with it, takes the stream task lists and name tables as they grow
 * (65 faults fewer there). An array that outgrows its place moves out to an allocation of its
 * own; the block stays until the graph is freed. */
typedef struct {
  char *base;
  size_t bytes;            /* the whole mapping (whole huge pages) */
  size_t spare_at;         /* the first byte past the four arrays not yet given out: the rest
                            * of the last huge page serves the graph's smaller arrays (stream
                            * task lists, name tables), already zero and paid for */
  uint32_t tasks, ids;     /* what it was made for: task records, and edge ids (two an edge) */
  task_state *states;      /* the executor's room: `tasks` task states, */
  sim_task_id *succ;       /* and ids / 2 successors */
  gboolean lent;           /* an executor holds the room */
  gboolean used;           /* one held it before: the states are no longer zero */
} graph_block;

struct sim_graph {
  task_rec *tasks;
  uint32_t n_tasks, cap_tasks;
  sim_stream_id *members;
  uint32_t n_members, cap_members;
  sim_task_id *edges;      /* pairs (before, after) */
  uint32_t n_edges, cap_edges;   /* ids: twice the pairs */
  GArray *streams;         /* stream_rec */
  GArray *units;           /* unit_rec */
  GStringChunk *strings;
  const char **names;      /* every interned name once, by a hash of its text (open addressing,
                            * linear probing); NULL: empty slot */
  uint32_t *name_hash;     /* the hash of the name in each slot */
  uint32_t names_mask;     /* slots - 1 (a power of two) */
  uint32_t n_names;
  const char **handed;     /* names given out by sim_graph_intern(), by address (open
                            * addressing, linear probing); NULL: empty slot */
  uint32_t handed_mask;    /* slots of `handed` - 1 */
  uint32_t n_handed;       /* distinct names in `handed` */
  GArray *stream_mark;     /* uint32_t per stream: mark_stamp when met in the task being added */
  uint32_t mark_stamp;
  GHashTable *deltas;      /* task id -> int64_t memory delta (g_malloc'd), of tasks with
                            * big_delta set; NULL until one is */
  sim_task_id *memberless; /* tasks on no stream, in id order: what the executor starts first */
  uint32_t n_memberless, cap_memberless;
  GPtrArray *categories;   /* the distinct category strings (static), by index */
  GHashTable *category_index; /* category string -> its index + 1 */
  category_slot category_cache[CATEGORY_CACHE];  /* in front of category_index, by address */
  uint32_t n_cached;       /* categories in category_cache (at most half its slots) */
  graph_block *block;      /* NULL: none (see graph_block) */
  task_load *loads;        /* every distinct load once (see task_rec) */
  uint32_t n_loads, cap_loads;
  uint32_t *load_slots;    /* index into loads + 1 by a hash of the load (open addressing,
                            * linear probing); 0: empty slot */
  uint32_t load_mask;      /* slots - 1 (a power of two) */
};

#define LOAD(g, r) (&(g)->loads[(r)->load])

static inline uint64_t task_flops(const sim_graph *g, const task_rec *r)
{
  return r->kind == SIM_TASK_COMPUTE ? LOAD(g, r)->u.flops : 0;
}

static inline int64_t task_memory_delta(const sim_graph *g, sim_task_id t, const task_rec *r)
{
  if (r->big_delta)
    return *(const int64_t *)g_hash_table_lookup(g->deltas, GUINT_TO_POINTER(t));
  return r->n_members <= 1 ? (int32_t)r->member2 : 0;
}

/* The streams of a task (n_members of them), or the one it is shown on. */
static inline const sim_stream_id *task_members(const sim_graph *g, const task_rec *r)
{
  return r->n_members <= INLINE_MEMBERS ? &r->members_at : &g->members[r->members_at];
}

/* Large arrays. A graph of 10^6 tasks and its executor hold about 90 MB, and first touches of
 * fresh 4 KiB pages (page faults, zeroing, TLB misses) were a quarter of the CPU time of whole
 * unfolded runs. An array of 512 KiB or more is therefore mapped on its own, 2 MiB-aligned,
 * and marked for transparent huge pages before it is touched: one fault and one TLB entry per
 * 2 MiB. (Measured here: a 4 KiB fault costs 1.6 us, a huge page 0.2 ms, so a huge page pays
 * from a quarter full: a pipeline's 2.09 MB task states took 511 faults from the heap.) A
 * grown array is copied into its new mapping. Moving the pages with mremap copied nothing,
 * but Open MPI 4.1's memory hooks (active under dtsim-mpi, e.g. as root) intercept mremap
 * and drop its fifth argument: the pages moved elsewhere and the copy then read the unmapped
 * old array (exit 139). Arrays double, so the copies add up to less than the final size.
 * (Marking glibc's own blocks instead splits their mappings, and its realloc then copies
 * too.) Smaller arrays, and sanitizer builds, use the heap. Sizes are the capacity in bytes,
 * given again when the array is freed. */
#define HUGE_PAGE_BYTES ((size_t)2 << 20)
#if defined(MADV_HUGEPAGE) && !defined(__SANITIZE_ADDRESS__)
#define BIG_BYTES ((size_t)512 << 10)
#else
#define BIG_BYTES SIZE_MAX
#endif

static size_t huge_round(size_t bytes)
{
  return (bytes + HUGE_PAGE_BYTES - 1) & ~(HUGE_PAGE_BYTES - 1);
}

/* Bytes held by the large arrays of every graph and executor of the process, against the
 * memory limit (dt_memory_limit): the last guard when a graph outgrows what its builder
 * checked beforehand (sim_graph_check_size). Mapped arrays count whole huge pages. */
static int64_t big_held_bytes;

static size_t big_counted(size_t bytes)
{
  return bytes < BIG_BYTES ? bytes : huge_round(bytes);
}

static void big_count(size_t old_bytes, size_t new_bytes)
{
  int64_t delta = (int64_t)big_counted(new_bytes) - (int64_t)big_counted(old_bytes);
  int64_t held = __atomic_add_fetch(&big_held_bytes, delta, __ATOMIC_RELAXED);
  if (delta > 0 && (uint64_t)held > dt_memory_limit())
    dt_memory_fail(new_bytes);
}

static void big_free(void *items, size_t bytes)
{
  if (!items)
    return;
  big_count(bytes, 0);
  if (bytes < BIG_BYTES)
    g_free(items);
  else
    munmap(items, huge_round(bytes));
}

/* An array of new_bytes holding the old_bytes of `old` (which it frees); the rest is zero if
 * `zero`, else undefined (left untouched: the end of a doubled array may never be used). */
static void *big_resize(void *old, size_t old_bytes, size_t new_bytes, gboolean zero)
{
  if (new_bytes < BIG_BYTES) {
    big_count(old ? old_bytes : 0, new_bytes);
    void *items = old == NULL && zero ? g_try_malloc0(new_bytes) : g_try_realloc(old, new_bytes);
    if (!items && new_bytes)
      dt_memory_fail(new_bytes);
    if (old == NULL && zero)
      return items;
    if (zero)
      memset((char *)items + old_bytes, 0, new_bytes - old_bytes);
    return items;
  }
#ifdef MADV_HUGEPAGE
  size_t len = huge_round(new_bytes);
  char *map = mmap(NULL, len + HUGE_PAGE_BYTES, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED)
    dt_memory_fail(new_bytes);
  char *items = (char *)huge_round((uintptr_t)map);
  if (items > map)
    munmap(map, (size_t)(items - map));
  if (map + HUGE_PAGE_BYTES > items)
    munmap(items + len, (size_t)(map + HUGE_PAGE_BYTES - items));
  (void)madvise(items, len, MADV_HUGEPAGE);   /* a hint: refused, the array still works */
  big_count(0, new_bytes);
  if (old_bytes)
    memcpy(items, old, old_bytes);
  big_free(old, old_bytes);
  return items;
#else
  g_assert_not_reached();
#endif
}

static void *big_new0(size_t n, size_t size)
{
  return big_resize(NULL, 0, (n ? n : 1) * size, TRUE);
}

static inline gboolean in_block(const sim_graph *g, const void *items)
{
  return g->block && (const char *)items >= g->block->base &&
         (const char *)items < g->block->base + g->block->bytes;
}

static size_t line_round(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* `bytes` of zero from the unused end of the graph's block, or NULL when it has no block or
 * not that much room left. */
static void *block_take(sim_graph *g, size_t bytes)
{
  graph_block *b = g->block;
  if (!b)
    return NULL;
  size_t at = line_round(b->spare_at);
  if (bytes > b->bytes - at)
    return NULL;
  b->spare_at = at + bytes;
  return b->base + at;
}

/* Frees an array unless it is in the graph's block (cap_bytes: its size). */
static void free_out(sim_graph *g, void *items, size_t cap_bytes)
{
  if (!in_block(g, items))
    big_free(items, cap_bytes);
}

/* An array of `bytes` holding the first `used` bytes of `items`, which it frees unless the array
 * is in the graph's block (cap_bytes: its size): from the block's spare room while there is
 * some, else an allocation of its own. */
static void *resize_out(sim_graph *g, void *items, size_t used, size_t cap_bytes, size_t bytes)
{
  void *moved = block_take(g, bytes);
  if (!moved) {
    if (!in_block(g, items))
      return big_resize(items, cap_bytes, bytes, FALSE);
    moved = big_resize(NULL, 0, bytes, FALSE);
  }
  if (used)
    memcpy(moved, items, used);
  free_out(g, items, cap_bytes);
  return moved;
}

/* Growable arrays, appended to once or more per task: inline, without GArray's call and copy,
 * and in the graph's block while it has room. */
static void *grow(sim_graph *g, void *items, uint32_t *cap, size_t size)
{
  g_assert(*cap < UINT32_MAX / 2);
  size_t old_bytes = (size_t)*cap * size;
  *cap = *cap ? 2 * *cap : 16;
  return resize_out(g, items, old_bytes, old_bytes, (size_t)*cap * size);
}

#define PUSH(g, items, len, cap, value)                                                         \
  do {                                                                                          \
    if (G_UNLIKELY((len) == (cap)))                                                             \
      (items) = grow((g), (items), &(cap), sizeof *(items));                                    \
    (items)[(len)++] = (value);                                                                 \
  } while (0)

/* Task names repeat (the same layer on every device, every iteration): each distinct text is
 * kept once, in the graph's string chunk, and found again through one hash of it (a table of
 * the graph's own, which hashes a name once where the chunk's own table hashed it twice more).
 * Names the graph handed out (sim_graph_intern()) are found by address first. */
#define NAMES_MIN 1024
#define HANDED_MAX (1u << 20)

static inline uint32_t handed_slot(const sim_graph *g, const char *name)
{
  return (uint32_t)(((uintptr_t)name * 0x9E3779B97F4A7C15ULL) >> 40) & g->handed_mask;
}

/* A zeroed table of the graph's (names, handed): in the block's spare room while it has some.
 * table_free() frees one. */
static void *table_new0(sim_graph *g, size_t bytes)
{
  void *t = block_take(g, bytes);
  return t ? t : g_malloc0(bytes);
}

static void table_free(sim_graph *g, void *table)
{
  if (!in_block(g, table))
    g_free(table);
}

static void names_grow(sim_graph *g)
{
  uint32_t old_slots = g->names_mask + 1;
  const char **old = g->names;
  uint32_t *old_hash = g->name_hash;
  g->names_mask = 2 * old_slots - 1;
  g->names = table_new0(g, (size_t)(g->names_mask + 1) * sizeof *g->names);
  g->name_hash = table_new0(g, (size_t)(g->names_mask + 1) * sizeof *g->name_hash);
  for (uint32_t i = 0; i < old_slots; i++) {
    if (!old[i])
      continue;
    uint32_t j = old_hash[i] & g->names_mask;
    while (g->names[j])
      j = (j + 1) & g->names_mask;
    g->names[j] = old[i];
    g->name_hash[j] = old_hash[i];
  }
  table_free(g, old);
  table_free(g, old_hash);
}

static const char *intern_text(sim_graph *g, const char *name)
{
  uint32_t h = 2166136261u;   /* FNV-1a */
  size_t len = 0;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++, len++)
    h = (h ^ *c) * 16777619u;
  uint32_t j = h & g->names_mask;
  for (; g->names[j]; j = (j + 1) & g->names_mask)
    if (g->name_hash[j] == h && strcmp(g->names[j], name) == 0)
      return g->names[j];
  const char *copy = g_string_chunk_insert_len(g->strings, name, (gssize)len);
  g->names[j] = copy;
  g->name_hash[j] = h;
  if (++g->n_names > g->names_mask / 2)
    names_grow(g);
  return copy;
}

/* Whether `name` is a name the graph handed out (open addressing, linear probing). */
static inline gboolean handed_has(const sim_graph *g, const char *name)
{
  for (uint32_t j = handed_slot(g, name); g->handed[j]; j = (j + 1) & g->handed_mask)
    if (g->handed[j] == name)
      return TRUE;
  return FALSE;
}

static inline const char *intern(sim_graph *g, const char *name)
{
  /* A name the graph handed out (sim_graph_intern()) is kept until the graph is freed, so no
   * other string can have its address: it is its own copy. */
  if (handed_has(g, name))
    return name;
  return intern_text(g, name);
}

static void handed_put(sim_graph *g, const char *name)
{
  uint32_t j = handed_slot(g, name);
  while (g->handed[j])
    j = (j + 1) & g->handed_mask;
  g->handed[j] = name;
}

const char *sim_graph_intern(sim_graph *g, const char *name)
{
  const char *copy = intern(g, name);
  if (handed_has(g, copy))
    return copy;
  if (G_UNLIKELY(g->n_handed + 1 > g->handed_mask / 2)) {
    if (g->handed_mask >= HANDED_MAX - 1)
      return copy;   /* full: later uses of it are found by their text */
    /* A pipeline of 2048 micro-batches hands out 8192 names, each used on every stage: the
     * table grows with them, so that they stay found by address. */
    const char **old = g->handed;
    uint32_t old_slots = g->handed_mask + 1;
    g->handed_mask = 2 * old_slots - 1;
    g->handed = table_new0(g, (size_t)(g->handed_mask + 1) * sizeof *g->handed);
    for (uint32_t i = 0; i < old_slots; i++)
      if (old[i])
        handed_put(g, old[i]);
    table_free(g, old);
  }
  handed_put(g, copy);
  g->n_handed++;
  return copy;
}

/* The index of `load` in graph->loads, added when it is new. */
#define LOADS_MIN 1024

static inline uint32_t load_hash(const task_load *l)
{
  uint64_t h = (uint64_t)l->duration_ps * 0x9E3779B97F4A7C15ULL;
  h = (h ^ (h >> 29) ^ l->bytes) * 0xBF58476D1CE4E5B9ULL;
  h = (h ^ (h >> 32) ^ l->u.flops) * 0x94D049BB133111EBULL;
  h = (h ^ (h >> 29) ^ (uintptr_t)l->name) * 0xBF58476D1CE4E5B9ULL;
  return (uint32_t)(h >> 32);
}

static void loads_grow(sim_graph *g)
{
  uint32_t old_slots = g->load_mask + 1;
  uint32_t *old = g->load_slots;
  g->load_mask = 2 * old_slots - 1;
  g->load_slots = table_new0(g, (size_t)(g->load_mask + 1) * sizeof *g->load_slots);
  for (uint32_t i = 0; i < old_slots; i++) {
    if (!old[i])
      continue;
    uint32_t j = load_hash(&g->loads[old[i] - 1]) & g->load_mask;
    while (g->load_slots[j])
      j = (j + 1) & g->load_mask;
    g->load_slots[j] = old[i];
  }
  table_free(g, old);
}

static uint32_t load_of(sim_graph *g, const task_load *load)
{
  uint32_t j = load_hash(load) & g->load_mask;
  for (; g->load_slots[j]; j = (j + 1) & g->load_mask) {
    const task_load *l = &g->loads[g->load_slots[j] - 1];
    if (l->duration_ps == load->duration_ps && l->bytes == load->bytes &&
        l->u.flops == load->u.flops && l->name == load->name)
      return g->load_slots[j] - 1;
  }
  uint32_t k = g->n_loads;
  PUSH(g, g->loads, g->n_loads, g->cap_loads, *load);
  g->load_slots[j] = k + 1;
  if (g->n_loads > g->load_mask / 2)
    loads_grow(g);
  return k;
}

sim_graph *sim_graph_new(void)
{
  sim_graph *g = g_new0(sim_graph, 1);
  g->streams = g_array_new(FALSE, FALSE, sizeof(stream_rec));
  g->units = g_array_new(FALSE, FALSE, sizeof(unit_rec));
  g->strings = g_string_chunk_new(4096);
  g->names = g_new0(const char *, NAMES_MIN);
  g->name_hash = g_new(uint32_t, NAMES_MIN);
  g->names_mask = NAMES_MIN - 1;
  g->handed = g_new0(const char *, NAMES_MIN);
  g->handed_mask = NAMES_MIN - 1;
  g->load_slots = g_new0(uint32_t, LOADS_MIN);
  g->load_mask = LOADS_MIN - 1;
  g->stream_mark = g_array_new(FALSE, TRUE, sizeof(uint32_t));
  g->categories = g_ptr_array_new();
  g->category_index = g_hash_table_new(g_direct_hash, g_direct_equal);
  return g;
}

void sim_graph_free(sim_graph *g)
{
  if (!g)
    return;
  for (guint i = 0; i < g->streams->len; i++) {
    stream_rec *sr = &g_array_index(g->streams, stream_rec, i);
    free_out(g, sr->tasks, (size_t)sr->cap_tasks * sizeof *sr->tasks);
  }
  free_out(g, g->tasks, (size_t)g->cap_tasks * sizeof *g->tasks);
  free_out(g, g->members, (size_t)g->cap_members * sizeof *g->members);
  free_out(g, g->edges, (size_t)g->cap_edges * sizeof *g->edges);
  free_out(g, g->memberless, (size_t)g->cap_memberless * sizeof *g->memberless);
  table_free(g, g->names);
  table_free(g, g->name_hash);
  table_free(g, g->handed);
  table_free(g, g->load_slots);
  free_out(g, g->loads, (size_t)g->cap_loads * sizeof *g->loads);
  if (g->block) {
    g_assert(!g->block->lent);   /* an executor is freed before its graph */
    big_free(g->block->base, g->block->bytes);
    g_free(g->block);
  }
  g_array_free(g->streams, TRUE);
  g_array_free(g->units, TRUE);
  g_string_chunk_free(g->strings);
  g_array_free(g->stream_mark, TRUE);
  g_ptr_array_free(g->categories, TRUE);
  g_hash_table_destroy(g->category_index);
  if (g->deltas)
    g_hash_table_destroy(g->deltas);
  g_free(g);
}

sim_unit_id sim_graph_add_unit(sim_graph *g, sim_proc_kind kind, const char *name)
{
  unit_rec u = {kind, intern(g, name), 0, 0};
  g_array_append_val(g->units, u);
  return g->units->len - 1;
}

sim_stream_id sim_graph_add_stream(sim_graph *g, sim_unit_id unit, const char *name)
{
  g_return_val_if_fail(unit < g->units->len, 0);
  stream_rec s = {unit, intern(g, name), NULL, 0, 0};
  g_array_append_val(g->streams, s);
  g_array_set_size(g->stream_mark, g->streams->len);
  g_array_index(g->units, unit_rec, unit).n_streams++;
  return g->streams->len - 1;
}

uint32_t sim_graph_n_units(const sim_graph *g) { return g->units->len; }
uint32_t sim_graph_n_streams(const sim_graph *g) { return g->streams->len; }
uint32_t sim_graph_n_tasks(const sim_graph *g) { return g->n_tasks; }

sim_unit_id sim_graph_stream_unit(const sim_graph *g, sim_stream_id s)
{
  return g_array_index(g->streams, stream_rec, s).unit;
}

const char *sim_graph_stream_name(const sim_graph *g, sim_stream_id s)
{
  return g_array_index(g->streams, stream_rec, s).name;
}

const sim_task_id *sim_graph_stream_tasks(const sim_graph *g, sim_stream_id s, uint32_t *n)
{
  const stream_rec *sr = &g_array_index(g->streams, stream_rec, s);
  *n = sr->n_tasks;
  return sr->tasks;
}

const char *sim_graph_unit_name(const sim_graph *g, sim_unit_id u)
{
  return g_array_index(g->units, unit_rec, u).name;
}

/* The index of a category string (compared by address: categories are static strings). The
 * cache is an open-addressing table by address, so that two categories in use at once never
 * evict each other (as they did in a direct-mapped cache when their addresses met in it, which
 * cost a GHashTable lookup for every task of the 3-D build); categories past its half go to
 * category_index alone. */
static uint16_t category_of(sim_graph *g, const char *category)
{
  category_slot *empty = NULL;
  if (G_LIKELY(category)) {
    uint32_t j = (uint32_t)(((uintptr_t)category * 0x9E3779B97F4A7C15ULL) >> (64 - CATEGORY_BITS));
    for (;; j = (j + 1) & (CATEGORY_CACHE - 1)) {
      category_slot *c = &g->category_cache[j];
      if (c->category == category)
        return c->index;
      if (!c->category) {
        empty = c;
        break;
      }
    }
  }
  guint k = GPOINTER_TO_UINT(g_hash_table_lookup(g->category_index, category));
  if (k == 0) {
    if (g->categories->len > UINT16_MAX)
      g_error("task graph: more than %u task categories", UINT16_MAX + 1);
    g_ptr_array_add(g->categories, (gpointer)category);
    k = g->categories->len;
    g_hash_table_insert(g->category_index, (gpointer)category, GUINT_TO_POINTER(k));
  }
  if (empty && g->n_cached < CATEGORY_CACHE / 2) {
    empty->category = category;
    empty->index = k - 1;
    g->n_cached++;
  }
  return k - 1;
}

/* Files a new task of `kind` on its streams and returns its record, written in place with the
 * fields given here and the rest zero, for the caller to complete (NULL: a member is no
 * stream; nothing is added). In place, not built on the stack and copied: the copy read back
 * 16 bytes at a time what had just been stored field by field, which stalled store forwarding
 * (about a quarter of sim_graph_add_compute's time in a 3-D build). */
static task_rec *add_task(sim_graph *g, sim_task_kind kind, const char *name,
                          const char *category, const sim_stream_id *members, uint32_t n,
                          const task_load *load)
{
  for (uint32_t i = 0; i < n; i++)
    g_return_val_if_fail(members[i] < g->streams->len, NULL);
  sim_task_id id = g->n_tasks;
  const char *copy = intern(g, name);
  uint16_t cat = category_of(g, category);
  task_load named = *load;
  named.name = copy;
  uint32_t load_id = load_of(g, &named);
  if (G_UNLIKELY(g->n_tasks == g->cap_tasks))
    g->tasks = grow(g, g->tasks, &g->cap_tasks, sizeof *g->tasks);
  task_rec *t = &g->tasks[id];
  memset(t, 0, sizeof *t);
  t->kind = kind;
  t->category = cat;
  t->load = load_id;
  t->n_members = n;
  /* A stream that appears twice in one task (a device sending to itself) holds it once. */
  if (n <= INLINE_MEMBERS) {
    t->members_at = n >= 1 ? members[0] : 0;
    t->member2 = n >= 2 ? members[1] : 0;
    t->dups = n == 2 && members[0] == members[1];
    for (uint32_t i = 0; i < n - t->dups; i++) {
      stream_rec *s = &g_array_index(g->streams, stream_rec, members[i]);
      PUSH(g, s->tasks, s->n_tasks, s->cap_tasks, id);
    }
  } else {
    t->members_at = g->n_members;
    /* Marks find repeats in O(n) (collectives span up to a million streams). */
    if (++g->mark_stamp == 0) {
      memset(g->stream_mark->data, 0, g->stream_mark->len * sizeof(uint32_t));
      g->mark_stamp = 1;
    }
    uint32_t *mark = (uint32_t *)g->stream_mark->data;
    for (uint32_t i = 0; i < n; i++) {
      PUSH(g, g->members, g->n_members, g->cap_members, members[i]);
      if (mark[members[i]] == g->mark_stamp) {
        t->dups = 1;
        continue;
      }
      mark[members[i]] = g->mark_stamp;
      stream_rec *s = &g_array_index(g->streams, stream_rec, members[i]);
      PUSH(g, s->tasks, s->n_tasks, s->cap_tasks, id);
    }
  }
  g->n_tasks++;
  if (n == 0)
    PUSH(g, g->memberless, g->n_memberless, g->cap_memberless, id);
  return t;
}

/* The id of a task record add_task() returned, or the next id when it returned NULL. */
static inline sim_task_id task_id(const sim_graph *g, const task_rec *t)
{
  return t ? (sim_task_id)(t - g->tasks) : g->n_tasks;
}

sim_task_id sim_graph_add_compute(sim_graph *g, sim_stream_id stream, const char *name,
                                  const char *category, sim_time_ps duration_ps,
                                  uint64_t flops, uint64_t bytes)
{
  g_return_val_if_fail(duration_ps >= 0, 0);
  task_load load = {.duration_ps = duration_ps, .bytes = bytes, .u.flops = flops};
  return task_id(g, add_task(g, SIM_TASK_COMPUTE, name, category, &stream, 1, &load));
}

uint32_t sim_graph_scale_unit_compute(sim_graph *g, sim_unit_id unit, double factor)
{
  g_return_val_if_fail(factor > 0, 0);
  uint32_t changed = 0;
  for (sim_stream_id s = 0; s < g->streams->len; s++) {
    if (sim_graph_stream_unit(g, s) != unit || strcmp(sim_graph_stream_name(g, s), "h2d") == 0)
      continue;
    uint32_t n;
    const sim_task_id *tasks = sim_graph_stream_tasks(g, s, &n);
    for (uint32_t i = 0; i < n; i++) {
      task_rec *t = &g->tasks[tasks[i]];
      if (t->kind != SIM_TASK_COMPUTE)
        continue;
      task_load load = *LOAD(g, t);
      load.duration_ps = (sim_time_ps)llround((double)load.duration_ps * factor);
      t->load = load_of(g, &load);
      changed++;
    }
  }
  return changed;
}

sim_task_id sim_graph_add_delay(sim_graph *g, const char *name, sim_time_ps duration_ps)
{
  g_return_val_if_fail(duration_ps >= 0, 0);
  task_load load = {.duration_ps = duration_ps};
  return task_id(g, add_task(g, SIM_TASK_DELAY, name, "wait", NULL, 0, &load));
}

sim_task_id sim_graph_add_transfer(sim_graph *g, sim_stream_id src, sim_stream_id dst,
                                   const char *name, uint64_t bytes)
{
  sim_stream_id m[2] = {src, dst};
  task_load load = {.bytes = bytes};
  return task_id(g, add_task(g, SIM_TASK_TRANSFER, name, "p2p", m, 2, &load));
}

sim_task_id sim_graph_add_collective(sim_graph *g, const sim_stream_id *members, uint32_t n,
                                     const char *name, int op,
                                     const comm_coll_algorithm *algorithm,
                                     uint64_t bytes)
{
  g_return_val_if_fail(n >= 1 && op >= INT8_MIN && op <= INT8_MAX, 0);
  task_load load = {.bytes = bytes, .u.algorithm = algorithm};
  task_rec *t = add_task(g, SIM_TASK_COLLECTIVE, name, "collective", members, n, &load);
  if (t)
    t->op = (int8_t)op;
  return task_id(g, t);
}

sim_task_id sim_graph_add_custom(sim_graph *g, const sim_stream_id *members, uint32_t n,
                                 const char *name, const char *category, int op, uint64_t bytes)
{
  g_return_val_if_fail(op >= INT8_MIN && op <= INT8_MAX, 0);
  task_load load = {.bytes = bytes};
  task_rec *t = add_task(g, SIM_TASK_CUSTOM, name, category, members, n, &load);
  if (t)
    t->op = (int8_t)op;
  return task_id(g, t);
}

void sim_graph_show_on(sim_graph *g, sim_task_id task, sim_stream_id stream)
{
  g_return_if_fail(task < g->n_tasks && stream < g->streams->len);
  task_rec *r = &g->tasks[task];
  g_return_if_fail(r->n_members == 0 && !r->shown);
  /* The stream is kept where the members of a task would be, but the task does not count it
   * as one: the executor never queues it there. */
  r->members_at = stream;
  r->shown = 1;
}

void sim_graph_set_unit_memory(sim_graph *g, sim_unit_id unit, uint64_t resident_bytes)
{
  g_return_if_fail(unit < g->units->len);
  g_array_index(g->units, unit_rec, unit).resident_bytes = resident_bytes;
}

void sim_graph_add_memory_delta(sim_graph *g, sim_task_id task, int64_t delta_bytes)
{
  g_return_if_fail(task < g->n_tasks);
  task_rec *r = &g->tasks[task];
  if (!r->big_delta && r->n_members <= 1) {
    int64_t sum = (int64_t)(int32_t)r->member2 + delta_bytes;
    if (sum >= INT32_MIN && sum <= INT32_MAX) {
      r->member2 = (uint32_t)(int32_t)sum;
      return;
    }
    delta_bytes = (int64_t)(int32_t)r->member2 + delta_bytes;
    r->member2 = 0;
  }
  if (!g->deltas)
    g->deltas = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
  int64_t *d = g_hash_table_lookup(g->deltas, GUINT_TO_POINTER(task));
  if (!d) {
    d = g_new0(int64_t, 1);
    g_hash_table_insert(g->deltas, GUINT_TO_POINTER(task), d);
    r->big_delta = 1;
  }
  *d += delta_bytes;
}

void sim_graph_append(sim_graph *dst, const sim_graph *src, const char *unit_prefix,
                      sim_graph_offsets *out)
{
  g_return_if_fail(dst != NULL && src != NULL && dst != src);
  sim_graph_offsets o = {dst->units->len, dst->streams->len, dst->n_tasks};
  sim_graph_reserve(dst, (uint64_t)dst->n_tasks + src->n_tasks,
                    (uint64_t)dst->n_edges / 2 + src->n_edges / 2);
  for (guint u = 0; u < src->units->len; u++) {
    const unit_rec *r = &g_array_index(src->units, unit_rec, u);
    g_autofree char *name = unit_prefix ? g_strconcat(unit_prefix, r->name, NULL) : NULL;
    sim_unit_id id = sim_graph_add_unit(dst, r->kind, name ? name : r->name);
    g_array_index(dst->units, unit_rec, id).resident_bytes = r->resident_bytes;
  }
  for (guint i = 0; i < src->streams->len; i++) {
    const stream_rec *r = &g_array_index(src->streams, stream_rec, i);
    sim_graph_add_stream(dst, r->unit + o.unit_base, r->name);
  }
  /* Tasks in id order, so that every stream lists them in the order it did. */
  g_autofree sim_stream_id *members = NULL;
  uint32_t cap = 0;
  for (sim_task_id t = 0; t < src->n_tasks; t++) {
    const task_rec *r = &src->tasks[t];
    uint32_t n = r->shown ? 0 : r->n_members;
    if (n > cap) {
      cap = MAX(n, 2 * cap);
      members = g_renew(sim_stream_id, members, cap);
    }
    const sim_stream_id *m = task_members(src, r);
    for (uint32_t i = 0; i < n; i++)
      members[i] = m[i] + o.stream_base;
    const char *category = g_ptr_array_index(src->categories, r->category);
    task_rec *c = add_task(dst, r->kind, LOAD(src, r)->name, category, members, n, LOAD(src, r));
    g_assert(c != NULL);
    c->op = r->op;
    sim_task_id id = task_id(dst, c);
    if (r->shown)
      sim_graph_show_on(dst, id, r->members_at + o.stream_base);
    int64_t delta = task_memory_delta(src, t, r);
    if (delta)
      sim_graph_add_memory_delta(dst, id, delta);
  }
  for (uint32_t i = 0; i + 1 < src->n_edges; i += 2)
    sim_graph_depend(dst, src->edges[i + 1] + o.task_base, src->edges[i] + o.task_base);
  if (out)
    *out = o;
}

/* Makes the graph's block for `tasks` task records and `ids` edge ids (see graph_block) and
 * moves the arrays there, or returns FALSE when all four arrays come to less than BIG_BYTES. */
static gboolean make_block(sim_graph *g, uint32_t tasks, uint32_t ids)
{
  size_t at_edges = line_round((size_t)tasks * sizeof(task_rec));
  size_t at_states = at_edges + line_round((size_t)ids * sizeof(sim_task_id));
  size_t at_succ = at_states + line_round((size_t)tasks * sizeof(task_state));
  size_t bytes = at_succ + (size_t)(ids / 2) * sizeof(sim_task_id);
  if (bytes < BIG_BYTES)
    return FALSE;
  graph_block *b = g_new0(graph_block, 1);
  b->base = big_resize(NULL, 0, bytes, FALSE);   /* fresh: zero */
  b->bytes = huge_round(bytes);                  /* what big_resize mapped */
  b->spare_at = bytes;
  b->tasks = tasks;
  b->ids = ids;
  b->states = (task_state *)(b->base + at_states);
  b->succ = (sim_task_id *)(b->base + at_succ);
  task_rec *t = (task_rec *)b->base;
  sim_task_id *e = (sim_task_id *)(b->base + at_edges);
  if (g->n_tasks)
    memcpy(t, g->tasks, (size_t)g->n_tasks * sizeof *t);
  if (g->n_edges)
    memcpy(e, g->edges, (size_t)g->n_edges * sizeof *e);
  big_free(g->tasks, (size_t)g->cap_tasks * sizeof *g->tasks);
  big_free(g->edges, (size_t)g->cap_edges * sizeof *g->edges);
  g->tasks = t;
  g->cap_tasks = tasks;
  g->edges = e;
  g->cap_edges = ids;
  g->block = b;
  return TRUE;
}

gboolean sim_graph_check_size(uint64_t tasks, GError **error)
{
  /* grow() keeps capacities below UINT32_MAX / 2. */
  if (tasks >= (uint64_t)UINT32_MAX / 2) {
    g_autofree char *count = tasks == UINT64_MAX ? g_strdup("more than 2^60")
                                                 : g_strdup_printf("%" G_GUINT64_FORMAT, tasks);
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "the task graph would hold %s tasks, more than the %u one run can number: use "
                "fewer devices, micro-batches or iterations", count, UINT32_MAX / 2 - 1);
    return FALSE;
  }
  g_autofree char *what = g_strdup_printf("the task graph of %" G_GUINT64_FORMAT " tasks", tasks);
  return dt_memory_check(tasks * SIM_RUN_BYTES_PER_TASK, what, error);
}

void sim_graph_reserve(sim_graph *g, uint64_t tasks, uint64_t edges)
{
  g_return_if_fail(g != NULL);
  /* Capacities stay below grow()'s limit; edges are stored as two ids each. */
  uint32_t want_tasks = (uint32_t)MIN(tasks, (uint64_t)UINT32_MAX / 2 - 1);
  uint32_t want_ids = (uint32_t)MIN(2 * edges, (uint64_t)UINT32_MAX / 2 - 1);
  if (want_tasks <= g->cap_tasks && want_ids <= g->cap_edges)
    return;
  if (!g->block &&
      make_block(g, MAX(want_tasks, g->cap_tasks), MAX(want_ids, g->cap_edges)))
    return;
  if (want_tasks > g->cap_tasks) {
    g->tasks = resize_out(g, g->tasks, (size_t)g->n_tasks * sizeof *g->tasks,
                          (size_t)g->cap_tasks * sizeof *g->tasks,
                          (size_t)want_tasks * sizeof *g->tasks);
    g->cap_tasks = want_tasks;
  }
  if (want_ids > g->cap_edges) {
    g->edges = resize_out(g, g->edges, (size_t)g->n_edges * sizeof *g->edges,
                          (size_t)g->cap_edges * sizeof *g->edges,
                          (size_t)want_ids * sizeof *g->edges);
    g->cap_edges = want_ids;
  }
}

void sim_graph_reserve_members(sim_graph *g, uint64_t members)
{
  g_return_if_fail(g != NULL);
  uint32_t want = (uint32_t)MIN(members, (uint64_t)UINT32_MAX / 2 - 1);
  if (want <= g->cap_members)
    return;
  g->members = resize_out(g, g->members, (size_t)g->n_members * sizeof *g->members,
                          (size_t)g->cap_members * sizeof *g->members,
                          (size_t)want * sizeof *g->members);
  g->cap_members = want;
}

uint32_t sim_graph_n_members(const sim_graph *g) { return g->n_members; }

void sim_graph_depend(sim_graph *g, sim_task_id task, sim_task_id before)
{
  g_return_if_fail(task < g->n_tasks && before < g->n_tasks);
  PUSH(g, g->edges, g->n_edges, g->cap_edges, before);
  PUSH(g, g->edges, g->n_edges, g->cap_edges, task);
}

uint32_t sim_graph_n_edges(const sim_graph *g) { return g->n_edges / 2; }

void sim_graph_edge(const sim_graph *g, uint32_t i, sim_task_id *before, sim_task_id *task)
{
  g_return_if_fail(i < g->n_edges / 2);
  *before = g->edges[2 * i];
  *task = g->edges[2 * i + 1];
}

#define TASK(g, t) (&(g)->tasks[(t)])

sim_task_kind sim_graph_task_kind(const sim_graph *g, sim_task_id t) { return TASK(g, t)->kind; }
const char *sim_graph_task_name(const sim_graph *g, sim_task_id t) { return LOAD(g, TASK(g, t))->name; }
sim_time_ps sim_graph_task_duration(const sim_graph *g, sim_task_id t)
{
  sim_task_kind k = TASK(g, t)->kind;
  return k == SIM_TASK_COMPUTE || k == SIM_TASK_DELAY ? LOAD(g, TASK(g, t))->duration_ps : 0;
}
const char *sim_graph_task_category(const sim_graph *g, sim_task_id t)
{
  return g_ptr_array_index(g->categories, TASK(g, t)->category);
}
uint64_t sim_graph_task_bytes(const sim_graph *g, sim_task_id t)
{
  return LOAD(g, TASK(g, t))->bytes;
}
uint64_t sim_graph_task_flops(const sim_graph *g, sim_task_id t)
{
  return task_flops(g, TASK(g, t));
}
int sim_graph_task_op(const sim_graph *g, sim_task_id t) { return TASK(g, t)->op; }
const comm_coll_algorithm *sim_graph_task_algorithm(const sim_graph *g, sim_task_id t)
{
  return TASK(g, t)->kind == SIM_TASK_COLLECTIVE ? LOAD(g, TASK(g, t))->u.algorithm : NULL;
}

uint32_t sim_graph_task_members(const sim_graph *g, sim_task_id t, const sim_stream_id **members)
{
  const task_rec *r = TASK(g, t);
  if (members)
    *members = r->n_members ? task_members(g, r) : NULL;
  return r->n_members;
}

sim_task_view sim_graph_task_view(const sim_graph *g, sim_task_id t)
{
  const task_rec *r = TASK(g, t);
  return (sim_task_view){(sim_task_kind)r->kind, r->op, r->n_members,
                         r->n_members ? task_members(g, r) : NULL, LOAD(g, r)->bytes};
}

/* ---- Executor ------------------------------------------------------------------------------ */

static inline gboolean ts_started(const task_state *s) { return s->at < 0; }
static inline gboolean ts_done(const task_state *s) { return s->end < 0; }
static inline sim_time_ps ts_start_ps(const task_state *s) { return s->at < 0 ? ~s->at : 0; }
static inline sim_time_ps ts_end_ps(const task_state *s) { return s->end < 0 ? ~s->end : 0; }
#define SUCC_FIRST(end) ((uint32_t)(end))
#define SUCC_COUNT(end) ((uint32_t)((uint64_t)(end) >> 32))

struct sim_exec {
  sim_engine *engine;
  const sim_graph *g;
  const sim_comm_ops *comm;
  void *comm_user;
  task_state *ts;
  uint32_t n_tasks, n_edges;  /* sizes of the arrays below */
  graph_block *room;       /* the graph's block whose room holds ts and succ, or NULL */
  uint64_t *span_first;    /* per task: first of its consecutive span ids (0: none); made when
                            * a task starts with observers attached */
  sim_task_id *succ;       /* successors of each task, task by task (see task_state) */
  uint32_t *cursor;        /* per stream: index of its next task in stream->tasks */
  sim_time_ps *busy_ps;    /* per stream */
  sim_track_id *track;     /* per stream */
  sim_proc_id *proc;       /* per unit */
  int64_t *memory;         /* per unit: bytes held now (for the trace counter) */
  uint32_t done_count;
  sim_time_ps makespan_ps;
};

/* The distinct streams among a task's members. */
static uint32_t streams_needed(const sim_graph *g, sim_task_id t)
{
  const task_rec *r = TASK(g, t);
  uint32_t distinct = r->n_members;
  const sim_stream_id *m = task_members(g, r);
  for (uint32_t i = 0; r->dups && i < r->n_members; i++) {
    gboolean dup = FALSE;
    for (uint32_t j = 0; j < i; j++)
      dup |= m[j] == m[i];
    distinct -= dup;
  }
  return distinct;
}

sim_exec *sim_exec_new(sim_engine *engine, const sim_graph *g)
{
  sim_exec *x = g_new0(sim_exec, 1);
  x->engine = engine;
  x->g = g;
  uint32_t n = g->n_tasks;
  x->n_tasks = n;
  x->n_edges = g->n_edges / 2;
  uint32_t n_edges = x->n_edges;
  graph_block *b = g->block;
  if (b && !b->lent && n <= b->tasks && n_edges <= b->ids / 2) {
    x->room = b;
    b->lent = TRUE;
    x->ts = b->states;
    x->succ = b->succ;
    if (b->used)
      memset(x->ts, 0, (size_t)n * sizeof *x->ts);
    b->used = TRUE;
  } else {
    x->ts = big_new0(n, sizeof(task_state));
    x->succ = big_new0(n_edges, sizeof(sim_task_id));
  }
  const sim_task_id *e = g->edges;
  /* Counts, then each task's first successor serves as its fill cursor, which leaves it
   * count entries further: one pass takes the counts back off. */
  for (uint32_t i = 0; i < n_edges; i++) {
    x->ts[e[2 * i]].end += (int64_t)1 << 32;
    x->ts[e[2 * i + 1]].at++;
  }
  uint32_t first = 0;
  for (uint32_t t = 0; t < n; t++) {
    x->ts[t].end |= first;
    first += SUCC_COUNT(x->ts[t].end);
  }
  for (uint32_t i = 0; i < n_edges; i++)
    x->succ[SUCC_FIRST(x->ts[e[2 * i]].end++)] = e[2 * i + 1];
  for (uint32_t t = 0; t < n; t++) {
    x->ts[t].end -= SUCC_COUNT(x->ts[t].end);
    x->ts[t].at += streams_needed(g, t);
  }
  uint32_t ns = g->streams->len, nu = g->units->len;
  x->cursor = g_new0(uint32_t, ns ? ns : 1);
  x->busy_ps = g_new0(sim_time_ps, ns ? ns : 1);
  x->track = g_new0(sim_track_id, ns ? ns : 1);
  x->proc = g_new0(sim_proc_id, nu ? nu : 1);
  x->memory = g_new0(int64_t, nu ? nu : 1);
  for (uint32_t u = 0; u < nu; u++) {
    const unit_rec *ur = &g_array_index(g->units, unit_rec, u);
    x->proc[u] = sim_engine_add_proc(engine, ur->kind, ur->name, (int)u);
  }
  for (uint32_t s = 0; s < ns; s++) {
    const stream_rec *sr = &g_array_index(g->streams, stream_rec, s);
    x->track[s] = sim_engine_add_track(engine, x->proc[sr->unit], sr->name, (int)s);
  }
  return x;
}

void sim_exec_free(sim_exec *x)
{
  if (!x)
    return;
  if (x->room) {
    x->room->lent = FALSE;
  } else {
    big_free(x->ts, (size_t)MAX(x->n_tasks, 1) * sizeof(task_state));
    big_free(x->succ, (size_t)MAX(x->n_edges, 1) * sizeof(sim_task_id));
  }
  if (x->span_first)
    big_free(x->span_first, (size_t)MAX(x->n_tasks, 1) * sizeof(uint64_t));
  g_free(x->cursor);
  g_free(x->busy_ps);
  g_free(x->track);
  g_free(x->proc);
  g_free(x->memory);
  g_free(x);
}

void sim_exec_set_comm(sim_exec *x, const sim_comm_ops *ops, void *user)
{
  x->comm = ops;
  x->comm_user = user;
}

const sim_graph *sim_exec_graph(const sim_exec *x) { return x->g; }
sim_engine *sim_exec_engine(const sim_exec *x) { return x->engine; }
sim_track_id sim_exec_stream_track(const sim_exec *x, sim_stream_id s) { return x->track[s]; }

static void fixed_done(sim_engine *engine, void *data, uint64_t task)
{
  sim_exec_task_done(data, (sim_task_id)task);
}

static void start_task(sim_exec *x, sim_task_id t)
{
  const task_rec *r = TASK(x->g, t);
  task_state *s = &x->ts[t];
  __builtin_prefetch(&x->succ[SUCC_FIRST(s->end)]);   /* read when it ends */
  g_assert(sim_engine_now(x->engine) >= 0);
  s->at = ~sim_engine_now(x->engine);
  if (sim_engine_has_observers(x->engine)) {
    if (!x->span_first)
      x->span_first = big_new0(x->n_tasks, sizeof(uint64_t));
    const sim_stream_id *m = task_members(x->g, r);
    const char *category = g_ptr_array_index(x->g->categories, r->category);
    for (uint32_t i = 0; i < r->n_members; i++) {
      uint64_t id = sim_engine_span_begin(x->engine, x->track[m[i]], LOAD(x->g, r)->name, category,
                                          LOAD(x->g, r)->bytes, task_flops(x->g, r));
      if (i == 0)
        x->span_first[t] = id;
    }
    if (r->shown)
      x->span_first[t] = sim_engine_span_begin(x->engine, x->track[m[0]], LOAD(x->g, r)->name, category,
                                               LOAD(x->g, r)->bytes, task_flops(x->g, r));
  }
  switch ((sim_task_kind)r->kind) {
  case SIM_TASK_COMPUTE:
  case SIM_TASK_DELAY:
    sim_engine_schedule_in(x->engine, LOAD(x->g, r)->duration_ps, fixed_done, x, t);
    break;
  case SIM_TASK_TRANSFER:
  case SIM_TASK_COLLECTIVE:
  case SIM_TASK_CUSTOM:
    g_assert(x->comm != NULL && x->comm->start != NULL);
    x->comm->start(x->comm_user, x, t);
    break;
  default:
    g_assert_not_reached();
  }
}

/* A task starts when all its streams have reached it and its dependencies are done: when the
 * last of them takes its count of pending ones to zero. */
static inline void count_down(sim_exec *x, sim_task_id t)
{
  if (--x->ts[t].at == 0)
    start_task(x, t);
}

/* Moves a stream's cursor onto its next task and tells that task it has arrived. */
static void stream_advance(sim_exec *x, sim_stream_id sid)
{
  const stream_rec *sr = &g_array_index(x->g->streams, stream_rec, sid);
  if (x->cursor[sid] >= sr->n_tasks)
    return;
  count_down(x, sr->tasks[x->cursor[sid]]);
}

/* Arrows drawn per collective in a trace: enough to follow a node's ring, few enough that a
 * collective over thousands of devices stays readable. */
#define SIM_TRACE_COLLECTIVE_ARROWS 16

void sim_exec_task_done(sim_exec *x, sim_task_id t)
{
  task_state *s = &x->ts[t];
  g_return_if_fail(ts_started(s) && !ts_done(s));
  const task_rec *r = TASK(x->g, t);
  /* What this ends will read next is mostly cold (a large run's graph is far larger than the
   * caches): ask for the successors' states and the next tasks of its streams at once, so
   * that their misses overlap instead of following one another. */
  uint32_t k0 = SUCC_FIRST(s->end), k1 = k0 + SUCC_COUNT(s->end);
  for (uint32_t k = k0; k < k1 && k < k0 + 4; k++) {
    __builtin_prefetch(&x->ts[x->succ[k]], 1);
    __builtin_prefetch(TASK(x->g, x->succ[k]));
    __builtin_prefetch((const char *)TASK(x->g, x->succ[k]) + sizeof(task_rec) - 1);
  }
  /* The next task of each of its first streams (NO_TASK: none), asked for now and told that
   * its stream arrived below; streams past the fourth are advanced by stream_advance(). */
  const sim_stream_id *m = task_members(x->g, r);
  sim_task_id next[4];
  for (uint32_t i = 0; i < r->n_members && i < 4; i++) {
    const stream_rec *sr = &g_array_index(x->g->streams, stream_rec, m[i]);
    uint32_t c = x->cursor[m[i]] + 1;
    next[i] = c < sr->n_tasks ? sr->tasks[c] : NO_TASK;
    if (next[i] != NO_TASK) {
      __builtin_prefetch(&x->ts[next[i]], 1);
      __builtin_prefetch(TASK(x->g, next[i]));
      __builtin_prefetch((const char *)TASK(x->g, next[i]) + sizeof(task_rec) - 1);
    }
  }
  sim_time_ps start_ps = ~s->at, end_ps = sim_engine_now(x->engine);
  s->end = ~end_ps;
  x->done_count++;
  if (end_ps > x->makespan_ps)
    x->makespan_ps = end_ps;
  if (x->span_first && x->span_first[t]) {
    for (uint32_t i = 0; i < MAX(r->n_members, r->shown); i++)
      sim_engine_span_end(x->engine, x->span_first[t] + i);
    int64_t delta = task_memory_delta(x->g, t, r);
    if (delta && r->n_members) {
      sim_unit_id u = g_array_index(x->g->streams, stream_rec, m[0]).unit;
      x->memory[u] += delta;
      uint64_t resident = g_array_index(x->g->units, unit_rec, u).resident_bytes;
      sim_engine_counter(x->engine, x->proc[u], "memory GiB",
                         (double)((int64_t)resident + x->memory[u]) / (1 << 30));
    }
    if (r->kind == SIM_TASK_TRANSFER)
      sim_engine_link(x->engine, x->track[m[0]], start_ps, x->track[m[1]], end_ps, LOAD(x->g, r)->name);
    /* A collective: an arrow from each member to the next in group order (the ring a viewer
     * can follow), at most SIM_TRACE_COLLECTIVE_ARROWS of them. */
    if (r->kind == SIM_TASK_COLLECTIVE && r->n_members > 1)
      for (uint32_t i = 0; i < MIN(r->n_members, SIM_TRACE_COLLECTIVE_ARROWS); i++)
        sim_engine_link(x->engine, x->track[m[i]], start_ps,
                        x->track[m[(i + 1) % r->n_members]], end_ps, LOAD(x->g, r)->name);
  }
  /* Free the streams first, then release successors: both orders are deterministic, this one
   * lets a successor on the same stream start at once. */
  for (uint32_t i = 0; i < r->n_members; i++) {
    gboolean dup = FALSE;
    for (uint32_t j = 0; r->dups && j < i; j++)
      dup |= m[j] == m[i];
    if (dup)
      continue;
    x->busy_ps[m[i]] += end_ps - start_ps;
    x->cursor[m[i]]++;
    if (i >= 4)
      stream_advance(x, m[i]);
    else if (next[i] != NO_TASK)
      count_down(x, next[i]);
  }
  for (uint32_t k = k0; k < k1; k++)
    count_down(x, x->succ[k]);
}

static void kickoff(sim_engine *engine, void *data, uint64_t arg)
{
  sim_exec *x = data;
  for (sim_stream_id sid = 0; sid < x->g->streams->len; sid++)
    stream_advance(x, sid);
  /* Tasks on no stream (delays) need only their dependencies. */
  for (uint32_t i = 0; i < x->g->n_memberless; i++) {
    sim_task_id t = x->g->memberless[i];
    if (x->ts[t].at == 0)
      start_task(x, t);
  }
}

gboolean sim_exec_run(sim_exec *x, GError **error)
{
  sim_engine_schedule_in(x->engine, 0, kickoff, x, 0);
  /* Nothing runs at SIM_TIME_MAX: an event there saturated, the plan asks for more than the
   * clock holds, and what follows it would all happen at that one instant until the watchdog. */
  sim_engine_run_until(x->engine, SIM_TIME_MAX - 1);
  if (!sim_engine_check_clock(x->engine, error))
    return FALSE;
  uint32_t n = x->g->n_tasks;
  const GError *comm_error = x->comm && x->comm->error ? x->comm->error(x->comm_user) : NULL;
  if (comm_error) {
    g_propagate_error(error, g_error_copy(comm_error));
    return FALSE;
  }
  if (sim_engine_error(x->engine)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s", sim_engine_error(x->engine));
    return FALSE;
  }
  if (sim_engine_stalled(x->engine)) {
    /* Name the tasks that were running when the clock stopped. */
    g_autoptr(GString) msg = g_string_new(NULL);
    g_string_printf(msg, "the simulation stopped advancing at %.9f s (the same instant for over "
                    "%d million events); running:", sim_time_to_s(sim_engine_now(x->engine)),
                    SIM_STALL_EVENTS / 1000000);
    int shown = 0;
    for (sim_task_id t = 0; t < n && shown < 5; t++)
      if (ts_started(&x->ts[t]) && !ts_done(&x->ts[t])) {
        g_string_append_printf(msg, " '%s'", sim_graph_task_name(x->g, t));
        shown++;
      }
    g_set_error_literal(error, DT_ERROR, DT_ERROR_INTERNAL, msg->str);
    return FALSE;
  }
  if (x->done_count == n)
    return TRUE;
  /* Name a few of the stuck tasks and why they are stuck. */
  g_autoptr(GString) msg = g_string_new(NULL);
  g_string_printf(msg, "%u of %u tasks could never start (dependency cycle or dependencies "
                  "against stream order):", n - x->done_count, n);
  int shown = 0;
  for (sim_task_id t = 0; t < n && shown < 5; t++) {
    const task_state *s = &x->ts[t];
    if (ts_started(s))
      continue;
    /* The streams whose cursor is on the task have arrived; the rest of its count is
     * dependencies. */
    const task_rec *r = TASK(x->g, t);
    const sim_stream_id *m = task_members(x->g, r);
    uint32_t needed = streams_needed(x->g, t), arrived = 0;
    for (uint32_t i = 0; i < r->n_members; i++) {
      gboolean dup = FALSE;
      for (uint32_t j = 0; r->dups && j < i; j++)
        dup |= m[j] == m[i];
      const stream_rec *sr = &g_array_index(x->g->streams, stream_rec, m[i]);
      arrived += !dup && x->cursor[m[i]] < sr->n_tasks && sr->tasks[x->cursor[m[i]]] == t;
    }
    g_string_append_printf(msg, " '%s' (waits for %u dependencies, %u of %u streams)",
                           LOAD(x->g, r)->name, (uint32_t)s->at - (needed - arrived), arrived, needed);
    shown++;
  }
  g_set_error_literal(error, DT_ERROR, DT_ERROR_INTERNAL, msg->str);
  return FALSE;
}

sim_time_ps sim_exec_task_start(const sim_exec *x, sim_task_id t)
{
  return ts_start_ps(&x->ts[t]);
}
sim_time_ps sim_exec_task_end(const sim_exec *x, sim_task_id t) { return ts_end_ps(&x->ts[t]); }
sim_time_ps sim_exec_makespan(const sim_exec *x) { return x->makespan_ps; }
sim_time_ps sim_exec_stream_busy(const sim_exec *x, sim_stream_id s) { return x->busy_ps[s]; }

/* ---- Invariants ---------------------------------------------------------------------------- */

static gboolean graph_breach(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean graph_breach(GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "task graph: %s", what);
  return FALSE;
}

/* The graph's invariants, checked from the records alone (see taskgraph.h). The executor's
 * counts rest on the stream lists: a task waits for the cursor of each distinct member stream,
 * so each must list it exactly once, in id order (tasks are added in id order); and a task
 * can start only if no chain of dependencies and stream orders leads back to it. */
gboolean sim_graph_check(const sim_graph *g, GError **error)
{
  g_return_val_if_fail(g != NULL, FALSE);
  uint32_t n = g->n_tasks, ns = g->streams->len;
  for (uint32_t i = 0; i < g->n_edges / 2; i++) {
    sim_task_id before = g->edges[2 * i], after = g->edges[2 * i + 1];
    if (before >= n || after >= n)
      return graph_breach(error, "dependency %u joins task %u to task %u, of %u tasks", i,
                          before, after, n);
    if (before == after)
      return graph_breach(error, "task %u '%s' depends on itself", after, sim_graph_task_name(g, after));
  }
  /* Per stream: its tasks in id order, each naming the stream among its members. */
  uint64_t listed = 0, needed = 0;
  for (uint32_t s = 0; s < ns; s++) {
    const stream_rec *sr = &g_array_index(g->streams, stream_rec, s);
    for (uint32_t k = 0; k < sr->n_tasks; k++) {
      sim_task_id t = sr->tasks[k];
      if (t >= n || (k > 0 && t <= sr->tasks[k - 1]))
        return graph_breach(error, "stream %u '%s': task %u at place %u is out of order", s,
                            sr->name, t, k);
      const task_rec *r = TASK(g, t);
      const sim_stream_id *m = task_members(g, r);
      gboolean member = FALSE;
      for (uint32_t j = 0; j < r->n_members && !member; j++)
        member = m[j] == s;
      if (!member)
        return graph_breach(error, "stream %u '%s' lists task %u '%s', which is not on it", s,
                            sr->name, t, LOAD(g, r)->name);
    }
    listed += sr->n_tasks;
  }
  for (uint32_t t = 0; t < n; t++) {
    const task_rec *r = TASK(g, t);
    const sim_stream_id *m = task_members(g, r);
    for (uint32_t j = 0; j < r->n_members; j++)
      if (m[j] >= ns)
        return graph_breach(error, "task %u '%s' names stream %u, of %u", t, LOAD(g, r)->name, m[j], ns);
    needed += streams_needed(g, t);
  }
  if (listed != needed)
    return graph_breach(error, "the streams list %llu tasks, the tasks name %llu distinct "
                        "streams", (unsigned long long)listed, (unsigned long long)needed);
  /* No cycle (Kahn's order): a task waits for its dependencies and for the task before it on
   * each of its streams. */
  uint32_t *wait = g_new0(uint32_t, MAX(n, 1));
  uint32_t *succ_at = g_new0(uint32_t, (size_t)n + 1);
  uint32_t *succ = g_new(uint32_t, MAX(g->n_edges / 2, 1));
  for (uint32_t i = 0; i < g->n_edges / 2; i++) {
    succ_at[g->edges[2 * i] + 1]++;
    wait[g->edges[2 * i + 1]]++;
  }
  for (uint32_t t = 0; t < n; t++)
    succ_at[t + 1] += succ_at[t];
  uint32_t *fill = g_memdup2(succ_at, (size_t)n * sizeof *succ_at);
  for (uint32_t i = 0; i < g->n_edges / 2; i++)
    succ[fill[g->edges[2 * i]]++] = g->edges[2 * i + 1];
  g_free(fill);
  /* A stream's next task waits for the one before: the position of each task on each stream is
   * found again from the stream's list by a cursor per stream. */
  uint32_t *cursor = g_new0(uint32_t, MAX(ns, 1));
  for (uint32_t s = 0; s < ns; s++) {
    const stream_rec *sr = &g_array_index(g->streams, stream_rec, s);
    for (uint32_t k = 1; k < sr->n_tasks; k++)
      wait[sr->tasks[k]]++;
  }
  uint32_t *ready = g_new(uint32_t, MAX(n, 1)), head = 0, tail = 0;
  for (uint32_t t = 0; t < n; t++)
    if (wait[t] == 0)
      ready[tail++] = t;
  while (head < tail) {
    sim_task_id t = ready[head++];
    for (uint32_t i = succ_at[t]; i < succ_at[t + 1]; i++)
      if (--wait[succ[i]] == 0)
        ready[tail++] = succ[i];
    const task_rec *r = TASK(g, t);
    const sim_stream_id *m = task_members(g, r);
    for (uint32_t j = 0; j < r->n_members; j++) {
      const stream_rec *sr = &g_array_index(g->streams, stream_rec, m[j]);
      /* Each distinct stream once: the cursor moves past t the first time. */
      if (cursor[m[j]] < sr->n_tasks && sr->tasks[cursor[m[j]]] == t &&
          ++cursor[m[j]] < sr->n_tasks && --wait[sr->tasks[cursor[m[j]]]] == 0)
        ready[tail++] = sr->tasks[cursor[m[j]]];
    }
  }
  sim_task_id stuck = NO_TASK;
  for (uint32_t t = 0; t < n && stuck == NO_TASK; t++)
    if (wait[t] > 0)
      stuck = t;
  g_free(wait);
  g_free(succ_at);
  g_free(succ);
  g_free(cursor);
  g_free(ready);
  if (stuck != NO_TASK)
    return graph_breach(error, "%u of %u tasks are on a cycle of dependencies and stream "
                        "orders or wait for one, the first task %u '%s'", n - tail, n, stuck,
                        sim_graph_task_name(g, stuck));
  return TRUE;
}

/* ---- The simple communication model ------------------------------------------------------- */

static void simple_start(void *user, sim_exec *x, sim_task_id t)
{
  const sim_simple_comm *c = user;
  const task_rec *r = TASK(x->g, t);
  sim_time_ps d = 0;
  if (r->kind == SIM_TASK_TRANSFER) {
    d = sim_time_add_sat(c->latency_ps, sim_time_for_work((double)LOAD(x->g, r)->bytes, (double)c->bandwidth_Bps));
  } else if (r->n_members > 1) {
    /* Ring allreduce: 2(n-1) steps, each latency + (bytes/n)/bw. */
    uint64_t n = r->n_members;
    sim_time_ps step = sim_time_add_sat(c->latency_ps,
                                        sim_time_for_work((double)LOAD(x->g, r)->bytes, (double)c->bandwidth_Bps * n));
    if (!sim_time_mul(step, (int64_t)(2 * (n - 1)), &d))
      d = SIM_TIME_MAX;
  }
  sim_engine_schedule_in(x->engine, d, fixed_done, x, t);
}

const sim_comm_ops sim_simple_comm_ops = {"simple", simple_start, NULL};
