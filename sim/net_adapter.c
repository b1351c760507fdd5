/* Communication tasks on the modeled network (see net_adapter.h). */
#include "net_adapter.h"

#include "colltime.h"

#include "unshared.h"
#include "util.h"

#include <string.h>

typedef struct pending pending;
struct pending {
  sim_net_adapter *adapter;
  sim_exec *exec;
  sim_task_id task;
  int64_t memo;           /* index of the collective's memo it times, or -1 */
  sim_time_ps start_ps;   /* when it started, for that memo */
  pending *next_free;     /* in the adapter's free list */
};

/* Records of tasks in flight come from blocks of this many, and a finished one goes back to
 * the adapter's free list: a pipeline run starts a transfer per event or two, and malloc and
 * free per transfer were a few percent of it. */
#define PENDING_BLOCK 256

typedef struct {
  uint32_t *ranks;
  uint32_t n;
  comm_coll_group *group;
} group_rec;

/* A symmetric plan's collectives, kept for the next collective of the same algorithm,
 * operation, size and group (sim_coll_memo, colltime.h). Such a plan runs its collectives one
 * at a time on device 0's one communication stream and sends nothing else, so each collective
 * starts on an idle network and every term of its duration is relative to its start (the flow
 * network's times are offsets from the instants its flows start, its rates depend only on the
 * flows in flight): the same inputs give the same duration, to the picosecond, whenever it
 * starts. A collective is timed once, without flows where its transfers never share a link
 * (comm/coll/unshared.h); "nccl", whose channels share links, by its closed form (within 0.5%
 * of its flows); any other by running it as flows on the network. Later ones take that
 * duration as one event. */

struct sim_net_adapter {
  sim_coll_memo memo;       /* of a symmetric plan's collectives */
  const comm_coll_algorithm *nccl;   /* the registry's "nccl", timed by its closed form there */
  comm_net *net;
  const sim_plan *plan;
  double reduce_Bps;
  GPtrArray *groups;        /* group_rec*, in the order they were made */
  GHashTable *group_index;  /* group_rec* -> itself, by content (group_hash, group_equal) */
  uint32_t *ranks;          /* scratch: the ranks of the group being looked up */
  uint32_t ranks_cap;
  GPtrArray *colls;         /* comm_coll*, freed with the adapter or once finished */
  guint colls_compact_at;   /* length of colls at which the finished ones are freed */
  GError *error;
  sim_exec *exec;
  /* Parameter servers. */
  comm_ps_placement ps_placement;
  uint32_t ps_servers;
  double ps_reduce_Bps;
  gboolean ps_node_workers;
  double ps_local_reduce_Bps;
  comm_ps *ps;
  comm_coll_group *ps_group;
  GHashTable *ps_index;     /* task id -> index into plan->ps_tasks + 1 */
  sim_task_id *ps_table;    /* [iteration][worker * tensors + tensor] -> task */
  uint32_t ps_iterations;
  int64_t ps_step;          /* current synchronous step, -1 before the first */
  gboolean ps_active;
  GArray *ps_queue;         /* indices into plan->ps_tasks waiting for their step */
  GPtrArray *pending_blocks; /* pending[PENDING_BLOCK] each, freed with the adapter */
  pending *free_pending;    /* records not in flight */
  comm_ep *stream_ep;       /* per stream of the graph: its unit's endpoint, or NO_EP until
                             * asked (a pipeline asks for the same few on every transfer) */
  uint32_t n_stream_ep;
  const sim_graph *ep_graph;  /* the graph stream_ep is for */
};

#define NO_EP UINT32_MAX

static void group_rec_free(gpointer p)
{
  group_rec *g = p;
  comm_coll_group_free(g->group);
  g_free(g->ranks);
  g_free(g);
}

static void coll_free(gpointer p) { comm_coll_free(p); }

/* Groups are found by their ranks: an every-device 3-D run starts some 10^6 collectives over a
 * few hundred groups, and comparing with every group made so far took 4% of its time. */
static guint group_hash(gconstpointer p)
{
  const group_rec *r = p;
  guint h = 2166136261u ^ r->n;
  for (uint32_t i = 0; i < r->n; i++)
    h = (h ^ r->ranks[i]) * 16777619u;
  return h;
}

static gboolean group_equal(gconstpointer a, gconstpointer b)
{
  const group_rec *x = a, *y = b;
  return x->n == y->n && memcmp(x->ranks, y->ranks, x->n * sizeof *x->ranks) == 0;
}

