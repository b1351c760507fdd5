/* Predictions through dtsim's own model: the topology built from the fitted system file, a
 * group of the job's ranks in dtsim's numbering, and comm/coll's algorithm of the same name,
 * run on the flow network (or its closed form, the analytic model). */
#include "coll.h"
#include "comm_mpi.h"
#include "util.h"

struct comm_mpi_model {
  comm_topology *topo;
  comm_coll_group *group;
  gboolean flow;
  double reduce_Bps;
};

void comm_mpi_model_free(comm_mpi_model *m)
{
  if (m == NULL)
    return;
  comm_coll_group_free(m->group);
  comm_topology_free(m->topo);
  g_free(m);
}

comm_mpi_model *comm_mpi_model_new(const char *system_path, uint32_t nodes, uint32_t per_node,
                                   const uint32_t *dtsim_rank_of, gboolean flow, double reduce_Bps,
                                   GError **error)
{
  comm_cluster_spec spec = {.system = system_path, .nodes = nodes, .devices_per_node = per_node};
  g_autoptr(comm_mpi_model) m = g_new0(comm_mpi_model, 1);
  m->topo = comm_topology_build(&spec, error);
  if (m->topo == NULL)
    return NULL;
  m->group = comm_coll_group_new(m->topo, dtsim_rank_of, nodes * per_node);
  m->flow = flow;
  m->reduce_Bps = reduce_Bps;
  return g_steal_pointer(&m);
}

const char *comm_mpi_model_name(const comm_mpi_model *m)
{
  return m->flow ? "dtsim flow model" : "dtsim analytic model";
}

static const comm_coll_op coll_ops[COMM_MPI_N_OPS] = {
    [COMM_MPI_ALLREDUCE] = COMM_COLL_ALLREDUCE,
    [COMM_MPI_ALLGATHER] = COMM_COLL_ALLGATHER,
    [COMM_MPI_REDUCE_SCATTER] = COMM_COLL_REDUCE_SCATTER,
    [COMM_MPI_BROADCAST] = COMM_COLL_BROADCAST,
};

static void on_done(sim_engine *engine, void *user)
{
  *(gboolean *)user = TRUE;
}

gboolean comm_mpi_model_predict(comm_mpi_model *m, const comm_mpi_algorithm *algo,
                                uint64_t bytes, double *out_s, GError **error)
{
  comm_mpi_row_costs costs = {.reduce_Bps = m->reduce_Bps, .host_s = 0};
  return comm_mpi_model_predict_costs(m, algo, bytes, &costs, out_s, error);
}

gboolean comm_mpi_model_predict_costs(comm_mpi_model *m, const comm_mpi_algorithm *algo,
                                      uint64_t bytes, const comm_mpi_row_costs *costs,
                                      double *out_s, GError **error)
{
  g_return_val_if_fail(costs != NULL && costs->host_s >= 0, FALSE);
  const comm_coll_algorithm *ca = comm_coll_algorithm_find(algo->name, "--algorithms", error);
  if (ca == NULL)
    return FALSE;
  comm_coll_args args = {.op = coll_ops[algo->op], .bytes = bytes, .root = 0,
                         .reduce_Bps = costs->reduce_Bps, .chunk_bytes = 0,
                         .form = COMM_COLL_FORM_PIPELINED,
                         .launch_ps = sim_time_from_s(costs->host_s)};
  if (!m->flow) {
    sim_time_ps t;
    if (!comm_coll_analytic_time(m->topo, m->group, ca, &args, &t, error))
      return FALSE;
    *out_s = sim_time_to_s(t);
    return TRUE;
  }
  g_autoptr(sim_engine) engine = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(engine, m->topo, COMM_NET_FLOW);
  g_autoptr(comm_coll) coll = comm_coll_new(net, m->group, ca, &args, error);
  if (coll == NULL)
    return FALSE;
  gboolean done = FALSE;
  comm_coll_start(coll, on_done, &done);
  sim_engine_run(engine);
  if (sim_engine_error(engine)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s", sim_engine_error(engine));
    return FALSE;
  }
  if (!done) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "the simulated %s did not complete",
                comm_mpi_op_name(algo->op));
    return FALSE;
  }
  *out_s = sim_time_to_s(comm_coll_end_time(coll) - comm_coll_start_time(coll));
  return TRUE;
}
