/* Phase kinds: the building blocks of every collective algorithm.
 *
 * Each kind answers, for a rank and a step of the phase, whom the rank sends how many bytes,
 * how many messages it waits for and how many bytes it then reduces; and it gives the phase's
 * closed-form time on an idle network. Closed forms are alpha-beta-gamma sums per step: the
 * step's time is that of its slowest transfer (route latency plus bytes over the route's
 * bottleneck bandwidth, exactly comm_topology_p2p_time) plus the reduction of the step's bytes
 * at the caller's rate. On a network where every pair of a step sees the same route this is the
 * critical path of the schedule, so the flow model agrees with it when nothing is contended. */
#include "coll_internal.h"
#include "comm_internal.h"

#include <math.h>
#include <string.h>

/* ---- Shared helpers ------------------------------------------------------------------------ */

uint64_t coll__seg(uint64_t bytes, uint64_t parts, uint64_t i)
{
  g_assert(parts > 0 && i < parts);
  return bytes / parts + (i < bytes % parts ? 1 : 0);
}

/* Sum of segments [first, first + count) of `bytes` split `parts` ways (no wrap-around). */
static uint64_t seg_sum(uint64_t bytes, uint64_t parts, uint64_t first, uint64_t count)
{
  uint64_t rem = bytes % parts;
  uint64_t big = first < rem ? MIN(first + count, rem) - first : 0;
  return count * (bytes / parts) + big;
}

uint32_t coll__pos(const coll__phase *ph, uint32_t rank)
{
  uint32_t q = ph->stride == 1 ? rank : rank / ph->stride;
  return q < ph->m ? q : q % ph->m;
}

uint32_t coll__member(const coll__phase *ph, uint32_t rank, uint32_t pos)
{
  return rank - coll__pos(ph, rank) * ph->stride + (pos % ph->m) * ph->stride;
}

uint64_t coll__phase_bytes(const coll__phase *ph, uint32_t rank)
{
  if (ph->seg_of == 0)
    return ph->bytes;
  return coll__seg(ph->bytes, ph->seg_of, (rank % ph->seg_of + 1) % ph->seg_of);
}

sim_time_ps coll__p2p(const comm_coll_group *g, uint32_t a, uint32_t b, uint64_t bytes)
{
  return comm_topology_p2p_time(g->topo, g->eps[a], g->eps[b], bytes);
}

static uint32_t lat_slot(uint64_t key, uint32_t mask)
{
  return (uint32_t)((key * 0x9E3779B97F4A7C15ULL) >> 32) & mask;
}

/* Groups up to this many members keep their pairs' latencies: the memo of a larger one outgrows
 * the caches, and a lookup that misses them costs more than the route (a folded ring of 10^6
 * members took 1.5 times as long with it). */
#define COLL_LAT_MEMO_MEMBERS 16384

/* Files a pair's latency in a group's memo, which has an empty slot. */
static void lat_put(comm_coll_group *memo, uint64_t key, sim_time_ps lat)
{
  uint32_t i = lat_slot(key, memo->lat_mask);
  while (memo->lat_key[i] != UINT64_MAX)
    i = (i + 1) & memo->lat_mask;
  memo->lat_key[i] = key;
  memo->lat_ps[i] = lat;
}

/* The latency of a member pair's route is the topology's answer for a 0-byte message; it is
 * worked out once per pair and group (see comm_coll_group: lat_key). */
sim_time_ps coll__latency(const comm_coll_group *g, uint32_t a, uint32_t b)
{
  if (g->n > COLL_LAT_MEMO_MEMBERS)
    return comm_topology_p2p_time(g->topo, g->eps[a], g->eps[b], 0);
  comm_coll_group *memo = (comm_coll_group *)g;
  uint64_t key = (uint64_t)a << 32 | b;
  if (memo->lat_key) {
    for (uint32_t i = lat_slot(key, memo->lat_mask);; i = (i + 1) & memo->lat_mask) {
      if (memo->lat_key[i] == key)
        return memo->lat_ps[i];
      if (memo->lat_key[i] == UINT64_MAX)
        break;
    }
  }
  sim_time_ps lat = comm_topology_p2p_time(g->topo, g->eps[a], g->eps[b], 0);
  if (!memo->lat_key || 2 * (memo->lat_used + 1) > memo->lat_mask + 1) {
    uint32_t old_slots = memo->lat_key ? memo->lat_mask + 1 : 0;
    uint64_t *old_key = memo->lat_key;
    sim_time_ps *old_ps = memo->lat_ps;
    uint32_t slots = old_slots ? 2 * old_slots : 64;
    memo->lat_key = g_new(uint64_t, slots);
    memo->lat_ps = g_new(sim_time_ps, slots);
    memset(memo->lat_key, 0xff, slots * sizeof *memo->lat_key);
    memo->lat_mask = slots - 1;
    for (uint32_t j = 0; j < old_slots; j++)
      if (old_key[j] != UINT64_MAX)
        lat_put(memo, old_key[j], old_ps[j]);
    g_free(old_key);
    g_free(old_ps);
  }
  lat_put(memo, key, lat);
  memo->lat_used++;
  return lat;
}

/* Dense numbers (0, 1, ... in order of first use) for the links a collective's flows cross:
 * open addressing on the link id, doubled when half full. */
typedef struct {
  gsize cap;
  uint32_t *link, *local;   /* slot -> link id (UINT32_MAX: empty), its dense number */
  GArray *ids;              /* dense number -> link id */
} link_numbers;

static void link_numbers_init(link_numbers *ln, gsize cap)
{
  ln->cap = cap;
  ln->link = g_new(uint32_t, cap);
  ln->local = g_new(uint32_t, cap);
  memset(ln->link, 0xff, cap * sizeof *ln->link);
}

static uint32_t link_number(link_numbers *ln, uint32_t id)
{
  if (2 * (ln->ids->len + 1) > ln->cap) {
    link_numbers big = {.ids = ln->ids};
    link_numbers_init(&big, 2 * ln->cap);
    for (guint j = 0; j < ln->ids->len; j++) {
      uint32_t k = g_array_index(ln->ids, uint32_t, j);
      gsize h = ((gsize)k * 2654435761u) & (big.cap - 1);
      while (big.link[h] != UINT32_MAX)
        h = (h + 1) & (big.cap - 1);
      big.link[h] = k;
      big.local[h] = j;
    }
    g_free(ln->link);
    g_free(ln->local);
    *ln = big;
  }
  gsize h = ((gsize)id * 2654435761u) & (ln->cap - 1);
  while (ln->link[h] != UINT32_MAX && ln->link[h] != id)
    h = (h + 1) & (ln->cap - 1);
  if (ln->link[h] == UINT32_MAX) {
    ln->link[h] = id;
    ln->local[h] = ln->ids->len;
    g_array_append_val(ln->ids, id);
  }
  return ln->local[h];
}

