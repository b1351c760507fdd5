/* The global fill of the flow network and its log (see net_internal.h for the other parts).
 *
 * When a recompute's components reach nearly every live class (incast, all-to-all, the rings
 * of an all-reduce), the next recomputes fill every live class at once instead of searching
 * for components: progressive filling over a union of components gives each exactly what it
 * would get alone (a link's capacity is only ever shared within its own component, and one
 * component's links are fixed in the same (share, id) order either way). Two things make such
 * a fill cheap, both bit for bit what a fill from scratch over the heap of net_fill.c gives:
 *
 * - The sorted order. Every live link at its first key (capacity over flows) is kept sorted
 *   from fill to fill (net->log.sorted); only the links whose flows changed since are re-sorted
 *   and merged in (sorted_update). A fill reads links in that order and sends to the heap only
 *   those whose key changed, taking at each step the smaller (key, id) of the two: the step the
 *   single heap would take.
 * - The log. Each fill records its steps (fixing link, share, the classes fixed, the links'
 *   states after the step). The next fill, when only flows left or classes went since, starts
 *   after the first step that a link whose flows changed took part in (fill_resume_step): the
 *   steps before it fixed flows through unchanged links, so they repeat exactly, and the
 *   changed links, with no more flows and the same capacity, are not taken earlier. The state
 *   at that step is restored from the log, and the classes of the steps taken from it keep
 *   their rates and their events.
 *
 * The plain solver (comm_net_set_plain) never fills globally: every recompute then searches
 * for its components and fills each by scanning (net_fill.c). */
#include "net_internal.h"

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

/* Brings net->log.sorted up to date: the links whose flows changed leave it and come back at their
 * new share, sorted among themselves and merged in, in one pass over it; the first time, and
 * after recomputes stopped filling globally, every live link is sorted. */
