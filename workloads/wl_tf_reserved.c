/* Memory a training process holds beyond its tensors (see wl_transformer.h, "Reserved
 * memory"): the CUDA context, NCCL's communication buffers and the caching allocator's slack.
 * Sources: docs/workloads.md ("Reserved memory"). */
#include "wl_transformer.h"

/* The CUDA context of a PyTorch process with its modules loaded lazily (CUDA 11.7 and later),
 * cuBLAS and cuDNN handles and their workspaces: about 0.5 GiB on Ampere and Hopper (an idle
 * PyTorch process shows 0.3-0.8 GiB in nvidia-smi before its first tensor, pytorch/pytorch
 * issue 34323; PyTorch's default cuBLAS workspace on Hopper is 32 MiB per stream). */
#define CONTEXT_BYTES (UINT64_C(512) << 20)

/* NCCL's buffers of one connection of one channel, allocated on the receiving side: the Simple
 * protocol's NCCL_BUFFSIZE (4 MiB by default, NCCL's environment documentation), LL128's
 * default 120 x 640 x 8 x 8 bytes (elements per thread, threads, steps, bytes) and LL's
 * 8 x 512 x 8 x 16 bytes (lines per thread, threads, steps, line), NCCL src/include/device.h
 * and src/init.cc. */
#define CHANNEL_BYTES ((UINT64_C(4) << 20) + UINT64_C(120) * 640 * 8 * 8 + UINT64_C(8) * 512 * 8 * 16)

/* Channels of a collective communicator: NCCL's MAXCHANNELS (32), which it opens on NVSwitch
 * nodes of Hopper and later; a point-to-point peer gets NCCL_NCHANNELS_PER_NET_PEER (2). */
#define COLL_CHANNELS 32
#define P2P_CHANNELS 2

/* The caching allocator's slack over what the tensors need: PyTorch rounds large blocks up to
 * 2 MiB and keeps freed blocks cached in segments that later requests split, so the memory it
 * reserves exceeds what is allocated; counted as 5% of the bytes that come and go each
 * iteration (activations and the like), an assumption (ZeRO-R, Rajbhandari et al. 2020,
 * section 6.3, reports fragmentation severe enough to run out of memory with 30% free). */
#define SLACK_PERCENT 5

uint64_t wl_reserved_memory(uint32_t communicators, uint32_t p2p_peers, uint64_t dynamic_bytes,
                            wl_reserved_bytes *out)
{
  out->context = CONTEXT_BYTES;
  out->nccl = ((uint64_t)communicators * COLL_CHANNELS + (uint64_t)p2p_peers * P2P_CHANNELS) *
              CHANNEL_BYTES;
  out->slack = dynamic_bytes / 100 * SLACK_PERCENT;
  return out->context + out->nccl + out->slack;
}
