/* The network models: how transfers on the topology become engine events.
 *
 * `flow`: a transfer first waits the latency of its route (the sum of its links' latencies),
 * then becomes a flow that shares every directed link of its route max-min fairly with the
 * other flows there. Flows on the same route always get the same rate, so the active flows
 * of one route form a class (fclass) with one rate, one count of bytes served per flow and
 * one completion event (its earliest flow's); links hold classes, and everything below works
 * per class, not per flow. Rates are recomputed by progressive filling, but only over the
 * classes connected to one that started or ended through shared links, and only once per
 * simulated instant however many flows start or end in it (a recompute event scheduled at
 * the current time, after the events already due then). When one component holds nearly
 * every class (incast, all-to-all), recomputes fill all live classes without searching for
 * the component, which gives the same rates; such a global fill starts after the steps of the
 * one before that it would repeat (fill_global), bit for bit what a fill from scratch gives. A
 * class whose rate changes settles its served bytes and moves its completion event with
 * sim_engine_reschedule. A transfer sent onto links nobody uses is reserved: one event, its
 * completion, and no place on the links' class lists until another flow meets it (see
 * comm_net_send).
 *
 * `analytic`: one event per transfer at the idle-network time of comm_topology_p2p_time.
 *
 * Both use the same rounding (sim_time_for_work on the bottleneck bandwidth), so a transfer
 * that shares no link takes the same picoseconds under both. */
#include "comm_internal.h"

#include <math.h>
#include <string.h>

#define INLINE_HOPS 12
#define FLOWS_PER_SLAB 1024
#define CLASSES_PER_SLAB 256
/* Above this many live classes, a recompute whose components cover nearly all of them lets the
 * next GLOBAL_RUNS recomputes fill everything without a component search. */
#define GLOBAL_MIN_CLASSES 64
#define GLOBAL_RUNS 31
/* Progressive filling over at most this many links scans them for the smallest share; over
 * more, it keeps them in a heap. */
#define FILL_SCAN_LINKS 64

enum { EV_ACTIVATE, EV_COMPLETE, EV_INSTANT, EV_RECOMPUTE };

typedef struct flow flow;
typedef struct fclass fclass;

typedef struct {
  uint32_t link;   /* directed link id */
  uint32_t slot;   /* position of this class in the link's class list */
} hop;

/* One transfer. While it shares links it belongs to the class of its route; before (waiting
 * out its latency) and for instant transfers it has its own event. */
struct flow {
  comm_net *net;
  comm_done_fn done;
  void *user;
  sim_event *ev;         /* pending activation or instant completion, or NULL */
  fclass *cls;           /* the class it is active in, or NULL */
  double target;         /* class service (bytes per flow) at which all its bytes are sent */
  uint64_t seq;          /* activation order: ties between equal targets */
  uint64_t span;
  uint64_t bytes;
  comm_ep src, dst;
  sim_time_ps start_ps;  /* when its bytes start moving (after the route's latency) */
};

/* The active flows of one route (source, destination). Max-min fairness gives flows with the
 * same links the same rate, so rates are computed per class and every flow of a class is
 * served alike: `served` counts the bytes each of its flows has sent since the class was
 * made (as of last_ps), a flow is done when served reaches its target, and the class has one
 * engine event, the completion of the flow with the smallest target. A rate change then costs
 * one settlement and one reschedule per class, not per flow. */
struct fclass {
  /* What the component search, the filling and apply_rates read, first. */
  uint32_t epoch;        /* component search mark */
  uint32_t live_pos;     /* position in net->live_classes */
  uint32_t count;        /* active flows */
  uint32_t nhops;
  gboolean moved;        /* its first completion moved without a rate change */
  double next_rate;      /* progressive filling scratch; < 0 while unfixed */
  double rate;           /* bytes/s per flow; 0 until the first recompute */
  sim_event *ev;         /* completion of the first flow, or NULL */
  hop *hops;
  double served;         /* bytes per flow sent from creation to last_ps */
  sim_time_ps last_ps;
  hop inline_hops[INLINE_HOPS];
  comm_net *net;
  uint64_t key;          /* src << 32 | dst */
  gboolean in_use;
  gboolean reserved;     /* sent onto links nobody used, active from last_ps on at its
                          * bottleneck rate (see comm_net_send) */
  gboolean unplaced;     /* reserved and still alone on its links: kept off their class lists,
                          * marked in net->reserved_on instead (see comm_net_send) */
  gboolean hashed;       /* in net->classes, where activating flows find their route's class */
  flow **heap;           /* min-heap of its flows by (target, seq) */
  uint32_t hn, hcap;
};

typedef struct {
  fclass **cls;
  double rem_Bps;        /* progressive filling: capacity not yet given out */
  double sorted_Bps;     /* its share in net->sorted (capacity over flows), while there */
  uint32_t n, cap;       /* classes on the link */
  uint32_t flows;        /* flows on the link: the sum of their classes' counts */
  uint32_t live_pos;     /* position in net->live_links while it has classes */
  uint32_t epoch;        /* component search mark */
  uint32_t unfrozen;     /* progressive filling: flows on it without a rate yet */
  uint32_t hpos;         /* progressive filling: position in the link heap, whose entry holds
                          * the share it is ranked by; IN_SORTED: ranked in net->sorted */
  uint32_t touched;      /* progressive filling: mark of the last fix that changed it */
  gboolean dirty;        /* in net->dirty_links */
  gboolean changed;      /* in net->changed_links */
  uint32_t fill_flows;   /* its flows at the last global fill (0: not live then), */
  uint32_t fix_step;     /* and the step of that fill where it fixed flows (UINT32_MAX: none) */
  uint32_t last_ent;     /* its last entry in net->log_ents (UINT32_MAX: none) */
} link_state;

/* The classes that activating flows join, by route key (src << 32 | dst): open addressing with
 * linear probing and backward-shift deletion (GHashTable's lookups, inserts and removals were
 * 7% of an nccl run). Nothing iterates over it, so its order never matters. */
typedef struct {
  uint64_t *keys;
  fclass **vals;         /* NULL: empty slot */
  uint32_t cap, n;       /* cap a power of two, or 0 */
} class_table;

static inline uint32_t class_slot(const class_table *t, uint64_t key)
{
  return (uint32_t)((key * 0x9E3779B97F4A7C15ULL) >> 32) & (t->cap - 1);
}

static fclass *class_table_get(const class_table *t, uint64_t key)
{
  if (t->n == 0)
    return NULL;
  for (uint32_t i = class_slot(t, key);; i = (i + 1) & (t->cap - 1)) {
    if (t->vals[i] == NULL)
      return NULL;
    if (t->keys[i] == key)
      return t->vals[i];
  }
}

static void class_table_put(class_table *t, uint64_t key, fclass *c);

static void class_table_grow(class_table *t)
{
  class_table old = *t;
  t->cap = old.cap ? 2 * old.cap : 64;
  t->keys = g_new(uint64_t, t->cap);
  t->vals = g_new0(fclass *, t->cap);
  t->n = 0;
  for (uint32_t i = 0; i < old.cap; i++)
    if (old.vals[i])
      class_table_put(t, old.keys[i], old.vals[i]);
  g_free(old.keys);
  g_free(old.vals);
}

/* `key` must not be in the table. */
static void class_table_put(class_table *t, uint64_t key, fclass *c)
{
  if (4 * ((uint64_t)t->n + 1) > 3 * (uint64_t)t->cap)
    class_table_grow(t);
  uint32_t i = class_slot(t, key);
  while (t->vals[i])
    i = (i + 1) & (t->cap - 1);
  t->keys[i] = key;
  t->vals[i] = c;
  t->n++;
}

static void class_table_remove(class_table *t, uint64_t key)
{
  uint32_t mask = t->cap - 1, i = class_slot(t, key);
  for (;; i = (i + 1) & mask) {
    g_assert(t->vals[i] != NULL);   /* the key is in the table */
    if (t->keys[i] == key)
      break;
  }
  /* Move back the entries after i that probing would no longer reach. */
  for (uint32_t j = (i + 1) & mask; t->vals[j]; j = (j + 1) & mask) {
    uint32_t home = class_slot(t, t->keys[j]);
    if (((j - home) & mask) >= ((j - i) & mask)) {
      t->keys[i] = t->keys[j];
      t->vals[i] = t->vals[j];
      i = j;
    }
  }
  t->vals[i] = NULL;
  t->n--;
}

/* Growable arrays for the hot path (GArray's generic code costs more than the work here). */
typedef struct {
  uint32_t *v;
  uint32_t n, cap;
} u32vec;

typedef struct {
  fclass **v;
  uint32_t n, cap;
} classvec;

typedef struct {
  flow **v;
  uint32_t n, cap;
} flowvec;

/* An entry of the link heap of progressive filling: the key beside the link, so that sifting
 * reads one array instead of a link record per comparison. */
typedef struct {
  double share_Bps;      /* rem_Bps / unfrozen of the link when last ranked */
  uint32_t link;
} heap_ent;
typedef struct {
  heap_ent *v;
  uint32_t n, cap;
} heapvec;

/* The log of a global fill (see fill_global): per step, the fixing link, the share, and where
 * the step's classes and link states end in the logs; per link a step changed, its state after
 * the step. */
