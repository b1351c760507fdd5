/* Collective algorithms and parameter servers over the network of comm_net.h.
 *
 * A collective runs over a group of device ranks. Each algorithm is a schedule of flows: a list
 * of phases, each phase a sequence of steps in which every rank sends some messages, waits for
 * the messages addressed to it, then reduces what it received at the caller's reduction rate
 * (bytes/s, e.g. the device memory bandwidth / 3). With the flow network model the schedule runs
 * as flows, so contention shows; with the analytic model the whole collective is one closed form
 * (alpha-beta-gamma terms per step from the routes' latencies and bottleneck bandwidths) and one
 * engine event. The algorithms form a registry of const tables (`dtsim list algorithms`).
 *
 * Sizes follow nccl-tests: `bytes` is the buffer of allreduce, broadcast and reduce, the gathered
 * output of allgather (each rank contributes bytes/n), and the input of reduce-scatter (each rank
 * keeps bytes/n).
 *
 * Lifecycle: comm_coll_new() -> comm_coll_start() -> (engine runs; done fires) -> statistics ->
 * comm_coll_free(). A parameter server: comm_ps_new() -> comm_ps_step_begin() ->
 * comm_ps_push() as gradients appear -> (done callbacks) -> comm_ps_free(). */
#ifndef DTSIM_COMM_COLL_H
#define DTSIM_COMM_COLL_H

#include <glib.h>
#include <stdint.h>

#include "comm_net.h"

typedef enum {
  COMM_COLL_ALLREDUCE,
  COMM_COLL_ALLGATHER,
  COMM_COLL_REDUCE_SCATTER,
  COMM_COLL_BROADCAST,
  COMM_COLL_REDUCE,
  COMM_COLL_ALLTOALL,      /* each rank sends bytes/n to every rank (nccl-tests alltoall_perf) */
  COMM_COLL_N_OPS,
} comm_coll_op;

const char *comm_coll_op_name(comm_coll_op op);
/* nccl-tests bus-bandwidth factor: 2(n-1)/n for allreduce, (n-1)/n for allgather and
 * reduce-scatter and alltoall, 1 for broadcast and reduce. */
double comm_coll_busbw_factor(comm_coll_op op, uint32_t n);

/* ---- Groups ------------------------------------------------------------------------------ */

typedef struct comm_coll_group comm_coll_group;

/* A group of `n` device ranks (ranks[i] is the global rank of group member i); ranks == NULL
 * means every device of the topology in rank order. The topology must outlive the group. */
comm_coll_group *comm_coll_group_new(const comm_topology *topo, const uint32_t *ranks,
                                     uint32_t n);
void comm_coll_group_free(comm_coll_group *group);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(comm_coll_group, comm_coll_group_free)
uint32_t comm_coll_group_size(const comm_coll_group *group);
/* Nodes the group spans, and members per node when every node holds the same number of
 * consecutive members (0 otherwise; hierarchical algorithms need it). */
uint32_t comm_coll_group_nodes(const comm_coll_group *group);
uint32_t comm_coll_group_per_node(const comm_coll_group *group);

/* ---- Algorithms ---------------------------------------------------------------------------- */

typedef struct comm_coll_algorithm comm_coll_algorithm;

/* How a pipelined ring runs under the flow model: as one flow per rank and phase carrying all
 * its steps' bytes, plus the per-step latency and reduction terms (the default, n flows), or
 * step by step (2(n-1) x n flows; for validation). Non-ring algorithms always run by steps. */
typedef enum { COMM_COLL_FORM_PIPELINED, COMM_COLL_FORM_STEPS } comm_coll_form;

typedef struct {
  comm_coll_op op;
  uint64_t bytes;          /* nccl-tests size, see the top of this file */
  uint32_t root;           /* broadcast and reduce: the root's group index */
  double reduce_Bps;       /* reduction rate on the device, bytes/s; 0: reductions are free */
  uint64_t chunk_bytes;    /* pipeline chunk of chains and trees; 0: the chunk count that
                            * minimises the pipeline's closed form (docs/collectives.md) */
  comm_coll_form form;
  sim_time_ps launch_ps;   /* software cost before the first transfer (kernel launch, setup) */
  sim_time_ps step_ps;     /* software cost of every step a rank takes part in (protocol) */
} comm_coll_args;

/* The registry, in a fixed order. */
size_t comm_coll_algorithm_count(void);
const comm_coll_algorithm *comm_coll_algorithm_at(size_t index);
/* NULL with a DT_ERROR_INPUT error naming `what` and the known names when `name` is unknown. */
const comm_coll_algorithm *comm_coll_algorithm_find(const char *name, const char *what,
                                                    GError **error);
