/* Groups, closed forms and the executor that runs a collective's plan as flows.
 *
 * The executor keeps one small record per rank: the step it is in and how many of that step's
 * sends and receives are still outstanding. A transfer starts once its sender and its receiver
 * have both entered the step (a rendezvous: MPI's protocol for large messages, NCCL's
 * credit-based flow control), so a rank that idles through a step never floods a receiver that
 * is still busy; a sender that gets there first parks the message until the receiver arrives.
 * A message's completion (its last byte has arrived) counts for both its sender and its
 * receiver. Leaving a step waits for the folded latency and the reduction. With the analytic
 * network model the whole collective is its closed form: one engine event. */
#include "coll_internal.h"
#include "util.h"

#include <string.h>

/* ---- Operations ---------------------------------------------------------------------------- */

static const char *const op_names[COMM_COLL_N_OPS] = {
    [COMM_COLL_ALLREDUCE] = "allreduce",         [COMM_COLL_ALLGATHER] = "allgather",
    [COMM_COLL_REDUCE_SCATTER] = "reduce-scatter", [COMM_COLL_BROADCAST] = "broadcast",
    [COMM_COLL_REDUCE] = "reduce",               [COMM_COLL_ALLTOALL] = "alltoall",
};

const char *comm_coll_op_name(comm_coll_op op)
{
  return op < COMM_COLL_N_OPS ? op_names[op] : "?";
}

double comm_coll_busbw_factor(comm_coll_op op, uint32_t n)
{
  if (n == 0)
    return 0;
  switch (op) {
  case COMM_COLL_ALLREDUCE:
    return 2.0 * (n - 1) / n;
  case COMM_COLL_ALLGATHER:
  case COMM_COLL_REDUCE_SCATTER:
  case COMM_COLL_ALLTOALL:
    return (double)(n - 1) / n;
  default:
    return 1.0;
  }
}

/* ---- Groups ------------------------------------------------------------------------------ */

comm_coll_group *comm_coll_group_new(const comm_topology *topo, const uint32_t *ranks,
                                     uint32_t n)
{
  g_return_val_if_fail(topo != NULL, NULL);
  uint32_t devices = comm_topology_devices(topo);
  if (ranks == NULL)
    n = devices;
  g_return_val_if_fail(n >= 1, NULL);
  for (uint32_t i = 0; ranks != NULL && i < n; i++)
    g_return_val_if_fail(ranks[i] < devices, NULL);
  comm_coll_group *g = g_new0(comm_coll_group, 1);
  g->topo = topo;
  g->n = n;
  g->eps = g_new(comm_ep, n);
  g->node = g_new(uint32_t, n);
  g->rank = g_new(uint32_t, n);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t rank = ranks ? ranks[i] : i;
    g->rank[i] = rank;
    g->eps[i] = comm_topology_device(topo, rank);
    g->node[i] = comm_topology_node_of(topo, rank);
  }
  /* The members form runs of equal nodes. The layout is uniform when every run has the same
   * length and no node comes back in a later run. */
  g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);
  uint32_t run = 0, first_run = 0;
  gboolean uniform = TRUE;
  for (uint32_t i = 0; i < n; i++) {
    run++;
    if (i + 1 < n && g->node[i + 1] == g->node[i])
      continue;
    if (first_run == 0)
      first_run = run;
    else if (run != first_run)
      uniform = FALSE;
    if (!g_hash_table_add(seen, GUINT_TO_POINTER(g->node[i] + 1)))
      uniform = FALSE;   /* the node was already there */
    run = 0;
  }
  g->nodes = g_hash_table_size(seen);
  g->per_node = uniform ? first_run : 0;
  return g;
}

void comm_coll_group_free(comm_coll_group *g)
{
  if (g == NULL)
    return;
  coll__nccl_routes_free(g->nccl_routes);
  g_free(g->lat_key);
  g_free(g->lat_ps);
  g_free(g->ring_lat_ps);
  g_free(g->eps);
  g_free(g->node);
  g_free(g->rank);
  g_free(g);
}