typedef struct {
  double share_Bps;
  uint32_t link, cls_end, ent_end;
} log_step;
typedef struct {
  double rem_Bps;        /* remaining capacity after the step */
  uint32_t link;
  uint32_t fixed;        /* flows on it with a rate after the step */
  uint32_t prev;         /* the link's entry before (UINT32_MAX: none) */
} log_ent;
typedef struct {
  log_step *v;
  uint32_t n, cap;
} logstepvec;
typedef struct {
  log_ent *v;
  uint32_t n, cap;
} logentvec;

#define VEC_PUSH(vec, x)                                                                        \
  do {                                                                                          \
    if ((vec)->n == (vec)->cap) {                                                               \
      (vec)->cap = (vec)->cap ? 2 * (vec)->cap : 64;                                            \
      (vec)->v = g_realloc_n((vec)->v, (vec)->cap, sizeof(*(vec)->v));                          \
    }                                                                                           \
    (vec)->v[(vec)->n++] = (x);                                                                 \
  } while (0)

/* A route met recently, with its bottleneck and its latency for the last size sent on it: a
 * pipeline sends between the same pairs of devices over and over, and computing the route
 * (comm__route) and walking its links' classes was a few percent of such a run. Routes are a
 * pure function of the topology and the endpoints, so a memo gives the same links. */
#define ROUTE_MEMOS_MIN 64
#define ROUTE_MEMOS_MAX 4096
typedef struct {
  uint64_t key;          /* src << 32 | dst + 1; 0: empty */
  uint32_t nhops;
  uint32_t links[INLINE_HOPS];
  double Bps;            /* the smallest capacity on the route */
  uint64_t lat_bytes;    /* the size lat_ps is for (0: none yet) */
  sim_time_ps lat_ps;    /* sum of the links' latencies for lat_bytes */
  sim_time_ps alone_ps;  /* lat_bytes at Bps (sim_time_for_work): a lone flow's sending time */
} route_memo;

struct comm_net {
  sim_engine *engine;
  const comm_topology *topo;
  comm_net_model model;

  link_state *links;     /* per directed link */
  fclass **reserved_on;  /* per directed link: the unplaced reserved class on it, or NULL */
  uint64_t nlinks;
  uint64_t endpoints;    /* comm__endpoints(topo): valid endpoints are below it */
  const comm__link_class **link_class; /* per directed link, looked up once (flow model) */

  GPtrArray *slabs;
  flowvec free_flows;    /* released records, the last released last (reused first) */
  GPtrArray *class_slabs;
  classvec free_classes; /* as free_flows */
  uint32_t flows_fresh;    /* flows of the last slab handed out; the others never written */
  uint32_t classes_fresh;  /* the same for classes */
  class_table classes;   /* hashed classes by route (src << 32 | dst) */
  uint64_t active, peak;
  uint64_t next_seq;

  uint32_t *route_buf;

  /* Seeds of the next recompute: classes that grew, links flows left. */
  classvec seed_classes;
  u32vec seed_links;
  gboolean recompute_pending;
  uint32_t epoch;
  classvec comp_classes; /* the component being recomputed */
  u32vec comp_links;
  classvec live_classes; /* every class in use */
  u32vec live_links;     /* every link with a class on it */
  u32vec held_links;     /* every link that has had a class array (freed with the network: a
                          * pass over all links would touch every page of the link array) */
  uint32_t global_left;  /* recomputes still to fill every live class at once */
  uint64_t covered;      /* classes the current recompute has filled */
  uint64_t full_fills;   /* recomputes done by recompute_all */
  uint32_t unfixed;      /* progressive filling: classes still without a rate */
  classvec stack;        /* scratch of the component search */
  heapvec heap;          /* progressive filling: links by (share, id), each at most once */
  heapvec sorted;        /* every live link by (capacity over flows, id), if sorted_valid */
  gboolean sorted_valid;
  u32vec dirty_links;    /* links whose flows changed since sorted was brought up to date */
  u32vec changed_links;  /* links whose flows changed since the last global fill (kept with
                          * sorted) */
  heapvec fresh;         /* scratch of sorted_update */
  heapvec sort_tmp;      /* scratch of sort_ents */
  gboolean log_valid;    /* the log is that of the last global fill */
  gboolean logging;      /* the current fill logs its steps */
  logstepvec log_steps;
  classvec log_cls;      /* the classes each step fixed */
  logentvec log_ents;    /* the links each step changed */
  u32vec touched;        /* scratch of progressive filling: links one fix changed */
  uint32_t touch_mark;
  flowvec finished;      /* scratch of a completion event */

  uint64_t steps_reused; /* global fill steps taken from the log of the one before */

  /* Routes of the lone set (comm__lone_new): per link, the id + 1 of the route holding it. */
  uint32_t *lone_owner;

  route_memo *routes;    /* recent routes (flow model), by a hash of their ends; made on first
                          * use, ROUTE_MEMOS_MIN of them, and grown while they miss often */
  uint32_t route_mask;   /* slots - 1 */
  uint32_t route_misses; /* since the table was made */
  gboolean lone_open;

  /* Observers: one SIM_PROC_LINK process per node, a track per NIC and one intra track. */
  gboolean tracks_made;
  comm_flow_observer_fn flow_obs;   /* told of each flow as it ends, or NULL */
  void *flow_obs_user;
  sim_proc_id *node_proc;
  sim_track_id *node_tracks;   /* node * (N + 1) + k; k == N: intra */
  char **nic_counter_names;
};

/* ---- Flow and class records ----------------------------------------------------------------- */

/* Records come from the released ones (the last released first), then from the last slab in
 * order, then from a new slab. The released ones are kept in an array of pointers, not in a
 * list through the records: taking one then writes it without reading it first (the read of a
 * cold record's link to the next was half of comm_net_send's time in an unfolded nccl run). A
 * slab's records are written only as they are first handed out, so that a run with few flows
 * in flight touches few pages of its slabs. */
static flow *flow_alloc(comm_net *net)
{
  flow *f;
  if (net->free_flows.n) {
    f = net->free_flows.v[--net->free_flows.n];
  } else {
    if (net->slabs->len == 0 || net->flows_fresh == FLOWS_PER_SLAB) {
      g_ptr_array_add(net->slabs, g_new(flow, FLOWS_PER_SLAB));
      net->flows_fresh = 0;
    }
    f = (flow *)g_ptr_array_index(net->slabs, net->slabs->len - 1) + net->flows_fresh++;
  }
  f->net = net;
  f->ev = NULL;
  f->cls = NULL;
  f->span = 0;
  return f;
}

/* Classes of slab s handed out at least once (the others were never written). */
static inline uint32_t class_slab_used(const comm_net *net, guint s)
{
  return s + 1 == net->class_slabs->len ? net->classes_fresh : CLASSES_PER_SLAB;
}

static void flow_release(comm_net *net, flow *f)
{
  VEC_PUSH(&net->free_flows, f);
}

/* A class for the route src -> dst (nhops links in route_buf order), empty and on no link.
 * `hashed`: found by flows of its route that activate later. A reserved class is not: a flow
 * of its route that activates while it waits out its latency finds it on its links and sends
 * it back, and one that activates later makes a class of its own beside it, which max-min
 * sharing gives the same rate. Uncontended transfers so never touch the table. */
static fclass *class_alloc(comm_net *net, comm_ep src, comm_ep dst, const uint32_t *route,
                           uint32_t nhops, gboolean hashed)
{
  fclass *c;
  if (net->free_classes.n) {
    c = net->free_classes.v[--net->free_classes.n];
  } else {
    /* As flow_alloc; a record handed out for the first time starts cleared (no flow heap). */
    if (net->class_slabs->len == 0 || net->classes_fresh == CLASSES_PER_SLAB) {
      g_ptr_array_add(net->class_slabs, g_new(fclass, CLASSES_PER_SLAB));
      net->classes_fresh = 0;
    }
    c = (fclass *)g_ptr_array_index(net->class_slabs, net->class_slabs->len - 1) +
        net->classes_fresh++;
    memset(c, 0, sizeof *c);
  }
  c->net = net;
  c->key = (uint64_t)src << 32 | dst;
  c->count = 0;
  c->epoch = 0;
  c->in_use = TRUE;
  c->reserved = FALSE;
  c->unplaced = FALSE;
  c->moved = FALSE;
  c->rate = 0.0;
  c->served = 0.0;
  c->ev = NULL;
  c->hn = 0;
  c->hops = nhops > INLINE_HOPS ? g_new(hop, nhops) : c->inline_hops;
  c->nhops = nhops;
  for (uint32_t i = 0; i < nhops; i++)
    c->hops[i].link = route[i];
  c->hashed = hashed;
  if (hashed)
    class_table_put(&net->classes, c->key, c);
  c->live_pos = net->live_classes.n;
  VEC_PUSH(&net->live_classes, c);
  return c;
}

static void class_release(comm_net *net, fclass *c)
{
  if (c->hashed)
    class_table_remove(&net->classes, c->key);
  fclass *last = net->live_classes.v[--net->live_classes.n];
  net->live_classes.v[c->live_pos] = last;
  last->live_pos = c->live_pos;
  if (c->hops != c->inline_hops)
    g_free(c->hops);
  c->in_use = FALSE;
  VEC_PUSH(&net->free_classes, c);
}

static inline gboolean flow_before(const flow *a, const flow *b)
{
  return a->target < b->target || (a->target == b->target && a->seq < b->seq);
}

static void class_push(fclass *c, flow *f)
{
  if (c->hn == c->hcap) {
    c->hcap = c->hcap ? 2 * c->hcap : 4;
    c->heap = g_renew(flow *, c->heap, c->hcap);
  }
  size_t i = c->hn++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!flow_before(f, c->heap[p]))
      break;
    c->heap[i] = c->heap[p];
    i = p;
  }
  c->heap[i] = f;
}