const char *comm_coll_algorithm_name(const comm_coll_algorithm *algo);
const char *comm_coll_algorithm_description(const comm_coll_algorithm *algo);
gboolean comm_coll_algorithm_supports(const comm_coll_algorithm *algo, comm_coll_op op);
/* TRUE when the algorithm brings its own software costs, chunking and reduction rate (nccl:
 * NCCL's tuning model), so the args' launch_ps, step_ps, chunk_bytes and reduce_Bps change
 * nothing. */
gboolean comm_coll_algorithm_own_costs(const comm_coll_algorithm *algo);
/* TRUE for a decision rule ("auto") that stands for another algorithm of the registry. */
gboolean comm_coll_algorithm_is_rule(const comm_coll_algorithm *algo);
/* The concrete algorithm `algo` stands for: itself, or for "auto" the one its decision rule
 * picks for this group, operation and size (docs/collectives.md states the rule). */
const comm_coll_algorithm *comm_coll_resolve(const comm_coll_algorithm *algo,
                                             const comm_coll_group *group,
                                             const comm_coll_args *args);

/* Closed-form time of the collective on an idle network, in picoseconds. FALSE with an error
 * when the algorithm cannot run this operation on this group. */
gboolean comm_coll_analytic_time(const comm_topology *topo, const comm_coll_group *group,
                                 const comm_coll_algorithm *algo, const comm_coll_args *args,
                                 sim_time_ps *out_ps, GError **error);

/* ---- Running a collective ------------------------------------------------------------------ */

typedef struct comm_coll comm_coll;

/* Plans the collective (resolving "auto"); errors when the algorithm does not support the
 * operation or the group's shape. The net and group must outlive the collective. */
comm_coll *comm_coll_new(comm_net *net, const comm_coll_group *group,
                         const comm_coll_algorithm *algo, const comm_coll_args *args,
                         GError **error);
void comm_coll_free(comm_coll *coll);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(comm_coll, comm_coll_free)
/* Starts now; done(engine, user) fires once, when every rank has finished. Start once. */
void comm_coll_start(comm_coll *coll, comm_done_fn done, void *user);
gboolean comm_coll_finished(const comm_coll *coll);
const comm_coll_algorithm *comm_coll_algorithm_used(const comm_coll *coll);
/* What ran: the algorithm's name, or for "nccl" "nccl:ALGO/PROTOCOL/CHANNELS" (e.g.
 * "nccl:ring/LL128/16"). Owned by the collective. */
const char *comm_coll_label(const comm_coll *coll);
/* Start and end times (valid once finished), flows sent, and bytes each member received. */
sim_time_ps comm_coll_start_time(const comm_coll *coll);
sim_time_ps comm_coll_end_time(const comm_coll *coll);
uint64_t comm_coll_flows(const comm_coll *coll);
uint64_t comm_coll_bytes_received(const comm_coll *coll, uint32_t member);

/* ---- Parameter servers --------------------------------------------------------------------- */

typedef enum {
  COMM_PS_CPU,         /* host CPU socket of a worker node */
  COMM_PS_GPU,         /* one device of a worker node */
  COMM_PS_COLOCATED,   /* hosts of the worker nodes, round-robin (K < N as TensorFlow jobs ran) */
  COMM_PS_DEDICATED,   /* host of an extra node (comm_cluster_spec.extra_nodes > 0) */
} comm_ps_placement;

const char *comm_ps_placement_name(comm_ps_placement placement);

/* Who pushes: every device (TensorFlow's parameter_server), or one worker per node whose
 * devices keep replicas (distributed_replicated); comm_ps_config.node_workers. */
typedef enum { COMM_PS_WORKER_DEVICE, COMM_PS_WORKER_NODE } comm_ps_workers;
const char *comm_ps_workers_name(comm_ps_workers workers);

/* How tensors are spread over the servers: balanced by bytes (comm_ps_place_tensors), or dealt
 * out in turn in creation order (comm_ps_deal_tensors), as TensorFlow's replica_device_setter
 * does by default. */
typedef enum { COMM_PS_SHARD_BYTES, COMM_PS_SHARD_ROUND_ROBIN } comm_ps_sharding;
const char *comm_ps_sharding_name(comm_ps_sharding sharding);

