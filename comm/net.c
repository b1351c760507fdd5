/* The network models: how transfers on the topology become engine events.
 *
 * `flow`: a transfer first waits the latency of its route (the sum of its links' latencies),
 * then becomes a flow that shares every directed link of its route max-min fairly with the
 * other flows there. Rates are recomputed by progressive filling, but only over the flows
 * connected to a flow that started or ended through shared links, and only once per simulated
 * instant however many flows start or end in it (a recompute event scheduled at the current
 * time, after the events already due then). A flow whose rate changes has its remaining bytes
 * settled and its completion event moved with sim_engine_reschedule.
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

enum { EV_ACTIVATE, EV_COMPLETE, EV_INSTANT, EV_RECOMPUTE };

typedef struct flow flow;

typedef struct {
  uint32_t link;   /* directed link id */
  uint32_t slot;   /* position of this flow in the link's flow list */
} hop;

struct flow {
  comm_net *net;
  comm_done_fn done;
  void *user;
  sim_event *ev;         /* pending activation or completion, or NULL */
  double remaining;      /* bytes not yet sent as of last_ps */
  double rate;           /* bytes/s; 0 until the first recompute */
  double next_rate;      /* progressive filling scratch; < 0 while unfixed */
  sim_time_ps last_ps;
  uint64_t span;
  uint64_t bytes;
  uint32_t nhops;
  uint32_t epoch;        /* component search mark */
  gboolean in_use;
  gboolean reserved;     /* placed on its links at send time, active from last_ps on */
  hop *hops;
  flow *next_free;
  hop inline_hops[INLINE_HOPS];
};

typedef struct {
  flow **flows;
  uint32_t n, cap;
  uint32_t epoch;        /* component search mark */
  uint32_t unfrozen;     /* progressive filling: flows on it without a rate yet */
  uint32_t version;      /* progressive filling: invalidates older heap entries */
  uint32_t touched;      /* progressive filling: mark of the last fix that changed it */
  double rem_Bps;        /* progressive filling: capacity not yet given out */
} link_state;

typedef struct {
  double share;
  uint32_t link;
  uint32_t version;
} fill_entry;

/* Growable arrays for the hot path (GArray's generic code costs more than the work here). */
typedef struct {
  uint32_t *v;
  uint32_t n, cap;
} u32vec;

typedef struct {
  flow **v;
  uint32_t n, cap;
} flowvec;

typedef struct {
  fill_entry *v;
  uint32_t n, cap;
} fillvec;

#define VEC_PUSH(vec, x)                                                                        \
  do {                                                                                          \
    if ((vec)->n == (vec)->cap) {                                                               \
      (vec)->cap = (vec)->cap ? 2 * (vec)->cap : 64;                                            \
      (vec)->v = g_realloc_n((vec)->v, (vec)->cap, sizeof(*(vec)->v));                          \
    }                                                                                           \
    (vec)->v[(vec)->n++] = (x);                                                                 \
  } while (0)

struct comm_net {
  sim_engine *engine;
  const comm_topology *topo;
  comm_net_model model;

  link_state *links;     /* per directed link */
  uint64_t nlinks;

  GPtrArray *slabs;
  flow *free_flows;
  uint64_t active, peak;

  uint32_t *route_buf;

  /* Seeds of the next recompute: flows that started sharing, links flows left. */
  flowvec seed_flows;
  u32vec seed_links;
  gboolean recompute_pending;
  uint32_t epoch;
  flowvec comp_flows;    /* the component being recomputed */
  u32vec comp_links;
  flowvec stack;         /* scratch of the component search */
  fillvec heap;          /* scratch of progressive filling */
  u32vec touched;        /* scratch of progressive filling: links one fix changed */
  uint32_t touch_mark;

  /* Observers: one SIM_PROC_LINK process per node, a track per NIC and one intra track. */
  gboolean tracks_made;
  sim_proc_id *node_proc;
  sim_track_id *node_tracks;   /* node * (N + 1) + k; k == N: intra */
  char **nic_counter_names;
};