sim_net_adapter *sim_net_adapter_new(comm_net *net, const sim_plan *plan, double reduce_Bps)
{
  sim_net_adapter *a = g_new0(sim_net_adapter, 1);
  a->net = net;
  a->plan = plan;
  sim_coll_memo_init(&a->memo);
  a->nccl = comm_coll_algorithm_find("nccl", "nccl", NULL);
  a->reduce_Bps = reduce_Bps;
  a->groups = g_ptr_array_new_with_free_func(group_rec_free);
  a->group_index = g_hash_table_new(group_hash, group_equal);
  a->colls = g_ptr_array_new_with_free_func(coll_free);
  a->colls_compact_at = 1024;
  a->pending_blocks = g_ptr_array_new_with_free_func(g_free);
  return a;
}

static pending *pending_new(sim_net_adapter *a, sim_exec *x, sim_task_id t)
{
  if (G_UNLIKELY(!a->free_pending)) {
    pending *block = g_new(pending, PENDING_BLOCK);
    g_ptr_array_add(a->pending_blocks, block);
    for (guint i = 0; i < PENDING_BLOCK; i++)
      block[i].next_free = i + 1 < PENDING_BLOCK ? &block[i + 1] : NULL;
    a->free_pending = block;
  }
  pending *p = a->free_pending;
  a->free_pending = p->next_free;
  *p = (pending){a, x, t, -1, 0, NULL};
  return p;
}

static void pending_free(pending *p)
{
  sim_net_adapter *a = p->adapter;
  p->next_free = a->free_pending;
  a->free_pending = p;
}

void sim_net_adapter_free(sim_net_adapter *a)
{
  if (!a)
    return;
  sim_coll_memo_clear(&a->memo);
  g_ptr_array_free(a->colls, TRUE);
  g_hash_table_destroy(a->group_index);
  g_ptr_array_free(a->groups, TRUE);
  g_free(a->ranks);
  g_ptr_array_free(a->pending_blocks, TRUE);
  g_free(a->stream_ep);
  g_clear_error(&a->error);
  comm_ps_free(a->ps);
  comm_coll_group_free(a->ps_group);
  if (a->ps_index)
    g_hash_table_destroy(a->ps_index);
  g_free(a->ps_table);
  if (a->ps_queue)
    g_array_free(a->ps_queue, TRUE);
  g_free(a);
}

static const GError *adapter_error(void *user)
{
  const sim_net_adapter *a = user;
  return a->error;
}

void sim_net_adapter_set_ps(sim_net_adapter *a, comm_ps_placement placement, uint32_t servers,
                            double server_reduce_Bps, gboolean node_workers,
                            double local_reduce_Bps)
{
  a->ps_placement = placement;
  a->ps_servers = servers;
  a->ps_reduce_Bps = server_reduce_Bps;
  a->ps_node_workers = node_workers;
  a->ps_local_reduce_Bps = local_reduce_Bps;
}

comm_ep sim_net_adapter_endpoint(const sim_net_adapter *a, sim_unit_id unit)
{
  const sim_unit_info *u = &g_array_index(a->plan->units, sim_unit_info, unit);
  const comm_topology *topo = comm_net_topology(a->net);
  switch (u->role) {
  case SIM_UNIT_DEVICE:
    return comm_topology_device(topo, u->index);
  case SIM_UNIT_HOST:
    return comm_topology_host(topo, u->index, 0);
  case SIM_UNIT_SERVER:
    /* Server u->index where comm_ps puts host servers: on the extra nodes if there are any. */
    return comm_ps_host(topo, comm_topology_extra_nodes(topo) > 0, u->index);
  }
  g_assert_not_reached();
}

/* The endpoint of a stream's unit, through the adapter's table. */
static comm_ep stream_endpoint(sim_net_adapter *a, const sim_graph *g, sim_stream_id s)
{
  if (G_UNLIKELY(a->ep_graph != g)) {
    a->ep_graph = g;
    a->n_stream_ep = sim_graph_n_streams(g);
    g_free(a->stream_ep);
    a->stream_ep = g_new(comm_ep, MAX(a->n_stream_ep, 1));
    for (uint32_t i = 0; i < a->n_stream_ep; i++)
      a->stream_ep[i] = NO_EP;
  }
  g_assert(s < a->n_stream_ep);
  comm_ep *ep = &a->stream_ep[s];
  if (*ep == NO_EP)
    *ep = sim_net_adapter_endpoint(a, sim_graph_stream_unit(g, s));
  return *ep;
}