uint32_t comm_coll_group_size(const comm_coll_group *g)
{
  return g->n;
}

uint32_t comm_coll_group_nodes(const comm_coll_group *g)
{
  return g->nodes;
}

uint32_t comm_coll_group_per_node(const comm_coll_group *g)
{
  return g->per_node;
}

/* ---- Closed forms --------------------------------------------------------------------------- */

/* The closed form of a plan: the launch cost plus its phases one after the other, each at
 * least as long as its busiest link takes (coll__phase_link_bound: the closed forms of the
 * phase kinds time each transfer on its own route, which transfers sharing a NIC, a leaf
 * uplink or a root's link would not get). */
static sim_time_ps plan_analytic(const coll__plan *plan, const comm_coll_args *args)
{
  coll__cost cost = {args->reduce_Bps, args->step_ps};
  sim_time_ps total = plan->nphases > 0 ? args->launch_ps : 0;
  for (uint32_t i = 0; i < plan->nphases; i++) {
    const coll__phase *ph = &plan->phases[i];
    sim_time_ps t = ph->kind->analytic(ph, &cost);
    total = sim_time_add_sat(total, MAX(t, coll__phase_link_bound(ph)));
  }
  return total;
}

gboolean comm_coll_analytic_time(const comm_topology *topo, const comm_coll_group *group,
                                 const comm_coll_algorithm *algo, const comm_coll_args *args,
                                 sim_time_ps *out_ps, GError **error)
{
  g_return_val_if_fail(group->topo == topo, FALSE);
  algo = comm_coll_resolve(algo, group, args);
  if (algo->nccl) {
    comm_coll_group *memo = (comm_coll_group *)group;
    if (!algo->forced && memo->nccl_memo_valid &&
        coll__same_args(&memo->nccl_memo_args, args)) {
      *out_ps = memo->nccl_memo_ps;
      return TRUE;
    }
    g_autoptr(coll__nccl) x =
        coll__nccl_plan_forced(group, args, algo->forced ? &algo->force : NULL, error);
    if (!x)
      return FALSE;
    *out_ps = coll__nccl_chosen(x)->time_ps;
    if (!algo->forced) {
      memo->nccl_memo_valid = TRUE;
      memo->nccl_memo_args = *args;
      memo->nccl_memo_ps = *out_ps;
    }
    return TRUE;
  }
  coll__plan plan;
  if (!coll__plan_build(&plan, group, algo, args, error))
    return FALSE;
  *out_ps = plan_analytic(&plan, args);
  coll__plan_clear(&plan);
  return TRUE;
}

/* ---- The executor ------------------------------------------------------------------------- */

typedef struct {
  uint32_t step;          /* global step index the rank is in */
  uint32_t outstanding;   /* sends and receives of that step not yet complete */
  sim_time_ps delay_ps;   /* then: folded latency, software overhead, reduction */
} coll_rank;

struct comm_coll {
  comm_net *net;
  sim_engine *engine;
  const comm_coll_group *g;
  const comm_coll_algorithm *algo;   /* resolved */
  comm_coll_args args;
  coll__plan plan;
  coll__cost cost;
  uint32_t total_steps;
  uint32_t phase_first[COLL__MAX_PHASES + 1];   /* first global step of each phase */

  coll_rank *ranks;
  /* Per rank: the messages parked for it by senders that entered a step before it did, in the
   * order they came (a list through coll_msg.next, with its last element). */
  struct coll_msg **parked, **parked_last;
  struct coll_msg *spare; /* messages done, for reuse (through next) */
  coll__xfer *scratch;
  uint64_t *recv_bytes;
  uint64_t flows;
  uint32_t ranks_done;
  /* The last step's delay and what it was worked out from (coll__step_delay): a ring's steps
   * differ only in their segments, most of them of one size, and the reduction's
   * sim_time_for_work was a twentieth of a step-by-step ring's run. */
  struct {
    gboolean valid, moves;
    uint32_t folded;
    uint64_t reduce_bytes;
    sim_time_ps extra_ps, delay_ps;
  } delay_memo;

