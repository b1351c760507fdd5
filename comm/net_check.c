/* The invariant checker of the flow network (as hwloc's hwloc_topology_check()): the records
 * agree with each other, no link carries more than its capacity, and the rates are max-min
 * fair. Tests call comm_net_check(); builds without NDEBUG run comm__net_check_fill() after
 * every recompute over the classes it filled, and stop at the first breach with the class,
 * the link and the figures.
 *
 * What holds between events, whenever no recompute is pending (net->rc.pending):
 *   records  every live class is in use, at its place in net->live_classes, with as many
 *            flows as its heap holds, each pointing back to it and in (target, seq) order, and
 *            a completion event; a class on its links' lists sits at the slot its hop names;
 *            a lone flow is at its place in net->rec.lone, has an event, and is alone on
 *            every link of its route, marked there (net->link_busy, net->reserved_on);
 *            every live link is at its place in net->live_links and counts the flows of
 *            its classes;
 *   capacity the flows on a link have rates that add up to at most its capacity;
 *   fairness every class has a bottleneck on its route: a link whose capacity its flows use up
 *            and where no flow has a larger rate. A flow without one could take more of
 *            every link it crosses without taking from a flow of no larger rate, which
 *            max-min fairness forbids (and progressive filling never leaves: a flow's rate is
 *            fixed by the link that saturates at that step).
 * Rates are compared with a relative tolerance of CHECK_REL: they are sums and differences of
 * doubles, exact to a few units of the last place. */
#include "net_internal.h"

#include <stdarg.h>

#define CHECK_REL 1e-9

static gboolean breach(GError **error, const comm_net *net, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

static gboolean breach(GError **error, const comm_net *net, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "flow network at %lld ps: %s",
              (long long)sim_engine_now(net->engine), what);
  return FALSE;
}

/* The class's own records and its places on its links. */
static gboolean check_class(const comm_net *net, const fclass *c, GError **error)
{
  uint32_t src = (uint32_t)(c->key >> 32), dst = (uint32_t)c->key;
  if (!c->in_use)
    return breach(error, net, "class %u -> %u is live but not in use", src, dst);
  if (c->live_pos >= net->live_classes.n || net->live_classes.v[c->live_pos] != c)
    return breach(error, net, "class %u -> %u is not at its place %u of the live classes", src,
                  dst, c->live_pos);
  if (c->count == 0 || c->count != c->hn)
    return breach(error, net, "class %u -> %u counts %u flows, its heap holds %u", src, dst,
                  c->count, c->hn);
  for (uint32_t i = 0; i < c->hn; i++) {
    const flow *f = c->heap[i];
    if (f->cls != c)
      return breach(error, net, "flow %u of class %u -> %u points to another class", i, src,
                    dst);
    const flow *p = i > 0 ? c->heap[(i - 1) / 2] : f;
    if (f->target < p->target || (f->target == p->target && f->seq < p->seq))
      return breach(error, net, "class %u -> %u: flow %u is before its parent in the heap", src,
                    dst, i);
  }
  if (c->hashed && comm__class_lookup(net, c->key) != c)
    return breach(error, net, "class %u -> %u is not found by its route", src, dst);
  for (uint32_t h = 0; h < c->nhops; h++) {
    uint32_t l = c->hops[h].link;
    const link_state *L = &net->links[l];
    if (c->hops[h].slot >= L->n || L->cls[c->hops[h].slot] != c) {
      return breach(error, net, "class %u -> %u is not at slot %u of link %u", src, dst,
                    c->hops[h].slot, l);
    }
  }
  if (net->rc.pending)
    return TRUE;
  if (!c->ev)
    return breach(error, net, "class %u -> %u has no completion event", src, dst);
  if (!(c->rate > 0.0) || !isfinite(c->rate))
    return breach(error, net, "class %u -> %u has rate %.17g B/s", src, dst, c->rate);
  return TRUE;
}