static void task_finished(sim_engine *engine, void *user)
{
  pending *p = user;
  sim_exec *x = p->exec;
  sim_task_id t = p->task;
  if (p->memo >= 0) {
    sim_coll_memo_entry *m = sim_coll_memo_at(&p->adapter->memo, p->memo);
    m->duration_ps = sim_engine_now(engine) - p->start_ps;
    m->timed = TRUE;
  }
  pending_free(p);
  sim_exec_task_done(x, t);
}

static void task_finished_ev(sim_engine *engine, void *data, uint64_t arg)
{
  task_finished(engine, data);
}

/* The group of the devices behind a collective's member streams; groups are reused. */
static const comm_coll_group *group_for(sim_net_adapter *a, const sim_graph *g, sim_task_id t)
{
  const sim_stream_id *m;
  uint32_t n = sim_graph_task_members(g, t, &m);
  if (a->plan->symmetric)
    n = a->plan->devices;  /* one built device stands for all ranks */
  if (n > a->ranks_cap) {
    a->ranks_cap = MAX(n, 2 * a->ranks_cap);
    a->ranks = g_renew(uint32_t, a->ranks, a->ranks_cap);
  }
  uint32_t *ranks = a->ranks;
  for (uint32_t i = 0; i < n; i++) {
    sim_unit_id u = sim_graph_stream_unit(g, m[a->plan->symmetric ? 0 : i]);
    ranks[i] = a->plan->symmetric ? i : g_array_index(a->plan->units, sim_unit_info, u).index;
  }
  group_rec key = {ranks, n, NULL};
  group_rec *found = g_hash_table_lookup(a->group_index, &key);
  if (found)
    return found->group;
  group_rec *r = g_new0(group_rec, 1);
  r->n = n;
  r->group = comm_coll_group_new(comm_net_topology(a->net), ranks, n);
  r->ranks = g_memdup2(ranks, n * sizeof *ranks);
  g_ptr_array_add(a->groups, r);
  g_hash_table_add(a->group_index, r);
  return r->group;
}

static const comm_coll_op op_of[] = {
    [SIM_OP_ALLREDUCE] = COMM_COLL_ALLREDUCE,   [SIM_OP_ALLGATHER] = COMM_COLL_ALLGATHER,
    [SIM_OP_REDUCE_SCATTER] = COMM_COLL_REDUCE_SCATTER, [SIM_OP_BROADCAST] = COMM_COLL_BROADCAST,
    [SIM_OP_REDUCE] = COMM_COLL_REDUCE, [SIM_OP_ALLTOALL] = COMM_COLL_ALLTOALL,
};

static void fail(sim_net_adapter *a, sim_exec *x, GError *error)
{
  if (!a->error)
    a->error = error;
  else
    g_error_free(error);
  sim_engine_stop(sim_exec_engine(x));
}

/* ---- Parameter servers -------------------------------------------------------------------- */

static void ps_pulled(sim_engine *engine, uint32_t worker, uint32_t tensor, void *user)
{
  sim_net_adapter *a = user;
  uint32_t T = a->plan->ps_tensor_bytes->len;
  sim_exec_task_done(a->exec, a->ps_table[(gsize)a->ps_step * a->plan->ps_workers * T +
                                          (gsize)worker * T + tensor]);
}

static void ps_begin_step(sim_net_adapter *a, int64_t step);

static void ps_step_done(sim_engine *engine, void *user)
{
  sim_net_adapter *a = user;
  a->ps_active = FALSE;
  if (a->ps_queue->len > 0)
    ps_begin_step(a, a->ps_step + 1);
}

/* Begins step `step` and pushes what was waiting for it. */
static void ps_begin_step(sim_net_adapter *a, int64_t step)
{
  a->ps_step = step;
  a->ps_active = TRUE;
  comm_ps_step_begin(a->ps, ps_pulled, ps_step_done, a);
  guint kept = 0;
  for (guint i = 0; i < a->ps_queue->len; i++) {
    guint k = g_array_index(a->ps_queue, guint, i);
    const sim_ps_task *pt = &g_array_index(a->plan->ps_tasks, sim_ps_task, k);
    if (pt->iteration == step)
      comm_ps_push(a->ps, pt->worker, pt->tensor);
    else
      g_array_index(a->ps_queue, guint, kept++) = k;
  }
  g_array_set_size(a->ps_queue, kept);
}

