/* What the strategies build iterations from: one device's per-layer times and sizes for the
 * chosen model, batch, precision and device, plus the cluster shape. Filling it (from
 * workloads/ and devices/) is separate from using it (the strategies), so strategies can be
 * tested on hand-made numbers. */
#ifndef DTSIM_PLAN_H
#define DTSIM_PLAN_H

#include <glib.h>
#include <stdint.h>

#include "engine.h"
#include "workloads.h"
#include "scenario.h"
#include "taskgraph.h"

typedef struct {
  char *name;
  sim_time_ps forward_ps;
  sim_time_ps backward_data_ps;     /* 0 for the first layer: no data gradient */
  sim_time_ps backward_weights_ps;  /* 0 for layers without parameters */
  sim_time_ps update_ps;            /* optimizer step on this layer's parameters */
  uint64_t forward_flops;
  uint64_t backward_data_flops;     /* the data gradient's (dX task) */
  uint64_t backward_weights_flops;  /* the weight gradient's (dW task) */
  uint64_t param_bytes;             /* gradient bytes to synchronize (= parameter bytes) */
  uint64_t second_bytes;            /* of param_bytes, the layer's second variable (a bias, a
                                     * batch norm's shift); 0: one variable */
  uint64_t output_bytes;            /* activations this layer hands to the next, per batch */
  uint64_t params;                  /* trainable parameters */
  uint64_t saved_bytes;             /* activations kept for backward, per batch */
  gboolean dense;                   /* in the fully connected tail (from the first FC layer on) */
} sim_layer_cost;

typedef struct {
  GArray *layers;                   /* sim_layer_cost, in forward (topological) order */
  uint64_t batch;                   /* per-device mini-batch, samples */
  uint64_t input_bytes;             /* one batch of input, bytes */
  sim_time_ps input_copy_ps;        /* host-to-device copy of one batch */
  sim_time_ps host_step_ps;         /* framework overhead per iteration on the host */
  uint64_t memory_bytes;            /* per-device footprint with one whole model replica */
  double state_bytes_per_param;     /* weights + gradients + optimizer state, per parameter */
  uint64_t workspace_bytes;         /* largest transient buffers of one pass */
  uint64_t memory_capacity_bytes;   /* of the device, 0 if unknown */
  uint64_t reduce_Bps;              /* device's rate of summing gradients, bytes/s */
  /* Strategy chaos (sim/strategies/strategy_chaos.c): the layer times above are one sample's on one of
   * `threads` concurrent threads, update_ps a thread's cost of the layer's shared weights. */
  uint32_t threads;                 /* hardware threads training at once (0: not chaos) */
  uint64_t train_samples, validation_samples, test_samples;   /* per epoch */
  sim_time_ps prepare_ps;           /* sequential preparation of the data set, once */
} sim_costs;

sim_costs *sim_costs_new(void);
void sim_costs_free(sim_costs *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sim_costs, sim_costs_free)
void sim_costs_add_layer(sim_costs *c, const sim_layer_cost *layer); /* copies the name */
const sim_layer_cost *sim_costs_layer(const sim_costs *c, guint i);
guint sim_costs_n_layers(const sim_costs *c);
uint64_t sim_costs_param_bytes(const sim_costs *c);

/* A built-in four-layer workload with round numbers, used when no workload module is
 * available and by tests: conv (2 ms fwd), conv (3 ms), fc (1 ms), loss (0.1 ms). */
sim_costs *sim_costs_demo(uint64_t batch);

/* ---- Strategies ----------------------------------------------------------------------------- */

/* Collective operation codes carried by graph tasks (sim_graph_task_op). */
enum { SIM_OP_ALLREDUCE, SIM_OP_ALLGATHER, SIM_OP_REDUCE_SCATTER, SIM_OP_BROADCAST, SIM_OP_REDUCE,
       SIM_OP_PS_PUSH, SIM_OP_PS_PULL, SIM_OP_ALLTOALL };

typedef struct {
  uint32_t nodes;
  uint32_t devices_per_node;
  gboolean overlap;
  uint64_t bucket_bytes;
  const comm_coll_algorithm *allreduce;
  uint32_t iterations;
  uint32_t micro_batches;
  gboolean gpipe;                   /* TRUE: GPipe schedule; FALSE: 1F1B */
  uint32_t stages;                  /* pipeline stages per replica (0: all devices) */
  const GArray *split;              /* user's stage boundaries (int64_t): first layer of stages
                                     * 2.., or NULL */
  gboolean symmetric;               /* dp: build one device; every collective spans all ranks */
  uint32_t ps_count;
  const sim_scenario *scenario;     /* everything else, for strategies with more options */
  gconstpointer own;                /* the strategy's own options (the typed struct of its key
                                     * group, sim_scenario_own), or NULL */
  /* The cluster and network the driver made (strategies that time collectives while they
   * build, as 3d does, use them; NULL: build from the scenario). */
  const comm_topology *topology;
  comm_net_model net_model;
  const char *device;               /* catalog name or INI file of the devices */
} sim_plan_opts;

/* What a unit of the graph stands for, so the communication adapter can find its endpoint. */
typedef enum { SIM_UNIT_DEVICE, SIM_UNIT_HOST, SIM_UNIT_SERVER } sim_unit_role;
typedef struct {
  sim_unit_role role;
  uint32_t index;                   /* device rank, or node for hosts, or server number */
} sim_unit_info;