struct coll__flow_routes {
  uint32_t nf;
  uint32_t *first;                  /* flow -> its first entry in hop; nf + 1 */
  uint32_t *hop;                    /* the flows' links, densely numbered */
  const comm__link_class **cls;     /* dense link -> its class */
  double *share;                    /* flow -> the least share of its links, bytes/s */
  sim_time_ps *lat;                 /* flow -> its route's latency for large messages */
  uint64_t *small;                  /* flow -> the largest small_bytes of its links, bytes:
                                     * messages of 1 .. small - 1 bytes pay some small latency */
};

coll__flow_routes *coll__flow_routes_new(const comm_coll_group *g, const coll__flow *f,
                                         uint32_t nf)
{
  const comm_topology *topo = g->topo;
  uint32_t rmax = comm__route_max(topo);
  /* Every flow's route once, its links numbered densely: the flows of a collective on
   * thousands of ranks cross few links, many times each. */
  coll__flow_routes *r = g_new0(coll__flow_routes, 1);
  r->nf = nf;
  r->first = g_new(uint32_t, (gsize)nf + 1);
  GArray *local = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  g_autofree uint32_t *buf = g_new(uint32_t, rmax + 1);
  link_numbers ln = {.ids = g_array_new(FALSE, FALSE, sizeof(uint32_t))};
  link_numbers_init(&ln, 1024);
  /* Where the topology's link ids are few next to the routes' links, they index a table of
   * dense numbers directly (the probing above costs a cache miss a link on a large fat tree). */
  uint64_t nlinks = comm_topology_links(topo);
  g_autofree uint32_t *direct = NULL;
  if (nlinks <= 4 * ((uint64_t)nf * rmax + 1024)) {
    direct = g_new(uint32_t, nlinks + 1);
    memset(direct, 0xff, (nlinks + 1) * sizeof *direct);
  }
  for (uint32_t i = 0; i < nf; i++) {
    r->first[i] = local->len;
    uint32_t len = comm__route(topo, g->eps[f[i].src], g->eps[f[i].dst], buf);
    for (uint32_t k = 0; k < len; k++) {
      uint32_t j;
      if (direct) {
        if (direct[buf[k]] == UINT32_MAX) {
          direct[buf[k]] = ln.ids->len;
          g_array_append_val(ln.ids, buf[k]);
        }
        j = direct[buf[k]];
      } else {
        j = link_number(&ln, buf[k]);
      }
      g_array_append_val(local, j);
    }
  }
  r->first[nf] = local->len;
  r->hop = (uint32_t *)(void *)g_array_free(local, FALSE);
  /* Flows crossing each link, each link's equal share, and per flow what does not depend on
   * its size. */
  guint nl = ln.ids->len;
  g_autofree uint32_t *load = g_new0(uint32_t, nl + 1);
  for (uint32_t j = 0; j < r->first[nf]; j++)
    load[r->hop[j]]++;
  r->cls = g_new(const comm__link_class *, nl + 1);
  g_autofree double *link_share = g_new(double, nl + 1);
  for (guint d = 0; d < nl; d++) {
    r->cls[d] = comm__link_class_of(topo, g_array_index(ln.ids, uint32_t, d));
    link_share[d] = r->cls[d]->Bps / load[d];
  }
  r->share = g_new(double, (gsize)nf + 1);
  r->lat = g_new(sim_time_ps, (gsize)nf + 1);
  r->small = g_new(uint64_t, (gsize)nf + 1);
  for (uint32_t i = 0; i < nf; i++) {
    double sh = INFINITY;
    sim_time_ps l = 0;
    uint64_t small = 0;
    for (uint32_t j = r->first[i]; j < r->first[i + 1]; j++) {
      const comm__link_class *c = r->cls[r->hop[j]];
      sh = MIN(sh, link_share[r->hop[j]]);
      l = sim_time_add_sat(l, comm__link_latency(c, 0));
      small = MAX(small, c->small_bytes);
    }
    r->share[i] = sh;
    r->lat[i] = l;
    r->small[i] = small;
  }
  g_free(ln.link);
  g_free(ln.local);
  g_array_unref(ln.ids);
  return r;
}

void coll__flow_routes_shares(const coll__flow_routes *r, const coll__flow *f, double *share,
                              sim_time_ps *lat)
{
  for (uint32_t i = 0; i < r->nf; i++) {
    share[i] = r->share[i];
    if (f[i].bytes == 0 || f[i].bytes >= r->small[i]) {
      lat[i] = r->lat[i];   /* every link at its line latency */
      continue;
    }
    sim_time_ps l = 0;
    for (uint32_t j = r->first[i]; j < r->first[i + 1]; j++)
      l = sim_time_add_sat(l, comm__link_latency(r->cls[r->hop[j]], f[i].bytes));
    lat[i] = l;
  }
}

void coll__flow_routes_free(coll__flow_routes *r)
{
  if (!r)
    return;
  g_free(r->first);
  g_free(r->hop);
  g_free(r->cls);
  g_free(r->share);
  g_free(r->lat);
  g_free(r->small);
  g_free(r);
}

void coll__flow_shares(const comm_coll_group *g, const coll__flow *f, uint32_t nf, double *share,
                       sim_time_ps *lat)
{
  coll__flow_routes *r = coll__flow_routes_new(g, f, nf);
  coll__flow_routes_shares(r, f, share, lat);
  coll__flow_routes_free(r);
}

/* ---- The busiest link ---------------------------------------------------------------------- */

/* A step's transfers all run at once, so the step lasts at least as long as its busiest link
 * takes to carry every byte routed over it, plus the longest route latency: the bound of
 * alltoall through a node's NICs, of recursive doubling and halving when a node's ranks all
 * cross its one NIC in the same step, of subgroup rings side by side on one NIC, and of
 * every rank sending to one root. Seconds (busiest) and picoseconds (latency). */
static void step_link_bound(const coll__phase *ph, uint32_t s, coll__xfer *scratch,
                            GArray *flows, double *busiest_s, sim_time_ps *latency_ps)
{
  const comm_coll_group *g = ph->group;
  g_array_set_size(flows, 0);
  for (uint32_t r = 0; r < g->n; r++) {
    coll__step st = {.send = scratch};
    ph->kind->step(ph, r, s, &st);
    for (uint32_t i = 0; i < st.nsend; i++)
      if (st.send[i].bytes > 0) {
        coll__flow f = {r, st.send[i].peer, st.send[i].bytes};
        g_array_append_val(flows, f);
      }
  }
  *busiest_s = 0;
  *latency_ps = 0;
  if (flows->len == 0)
    return;
  const coll__flow *f = (const coll__flow *)(void *)flows->data;
  coll__flow_routes *r = coll__flow_routes_new(g, f, flows->len);
  uint32_t nl = 0;
  for (uint32_t j = 0; j < r->first[r->nf]; j++)
    nl = MAX(nl, r->hop[j] + 1);
  g_autofree double *load = g_new0(double, (gsize)nl + 1);
  for (uint32_t i = 0; i < r->nf; i++) {
    for (uint32_t j = r->first[i]; j < r->first[i + 1]; j++)
      load[r->hop[j]] += (double)f[i].bytes;
    *latency_ps = MAX(*latency_ps, r->lat[i]);
  }
  for (uint32_t d = 0; d < nl; d++)
    *busiest_s = MAX(*busiest_s, load[d] / r->cls[d]->Bps);
  coll__flow_routes_free(r);
}