static gboolean ps_setup(sim_net_adapter *a, GError **error)
{
  const sim_plan *p = a->plan;
  uint32_t T = p->ps_tensor_bytes->len, W = p->ps_workers;
  a->ps_group = comm_coll_group_new(comm_net_topology(a->net), NULL, W);
  comm_ps_config cfg = {.placement = a->ps_placement,
                        .servers = a->ps_servers,
                        .tensor_bytes = (const uint64_t *)p->ps_tensor_bytes->data,
                        .tensors = T,
                        .server_reduce_Bps = a->ps_reduce_Bps,
                        .node_workers = a->ps_node_workers,
                        .local_reduce_Bps = a->ps_local_reduce_Bps,
                        .shard_of = p->ps_shard_of->len == T && T > 0
                                        ? (const uint32_t *)(void *)p->ps_shard_of->data
                                        : NULL};
  a->ps = comm_ps_new(a->net, a->ps_group, &cfg, error);
  if (!a->ps)
    return FALSE;
  a->ps_index = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (guint k = 0; k < p->ps_tasks->len; k++) {
    const sim_ps_task *pt = &g_array_index(p->ps_tasks, sim_ps_task, k);
    a->ps_iterations = MAX(a->ps_iterations, pt->iteration + 1);
    g_hash_table_insert(a->ps_index, GUINT_TO_POINTER(pt->task), GUINT_TO_POINTER(k + 1));
  }
  a->ps_table = g_new0(sim_task_id, (gsize)a->ps_iterations * W * T);
  for (guint k = 0; k < p->ps_tasks->len; k++) {
    const sim_ps_task *pt = &g_array_index(p->ps_tasks, sim_ps_task, k);
    a->ps_table[(gsize)pt->iteration * W * T + (gsize)pt->worker * T + pt->tensor] = pt->task;
  }
  a->ps_step = -1;
  a->ps_queue = g_array_new(FALSE, FALSE, sizeof(guint));
  return TRUE;
}

sim_time_ps sim_net_adapter_ps_aggregated(const sim_net_adapter *a, uint32_t tensor)
{
  return a->ps ? comm_ps_aggregation_end(a->ps, tensor) : 0;
}

static void ps_start(sim_net_adapter *a, sim_exec *x, sim_task_id t)
{
  GError *error = NULL;
  if (!a->ps && !ps_setup(a, &error)) {
    fail(a, x, error);
    return;
  }
  guint k = GPOINTER_TO_UINT(g_hash_table_lookup(a->ps_index, GUINT_TO_POINTER(t)));
  g_assert(k > 0);
  k--;
  const sim_ps_task *pt = &g_array_index(a->plan->ps_tasks, sim_ps_task, k);
  if (a->ps_active && pt->iteration == a->ps_step) {
    comm_ps_push(a->ps, pt->worker, pt->tensor);
    return;
  }
  g_array_append_val(a->ps_queue, k);
  if (!a->ps_active && pt->iteration == a->ps_step + 1)
    ps_begin_step(a, pt->iteration);
}

/* Frees the collectives that finished before `now` (a collective that finishes now may still
 * be on the stack, in its own completion callback). A run of a Chakra trace of 1024 ranks on the
 * flow network starts 10^5 collectives; kept to the end they held 3 GB. */
static void colls_compact(sim_net_adapter *a, sim_time_ps now)
{
  GPtrArray *kept = g_ptr_array_new_full(a->colls->len, coll_free);
  for (guint i = 0; i < a->colls->len; i++) {
    comm_coll *c = g_ptr_array_index(a->colls, i);
    if (comm_coll_finished(c) && comm_coll_end_time(c) < now)
      comm_coll_free(c);
    else
      g_ptr_array_add(kept, c);
  }
  g_free(g_ptr_array_free(a->colls, FALSE));
  a->colls = kept;
  a->colls_compact_at = MAX(1024, 2 * kept->len);
}