/* The graph of N iterations and what reports need to read it. */
typedef struct {
  sim_graph *graph;
  GArray *units;                    /* sim_unit_info per unit */
  sim_unit_id probe_unit;           /* the device the breakdown is measured on */
  sim_stream_id probe_compute;      /* its compute stream; its other streams except "h2d" count
                                     * as communication */
  GArray *iteration_end;            /* sim_task_id of the last task of each iteration (device 0) */
  uint64_t samples_per_iteration;   /* global batch */
  uint32_t devices;
  gboolean symmetric;               /* one device stands for all: collectives span all ranks */
  uint64_t memory_per_device_bytes;
  GArray *host_units;               /* sim_unit_id of each node's host, G_MAXUINT32 if none */
  /* Parameter servers (strategy ps): one tensor per layer with parameters (per variable with
   * --ps-sharding round-robin), and the shard of each (empty: comm/coll places them). */
  GArray *ps_tensor_bytes;          /* uint64_t per tensor */
  GArray *ps_shard_of;              /* uint32_t per tensor, or empty */
  GArray *ps_tasks;                 /* sim_ps_task */
  uint32_t ps_workers;
  /* Set by strategies without a cost table (0: the cost table's): the devices' rate of summing
   * received data, bytes/s, and their memory, bytes. */
  double reduce_Bps;
  uint64_t memory_capacity_bytes;
  /* A folded 3-D plan (one unit per pipeline stage, standing for its tensor and data-parallel
   * peers): its tensor and pipeline degrees; 0 for other plans. */
  uint32_t fold_tp, fold_pp;
  /* The strategy's own figures for its report (see sim_strategy.report), freed with the plan. */
  gpointer extra;
  GDestroyNotify extra_free;
} sim_plan;

/* A worker's push of one tensor in one iteration; the task ends when the worker has pulled
 * the tensor's new parameters back. */
typedef struct {
  sim_task_id task;
  uint32_t iteration, worker, tensor;
} sim_ps_task;

void sim_plan_free(sim_plan *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sim_plan, sim_plan_free)


const sim_strategy *sim_strategy_find(const char *name);
/* sim_strategy_find() for the scenario's keys: NULL with an error naming `where` and the known
 * strategies. */
const void *sim_strategy_resolve(const char *name, const char *where, GError **error);
/* comm_coll_algorithm_find() for the scenario's keys. */
const void *sim_algorithm_resolve(const char *name, const char *where, GError **error);
/* The default strategy (the registry's first, data parallel): on one device, plain training. */
const sim_strategy *sim_strategy_default(void);
/* NULL-terminated registry, in display order. */
const sim_strategy *const *sim_strategies(void);

/* Internal: helpers shared by the strategy builders. */
/* Times one pass of a layer (`update`: the optimizer step of its parameters), picoseconds. */
typedef sim_time_ps (*sim__pass_time_fn)(void *user, const wl_layer *layer, const wl_op_cost *op,
                                         gboolean update);
/* Adds a cost row per layer of `net`: each pass timed by `time`; gradient bytes, FLOPs,
 * activations as the workload counts them. */
void sim__costs_add_layers(sim_costs *c, const wl_net *net, wl_optimizer opt,
                           sim__pass_time_fn time, void *user);
sim_plan *sim__plan_new(void);
/* Splits layers into `stages` contiguous groups: at the user's boundaries (`split`, first layer
 * index of each stage after the first, comma-separated) or balanced so the slowest stage's
 * forward + backward time is as small as possible. first[s] is stage s's first layer;
 * first[stages] = number of layers. */
gboolean sim__partition(const sim_costs *c, uint32_t stages, const GArray *split,
                        uint32_t *first, GError **error);
/* Per-device memory of holding layers [a, b) with `in_flight` batches of saved activations. */
uint64_t sim__stage_memory(const sim_costs *c, uint32_t a, uint32_t b, uint64_t in_flight);
/* A data-parallel style device: its unit "gpuR (node N)" with a compute stream, a
 * communication stream (when with_comm), a host-to-device copy stream "h2d", and the host
 * thread that drives it. */
typedef struct {
  sim_unit_id unit;
  sim_stream_id compute, comm, copy, host;
} sim_device_streams;
void sim__add_device(sim_plan *p, uint32_t rank, uint32_t devices_per_node, gboolean with_comm,
                     sim_device_streams *out);
/* The host thread that drives device `rank` of node `node`: a stream of the node's host process
 * (created on first use). Each iteration's framework step runs there, after the device's
 * previous iteration and before its first pass. */
sim_stream_id sim__host_stream(sim_plan *p, uint32_t node, uint32_t rank);
/* Adds device `rank`'s framework step for one iteration on `host`: after `prev_end` (the
 * device's last task of the previous iteration, if has_prev), before `first` is added. */
sim_task_id sim__host_step(sim_plan *p, const sim_costs *c, sim_stream_id host, gboolean has_prev,
                           sim_task_id prev_end);
/* Check the device count of a plan. */
gboolean sim__check_devices(uint64_t devices, const char *strategy, GError **error);
sim_unit_id sim__plan_add_unit(sim_plan *p, sim_proc_kind kind, sim_unit_role role,
                               uint32_t index, const char *name);

#endif