/* ---- Flow records ------------------------------------------------------------------------- */

static flow *flow_alloc(comm_net *net)
{
  if (!net->free_flows) {
    flow *slab = g_new(flow, FLOWS_PER_SLAB);
    g_ptr_array_add(net->slabs, slab);
    for (size_t i = FLOWS_PER_SLAB; i-- > 0;) {
      slab[i].in_use = FALSE;
      slab[i].next_free = net->free_flows;
      net->free_flows = &slab[i];
    }
  }
  flow *f = net->free_flows;
  net->free_flows = f->next_free;
  f->net = net;
  f->in_use = TRUE;
  f->reserved = FALSE;
  f->ev = NULL;
  f->rate = 0.0;
  f->epoch = 0;
  f->nhops = 0;
  f->hops = f->inline_hops;
  f->span = 0;
  return f;
}

static void flow_release(comm_net *net, flow *f)
{
  if (f->hops != f->inline_hops)
    g_free(f->hops);
  f->in_use = FALSE;
  f->next_free = net->free_flows;
  net->free_flows = f;
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
static void report_nic_rates(comm_net *net)
{
  if (!net->tracks_made || !sim_engine_has_observers(net->engine))
    return;
  for (uint32_t i = 0; i < net->comp_links.n; i++) {
    uint32_t l = net->comp_links.v[i];
    uint32_t node, nic;
    if (!comm__nic_uplink(net->topo, l, &node, &nic))
      continue;
    double sum = 0.0;
    for (uint32_t j = 0; j < net->links[l].n; j++)
      sum += net->links[l].flows[j]->next_rate > 0 ? net->links[l].flows[j]->next_rate : 0;
    sim_engine_counter(net->engine, net->node_proc[node], net->nic_counter_names[nic], sum / 1e9);
  }
}

/* ---- Links -------------------------------------------------------------------------------- */

static void link_add(comm_net *net, flow *f, uint32_t h)
{
  link_state *L = &net->links[f->hops[h].link];
  if (L->n == L->cap) {
    L->cap = L->cap ? 2 * L->cap : 4;
    L->flows = g_renew(flow *, L->flows, L->cap);
  }
  f->hops[h].slot = L->n;
  L->flows[L->n++] = f;
}

static void link_remove(comm_net *net, flow *f, uint32_t h)
{
  uint32_t l = f->hops[h].link;
  link_state *L = &net->links[l];
  uint32_t slot = f->hops[h].slot;
  flow *moved = L->flows[--L->n];
  if (moved != f) {
    L->flows[slot] = moved;
    for (uint32_t i = 0; i < moved->nhops; i++)
      if (moved->hops[i].link == l && moved->hops[i].slot == L->n) {
        moved->hops[i].slot = slot;
        break;
      }
  }
}

static inline double link_capacity(const comm_net *net, uint32_t l)
{
  return comm__link_class_of(net->topo, l)->Bps;
}

/* ---- Max-min fair sharing ------------------------------------------------------------------ */

static void event_cb(sim_engine *engine, void *data, uint64_t arg);

static void want_recompute(comm_net *net)
{
  if (net->recompute_pending)
    return;
  net->recompute_pending = TRUE;
  sim_engine_schedule_in(net->engine, 0, event_cb, net, EV_RECOMPUTE);
}

static inline gboolean fill_less(const fill_entry *a, const fill_entry *b)
{
  return a->share < b->share || (a->share == b->share && a->link < b->link);
}

static void heap_push(fillvec *h, fill_entry e)
{
  VEC_PUSH(h, e);
  fill_entry *a = h->v;
  size_t i = h->n - 1;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!fill_less(&e, &a[p]))
      break;
    a[i] = a[p];
    i = p;
  }
  a[i] = e;
}