  coll__nccl *nccl;       /* "nccl": the channels run the collective */
  gboolean started, finished;
  sim_time_ps t0, t1;
  comm_done_fn done;
  void *user;
};

typedef struct coll_msg {
  comm_coll *c;
  uint32_t src, dst, step;
  uint32_t heap;           /* 1: an allocation of its own (else in the collective's block) */
  uint64_t bytes;
  struct coll_msg *next;   /* parked or spare: the next in its list */
} coll_msg;

/* A collective, its per-rank arrays and a first message per rank are one allocation: an
 * every-device 3-D run starts some 10^6 collectives of 8 ranks (the tensor-parallel rings), and
 * the dozen mallocs and frees of each were a tenth of its time (malloc, free and their
 * consolidation, perf). Every part is a multiple of 8 bytes, so each array stays aligned. */
static comm_coll *coll_alloc(uint32_t n)
{
  G_STATIC_ASSERT(sizeof(comm_coll) % 8 == 0 && sizeof(coll_rank) % 8 == 0 &&
                  sizeof(coll__xfer) % 8 == 0 && sizeof(coll_msg) % 8 == 0);
  size_t bytes = sizeof(comm_coll) + n * (sizeof(coll_rank) + sizeof(uint64_t) +
                                          sizeof(coll__xfer) + 2 * sizeof(coll_msg *) +
                                          sizeof(coll_msg));
  char *at = g_malloc0(bytes);
  comm_coll *c = (comm_coll *)at;
  at += sizeof *c;
  c->ranks = (coll_rank *)at;
  at += n * sizeof *c->ranks;
  c->recv_bytes = (uint64_t *)at;
  at += n * sizeof *c->recv_bytes;
  c->scratch = (coll__xfer *)at;
  at += n * sizeof *c->scratch;
  c->parked = (coll_msg **)at;
  at += n * sizeof *c->parked;
  c->parked_last = (coll_msg **)at;
  at += n * sizeof *c->parked_last;
  coll_msg *msgs = (coll_msg *)at;
  for (uint32_t i = n; i-- > 0;) {
    msgs[i].next = c->spare;
    c->spare = &msgs[i];
  }
  return c;
}

comm_coll *comm_coll_new(comm_net *net, const comm_coll_group *group,
                         const comm_coll_algorithm *algo, const comm_coll_args *args,
                         GError **error)
{
  g_return_val_if_fail(net != NULL && group != NULL && algo != NULL && args != NULL, NULL);
  g_return_val_if_fail(comm_net_topology(net) == group->topo, NULL);
  g_autoptr(comm_coll) c = coll_alloc(group->n);
  c->net = net;
  c->engine = comm_net_engine(net);
  c->g = group;
  c->args = *args;
  c->cost = (coll__cost){args->reduce_Bps, args->step_ps};
  c->algo = comm_coll_resolve(algo, group, args);
  if (c->algo->nccl) {
    c->nccl = coll__nccl_plan_forced(group, args, algo->forced ? &algo->force : NULL, error);
    if (!c->nccl || !coll__nccl_prepare(c->nccl, net, error))
      return NULL;
    return g_steal_pointer(&c);
  }
  if (!coll__plan_build(&c->plan, group, algo, args, error))
    return NULL;
  for (uint32_t i = 0; i < c->plan.nphases; i++) {
    c->phase_first[i] = c->total_steps;
    c->total_steps += c->plan.phases[i].kind->steps(&c->plan.phases[i]);
  }
  c->phase_first[c->plan.nphases] = c->total_steps;
  return g_steal_pointer(&c);
}

/* Frees the messages of a list that have an allocation of their own. */
static void free_msgs(coll_msg *m)
{
  while (m) {
    coll_msg *next = m->next;
    if (m->heap)
      g_free(m);
    m = next;
  }
}

