/* Routes for the flow network (see net_internal.h for the other parts).
 *
 * Routes are a pure function of the topology and the two endpoints (comm__route), so they may
 * be remembered: a pipeline sends between the same pairs of devices over and over, and
 * computing the route and its bottleneck was a few percent of such a run. The memo is a small
 * two-way table by a hash of the ends, grown while it misses often; each entry also keeps the
 * route's latency and its lone sending time for the last size sent on it. The plain solver
 * (comm_net_set_plain) keeps no memo: every transfer computes its route.
 *
 * Lone routes (comm__lone_*) are sets of routes that share no directed link, for schedules
 * computed without flows (comm/coll/unshared.h): a flow alone on every link of its route
 * takes its route's latency, then its bytes at the route's bottleneck rate, rounded as a
 * reserved flow of net.c is. The plain solver makes no such set (comm__lone_new gives NULL):
 * those collectives then run as flows. */
#include "net_internal.h"

static inline uint32_t route_slot(const comm_net *net, uint64_t key)
{
  return (uint32_t)((key * 0x9E3779B97F4A7C15ULL) >> 40) & net->route.mask;
}

/* The memo of the route src -> dst, its bottleneck known; NULL for a route of more than
 * INLINE_HOPS links, and under the plain solver (then comm__route into net->route.buf). */
route_memo *comm__route_get(comm_net *net, comm_ep src, comm_ep dst)
{
  if (G_UNLIKELY(net->plain))
    return NULL;
  uint64_t key = ((uint64_t)src << 32 | dst) + 1;
  if (G_UNLIKELY(!net->route.memo)) {
    net->route.memo =
        g_aligned_alloc0(ROUTE_MEMOS_MIN, sizeof(route_memo), _Alignof(route_memo));
    net->route.mask = ROUTE_MEMOS_MIN - 1;
  }
  /* Two ways: the route's slot and the next one (routes that share a slot both stay). */
  uint32_t slot = route_slot(net, key);
  route_memo *m = &net->route.memo[slot];
  if (G_LIKELY(m->key == key))
    return m;
  route_memo *m2 = &net->route.memo[(slot + 1) & net->route.mask];
  if (m2->key == key)
    return m2;
  if (m->key != 0)
    m = m2;   /* the new route takes the second way if the first is taken */
  if (G_UNLIKELY(++net->route.misses > 4 * (net->route.mask + 1) &&
                 net->route.mask + 1 < ROUTE_MEMOS_MAX)) {
    /* Four times the slots, the routes kept: fewer of the routes in use share a slot. */
    route_memo *old = net->route.memo;
    uint32_t old_slots = net->route.mask + 1;
    net->route.mask = 4 * old_slots - 1;
    net->route.memo =
        g_aligned_alloc0(net->route.mask + 1, sizeof(route_memo), _Alignof(route_memo));
    for (uint32_t i = 0; i < old_slots; i++) {
      if (!old[i].key)
        continue;
      uint32_t j = route_slot(net, old[i].key);
      if (net->route.memo[j].key)
        j = (j + 1) & net->route.mask;
      net->route.memo[j] = old[i];
    }
    g_aligned_free(old);
    net->route.misses = 0;
    slot = route_slot(net, key);
    m = &net->route.memo[slot];
    if (m->key != 0)
      m = &net->route.memo[(slot + 1) & net->route.mask];
  }
  uint32_t n = comm__route(net->topo, src, dst, net->route.buf);
  if (n > INLINE_HOPS)
    return NULL;
  m->key = key;
  m->nhops = n;
  memcpy(m->links, net->route.buf, n * sizeof *m->links);
  double r = INFINITY;
  for (uint32_t h = 0; h < n; h++)
    r = MIN(r, link_capacity(net, m->links[h]));
  m->Bps = r;
  m->lat_bytes = 0;         /* none: a send of 0 bytes never comes here */
  return m;
}

/* The sum of the latencies of a route's links for a message of `bytes`. */
sim_time_ps comm__route_latency(comm_net *net, const uint32_t *links, uint32_t n,
                                uint64_t bytes)
{
  sim_time_ps lat = 0;
  for (uint32_t i = 0; i < n; i++)
    lat = sim_time_add_sat(lat, comm__link_latency(link_class(net, links[i]), bytes));
  return lat;
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
  if (net->model != COMM_NET_FLOW || net->active > 0 || sim_engine_has_observers(net->engine) ||
      net->plain)
    return NULL;
  g_return_val_if_fail(!net->route.lone_open, NULL);
  if (!net->route.lone_owner)
    net->route.lone_owner = g_new0(uint32_t, net->nlinks);
  net->route.lone_open = TRUE;
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
    l->net->route.lone_owner[h[i]] = 0;
  l->net->route.lone_open = FALSE;
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
  uint32_t n = comm__route(net->topo, src, dst, net->route.buf);
  uint32_t rid = l->routes->len;
  for (uint32_t i = 0; i < n; i++)
    if (net->route.lone_owner[net->route.buf[i]] != 0)
      return UINT32_MAX;
  lone_route r = {l->hops->len, n, INFINITY, 0, 0};
  for (uint32_t i = 0; i < n; i++) {
    net->route.lone_owner[net->route.buf[i]] = rid + 1;
    r.Bps = MIN(r.Bps, link_capacity(net, net->route.buf[i]));
  }
  g_array_append_vals(l->hops, net->route.buf, n);
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

