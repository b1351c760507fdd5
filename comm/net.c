/* The network models: how transfers on the topology become engine events. This file holds the
 * records (flows, classes), the events, the reserved path and the public functions; the
 * filling, the global fill with its log, and routing are in the files net_internal.h lists.
 *
 * `flow`: a transfer first waits the latency of its route (the sum of its links' latencies),
 * then becomes a flow that shares every directed link of its route max-min fairly with the
 * other flows there. Flows on the same route always get the same rate, so the active flows
 * of one route form a class (fclass) with one rate, one count of bytes served per flow and
 * one completion event (its earliest flow's); links hold classes, and everything below works
 * per class, not per flow. Rates are recomputed by progressive filling (net_fill.c), but only
 * over the classes connected to one that started or ended through shared links, and only once
 * per simulated instant however many flows start or end in it (a recompute event scheduled at
 * the current time, after the events already due then). When one component holds nearly
 * every class (incast, all-to-all), recomputes fill all live classes without searching for
 * the component, which gives the same rates (net_log.c). A class whose rate changes settles
 * its served bytes and moves its completion event with sim_engine_reschedule. A transfer sent
 * onto links nobody uses is lone: one event, its completion, no class, and no place on the
 * links' class lists until another flow meets it (see comm_net_send).
 *
 * `analytic`: one event per transfer at the idle-network time of comm_topology_p2p_time.
 *
 * Both use the same rounding (sim_time_for_work on the bottleneck bandwidth), so a transfer
 * that shares no link takes the same picoseconds under both. */
#include "net_internal.h"

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