static void sorted_update(comm_net *net)
{
  heapvec *S = &net->log.sorted;
  if (!net->log.sorted_valid) {
    S->n = 0;
    for (uint32_t i = 0; i < net->live_links.n; i++) {
      uint32_t l = net->live_links.v[i];
      link_state *L = &net->links[l];
      L->sorted_Bps = link_capacity(net, l) / L->flows;
      heap_ent x = {L->sorted_Bps, l};
      VEC_PUSH(S, x);
    }
    sort_ents(S->v, S->n, &net->log.sort_tmp);
    net->log.sorted_valid = TRUE;
    return;
  }
  uint32_t kept = 0;
  for (uint32_t i = 0; i < S->n; i++)
    if (!net->links[S->v[i].link].dirty)
      S->v[kept++] = S->v[i];
  net->log.fresh.n = 0;
  for (uint32_t i = 0; i < net->log.dirty_links.n; i++) {
    uint32_t l = net->log.dirty_links.v[i];
    link_state *L = &net->links[l];
    L->dirty = FALSE;
    if (L->n == 0)
      continue;
    L->sorted_Bps = link_capacity(net, l) / L->flows;
    heap_ent x = {L->sorted_Bps, l};
    VEC_PUSH(&net->log.fresh, x);
  }
  net->log.dirty_links.n = 0;
  heap_ent *F = net->log.fresh.v;
  uint32_t nf = net->log.fresh.n;
  sort_ents(F, nf, &net->log.sort_tmp);
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

/* Stops keeping net->log.sorted (recomputes no longer fill globally). */
void comm__sorted_drop(comm_net *net)
{
  for (uint32_t i = 0; i < net->log.dirty_links.n; i++)
    net->links[net->log.dirty_links.v[i]].dirty = FALSE;
  net->log.dirty_links.n = 0;
  for (uint32_t i = 0; i < net->log.changed_links.n; i++)
    net->links[net->log.changed_links.v[i]].changed = FALSE;
  net->log.changed_links.n = 0;
  net->log.sorted_valid = FALSE;
  net->log.valid = FALSE;
}

/* The first step of the last global fill that the next one cannot take as it is, when only
 * flows left or classes went since (no link carries more flows than it did): every step before
 * it fixed flows through a link whose classes did not change, so it fixes the same classes at
 * the same share, with the same subtractions in the same order, in the next fill too; and a
 * link whose classes changed, having no more flows and the same capacity left, has no smaller
 * share at any of those steps than it had, so it is not taken earlier. The first step that a
 * changed link (net->log.changed_links) fixed is where the two fills may part. 0 when the log
 * cannot be used. */
static uint32_t fill_resume_step(comm_net *net)
{
  if (!net->log.valid || !net->log.sorted_valid)
    return 0;
  uint32_t from = net->log.steps.n;
  for (uint32_t i = 0; i < net->log.changed_links.n; i++) {
    const link_state *L = &net->links[net->log.changed_links.v[i]];
    gboolean was_live = L->fill_flows > 0;
    if (L->n > 0 && (!was_live || L->flows > L->fill_flows))
      return 0;
    if (was_live && L->fix_step < from)
      from = L->fix_step;
  }
  return from;
}

/* Progressive filling of every live class over more than FILL_SCAN_LINKS links: the fill of
 * comm__fill_component's heap, with the links that have not yet been re-ranked read in order from
 * net->log.sorted, which is kept from fill to fill, instead of heaped anew. At the start every
 * link's key is its share, capacity over flows, exactly the heap's first key; a link leaves the
 * sorted order for the heap when its key changes (raised when it comes up, lowered by a fix), and
 * one that has nothing left to give is passed over. The next link is the smaller (key, id) of the
 * sorted order's first live entry and the heap's top, the one the single heap would give, so every
 * fix is the same, in the same order, as there: only the order of re-ranked links (a seventh of
 * them in an nccl all-reduce) costs heap work.
 *
 * The fill logs its steps, and the next one starts after the steps of this one that it would
 * repeat (fill_resume_step): the links' remaining capacities and fixed flows as the log has
 * them then, the classes those steps fixed at their shares, and every link with flows still
 * to fix in the heap at its share then (keys only need to be lower bounds of the shares for
 * the order of fixes to be that of the single heap). Flows that end one by one in a ring
 * all-reduce leave most of a fill's steps as they were. Returns the number of classes the
 * steps taken from the log fixed (the first ones of net->log.cls). */
uint32_t comm__fill_global(comm_net *net)
{
  uint32_t from = fill_resume_step(net);
  /* fill_flows as of this fill: only the links whose flows changed since the last differ,
   * unless the sorted order (and so the record of those) was dropped in between. */
  if (net->log.sorted_valid)
    for (uint32_t i = 0; i < net->log.changed_links.n; i++) {
      link_state *L = &net->links[net->log.changed_links.v[i]];
      L->fill_flows = L->flows;
      L->changed = FALSE;
    }
  else
    for (uint32_t i = 0; i < net->held_links.n; i++)
      net->links[net->held_links.v[i]].fill_flows = net->links[net->held_links.v[i]].flows;
  net->log.changed_links.n = 0;
  /* Resuming, the links left to fix all go to the heap, ranked by their shares then (lower
   * bounds, as keys must be), and the sorted order is not needed: it takes the links whose
   * flows changed meanwhile at the next fill that starts from the beginning. */
  if (from == 0)
    sorted_update(net);
  for (uint32_t i = 0; i < net->live_classes.n; i++)
    net->live_classes.v[i]->next_rate = -1.0;
  net->fill.unfixed = net->live_classes.n;
  comm__fill_touched_reserve(net, net->live_links.n);
  net->fill.heap.n = 0;
  if (from == 0) {
    for (uint32_t i = 0; i < net->live_links.n; i++) {
      link_state *L = &net->links[net->live_links.v[i]];
      L->rem_Bps = link_capacity(net, net->live_links.v[i]);
      L->unfrozen = L->flows;
      L->hpos = IN_SORTED;
      L->fix_step = UINT32_MAX;
      L->last_ent = UINT32_MAX;
    }
    net->log.steps.n = net->log.cls.n = net->log.ents.n = 0;
  } else {
    /* Resuming, a link that no step from `from` on changed has every flow fixed before it, as
     * at the end of the last fill, which left its state as it was then (0 flows to fix): a
     * link whose classes changed has a step from there on. Those links are made below. */
    const log_step *last = &net->log.steps.v[from - 1];
    for (uint32_t k = from; k < net->log.steps.n; k++)
      net->links[net->log.steps.v[k].link].fix_step = UINT32_MAX;
    for (uint32_t k = 0, j = 0; k < from; k++) {
      const log_step *st = &net->log.steps.v[k];
      for (; j < st->cls_end; j++)
        net->log.cls.v[j]->next_rate = st->share_Bps;
    }
    net->fill.unfixed -= last->cls_end;
    net->log.steps_reused += from;
    /* The links the steps from `from` on changed, each once: its state before them is its last
     * entry before them, or none (all its capacity, no flow fixed). */
    uint32_t bound = last->ent_end, mark = comm__fill_touch_mark(net);
    const log_ent *ents = net->log.ents.v;
    for (uint32_t i = bound; i < net->log.ents.n; i++) {
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
        comm__fill_heap_push(net, MAX(L->rem_Bps, 0.0) / L->unfrozen, l);
    }
    comm__fill_touch_mark(net);   /* the first step's own */
    net->log.steps.n = from;
    net->log.cls.n = last->cls_end;
    net->log.ents.n = last->ent_end;
  }
  net->log.logging = TRUE;
  comm__fill_sorted(net, net->log.sorted.v, from ? 0 : net->log.sorted.n);
  net->log.logging = FALSE;
  net->log.valid = TRUE;
  return from ? net->log.steps.v[from - 1].cls_end : 0;
}

