/* The scenario's side of frameworks, sharding groups and offload (framework_keys.c): the keys
 * --framework (every strategy), --shard-group, --offload and --ep-overlap (transformer
 * strategies), and their
 * typed values.
 * The frameworks themselves are catalog files (workloads/wl_framework.h). */
#ifndef DTSIM_FRAMEWORK_KEYS_H
#define DTSIM_FRAMEWORK_KEYS_H

#include "scenario.h"

/* What ZeRO-Offload moves to the host: nothing, the optimizer states (and its step), or the
 * gradients too. */
typedef enum { SIM_OFFLOAD_NONE, SIM_OFFLOAD_OPTIMIZER, SIM_OFFLOAD_GRADIENTS } sim_offload;

typedef struct {
  char *framework;      /* catalog name or INI path */
  int64_t shard_group;  /* ZeRO/FSDP sharding group (0: the whole data-parallel group) */
  int offload;          /* sim_offload */
  gboolean ep_overlap;  /* expert-parallel all-to-alls under another micro-batch's compute */
} sim_framework_opts;

extern const sim_key_group sim_keys_framework;

/* The scenario's values (defaults when the group is not there). */
sim_framework_opts sim_framework_opts_of(const sim_scenario *s);

/* The offload's name as --offload takes it. */
const char *sim_offload_name(sim_offload o);

#endif