/* Beyond this many transfers in one phase the bound is not worked out (its routes would cost
 * more than the phase's own closed form is worth); docs/network.md says where that bites. */
#define LINK_BOUND_MAX_TRANSFERS (1u << 20)

sim_time_ps coll__phase_link_bound(const coll__phase *ph)
{
  const comm_coll_group *g = ph->group;
  /* A ring over the whole group has one transfer per hop: nothing shares a link that its own
   * closed form does not see. */
  if ((ph->kind == &coll__ring_rs || ph->kind == &coll__ring_ag) && ph->m == g->n)
    return 0;
  uint32_t steps = ph->kind->steps(ph);
  if (steps == 0 || (uint64_t)steps * g->n * MIN(ph->m, g->n) > LINK_BOUND_MAX_TRANSFERS)
    return 0;
  g_autofree coll__xfer *scratch = g_new(coll__xfer, g->n);
  g_autoptr(GArray) flows = g_array_new(FALSE, FALSE, sizeof(coll__flow));
  double total_s = 0;
  sim_time_ps total_lat = 0;
  for (uint32_t s = 0; s < steps; s++) {
    double b;
    sim_time_ps l;
    step_link_bound(ph, s, scratch, flows, &b, &l);
    total_s += b;
    total_lat = sim_time_add_sat(total_lat, l);
  }
  return sim_time_add_sat(sim_time_from_s(total_s), total_lat);
}

sim_time_ps coll__reduce_time(uint64_t bytes, double reduce_Bps)
{
  if (bytes == 0 || reduce_Bps <= 0)
    return 0;
  return sim_time_for_work((double)bytes, reduce_Bps);
}

sim_time_ps coll__step_delay(const coll__step *st, const coll__cost *cost)
{
  sim_time_ps d = sim_time_add_sat(st->extra_ps, coll__reduce_time(st->reduce_bytes,
                                                                   cost->reduce_Bps));
  if ((st->nsend > 0 || st->nrecv > 0) && cost->step_ps > 0) {
    sim_time_ps sw;
    if (!sim_time_mul(cost->step_ps, st->folded ? st->folded : 1, &sw))
      sw = SIM_TIME_MAX;
    d = sim_time_add_sat(d, sw);
  }
  return d;
}

static uint32_t log2_ceil(uint32_t m)
{
  uint32_t l = 0;
  while ((UINT64_C(1) << l) < m)
    l++;
  return l;
}

static uint32_t pow2_floor(uint32_t m)
{
  uint32_t p = 1;
  while ((uint64_t)p * 2 <= m)
    p *= 2;
  return p;
}

static void add_send(coll__step *out, uint32_t peer, uint64_t bytes)
{
  out->send[out->nsend].peer = peer;
  out->send[out->nsend].bytes = bytes;
  out->nsend++;
}

/* Closed form of a short step schedule (logarithmic step counts), evaluated step by step over
 * the ranks: a rank's step ends when its slowest send and its last arrival are in (each
 * alpha + bytes x beta of its route, started once sender and receiver have both entered the
 * step), plus the reduction of the step's bytes (gamma). This is the schedule's critical path
 * on an idle network, so it is exact also where ranks idle through a step (binomial trees and
 * recursive doubling on groups that are not powers of two). O(steps x n) arithmetic, no
 * engine events. */
static sim_time_ps generic_analytic(const coll__phase *ph, const coll__cost *cost)
{
  const comm_coll_group *g = ph->group;
  uint32_t steps = ph->kind->steps(ph), n = g->n;
  g_autofree coll__xfer *scratch = g_new(coll__xfer, n);
  g_autofree sim_time_ps *ready = g_new0(sim_time_ps, n);
  g_autofree sim_time_ps *finish = g_new0(sim_time_ps, n);
  g_autofree sim_time_ps *delay = g_new0(sim_time_ps, n);
  for (uint32_t s = 0; s < steps; s++) {
    memcpy(finish, ready, n * sizeof *finish);
    for (uint32_t r = 0; r < n; r++) {
      coll__step st = {.send = scratch};
      ph->kind->step(ph, r, s, &st);
      for (uint32_t i = 0; i < st.nsend; i++) {
        uint32_t dst = st.send[i].peer;
        sim_time_ps at = sim_time_add_sat(MAX(ready[r], ready[dst]),
                                          coll__p2p(g, r, dst, st.send[i].bytes));
        finish[r] = MAX(finish[r], at);
        finish[dst] = MAX(finish[dst], at);
      }
      delay[r] = coll__step_delay(&st, cost);
    }
    for (uint32_t r = 0; r < n; r++)
      ready[r] = sim_time_add_sat(finish[r], delay[r]);
  }
  sim_time_ps end = 0;
  for (uint32_t r = 0; r < n; r++)
    end = MAX(end, ready[r]);
  return end;
}

/* ---- Rings --------------------------------------------------------------------------------- */

static uint32_t ring_steps(const coll__phase *ph)
{
  if (ph->m <= 1)
    return 0;
  return ph->pipelined ? 1 : ph->m - 1;
}

/* The slower of rank r's two ring routes (from the one before it, to the one after). */
static sim_time_ps ring_hop_latency(const coll__phase *ph, uint32_t r)
{
  uint32_t p = coll__pos(ph, r);
  uint32_t next = coll__member(ph, r, p + 1), prev = coll__member(ph, r, p + ph->m - 1);
  return MAX(coll__latency(ph->group, prev, r), coll__latency(ph->group, r, next));
}

/* Latency of the ring steps folded into one pipelined flow: every step after the first pays
 * the slower of the rank's two ring routes once more. The ring of the whole group keeps its
 * ranks' figures with the group (comm_coll_group: ring_lat_ps), worked out for all at once:
 * every rank asks. */
static sim_time_ps ring_extra(const coll__phase *ph, uint32_t r)
{
  const comm_coll_group *g = ph->group;
  sim_time_ps lat;
  if (ph->m == g->n && ph->stride == 1 && g->n <= COLL_LAT_MEMO_MEMBERS) {
    comm_coll_group *memo = (comm_coll_group *)g;
    if (memo->ring_lat_ps == NULL) {
      memo->ring_lat_ps = g_new(sim_time_ps, g->n);
      for (uint32_t k = 0; k < g->n; k++)
        memo->ring_lat_ps[k] = ring_hop_latency(ph, k);
    }
    lat = memo->ring_lat_ps[r];
  } else {
    lat = ring_hop_latency(ph, r);
  }
  sim_time_ps extra = 0;
  if (!sim_time_mul(lat, (int64_t)ph->m - 2, &extra))
    extra = SIM_TIME_MAX;
  return extra;
}