void comm_coll_free(comm_coll *c)
{
  if (c == NULL)
    return;
  coll__plan_clear(&c->plan);
  coll__nccl_free(c->nccl);
  for (uint32_t r = 0; c->g && r < c->g->n; r++)
    free_msgs(c->parked[r]);
  free_msgs(c->spare);
  g_free(c);
}

static void coll_finish(comm_coll *c)
{
  c->finished = TRUE;
  c->t1 = sim_engine_now(c->engine);
  if (c->done)
    c->done(c->engine, c->user);
}

static void on_nccl_done(void *user)
{
  coll_finish(user);
}

static void on_analytic_done(sim_engine *engine, void *data, uint64_t arg)
{
  coll_finish(data);
}

static void rank_advance(comm_coll *c, uint32_t r);

static void on_step_delay(sim_engine *engine, void *data, uint64_t arg)
{
  comm_coll *c = data;
  c->ranks[arg].step++;
  rank_advance(c, (uint32_t)arg);
}

/* Every transfer of the rank's step is complete: pay the folded latency and the reduction,
 * then move on. */
static void rank_step_complete(comm_coll *c, uint32_t r)
{
  coll_rank *rk = &c->ranks[r];
  sim_time_ps delay = rk->delay_ps;
  if (delay > 0) {
    sim_engine_schedule_in(c->engine, delay, on_step_delay, c, r);
    return;
  }
  rk->step++;
  rank_advance(c, r);
}

static void on_msg_done(sim_engine *engine, void *user)
{
  coll_msg *msg = user;
  comm_coll *c = msg->c;
  uint32_t src = msg->src, dst = msg->dst, step = msg->step;
  c->recv_bytes[dst] += msg->bytes;
  msg->next = c->spare;
  c->spare = msg;

  coll_rank *s = &c->ranks[src];
  g_assert(s->step == step && s->outstanding > 0);
  if (--s->outstanding == 0)
    rank_step_complete(c, src);

  coll_rank *d = &c->ranks[dst];
  g_assert(d->step == step && d->outstanding > 0);
  if (--d->outstanding == 0)
    rank_step_complete(c, dst);
}

static void msg_start(comm_coll *c, coll_msg *msg)
{
  c->flows++;
  comm_net_send(c->net, c->g->eps[msg->src], c->g->eps[msg->dst], msg->bytes, on_msg_done, msg);
}

/* coll__step_delay(st, &c->cost), remembered for the last inputs. */
static inline sim_time_ps step_delay(comm_coll *c, const coll__step *st)
{
  gboolean moves = st->nsend > 0 || st->nrecv > 0;
  if (c->delay_memo.valid && c->delay_memo.reduce_bytes == st->reduce_bytes &&
      c->delay_memo.extra_ps == st->extra_ps && c->delay_memo.folded == st->folded &&
      c->delay_memo.moves == moves)
    return c->delay_memo.delay_ps;
  c->delay_memo.valid = TRUE;
  c->delay_memo.moves = moves;
  c->delay_memo.folded = st->folded;
  c->delay_memo.reduce_bytes = st->reduce_bytes;
  c->delay_memo.extra_ps = st->extra_ps;
  c->delay_memo.delay_ps = coll__step_delay(st, &c->cost);
  return c->delay_memo.delay_ps;
}