typedef struct {
  comm_ps_placement placement;
  uint32_t servers;            /* K >= 1 (colocated: 0 means one per worker node) */
  const uint64_t *tensor_bytes;/* gradient (= parameter) bytes of each tensor */
  uint32_t tensors;
  double server_reduce_Bps;    /* aggregation rate of a server, bytes/s; 0: free */
  /* FALSE: every member is a worker that pushes its own gradients and pulls the parameters
   * (TensorFlow's parameter_server). TRUE: one worker per node, whose members keep replicas
   * (TensorFlow's distributed_replicated): a tensor's gradients are first summed on one member
   * of the node (round-robin by tensor, at local_reduce_Bps), that member pushes one copy to
   * the server, the server sends one copy to the node's host, and the host copies it to every
   * member. */
  gboolean node_workers;
  double local_reduce_Bps;     /* node_workers: summing rate of a member, bytes/s; 0: free */
  /* The shard of each tensor (each below `servers`), as the caller placed them; NULL: by bytes
   * (comm_ps_place_tensors). */
  const uint32_t *shard_of;
} comm_ps_config;

typedef struct comm_ps comm_ps;

/* Called when `worker` (a group index) has received the parameters of `tensor`. */
typedef void (*comm_ps_tensor_fn)(sim_engine *engine, uint32_t worker, uint32_t tensor,
                                  void *user);

/* Places `tensors` tensors (tensor_bytes[i] bytes each) on `servers` shards balanced by
 * bytes: largest first onto the least-loaded shard (equal sizes: the lower tensor first; equal
 * loads: the lower shard). shard_of[i] receives tensor i's shard. comm_ps_new() places its
 * tensors with it; dtsim-mpi replay does too, so real servers hold what simulated ones do. */
void comm_ps_place_tensors(const uint64_t *tensor_bytes, uint32_t tensors, uint32_t servers,
                           uint32_t *shard_of);
/* Deals `tensors` tensors out to `servers` shards in turn, tensor i to shard (first + i) mod
 * servers, whatever their sizes: TensorFlow 1.x's replica_device_setter with its default
 * ps_strategy (_RoundRobinStrategy) places each variable so, in creation order; `first` is the
 * count of variables it placed before (tf_cnn_benchmarks creates global_step first, on task 0). */
void comm_ps_deal_tensors(uint32_t tensors, uint32_t servers, uint32_t first, uint32_t *shard_of);
/* Bytes of the busiest shard over the mean of `servers` shards (1.0: balanced; 0 without
 * bytes). */
double comm_ps_busiest_share(const uint64_t *tensor_bytes, uint32_t tensors, uint32_t servers,
                             const uint32_t *shard_of);

/* Whether `servers` servers can be placed so on this topology, with one line why not: any
 * count of one or more (cpu, colocated: round-robin over the worker nodes' host sockets, gpu:
 * over the devices, several per socket or device beyond their number); dedicated needs the
 * topology's extra nodes. comm_ps_new() checks with it; so does `search` before it proposes a
 * count, so both accept the same. */
gboolean comm_ps_check(const comm_topology *topo, comm_ps_placement placement, uint32_t servers,
                       GError **error);
/* Workers are the members of `group`. Tensors are placed on K shards by config->shard_of, or
 * without it by comm_ps_place_tensors(). */
comm_ps *comm_ps_new(comm_net *net, const comm_coll_group *group, const comm_ps_config *config,
                     GError **error);
void comm_ps_free(comm_ps *ps);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(comm_ps, comm_ps_free)
uint32_t comm_ps_servers(const comm_ps *ps);
uint32_t comm_ps_shard_of(const comm_ps *ps, uint32_t tensor);
uint64_t comm_ps_shard_bytes(const comm_ps *ps, uint32_t shard);
comm_ep comm_ps_server_endpoint(const comm_ps *ps, uint32_t shard);
/* The host socket of server k on the hosts: round-robin over the worker nodes, then over their
 * sockets (cpu, colocated), or over the extra nodes, then their sockets (`dedicated`). */
comm_ep comm_ps_host(const comm_topology *topo, gboolean dedicated, uint32_t k);
/* When the aggregation of `tensor` ended in the last step (0 before any). */
sim_time_ps comm_ps_aggregation_end(const comm_ps *ps, uint32_t tensor);

/* Begins a synchronous step: pulled(engine, worker, tensor, user) fires per worker and tensor
 * as parameters arrive (may be NULL), done(engine, user) once every pull has arrived. */
void comm_ps_step_begin(comm_ps *ps, comm_ps_tensor_fn pulled, comm_done_fn done, void *user);
/* Worker `worker` has its gradient of `tensor`: the push starts now. Once all workers' pushes
 * of a tensor have arrived its shard aggregates them (W x bytes at the server's rate, one
 * aggregation at a time per server), then every worker pulls the tensor. With node_workers the
 * member's push goes to its node's summing member first, and W counts nodes. */
void comm_ps_push(comm_ps *ps, uint32_t worker, uint32_t tensor);
/* Pushes every tensor of every worker now. */
void comm_ps_push_all(comm_ps *ps);

#endif