static flow *class_pop(fclass *c)
{
  flow **a = c->heap;
  flow *top = a[0];
  flow *last = a[--c->hn];
  size_t n = c->hn, i = 0;
  if (n == 0)
    return top;
  for (;;) {
    size_t k = 2 * i + 1;
    if (k >= n)
      break;
    if (k + 1 < n && flow_before(a[k + 1], a[k]))
      k++;
    if (!flow_before(a[k], last))
      break;
    a[i] = a[k];
    i = k;
  }
  a[i] = last;
  return top;
}

/* When the class's first flow is done at its current rate. The same formula decides the time
 * of the completion event and, when it fires, which flows are done. */
static inline sim_time_ps class_first_end(const fclass *c)
{
  return sim_time_add_sat(c->last_ps, sim_time_for_work(c->heap[0]->target - c->served, c->rate));
}

/* ---- Observers ---------------------------------------------------------------------------- */

static void make_tracks(comm_net *net)
{
  const comm_topology *t = net->topo;
  uint32_t nodes = comm__total_nodes(t), N = comm__nics_per_node(t);
  net->node_proc = g_new(sim_proc_id, nodes);
  net->node_tracks = g_new(sim_track_id, (size_t)nodes * (N + 1));
  net->nic_counter_names = g_new0(char *, N + 1);
  for (uint32_t k = 0; k < N; k++)
    net->nic_counter_names[k] = g_strdup_printf("nic%u tx GB/s", k);
  for (uint32_t n = 0; n < nodes; n++) {
    g_autofree char *name = n < comm_topology_nodes(t)
                                ? g_strdup_printf("node %u net", n)
                                : g_strdup_printf("extra node %u net", n - comm_topology_nodes(t));
    net->node_proc[n] = sim_engine_add_proc(net->engine, SIM_PROC_LINK, name, (int)(100000 + n));
    for (uint32_t k = 0; k < N; k++) {
      g_autofree char *tn = g_strdup_printf("nic%u", k);
      net->node_tracks[(size_t)n * (N + 1) + k] =
          sim_engine_add_track(net->engine, net->node_proc[n], tn, (int)k);
    }
    net->node_tracks[(size_t)n * (N + 1) + N] =
        sim_engine_add_track(net->engine, net->node_proc[n], "intra", (int)N);
  }
  net->tracks_made = TRUE;
}

/* The track a transfer is shown on: the NIC it leaves through, or the node's intra track. */
static void span_begin(comm_net *net, flow *f, comm_ep src, comm_ep dst)
{
  if (!sim_engine_has_observers(net->engine))
    return;
  if (!net->tracks_made)
    make_tracks(net);
  const comm_topology *t = net->topo;
  uint32_t N = comm__nics_per_node(t);
  uint32_t ns = comm__ep_node(t, src), nd = comm__ep_node(t, dst);
  uint32_t k = ns != nd ? comm__ep_nic(t, src) : N;
  f->span = sim_engine_span_begin(net->engine, net->node_tracks[(size_t)ns * (N + 1) + k],
                                  comm_topology_endpoint_name(t, dst), "flow", f->bytes, 0);
}

static void span_end(comm_net *net, flow *f)
{
  if (f->span && sim_engine_has_observers(net->engine))
    sim_engine_span_end(net->engine, f->span);
}

/* Transmit rate of each NIC whose rate may have changed, as a counter in GB/s. */
static void report_nic_rates(comm_net *net, const u32vec *cl)
{
  if (!net->tracks_made || !sim_engine_has_observers(net->engine))
    return;
  for (uint32_t i = 0; i < cl->n; i++) {
    uint32_t l = cl->v[i];
    uint32_t node, nic;
    if (!comm__nic_uplink(net->topo, l, &node, &nic))
      continue;
    double sum = 0.0;
    for (uint32_t j = 0; j < net->links[l].n; j++) {
      const fclass *c = net->links[l].cls[j];
      sum += c->next_rate > 0 ? c->next_rate * c->count : 0;
    }
    sim_engine_counter(net->engine, net->node_proc[node], net->nic_counter_names[nic], sum / 1e9);
  }
}

/* ---- Links -------------------------------------------------------------------------------- */

/* The flows on link l changed (or it came into use or went out of it): its place in
 * net->sorted is out of date. Called by the callers of link_add and link_remove, which stay
 * leaf functions. */
static inline void link_dirty(comm_net *net, uint32_t l)
{
  link_state *L = &net->links[l];
  if (net->sorted_valid && !L->dirty) {
    L->dirty = TRUE;
    VEC_PUSH(&net->dirty_links, l);
  }
  if (net->sorted_valid && !L->changed) {
    L->changed = TRUE;
    VEC_PUSH(&net->changed_links, l);
  }
}

/* link_dirty for every link of class c, tested once for all. */
static inline void class_links_dirty(comm_net *net, const fclass *c)
{
  if (net->sorted_valid)
    for (uint32_t h = 0; h < c->nhops; h++)
      link_dirty(net, c->hops[h].link);
}

static void link_add(comm_net *net, fclass *c, uint32_t h)
{
  link_state *L = &net->links[c->hops[h].link];
  if (L->n == L->cap) {
    if (L->cap == 0)
      VEC_PUSH(&net->held_links, c->hops[h].link);
    L->cap = L->cap ? 2 * L->cap : 4;
    L->cls = g_renew(fclass *, L->cls, L->cap);
  }
  if (L->n == 0) {
    L->live_pos = net->live_links.n;
    VEC_PUSH(&net->live_links, c->hops[h].link);
  }
  c->hops[h].slot = L->n;
  L->cls[L->n++] = c;
  L->flows += c->count;
}

static void link_remove(comm_net *net, fclass *c, uint32_t h)
{
  uint32_t l = c->hops[h].link;
  link_state *L = &net->links[l];
  uint32_t slot = c->hops[h].slot;
  L->flows -= c->count;
  fclass *moved = L->cls[--L->n];
  if (L->n == 0) {
    uint32_t last = net->live_links.v[--net->live_links.n];
    net->live_links.v[L->live_pos] = last;
    net->links[last].live_pos = L->live_pos;
  }
  if (moved != c) {
    L->cls[slot] = moved;
    for (uint32_t i = 0; i < moved->nhops; i++)
      if (moved->hops[i].link == l && moved->hops[i].slot == L->n) {
        moved->hops[i].slot = slot;
        break;
      }
  }
}

/* A link's class (latency, bandwidth), found in the topology on first use and kept: every
 * transfer asks for the classes of its route. */
static inline const comm__link_class *link_class(const comm_net *net, uint32_t l)
{
  const comm__link_class *c = net->link_class[l];
  if (G_UNLIKELY(c == NULL))
    c = net->link_class[l] = comm__link_class_of(net->topo, l);
  return c;
}

static inline double link_capacity(const comm_net *net, uint32_t l)
{
  return link_class(net, l)->Bps;
}

static inline uint32_t route_slot(const comm_net *net, uint64_t key)
{
  return (uint32_t)((key * 0x9E3779B97F4A7C15ULL) >> 40) & net->route_mask;
}

/* The memo of the route src -> dst, its bottleneck known; NULL for a route of more than
 * INLINE_HOPS links (then comm__route into route_buf). */
static route_memo *route_get(comm_net *net, comm_ep src, comm_ep dst)
{
  uint64_t key = ((uint64_t)src << 32 | dst) + 1;
  if (G_UNLIKELY(!net->routes)) {
    net->routes = g_new0(route_memo, ROUTE_MEMOS_MIN);
    net->route_mask = ROUTE_MEMOS_MIN - 1;
  }
  /* Two ways: the route's slot and the next one (routes that share a slot both stay). */
  uint32_t slot = route_slot(net, key);
  route_memo *m = &net->routes[slot];
  if (G_LIKELY(m->key == key))
    return m;
  route_memo *m2 = &net->routes[(slot + 1) & net->route_mask];
  if (m2->key == key)
    return m2;
  if (m->key != 0)
    m = m2;   /* the new route takes the second way if the first is taken */
  if (G_UNLIKELY(++net->route_misses > 4 * (net->route_mask + 1) &&
                 net->route_mask + 1 < ROUTE_MEMOS_MAX)) {
    /* Four times the slots, the routes kept: fewer of the routes in use share a slot. */
    route_memo *old = net->routes;
    uint32_t old_slots = net->route_mask + 1;
    net->route_mask = 4 * old_slots - 1;
    net->routes = g_new0(route_memo, net->route_mask + 1);
    for (uint32_t i = 0; i < old_slots; i++) {
      if (!old[i].key)
        continue;
      uint32_t j = route_slot(net, old[i].key);
      if (net->routes[j].key)
        j = (j + 1) & net->route_mask;
      net->routes[j] = old[i];
    }
    g_free(old);
    net->route_misses = 0;
    slot = route_slot(net, key);
    m = &net->routes[slot];
    if (m->key != 0)
      m = &net->routes[(slot + 1) & net->route_mask];
  }
  uint32_t n = comm__route(net->topo, src, dst, net->route_buf);
  if (n > INLINE_HOPS)
    return NULL;
  m->key = key;
  m->nhops = n;
  memcpy(m->links, net->route_buf, n * sizeof *m->links);
  double r = INFINITY;
  for (uint32_t h = 0; h < n; h++)
    r = MIN(r, link_capacity(net, m->links[h]));
  m->Bps = r;
  m->lat_bytes = 0;         /* none: a send of 0 bytes never comes here */
  return m;
}

