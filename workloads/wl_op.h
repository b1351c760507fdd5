/* The cost of one layer pass, independent of any device: what devices/ times.
 *
 * This is the contract between workloads/ (which fills it from a layer's shapes) and devices/
 * (which turns it into picoseconds). Counts are exact integers: FLOPs count 2 per
 * multiply-add; bytes are bytes of the precision in use. */
#ifndef DTSIM_WL_OP_H
#define DTSIM_WL_OP_H

#include <stdint.h>

typedef enum {
  WL_PREC_FP32,
  WL_PREC_TF32,   /* fp32 storage, tensor-core math with a 10-bit mantissa */
  WL_PREC_FP16,   /* fp16 storage and math, fp32 master weights */
  WL_PREC_BF16,
  WL_PREC_AMP,    /* automatic mixed precision: fp16 convolutions/GEMMs, fp32 elsewhere */
  WL_PREC_FP8,    /* fp8 GEMM inputs on tensor cores (Transformer Engine), bf16 elsewhere */
  WL_PREC_COUNT
} wl_precision;

typedef enum {
  WL_PASS_FORWARD,
  WL_PASS_BACKWARD_DATA,     /* gradient w.r.t. the layer's input */
  WL_PASS_BACKWARD_WEIGHTS,  /* gradient w.r.t. the layer's parameters */
  WL_PASS_UPDATE,            /* optimizer step on the layer's parameters */
  WL_PASS_COUNT
} wl_pass;

/* What kind of kernel a pass runs; devices pick efficiencies by this. */
typedef enum {
  WL_OP_CONV,        /* convolution: implicit GEMM */
  WL_OP_GEMM,        /* fully connected */
  WL_OP_POOL,
  WL_OP_LRN,
  WL_OP_BATCHNORM,
  WL_OP_ELEMENTWISE, /* activations, dropout, add, scale */
  WL_OP_CONCAT,      /* a copy */
  WL_OP_SOFTMAX,     /* softmax with cross-entropy loss */
  WL_OP_UPDATE,      /* optimizer: streaming over parameters */
  WL_OP_ATTENTION,   /* fused (flash) attention: scores, softmax and the product with V on
                      * chip; FLOPs are the matrix products it runs */
  WL_OP_KIND_COUNT
} wl_op_kind;

typedef struct {
  wl_op_kind kind;
  wl_pass pass;
  wl_precision precision;
  uint64_t flops;          /* floating-point operations, 2 per multiply-add */
  uint64_t bytes_read;     /* bytes read from device memory (inputs, weights, saved tensors) */
  uint64_t bytes_written;  /* bytes written to device memory */
  /* For matrix-like ops (CONV as implicit GEMM, GEMM): the GEMM the pass amounts to, C[m x n] +=
   * A[m x k] B[k x n]; used for tile and wave quantization. For fused ATTENTION: m queries
   * against k keys per sequence and head, n = query/key plus value head widths, batch = sequences
   * x heads (zero: the device times it without its tiles). Zero for other kinds. */
  uint64_t gemm_m, gemm_n, gemm_k;
  /* Independent GEMMs of that shape in the pass (convolution groups); 1 for a plain
   * convolution or GEMM, zero for other kinds. */
  uint64_t gemm_batch;
  /* Independent output elements (parallelism available to fill the device). */
  uint64_t out_elems;
  /* Convolution geometry where it matters to a device model (Xeon Phi, DeepBench rows);
   * zero for other kinds. */
  uint32_t kernel_h, kernel_w, stride;
  /* ATTENTION: 1 when a causal mask skips the key tiles above the diagonal, so the tiles of
   * queries do unequal work. */
  uint8_t causal;
  /* BATCHNORM: channels, each normalized over batch and space by its own reduction; zero for
   * other kinds. */
  uint32_t channels;
} wl_op_cost;

const char *wl_precision_name(wl_precision p);
const char *wl_pass_name(wl_pass p);
const char *wl_op_kind_name(wl_op_kind k);
/* Parses "fp32", "tf32", "fp16", "bf16", "amp", "fp8"; -1 if unknown. */
int wl_precision_parse(const char *name);
/* Bytes per element of activations/gradients stored at this precision (fp8 keeps activations
 * in bf16: only GEMM inputs are cast to fp8). */
unsigned wl_precision_bytes(wl_precision p);

#endif
