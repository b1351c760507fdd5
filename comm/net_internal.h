/* Private interface of the flow network (comm/net*.c), not for use elsewhere: the records of
 * flows, classes and links, the network's state, and the functions its parts share.
 *
 * The flow model is in four parts, each with its design note at its top:
 *   net.c        flow and class records, the events (activation, completion, recompute), the
 *                reserved path of a transfer onto free links, and the public functions;
 *   net_fill.c   max-min fair sharing by progressive filling over a component of classes
 *                connected through shared links (scanned, or ranked in a heap);
 *   net_log.c    the global fill: every live class at once, its links read from an order kept
 *                sorted from fill to fill, resuming after the steps of the last fill it would
 *                repeat (its log);
 *   net_route.c  routes: the memo of recent routes and their latencies, and the lone-route
 *                sets of schedules computed without flows (comm__lone_*);
 *   net_check.c  the invariant checker (comm_net_check), run after every recompute in builds
 *                without NDEBUG. */
#ifndef DTSIM_COMM_NET_INTERNAL_H
#define DTSIM_COMM_NET_INTERNAL_H

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

enum { EV_ACTIVATE, EV_COMPLETE, EV_INSTANT, EV_RECOMPUTE, EV_LONE };

typedef struct flow flow;
typedef struct fclass fclass;

typedef struct {
  uint32_t link;   /* directed link id */
  uint32_t slot;   /* position of this class in the link's class list */
} hop;

/* Links of a route a lone flow keeps in its record; a longer route is worked out again when
 * it is needed (comm__route: a pure function of the topology and the ends). */
#define LONE_HOPS 8
#define LONE_NONE UINT32_MAX
/* What is on a link (net->link_busy). */
enum { LINK_FREE, LINK_CLASSES, LINK_LONE };

/* One transfer. While it shares links it belongs to the class of its route; before (waiting
 * out its latency) and for instant transfers it has its own event. A transfer sent onto free
 * links is lone (see comm_net_send): it has no class, only its completion event, and its
 * links are marked with it (LINK_LONE in net->link_busy, itself in net->reserved_on).
 *
 * Laid out by use: the first cache line holds what the completion of a lone flow reads (a
 * step-by-step ring keeps thousands in flight, each written when sent and read when done,
 * long out of the cache); records are aligned to cache lines (slabs from g_aligned_alloc). */
struct flow {
  comm_net *net;
  comm_done_fn done;
  void *user;
  sim_event *ev;         /* pending activation, instant or lone completion, or NULL */
  uint64_t span;
  uint32_t lone_pos;     /* position in net->rec.lone while lone, else LONE_NONE */
  uint32_t nlinks;       /* links of its route (while lone) */
  uint32_t links[LONE_HOPS];  /* the first of them, all of them if nlinks <= LONE_HOPS */
  fclass *cls;           /* the class it is active in, or NULL */
  double target;         /* class service (bytes per flow) at which all its bytes are sent */
  uint64_t seq;          /* activation order: ties between equal targets */
  uint64_t bytes;
  comm_ep src, dst;
  sim_time_ps start_ps;  /* when its bytes start moving (after the route's latency) */
} __attribute__((aligned(64)));

/* The active flows of one route (source, destination). Max-min fairness gives flows with the
 * same links the same rate, so rates are computed per class and every flow of a class is
 * served alike: `served` counts the bytes each of its flows has sent since the class was
 * made (as of last_ps), a flow is done when served reaches its target, and the class has one
 * engine event, the completion of the flow with the smallest target. A rate change then costs
 * one settlement and one reschedule per class, not per flow. */
