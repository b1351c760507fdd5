/* The mechanics `--strategy 3d` takes from its framework (fsdp.c): FSDP's per-block parameter
 * gathers and gradient reductions as tasks around a pass's compute, data-parallel collectives
 * over a sharding group (HSDP), and ZeRO-Offload's host step and PCIe transfers.
 *
 * FSDP2 (PyTorch's fully_shard on each transformer block) gathers a block's parameters just
 * before the block runs, `prefetch` blocks ahead of the block in use, on a stream beside the
 * compute; it frees them after the block's forward (reshard after forward) and gathers them
 * again for backward; each block's gradients are reduce-scattered as soon as its backward is
 * done, beside the next block's backward. docs/strategies.md ("Frameworks") has the timeline. */
#ifndef DTSIM_FSDP_H
#define DTSIM_FSDP_H

#include <glib.h>
#include <stdint.h>

#include "colltime.h"
#include "framework_keys.h"
#include "strategy.h"
#include "strategy_3d.h"
#include "taskgraph.h"
#include "wl_framework.h"

/* One pass (forward or backward of a micro-batch over a model chunk) whose compute is one task
 * per block, in the order the blocks run. */
typedef struct {
  sim_stream_id comm;           /* the device's stream of gathers and reductions */
  const sim_task_id *pieces;    /* the blocks' compute tasks, in order */
  uint32_t n;                   /* blocks */
  sim_time_ps gather_ps;        /* one block's parameter all-gather (0: none) */
  sim_time_ps reduce_ps;        /* one block's gradient reduction after it (0: none) */
  uint32_t prefetch;            /* gathers that may run ahead of the block in use */
  uint32_t chunk;               /* for the tasks' names */
} sim_fsdp_pass;

/* Adds the pass's gathers and reductions on x->comm: gather j before block j starts, and not
 * before block j - 1 - prefetch has finished (a gathered block's memory is free only then);
 * the reduction of block j after block j, queued behind the gather that block j's end
 * released. Returns the last reduction (0 when there is none). */
sim_task_id sim__fsdp_add_pass(sim_graph *g, const sim_fsdp_pass *x);

/* One collective of a data-parallel step: `groups` concurrent groups of `n` ranks, group g
 * holding ranks g group_stride + i stride, each moving `bytes` (nccl-tests size). */
typedef struct {
  comm_coll_op op;
  uint32_t n, stride, groups, group_stride;
  uint64_t bytes;
} sim_dp_step;

/* The collectives of data-parallel `op` of `bytes` on D data-parallel ranks T apart (each of
 * the T tensor ranks' groups), sharded over groups of G consecutive ones (see
 * sim__dp_coll_time): fills steps[0..1] and returns how many (1 or 2). */
uint32_t sim__dp_steps(comm_coll_op op, uint32_t D, uint32_t T, uint32_t G, uint64_t bytes,
                       sim_dp_step steps[2]);

/* The time of a data-parallel collective `op` of `bytes` on each of the T tensor ranks' groups
 * of D data-parallel ranks (ranks d T + r), sharded over groups of G consecutive data-parallel
 * ranks (HSDP; G = D: plain ZeRO/FSDP): an all-gather runs within a sharding group; a
 * reduce-scatter within it, then an allreduce of the shard (bytes / G) across the D / G
 * replicas; an allreduce over all D. */
gboolean sim__dp_coll_time(sim_coll_timer *ct, comm_coll_op op, uint32_t D, uint32_t T,
                           uint32_t G, uint64_t bytes, sim_time_ps *out, GError **error);

/* Seconds to move `bytes` over a PCIe link of `Bps` bytes/s (0 when there is no link rate). */
double sim__pcie_s(uint64_t bytes, double Bps);

/* ---- The 3-D strategy's side (strategy_3d.c) -------------------------------------------------- */

/* The rules of the framework's options on `dp` data-parallel ranks, shared by run and search:
 * a sharding group that divides dp and shards ZeRO state (--zero 1 or more); offload with
 * ZeRO 1 or more. NULL when they hold, else a short reason with *error set. */
const char *sim__3d_check_framework(const sim_3d_opts *o, uint64_t dp, GError **error);
/* Loads the framework of the options (megatron when none), the sharding group (dp when not
 * given) and, with offload, the rate of a device's host link (the system's PCIe fabric);
 * refuses offload with a framework that states no host optimizer rate or a system without a
 * PCIe fabric. */
gboolean sim__3d_framework_load(const sim_3d_opts *o, const comm_topology *topo, uint32_t dp,
                                wl_framework **fw, uint32_t *G, double *pcie_Bps,
                                GError **error);
/* TRUE when parameters are gathered block by block (FSDP): a per-block framework with ZeRO 2
 * or 3 and a sharding group to gather over. */
gboolean sim__3d_per_block(const sim_3d_opts *o, const wl_framework *fw, uint32_t G);
/* Moves what ZeRO-Offload keeps on the host out of a stage's device memory into host_bytes:
 * the optimizer states and an fp32 copy of the gradient shard the host steps on (4 bytes a
 * parameter of the `params` / G shard), and with --offload optimizer+gradients the device's
 * gradients. */
void sim__3d_offload_memory(unsigned offload, uint64_t params, uint32_t G, unsigned zero,
                            sim_3d_metrics *m);

/* Search axes of the 3-D strategy. Frameworks: megatron and fsdp-compile (fsdp runs the same
 * overlap with slower eager kernels, so never wins; deepspeed differs from megatron only in its
 * buckets and ZeRO-3 fetches: give --framework to rank those). Sharding groups: all of dp, and
 * one node's devices when there are several nodes (HSDP). Offload: none, or the optimizer (kept
 * only where the plan does not fit without it, bound_3d). */
void sim__3d_framework_values(const sim_search_ctx *c, GPtrArray *out);
void sim__3d_shard_group_values(const sim_search_ctx *c, GPtrArray *out);
void sim__3d_offload_values(const sim_search_ctx *c, GPtrArray *out);
/* The search's bound on the framework axis: a per-block framework with ZeRO 0 or 1 runs no
 * per-block gathers, and is then Megatron's schedule with its own kernels and reductions (the
 * axis's fsdp-compile: never faster), so it is dropped; sharding groups are tried with
 * per-block frameworks (HSDP) only, which keeps the search's size. NULL to keep the
 * candidate. */
const char *sim__3d_framework_bound(const sim_framework_opts *fo, unsigned zero);

#endif