static void adapter_start(void *user, sim_exec *x, sim_task_id t)
{
  sim_net_adapter *a = user;
  const sim_graph *g = sim_exec_graph(x);
  a->exec = x;
  sim_task_view v = sim_graph_task_view(g, t);
  if (v.kind == SIM_TASK_CUSTOM && v.op == SIM_OP_PS_PUSH) {
    ps_start(a, x, t);
    return;
  }
  pending *p = pending_new(a, x, t);
  const sim_stream_id *m = v.members;
  uint32_t n = v.n_members;
  switch (v.kind) {
  case SIM_TASK_TRANSFER: {
    comm_ep src = stream_endpoint(a, g, m[0]);
    comm_ep dst = stream_endpoint(a, g, m[1]);
    comm_net_send(a->net, src, dst, v.bytes, task_finished, p);
    return;
  }
  case SIM_TASK_COLLECTIVE: {
    int op = v.op;
    if (op < 0 || (op > SIM_OP_REDUCE && op != SIM_OP_ALLTOALL))
      break;
    if (n < 2 && !a->plan->symmetric) {
      /* A collective of one device moves nothing; it still ends through an event. */
      comm_ep self = sim_net_adapter_endpoint(a, sim_graph_stream_unit(g, m[0]));
      comm_net_send(a->net, self, self, 0, task_finished, p);
      return;
    }
    const comm_coll_algorithm *algo = sim_graph_task_algorithm(g, t);
    g_assert(algo != NULL); /* strategies give every collective its algorithm */
    GError *error = NULL;
    comm_coll_args args = {.op = op_of[op], .bytes = v.bytes,
                           .reduce_Bps = a->reduce_Bps, .form = COMM_COLL_FORM_PIPELINED};
    sim_engine *engine = sim_exec_engine(x);
    /* On the analytic network a collective's time is its closed form, whatever else runs: the
     * collectives of any plan are timed once per key there, by running the first (a Chakra
     * trace of 1024 ranks starts 10^5 of them). Symmetric plans keep their way below. */
    gboolean analytic = !a->plan->symmetric &&
                        comm_net_get_model(a->net) == COMM_NET_ANALYTIC;
    if ((a->plan->symmetric || analytic) && !sim_engine_has_observers(engine)) {
      /* Timed once per (algorithm, group, operation, size); see the memo above. Observed runs
       * run every collective as flows, so that a trace shows each one's traffic. */
      const comm_coll_group *group = group_for(a, g, t);
      int64_t k = sim_coll_memo_find(&a->memo, algo, group, op, args.bytes);
      if (k < 0) {
        sim_time_ps duration_ps = 0;
        gboolean timed = FALSE;
        uint64_t flows;
        comm_coll_unshared_result how =
            analytic ? COMM_COLL_UNSHARED_SHARED
                     : comm_coll_unshared_time(a->net, group, algo, &args, &duration_ps, &flows,
                                               &error);
        switch (how) {
        case COMM_COLL_UNSHARED_ERROR:
          pending_free(p);
          fail(a, x, error);
          return;
        case COMM_COLL_UNSHARED_DONE:
          timed = TRUE;
          break;
        case COMM_COLL_UNSHARED_SHARED:
          if (!analytic && comm_coll_resolve(algo, group, &args) == a->nccl) {
            /* NCCL's channels: their closed form on the idle network, which follows the
             * flow model within 0.5% (tests/coll test_closed_vs_flow, tests/sim test_fold)
             * at the cost of a few passes over the flows instead of running them: on 16384
             * GPUs 0.2 s per collective instead of 10 s. */
            if (!comm_coll_analytic_time(comm_net_topology(a->net), group, algo, &args,
                                         &duration_ps, &error)) {
              pending_free(p);
              fail(a, x, error);
              return;
            }
            timed = TRUE;
          }
          break;
        }
        k = sim_coll_memo_add(&a->memo, algo, group, op, args.bytes, timed, duration_ps);
        if (!timed) {
          /* Runs as flows below, and its end times it. */
          p->memo = k;
          p->start_ps = sim_engine_now(engine);
        }
      }
      const sim_coll_memo_entry *memo = sim_coll_memo_at(&a->memo, k);
      if (memo->timed) {
        sim_engine_schedule_in(engine, memo->duration_ps, task_finished_ev, p, 0);
        return;
      }
    }
    comm_coll *coll = comm_coll_new(a->net, group_for(a, g, t), algo, &args, &error);
    if (!coll) {
      pending_free(p);
      fail(a, x, error);
      return;
    }
    if (a->colls->len >= a->colls_compact_at)
      colls_compact(a, sim_engine_now(engine));
    g_ptr_array_add(a->colls, coll);
    comm_coll_start(coll, task_finished, p);
    return;
  }
  default:
    break;
  }
  pending_free(p);
  fail(a, x, g_error_new(DT_ERROR, DT_ERROR_INTERNAL, "task '%s': no communication model for it",
                         sim_graph_task_name(g, t)));
}

const sim_comm_ops sim_net_adapter_ops = {"network", adapter_start, adapter_error};