static fill_entry heap_pop(fillvec *h)
{
  fill_entry *a = h->v;
  fill_entry top = a[0];
  fill_entry last = a[--h->n];
  size_t n = h->n, i = 0;
  if (n == 0)
    return top;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && fill_less(&a[c + 1], &a[c]))
      c++;
    if (!fill_less(&a[c], &last))
      break;
    a[i] = a[c];
    i = c;
  }
  a[i] = last;
  return top;
}

static inline void visit_flow(comm_net *net, flow *f)
{
  if (f->epoch == net->epoch)
    return;
  f->epoch = net->epoch;
  VEC_PUSH(&net->stack, f);
}

/* Starts a new round of marks; after 2^32 of them, clears the marks so that an old one can
 * never look current. */
static void next_epoch(comm_net *net)
{
  if (++net->epoch != 0)
    return;
  for (uint64_t l = 0; l < net->nlinks; l++)
    net->links[l].epoch = 0;
  for (guint s = 0; s < net->slabs->len; s++) {
    flow *slab = g_ptr_array_index(net->slabs, s);
    for (size_t i = 0; i < FLOWS_PER_SLAB; i++)
      slab[i].epoch = 0;
  }
  net->epoch = 1;
}

/* Collects the flows and links connected to `seed` through shared links. */
static void collect_component(comm_net *net, flow *seed)
{
  net->comp_flows.n = 0;
  net->comp_links.n = 0;
  net->stack.n = 0;
  visit_flow(net, seed);
  while (net->stack.n > 0) {
    flow *f = net->stack.v[--net->stack.n];
    VEC_PUSH(&net->comp_flows, f);
    for (uint32_t h = 0; h < f->nhops; h++) {
      uint32_t l = f->hops[h].link;
      link_state *L = &net->links[l];
      if (L->epoch == net->epoch)
        continue;
      L->epoch = net->epoch;
      VEC_PUSH(&net->comp_links, l);
      for (uint32_t j = 0; j < L->n; j++)
        visit_flow(net, L->flows[j]);
    }
  }
}

/* Gives every unfixed flow on link l the share `share` and takes it from its other links.
 * With the heap, each other link whose share moved gets one fresh entry once all of l's flows
 * are fixed (one per link, not one per flow and link: the entries of a busy link would
 * otherwise number its flows times their hops). */
static inline void fix_link(comm_net *net, uint32_t l, double share, gboolean use_heap)
{
  link_state *L = &net->links[l];
  net->touched.n = 0;
  for (uint32_t j = 0; j < L->n; j++) {
    flow *g = L->flows[j];
    if (g->next_rate >= 0.0)
      continue;
    g->next_rate = share;
    for (uint32_t h = 0; h < g->nhops; h++) {
      uint32_t l2 = g->hops[h].link;
      link_state *L2 = &net->links[l2];
      L2->rem_Bps -= share;
      L2->unfrozen--;
      if (use_heap && L2->touched != net->touch_mark) {
        L2->touched = net->touch_mark;
        VEC_PUSH(&net->touched, l2);
      }
    }
  }
  if (!use_heap)
    return;
  for (uint32_t i = 0; i < net->touched.n; i++) {
    uint32_t l2 = net->touched.v[i];
    link_state *L2 = &net->links[l2];
    if (l2 != l && L2->unfrozen > 0) {
      L2->version++;
      heap_push(&net->heap, (fill_entry){MAX(L2->rem_Bps, 0.0) / L2->unfrozen, l2, L2->version});
    }
  }
  if (++net->touch_mark == 0) {
    for (uint64_t k = 0; k < net->nlinks; k++)
      net->links[k].touched = 0;
    net->touch_mark = 1;
  }
}

/* Progressive filling over the component: repeatedly the link with the smallest fair share
 * (remaining capacity over flows still without a rate) fixes the rate of its flows. Small
 * components scan their links; large ones keep the links in a heap with versioned entries,
 * which makes the whole O(H log H) in the component's hops H. Ties go to the lower link id,
 * so results never depend on the order flows were found in. */