/* coll__member(ph, r, p + 1) for rank r at position p: the next rank of its ring. */
static inline uint32_t ring_next(const coll__phase *ph, uint32_t r, uint32_t p)
{
  return p + 1 < ph->m ? r + ph->stride : r - p * ph->stride;
}

/* Reduce-scatter: at step s rank p sends segment p - s to p + 1 and reduces segment p - s - 1
 * from p - 1; after m - 1 steps it owns the reduced segment p + 1. */
static void ring_rs_step(const coll__phase *ph, uint32_t r, uint32_t s, coll__step *out)
{
  uint32_t m = ph->m, p = coll__pos(ph, r);
  uint64_t b = coll__phase_bytes(ph, r);
  uint32_t next = ring_next(ph, r, p);
  out->nrecv = 1;
  if (ph->pipelined) {
    add_send(out, next, b - coll__seg(b, m, (p + 1) % m));
    out->reduce_bytes = b - coll__seg(b, m, p);
    out->extra_ps = ring_extra(ph, r);
    out->folded = m - 1;
    return;
  }
  if (s < m) {
    /* (p + m - s) % m and (p + 2m - s - 1) % m without dividing: every rank of a step-by-step
     * ring comes here at every step. */
    uint32_t send = p + m - s, red = p + 2 * m - s - 1;
    send -= send >= m ? m : 0;
    red -= red >= m ? m : 0;
    red -= red >= m ? m : 0;
    add_send(out, next, coll__seg(b, m, send));
    out->reduce_bytes = coll__seg(b, m, red);
    return;
  }
  add_send(out, next, coll__seg(b, m, (p + m - s % m) % m));
  out->reduce_bytes = coll__seg(b, m, (p + 2 * m - s - 1) % m);
}

/* Allgather: rank p starts owning segment p + offset; at step s it forwards segment
 * p + offset - s and receives segment p + offset - s - 1. */
static void ring_ag_step(const coll__phase *ph, uint32_t r, uint32_t s, coll__step *out)
{
  uint32_t m = ph->m, p = coll__pos(ph, r);
  uint64_t b = coll__phase_bytes(ph, r);
  uint32_t next = ring_next(ph, r, p);
  uint32_t own = (p + ph->offset) % m;
  out->nrecv = 1;
  if (ph->pipelined) {
    add_send(out, next, b - coll__seg(b, m, (own + 1) % m));
    out->extra_ps = ring_extra(ph, r);
    out->folded = m - 1;
    return;
  }
  if (s < m) {   /* as in ring_rs_step */
    uint32_t send = own + m - s;
    send -= send >= m ? m : 0;
    add_send(out, next, coll__seg(b, m, send));
    return;
  }
  add_send(out, next, coll__seg(b, m, (own + m - s % m) % m));
}

/* (m - 1) steps of the slowest ring hop carrying the largest segment. */
static sim_time_ps ring_analytic(const coll__phase *ph, const coll__cost *cost, gboolean reduce)
{
  const comm_coll_group *g = ph->group;
  if (ph->m <= 1)
    return 0;
  sim_time_ps worst = 0;
  uint64_t seg_max = 0;
  for (uint32_t r = 0; r < g->n; r++) {
    uint64_t seg = coll__seg(coll__phase_bytes(ph, r), ph->m, 0);
    uint32_t next = coll__member(ph, r, coll__pos(ph, r) + 1);
    worst = MAX(worst, coll__p2p(g, r, next, seg));
    seg_max = MAX(seg_max, seg);
  }
  sim_time_ps step = sim_time_add_sat(worst, reduce ? coll__reduce_time(seg_max,
                                                                         cost->reduce_Bps) : 0);
  step = sim_time_add_sat(step, cost->step_ps);
  sim_time_ps total;
  if (!sim_time_mul(step, (int64_t)ph->m - 1, &total))
    total = SIM_TIME_MAX;
  return total;
}

static sim_time_ps ring_rs_analytic(const coll__phase *ph, const coll__cost *cost)
{
  return ring_analytic(ph, cost, TRUE);
}

static sim_time_ps ring_ag_analytic(const coll__phase *ph, const coll__cost *cost)
{
  return ring_analytic(ph, cost, FALSE);
}

const coll__phase_kind coll__ring_rs = {"ring-reduce-scatter", ring_steps, ring_rs_step,
                                        ring_rs_analytic};
const coll__phase_kind coll__ring_ag = {"ring-allgather", ring_steps, ring_ag_step,
                                        ring_ag_analytic};

/* ---- Binomial trees ------------------------------------------------------------------------ */

static uint32_t binomial_steps(const coll__phase *ph)
{
  return log2_ceil(ph->m);
}

/* Reduce to the root: at step k, ranks at relative position 2^k (mod 2^(k+1)) send their
 * partial sums to position - 2^k, which reduces them. */
static void binomial_reduce_step(const coll__phase *ph, uint32_t r, uint32_t k, coll__step *out)
{
  uint32_t m = ph->m;
  uint32_t q = (coll__pos(ph, r) + m - ph->root) % m;
  uint64_t bit = UINT64_C(1) << k, b = coll__phase_bytes(ph, r);
  if (q % (2 * bit) == bit) {
    add_send(out, coll__member(ph, r, (uint32_t)((q - bit + ph->root) % m)), b);
  } else if (q % (2 * bit) == 0 && q + bit < m) {
    out->nrecv = 1;
    out->reduce_bytes = b;
  }
}

/* Broadcast from the root, halving the distance each step. */
static void binomial_bcast_step(const coll__phase *ph, uint32_t r, uint32_t k, coll__step *out)
{
  uint32_t m = ph->m, steps = log2_ceil(m);
  uint32_t q = (coll__pos(ph, r) + m - ph->root) % m;
  uint64_t d = UINT64_C(1) << (steps - 1 - k), b = coll__phase_bytes(ph, r);
  if (q % (2 * d) == 0 && q + d < m)
    add_send(out, coll__member(ph, r, (uint32_t)((q + d + ph->root) % m)), b);
  else if (q % (2 * d) == d)
    out->nrecv = 1;
}

const coll__phase_kind coll__binomial_reduce = {"binomial-reduce", binomial_steps,
                                                binomial_reduce_step, generic_analytic};
const coll__phase_kind coll__binomial_bcast = {"binomial-broadcast", binomial_steps,
                                               binomial_bcast_step, generic_analytic};

/* ---- Recursive doubling and halving (MPICH's handling of non-powers of two) --------------- */

/* With m = p2 + extra (p2 the largest power of two <= m), the first 2*extra positions pair up:
 * even ones fold their data into the odd ones, which take part as virtual rank q/2; positions
 * from 2*extra on are virtual rank q - extra. */