/* The link's records, its load and its largest rate. */
static gboolean check_link(const comm_net *net, uint32_t l, double *load_Bps, double *top_Bps,
                           GError **error)
{
  const link_state *L = &net->links[l];
  if (L->n == 0 || L->live_pos >= net->live_links.n || net->live_links.v[L->live_pos] != l)
    return breach(error, net, "link %u has %u classes but is not at its place %u of the live "
                  "links", l, L->n, L->live_pos);
  uint64_t flows = 0;
  double load = 0.0, top = 0.0;
  for (uint32_t j = 0; j < L->n; j++) {
    const fclass *c = L->cls[j];
    gboolean found = FALSE;
    for (uint32_t h = 0; h < c->nhops && !found; h++)
      found = c->hops[h].link == l && c->hops[h].slot == j;
    if (!found)
      return breach(error, net, "link %u lists at slot %u a class whose route does not name "
                    "it there", l, j);
    flows += c->count;
    load += c->rate * c->count;
    top = MAX(top, c->rate);
  }
  if (flows != L->flows)
    return breach(error, net, "link %u counts %u flows, its classes hold %llu", l, L->flows,
                  (unsigned long long)flows);
  double cap = link_capacity(net, l);
  if (!net->rc.pending && load > cap * (1.0 + CHECK_REL))
    return breach(error, net, "link %u carries %.17g B/s, over its capacity %.17g B/s", l, load,
                  cap);
  *load_Bps = load;
  *top_Bps = top;
  return TRUE;
}

/* Classes cc over links cl (every link of every class in cc, and every class on those links:
 * a whole component, or everything live). */
static gboolean check_set(comm_net *net, const classvec *cc, const u32vec *cl, GError **error)
{
  if (net->check.load.cap < net->nlinks) {
    g_free(net->check.load.v);
    g_free(net->check.top.v);
    net->check.load.v = g_new(double, net->nlinks);
    net->check.top.v = g_new(double, net->nlinks);
    net->check.load.cap = net->check.top.cap = (uint32_t)net->nlinks;
  }
  double *load = net->check.load.v, *top = net->check.top.v;
  for (uint32_t i = 0; i < cl->n; i++)
    if (!check_link(net, cl->v[i], &load[cl->v[i]], &top[cl->v[i]], error))
      return FALSE;
  for (uint32_t i = 0; i < cc->n; i++) {
    const fclass *c = cc->v[i];
    if (!check_class(net, c, error))
      return FALSE;
    if (net->rc.pending)
      continue;
    gboolean fair = FALSE;
    for (uint32_t h = 0; h < c->nhops && !fair; h++) {
      uint32_t l = c->hops[h].link;
      double cap = link_capacity(net, l);
      fair = load[l] >= cap * (1.0 - CHECK_REL) && c->rate >= top[l] * (1.0 - CHECK_REL);
    }
    if (!fair)
      return breach(error, net, "class %u -> %u (%u flows at %.17g B/s) has no bottleneck link: "
                    "not max-min fair", (uint32_t)(c->key >> 32), (uint32_t)c->key, c->count,
                    c->rate);
  }
  return TRUE;
}

gboolean comm_net_check(comm_net *net, GError **error)
{
  g_return_val_if_fail(net != NULL, FALSE);
  if (net->model != COMM_NET_FLOW)
    return TRUE;
  for (uint32_t i = 0; i < net->rec.lone.n; i++) {
    const flow *f = net->rec.lone.v[i];
    if (f->lone_pos != i || f->ev == NULL || f->cls != NULL)
      return breach(error, net, "lone flow %u -> %u is not at its place %u of the lone flows, "
                    "or has no event, or a class", f->src, f->dst, i);
    /* Its links: its own copy, or its route again (comm__route is a pure function). */
    g_autofree uint32_t *route = NULL;
    const uint32_t *links = f->links;
    if (f->nlinks > LONE_HOPS) {
      route = g_new(uint32_t, comm__route_max(net->topo) + 1);
      comm__route(net->topo, f->src, f->dst, route);
      links = route;
    }
    for (uint32_t h = 0; h < f->nlinks; h++)
      if (net->links[links[h]].n != 0 || net->link_busy[links[h]] != LINK_LONE ||
          net->reserved_on[links[h]] != f)
        return breach(error, net, "lone flow %u -> %u is not alone on link %u, or not marked "
                      "there", f->src, f->dst, links[h]);
  }
  return check_set(net, &net->live_classes, &net->live_links, error);
}

void comm__net_check_fill(comm_net *net, const classvec *cc, const u32vec *cl)
{
  g_autoptr(GError) error = NULL;
  if (!check_set(net, cc, cl, &error))
    g_error("%s", error->message);
}