static void fill_component(comm_net *net)
{
  flowvec *cf = &net->comp_flows;
  u32vec *cl = &net->comp_links;
  if (cf->n == 1) {
    flow *f = cf->v[0];
    double r = INFINITY;
    for (uint32_t h = 0; h < f->nhops; h++)
      r = MIN(r, link_capacity(net, f->hops[h].link));
    f->next_rate = r;
    return;
  }
  for (uint32_t i = 0; i < cf->n; i++)
    cf->v[i]->next_rate = -1.0;
  for (uint32_t i = 0; i < cl->n; i++) {
    link_state *L = &net->links[cl->v[i]];
    L->rem_Bps = link_capacity(net, cl->v[i]);
    L->unfrozen = L->n;
  }
  if (cl->n <= 64) {
    for (;;) {
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
      if (best == UINT32_MAX)
        return;
      fix_link(net, best, best_share, FALSE);
    }
  }
  net->heap.n = 0;
  for (uint32_t i = 0; i < cl->n; i++) {
    link_state *L = &net->links[cl->v[i]];
    L->version++;
    heap_push(&net->heap, (fill_entry){L->rem_Bps / L->unfrozen, cl->v[i], L->version});
  }
  while (net->heap.n > 0) {
    fill_entry e = heap_pop(&net->heap);
    link_state *L = &net->links[e.link];
    if (e.version != L->version || L->unfrozen == 0)
      continue;
    fix_link(net, e.link, MAX(L->rem_Bps, 0.0) / L->unfrozen, TRUE);
  }
}

/* Applies the new rates: settles the bytes sent at the old rate, then moves completions. */
static void apply_rates(comm_net *net)
{
  sim_engine *e = net->engine;
  sim_time_ps now = sim_engine_now(e);
  flowvec *cf = &net->comp_flows;
  for (uint32_t i = 0; i < cf->n; i++) {
    flow *f = cf->v[i];
    if (f->next_rate == f->rate && f->ev)
      continue;
    if (f->rate > 0.0) {
      f->remaining -= f->rate * ((double)(now - f->last_ps) * 1e-12);
      if (f->remaining < 0.0)
        f->remaining = 0.0;
    }
    f->last_ps = now;
    f->rate = f->next_rate;
    sim_time_ps end = sim_time_add_sat(now, comm__time_for(f->remaining, f->rate));
    if (f->ev)
      sim_engine_reschedule(e, f->ev, end);
    else
      f->ev = sim_engine_schedule_at(e, end, event_cb, f, EV_COMPLETE);
  }
}

static void recompute_from(comm_net *net, flow *seed)
{
  if (seed->epoch == net->epoch)
    return;
  collect_component(net, seed);
  fill_component(net);
  report_nic_rates(net);
  apply_rates(net);
}

/* One recompute per simulated instant: each component touched by the flows that started or
 * ended is filled on its own. */
static void recompute(comm_net *net)
{
  net->recompute_pending = FALSE;
  next_epoch(net);
  for (uint32_t i = 0; i < net->seed_flows.n; i++)
    recompute_from(net, net->seed_flows.v[i]);
  for (uint32_t i = 0; i < net->seed_links.n; i++) {
    link_state *L = &net->links[net->seed_links.v[i]];
    for (uint32_t j = 0; j < L->n; j++)
      recompute_from(net, L->flows[j]);
  }
  net->seed_flows.n = 0;
  net->seed_links.n = 0;
}

/* A flow reserved at send time (see comm_net_send) whose latency has not yet run out, met by a
 * flow joining one of its links: it goes back to the ordinary path, leaving its links until
 * its activation event at the end of its latency. */