struct fclass {
  /* Laid out by use (a step-by-step ring keeps thousands of lone classes in flight, each
   * written when its flow is sent and read when it ends, and their records did not stay in
   * the cache): the first cache line holds what every event of a class reads, the second
   * the counts, the marks and the first hop; records are aligned to cache lines (slabs from
   * g_aligned_alloc). */
  comm_net *net;
  sim_event *ev;         /* completion of the first flow, or NULL */
  flow **heap;           /* min-heap of its flows by (target, seq): inline_heap, or an
                          * allocation once it held more (kept with the record) */
  hop *hops;
  uint64_t key;          /* src << 32 | dst */
  double rate;           /* bytes/s per flow; 0 until the first recompute */
  double served;         /* bytes per flow sent from creation to last_ps */
  sim_time_ps last_ps;
  /* What the component search, the filling and apply_rates read. */
  uint32_t count;        /* active flows */
  uint32_t nhops;
  uint32_t hn, hcap;
  uint32_t epoch;        /* component search mark */
  uint32_t live_pos;     /* position in net->live_classes */
  gboolean moved;        /* its first completion moved without a rate change */
  gboolean in_use;
  gboolean reserved;     /* the class of a lone flow that met another (place_lone): active
                          * from last_ps on, its one flow sent at its bottleneck rate */
  gboolean hashed;       /* in net->rec.classes, where activating flows find their route's class */
  double next_rate;      /* progressive filling scratch; < 0 while unfixed */
  flow *inline_heap[2];  /* the heap while it holds at most two flows: most classes have one,
                          * and a heap of its own was one more cache miss per completion */
  hop inline_hops[INLINE_HOPS];
} __attribute__((aligned(64)));

typedef struct {
  fclass **cls;
  double rem_Bps;        /* progressive filling: capacity not yet given out */
  double sorted_Bps;     /* its share in net->log.sorted (capacity over flows), while there */
  uint32_t n, cap;       /* classes on the link */
  uint32_t flows;        /* flows on the link: the sum of their classes' counts */
  uint32_t live_pos;     /* position in net->live_links while it has classes */
  uint32_t epoch;        /* component search mark */
  uint32_t unfrozen;     /* progressive filling: flows on it without a rate yet */
  uint32_t hpos;         /* progressive filling: position in the link heap, whose entry holds
                          * the share it is ranked by; IN_SORTED: ranked in net->log.sorted */
  uint32_t touched;      /* progressive filling: mark of the last fix that changed it */
  gboolean dirty;        /* in net->log.dirty_links */
  gboolean changed;      /* in net->log.changed_links */
  uint32_t fill_flows;   /* its flows at the last global fill (0: not live then), */
  uint32_t fix_step;     /* and the step of that fill where it fixed flows (UINT32_MAX: none) */
  uint32_t last_ent;     /* its last entry in net->log.ents (UINT32_MAX: none) */
} link_state;

/* The classes that activating flows join, by route key (src << 32 | dst): open addressing with
 * linear probing and backward-shift deletion (GHashTable's lookups, inserts and removals were
 * 7% of an nccl run). Nothing iterates over it, so its order never matters. */
typedef struct {
  uint64_t *keys;
  fclass **vals;         /* NULL: empty slot */
  uint32_t cap, n;       /* cap a power of two, or 0 */
} class_table;

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

typedef struct {
  double *v;
  uint32_t n, cap;
} dblvec;

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

/* The log of a global fill (see comm__fill_global): per step, the fixing link, the share, and where
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
#define ROUTE_MEMOS_MAX 16384
typedef struct {
  /* What a send reads first, then the links: a route of up to 4 links is one cache line
   * (entries are aligned to lines, the table from g_aligned_alloc0). */
  uint64_t key;          /* src << 32 | dst + 1; 0: empty */
  uint64_t lat_bytes;    /* the size lat_ps is for (0: none yet) */
  sim_time_ps lat_ps;    /* sum of the links' latencies for lat_bytes */
  sim_time_ps alone_ps;  /* lat_bytes at Bps (sim_time_for_work): a lone flow's sending time */
  double Bps;            /* the smallest capacity on the route */
  uint32_t nhops;
  uint32_t links[INLINE_HOPS];
} __attribute__((aligned(64))) route_memo;

/* The network's state, grouped by the part of the code that owns it. */