/* The sum of the latencies of a route's links for a message of `bytes`. */
static sim_time_ps route_latency(comm_net *net, const uint32_t *links, uint32_t n, uint64_t bytes)
{
  sim_time_ps lat = 0;
  for (uint32_t i = 0; i < n; i++)
    lat = sim_time_add_sat(lat, comm__link_latency(link_class(net, links[i]), bytes));
  return lat;
}

/* ---- Max-min fair sharing ------------------------------------------------------------------ */

static void recompute_cb(sim_engine *engine, void *data, uint64_t arg);
static void class_cb(sim_engine *engine, void *data, uint64_t arg);
static void place_reserved(comm_net *net, fclass *c);
static void flow_cb(sim_engine *engine, void *data, uint64_t arg);

static void want_recompute(comm_net *net)
{
  if (net->recompute_pending)
    return;
  net->recompute_pending = TRUE;
  sim_engine_schedule_in(net->engine, 0, recompute_cb, net, EV_RECOMPUTE);
}

/* The link heap of progressive filling: link ids ordered by (share_Bps, id), each link once,
 * knowing its position. Fixing flows at the smallest share s never lowers another link's
 * share ((rem - k s) / (u - k) >= rem / u when rem / u >= s), so a link's key may stay a
 * lower bound of its share: the top is checked against its true share when it comes up and
 * sinks if it has grown, and only a key that rounding left above the true share is raised
 * at once. The order of fixes is then exactly that of a heap re-ranked on every change, with
 * a fraction of the work. */
static inline gboolean fill_less(heap_ent a, heap_ent b)
{
  return a.share_Bps < b.share_Bps || (a.share_Bps == b.share_Bps && a.link < b.link);
}

static inline void heap_place(comm_net *net, uint32_t i, heap_ent x)
{
  net->heap.v[i] = x;
  net->links[x.link].hpos = i;
}

static void heap_up(comm_net *net, uint32_t i)
{
  heap_ent *a = net->heap.v, x = a[i];
  while (i > 0) {
    uint32_t p = (i - 1) / 2;
    if (!fill_less(x, a[p]))
      break;
    heap_place(net, i, a[p]);
    i = p;
  }
  heap_place(net, i, x);
}

static void heap_down(comm_net *net, uint32_t i)
{
  heap_ent *a = net->heap.v, x = a[i];
  uint32_t n = net->heap.n;
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && fill_less(a[c + 1], a[c]))
      c++;
    if (!fill_less(a[c], x))
      break;
    heap_place(net, i, a[c]);
    i = c;
  }
  heap_place(net, i, x);
}

/* Removes the entry at i; its link's hpos becomes NOT_IN_HEAP. */
#define NOT_IN_HEAP UINT32_MAX
#define IN_SORTED (UINT32_MAX - 1)
static void heap_push(comm_net *net, double share_Bps, uint32_t l)
{
  heap_ent x = {share_Bps, l};
  VEC_PUSH(&net->heap, x);
  heap_up(net, net->heap.n - 1);
}

static void heap_remove(comm_net *net, uint32_t i)
{
  net->links[net->heap.v[i].link].hpos = NOT_IN_HEAP;
  heap_ent last = net->heap.v[--net->heap.n];
  if (i == net->heap.n)
    return;
  heap_place(net, i, last);
  heap_up(net, i);
  heap_down(net, net->links[last.link].hpos);
}

static inline void visit_class(comm_net *net, fclass *c)
{
  if (c->epoch == net->epoch)
    return;
  c->epoch = net->epoch;
  VEC_PUSH(&net->stack, c);
}

/* Starts a new round of marks; after 2^32 of them, clears the marks so that an old one can
 * never look current. */
static void next_epoch(comm_net *net)
{
  if (++net->epoch != 0)
    return;
  for (uint64_t l = 0; l < net->nlinks; l++)
    net->links[l].epoch = 0;
  for (guint s = 0; s < net->class_slabs->len; s++) {
    fclass *slab = g_ptr_array_index(net->class_slabs, s);
    for (size_t i = 0; i < class_slab_used(net, s); i++)
      slab[i].epoch = 0;
  }
  net->epoch = 1;
}

/* Collects the classes and links connected to `seed` through shared links, and readies them
 * for progressive filling: no class has a rate yet, every link has all its capacity left. */
static void collect_component(comm_net *net, fclass *seed)
{
  net->comp_classes.n = 0;
  net->comp_links.n = 0;
  net->stack.n = 0;
  visit_class(net, seed);
  while (net->stack.n > 0) {
    fclass *c = net->stack.v[--net->stack.n];
    c->next_rate = -1.0;
    VEC_PUSH(&net->comp_classes, c);
    for (uint32_t h = 0; h < c->nhops; h++) {
      uint32_t l = c->hops[h].link;
      link_state *L = &net->links[l];
      if (L->epoch == net->epoch)
        continue;
      L->epoch = net->epoch;
      L->rem_Bps = link_capacity(net, l);
      L->unfrozen = L->flows;
      VEC_PUSH(&net->comp_links, l);
      for (uint32_t j = 0; j < L->n; j++)
        visit_class(net, L->cls[j]);
    }
  }
}

/* A new touch mark; after 2^32 of them, clears the marks so that an old one can never look
 * current. */
static uint32_t next_touch_mark(comm_net *net)
{
  if (++net->touch_mark == 0) {
    for (uint64_t k = 0; k < net->nlinks; k++)
      net->links[k].touched = 0;
    net->touch_mark = 1;
  }
  return net->touch_mark;
}

/* Room in net->touched for one step of a fill over n links (each is touched once a step). */
static void touched_reserve(comm_net *net, uint32_t n)
{
  if (net->touched.cap < n) {
    net->touched.cap = n;
    net->touched.v = g_renew(uint32_t, net->touched.v, n);
  }
}

/* Gives every flow of every unfixed class on link l the share `share` and takes it (share
 * times the class's flows) from every link the class crosses. With the heap, the links so
 * changed are collected once each and re-checked after the whole step (see fill_less). */
static inline void fix_link(comm_net *net, uint32_t l, double share, gboolean use_heap)
{
  link_state *L = &net->links[l];
  net->touched.n = 0;
  if (use_heap && net->logging) {
    log_step st = {share, l, 0, 0};
    L->fix_step = net->log_steps.n;
    VEC_PUSH(&net->log_steps, st);
  }
  /* Locals for what the stores below could otherwise alias (counts and marks are uint32_t
   * like the link fields); touched has room for every link of the fill (touched_reserve). */
  link_state *links = net->links;
  uint32_t mark = net->touch_mark, *tv = net->touched.v, tn = 0;
  for (uint32_t j = 0; j < L->n; j++) {
    fclass *c = L->cls[j];
    if (c->next_rate >= 0.0)
      continue;
    c->next_rate = share;
    net->unfixed--;
    if (use_heap && net->logging)
      VEC_PUSH(&net->log_cls, c);
    const hop *hp = c->hops;
    uint32_t nh = c->nhops, count = c->count;
    double take = share * count;
    for (uint32_t h = 0; h < nh; h++) {
      uint32_t l2 = hp[h].link;
      link_state *L2 = &links[l2];
      L2->rem_Bps -= take;
      L2->unfrozen -= count;
      if (use_heap && L2->touched != mark) {
        L2->touched = mark;
        tv[tn++] = l2;
      }
    }
  }
  net->touched.n = tn;
  if (!use_heap)
    return;
  for (uint32_t i = 0; i < tn; i++) {
    link_state *L2 = &links[tv[i]];
    if (net->logging) {
      log_ent e = {L2->rem_Bps, tv[i], L2->flows - L2->unfrozen, L2->last_ent};
      L2->last_ent = net->log_ents.n;
      VEC_PUSH(&net->log_ents, e);
    }
    if (L2->unfrozen == 0) {
      /* Nothing left to give: out of the heap now, from where it is (usually near the
       * bottom, a few steps), rather than from the top once its key comes up (a full
       * descent). It would never fix anything, so the order of fixes stays the same. */
      if (L2->hpos < IN_SORTED)
        heap_remove(net, L2->hpos);
      continue;
    }
    double share2 = MAX(L2->rem_Bps, 0.0) / L2->unfrozen;
    if (L2->hpos == IN_SORTED) {
      if (share2 < L2->sorted_Bps)
        heap_push(net, share2, tv[i]);
    } else if (share2 < net->heap.v[L2->hpos].share_Bps) {
      net->heap.v[L2->hpos].share_Bps = share2;
      heap_up(net, L2->hpos);
    }
  }
  next_touch_mark(net);
  if (net->logging) {
    log_step *st = &net->log_steps.v[net->log_steps.n - 1];
    st->cls_end = net->log_cls.n;
    st->ent_end = net->log_ents.n;
  }
}

/* The link at the top of the heap, with flows still to fix: fixed at its share, or ranked
 * again when its share has changed since it was ranked (keys are lower bounds of shares). */
static inline void fix_heap_top(comm_net *net)
{
  uint32_t l = net->heap.v[0].link;
  link_state *L = &net->links[l];
  double share = MAX(L->rem_Bps, 0.0) / L->unfrozen;
  if (share != net->heap.v[0].share_Bps) {
    net->heap.v[0].share_Bps = share;
    heap_down(net, 0);
    return;
  }
  heap_remove(net, 0);
  fix_link(net, l, share, TRUE);
}

