/* Memory a training process holds beyond its tensors (see wl_transformer.h, "Reserved
 * memory"): the CUDA context, NCCL's communication buffers and the caching allocator's slack.
 * The context, the channel counts and the slack are the framework's (wl_framework.h: its
 * catalog file gives each with its source); the bytes of one channel are NCCL's. Sources:
 * docs/workloads.md ("Reserved memory"). */
#include "wl_transformer.h"
#include "wl_framework.h"

/* NCCL's buffers of one connection of one channel, allocated on the receiving side: the Simple
 * protocol's NCCL_BUFFSIZE (4 MiB by default, NCCL's environment documentation), LL128's
 * default 120 x 640 x 8 x 8 bytes (elements per thread, threads, steps, bytes) and LL's
 * 8 x 512 x 8 x 16 bytes (lines per thread, threads, steps, line), NCCL src/include/device.h
 * and src/init.cc. */
#define CHANNEL_BYTES ((UINT64_C(4) << 20) + UINT64_C(120) * 640 * 8 * 8 + UINT64_C(8) * 512 * 8 * 16)

uint64_t wl_framework_reserved(const wl_framework *fw, uint32_t communicators,
                               uint32_t p2p_peers, uint64_t dynamic_bytes,
                               wl_reserved_bytes *out)
{
  wl_framework defaults;
  if (!fw) {
    wl_framework_defaults(&defaults);
    fw = &defaults;
  }
  out->context = fw->context_bytes;
  out->nccl = ((uint64_t)communicators * fw->nccl_channels +
               (uint64_t)p2p_peers * fw->nccl_p2p_channels) * CHANNEL_BYTES;
  out->slack = dynamic_bytes / 100 * fw->slack_percent;
  return out->context + out->nccl + out->slack;
}

uint64_t wl_reserved_memory(uint32_t communicators, uint32_t p2p_peers, uint64_t dynamic_bytes,
                            wl_reserved_bytes *out)
{
  return wl_framework_reserved(NULL, communicators, p2p_peers, dynamic_bytes, out);
}