static void unreserve(comm_net *net, flow *x)
{
  for (uint32_t h = 0; h < x->nhops; h++)
    link_remove(net, x, h);
  sim_engine_cancel(net->engine, x->ev);
  x->reserved = FALSE;
  x->rate = 0.0;
  x->ev = sim_engine_schedule_at(net->engine, x->last_ps, event_cb, x, EV_ACTIVATE);
}

/* ---- Events -------------------------------------------------------------------------------- */

static void finish(comm_net *net, flow *f)
{
  comm_done_fn done = f->done;
  void *user = f->user;
  span_end(net, f);
  flow_release(net, f);
  net->active--;
  if (done)
    done(net->engine, user);
}

static void event_cb(sim_engine *engine, void *data, uint64_t arg)
{
  if (arg == EV_RECOMPUTE) {
    recompute(data);
    return;
  }
  flow *f = data;
  comm_net *net = f->net;
  f->ev = NULL;
  switch (arg) {
  case EV_ACTIVATE: {
    gboolean alone = TRUE;
    double r = INFINITY;
    sim_time_ps now = sim_engine_now(engine);
    for (uint32_t h = 0; h < f->nhops; h++) {
      link_state *L = &net->links[f->hops[h].link];
      for (uint32_t j = 0; j < L->n;) {
        flow *x = L->flows[j];
        if (x->reserved && x->last_ps > now)
          unreserve(net, x); /* removes x from L: look at slot j again */
        else
          j++;
      }
      link_add(net, f, h);
      alone = alone && net->links[f->hops[h].link].n == 1;
      r = MIN(r, link_capacity(net, f->hops[h].link));
    }
    f->remaining = (double)f->bytes;
    f->last_ps = sim_engine_now(engine);
    if (alone) {
      /* Alone on every link: its max-min rate is its bottleneck, and nobody else's rate
       * changes. A flow that joins one of these links later recomputes this one too. */
      f->rate = r;
      f->ev = sim_engine_schedule_at(
          engine, sim_time_add_sat(f->last_ps, comm__time_for(f->remaining, r)), event_cb, f,
          EV_COMPLETE);
      if (net->tracks_made && sim_engine_has_observers(engine)) {
        net->comp_links.n = 0;
        for (uint32_t h = 0; h < f->nhops; h++)
          VEC_PUSH(&net->comp_links, f->hops[h].link);
        f->next_rate = r;
        report_nic_rates(net);
      }
      break;
    }
    VEC_PUSH(&net->seed_flows, f);
    want_recompute(net);
    break;
  }
  case EV_COMPLETE: {
    gboolean observed = net->tracks_made && sim_engine_has_observers(engine);
    for (uint32_t h = 0; h < f->nhops; h++) {
      uint32_t l = f->hops[h].link, node, nic;
      link_remove(net, f, h);
      if (net->links[l].n > 0)
        VEC_PUSH(&net->seed_links, l);
      else if (observed && comm__nic_uplink(net->topo, l, &node, &nic))
        sim_engine_counter(engine, net->node_proc[node], net->nic_counter_names[nic], 0.0);
    }
    if (net->seed_links.n > 0)
      want_recompute(net);
    finish(net, f);
    break;
  }
  case EV_INSTANT:
  default:
    finish(net, f);
    break;
  }
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
  if (model == COMM_NET_FLOW)
    net->links = g_new0(link_state, net->nlinks);
  net->slabs = g_ptr_array_new_with_free_func(g_free);
  net->route_buf = g_new(uint32_t, comm__route_max(topo) + 1);
  net->touch_mark = 1;
  return net;
}