/* Progressive filling over the component: repeatedly the link with the smallest fair share
 * (remaining capacity over flows still without a rate) fixes the rate of its flows. Small
 * components scan their links; large ones keep the links in a heap (see fill_less), which
 * makes the whole O(H log L) in the component's class hops H and links L. Ties go to the lower
 * link id, so results never depend on the order classes were found in. */
static void fill_component(comm_net *net, const classvec *cc, const u32vec *cl)
{
  if (cc->n == 1 && cc->v[0]->count == 1) {
    fclass *c = cc->v[0];
    double r = INFINITY;
    for (uint32_t h = 0; h < c->nhops; h++)
      r = MIN(r, link_capacity(net, c->hops[h].link));
    c->next_rate = r;
    return;
  }
  net->unfixed = cc->n;
  if (cl->n <= FILL_SCAN_LINKS) {
    while (net->unfixed > 0) {
      uint32_t best = UINT32_MAX;
      double best_share = INFINITY;
      for (uint32_t i = 0; i < cl->n; i++) {
        link_state *L = &net->links[cl->v[i]];
        if (L->unfrozen == 0)
          continue;
        double share = MAX(L->rem_Bps, 0.0) / L->unfrozen;
        if (share < best_share || (share == best_share && cl->v[i] < best)) {
          best_share = share;
          best = cl->v[i];
        }
      }
      g_assert(best != UINT32_MAX);
      fix_link(net, best, best_share, FALSE);
    }
    return;
  }
  touched_reserve(net, cl->n);
  net->heap.n = 0;
  for (uint32_t i = 0; i < cl->n; i++) {
    link_state *L = &net->links[cl->v[i]];
    heap_ent x = {L->rem_Bps / L->unfrozen, cl->v[i]};
    VEC_PUSH(&net->heap, x);
    L->hpos = i;
  }
  for (uint32_t i = net->heap.n / 2; i-- > 0;)
    heap_down(net, i);
  /* Once every class has its rate the links left in the heap have nothing to give. */
  while (net->unfixed > 0) {
    if (net->links[net->heap.v[0].link].unfrozen == 0) {
      heap_remove(net, 0);
      continue;
    }
    fix_heap_top(net);
  }
}

/* Sorts v[0 .. n) by fill_less: runs of 8 by insertion, then merged in passes through tmp
 * (qsort's calls to a comparison cost twice as much). */
static void sort_ents(heap_ent *v, uint32_t n, heapvec *tmp)
{
  for (uint32_t lo = 0; lo < n; lo += 8) {
    uint32_t hi = MIN(lo + 8, n);
    for (uint32_t i = lo + 1; i < hi; i++) {
      heap_ent x = v[i];
      uint32_t j = i;
      for (; j > lo && fill_less(x, v[j - 1]); j--)
        v[j] = v[j - 1];
      v[j] = x;
    }
  }
  if (n <= 8)
    return;
  if (tmp->cap < n) {
    tmp->cap = n;
    tmp->v = g_renew(heap_ent, tmp->v, tmp->cap);
  }
  heap_ent *a = v, *b = tmp->v;
  for (uint32_t w = 8; w < n; w *= 2) {
    for (uint32_t lo = 0; lo < n; lo += 2 * w) {
      uint32_t mid = MIN(lo + w, n), hi = MIN(lo + 2 * w, n), i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        b[k++] = fill_less(a[j], a[i]) ? a[j++] : a[i++];
      while (i < mid)
        b[k++] = a[i++];
      while (j < hi)
        b[k++] = a[j++];
    }
    heap_ent *t = a;
    a = b;
    b = t;
  }
  if (a != v)
    memcpy(v, a, (size_t)n * sizeof *v);
}

/* Brings net->sorted up to date: the links whose flows changed leave it and come back at their
 * new share, sorted among themselves and merged in, in one pass over it; the first time, and
 * after recomputes stopped filling globally, every live link is sorted. */
static void sorted_update(comm_net *net)
{
  heapvec *S = &net->sorted;
  if (!net->sorted_valid) {
    S->n = 0;
    for (uint32_t i = 0; i < net->live_links.n; i++) {
      uint32_t l = net->live_links.v[i];
      link_state *L = &net->links[l];
      L->sorted_Bps = link_capacity(net, l) / L->flows;
      heap_ent x = {L->sorted_Bps, l};
      VEC_PUSH(S, x);
    }
    sort_ents(S->v, S->n, &net->sort_tmp);
    net->sorted_valid = TRUE;
    return;
  }
  uint32_t kept = 0;
  for (uint32_t i = 0; i < S->n; i++)
    if (!net->links[S->v[i].link].dirty)
      S->v[kept++] = S->v[i];
  net->fresh.n = 0;
  for (uint32_t i = 0; i < net->dirty_links.n; i++) {
    uint32_t l = net->dirty_links.v[i];
    link_state *L = &net->links[l];
    L->dirty = FALSE;
    if (L->n == 0)
      continue;
    L->sorted_Bps = link_capacity(net, l) / L->flows;
    heap_ent x = {L->sorted_Bps, l};
    VEC_PUSH(&net->fresh, x);
  }
  net->dirty_links.n = 0;
  heap_ent *F = net->fresh.v;
  uint32_t nf = net->fresh.n;
  sort_ents(F, nf, &net->sort_tmp);
  if (S->cap < kept + nf) {
    S->cap = kept + nf;
    S->v = g_renew(heap_ent, S->v, S->cap);
  }
  /* Merged from the back, in place. */
  for (uint32_t a = kept, b = nf, k = kept + nf; b > 0;) {
    if (a > 0 && fill_less(F[b - 1], S->v[a - 1]))
      S->v[--k] = S->v[--a];
    else
      S->v[--k] = F[--b];
  }
  S->n = kept + nf;
}

/* Stops keeping net->sorted (recomputes no longer fill globally). */
static void sorted_drop(comm_net *net)
{
  for (uint32_t i = 0; i < net->dirty_links.n; i++)
    net->links[net->dirty_links.v[i]].dirty = FALSE;
  net->dirty_links.n = 0;
  for (uint32_t i = 0; i < net->changed_links.n; i++)
    net->links[net->changed_links.v[i]].changed = FALSE;
  net->changed_links.n = 0;
  net->sorted_valid = FALSE;
  net->log_valid = FALSE;
}

/* The first step of the last global fill that the next one cannot take as it is, when only
 * flows left or classes went since (no link carries more flows than it did): every step before
 * it fixed flows through a link whose classes did not change, so it fixes the same classes at
 * the same share, with the same subtractions in the same order, in the next fill too; and a
 * link whose classes changed, having no more flows and the same capacity left, has no smaller
 * share at any of those steps than it had, so it is not taken earlier. The first step that a
 * changed link (net->changed_links) fixed is where the two fills may part. 0 when the log
 * cannot be used. */
static uint32_t fill_resume_step(comm_net *net)
{
  if (!net->log_valid || !net->sorted_valid)
    return 0;
  uint32_t from = net->log_steps.n;
  for (uint32_t i = 0; i < net->changed_links.n; i++) {
    const link_state *L = &net->links[net->changed_links.v[i]];
    gboolean was_live = L->fill_flows > 0;
    if (L->n > 0 && (!was_live || L->flows > L->fill_flows))
      return 0;
    if (was_live && L->fix_step < from)
      from = L->fix_step;
  }
  return from;
}

/* Progressive filling of every live class over more than FILL_SCAN_LINKS links: the fill of
 * fill_component's heap, with the links that have not yet been re-ranked read in order from
 * net->sorted, which is kept from fill to fill, instead of heaped anew. At the start every link's
 * key is its share, capacity over flows, exactly the heap's first key; a link leaves the sorted
 * order for the heap when its key changes (raised when it comes up, lowered by a fix), and one
 * that has nothing left to give is passed over. The next link is the smaller (key, id) of the
 * sorted order's first live entry and the heap's top, the one the single heap would give, so
 * every fix is the same, in the same order, as there: only the order of re-ranked links (a
 * seventh of them in an nccl all-reduce) costs heap work.
 *
 * The fill logs its steps, and the next one starts after the steps of this one that it would
 * repeat (fill_resume_step): the links' remaining capacities and fixed flows as the log has
 * them then, the classes those steps fixed at their shares, and every link with flows still
 * to fix in the heap at its share then (keys only need to be lower bounds of the shares for
 * the order of fixes to be that of the single heap). Flows that end one by one in a ring
 * all-reduce leave most of a fill's steps as they were. Returns the number of classes the
 * steps taken from the log fixed (the first ones of net->log_cls). */
