/* Max-min fair sharing by progressive filling, the solver of the flow network (see
 * net_internal.h for the other parts).
 *
 * The maths. Link l has capacity C_l (bytes/s); class c has n_c flows on the links of its
 * route. Max-min fairness: no flow's rate can grow without lowering that of a flow with a rate
 * no larger. Progressive filling reaches it in steps: every link has a remaining capacity R_l
 * (C_l at first) and a count U_l of flows on it still without a rate; the link with the
 * smallest fair share s = R_l / U_l (ties to the lower link id) is the bottleneck of all its
 * unfixed flows, which get s each, and every link those flows cross gives up s times their
 * count (R_l' -= s n_c, U_l' -= n_c). No share ever falls below the last one fixed, so a
 * flow's rate is the smallest share of its route at the step it is fixed, and every flow has
 * a bottleneck link: one it saturates where no flow has a larger rate. The fixed (share, id)
 * order makes the result independent of the order classes were found in.
 *
 * Only a component is filled: the classes connected to the ones that changed through shared
 * links (comm__fill_collect); others keep their rates, since a link's capacity is shared only
 * within its component. A component over at most FILL_SCAN_LINKS links is filled by scanning
 * them for the smallest share at each step; a larger one ranks its links in a heap whose keys
 * are lower bounds of the shares (see fill_less in net_internal.h), which makes the whole
 * O(H log L) in the component's class hops H and links L and takes the same steps, in the same
 * order, as the scan. The plain solver (comm_net_set_plain) always scans, and fills even a lone
 * class by the steps: the reference the heap and the global fill are compared with. */
#include "net_internal.h"

static inline void heap_place(comm_net *net, uint32_t i, heap_ent x)
{
  net->fill.heap.v[i] = x;
  net->links[x.link].hpos = i;
}