/* Flow and class records (net.c). */
typedef struct {
  GPtrArray *slabs;
  flowvec free_flows;    /* released records, the last released last (reused first) */
  GPtrArray *class_slabs;
  classvec free_classes; /* as free_flows */
  flowvec lone;          /* lone flows (see comm_net_send), each at its lone_pos */
  uint32_t flows_fresh;    /* flows of the last slab handed out; the others never written */
  uint32_t classes_fresh;  /* the same for classes */
  class_table classes;   /* hashed classes by route (src << 32 | dst) */
  /* Analytic model: per directed link, when the transfers reserved on it so far are through
   * (allocated at the first transfer that crosses a link). */
  sim_time_ps *analytic_free;
  uint64_t next_seq;
  flowvec finished;      /* scratch of a completion event */
} net_records;

/* Recomputes: what seeds them and the component search (net.c, net_fill.c). */
typedef struct {
  /* Seeds of the next recompute: classes that grew, links flows left. */
  classvec seed_classes;
  u32vec seed_links;
  gboolean pending;      /* a recompute event is scheduled */
  uint32_t epoch;
  classvec comp_classes; /* the component being recomputed */
  u32vec comp_links;
  classvec stack;        /* scratch of the component search */
  uint32_t global_left;  /* recomputes still to fill every live class at once */
  uint64_t covered;      /* classes the current recompute has filled */
  uint64_t full_fills;   /* recomputes done by recompute_all */
} net_recompute;

/* Progressive filling (net_fill.c). */
typedef struct {
  uint32_t unfixed;      /* classes still without a rate */
  heapvec heap;          /* links by (share, id), each at most once */
  u32vec touched;        /* scratch: links one fix changed */
  uint32_t touch_mark;
} net_fill;

/* The global fill: the sorted order and the log (net_log.c). */
typedef struct {
  heapvec sorted;        /* every live link by (capacity over flows, id), if sorted_valid */
  gboolean sorted_valid;
  u32vec dirty_links;    /* links whose flows changed since sorted was brought up to date */
  u32vec changed_links;  /* links whose flows changed since the last global fill (kept with
                          * sorted) */
  heapvec fresh;         /* scratch of sorted_update */
  heapvec sort_tmp;      /* scratch of sort_ents */
  gboolean valid;        /* the log is that of the last global fill */
  gboolean logging;      /* the current fill logs its steps */
  logstepvec steps;
  classvec cls;          /* the classes each step fixed */
  logentvec ents;        /* the links each step changed */
  uint64_t steps_reused; /* global fill steps taken from the log of the one before */
} net_log;

/* Routes (net_route.c). */
typedef struct {
  uint32_t *buf;         /* room for comm__route_max links */
  route_memo *memo;      /* recent routes (flow model), by a hash of their ends; made on first
                          * use, ROUTE_MEMOS_MIN of them, and grown while they miss often */
  uint32_t mask;         /* slots - 1 */
  uint32_t misses;       /* since the table was made */
  /* Routes of the lone set (comm__lone_new): per link, the id + 1 of the route holding it. */
  uint32_t *lone_owner;
  gboolean lone_open;
} net_routes;

/* Observers: one SIM_PROC_LINK process per node, a track per NIC and one intra track (net.c). */
typedef struct {
  gboolean tracks_made;
  comm_flow_observer_fn flow_obs;   /* told of each flow as it ends, or NULL */
  void *flow_obs_user;
  sim_proc_id *node_proc;
  sim_track_id *node_tracks;   /* node * (N + 1) + k; k == N: intra */
  char **nic_counter_names;
} net_observers;

struct comm_net {
  sim_engine *engine;
  const comm_topology *topo;
  comm_net_model model;
  gboolean plain;        /* the plain solver (comm_net_set_plain): every speed-up off */