static uint32_t fill_global(comm_net *net)
{
  uint32_t from = fill_resume_step(net);
  /* fill_flows as of this fill: only the links whose flows changed since the last differ,
   * unless the sorted order (and so the record of those) was dropped in between. */
  if (net->sorted_valid)
    for (uint32_t i = 0; i < net->changed_links.n; i++) {
      link_state *L = &net->links[net->changed_links.v[i]];
      L->fill_flows = L->flows;
      L->changed = FALSE;
    }
  else
    for (uint32_t i = 0; i < net->held_links.n; i++)
      net->links[net->held_links.v[i]].fill_flows = net->links[net->held_links.v[i]].flows;
  net->changed_links.n = 0;
  /* Resuming, the links left to fix all go to the heap, ranked by their shares then (lower
   * bounds, as keys must be), and the sorted order is not needed: it takes the links whose
   * flows changed meanwhile at the next fill that starts from the beginning. */
  if (from == 0)
    sorted_update(net);
  for (uint32_t i = 0; i < net->live_classes.n; i++)
    net->live_classes.v[i]->next_rate = -1.0;
  net->unfixed = net->live_classes.n;
  touched_reserve(net, net->live_links.n);
  net->heap.n = 0;
  if (from == 0) {
    for (uint32_t i = 0; i < net->live_links.n; i++) {
      link_state *L = &net->links[net->live_links.v[i]];
      L->rem_Bps = link_capacity(net, net->live_links.v[i]);
      L->unfrozen = L->flows;
      L->hpos = IN_SORTED;
      L->fix_step = UINT32_MAX;
      L->last_ent = UINT32_MAX;
    }
    net->log_steps.n = net->log_cls.n = net->log_ents.n = 0;
  } else {
    /* Resuming, a link that no step from `from` on changed has every flow fixed before it, as
     * at the end of the last fill, which left its state as it was then (0 flows to fix): a
     * link whose classes changed has a step from there on. Those links are made below. */
    const log_step *last = &net->log_steps.v[from - 1];
    for (uint32_t k = from; k < net->log_steps.n; k++)
      net->links[net->log_steps.v[k].link].fix_step = UINT32_MAX;
    for (uint32_t k = 0, j = 0; k < from; k++) {
      const log_step *st = &net->log_steps.v[k];
      for (; j < st->cls_end; j++)
        net->log_cls.v[j]->next_rate = st->share_Bps;
    }
    net->unfixed -= last->cls_end;
    net->steps_reused += from;
    /* The links the steps from `from` on changed, each once: its state before them is its last
     * entry before them, or none (all its capacity, no flow fixed). */
    uint32_t bound = last->ent_end, mark = next_touch_mark(net);
    const log_ent *ents = net->log_ents.v;
    for (uint32_t i = bound; i < net->log_ents.n; i++) {
      uint32_t l = ents[i].link;
      link_state *L = &net->links[l];
      if (L->touched == mark)
        continue;
      L->touched = mark;
      uint32_t j = L->last_ent;
      while (j != UINT32_MAX && j >= bound)
        j = ents[j].prev;
      L->last_ent = j;
      if (L->n == 0)
        continue;
      L->hpos = IN_SORTED;
      if (j == UINT32_MAX) {
        L->rem_Bps = link_capacity(net, l);
        L->unfrozen = L->flows;
      } else {
        L->rem_Bps = ents[j].rem_Bps;
        L->unfrozen = L->flows - ents[j].fixed;
      }
      if (L->unfrozen > 0)
        heap_push(net, MAX(L->rem_Bps, 0.0) / L->unfrozen, l);
    }
    next_touch_mark(net);   /* the first step's own */
    net->log_steps.n = from;
    net->log_cls.n = last->cls_end;
    net->log_ents.n = last->ent_end;
  }
  net->logging = TRUE;
  const heap_ent *S = net->sorted.v;
  uint32_t ns = from ? 0 : net->sorted.n, next = 0;
  while (net->unfixed > 0) {
    while (next < ns) {
      const link_state *L = &net->links[S[next].link];
      if (L->hpos == IN_SORTED && L->unfrozen > 0)
        break;
      next++;
    }
    if (net->heap.n > 0 && (next == ns || fill_less(net->heap.v[0], S[next]))) {
      fix_heap_top(net);
      continue;
    }
    g_assert(next < ns);
    uint32_t l = S[next++].link;
    link_state *L = &net->links[l];
    double share = MAX(L->rem_Bps, 0.0) / L->unfrozen;
    if (share != L->sorted_Bps) {
      heap_push(net, share, l);
      continue;
    }
    L->hpos = NOT_IN_HEAP;
    fix_link(net, l, share, TRUE);
  }
  net->logging = FALSE;
  net->log_valid = TRUE;
  return from ? net->log_steps.v[from - 1].cls_end : 0;
}

/* Applies the new rates: a class whose rate changed settles the bytes its flows sent at the
 * old rate; a class whose rate changed, whose first flow changed, or that has no event moves
 * or makes its completion event. Classes whose rate stayed cost nothing more. `lazy` (big
 * components, where rates churn): a completion that moved later keeps its earlier event,
 * which then finds nothing due and moves on, so an event moves at most once per time it
 * fires rather than at every slow-down; with few flows an early firing would cost more than
 * the move it saves. */
static void apply_rates(comm_net *net, const classvec *cc, gboolean lazy)
{
  sim_engine *e = net->engine;
  sim_time_ps now = sim_engine_now(e);
  for (uint32_t i = 0; i < cc->n; i++) {
    fclass *c = cc->v[i];
    if (c->next_rate == c->rate && c->ev && !c->moved)
      continue;
    if (c->next_rate != c->rate) {
      if (c->rate > 0.0)
        c->served += c->rate * ((double)(now - c->last_ps) * 1e-12);
      c->last_ps = now;
      c->rate = c->next_rate;
    }
    c->moved = FALSE;
    sim_time_ps end = class_first_end(c);
    if (end < now)
      end = now;
    if (!c->ev)
      c->ev = sim_engine_schedule_at(e, end, class_cb, c, EV_COMPLETE);
    else if (!lazy || end < sim_engine_event_time(e, c->ev))
      sim_engine_reschedule(e, c->ev, end);
  }
}

static void recompute_from(comm_net *net, fclass *seed)
{
  if (seed->epoch == net->epoch)
    return;
  collect_component(net, seed);
  fill_component(net, &net->comp_classes, &net->comp_links);
  report_nic_rates(net, &net->comp_links);
  apply_rates(net, &net->comp_classes, FALSE);
  net->covered += net->comp_classes.n;
}

/* Fills every live class at once, without searching components: progressive filling over a
 * union of components gives each exactly what it would get alone (a link's capacity is only
 * ever shared among its own component, and the links of one component are fixed in the same
 * (share, id) order either way), so this costs the component search and nothing in
 * accuracy. */
static void recompute_all(comm_net *net)
{
  for (uint32_t i = 0; i < net->live_classes.n; i++)
    if (net->live_classes.v[i]->unplaced)
      place_reserved(net, net->live_classes.v[i]);
  /* Fills over few links (scanned, not heaped) are not logged: they cost little. */
  if (net->live_links.n <= FILL_SCAN_LINKS) {
    for (uint32_t i = 0; i < net->live_classes.n; i++)
      net->live_classes.v[i]->next_rate = -1.0;
    for (uint32_t i = 0; i < net->live_links.n; i++) {
      uint32_t l = net->live_links.v[i];
      net->links[l].rem_Bps = link_capacity(net, l);
      net->links[l].unfrozen = net->links[l].flows;
    }
    fill_component(net, &net->live_classes, &net->live_links);
    net->log_valid = FALSE;   /* its scratch is no longer the log's */
  } else {
    uint32_t kept = fill_global(net);
    if (kept > 0) {
      /* The classes that the steps taken from the log fixed have the rates the last fill gave
       * them, which are still theirs, and their events (their flows did not change): only the
       * other classes need applying. */
      classvec rest = {net->log_cls.v + kept, net->log_cls.n - kept, 0};
      report_nic_rates(net, &net->live_links);
      apply_rates(net, &rest, TRUE);
      return;
    }
  }
  report_nic_rates(net, &net->live_links);
  apply_rates(net, &net->live_classes, TRUE);
}

/* One recompute per simulated instant: each component touched by the flows that started or
 * ended is filled on its own. */
static void recompute(comm_net *net)
{
  net->recompute_pending = FALSE;
  if (net->global_left > 0) {
    net->global_left--;
    net->full_fills++;
    recompute_all(net);
  } else {
    net->log_valid = FALSE;
    next_epoch(net);
    net->covered = 0;
    for (uint32_t i = 0; i < net->seed_classes.n; i++)
      if (net->seed_classes.v[i]->in_use)
        recompute_from(net, net->seed_classes.v[i]);
    for (uint32_t i = 0; i < net->seed_links.n; i++) {
      link_state *L = &net->links[net->seed_links.v[i]];
      for (uint32_t j = 0; j < L->n; j++)
        recompute_from(net, L->cls[j]);
    }
    /* When what changed reached nearly every live class (one big component, as under incast
     * or all-to-all traffic), the next recomputes skip the search; a search every
     * GLOBAL_RUNS + 1 recomputes checks that this still holds. Observed runs keep to the
     * search, whose NIC counters are stamped only for the links it reached. */
    uint32_t live = net->live_classes.n;
    if (live >= GLOBAL_MIN_CLASSES && net->covered >= live - live / 8 &&
        !sim_engine_has_observers(net->engine))
      net->global_left = GLOBAL_RUNS;
    else if (net->sorted_valid)
      sorted_drop(net);
  }
  net->seed_classes.n = 0;
  net->seed_links.n = 0;
}

static void recompute_cb(sim_engine *engine, void *data, uint64_t arg)
{
  recompute(data);
}

/* The marks of an unplaced reserved class on its links go. */
static void unmark_reserved(comm_net *net, const fclass *c)
{
  for (uint32_t h = 0; h < c->nhops; h++)
    net->reserved_on[c->hops[h].link] = NULL;
}

/* A class reserved at send time (see comm_net_send) whose latency has not yet run out, met by
 * a flow joining one of its links: its one flow goes back to the ordinary path, leaving its
 * links until its activation event at the end of its latency, and the class goes away. */