static uint32_t rd_extra(const coll__phase *ph)
{
  return ph->m - pow2_floor(ph->m);
}

static gboolean rd_virtual(const coll__phase *ph, uint32_t q, uint32_t *v)
{
  uint32_t extra = rd_extra(ph);
  if (q < 2 * extra) {
    if (q % 2 == 0)
      return FALSE;
    *v = q / 2;
  } else {
    *v = q - extra;
  }
  return TRUE;
}

static uint32_t rd_real(const coll__phase *ph, uint32_t v)
{
  uint32_t extra = rd_extra(ph);
  return v < extra ? 2 * v + 1 : v + extra;
}

static uint32_t fold_steps(const coll__phase *ph)
{
  return rd_extra(ph) > 0 ? 1 : 0;
}

static void fold_step(const coll__phase *ph, uint32_t r, uint32_t s, coll__step *out)
{
  uint32_t q = coll__pos(ph, r);
  if (q >= 2 * rd_extra(ph))
    return;
  if (q % 2 == 0) {
    add_send(out, coll__member(ph, r, q + 1), coll__phase_bytes(ph, r));
  } else {
    out->nrecv = 1;
    out->reduce_bytes = coll__phase_bytes(ph, r);
  }
}

static void unfold_step(const coll__phase *ph, uint32_t r, uint32_t s, coll__step *out)
{
  uint32_t q = coll__pos(ph, r);
  if (q >= 2 * rd_extra(ph))
    return;
  if (q % 2 == 1)
    add_send(out, coll__member(ph, r, q - 1), coll__phase_bytes(ph, r));
  else
    out->nrecv = 1;
}

static uint32_t rd_steps(const coll__phase *ph)
{
  return log2_ceil(pow2_floor(ph->m));
}

/* Exchange with the partner at distance 2^s (virtual ranks) and reduce. `bytes` decides how
 * much moves at step s; `dist` which partner. */
static void rd_pair_step(const coll__phase *ph, uint32_t r, uint32_t dist, uint64_t bytes,
                         gboolean reduce, coll__step *out)
{
  uint32_t v;
  if (!rd_virtual(ph, coll__pos(ph, r), &v))
    return;
  add_send(out, coll__member(ph, r, rd_real(ph, v ^ dist)), bytes);
  out->nrecv = 1;
  out->reduce_bytes = reduce ? bytes : 0;
}

static void rd_exchange_step(const coll__phase *ph, uint32_t r, uint32_t s, coll__step *out)
{
  rd_pair_step(ph, r, 1u << s, coll__phase_bytes(ph, r), TRUE, out);
}

/* Rabenseifner's reduce-scatter by recursive halving: distance 2^s, half of what is left. */
static uint64_t halving_bytes(uint64_t b, uint32_t s)
{
  uint64_t d = UINT64_C(1) << (s + 1);
  return (b + d - 1) / d;
}

static void halving_step(const coll__phase *ph, uint32_t r, uint32_t s, coll__step *out)
{
  rd_pair_step(ph, r, 1u << s, halving_bytes(coll__phase_bytes(ph, r), s), TRUE, out);
}

/* The allgather that undoes it: distances and sizes in reverse order. */
static void doubling_step(const coll__phase *ph, uint32_t r, uint32_t s, coll__step *out)
{
  uint32_t steps = rd_steps(ph);
  rd_pair_step(ph, r, 1u << (steps - 1 - s),
               halving_bytes(coll__phase_bytes(ph, r), steps - 1 - s), FALSE, out);
}

const coll__phase_kind coll__rd_fold = {"fold-extra", fold_steps, fold_step, generic_analytic};
const coll__phase_kind coll__rd_unfold = {"unfold-extra", fold_steps, unfold_step,
                                          generic_analytic};
const coll__phase_kind coll__rd_exchange = {"recursive-doubling", rd_steps, rd_exchange_step,
                                            generic_analytic};
const coll__phase_kind coll__halving = {"recursive-halving", rd_steps, halving_step,
                                        generic_analytic};
const coll__phase_kind coll__doubling = {"recursive-doubling-allgather", rd_steps, doubling_step,
                                         generic_analytic};

/* Allgather by recursive doubling (m a power of two): at step s a rank swaps its block of
 * 2^s segments with the partner at distance 2^s. */
static void rd_allgather_step(const coll__phase *ph, uint32_t r, uint32_t s, coll__step *out)
{
  uint32_t m = ph->m, q = coll__pos(ph, r);
  uint64_t b = coll__phase_bytes(ph, r), count = UINT64_C(1) << s;
  uint64_t mine = ((uint64_t)q >> s) << s;
  add_send(out, coll__member(ph, r, q ^ (1u << s)), seg_sum(b, m, mine, count));
  out->nrecv = 1;
}

const coll__phase_kind coll__rd_allgather = {"recursive-doubling-allgather", rd_steps,
                                             rd_allgather_step, generic_analytic};

/* ---- One to all (Paleo) -------------------------------------------------------------------- */

static uint32_t one_step(const coll__phase *ph)
{
  return ph->m > 1 ? 1 : 0;
}

/* Everyone sends its buffer to the root, which reduces the m - 1 buffers it received. */
static void gather_root_step(const coll__phase *ph, uint32_t r, uint32_t s, coll__step *out)
{
  uint32_t q = coll__pos(ph, r);
  uint64_t b = coll__phase_bytes(ph, r);
  if (q != ph->root) {
    add_send(out, coll__member(ph, r, ph->root), b);
  } else {
    out->nrecv = ph->m - 1;
    out->reduce_bytes = b * (ph->m - 1);
  }
}

static void scatter_root_step(const coll__phase *ph, uint32_t r, uint32_t s, coll__step *out)
{
  uint32_t q = coll__pos(ph, r);
  uint64_t b = coll__phase_bytes(ph, r);
  if (q == ph->root) {
    for (uint32_t i = 0; i < ph->m; i++)
      if (i != q)
        add_send(out, coll__member(ph, r, i), b);
  } else {
    out->nrecv = 1;
  }
}

/* Every rank sends to (or receives from) the root at once: the step lasts as long as the
 * busiest link of their routes takes to carry all the bytes routed over it (the root's own
 * links when its m - 1 transfers all cross them; the slowest member's route when that is
 * slower), plus the longest latency, the software step and the root's reduction of the
 * (m - 1) buffers. */
