/* Chakra execution traces as a workload (--chakra DIR) and as an output of any plan
 * (--chakra-out DIR); the file format itself is workloads/wl_chakra.c (reading) and
 * traces/chakra_out.c (writing). docs/chakra.md says what is taken and what is left. */
#ifndef DTSIM_SIM_CHAKRA_H
#define DTSIM_SIM_CHAKRA_H

#include "plan.h"
#include "net_adapter.h"
#include "scenario.h"

/* The task graph of the scenario's --chakra folder on a cluster of `devices` devices: one unit
 * per rank (rank r on device r; the k-th rank past the devices whose nodes are all CPU ops on
 * a host, where comm_ps_host puts server k), compute nodes on their rank's streams with their recorded
 * time or, without one, their FLOPs and bytes through `device` (a catalog name or file);
 * collectives, sends and receives as communication tasks of dtsim's network. *reduce_Bps
 * receives the device's rate of summing, bytes/s, for the collectives. */
sim_plan *sim_chakra_plan(const sim_scenario *s, const char *device, uint64_t devices,
                          double *reduce_Bps, GError **error);

/* The scenario --chakra-out simulates: one iteration unless --iterations is given, and every
 * device unless --symmetry is given (ZeRO 3 excepted, which only the folded 3-D plan builds), so
 * that each tensor-, data- and expert-parallel collective is a collective node of its group
 * (the folded 3-D plan keeps them as timed tasks). */
void sim_chakra_export_scenario(sim_scenario *s);

/* The parameter servers of a ps plan, for its export: `servers` shards (the plan's ps_shard_of, or
 * comm_ps_place_tensors, places the tensors), each aggregating at `reduce_Bps` bytes/s, on hosts (`on_host`) or
 * devices. */
typedef struct {
  uint32_t servers;
  double reduce_Bps;
  gboolean on_host;
  uint32_t nodes, devices_per_node;   /* where device servers go */
  /* The run: each server aggregates in the order it did there (NULL: the order of the pushes) */
  const sim_net_adapter *adapter;
} sim_chakra_servers;

/* Writes `plan` as Chakra traces in `dir`, one file per rank of plan->devices (a plan that
 * builds one device for several, as folded data parallelism and 3-D do, is written for every
 * rank it stands for), and comm_group.json. A ps plan (`servers` not NULL) also has a rank per
 * host server after the workers' (a device's servers are in its rank): each push is a send on
 * the worker and a receive on its server, the server's aggregation a compute node, each pull
 * a send back and a receive. A device's units (CHAOS's threads) are one rank. */
gboolean sim_chakra_write(const sim_plan *plan, const char *dir, const sim_chakra_servers *servers,
                          GError **error);

#endif