static void unreserve(comm_net *net, fclass *c)
{
  g_assert(c->count == 1 && c->hn == 1);
  flow *x = c->heap[0];
  if (c->unplaced) {
    unmark_reserved(net, c);
  } else {
    for (uint32_t h = 0; h < c->nhops; h++)
      link_remove(net, c, h);
    class_links_dirty(net, c);
  }
  sim_engine_cancel(net->engine, c->ev);
  x->cls = NULL;
  x->ev = sim_engine_schedule_at(net->engine, c->last_ps, flow_cb, x, EV_ACTIVATE);
  class_release(net, c);
}

/* An unplaced reserved class goes on its links' class lists, where it would have been since it
 * was sent: it was alone on each, so it takes the first place, as it would have. Needed when
 * a flow joins one of its links after its latency ran out, and before a global fill, which
 * reads the lists of every live link. */
static void place_reserved(comm_net *net, fclass *c)
{
  c->unplaced = FALSE;
  unmark_reserved(net, c);
  for (uint32_t h = 0; h < c->nhops; h++)
    link_add(net, c, h);
  class_links_dirty(net, c);
}

/* ---- Events -------------------------------------------------------------------------------- */

static void finish(comm_net *net, flow *f)
{
  comm_done_fn done = f->done;
  void *user = f->user;
  span_end(net, f);
  if (G_UNLIKELY(net->flow_obs != NULL) && f->bytes > 0 && f->src != f->dst &&
      net->model == COMM_NET_FLOW) {
    uint32_t n = comm__route(net->topo, f->src, f->dst, net->route_buf);
    net->flow_obs(net->flow_obs_user, net->route_buf, n, f->start_ps,
                  sim_engine_now(net->engine), f->bytes);
  }
  flow_release(net, f);
  net->active--;
  if (done)
    done(net->engine, user);
}

/* The route's latency has run out: the flow joins the class of its route, making it if need
 * be. */
static void activate(comm_net *net, flow *f)
{
  sim_engine *engine = net->engine;
  sim_time_ps now = sim_engine_now(engine);
  fclass *c = class_table_get(&net->classes, (uint64_t)f->src << 32 | f->dst);
  if (c) {
    /* Its target is the class's service now plus its bytes, in the class's running frame
     * (served as of last_ps), so nothing of the class needs settling here. */
    double served_now = c->served;
    if (c->rate > 0.0)
      served_now += c->rate * ((double)(now - c->last_ps) * 1e-12);
    f->target = served_now + (double)f->bytes;
    f->seq = net->next_seq++;
    f->cls = c;
    c->count++;
    for (uint32_t h = 0; h < c->nhops; h++)
      net->links[c->hops[h].link].flows++;
    class_links_dirty(net, c);
    class_push(c, f);
    c->moved = TRUE;
    VEC_PUSH(&net->seed_classes, c);
    want_recompute(net);
    return;
  }
  route_memo *m = route_get(net, f->src, f->dst);
  uint32_t n = m ? m->nhops : comm__route(net->topo, f->src, f->dst, net->route_buf);
  c = class_alloc(net, f->src, f->dst, m ? m->links : net->route_buf, n, TRUE);
  c->count = 1;
  c->last_ps = now;
  f->target = (double)f->bytes;
  f->seq = net->next_seq++;
  f->cls = c;
  class_push(c, f);
  gboolean alone = TRUE;
  double r = INFINITY;
  for (uint32_t h = 0; h < n; h++) {
    link_state *L = &net->links[c->hops[h].link];
    fclass *u = net->reserved_on[c->hops[h].link];
    if (u && u->last_ps > now)
      unreserve(net, u);
    else if (u)
      place_reserved(net, u);
    for (uint32_t j = 0; j < L->n;) {
      fclass *x = L->cls[j];
      if (x->reserved && x->last_ps > now)
        unreserve(net, x); /* removes x from L: look at slot j again */
      else
        j++;
    }
    link_add(net, c, h);
    alone = alone && L->n == 1;
    r = MIN(r, link_capacity(net, c->hops[h].link));
  }
  class_links_dirty(net, c);
  if (!alone) {
    VEC_PUSH(&net->seed_classes, c);
    want_recompute(net);
    return;
  }
  /* Alone on every link: its max-min rate is its bottleneck, and nobody else's rate changes.
   * A flow that joins one of these links later recomputes this one too. */
  c->rate = r;
  c->ev = sim_engine_schedule_at(engine, class_first_end(c), class_cb, c, EV_COMPLETE);
  if (net->tracks_made && sim_engine_has_observers(engine)) {
    net->comp_links.n = 0;
    for (uint32_t h = 0; h < n; h++)
      VEC_PUSH(&net->comp_links, c->hops[h].link);
    c->next_rate = r;
    report_nic_rates(net, &net->comp_links);
  }
}

static void flow_cb(sim_engine *engine, void *data, uint64_t arg)
{
  flow *f = data;
  f->ev = NULL;
  if (arg == EV_ACTIVATE)
    activate(f->net, f);
  else
    finish(f->net, f);
}

/* The first flows of a class are done: every flow whose end, by the same formula that timed
 * this event, is now leaves; the links they leave seed a recompute at this instant, which
 * also gives the class its next completion event. */
static void class_cb(sim_engine *engine, void *data, uint64_t arg)
{
  fclass *c = data;
  comm_net *net = c->net;
  sim_time_ps now = sim_engine_now(engine);
  c->ev = NULL;
  net->finished.n = 0;
  while (c->hn > 0 && class_first_end(c) <= now) {
    flow *f = class_pop(c);
    f->cls = NULL;
    VEC_PUSH(&net->finished, f);
  }
  uint32_t k = net->finished.n;
  if (k == 0) {
    c->ev = sim_engine_schedule_at(engine, class_first_end(c), class_cb, c, EV_COMPLETE);
    return;
  }
  c->count -= k;
  if (c->unplaced) {
    /* Its one flow is done, and it was alone on every link: nobody else's rate changes. */
    unmark_reserved(net, c);
  } else {
    class_links_dirty(net, c);
    gboolean observed = net->tracks_made && sim_engine_has_observers(engine);
    for (uint32_t h = 0; h < c->nhops; h++) {
      uint32_t l = c->hops[h].link, node, nic;
      link_state *L = &net->links[l];
      L->flows -= k;
      if (c->count == 0)
        link_remove(net, c, h);
      if (L->flows > 0)
        VEC_PUSH(&net->seed_links, l);
      else if (observed && comm__nic_uplink(net->topo, l, &node, &nic))
        sim_engine_counter(engine, net->node_proc[node], net->nic_counter_names[nic], 0.0);
    }
  }
  if (c->count == 0)
    class_release(net, c);
  if (net->seed_links.n > 0)
    want_recompute(net);
  /* The callbacks may send: the finished flows are taken off the scratch list first. */
  flow *one[16];
  flow **list = k <= G_N_ELEMENTS(one) ? one : g_new(flow *, k);
  memcpy(list, net->finished.v, k * sizeof *list);
  for (uint32_t i = 0; i < k; i++)
    finish(net, list[i]);
  if (list != one)
    g_free(list);
}

/* ---- Public -------------------------------------------------------------------------------- */

comm_net *comm_net_new(sim_engine *engine, const comm_topology *topo, comm_net_model model)
{
  g_return_val_if_fail(engine != NULL && topo != NULL, NULL);
  comm_net *net = g_new0(comm_net, 1);
  net->engine = engine;
  net->topo = topo;
  net->model = model;
  net->nlinks = comm_topology_links(topo);
  net->endpoints = comm__endpoints(topo);
  if (model == COMM_NET_FLOW) {
    net->links = g_new0(link_state, net->nlinks);
    net->reserved_on = g_new0(fclass *, net->nlinks);
    net->link_class = g_new0(const comm__link_class *, net->nlinks);
  }
  net->slabs = g_ptr_array_new_with_free_func(g_free);
  net->class_slabs = g_ptr_array_new_with_free_func(g_free);
  net->route_buf = g_new(uint32_t, comm__route_max(topo) + 1);
  net->touch_mark = 1;
  return net;
}

void comm_net_free(comm_net *net)
{
  if (!net)
    return;
  /* Classes still in flight own their routes when those are long; every class record keeps
   * its flow heap for reuse. */
  for (guint i = 0; i < net->class_slabs->len; i++) {
    fclass *slab = g_ptr_array_index(net->class_slabs, i);
    for (size_t j = 0; j < class_slab_used(net, i); j++) {
      if (slab[j].in_use && slab[j].hops != slab[j].inline_hops)
        g_free(slab[j].hops);
      g_free(slab[j].heap);
    }
  }
  for (uint32_t i = 0; i < net->held_links.n; i++)
    g_free(net->links[net->held_links.v[i]].cls);
  g_free(net->held_links.v);
  g_free(net->free_flows.v);
  g_free(net->free_classes.v);
  g_free(net->links);
  g_free(net->reserved_on);
  g_free(net->link_class);
  g_ptr_array_free(net->slabs, TRUE);
  g_ptr_array_free(net->class_slabs, TRUE);
  g_free(net->classes.keys);
  g_free(net->classes.vals);
  g_free(net->route_buf);
  g_free(net->seed_classes.v);
  g_free(net->seed_links.v);
  g_free(net->comp_classes.v);
  g_free(net->comp_links.v);
  g_free(net->live_classes.v);
  g_free(net->live_links.v);
  g_free(net->stack.v);
  g_free(net->heap.v);
  g_free(net->sorted.v);
  g_free(net->dirty_links.v);
  g_free(net->changed_links.v);
  g_free(net->fresh.v);
  g_free(net->sort_tmp.v);
  g_free(net->log_steps.v);
  g_free(net->log_cls.v);
  g_free(net->log_ents.v);
  g_free(net->touched.v);
  g_free(net->finished.v);
  if (net->nic_counter_names)
    g_strfreev(net->nic_counter_names);
  g_free(net->node_proc);
  g_free(net->node_tracks);
  g_free(net->lone_owner);
  g_free(net->routes);
  g_free(net);
}

