/* Internal interface of devices/: the device struct, the model table, the parameter table the
 * loader and the calibration share, and the per-model timing functions. Not installed; tests
 * include it to reach the dev__ functions. */
#ifndef DTSIM_DEV_INTERNAL_H
#define DTSIM_DEV_INTERNAL_H

#include "devices.h"
#include "util.h"

/* A registered device model: what every model needs and nothing more. */
struct dev_model {
  const char *name;
  const char *description;
  /* Validates the loaded parameters and derives cached rates; may read the INI files for
   * model-specific keys (`base` always, `overlay` may be NULL). */
  gboolean (*prepare)(dev_device *dev, const dt_ini *base, const dt_ini *overlay,
                      GError **error);
  /* Seconds of one op on `threads` hardware threads (already clamped to 1..hw_threads). */
  double (*op_seconds)(const dev_device *dev, const wl_op_cost *op, unsigned threads);
  /* FLOPs the device runs for the op when its algorithm changes them (Winograd); NULL: the
   * op's own. */
  double (*op_flops)(const dev_device *dev, const wl_op_cost *op);
};

extern const dev_model dev__model_gpu;
extern const dev_model dev__model_phi_spec;
extern const dev_model dev__model_phi_measured;
extern const dev_model dev__model_cpu;

typedef enum { DEV_WINOGRAD_OFF, DEV_WINOGRAD_NONFUSED, DEV_WINOGRAD_FUSED } dev_winograd;

/* Most threads per core a many-core model describes. */
#define DEV_MAX_TPC 8
/* Most points of a measured contention table. */
#define DEV_MAX_CONTENTION 16

/* Scalar model parameters read from [group] key, all doubles, listed in dev__params. The
 * calibration fits a subset of these by name ("efficiency.conv"). */
typedef struct {
  /* [device] datasheet numbers */
  double peak_tflops_fp32;         /* vector fp32 FLOP/s / 1e12 (GPUs; derived for Phi/CPU) */
  double peak_tflops_fp16;         /* vector (non-tensor) fp16 rate; 0: same as fp32 */
  double peak_tflops_fp16_tensor;  /* tensor cores fp16 (dense); 0: none */
  double peak_tflops_bf16_tensor;  /* tensor cores bf16 (dense); 0: none */
  double peak_tflops_tf32_tensor;  /* tensor cores tf32 (dense); 0: none */
  double peak_tflops_fp8_tensor;   /* tensor cores fp8 inputs (dense); 0: none */
  double memory_bandwidth_GBps;    /* peak DRAM/HBM bandwidth, 1e9 bytes/s */
  double sms;                      /* GPU streaming multiprocessors */
  double cores;                    /* Phi cores */
  double threads_per_core;         /* Phi hardware threads per core */
  double clock_mhz;                /* boost clock (GPU) or base clock (Phi/CPU) */
  double sustained_clock_mhz;      /* GPU: clock held under sustained load (power/thermal
                                    * limit); 0: the boost clock */
  double dies_per_board;           /* GPU: dies on one board, sharing its heat sink and power
                                    * (a Tesla K80 carries two GK210 dies); default 1 */
  double board_busy_clock_mhz;     /* GPU: clock a die holds while every die of its board is
                                    * busy; 0: the sustained clock, busy or not */
  double vector_bits;              /* Phi/CPU SIMD width */
  double fma_units;                /* Phi/CPU vector FMA units per core */
  double per_core_bandwidth_GBps;  /* Phi/CPU bandwidth one core can draw */
  double fp32_issue_fraction;      /* GPU: fp32 throughput an SM sustains without dual issue */
  double coherence_latency_ns;     /* Phi/CPU: a core's read or ownership request of a cache
                                    * line another core modified, nanoseconds */
  /* [efficiency] fractions of peak; fitted by calibration */
  double eff_conv;       /* implicit-GEMM / direct convolution main loop, fraction of peak */
  double eff_gemm;       /* dense GEMM (fully connected) main loop */
  double eff_tensor;     /* tensor-core GEMM/conv main loop (fraction of tensor peak) */
  double eff_tensor_fp8; /* the same with fp8 inputs (fraction of the fp8 peak; 0: eff_tensor) */
  double eff_other;      /* compute-side efficiency of non-GEMM kernels */
  double eff_memory;     /* streaming bandwidth, fraction of peak */
  double k_overhead;     /* GEMM k-loop prologue/epilogue cost, in units of k elements */
  double eff_attention_fwd;  /* fused attention forward, fraction of tensor peak */
  double eff_attention_bwd;  /* fused attention backward (its five products), same */
  double sustained_clock;    /* fraction of the boost clock a GPU holds through a long run
                              * of dense tensor-core work at its power limit; 0: unset (1, or
                              * [device] sustained_clock_mhz) */
  /* [software] the stack that runs on the device */
  double kernel_launch_us;     /* per kernel (op) launch and framework dispatch */
  double framework_step_us;    /* per-iteration framework overhead (session run, sync) */
  double winograd_traffic;     /* non-fused Winograd: transform traffic / op bytes */
  double sync_us;              /* Phi/CPU fork-join barrier per op at 2 threads */
  double chaos_efficiency;     /* Phi/CPU: rate CHAOS's own loops reach, fraction of the
                                * [efficiency] rates (those of tuned libraries) */
  /* [measured] */
  double shared_ps_per_byte;   /* a thread's time per byte of a line another core modified */
  /* [host_link] */
  double link_bandwidth_GBps;  /* usable host<->device bandwidth, 1e9 bytes/s */
  double link_latency_us;
  double nvlink_peer_GBps;
  double pcie_gen;
  double link_lanes;
} dev_params;