fclass *comm__class_lookup(const comm_net *net, uint64_t key)
{
  return class_table_get(&net->rec.classes, key);
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


/* ---- Flow and class records ----------------------------------------------------------------- */

/* Records come from the released ones (the last released first), then from the last slab in
 * order, then from a new slab. The released ones are kept in an array of pointers, not in a
 * list through the records: taking one then writes it without reading it first (the read of a
 * cold record's link to the next was half of comm_net_send's time in an unfolded nccl run). A
 * slab's records are written only as they are first handed out, so that a run with few flows
 * in flight touches few pages of its slabs. */
/* A lone flow's completion reads the first cache line of its record: its links up to four. */
G_STATIC_ASSERT(offsetof(flow, links) + 4 * sizeof(uint32_t) <= 64 && sizeof(flow) == 128);

static flow *flow_alloc(comm_net *net)
{
  flow *f;
  if (net->rec.free_flows.n) {
    f = net->rec.free_flows.v[--net->rec.free_flows.n];
  } else {
    if (net->rec.slabs->len == 0 || net->rec.flows_fresh == FLOWS_PER_SLAB) {
      g_ptr_array_add(net->rec.slabs,
                      g_aligned_alloc(FLOWS_PER_SLAB, sizeof(flow), _Alignof(flow)));
      net->rec.flows_fresh = 0;
    }
    f = (flow *)g_ptr_array_index(net->rec.slabs, net->rec.slabs->len - 1) + net->rec.flows_fresh++;
  }
  f->net = net;
  f->ev = NULL;
  f->cls = NULL;
  f->span = 0;
  f->lone_pos = LONE_NONE;
  return f;
}

static void flow_release(comm_net *net, flow *f)
{
  VEC_PUSH(&net->rec.free_flows, f);
}

/* A class for the route src -> dst (nhops links in route order), empty and on no link.
 * `hashed`: found by flows of its route that activate later. A reserved class is not: a flow
 * of its route that activates while it waits out its latency finds it on its links and sends
 * it back, and one that activates later makes a class of its own beside it, which max-min
 * sharing gives the same rate. Uncontended transfers so never touch the table. */
static fclass *class_alloc(comm_net *net, comm_ep src, comm_ep dst, const uint32_t *route,
                           uint32_t nhops, gboolean hashed)
{
  fclass *c;
  if (net->rec.free_classes.n) {
    c = net->rec.free_classes.v[--net->rec.free_classes.n];
  } else {
    /* As flow_alloc; a record handed out for the first time starts cleared (no flow heap). */
    if (net->rec.class_slabs->len == 0 || net->rec.classes_fresh == CLASSES_PER_SLAB) {
      g_ptr_array_add(net->rec.class_slabs,
                      g_aligned_alloc(CLASSES_PER_SLAB, sizeof(fclass), _Alignof(fclass)));
      net->rec.classes_fresh = 0;
    }
    c = (fclass *)g_ptr_array_index(net->rec.class_slabs, net->rec.class_slabs->len - 1) +
        net->rec.classes_fresh++;
    memset(c, 0, sizeof *c);
  }
  c->net = net;
  c->key = (uint64_t)src << 32 | dst;
  c->count = 0;
  c->epoch = 0;
  c->in_use = TRUE;
  c->reserved = FALSE;
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
    class_table_put(&net->rec.classes, c->key, c);
  c->live_pos = net->live_classes.n;
  VEC_PUSH(&net->live_classes, c);
  return c;
}

static void class_release(comm_net *net, fclass *c)
{
  if (c->hashed)
    class_table_remove(&net->rec.classes, c->key);
  fclass *last = net->live_classes.v[--net->live_classes.n];
  net->live_classes.v[c->live_pos] = last;
  last->live_pos = c->live_pos;
  if (c->hops != c->inline_hops)
    g_free(c->hops);
  c->in_use = FALSE;
  VEC_PUSH(&net->rec.free_classes, c);
}

static inline gboolean flow_before(const flow *a, const flow *b)
{
  return a->target < b->target || (a->target == b->target && a->seq < b->seq);
}

static void class_push(fclass *c, flow *f)
{
  if (c->hn == c->hcap) {
    if (c->hcap == 0) {
      c->heap = c->inline_heap;
      c->hcap = G_N_ELEMENTS(c->inline_heap);
    } else if (c->heap == c->inline_heap) {
      c->heap = g_new(flow *, 2 * c->hcap);
      memcpy(c->heap, c->inline_heap, c->hn * sizeof *c->heap);
      c->hcap *= 2;
    } else {
      c->hcap *= 2;
      c->heap = g_renew(flow *, c->heap, c->hcap);
    }
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
  net->obs.node_proc = g_new(sim_proc_id, nodes);
  net->obs.node_tracks = g_new(sim_track_id, (size_t)nodes * (N + 1));
  net->obs.nic_counter_names = g_new0(char *, N + 1);
  for (uint32_t k = 0; k < N; k++)
    net->obs.nic_counter_names[k] = g_strdup_printf("nic%u tx GB/s", k);
  for (uint32_t n = 0; n < nodes; n++) {
    g_autofree char *name = n < comm_topology_nodes(t)
                                ? g_strdup_printf("node %u net", n)
                                : g_strdup_printf("extra node %u net", n - comm_topology_nodes(t));
    net->obs.node_proc[n] =
        sim_engine_add_proc(net->engine, SIM_PROC_LINK, name, (int)(100000 + n));
    for (uint32_t k = 0; k < N; k++) {
      g_autofree char *tn = g_strdup_printf("nic%u", k);
      net->obs.node_tracks[(size_t)n * (N + 1) + k] =
          sim_engine_add_track(net->engine, net->obs.node_proc[n], tn, (int)k);
    }
    net->obs.node_tracks[(size_t)n * (N + 1) + N] =
        sim_engine_add_track(net->engine, net->obs.node_proc[n], "intra", (int)N);
  }
  net->obs.tracks_made = TRUE;
}

/* The track a transfer is shown on: the NIC it leaves through, or the node's intra track. */
static void span_begin(comm_net *net, flow *f, comm_ep src, comm_ep dst)
{
  if (!sim_engine_has_observers(net->engine))
    return;
  if (!net->obs.tracks_made)
    make_tracks(net);
  const comm_topology *t = net->topo;
  uint32_t N = comm__nics_per_node(t);
  uint32_t ns = comm__ep_node(t, src), nd = comm__ep_node(t, dst);
  uint32_t k = ns != nd ? comm__ep_nic(t, src) : N;
  f->span = sim_engine_span_begin(net->engine, net->obs.node_tracks[(size_t)ns * (N + 1) + k],
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
  if (!net->obs.tracks_made || !sim_engine_has_observers(net->engine))
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
    sim_engine_counter(net->engine, net->obs.node_proc[node], net->obs.nic_counter_names[nic],
                       sum / 1e9);
  }
}

/* ---- Links -------------------------------------------------------------------------------- */

/* The flows on link l changed (or it came into use or went out of it): its place in
 * net->log.sorted is out of date. Called by the callers of link_add and link_remove, which stay
 * leaf functions. */
static inline void link_dirty(comm_net *net, uint32_t l)
{
  link_state *L = &net->links[l];
  if (net->log.sorted_valid && !L->dirty) {
    L->dirty = TRUE;
    VEC_PUSH(&net->log.dirty_links, l);
  }
  if (net->log.sorted_valid && !L->changed) {
    L->changed = TRUE;
    VEC_PUSH(&net->log.changed_links, l);
  }
}

/* link_dirty for every link of class c, tested once for all. */
static inline void class_links_dirty(comm_net *net, const fclass *c)
{
  if (net->log.sorted_valid)
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
    net->link_busy[c->hops[h].link] = LINK_CLASSES;   /* was free, or had a lone flow */
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
    net->link_busy[l] = LINK_FREE;
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


/* ---- Max-min fair sharing ------------------------------------------------------------------ */

static void recompute_cb(sim_engine *engine, void *data, uint64_t arg);
static void class_cb(sim_engine *engine, void *data, uint64_t arg);
static void place_lone(comm_net *net, flow *f);
static void flow_cb(sim_engine *engine, void *data, uint64_t arg);

static void want_recompute(comm_net *net)
{
  if (net->rc.pending)
    return;
  net->rc.pending = TRUE;
  sim_engine_schedule_in(net->engine, 0, recompute_cb, net, EV_RECOMPUTE);
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
  if (seed->epoch == net->rc.epoch)
    return;
  comm__fill_collect(net, seed);
  comm__fill_component(net, &net->rc.comp_classes, &net->rc.comp_links);
  report_nic_rates(net, &net->rc.comp_links);
  apply_rates(net, &net->rc.comp_classes, FALSE);
  net->rc.covered += net->rc.comp_classes.n;
#ifndef NDEBUG
  comm__net_check_fill(net, &net->rc.comp_classes, &net->rc.comp_links);
#endif
}

/* Fills every live class at once, without searching components: progressive filling over a
 * union of components gives each exactly what it would get alone (a link's capacity is only
 * ever shared among its own component, and the links of one component are fixed in the same
 * (share, id) order either way), so this costs the component search and nothing in
 * accuracy. */
static void recompute_all(comm_net *net)
{
  while (net->rec.lone.n > 0)
    place_lone(net, net->rec.lone.v[net->rec.lone.n - 1]);
  /* Fills over few links (scanned, not heaped) are not logged: they cost little. */
  if (net->live_links.n <= FILL_SCAN_LINKS) {
    for (uint32_t i = 0; i < net->live_classes.n; i++)
      net->live_classes.v[i]->next_rate = -1.0;
    for (uint32_t i = 0; i < net->live_links.n; i++) {
      uint32_t l = net->live_links.v[i];
      net->links[l].rem_Bps = link_capacity(net, l);
      net->links[l].unfrozen = net->links[l].flows;
    }
    comm__fill_component(net, &net->live_classes, &net->live_links);
    net->log.valid = FALSE;   /* its scratch is no longer the log's */
  } else {
    uint32_t kept = comm__fill_global(net);
    if (kept > 0) {
      /* The classes that the steps taken from the log fixed have the rates the last fill gave
       * them, which are still theirs, and their events (their flows did not change): only the
       * other classes need applying. */
      classvec rest = {net->log.cls.v + kept, net->log.cls.n - kept, 0};
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
  net->rc.pending = FALSE;
  if (net->rc.global_left > 0) {
    net->rc.global_left--;
    net->rc.full_fills++;
    recompute_all(net);
#ifndef NDEBUG
    comm__net_check_fill(net, &net->live_classes, &net->live_links);
#endif
  } else {
    net->log.valid = FALSE;
    comm__fill_next_epoch(net);
    net->rc.covered = 0;
    for (uint32_t i = 0; i < net->rc.seed_classes.n; i++)
      if (net->rc.seed_classes.v[i]->in_use)
        recompute_from(net, net->rc.seed_classes.v[i]);
    for (uint32_t i = 0; i < net->rc.seed_links.n; i++) {
      link_state *L = &net->links[net->rc.seed_links.v[i]];
      for (uint32_t j = 0; j < L->n; j++)
        recompute_from(net, L->cls[j]);
    }
    /* When what changed reached nearly every live class (one big component, as under incast
     * or all-to-all traffic), the next recomputes skip the search; a search every
     * GLOBAL_RUNS + 1 recomputes checks that this still holds. Observed runs keep to the
     * search, whose NIC counters are stamped only for the links it reached. Lone flows count
     * as the classes of their own they would be. */
    uint32_t live = net->live_classes.n + net->rec.lone.n;
    if (!net->plain && live >= GLOBAL_MIN_CLASSES && net->rc.covered >= live - live / 8 &&
        !sim_engine_has_observers(net->engine))
      net->rc.global_left = GLOBAL_RUNS;
    else if (net->log.sorted_valid)
      comm__sorted_drop(net);
  }
  net->rc.seed_classes.n = 0;
  net->rc.seed_links.n = 0;
}

static void recompute_cb(sim_engine *engine, void *data, uint64_t arg)
{
  recompute(data);
}

/* The links of a lone flow's route: its own copy, or the route worked out again into
 * net->route.buf. */
static inline const uint32_t *lone_links(comm_net *net, const flow *f)
{
  if (f->nlinks <= LONE_HOPS)
    return f->links;
  comm__route(net->topo, f->src, f->dst, net->route.buf);
  return net->route.buf;
}

/* A lone flow leaves net->rec.lone: the last of them, the one sent most recently, takes its
 * place. */
static inline void lone_unlist(comm_net *net, flow *f)
{
  flow *last = net->rec.lone.v[--net->rec.lone.n];
  net->rec.lone.v[f->lone_pos] = last;
  last->lone_pos = f->lone_pos;
  f->lone_pos = LONE_NONE;
}

/* A lone flow leaves: the marks on its links go, and its place in net->rec.lone. Its entries
 * of net->reserved_on are left as they are: nothing reads them on a free link. */
static void lone_drop(comm_net *net, flow *f)
{
  const uint32_t *links = lone_links(net, f);
  for (uint32_t h = 0; h < f->nlinks; h++)
    net->link_busy[links[h]] = LINK_FREE;
  lone_unlist(net, f);
}

/* A lone flow whose latency has not yet run out, met by a flow joining one of its links: it
 * goes back to the ordinary path, leaving its links until its activation event at the end
 * of its latency. */
static void unlone(comm_net *net, flow *f)
{
  lone_drop(net, f);
  sim_engine_cancel(net->engine, f->ev);
  f->ev = sim_engine_schedule_at(net->engine, f->start_ps, flow_cb, f, EV_ACTIVATE);
}

/* A class of its own for a lone flow whose latency has run out, met by a flow joining one of
 * its links (or before a global fill, which reads the class lists of every live link): it
 * goes on its links' class lists, where it would have been since it started; it was alone on
 * each, so it takes the first place, as it would have. Its completion event stays, as the
 * class's. The class is reserved: not found by flows of its route that activate later, which
 * make a class of their own beside it, and max-min sharing gives them the same rate. */
static void place_lone(comm_net *net, flow *f)
{
  lone_unlist(net, f);
  const uint32_t *links = lone_links(net, f);
  fclass *c = class_alloc(net, f->src, f->dst, links, f->nlinks, FALSE);
  c->count = 1;
  c->reserved = TRUE;
  double r = INFINITY;
  for (uint32_t h = 0; h < c->nhops; h++)
    r = MIN(r, link_capacity(net, c->hops[h].link));
  c->rate = r;
  c->last_ps = f->start_ps;
  c->ev = f->ev;
  f->ev = NULL;
  f->cls = c;
  class_push(c, f);
  for (uint32_t h = 0; h < c->nhops; h++)
    link_add(net, c, h);
  class_links_dirty(net, c);
}

/* A class of a lone flow met by a flow joining one of its links before its latency ran out
 * (see place_lone): its one flow goes back to the ordinary path, as unlone's. */
static void unreserve(comm_net *net, fclass *c)
{
  g_assert(c->count == 1 && c->hn == 1);
  flow *x = c->heap[0];
  for (uint32_t h = 0; h < c->nhops; h++)
    link_remove(net, c, h);
  class_links_dirty(net, c);
  sim_engine_cancel(net->engine, c->ev);
  x->cls = NULL;
  x->ev = sim_engine_schedule_at(net->engine, c->last_ps, flow_cb, x, EV_ACTIVATE);
  class_release(net, c);
}

/* ---- Events -------------------------------------------------------------------------------- */

static void finish(comm_net *net, flow *f)
{
  comm_done_fn done = f->done;
  void *user = f->user;
  span_end(net, f);
  if (G_UNLIKELY(net->obs.flow_obs != NULL) && f->bytes > 0 && f->src != f->dst &&
      net->model == COMM_NET_FLOW) {
    uint32_t n = comm__route(net->topo, f->src, f->dst, net->route.buf);
    net->obs.flow_obs(net->obs.flow_obs_user, net->route.buf, n, f->start_ps,
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
  fclass *c = class_table_get(&net->rec.classes, (uint64_t)f->src << 32 | f->dst);
  if (c) {
    /* Its target is the class's service now plus its bytes, in the class's running frame
     * (served as of last_ps), so nothing of the class needs settling here. */
    double served_now = c->served;
    if (c->rate > 0.0)
      served_now += c->rate * ((double)(now - c->last_ps) * 1e-12);
    f->target = served_now + (double)f->bytes;
    f->seq = net->rec.next_seq++;
    f->cls = c;
    c->count++;
    for (uint32_t h = 0; h < c->nhops; h++)
      net->links[c->hops[h].link].flows++;
    class_links_dirty(net, c);
    class_push(c, f);
    c->moved = TRUE;
    VEC_PUSH(&net->rc.seed_classes, c);
    want_recompute(net);
    return;
  }
  route_memo *m = comm__route_get(net, f->src, f->dst);
  uint32_t n = m ? m->nhops : comm__route(net->topo, f->src, f->dst, net->route.buf);
  c = class_alloc(net, f->src, f->dst, m ? m->links : net->route.buf, n, TRUE);
  c->count = 1;
  c->last_ps = now;
  f->target = (double)f->bytes;
  f->seq = net->rec.next_seq++;
  f->cls = c;
  class_push(c, f);
  gboolean alone = TRUE;
  double r = INFINITY;
  for (uint32_t h = 0; h < n; h++) {
    link_state *L = &net->links[c->hops[h].link];
    flow *u = net->link_busy[c->hops[h].link] == LINK_LONE ? net->reserved_on[c->hops[h].link]
                                                            : NULL;
    if (u && u->start_ps > now)
      unlone(net, u);
    else if (u)
      place_lone(net, u);
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
  if (!alone || net->plain) {
    VEC_PUSH(&net->rc.seed_classes, c);
    want_recompute(net);
    return;
  }
  /* Alone on every link: its max-min rate is its bottleneck, and nobody else's rate changes.
   * A flow that joins one of these links later recomputes this one too. */
  c->rate = r;
  c->ev = sim_engine_schedule_at(engine, class_first_end(c), class_cb, c, EV_COMPLETE);
  if (net->obs.tracks_made && sim_engine_has_observers(engine)) {
    net->rc.comp_links.n = 0;
    for (uint32_t h = 0; h < n; h++)
      VEC_PUSH(&net->rc.comp_links, c->hops[h].link);
    c->next_rate = r;
    report_nic_rates(net, &net->rc.comp_links);
  }
}

/* A lone flow is done: it was alone on every link, so nobody else's rate changes, and its
 * event, timed by its rate that never changed, is its end. */
static void lone_done(comm_net *net, flow *f)
{
  /* Its callback's data, long out of the cache, comes in while its marks go. */
  __builtin_prefetch(f->user);
  lone_drop(net, f);
  finish(net, f);
}

static void flow_cb(sim_engine *engine, void *data, uint64_t arg)
{
  flow *f = data;
  f->ev = NULL;
  if (arg == EV_LONE) {
    if (f->lone_pos != LONE_NONE)
      lone_done(f->net, f);
    else
      class_cb(engine, f->cls, EV_COMPLETE);   /* placed since: the event is its class's */
  } else if (arg == EV_ACTIVATE) {
    activate(f->net, f);
  } else {
    finish(f->net, f);
  }
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
  net->rec.finished.n = 0;
  while (c->hn > 0 && class_first_end(c) <= now) {
    flow *f = class_pop(c);
    f->cls = NULL;
    VEC_PUSH(&net->rec.finished, f);
  }
  uint32_t k = net->rec.finished.n;
  if (k == 0) {
    c->ev = sim_engine_schedule_at(engine, class_first_end(c), class_cb, c, EV_COMPLETE);
    return;
  }
  c->count -= k;
  class_links_dirty(net, c);
  gboolean observed = net->obs.tracks_made && sim_engine_has_observers(engine);
  for (uint32_t h = 0; h < c->nhops; h++) {
    uint32_t l = c->hops[h].link, node, nic;
    link_state *L = &net->links[l];
    L->flows -= k;
    if (c->count == 0)
      link_remove(net, c, h);
    if (L->flows > 0)
      VEC_PUSH(&net->rc.seed_links, l);
    else if (observed && comm__nic_uplink(net->topo, l, &node, &nic))
      sim_engine_counter(engine, net->obs.node_proc[node], net->obs.nic_counter_names[nic], 0.0);
  }
  if (c->count == 0)
    class_release(net, c);
  if (net->rc.seed_links.n > 0)
    want_recompute(net);
  /* The callbacks may send: the finished flows are taken off the scratch list first. */
  flow *one[16];
  flow **list = k <= G_N_ELEMENTS(one) ? one : g_new(flow *, k);
  memcpy(list, net->rec.finished.v, k * sizeof *list);
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
    net->reserved_on = g_new0(flow *, net->nlinks);
    net->link_busy = g_new0(uint8_t, net->nlinks);
    net->link_class = g_new0(const comm__link_class *, net->nlinks);
  }
  net->rec.slabs = g_ptr_array_new_with_free_func(g_aligned_free);
  net->rec.class_slabs = g_ptr_array_new_with_free_func(g_aligned_free);
  net->route.buf = g_new(uint32_t, comm__route_max(topo) + 1);
  net->fill.touch_mark = 1;
  const char *plain = g_getenv("DTSIM_NET_PLAIN");
  net->plain = plain && *plain && strcmp(plain, "0") != 0;
  return net;
}

void comm_net_set_plain(comm_net *net, gboolean plain)
{
  g_return_if_fail(net != NULL && net->active == 0 && net->live_classes.n == 0);
  net->plain = plain;
}

gboolean comm_net_get_plain(const comm_net *net) { return net->plain; }

/* The analytic model's time of a transfer: its idle-network time, unless the links of its
 * route are still busy with transfers that started before it. Each link keeps when its
 * reserved bytes are through; the transfer reserves bytes / (the link's rate) on every link of
 * its route after what is reserved there, and ends when the last of its links is through with
 * it (plus the route's latency) or at its idle-network time, whichever is later. Transfers
 * that never overlap on a link take their idle-network time, so on an uncontended topology
 * this is the flow model's time; where many transfers cross one link at once (W workers
 * pushing to one parameter server, an alltoall through a NIC) the last ends when the busiest
 * link has carried them all, as under fair sharing (docs/network.md, "Analytic bounds"). */
static sim_time_ps analytic_time(comm_net *net, comm_ep src, comm_ep dst, uint64_t bytes)
{
  uint32_t n;
  sim_time_ps alone = comm__p2p_time_route(net->topo, src, dst, bytes, net->route.buf, &n);
  if (n == 0)
    return alone;
  if (!net->rec.analytic_free)
    net->rec.analytic_free = g_new0(sim_time_ps, net->nlinks);
  sim_time_ps now = sim_engine_now(net->engine), through = now, slowest = 0;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t l = net->route.buf[k];
    sim_time_ps occ = sim_time_for_work((double)bytes, comm__link_class_of(net->topo, l)->Bps);
    sim_time_ps end = sim_time_add_sat(MAX(now, net->rec.analytic_free[l]), occ);
    net->rec.analytic_free[l] = end;
    through = MAX(through, end);
    slowest = MAX(slowest, occ);
  }
  /* The idle-network time is the latency plus the slowest link's occupation. */
  sim_time_ps latency = alone > slowest ? alone - slowest : 0;
  return MAX(alone, sim_time_add_sat(through - now, latency));
}

void comm_net_free(comm_net *net)
{
  if (!net)
    return;
  /* Classes still in flight own their routes when those are long; every class record keeps
   * its flow heap for reuse. */
  for (guint i = 0; i < net->rec.class_slabs->len; i++) {
    fclass *slab = g_ptr_array_index(net->rec.class_slabs, i);
    for (size_t j = 0; j < comm__class_slab_used(net, i); j++) {
      if (slab[j].in_use && slab[j].hops != slab[j].inline_hops)
        g_free(slab[j].hops);
      if (slab[j].heap != slab[j].inline_heap)
        g_free(slab[j].heap);
    }
  }
  for (uint32_t i = 0; i < net->held_links.n; i++)
    g_free(net->links[net->held_links.v[i]].cls);
  g_free(net->held_links.v);
  g_free(net->rec.free_flows.v);
  g_free(net->rec.lone.v);
  g_free(net->rec.free_classes.v);
  g_free(net->links);
  g_free(net->rec.analytic_free);
  g_free(net->reserved_on);
  g_free(net->link_busy);
  g_free(net->link_class);
  g_ptr_array_free(net->rec.slabs, TRUE);
  g_ptr_array_free(net->rec.class_slabs, TRUE);
  g_free(net->rec.classes.keys);
  g_free(net->rec.classes.vals);
  g_free(net->route.buf);
  g_free(net->rc.seed_classes.v);
  g_free(net->rc.seed_links.v);
  g_free(net->rc.comp_classes.v);
  g_free(net->rc.comp_links.v);
  g_free(net->live_classes.v);
  g_free(net->live_links.v);
  g_free(net->rc.stack.v);
  g_free(net->fill.heap.v);
  g_free(net->log.sorted.v);
  g_free(net->log.dirty_links.v);
  g_free(net->log.changed_links.v);
  g_free(net->log.fresh.v);
  g_free(net->log.sort_tmp.v);
  g_free(net->log.steps.v);
  g_free(net->log.cls.v);
  g_free(net->log.ents.v);
  g_free(net->fill.touched.v);
  g_free(net->rec.finished.v);
  g_free(net->check.load.v);
  g_free(net->check.top.v);
  if (net->obs.nic_counter_names)
    g_strfreev(net->obs.nic_counter_names);
  g_free(net->obs.node_proc);
  g_free(net->obs.node_tracks);
  g_free(net->route.lone_owner);
  g_aligned_free(net->route.memo);
  g_free(net);
}

comm_net_model comm_net_get_model(const comm_net *net) { return net->model; }
const comm_topology *comm_net_topology(const comm_net *net) { return net->topo; }
sim_engine *comm_net_engine(const comm_net *net) { return net->engine; }
uint64_t comm_net_active_flows(const comm_net *net) { return net->active; }
uint64_t comm_net_peak_flows(const comm_net *net) { return net->peak; }
void comm_net_set_flow_observer(comm_net *net, comm_flow_observer_fn fn, void *user)
{
  net->obs.flow_obs = fn;
  net->obs.flow_obs_user = user;
}

uint64_t comm__net_full_fills(const comm_net *net) { return net->rc.full_fills; }
uint64_t comm__net_steps_reused(const comm_net *net) { return net->log.steps_reused; }

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
    f->ev = sim_engine_schedule_in(net->engine, analytic_time(net, src, dst, bytes), flow_cb, f,
                                   EV_INSTANT);
    return;
  }
  route_memo *m = comm__route_get(net, src, dst);
  const uint32_t *route;
  uint32_t n;
  sim_time_ps lat;
  if (m) {
    route = m->links;
    n = m->nhops;
    if (m->lat_bytes != bytes) {
      m->lat_ps = comm__route_latency(net, route, n, bytes);
      m->alone_ps = sim_time_for_work((double)bytes - 0.0, m->Bps);
      m->lat_bytes = bytes;
    }
    lat = m->lat_ps;
  } else {
    route = net->route.buf;
    n = comm__route(net->topo, src, dst, net->route.buf);
    lat = comm__route_latency(net, route, n, bytes);
  }
  f->start_ps = sim_time_add_sat(sim_engine_now(net->engine), lat);
  gboolean free_route = !net->plain && !sim_engine_has_observers(net->engine);
  for (uint32_t i = 0; i < n && free_route; i++)
    free_route = net->link_busy[route[i]] == LINK_FREE;
  /* If every link of the route is free now, the flow is lone: it counts as active from the
   * end of its latency at its bottleneck rate, and needs a single event, its completion. It
   * has no class and no place on its links' class lists, only a mark on each (LINK_LONE,
   * and itself in net->reserved_on), which is all a flow that joins one of them needs to
   * find it: one that comes before that time sends it back to the ordinary path (unlone),
   * one that comes later gives it the class it would have had (place_lone), as does a
   * global fill. In an uncontended pattern this halves the events per transfer, and a lone
   * flow's records are its own and its event. Traced runs take the ordinary path so that
   * counters are stamped when rates really change. */
  sim_engine *e = net->engine;
  if (!free_route) {
    f->ev = sim_engine_schedule_in(e, lat, flow_cb, f, EV_ACTIVATE);
    return;
  }
  f->nlinks = n;
  for (uint32_t h = 0; h < n; h++) {
    net->link_busy[route[h]] = LINK_LONE;
    net->reserved_on[route[h]] = f;
    if (h < LONE_HOPS)
      f->links[h] = route[h];
  }
  f->lone_pos = net->rec.lone.n;
  VEC_PUSH(&net->rec.lone, f);
  f->target = (double)bytes;
  f->seq = net->rec.next_seq++;
  /* class_first_end of the class it would have had: its work, bytes - 0.0 served, at the
   * route's bottleneck rate (the memo's figure for this size). */
  sim_time_ps alone = m ? m->alone_ps : 0;
  if (!m) {
    double r = INFINITY;
    for (uint32_t h = 0; h < n; h++)
      r = MIN(r, link_capacity(net, route[h]));
    alone = sim_time_for_work((double)bytes - 0.0, r);
  }
  f->ev = sim_engine_schedule_at(e, sim_time_add_sat(f->start_ps, alone), flow_cb, f, EV_LONE);
}


const char *comm_net_model_name(comm_net_model model)
{
  return model == COMM_NET_ANALYTIC ? "analytic" : "flow";
}