static void heap_up(comm_net *net, uint32_t i)
{
  heap_ent *a = net->fill.heap.v, x = a[i];
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
  heap_ent *a = net->fill.heap.v, x = a[i];
  uint32_t n = net->fill.heap.n;
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

void comm__fill_heap_push(comm_net *net, double share_Bps, uint32_t l)
{
  heap_ent x = {share_Bps, l};
  VEC_PUSH(&net->fill.heap, x);
  heap_up(net, net->fill.heap.n - 1);
}

/* Removes the entry at i; its link's hpos becomes NOT_IN_HEAP. */
static void heap_remove(comm_net *net, uint32_t i)
{
  net->links[net->fill.heap.v[i].link].hpos = NOT_IN_HEAP;
  heap_ent last = net->fill.heap.v[--net->fill.heap.n];
  if (i == net->fill.heap.n)
    return;
  heap_place(net, i, last);
  heap_up(net, i);
  heap_down(net, net->links[last.link].hpos);
}

static inline void visit_class(comm_net *net, fclass *c)
{
  if (c->epoch == net->rc.epoch)
    return;
  c->epoch = net->rc.epoch;
  VEC_PUSH(&net->rc.stack, c);
}

/* Starts a new round of marks; after 2^32 of them, clears the marks so that an old one can
 * never look current. */
void comm__fill_next_epoch(comm_net *net)
{
  if (++net->rc.epoch != 0)
    return;
  for (uint64_t l = 0; l < net->nlinks; l++)
    net->links[l].epoch = 0;
  for (guint s = 0; s < net->rec.class_slabs->len; s++) {
    fclass *slab = g_ptr_array_index(net->rec.class_slabs, s);
    for (size_t i = 0; i < comm__class_slab_used(net, s); i++)
      slab[i].epoch = 0;
  }
  net->rc.epoch = 1;
}

/* Collects the classes and links connected to `seed` through shared links, and readies them
 * for progressive filling: no class has a rate yet, every link has all its capacity left. */
void comm__fill_collect(comm_net *net, fclass *seed)
{
  net->rc.comp_classes.n = 0;
  net->rc.comp_links.n = 0;
  net->rc.stack.n = 0;
  visit_class(net, seed);
  while (net->rc.stack.n > 0) {
    fclass *c = net->rc.stack.v[--net->rc.stack.n];
    c->next_rate = -1.0;
    VEC_PUSH(&net->rc.comp_classes, c);
    for (uint32_t h = 0; h < c->nhops; h++) {
      uint32_t l = c->hops[h].link;
      link_state *L = &net->links[l];
      if (L->epoch == net->rc.epoch)
        continue;
      L->epoch = net->rc.epoch;
      L->rem_Bps = link_capacity(net, l);
      L->unfrozen = L->flows;
      VEC_PUSH(&net->rc.comp_links, l);
      for (uint32_t j = 0; j < L->n; j++)
        visit_class(net, L->cls[j]);
    }
  }
}

/* A new touch mark; after 2^32 of them, clears the marks so that an old one can never look
 * current. */
uint32_t comm__fill_touch_mark(comm_net *net)
{
  if (++net->fill.touch_mark == 0) {
    for (uint64_t k = 0; k < net->nlinks; k++)
      net->links[k].touched = 0;
    net->fill.touch_mark = 1;
  }
  return net->fill.touch_mark;
}

/* Room in net->fill.touched for one step of a fill over n links (each is touched once a step). */
void comm__fill_touched_reserve(comm_net *net, uint32_t n)
{
  if (net->fill.touched.cap < n) {
    net->fill.touched.cap = n;
    net->fill.touched.v = g_renew(uint32_t, net->fill.touched.v, n);
  }
}

/* Gives every flow of every unfixed class on link l the share `share` and takes it (share
 * times the class's flows) from every link the class crosses. With the heap, the links so
 * changed are collected once each and re-checked after the whole step (see fill_less). */
static inline void fix_link(comm_net *net, uint32_t l, double share, gboolean use_heap)
{
  link_state *L = &net->links[l];
  net->fill.touched.n = 0;
  if (use_heap && net->log.logging) {
    log_step st = {share, l, 0, 0};
    L->fix_step = net->log.steps.n;
    VEC_PUSH(&net->log.steps, st);
  }
  /* Locals for what the stores below could otherwise alias (counts and marks are uint32_t
   * like the link fields); touched has room for every link of the fill
   * (comm__fill_touched_reserve). */
  link_state *links = net->links;
  uint32_t mark = net->fill.touch_mark, *tv = net->fill.touched.v, tn = 0;
  for (uint32_t j = 0; j < L->n; j++) {
    fclass *c = L->cls[j];
    if (c->next_rate >= 0.0)
      continue;
    c->next_rate = share;
    net->fill.unfixed--;
    if (use_heap && net->log.logging)
      VEC_PUSH(&net->log.cls, c);
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
  net->fill.touched.n = tn;
  if (!use_heap)
    return;
  for (uint32_t i = 0; i < tn; i++) {
    link_state *L2 = &links[tv[i]];
    if (net->log.logging) {
      log_ent e = {L2->rem_Bps, tv[i], L2->flows - L2->unfrozen, L2->last_ent};
      L2->last_ent = net->log.ents.n;
      VEC_PUSH(&net->log.ents, e);
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
        comm__fill_heap_push(net, share2, tv[i]);
    } else if (share2 < net->fill.heap.v[L2->hpos].share_Bps) {
      net->fill.heap.v[L2->hpos].share_Bps = share2;
      heap_up(net, L2->hpos);
    }
  }
  comm__fill_touch_mark(net);
  if (net->log.logging) {
    log_step *st = &net->log.steps.v[net->log.steps.n - 1];
    st->cls_end = net->log.cls.n;
    st->ent_end = net->log.ents.n;
  }
}

/* The link at the top of the heap, with flows still to fix: fixed at its share, or ranked
 * again when its share has changed since it was ranked (keys are lower bounds of shares). */
static inline void fix_heap_top(comm_net *net)
{
  uint32_t l = net->fill.heap.v[0].link;
  link_state *L = &net->links[l];
  double share = MAX(L->rem_Bps, 0.0) / L->unfrozen;
  if (share != net->fill.heap.v[0].share_Bps) {
    net->fill.heap.v[0].share_Bps = share;
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
void comm__fill_component(comm_net *net, const classvec *cc, const u32vec *cl)
{
  if (cc->n == 1 && cc->v[0]->count == 1 && !net->plain) {
    fclass *c = cc->v[0];
    double r = INFINITY;
    for (uint32_t h = 0; h < c->nhops; h++)
      r = MIN(r, link_capacity(net, c->hops[h].link));
    c->next_rate = r;
    return;
  }
  net->fill.unfixed = cc->n;
  if (cl->n <= FILL_SCAN_LINKS || net->plain) {
    while (net->fill.unfixed > 0) {
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
  comm__fill_touched_reserve(net, cl->n);
  net->fill.heap.n = 0;
  for (uint32_t i = 0; i < cl->n; i++) {
    link_state *L = &net->links[cl->v[i]];
    heap_ent x = {L->rem_Bps / L->unfrozen, cl->v[i]};
    VEC_PUSH(&net->fill.heap, x);
    L->hpos = i;
  }
  for (uint32_t i = net->fill.heap.n / 2; i-- > 0;)
    heap_down(net, i);
  /* Once every class has its rate the links left in the heap have nothing to give. */
  while (net->fill.unfixed > 0) {
    if (net->links[net->fill.heap.v[0].link].unfrozen == 0) {
      heap_remove(net, 0);
      continue;
    }
    fix_heap_top(net);
  }
}

/* Progressive filling with the links not yet re-ranked read in (key, id) order from S[0 .. ns)
 * (the global fill's sorted order, net_log.c), the others from the heap: at each step the
 * smaller (key, id) of the first live entry of S and the heap's top, the link a single heap of
 * them all would give. A link of S whose share is no longer its key goes to the heap. */
void comm__fill_sorted(comm_net *net, const heap_ent *S, uint32_t ns)
{
  uint32_t next = 0;
  while (net->fill.unfixed > 0) {
    while (next < ns) {
      const link_state *L = &net->links[S[next].link];
      if (L->hpos == IN_SORTED && L->unfrozen > 0)
        break;
      next++;
    }
    if (net->fill.heap.n > 0 && (next == ns || fill_less(net->fill.heap.v[0], S[next]))) {
      fix_heap_top(net);
      continue;
    }
    g_assert(next < ns);
    uint32_t l = S[next++].link;
    link_state *L = &net->links[l];
    double share = MAX(L->rem_Bps, 0.0) / L->unfrozen;
    if (share != L->sorted_Bps) {
      comm__fill_heap_push(net, share, l);
      continue;
    }
    L->hpos = NOT_IN_HEAP;
    fix_link(net, l, share, TRUE);
  }
}