typedef struct {
  const char *group;
  const char *key;
  gsize offset;        /* offsetof(dev_params, field) */
  double min, max;
  gboolean fittable;   /* the calibration may fit it */
  const char *unit;    /* what one unit is, for documentation and messages */
} dev_param_info;

/* The scalar parameter table (NULL-key terminated), and lookup by "group.key". */
extern const dev_param_info dev__params[];
const dev_param_info *dev__param_find(const char *group_dot_key);
double dev__param_get(const dev_device *dev, const dev_param_info *p);
void dev__param_set(dev_device *dev, const dev_param_info *p, double value);

struct dev_device {
  char *name;
  char *title;
  char *path;           /* the INI it came from */
  char *overlay_path;   /* NULL without calibration */
  char *link_text;
  const dev_model *model;
  dev_params prm;
  uint64_t memory_bytes;
  uint64_t l2_bytes;
  dev_host_link link;
  dev_winograd winograd;
  /* Many-core: issue capacity of one core with 1..DEV_MAX_TPC threads (fraction of the core's
   * peak), and the measured memory-contention table. */
  double issue[DEV_MAX_TPC + 1];
  unsigned n_contention;
  double contention_threads[DEV_MAX_CONTENTION];
  double contention_ps_per_byte[DEV_MAX_CONTENTION];
  double single_thread_gflops[WL_OP_KIND_COUNT];  /* measured model: one thread's rate */
  char *topology;       /* CPU: hwloc synthetic description or "host" */
  unsigned packages;    /* CPU sockets */
  /* Derived by prepare(): cached so op timing is arithmetic only. */
  double peak_flops[WL_PREC_COUNT];     /* FLOP/s of GEMM-like ops at each precision */
  double vector_flops[WL_PREC_COUNT];   /* FLOP/s of non-GEMM ops at each precision */
  double stream_Bps;                    /* bandwidth x efficiency */
  double clock_scale;                   /* GPU: sustained / boost clock, in (0, 1] */
  double launch_s;
  unsigned hw_threads;
  unsigned units;
};

/* TRUE when `value` > 0; otherwise an error "FILE:LINE: [group] key: missing required key for
 * model M" (the base INI when known). */
gboolean dev__require(const dev_device *dev, const dt_ini *base, const char *group,
                      const char *key, double value, GError **error);
/* Reloads derived values after parameters changed (calibration). */
gboolean dev__prepare(dev_device *dev, GError **error);
/* A deep copy (calibration mutates copies). */
dev_device *dev__device_copy(const dev_device *dev);

/* GPU pieces, exposed for tests. */
/* Fraction of the device's GEMM throughput a GEMM of m x n x k (times `batch` independent
 * GEMMs) reaches through tile and wave quantization over `sms` SMs; includes the k-loop
 * overhead k / (k + k_overhead). In (0, 1]. */
double dev__gemm_fill(uint64_t m, uint64_t n, uint64_t k, uint64_t batch, unsigned sms,
                      double k_overhead);
/* Seconds of that GEMM (or batch of GEMMs) at `flops_per_s` (peak x efficiency) for the
 * whole device: the best tile size and k split; equal for shapes that pad to the same tiles. */
double dev__gemm_seconds(uint64_t m, uint64_t n, uint64_t k, uint64_t batch, unsigned sms,
                         double k_overhead, double flops_per_s);
/* Fraction of the SMs' time a fused attention kernel spends on its tiles: blocks of 128
 * queries of one head (`batch` heads x sequences), each looping over the 128-key tiles of its
 * `k` keys (the diagonal one whole and none above it when `causal`), one block per SM; blocks go
 * to SMs as SMs free up. Equal blocks run in waves; causal blocks of unequal length end with a
 * tail no longer than the longest block (Graham's list-scheduling bound, or waves of the
 * longest block where that is lower); a last tile of fewer than 128 queries or keys is padded.
 * In (0, 1]. */
double dev__attention_fill(uint64_t q, uint64_t k, uint64_t batch, gboolean causal,
                           unsigned sms);
/* Seconds of a batch norm moving `bytes` over `channels` thread blocks, one block per channel
 * and one per SM at a time, each at its SM's share of `stream_Bps`: ceil(channels / sms)
 * waves of bytes / channels. Zero when any argument is zero. */
double dev__channel_blocks_s(double bytes, uint64_t channels, unsigned sms, double stream_Bps);
/* GPU: the arithmetic clock of a die alone on its board, as a fraction of the boost clock. */
double dev__gpu_alone_clock(const dev_params *p);
/* GPU: sets the arithmetic clock (a fraction of the boost clock) and the rates that follow it. */
void dev__gpu_set_clock(dev_device *dev, double scale);
/* Roofline: max of compute and memory seconds. */
double dev__roofline_s(double flops, double flops_per_s, double bytes, double bytes_per_s);

/* Many-core pieces. Total issue capacity (in cores' worth of peak) of `threads` threads spread
 * evenly over `cores` cores with at most `tpc` per core. */
double dev__issue_capacity(const dev_device *dev, unsigned threads);
/* Linear interpolation of the contention table at `threads`. */
double dev__contention_ps_per_byte(const dev_device *dev, unsigned threads);

/* The three ops of one convolution layer (forward, backward-data, backward-weights) from its
 * shape, as the implicit-GEMM formulation counts them (used for DeepBench kernel rows).
 * Activations are NHWC/NCHW-agnostic element counts times `elem_bytes`. */
void dev__conv_ops(unsigned n, unsigned h, unsigned w, unsigned c, unsigned k, unsigned r,
                   unsigned s, unsigned pad, unsigned stride, wl_precision prec,
                   wl_op_cost out[3]);

#endif
