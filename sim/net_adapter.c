/* Communication tasks on the modeled network (see net_adapter.h). */
#include "net_adapter.h"

#include "util.h"

#include <string.h>

typedef struct {
  sim_net_adapter *adapter;
  sim_exec *exec;
  sim_task_id task;
} pending;

typedef struct {
  uint32_t *ranks;
  uint32_t n;
  comm_coll_group *group;
} group_rec;

struct sim_net_adapter {
  comm_net *net;
  const sim_plan *plan;
  double reduce_Bps;
  GPtrArray *groups;        /* group_rec*, looked up by content */
  GPtrArray *colls;         /* comm_coll*, freed with the adapter */
  GHashTable *algorithms;   /* name -> const comm_coll_algorithm* */
  GError *error;
};

static void group_rec_free(gpointer p)
{
  group_rec *g = p;
  comm_coll_group_free(g->group);
  g_free(g->ranks);
  g_free(g);
}

sim_net_adapter *sim_net_adapter_new(comm_net *net, const sim_plan *plan, double reduce_Bps)
{
  sim_net_adapter *a = g_new0(sim_net_adapter, 1);
  a->net = net;
  a->plan = plan;
  a->reduce_Bps = reduce_Bps;
  a->groups = g_ptr_array_new_with_free_func(group_rec_free);
  a->colls = g_ptr_array_new_with_free_func((GDestroyNotify)comm_coll_free);
  a->algorithms = g_hash_table_new(g_str_hash, g_str_equal);
  return a;
}

void sim_net_adapter_free(sim_net_adapter *a)
{
  if (!a)
    return;
  g_ptr_array_free(a->colls, TRUE);
  g_ptr_array_free(a->groups, TRUE);
  g_hash_table_destroy(a->algorithms);
  g_clear_error(&a->error);
  g_free(a);
}

const GError *sim_net_adapter_error(const sim_net_adapter *a) { return a->error; }

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
    return comm_topology_host(topo, u->index, 0);
  }
  g_assert_not_reached();
}

static void task_finished(sim_engine *engine, void *user)
{
  pending *p = user;
  sim_exec *x = p->exec;
  sim_task_id t = p->task;
  g_free(p);
  sim_exec_task_done(x, t);
}

/* The group of the devices behind a collective's member streams; groups are reused. */
static const comm_coll_group *group_for(sim_net_adapter *a, const sim_graph *g, sim_task_id t)
{
  const sim_stream_id *m;
  uint32_t n = sim_graph_task_members(g, t, &m);
  g_autofree uint32_t *ranks = g_new(uint32_t, n);
  for (uint32_t i = 0; i < n; i++) {
    sim_unit_id u = sim_graph_stream_unit(g, m[i]);
    ranks[i] = g_array_index(a->plan->units, sim_unit_info, u).index;
  }
  for (guint i = a->groups->len; i-- > 0;) {
    group_rec *r = g_ptr_array_index(a->groups, i);
    if (r->n == n && memcmp(r->ranks, ranks, n * sizeof *ranks) == 0)
      return r->group;
  }
  group_rec *r = g_new0(group_rec, 1);
  r->n = n;
  r->group = comm_coll_group_new(comm_net_topology(a->net), ranks, n);
  r->ranks = g_steal_pointer(&ranks);
  g_ptr_array_add(a->groups, r);
  return r->group;
}

static const comm_coll_op op_of[] = {
    [SIM_OP_ALLREDUCE] = COMM_COLL_ALLREDUCE,   [SIM_OP_ALLGATHER] = COMM_COLL_ALLGATHER,
    [SIM_OP_REDUCE_SCATTER] = COMM_COLL_REDUCE_SCATTER, [SIM_OP_BROADCAST] = COMM_COLL_BROADCAST,
    [SIM_OP_REDUCE] = COMM_COLL_REDUCE,
};

static void fail(sim_net_adapter *a, sim_exec *x, GError *error)
{
  if (!a->error)
    a->error = error;
  else
    g_error_free(error);
  sim_engine_stop(sim_exec_engine(x));
}

static void adapter_start(void *user, sim_exec *x, sim_task_id t)
{
  sim_net_adapter *a = user;
  const sim_graph *g = sim_exec_graph(x);
  pending *p = g_new(pending, 1);
  *p = (pending){a, x, t};
  const sim_stream_id *m;
  uint32_t n = sim_graph_task_members(g, t, &m);
  switch (sim_graph_task_kind(g, t)) {
  case SIM_TASK_TRANSFER: {
    comm_ep src = sim_net_adapter_endpoint(a, sim_graph_stream_unit(g, m[0]));
    comm_ep dst = sim_net_adapter_endpoint(a, sim_graph_stream_unit(g, m[1]));
    comm_net_send(a->net, src, dst, sim_graph_task_bytes(g, t), task_finished, p);
    return;
  }
  case SIM_TASK_COLLECTIVE: {
    int op = sim_graph_task_op(g, t);
    if (op < 0 || op > SIM_OP_REDUCE)
      break;
    if (n < 2) {
      /* A collective of one device moves nothing; it still ends through an event. */
      comm_ep self = sim_net_adapter_endpoint(a, sim_graph_stream_unit(g, m[0]));
      comm_net_send(a->net, self, self, 0, task_finished, p);
      return;
    }
    const char *name = sim_graph_task_algorithm(g, t);
    const comm_coll_algorithm *algo = g_hash_table_lookup(a->algorithms, name);
    GError *error = NULL;
    if (!algo) {
      algo = comm_coll_algorithm_find(name, "--allreduce", &error);
      if (!algo) {
        g_free(p);
        fail(a, x, error);
        return;
      }
      g_hash_table_insert(a->algorithms, (gpointer)name, (gpointer)algo);
    }
    comm_coll_args args = {.op = op_of[op], .bytes = sim_graph_task_bytes(g, t),
                           .reduce_Bps = a->reduce_Bps, .form = COMM_COLL_FORM_PIPELINED};
    comm_coll *coll = comm_coll_new(a->net, group_for(a, g, t), algo, &args, &error);
    if (!coll) {
      g_free(p);
      fail(a, x, error);
      return;
    }
    g_ptr_array_add(a->colls, coll);
    comm_coll_start(coll, task_finished, p);
    return;
  }
  default:
    break;
  }
  g_free(p);
  fail(a, x, g_error_new(DT_ERROR, DT_ERROR_INTERNAL, "task '%s': no communication model for it",
                         sim_graph_task_name(g, t)));
}

const sim_comm_ops sim_net_adapter_ops = {"network", adapter_start};