comm_net_model comm_net_get_model(const comm_net *net) { return net->model; }
const comm_topology *comm_net_topology(const comm_net *net) { return net->topo; }
sim_engine *comm_net_engine(const comm_net *net) { return net->engine; }
uint64_t comm_net_active_flows(const comm_net *net) { return net->active; }
uint64_t comm_net_peak_flows(const comm_net *net) { return net->peak; }
void comm_net_set_flow_observer(comm_net *net, comm_flow_observer_fn fn, void *user)
{
  net->flow_obs = fn;
  net->flow_obs_user = user;
}

uint64_t comm__net_full_fills(const comm_net *net) { return net->full_fills; }
uint64_t comm__net_steps_reused(const comm_net *net) { return net->steps_reused; }

void comm_net_send(comm_net *net, comm_ep src, comm_ep dst, uint64_t bytes, comm_done_fn done,
                   void *user)
{
  g_return_if_fail(net != NULL);
  g_return_if_fail(src < net->endpoints && dst < net->endpoints);
  flow *f = flow_alloc(net);
  f->done = done;
  f->user = user;
  f->bytes = bytes;
  f->src = src;
  f->dst = dst;
  net->active++;
  if (net->active > net->peak)
    net->peak = net->active;
  span_begin(net, f, src, dst);
  if (src == dst || bytes == 0) {
    f->ev = sim_engine_schedule_in(net->engine, 0, flow_cb, f, EV_INSTANT);
    return;
  }
  if (net->model == COMM_NET_ANALYTIC) {
    f->ev = sim_engine_schedule_in(
        net->engine, comm__p2p_time_buf(net->topo, src, dst, bytes, net->route_buf), flow_cb, f,
        EV_INSTANT);
    return;
  }
  route_memo *m = route_get(net, src, dst);
  const uint32_t *route;
  uint32_t n;
  sim_time_ps lat;
  if (m) {
    route = m->links;
    n = m->nhops;
    if (m->lat_bytes != bytes) {
      m->lat_ps = route_latency(net, route, n, bytes);
      m->alone_ps = sim_time_for_work((double)bytes - 0.0, m->Bps);
      m->lat_bytes = bytes;
    }
    lat = m->lat_ps;
  } else {
    route = net->route_buf;
    n = comm__route(net->topo, src, dst, net->route_buf);
    lat = route_latency(net, route, n, bytes);
  }
  f->start_ps = sim_time_add_sat(sim_engine_now(net->engine), lat);
  gboolean free_route = !sim_engine_has_observers(net->engine);
  for (uint32_t i = 0; i < n && free_route; i++)
    free_route = net->links[route[i]].n == 0 && !net->reserved_on[route[i]];
  /* If every link of the route is free now, the flow is placed on them at once in a class of
   * its own, reserved: it counts as active from the end of its latency at its bottleneck
   * rate, and needs a single event, its completion. A flow that joins one of its links
   * before that time sends it back to the ordinary path (unreserve); one that joins later
   * finds an active flow. In an uncontended pattern this halves the events per transfer.
   * While it stays alone it is not put on its links' class lists but only marked on them
   * (reserved_on), which is all a joining flow needs to find it; it goes on the lists when it
   * meets a flow after its latency or a global fill comes (place_reserved). Traced runs take
   * the ordinary path so that counters are stamped when rates really change. */
  sim_engine *e = net->engine;
  if (!free_route) {
    f->ev = sim_engine_schedule_in(e, lat, flow_cb, f, EV_ACTIVATE);
    return;
  }
  fclass *c = class_alloc(net, src, dst, route, n, FALSE);
  c->count = 1;
  c->reserved = TRUE;
  c->unplaced = TRUE;
  double r = INFINITY;
  for (uint32_t h = 0; h < n; h++) {
    net->reserved_on[route[h]] = c;
    if (!m)
      r = MIN(r, link_capacity(net, c->hops[h].link));
  }
  c->rate = m ? m->Bps : r;
  c->last_ps = sim_time_add_sat(sim_engine_now(e), lat);
  f->target = (double)bytes;
  f->seq = net->next_seq++;
  f->cls = c;
  class_push(c, f);
  /* class_first_end(c), whose work is target - served = bytes - 0.0 at rate m->Bps: the
   * memo's figure for this size. */
  sim_time_ps end = m ? sim_time_add_sat(c->last_ps, m->alone_ps) : class_first_end(c);
  c->ev = sim_engine_schedule_at(e, end, class_cb, c, EV_COMPLETE);
}

/* ---- Lone routes ----------------------------------------------------------------------------- */

typedef struct {
  uint32_t first, nhops;  /* links at hops[first .. first + nhops) */
  double Bps;             /* bottleneck: the rate of a flow alone on the route */
  uint64_t memo_bytes;    /* the last size asked, and its time */
  sim_time_ps memo_ps;
} lone_route;

struct comm__lone {
  comm_net *net;
  GHashTable *ids;        /* src << 32 | dst -> route id + 1 */
  GArray *routes;         /* lone_route */
  GArray *hops;           /* uint32_t link ids */
};

comm__lone *comm__lone_new(comm_net *net)
{
  if (net->model != COMM_NET_FLOW || net->active > 0 || sim_engine_has_observers(net->engine))
    return NULL;
  g_return_val_if_fail(!net->lone_open, NULL);
  if (!net->lone_owner)
    net->lone_owner = g_new0(uint32_t, net->nlinks);
  net->lone_open = TRUE;
  comm__lone *l = g_new0(comm__lone, 1);
  l->net = net;
  l->ids = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  l->routes = g_array_new(FALSE, FALSE, sizeof(lone_route));
  l->hops = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  return l;
}

void comm__lone_free(comm__lone *l)
{
  if (!l)
    return;
  /* Give the links back: only those of the set's routes were marked. */
  const uint32_t *h = (const uint32_t *)l->hops->data;
  for (guint i = 0; i < l->hops->len; i++)
    l->net->lone_owner[h[i]] = 0;
  l->net->lone_open = FALSE;
  g_hash_table_destroy(l->ids);
  g_array_free(l->routes, TRUE);
  g_array_free(l->hops, TRUE);
  g_free(l);
}

uint32_t comm__lone_route(comm__lone *l, comm_ep src, comm_ep dst)
{
  comm_net *net = l->net;
  uint64_t key = (uint64_t)src << 32 | dst;
  gpointer id = g_hash_table_lookup(l->ids, &key);
  if (id)
    return GPOINTER_TO_UINT(id) - 1;
  g_return_val_if_fail(src != dst, UINT32_MAX);
  uint32_t n = comm__route(net->topo, src, dst, net->route_buf);
  uint32_t rid = l->routes->len;
  for (uint32_t i = 0; i < n; i++)
    if (net->lone_owner[net->route_buf[i]] != 0)
      return UINT32_MAX;
  lone_route r = {l->hops->len, n, INFINITY, 0, 0};
  for (uint32_t i = 0; i < n; i++) {
    net->lone_owner[net->route_buf[i]] = rid + 1;
    r.Bps = MIN(r.Bps, link_capacity(net, net->route_buf[i]));
  }
  g_array_append_vals(l->hops, net->route_buf, n);
  g_array_append_val(l->routes, r);
  g_hash_table_insert(l->ids, g_memdup2(&key, sizeof key), GUINT_TO_POINTER(rid + 1));
  return rid;
}

/* The same sums and rounding as a flow that finds its route free in comm_net_send (latency
 * first, then sim_time_for_work of all its bytes at the bottleneck; see class_first_end). */
sim_time_ps comm__lone_time(comm__lone *l, uint32_t route, uint64_t bytes)
{
  lone_route *r = &g_array_index(l->routes, lone_route, route);
  if (bytes == r->memo_bytes && bytes > 0)
    return r->memo_ps;
  const uint32_t *h = &g_array_index(l->hops, uint32_t, r->first);
  sim_time_ps lat = 0;
  for (uint32_t i = 0; i < r->nhops; i++)
    lat = sim_time_add_sat(lat, comm__link_latency(link_class(l->net, h[i]), bytes));
  r->memo_bytes = bytes;
  r->memo_ps = sim_time_add_sat(lat, sim_time_for_work((double)bytes - 0.0, r->Bps));
  return r->memo_ps;
}

gboolean comm_net_model_parse(const char *text, const char *what, comm_net_model *out,
                              GError **error)
{
  if (g_strcmp0(text, "flow") == 0)
    *out = COMM_NET_FLOW;
  else if (g_strcmp0(text, "analytic") == 0)
    *out = COMM_NET_ANALYTIC;
  else {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: unknown network model '%s' (known: flow, "
                "analytic)", what, text ? text : "");
    return FALSE;
  }
  return TRUE;
}

const char *comm_net_model_name(comm_net_model model)
{
  return model == COMM_NET_ANALYTIC ? "analytic" : "flow";
}