static sim_time_ps root_analytic(const coll__phase *ph, const coll__cost *cost, gboolean gather)
{
  const comm_coll_group *g = ph->group;
  if (ph->m <= 1)
    return 0;
  sim_time_ps worst = 0;
  uint64_t reduce = 0;
  for (uint32_t r = 0; r < g->n; r++) {
    uint32_t q = coll__pos(ph, r);
    if (q == ph->root)
      continue;
    uint32_t root = coll__member(ph, r, ph->root);
    uint64_t b = coll__phase_bytes(ph, r);
    worst = MAX(worst, gather ? coll__p2p(g, r, root, b) : coll__p2p(g, root, r, b));
    reduce = MAX(reduce, b * (ph->m - 1));
  }
  g_autofree coll__xfer *scratch = g_new(coll__xfer, g->n);
  g_autoptr(GArray) flows = g_array_new(FALSE, FALSE, sizeof(coll__flow));
  double busiest;
  sim_time_ps lat;
  step_link_bound(ph, 0, scratch, flows, &busiest, &lat);
  worst = MAX(worst, sim_time_add_sat(sim_time_from_s(busiest), lat));
  worst = sim_time_add_sat(worst, cost->step_ps);
  return sim_time_add_sat(worst, gather ? coll__reduce_time(reduce, cost->reduce_Bps) : 0);
}

static sim_time_ps gather_root_analytic(const coll__phase *ph, const coll__cost *cost)
{
  return root_analytic(ph, cost, TRUE);
}

static sim_time_ps scatter_root_analytic(const coll__phase *ph, const coll__cost *cost)
{
  return root_analytic(ph, cost, FALSE);
}

const coll__phase_kind coll__gather_root = {"gather-to-root", one_step, gather_root_step,
                                            gather_root_analytic};
const coll__phase_kind coll__scatter_root = {"send-from-root", one_step, scatter_root_step,
                                             scatter_root_analytic};

/* ---- Pipelined chains (NCCL's ring broadcast and reduce) ----------------------------------- */

static uint32_t chain_steps(const coll__phase *ph)
{
  return ph->m > 1 ? ph->m - 2 + ph->chunks : 0;
}

/* Position q (from the root) forwards chunk t - q to q + 1 at step t. */
static void chain_bcast_step(const coll__phase *ph, uint32_t r, uint32_t t, coll__step *out)
{
  uint32_t m = ph->m, q = (coll__pos(ph, r) + m - ph->root) % m;
  uint64_t b = coll__phase_bytes(ph, r);
  if (q + 1 < m && t >= q && t - q < ph->chunks)
    add_send(out, coll__member(ph, r, q + 1 + ph->root), coll__seg(b, ph->chunks, t - q));
  if (q >= 1 && t + 1 >= q && t + 1 - q < ph->chunks)
    out->nrecv = 1;
}

/* Position q, at distance e = m - 1 - q from the far end, sends chunk t - e towards the root
 * at step t; its successor's chunk t - e + 1 arrives in the same step and is reduced. */
static void chain_reduce_step(const coll__phase *ph, uint32_t r, uint32_t t, coll__step *out)
{
  uint32_t m = ph->m, q = (coll__pos(ph, r) + m - ph->root) % m, e = m - 1 - q;
  uint64_t b = coll__phase_bytes(ph, r);
  if (q >= 1 && t >= e && t - e < ph->chunks)
    add_send(out, coll__member(ph, r, q - 1 + ph->root), coll__seg(b, ph->chunks, t - e));
  if (q + 1 < m && t + 1 >= e && t + 1 - e < ph->chunks) {
    out->nrecv = 1;
    out->reduce_bytes = coll__seg(b, ph->chunks, t + 1 - e);
  }
}

/* A pipeline of hops with different step times: the first chunk crosses every hop (the sum
 * of the hops' steps), the other C - 1 follow at the slowest hop's pace. With equal hops this
 * is (m - 2 + C) steps; on a chain whose one network hop is slow, the fast NVLink hops are not
 * charged the network's step (the executor's ranks each move at their own pace). Per subgroup,
 * the slowest subgroup's. */
static sim_time_ps chain_analytic(const coll__phase *ph, const coll__cost *cost, gboolean reduce)
{
  const comm_coll_group *g = ph->group;
  if (ph->m <= 1)
    return 0;
  g_autofree sim_time_ps *sum = g_new0(sim_time_ps, g->n);
  g_autofree sim_time_ps *worst = g_new0(sim_time_ps, g->n);
  for (uint32_t r = 0; r < g->n; r++) {
    uint32_t q = (coll__pos(ph, r) + ph->m - ph->root) % ph->m;
    if (q + 1 >= ph->m)
      continue;
    uint64_t chunk = coll__seg(coll__phase_bytes(ph, r), ph->chunks, 0);
    uint32_t next = coll__member(ph, r, q + 1 + ph->root);
    sim_time_ps hop = reduce ? coll__p2p(g, next, r, chunk) : coll__p2p(g, r, next, chunk);
    hop = sim_time_add_sat(hop, reduce ? coll__reduce_time(chunk, cost->reduce_Bps) : 0);
    hop = sim_time_add_sat(hop, cost->step_ps);
    /* The subgroup's first member: its position 0 (its root's subgroup key). */
    uint32_t key = coll__member(ph, r, 0);
    sum[key] = sim_time_add_sat(sum[key], hop);
    worst[key] = MAX(worst[key], hop);
  }
  sim_time_ps total = 0;
  for (uint32_t k = 0; k < g->n; k++) {
    sim_time_ps rest;
    if (!sim_time_mul(worst[k], (int64_t)ph->chunks - 1, &rest))
      rest = SIM_TIME_MAX;
    total = MAX(total, sim_time_add_sat(sum[k], rest));
  }
  return total;
}

static sim_time_ps chain_bcast_analytic(const coll__phase *ph, const coll__cost *cost)
{
  return chain_analytic(ph, cost, FALSE);
}

static sim_time_ps chain_reduce_analytic(const coll__phase *ph, const coll__cost *cost)
{
  return chain_analytic(ph, cost, TRUE);
}

const coll__phase_kind coll__chain_bcast = {"chain-broadcast", chain_steps, chain_bcast_step,
                                            chain_bcast_analytic};
const coll__phase_kind coll__chain_reduce = {"chain-reduce", chain_steps, chain_reduce_step,
                                             chain_reduce_analytic};

/* ---- NCCL's double binary tree ------------------------------------------------------------- */

/* NCCL's trees: inside a node the ranks form a chain; across nodes the chains' heads form a
 * binary tree in heap order over the nodes. The second tree mirrors the first (node i takes heap
 * position nodes - 1 - i, and the chain runs the other way, so its head is the node's last
 * rank), which makes most leaf nodes of one tree inner nodes of the other and puts the two trees'
 * inter-node traffic on different ranks (and NICs). A group without a uniform node layout is
 * one node per rank. */
