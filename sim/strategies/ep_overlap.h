/* Expert-parallel communication overlapped with another micro-batch's compute (strategy 3d,
 * --ep-overlap on): Megatron-Core's combined 1F1B schedule (--overlap-moe-expert-parallel-comm)
 * and DeepSeek-V3's DualPipe run the forward of one micro-batch beside the backward of another,
 * block by block, so the dispatch and combine all-to-alls of each run under the other's
 * compute. While they run, the communication kernels hold `comm_sms` of the device's SMs
 * (DeepEP's 20 by default; DeepSeek-V3 report, sec. 3.2.2: 20 of the H800's 132), and the
 * compute beside them runs on the rest. docs/workloads.md ("Expert-parallel overlap"). */
#ifndef DTSIM_EP_OVERLAP_H
#define DTSIM_EP_OVERLAP_H

#include <stdint.h>

typedef struct {
  int64_t exposed_ps[2]; /* the all-to-alls of the forward ([0]) and backward ([1]) pass that
                          * the other pass's compute does not cover */
  int64_t slower_ps[2];  /* compute time added to the forward ([0]) and backward ([1]) pass
                          * for the SMs the other pass's all-to-alls hold */
} sim_ep_overlap;

/* Per block and micro-batch: a2a_ps the all-to-alls of each pass, compute_ps the compute of
 * each pass (backward with its recomputation), on a device of `sms` SMs of which the
 * communication holds `comm_sms` (< sms) while it runs. The forward's all-to-alls run under
 * the backward's compute: min(a2a[0], compute[1]) of them is hidden, during which the
 * backward runs on sms - comm_sms SMs (it takes comm_sms / (sms - comm_sms) of that time
 * longer); the rest shows. The same for the backward's under the forward's compute. */
void sim_ep_overlap_time(const int64_t a2a_ps[2], const int64_t compute_ps[2], unsigned sms,
                         unsigned comm_sms, sim_ep_overlap *out);

#endif