/* Enters the rank's current step and every following step that has nothing to wait for. */
static void rank_advance(comm_coll *c, uint32_t r)
{
  coll_rank *rk = &c->ranks[r];
  while (rk->step < c->total_steps) {
    uint32_t ph = 0;
    while (rk->step >= c->phase_first[ph + 1])
      ph++;
    const coll__phase *phase = &c->plan.phases[ph];
    coll__step st = {.send = c->scratch};
    phase->kind->step(phase, r, rk->step - c->phase_first[ph], &st);

    rk->outstanding = st.nsend + st.nrecv;
    rk->delay_ps = step_delay(c, &st);
    for (uint32_t i = 0; i < st.nsend; i++) {
      uint32_t dst = st.send[i].peer;
      coll_msg *msg = c->spare;
      uint32_t heap = 0;
      if (msg)
        c->spare = msg->next, heap = msg->heap;
      else
        msg = g_new(coll_msg, 1), heap = 1;
      *msg = (coll_msg){c, r, dst, rk->step, heap, st.send[i].bytes, NULL};
      if (c->ranks[dst].step == rk->step) {
        msg_start(c, msg);
      } else {
        g_assert(c->ranks[dst].step < rk->step);
        if (c->parked[dst])
          c->parked_last[dst]->next = msg;
        else
          c->parked[dst] = msg;
        c->parked_last[dst] = msg;
      }
    }
    /* Messages parked for this step by senders that got here first, in the order they came
     * (some may be for later steps: they stay). */
    coll_msg *ready = NULL, **ready_end = &ready, **link = &c->parked[r], *last = NULL;
    while (*link) {
      coll_msg *m = *link;
      if (m->step == rk->step) {
        *link = m->next;
        *ready_end = m;
        ready_end = &m->next;
      } else {
        last = m;
        link = &m->next;
      }
    }
    *ready_end = NULL;
    c->parked_last[r] = last;
    while (ready) {
      coll_msg *m = ready;
      ready = m->next;
      msg_start(c, m);
    }
    if (rk->outstanding > 0)
      return;
    if (rk->delay_ps > 0) {
      sim_engine_schedule_in(c->engine, rk->delay_ps, on_step_delay, c, r);
      return;
    }
    rk->step++;
  }
  if (++c->ranks_done == c->g->n)
    coll_finish(c);
}

/* The launch cost has passed: every rank enters its first step. */
static void on_launched(sim_engine *engine, void *data, uint64_t arg)
{
  comm_coll *c = data;
  for (uint32_t r = 0; r < c->g->n; r++)
    rank_advance(c, r);
}

static void on_start_empty(sim_engine *engine, void *data, uint64_t arg)
{
  coll_finish(data);
}

void comm_coll_start(comm_coll *c, comm_done_fn done, void *user)
{
  g_return_if_fail(!c->started);
  c->started = TRUE;
  c->done = done;
  c->user = user;
  c->t0 = sim_engine_now(c->engine);
  if (c->nccl) {
    coll__nccl_start(c->nccl, on_nccl_done, c);
    return;
  }
  if (comm_net_get_model(c->net) == COMM_NET_ANALYTIC) {
    sim_time_ps t = plan_analytic(&c->plan, &c->args);
    sim_engine_schedule_in(c->engine, t, on_analytic_done, c, 0);
    return;
  }
  if (c->total_steps == 0) {
    sim_engine_schedule_in(c->engine, 0, on_start_empty, c, 0);
    return;
  }
  if (c->args.launch_ps > 0) {
    sim_engine_schedule_in(c->engine, c->args.launch_ps, on_launched, c, 0);
    return;
  }
  on_launched(c->engine, c, 0);
}

gboolean comm_coll_finished(const comm_coll *c)
{
  return c->finished;
}

const comm_coll_algorithm *comm_coll_algorithm_used(const comm_coll *c)
{
  return c->algo;
}

sim_time_ps comm_coll_start_time(const comm_coll *c)
{
  return c->t0;
}

sim_time_ps comm_coll_end_time(const comm_coll *c)
{
  return c->t1;
}

const char *comm_coll_label(const comm_coll *c)
{
  return c->nccl ? coll__nccl_label(c->nccl) : c->algo->name;
}

uint64_t comm_coll_flows(const comm_coll *c)
{
  if (c->nccl)
    return coll__nccl_flows(c->nccl);
  return c->flows;
}

uint64_t comm_coll_bytes_received(const comm_coll *c, uint32_t member)
{
  g_return_val_if_fail(member < c->g->n, 0);
  return c->recv_bytes[member];
}