  /* Links and classes in use, read by every part. */
  link_state *links;     /* per directed link */
  flow **reserved_on;    /* per directed link: the lone flow on it, while link_busy says so */
  uint8_t *link_busy;    /* per directed link: LINK_FREE, LINK_CLASSES while classes are on its
                          * list (links[l].n > 0), or LINK_LONE; read by a send that looks for
                          * free links, one byte instead of the link's record and its mark */
  uint64_t nlinks;
  uint64_t endpoints;    /* comm__endpoints(topo): valid endpoints are below it */
  const comm__link_class **link_class; /* per directed link, looked up once (flow model) */
  classvec live_classes; /* every class in use */
  u32vec live_links;     /* every link with a class on it */
  u32vec held_links;     /* every link that has had a class array (freed with the network: a
                          * pass over all links would touch every page of the link array) */
  uint64_t active, peak; /* flows in flight, and the most at once */

  net_records rec;
  net_recompute rc;
  net_fill fill;
  net_log log;
  net_routes route;
  net_observers obs;
  struct {
    dblvec load, top;    /* scratch of the invariant checker (net_check.c), per link */
  } check;
};


/* Positions in net->fill.heap that are no position: the link is in no heap, or it is still ranked
 * in net->log.sorted (a global fill, see net_log.c). */
#define NOT_IN_HEAP UINT32_MAX
#define IN_SORTED (UINT32_MAX - 1)

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


/* ---- net_fill.c: progressive filling ------------------------------------------------------- */

/* Starts a new round of component marks. */
void comm__fill_next_epoch(comm_net *net);
/* Collects the component of `seed` into net->rc.comp_classes and net->rc.comp_links, readied for
 * filling. */
void comm__fill_collect(comm_net *net, fclass *seed);
/* Progressive filling of classes cc over links cl, whose rem_Bps and unfrozen are set: every
 * class gets its next_rate. */
void comm__fill_component(comm_net *net, const classvec *cc, const u32vec *cl);
/* Progressive filling of the unfixed classes, links read from S[0 .. ns) in order (each at
 * IN_SORTED, its key sorted_Bps) and from net->fill.heap (see net_fill.c). */
void comm__fill_sorted(comm_net *net, const heap_ent *S, uint32_t ns);
void comm__fill_heap_push(comm_net *net, double share_Bps, uint32_t l);
/* A new touch mark for the links of one step. */
uint32_t comm__fill_touch_mark(comm_net *net);
/* Room in net->fill.touched for one step of a fill over n links. */
void comm__fill_touched_reserve(comm_net *net, uint32_t n);

/* ---- net_log.c: the global fill and its log ------------------------------------------------ */

/* Progressive filling of every live class; returns how many classes (the first of
 * net->log.cls) kept the rates and events of the last fill. */
uint32_t comm__fill_global(comm_net *net);
/* Stops keeping net->log.sorted and the log (recomputes no longer fill globally). */
void comm__sorted_drop(comm_net *net);

/* ---- net_route.c: routes ------------------------------------------------------------------- */

/* The memo of route src -> dst, or NULL for a route of more than INLINE_HOPS links. */
route_memo *comm__route_get(comm_net *net, comm_ep src, comm_ep dst);
/* The sum of the latencies of a route's links for a message of `bytes`. */
sim_time_ps comm__route_latency(comm_net *net, const uint32_t *links, uint32_t n,
                                uint64_t bytes);

/* ---- net.c --------------------------------------------------------------------------------- */

/* The hashed class of route key (src << 32 | dst), or NULL. */
fclass *comm__class_lookup(const comm_net *net, uint64_t key);

/* ---- net_check.c ---------------------------------------------------------------------------- */

/* The invariants of comm_net_check over classes cc and links cl (a whole component, or every
 * live class and link); stops the program with the breach (g_error) if one fails. Builds
 * without NDEBUG call it after every recompute. */
void comm__net_check_fill(comm_net *net, const classvec *cc, const u32vec *cl);

/* Classes of slab s handed out at least once (the others were never written). */
static inline uint32_t comm__class_slab_used(const comm_net *net, guint s)
{
  return s + 1 == net->rec.class_slabs->len ? net->rec.classes_fresh : CLASSES_PER_SLAB;
}

#endif
