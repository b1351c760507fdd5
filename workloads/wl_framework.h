/* The engine around the model: a training framework (Megatron-Core, PyTorch FSDP2 eager or
 * under torch.compile, DeepSpeed) as a catalog file, workloads/catalog/frameworks/NAME.ini, like
 * a device. It states, each number with its source in the file:
 *   - how the framework gathers, reduces and overlaps (per block or per chunk, how many blocks
 *     ahead it prefetches, whether it frees gathered parameters after forward, the dtype of
 *     the gradient reduction, its bucket size);
 *   - how its memory-bound kernels move bytes (an eager RMSNorm moves several times what a fused
 *     one does), as factors over the minimal traffic the workload counts;
 *   - what it keeps in device memory beyond the tensors (CUDA context, NCCL channels, allocator
 *     slack: wl_reserved_memory);
 *   - the optimizer step on the host when states are offloaded (CPU Adam throughput);
 *   - for CNNs on CPUs and Xeon Phi (CPU-era frameworks: Intel Caffe, Torch, BVLC Caffe), the
 *     share of the device model's rate its layers reach end to end.
 * docs/workloads.md ("Frameworks") gives the sources and the formulas. */
#ifndef DTSIM_WL_FRAMEWORK_H
#define DTSIM_WL_FRAMEWORK_H

#include <glib.h>
#include <stdint.h>

#include "wl_transformer.h"

typedef struct {
  char *name;
  char *path;
  char *description;
  /* [overlap] */
  gboolean gather_per_block;    /* ZeRO-3 parameters gathered one block at a time (FSDP units)
                                 * rather than a whole model chunk before each pass */
  uint32_t prefetch_blocks;     /* gathers issued ahead of the block in use (FSDP2: 1) */
  gboolean reshard_after_forward; /* ZeRO-3 gathers again for backward */
  gboolean reduce_per_block;    /* each block's gradients reduce-scattered after its backward,
                                 * every micro-batch (FSDP) rather than in buckets after the
                                 * last micro-batch */
  uint32_t reduce_bytes;        /* bytes of a reduced gradient element; 0: the precision's */
  uint64_t bucket_bytes;        /* gradient bucket; 0: Megatron's max(40M, 1M x dp) parameters */
  uint32_t ep_comm_sms;         /* SMs the expert-parallel dispatch and combine kernels hold
                                 * while they run beside compute (--ep-overlap) */
  /* [kernels]: bytes moved over the minimal traffic of the kernel (1: fused) */
  double norm_bytes_factor;     /* layer and RMS norms */
  double activation_bytes_factor; /* SwiGLU, GELU */
  double rope_bytes_factor;     /* rotary embedding of queries and keys (0: not a kernel of its
                                 * own) */
  double attention_time_factor;  /* on Hopper and later: time of its fused attention kernel over
                                  * the time the device model gives (cuDNN's, as Megatron runs
                                  * it): 1, or more for PyTorch's SDPA FlashAttention-2 */
  double fp8_cast_bytes;         /* bytes moved per element of each fp8 GEMM input to scale and
                                 * cast it (0: fused into the kernels that produce it) */
  /* [recompute]: what --recompute selective recomputes */
  gboolean selective_attention;  /* the attention core (Megatron's selective recomputation) */
  double selective_gemm_fraction; /* the share of the block's forward GEMMs recomputed
                                  * (torchtitan's op-level selective AC: every second one) */
  /* [memory] */
  uint64_t context_bytes;       /* CUDA context and library handles */
  uint32_t nccl_channels;       /* channels of a collective communicator */
  uint32_t nccl_p2p_channels;   /* channels of a point-to-point peer */
  uint32_t slack_percent;       /* allocator slack over the transient bytes */
  /* [offload] */
  double host_adam_params_per_s; /* Adam steps of the host CPUs of one node, parameters/s */
  gboolean transformers;         /* it trains transformers (strategy 3d): FALSE only for a
                                 * file with a [cpu] group and none of the transformer groups
                                 * (a CPU-era CNN framework) */
  /* [cpu] */
  double cpu_efficiency;        /* on CPU and Xeon Phi devices: the framework's end-to-end
                                 * training rate over the device model's (per-layer OpenMP
                                 * regions, layers outside the tuned convolution kernels);
                                 * 0: not stated (the framework does not train CNNs there) */
} wl_framework;

/* Loads framework `name` (catalog name or INI path); `what` names the option in errors. */
wl_framework *wl_framework_load(const char *name, const char *what, GError **error);
void wl_framework_free(wl_framework *fw);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(wl_framework, wl_framework_free)
/* The defaults of a framework file's keys (Megatron-Core's behaviour). */
void wl_framework_defaults(wl_framework *fw);

/* Scales the bytes of the memory-bound kernels of a block (wl_tf_block_kernels) by the
 * framework's factors, and appends the rotary embedding's kernel when the framework runs one
 * of its own and the model has rotary positions. The attention factor applies on `hopper`
 * devices (fp8 tensor cores: Hopper and later), whose wgmma and TMA instructions
 * FlashAttention-2 does not use; before them it is the fastest kernel there is. Returns the new count (at most
 * WL_TF_MAX_KERNELS). */
size_t wl_framework_kernels(const wl_framework *fw, const wl_tf *tf, const wl_tf_shard *sh,
                            gboolean hopper, wl_tf_kernel *k, size_t n);

/* The reserved memory (wl_reserved_memory) with the framework's context, channels and slack;
 * NULL: the defaults. */
uint64_t wl_framework_reserved(const wl_framework *fw, uint32_t communicators,
                               uint32_t p2p_peers, uint64_t dynamic_bytes,
                               wl_reserved_bytes *out);

/* Seconds of the host's optimizer step over `params` parameters of one device when
 * `devices_per_node` devices share the node's CPUs. */
double wl_framework_host_step_s(const wl_framework *fw, uint64_t params,
                                uint32_t devices_per_node);

#endif
