/* Context parallelism of a transformer block's attention (strategy 3d): the time of the
 * attention kernels of one context-parallel rank and of the exchange of keys and values over
 * its group, as each form of --cp-comm runs them, on the collective timer's network.
 *
 *   p2p        cp steps of attention blocks (wl_tf_cp_step); the keys and values of the next
 *              step travel around the ring while a step computes, so a step after the first
 *              costs max(transfer, block) and the transfer shows only where it is the longer
 *              (Megatron-Core / Transformer Engine's AttnFuncWithCPAndKVP2P). Backward runs
 *              the ring again with the keys and values and their gradients (twice the bytes),
 *              and the gradients go home after the last step.
 *   all-gather the keys and values gathered from the group before the blocks (again before
 *              backward), the gradients reduce-scattered after them; not overlapped.
 *   a2a        queries, keys and values all-to-all from a sequence split to a head split
 *              (heads / cp per rank over the whole sequence), the output back; backward the
 *              conjugates (DeepSpeed-Ulysses); not overlapped.
 *
 * The group: cp ranks tp apart (Megatron's order tp, cp, dp, pp), the tp groups of a replica at
 * once. A ring step of B bytes a rank is timed as the ring all-gather of B cp bytes over the
 * group, over its cp - 1 steps. Sources: docs/workloads.md ("Context parallelism"). */
#ifndef DTSIM_CP_H
#define DTSIM_CP_H

#include <glib.h>
#include <stdint.h>

#include "colltime.h"
#include "devices.h"
#include "strategy.h"
#include "strategy_3d.h"
#include "wl_transformer.h"

typedef struct {
  int64_t compute_ps[2];     /* attention kernels of the slowest rank: forward, backward */
  int64_t exposed_ps[2];     /* the exchange on the critical path beside them */
  int64_t comm_ps[2];        /* the whole exchange */
} sim_cp_attention;

/* One ring step's exposed time: the transfer of the next step's keys and values runs beside
 * this step's block, so the step lasts the longer of the two. */
int64_t sim_cp_ring_step_ps(int64_t transfer_ps, int64_t block_ps);

/* The time of merging one step's partial results into the rank's: forward (pass 0) the output
 * rescaled and added, backward (1) the query gradient added and the key and value gradients
 * concatenated and added. */
int64_t sim_cp_merge_ps(const dev_device *dev, const wl_tf *tf, const wl_tf_shard *sh, int pass);

/* The forward ([0]) and backward ([1]) time of the attention block of step `step` of the p2p
 * ring on context-parallel rank `rank` (wl_tf_cp_step), with the merge of its partial results
 * (sim_cp_merge_ps). */
void sim_cp_step_ps(const dev_device *dev, const wl_tf *tf, const wl_tf_shard *sh, uint32_t rank,
                    uint32_t step, int64_t ps[2]);

/* The attention of one block (its micro-batch, tensor-parallel degree and cp in `sh`, cp >= 2)
 * on `dev`, its exchange over the context-parallel groups (tp ranks apart) of the timer's
 * network. */
gboolean sim_cp_attention_time(const dev_device *dev, sim_coll_timer *ct, const wl_tf *tf,
                               const wl_tf_shard *sh, wl_cp_comm comm, sim_cp_attention *out,
                               GError **error);

/* The context-parallel rules of a 3d plan (strategy_3d's check, so `run` and `search` share
 * them): the sequence splits into 2 cp chunks, the a2a form splits the heads (and the key/value
 * heads) of a tensor rank over cp, attention is the fused kernel. NULL when they hold, else a
 * short reason with *error naming the options. */
#define SIM_DROP_CP_SEQ "the sequence does not split into 2 x cp chunks"
#define SIM_DROP_CP_HEADS "tp x cp does not divide the attention heads (--cp-comm a2a)"
#define SIM_DROP_CP_ATTENTION "context parallelism needs --attention flash"
const char *sim__3d_check_cp(const sim_3d_opts *o, const wl_tf *tf, const sim_shape *shape,
                             GError **error);

#endif
