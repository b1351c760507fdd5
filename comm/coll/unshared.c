/* Collectives computed without flows when their transfers never share a link (see
 * unshared.h). */
#include "unshared.h"

#include "coll_internal.h"
#include "comm_internal.h"

#include <string.h>

/* The route of member r's message to member d, remembering each sender's last peer (a ring
 * sends to one peer throughout, trees and halving to a few). */
typedef struct {
  comm__lone *lone;
  const comm_coll_group *g;
  uint32_t *last_peer, *last_route;
} route_cache;

static uint32_t route_of(route_cache *rc, uint32_t r, uint32_t d)
{
  if (rc->last_peer[r] == d)
    return rc->last_route[r];
  uint32_t id = comm__lone_route(rc->lone, rc->g->eps[r], rc->g->eps[d]);
  if (id != UINT32_MAX) {
    rc->last_peer[r] = d;
    rc->last_route[r] = id;
  }
  return id;
}

comm_coll_unshared_result comm_coll_unshared_time(comm_net *net, const comm_coll_group *g,
                                                  const comm_coll_algorithm *algo,
                                                  const comm_coll_args *args,
                                                  sim_time_ps *duration_ps, uint64_t *flows,
                                                  GError **error)
{
  g_return_val_if_fail(comm_net_topology(net) == g->topo, COMM_COLL_UNSHARED_ERROR);
  /* "nccl" runs its channels with an executor of its own (nccl.c): not followed here. */
  if (comm_coll_resolve(algo, g, args)->nccl)
    return COMM_COLL_UNSHARED_SHARED;
  coll__plan plan;
  if (!coll__plan_build(&plan, g, algo, args, error))
    return COMM_COLL_UNSHARED_ERROR;
  uint32_t total = coll__plan_steps(&plan);
  comm__lone *lone = total > 0 ? comm__lone_new(net) : NULL;
  if (!lone) {
    coll__plan_clear(&plan);
    return COMM_COLL_UNSHARED_SHARED;
  }
  uint32_t n = g->n;
  coll__cost cost = {args->reduce_Bps, args->step_ps};
  g_autofree sim_time_ps *ready = g_new(sim_time_ps, n);
  g_autofree sim_time_ps *finish = g_new(sim_time_ps, n);
  g_autofree sim_time_ps *delay = g_new(sim_time_ps, n);
  g_autofree uint64_t *sent_mark = g_new0(uint64_t, n);   /* last rank-step that sent to d */
  g_autofree coll__xfer *scratch = g_new(coll__xfer, n);
  route_cache rc = {lone, g, g_new(uint32_t, n), g_new(uint32_t, n)};
  memset(rc.last_peer, 0xff, n * sizeof(uint32_t));
  for (uint32_t r = 0; r < n; r++)
    ready[r] = args->launch_ps;
  /* The delay of the previous rank-step, reused while the step's terms are the same (most
   * steps of a ring, whose reduction times are the costly part of the arithmetic). */
  coll__step memo = {.nsend = UINT32_MAX};
  sim_time_ps memo_delay = 0;
  uint64_t sent = 0, rank_step = 0;
  gboolean shared = FALSE;
  uint32_t step = 0;
  for (uint32_t p = 0; p < plan.nphases && !shared; p++) {
    const coll__phase *ph = &plan.phases[p];
    uint32_t steps = ph->kind->steps(ph);
    for (uint32_t s = 0; s < steps && !shared; s++, step++) {
      memcpy(finish, ready, n * sizeof *finish);
      for (uint32_t r = 0; r < n && !shared; r++) {
        coll__step st = {.send = scratch};
        ph->kind->step(ph, r, s, &st);
        if ((st.nsend > 0 || st.nrecv > 0) != (memo.nsend > 0 || memo.nrecv > 0) ||
            memo.nsend == UINT32_MAX || st.reduce_bytes != memo.reduce_bytes ||
            st.extra_ps != memo.extra_ps || st.folded != memo.folded) {
          memo = st;
          memo_delay = coll__step_delay(&st, &cost);
        }
        delay[r] = memo_delay;
        rank_step++;
        for (uint32_t i = 0; i < st.nsend; i++) {
          uint32_t d = st.send[i].peer;
          uint64_t bytes = st.send[i].bytes;
          sent++;
          sim_time_ps t = 0;
          if (bytes > 0 && d != r) {
            /* Two messages of one step to one peer would share their route. */
            uint32_t id = sent_mark[d] == rank_step ? UINT32_MAX : route_of(&rc, r, d);
            sent_mark[d] = rank_step;
            if (id == UINT32_MAX) {
              shared = TRUE;
              break;
            }
            t = comm__lone_time(lone, id, bytes);
          }
          sim_time_ps at = sim_time_add_sat(MAX(ready[r], ready[d]), t);
          finish[r] = MAX(finish[r], at);
          finish[d] = MAX(finish[d], at);
        }
      }
      if (shared)
        break;
      for (uint32_t r = 0; r < n; r++)
        ready[r] = sim_time_add_sat(finish[r], delay[r]);
    }
  }
  g_assert(shared || step == total);
  comm__lone_free(lone);
  coll__plan_clear(&plan);
  g_free(rc.last_peer);
  g_free(rc.last_route);
  if (shared)
    return COMM_COLL_UNSHARED_SHARED;
  sim_time_ps end = 0;
  for (uint32_t r = 0; r < n; r++)
    end = MAX(end, ready[r]);
  *duration_ps = end;
  *flows = sent;
  return COMM_COLL_UNSHARED_DONE;
}
