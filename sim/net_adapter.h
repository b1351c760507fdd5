/* The executor's communication model backed by comm/: transfers become comm_net_send() calls,
 * collectives comm/coll schedules, between the endpoints the plan's units stand for. */
#ifndef DTSIM_NET_ADAPTER_H
#define DTSIM_NET_ADAPTER_H

#include "coll.h"
#include "comm_net.h"
#include "plan.h"

typedef struct sim_net_adapter sim_net_adapter;

/* `reduce_Bps`: the devices' reduction rate for collectives. The net and plan must outlive
 * the adapter. */
sim_net_adapter *sim_net_adapter_new(comm_net *net, const sim_plan *plan, double reduce_Bps);
void sim_net_adapter_free(sim_net_adapter *a);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sim_net_adapter, sim_net_adapter_free)
/* The first error met while running (an algorithm that cannot run on a group, servers that
 * cannot be placed) stops the engine and comes back from sim_exec_run() through the ops. */
extern const sim_comm_ops sim_net_adapter_ops;
/* Parameter servers for plans with PS tasks: placement, server count, and the servers'
 * aggregation rate in bytes/s; node_workers: one worker per node that sums its devices'
 * gradients at local_reduce_Bps first (comm_ps_config). */
void sim_net_adapter_set_ps(sim_net_adapter *a, comm_ps_placement placement, uint32_t servers,
                            double server_reduce_Bps, gboolean node_workers,
                            double local_reduce_Bps);
/* When the parameter servers' aggregation of `tensor` ended in the last step (0 without). */
sim_time_ps sim_net_adapter_ps_aggregated(const sim_net_adapter *a, uint32_t tensor);
/* The endpoint a unit of the plan stands for. */
comm_ep sim_net_adapter_endpoint(const sim_net_adapter *a, sim_unit_id unit);

#endif
