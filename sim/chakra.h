/* Chakra execution traces as a workload (--chakra DIR) and as an output of any plan
 * (--chakra-out DIR); the file format itself is workloads/wl_chakra.c (reading) and
 * traces/chakra_out.c (writing). docs/chakra.md says what is taken and what is left. */
#ifndef DTSIM_SIM_CHAKRA_H
#define DTSIM_SIM_CHAKRA_H

#include "plan.h"
#include "scenario.h"

/* The task graph of the scenario's --chakra folder on a cluster of `devices` devices: one unit
 * per rank (rank r on device r), compute nodes on their rank's streams with their recorded
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

/* Writes `plan` as Chakra traces in `dir`, one file per rank of plan->devices (a plan that
 * builds one device for several, as folded data parallelism and 3-D do, is written for every
 * rank it stands for), and comm_group.json. */
gboolean sim_chakra_write(const sim_plan *plan, const char *dir, GError **error);

#endif
