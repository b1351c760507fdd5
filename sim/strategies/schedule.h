/* Pipeline schedules: the order in which one stage of a pipeline runs the forward and backward
 * passes of its micro-batches (and, interleaved, of its model chunks). One module for every
 * pipelined strategy (pp, mp and hybrid in strategy_pp.c, 3d in strategy_3d.c), so a schedule
 * is written once and the strategies differ only in what a pass costs.
 *
 *   GPipe:       all M V forwards, then the backwards in reverse order;
 *   1F1B:        P - 1 - s warm-up forwards on stage s, then one forward and one backward
 *                alternately, then the remaining backwards (at most P - s micro-batches of
 *                activations alive);
 *   interleaved: Megatron-LM's order of V model chunks per device: groups of P micro-batches
 *                through chunk 0, then chunk 1, ...; backward visits the chunks in reverse;
 *                (P - s - 1) 2 + (V - 1) P warm-up forwards. With V = 1 it is 1F1B.
 *
 * Warm-ups are capped at the M V units there are. The peak of activations each order keeps is
 * wl_tf_inflight_chunks() (workloads/wl_transformer.h).
 *
 * With `ahead` more warm-up forwards (sim_schedule_order_ahead; 1 for expert-parallel overlap)
 * a stage's steady state pairs the forward of one micro-batch with the backward of an earlier
 * one on every stage, the last included: Megatron-Core's combined 1F1B
 * (--overlap-moe-expert-parallel-comm adds one warm-up micro-batch in
 * megatron/core/pipeline_parallel/schedules.py) and DeepSeek-V3's DualPipe; with one stage
 * F0 F1 B0 F2 B1 ... B(M-1). Each such forward keeps one micro-batch more alive
 * (sim_schedule_inflight). */
#ifndef DTSIM_SCHEDULE_H
#define DTSIM_SCHEDULE_H

#include <glib.h>
#include <stdint.h>

#include "wl_transformer.h"

/* One pass of a stage's schedule. */
typedef struct {
  gboolean fwd;      /* forward (else backward) */
  uint32_t mb;       /* micro-batch, 0 .. M - 1 */
  uint32_t chunk;    /* model chunk on the device, 0 .. V - 1 (0 without interleaving) */
} sim_schedule_unit;

/* Fills out[0 .. 2 M V - 1] with the passes of stage s (0 = first) of a P-stage pipeline, M
 * micro-batches per iteration, V model chunks per device (1 unless interleaved), in the order
 * the stage runs them. */
void sim_schedule_order(wl_schedule schedule, uint32_t P, uint32_t s, uint64_t M, uint32_t V,
                        sim_schedule_unit *out);

/* The same with `ahead` more warm-up forwards on the stage (capped at the M V units; GPipe's
 * warm-up is every forward already). ahead 0 is sim_schedule_order. */
void sim_schedule_order_ahead(wl_schedule schedule, uint32_t P, uint32_t s, uint64_t M,
                              uint32_t V, uint32_t ahead, sim_schedule_unit *out);

/* The most (micro-batch, chunk) units whose activations stage s keeps at once in that order:
 * wl_tf_inflight_chunks() and one more for each warm-up forward ahead, at most M V. */
uint64_t sim_schedule_inflight(wl_schedule schedule, uint32_t P, uint32_t s, uint64_t M,
                               uint32_t V, uint32_t ahead);

#endif