coll__tree *coll__tree_build(const comm_coll_group *g, int which)
{
  uint32_t n = g->n, per = g->per_node ? g->per_node : 1, nodes = n / per;
  coll__tree *t = g_new0(coll__tree, 1);
  t->n = n;
  t->parent = g_new(uint32_t, n);
  t->height = g_new0(uint32_t, n);
  t->depth = g_new0(uint32_t, n);
  t->child_first = g_new0(uint32_t, n + 1);
  t->child = g_new(uint32_t, n);
  for (uint32_t r = 0; r < n; r++) {
    uint32_t node = r / per, local = r % per;
    uint32_t head = which == 0 ? 0 : per - 1;
    uint32_t pos = which == 0 ? node : nodes - 1 - node;
    if (local != head) {
      t->parent[r] = which == 0 ? r - 1 : r + 1;
    } else if (pos == 0) {
      t->parent[r] = COLL__NONE;
      t->root = r;
    } else {
      uint32_t ppos = (pos - 1) / 2, pnode = which == 0 ? ppos : nodes - 1 - ppos;
      t->parent[r] = pnode * per + head;
    }
  }
  /* Children in rank order (counting sort by parent). */
  for (uint32_t r = 0; r < n; r++)
    if (t->parent[r] != COLL__NONE)
      t->child_first[t->parent[r] + 1]++;
  for (uint32_t r = 0; r < n; r++)
    t->child_first[r + 1] += t->child_first[r];
  g_autofree uint32_t *fill = g_memdup2(t->child_first, n * sizeof(uint32_t));
  for (uint32_t r = 0; r < n; r++)
    if (t->parent[r] != COLL__NONE)
      t->child[fill[t->parent[r]]++] = r;
  /* Depths breadth-first from the root, heights in the reverse order. */
  g_autofree uint32_t *order = g_new(uint32_t, n);
  uint32_t head = 0, tail = 0;
  order[tail++] = t->root;
  while (head < tail) {
    uint32_t r = order[head++];
    for (uint32_t i = t->child_first[r]; i < t->child_first[r + 1]; i++) {
      t->depth[t->child[i]] = t->depth[r] + 1;
      order[tail++] = t->child[i];
    }
  }
  g_assert(tail == n);
  for (uint32_t i = n; i-- > 0;) {
    uint32_t r = order[i];
    if (t->parent[r] != COLL__NONE)
      t->height[t->parent[r]] = MAX(t->height[t->parent[r]], t->height[r] + 1);
  }
  t->root_height = t->height[t->root];
  return t;
}

void coll__tree_free(coll__tree *t)
{
  if (t == NULL)
    return;
  g_free(t->parent);
  g_free(t->height);
  g_free(t->depth);
  g_free(t->child_first);
  g_free(t->child);
  g_free(t);
}

/* Each tree carries half the buffer in `chunks` pipelined chunks: a rank of height h sends
 * chunk c to its parent at step h + c (after its children's chunk c came in at step h - 1 + c
 * or earlier); the root (height H) starts broadcasting chunk c at step H + c and a rank at
 * depth d forwards it to its children at step H + d + c. */
static uint32_t dtree_steps(const coll__phase *ph)
{
  if (ph->group->n <= 1)
    return 0;
  uint32_t h = MAX(ph->trees[0]->root_height, ph->trees[1]->root_height);
  return 2 * h + ph->chunks - 1;
}

static gboolean in_window(uint32_t t, uint32_t start, uint32_t chunks, uint32_t *c)
{
  if (t < start || t - start >= chunks)
    return FALSE;
  *c = t - start;
  return TRUE;
}

static void dtree_step(const coll__phase *ph, uint32_t r, uint32_t s, coll__step *out)
{
  uint64_t b = coll__phase_bytes(ph, r);
  uint32_t c;
  for (int k = 0; k < 2; k++) {
    const coll__tree *t = ph->trees[k];
    uint64_t tb = coll__seg(b, 2, (uint64_t)k);
    uint32_t height = t->root_height, d = t->depth[r];
    gboolean inner = t->child_first[r + 1] > t->child_first[r];
    if (t->parent[r] != COLL__NONE && in_window(s, t->height[r], ph->chunks, &c))
      add_send(out, t->parent[r], coll__seg(tb, ph->chunks, c));
    for (uint32_t i = t->child_first[r]; i < t->child_first[r + 1]; i++) {
      if (in_window(s, t->height[t->child[i]], ph->chunks, &c)) {
        out->nrecv++;
        out->reduce_bytes += coll__seg(tb, ph->chunks, c);
      }
    }
    if (inner && in_window(s, height + d, ph->chunks, &c))
      for (uint32_t i = t->child_first[r]; i < t->child_first[r + 1]; i++)
        add_send(out, t->child[i], coll__seg(tb, ph->chunks, c));
    if (t->parent[r] != COLL__NONE && in_window(s, height + d - 1, ph->chunks, &c))
      out->nrecv++;
  }
}

/* The directed tree edges of a double tree (child to parent and back, in both trees), each
 * with its route in densely numbered links, so that a step's link loads are array counts. */
typedef struct {
  uint32_t n, nedges, nlinks;
  uint32_t *out_first;             /* n + 1: edges leaving each rank, CSR */
  uint32_t *dst;                   /* per edge */
  uint32_t *route_first, *route;   /* per edge, CSR over dense link ids */
  const comm__link_class **cls;    /* per dense link */
  uint32_t *load;                  /* per dense link: transfers in the current step */
} dtree_links;

static void dtree_links_free(dtree_links *d)
{
  g_free(d->out_first);
  g_free(d->dst);
  g_free(d->route_first);
  g_free(d->route);
  g_free(d->cls);
  g_free(d->load);
}

static gboolean edge_known(const dtree_links *d, const uint32_t *fill, uint32_t a, uint32_t b)
{
  for (uint32_t e = d->out_first[a]; e < fill[a]; e++)
    if (d->dst[e] == b)
      return TRUE;
  return FALSE;
}