void comm_net_free(comm_net *net)
{
  if (!net)
    return;
  /* Flows still in flight own their routes when those are long. */
  for (guint i = 0; i < net->slabs->len; i++) {
    flow *slab = g_ptr_array_index(net->slabs, i);
    for (size_t j = 0; j < FLOWS_PER_SLAB; j++)
      if (slab[j].in_use && slab[j].hops != slab[j].inline_hops)
        g_free(slab[j].hops);
  }
  if (net->links) {
    for (uint64_t l = 0; l < net->nlinks; l++)
      g_free(net->links[l].flows);
    g_free(net->links);
  }
  g_ptr_array_free(net->slabs, TRUE);
  g_free(net->route_buf);
  g_free(net->seed_flows.v);
  g_free(net->seed_links.v);
  g_free(net->comp_flows.v);
  g_free(net->comp_links.v);
  g_free(net->stack.v);
  g_free(net->heap.v);
  g_free(net->touched.v);
  if (net->nic_counter_names)
    g_strfreev(net->nic_counter_names);
  g_free(net->node_proc);
  g_free(net->node_tracks);
  g_free(net);
}

comm_net_model comm_net_get_model(const comm_net *net) { return net->model; }
const comm_topology *comm_net_topology(const comm_net *net) { return net->topo; }
sim_engine *comm_net_engine(const comm_net *net) { return net->engine; }
uint64_t comm_net_active_flows(const comm_net *net) { return net->active; }
uint64_t comm_net_peak_flows(const comm_net *net) { return net->peak; }

void comm_net_send(comm_net *net, comm_ep src, comm_ep dst, uint64_t bytes, comm_done_fn done,
                   void *user)
{
  g_return_if_fail(net != NULL);
  g_return_if_fail(comm__ep_node(net->topo, src) < comm__total_nodes(net->topo) &&
                   comm__ep_node(net->topo, dst) < comm__total_nodes(net->topo));
  flow *f = flow_alloc(net);
  f->done = done;
  f->user = user;
  f->bytes = bytes;
  net->active++;
  if (net->active > net->peak)
    net->peak = net->active;
  span_begin(net, f, src, dst);
  if (src == dst || bytes == 0) {
    f->ev = sim_engine_schedule_in(net->engine, 0, event_cb, f, EV_INSTANT);
    return;
  }
  if (net->model == COMM_NET_ANALYTIC) {
    f->ev = sim_engine_schedule_in(
        net->engine, comm__p2p_time_buf(net->topo, src, dst, bytes, net->route_buf), event_cb, f,
        EV_INSTANT);
    return;
  }
  uint32_t n = comm__route(net->topo, src, dst, net->route_buf);
  if (n > INLINE_HOPS)
    f->hops = g_new(hop, n);
  sim_time_ps lat = 0;
  for (uint32_t i = 0; i < n; i++) {
    f->hops[i].link = net->route_buf[i];
    lat = sim_time_add_sat(lat, comm__link_class_of(net->topo, net->route_buf[i])->latency_ps);
  }
  f->nhops = n;
  /* If every link of the route is free now, the flow is placed on them at once, reserved:
   * it counts as active from the end of its latency at its bottleneck rate, and needs a
   * single event, its completion. A flow that joins one of its links before that time sends
   * it back to the ordinary path (unreserve); one that joins later finds an active flow. In
   * an uncontended pattern this halves the events per transfer. Traced runs take the
   * ordinary path so that counters are stamped when rates really change. */
  sim_engine *e = net->engine;
  gboolean free_route = !sim_engine_has_observers(e);
  for (uint32_t i = 0; i < n && free_route; i++)
    free_route = net->links[f->hops[i].link].n == 0;
  if (free_route) {
    double r = INFINITY;
    for (uint32_t h = 0; h < n; h++) {
      link_add(net, f, h);
      r = MIN(r, link_capacity(net, f->hops[h].link));
    }
    f->reserved = TRUE;
    f->rate = r;
    f->remaining = (double)bytes;
    f->last_ps = sim_time_add_sat(sim_engine_now(e), lat);
    f->ev = sim_engine_schedule_at(e, sim_time_add_sat(f->last_ps, comm__time_for(f->remaining, r)),
                                   event_cb, f, EV_COMPLETE);
    return;
  }
  f->ev = sim_engine_schedule_in(e, lat, event_cb, f, EV_ACTIVATE);
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