static void dtree_links_build(const coll__phase *ph, dtree_links *d)
{
  const comm_coll_group *g = ph->group;
  const comm_topology *topo = g->topo;
  uint32_t n = g->n;
  *d = (dtree_links){.n = n};
  /* Out-degree bound per rank: a parent and the children in each tree. */
  d->out_first = g_new0(uint32_t, n + 1);
  for (int k = 0; k < 2; k++) {
    const coll__tree *t = ph->trees[k];
    for (uint32_t r = 0; r < n; r++)
      if (t->parent[r] != COLL__NONE) {
        d->out_first[r + 1]++;
        d->out_first[t->parent[r] + 1]++;
      }
  }
  for (uint32_t r = 0; r < n; r++)
    d->out_first[r + 1] += d->out_first[r];
  d->dst = g_new(uint32_t, d->out_first[n]);
  g_autofree uint32_t *fill = g_memdup2(d->out_first, n * sizeof(uint32_t));
  for (int k = 0; k < 2; k++) {
    const coll__tree *t = ph->trees[k];
    for (uint32_t r = 0; r < n; r++) {
      uint32_t p = t->parent[r];
      if (p == COLL__NONE)
        continue;
      if (!edge_known(d, fill, r, p))
        d->dst[fill[r]++] = p;
      if (!edge_known(d, fill, p, r))
        d->dst[fill[p]++] = r;
    }
  }
  /* Close the gaps left by edges both trees share. */
  uint32_t e = 0;
  for (uint32_t r = 0; r < n; r++) {
    uint32_t from = d->out_first[r], to = fill[r];
    d->out_first[r] = e;
    for (uint32_t i = from; i < to; i++)
      d->dst[e++] = d->dst[i];
  }
  d->out_first[n] = d->nedges = e;
  uint32_t rmax = comm__route_max(topo);
  g_autofree uint32_t *buf = g_new(uint32_t, rmax);
  g_autoptr(GHashTable) ids = g_hash_table_new(g_direct_hash, g_direct_equal);
  GArray *cls = g_array_new(FALSE, FALSE, sizeof(const comm__link_class *));
  d->route_first = g_new(uint32_t, d->nedges + 1);
  d->route = g_new(uint32_t, (gsize)d->nedges * MAX(rmax, 1));
  uint32_t at = 0;
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t i = d->out_first[r]; i < d->out_first[r + 1]; i++) {
      d->route_first[i] = at;
      uint32_t len = comm__route(topo, g->eps[r], g->eps[d->dst[i]], buf);
      for (uint32_t k = 0; k < len; k++) {
        gpointer key = GUINT_TO_POINTER(buf[k] + 1), val;
        if (!g_hash_table_lookup_extended(ids, key, NULL, &val)) {
          val = GUINT_TO_POINTER(cls->len);
          g_hash_table_insert(ids, key, val);
          const comm__link_class *c = comm__link_class_of(topo, buf[k]);
          g_array_append_val(cls, c);
        }
        d->route[at++] = GPOINTER_TO_UINT(val);
      }
    }
  d->route_first[d->nedges] = at;
  d->nlinks = cls->len;
  d->cls = (const comm__link_class **)g_array_free(cls, FALSE);
  d->load = g_new0(uint32_t, MAX(d->nlinks, 1));
}

static uint32_t dtree_edge(const dtree_links *d, uint32_t a, uint32_t b)
{
  for (uint32_t e = d->out_first[a]; e < d->out_first[a + 1]; e++)
    if (d->dst[e] == b)
      return e;
  g_assert_not_reached();
}

/* One step with every rank in it: its slowest transfer, each at an equal share of every link
 * of its route among the step's transfers crossing it, plus the longest delay after it
 * (software overhead and reduction). */
static sim_time_ps dtree_step_time(const coll__phase *ph, const coll__cost *cost, dtree_links *d,
                                   uint32_t s, coll__xfer *scratch, uint32_t *act_edge,
                                   uint64_t *act_bytes)
{
  uint32_t na = 0;
  sim_time_ps delay = 0, slowest = 0;
  for (uint32_t r = 0; r < d->n; r++) {
    coll__step st = {.send = scratch};
    dtree_step(ph, r, s, &st);
    for (uint32_t i = 0; i < st.nsend; i++) {
      act_edge[na] = dtree_edge(d, r, st.send[i].peer);
      act_bytes[na++] = st.send[i].bytes;
    }
    delay = MAX(delay, coll__step_delay(&st, cost));
  }
  for (uint32_t i = 0; i < na; i++)
    for (uint32_t k = d->route_first[act_edge[i]]; k < d->route_first[act_edge[i] + 1]; k++)
      d->load[d->route[k]]++;
  for (uint32_t i = 0; i < na; i++) {
    double share = INFINITY;
    sim_time_ps lat = 0;
    for (uint32_t k = d->route_first[act_edge[i]]; k < d->route_first[act_edge[i] + 1]; k++) {
      const comm__link_class *c = d->cls[d->route[k]];
      share = MIN(share, c->Bps / d->load[d->route[k]]);
      lat = sim_time_add_sat(lat, comm__link_latency(c, act_bytes[i]));
    }
    slowest = MAX(slowest, sim_time_add_sat(lat, sim_time_for_work((double)act_bytes[i], share)));
  }
  for (uint32_t i = 0; i < na; i++)
    for (uint32_t k = d->route_first[act_edge[i]]; k < d->route_first[act_edge[i] + 1]; k++)
      d->load[d->route[k]]--;
  return sim_time_add_sat(slowest, delay);
}

/* The schedule step by step, all ranks in step (the flow model lets them run ahead where they
 * can, so this is an upper bound there). A step's transfers share the links along their
 * routes: a rank's NIC carries its chunks to its parent and children of both trees, a network
 * link every tree edge routed over it. With H the taller tree's height, from step 2H to step
 * C - 1 every edge of both trees is busy (chunks climb and descend everywhere): that steady step
 * is evaluated once and counted C - 1 - 2H times. */
static sim_time_ps dtree_analytic(const coll__phase *ph, const coll__cost *cost)
{
  const comm_coll_group *g = ph->group;
  if (g->n <= 1)
    return 0;
  dtree_links d;
  dtree_links_build(ph, &d);
  g_autofree coll__xfer *scratch = g_new(coll__xfer, g->n);
  g_autofree uint32_t *act_edge = g_new(uint32_t, MAX(d.nedges, 1) * 2);
  g_autofree uint64_t *act_bytes = g_new(uint64_t, MAX(d.nedges, 1) * 2);
  uint32_t steps = dtree_steps(ph), C = ph->chunks;
  uint32_t H = MAX(ph->trees[0]->root_height, ph->trees[1]->root_height);
  sim_time_ps total = 0;
  for (uint32_t s = 0; s < steps; s++) {
    sim_time_ps t = dtree_step_time(ph, cost, &d, s, scratch, act_edge, act_bytes);
    if (s == 2 * H && C > 2 * H + 1) {
      sim_time_ps rest;
      if (!sim_time_mul(t, (int64_t)C - 2 * H, &rest))
        rest = SIM_TIME_MAX;
      total = sim_time_add_sat(total, rest);
      s = C - 1;   /* the steady steps 2H .. C - 1 are done */
      continue;
    }
    total = sim_time_add_sat(total, t);
  }
  dtree_links_free(&d);
  return total;
}

const coll__phase_kind coll__double_tree = {"double-binary-tree", dtree_steps, dtree_step,
                                            dtree_analytic};

/* ---- All-to-all ------------------------------------------------------------------------------ */

/* One step: every rank sends block j (bytes / m) of its buffer to member j and waits for the
 * m - 1 blocks addressed to it; NCCL posts all these sends and receives at once. */
static void alltoall_step(const coll__phase *ph, uint32_t r, uint32_t s, coll__step *out)
{
  uint32_t m = ph->m, p = coll__pos(ph, r);
  uint64_t b = coll__phase_bytes(ph, r);
  for (uint32_t k = 1; k < m; k++) {
    uint32_t q = (p + k) % m;
    add_send(out, coll__member(ph, r, q), coll__seg(b, m, q));
  }
  out->nrecv = m - 1;
}

static uint32_t alltoall_steps(const coll__phase *ph)
{
  return ph->m > 1 ? 1 : 0;
}

const coll__phase_kind coll__alltoall = {"alltoall", alltoall_steps, alltoall_step,
                                         generic_analytic};
