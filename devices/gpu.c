/* The GPU model: per op, a roofline of compute and memory time, where the compute rate is the
 * peak of the precision's path (fp32 vector, tf32/fp16/bf16 tensor cores) times an efficiency
 * that depends on the op kind and on how well the op fills the device:
 *
 *   - tile and wave quantization over SMs (as Habitat models it): a GEMM of m x n is cut into
 *     output tiles; tiles run in waves of (SMs x tiles per SM); the last wave is partly empty.
 *     The library picks the tile size (and a split of k for short-and-wide GEMMs) that runs
 *     fastest, so the model takes the best of a few candidates;
 *   - the k-loop overhead of each tile: a tile's time is proportional to k + k_overhead;
 *   - for 3x3 stride-1 convolutions off the tensor cores, Winograd F(4x4, 3x3) as cuDNN runs
 *     it: 36 batched GEMMs doing 1/4 of the direct multiplies, with the tile transforms either
 *     fused into the GEMM (forward and backward-data only) or run as separate memory-bound
 *     kernels (library generation, [software] winograd). The framework autotunes the
 *     algorithm, so the faster of direct and Winograd is taken;
 *   - a per-kernel launch overhead.
 * Host work per iteration (input copy over the host link, framework step) is in device.c.
 * Nothing here depends on which network the op belongs to. */
#include "dev_internal.h"

#include <math.h>

double dev__roofline_s(double flops, double flops_per_s, double bytes, double bytes_per_s)
{
  double tc = flops > 0 ? flops / flops_per_s : 0;
  double tm = bytes > 0 ? bytes / bytes_per_s : 0;
  return tc > tm ? tc : tm;
}

/* Output tile shapes a GEMM library chooses among, with the main-loop efficiency of each
 * relative to the largest (smaller tiles reuse operands less: a 128x128 tile does 64 FMAs per
 * pair of loaded elements, a 32x32 tile 16). An SM holds (128*128)/(tm*tn) tiles at once. */
static const struct {
  unsigned tm, tn;
  double rel;
} tiles[] = {
    {128, 128, 1.00}, {128, 64, 0.94}, {64, 64, 0.85}, {64, 32, 0.72}, {32, 32, 0.55},
};

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

double dev__gemm_seconds(uint64_t m, uint64_t n, uint64_t k, uint64_t batch, unsigned sms,
                         double k_overhead, double flops_per_s)
{
  if (m == 0 || n == 0 || k == 0 || batch == 0 || sms == 0)
    return 0;
  double best = INFINITY;
  for (gsize i = 0; i < G_N_ELEMENTS(tiles); i++) {
    uint64_t tm = tiles[i].tm, tn = tiles[i].tn;
    uint64_t per_sm = (128 * 128) / (tm * tn);
    uint64_t slots = (uint64_t)sms * per_sm;
    uint64_t ntiles = ceil_div(m, tm) * ceil_div(n, tn) * batch;
    /* Each slot runs at flops_per_s x rel / slots; a tile of a k-slice of length kk costs
     * 2 tm tn (kk + k_overhead) FLOPs of slot time; tiles run in waves over all slots. k is
     * split (partial sums added by a small reduction) when that runs faster; the candidate
     * splits are the powers of two up to the number of slots, the same set for every shape,
     * so the best time never drops when m, n or k grows. m, n enter only through the tile
     * count: GEMMs that pad to the same tiles take the same time. */
    for (uint64_t split = 1; split <= slots; split *= 2) {
      uint64_t waves = ceil_div(ntiles * split, slots);
      double kk = (double)k / (double)split;
      double t = (double)waves * 2.0 * (double)(tm * tn) * (kk + k_overhead) * (double)slots /
                 (flops_per_s * tiles[i].rel);
      if (t < best)
        best = t;
    }
  }
  return best;
}

double dev__gemm_fill(uint64_t m, uint64_t n, uint64_t k, uint64_t batch, unsigned sms,
                      double k_overhead)
{
  if (m == 0 || n == 0 || k == 0 || batch == 0 || sms == 0)
    return 1.0;
  double useful = 2.0 * (double)m * (double)n * (double)k * (double)batch;
  return useful / dev__gemm_seconds(m, n, k, batch, sms, k_overhead, 1.0);
}

/* The tensor cores' main-loop efficiency at this precision. */
static double tensor_eff(const dev_device *dev, wl_precision p)
{
  return p == WL_PREC_FP8 && dev->prm.eff_tensor_fp8 > 0 ? dev->prm.eff_tensor_fp8
                                                         : dev->prm.eff_tensor;
}

/* The compute path of a GEMM-like op at this precision: peak FLOP/s, main-loop efficiency, and
 * whether it runs on tensor cores. Tensor cores need dimensions that are multiples of 8 (fp16,
 * bf16) or 4 (tf32); otherwise the library falls back to the vector path. Where the precision
 * has tensor cores, *granule is that multiple and *tensor_rate their sustained FLOP/s (0 and 0
 * where it has none). */
static void gemm_path(const dev_device *dev, const wl_op_cost *op, double *peak, double *eff,
                      gboolean *tensor, unsigned *granule, double *tensor_rate)
{
  wl_precision p = op->precision == WL_PREC_AMP ? WL_PREC_FP16 : op->precision;
  double tensor_peak = 0;
  unsigned align = 8;
  switch (p) {
  case WL_PREC_FP16: tensor_peak = dev->prm.peak_tflops_fp16_tensor * 1e12; break;
  case WL_PREC_BF16: tensor_peak = dev->prm.peak_tflops_bf16_tensor * 1e12; break;
  case WL_PREC_TF32: tensor_peak = dev->prm.peak_tflops_tf32_tensor * 1e12; align = 4; break;
  case WL_PREC_FP8: tensor_peak = dev->prm.peak_tflops_fp8_tensor * 1e12; align = 16; break;
  default: break;
  }
  *granule = tensor_peak > 0 ? align : 0;
  *tensor_rate = tensor_peak * dev->clock_scale * tensor_eff(dev, p);
  gboolean aligned = (op->gemm_n % align == 0) && (op->gemm_k % align == 0);
  if (tensor_peak > 0 && aligned) {
    *peak = tensor_peak * dev->clock_scale;
    *eff = tensor_eff(dev, p);
    *tensor = TRUE;
    return;
  }
  *peak = dev->vector_flops[p];
  *eff = op->kind == WL_OP_CONV ? dev->prm.eff_conv : dev->prm.eff_gemm;
  *tensor = FALSE;
}

static double bytes_of(const wl_op_cost *op)
{
  return (double)op->bytes_read + (double)op->bytes_written;
}

/* Batch norm over NCHW tensors runs one thread block per channel (cuDNN's per-channel
 * kernels; PyTorch's statistics kernel, grid = C blocks): a block reduces and normalizes its
 * channel's batch x space values alone, on one SM. Blocks run one per SM in waves of `sms`,
 * and a block moves at most its SM's share of the streaming bandwidth, so C channels take
 * ceil(C / sms) waves of (bytes / C) at stream_Bps / sms: bytes / stream_Bps times
 * ceil(C / sms) x sms / C. Few channels leave SMs idle (32 channels on 132 SMs: 4.1x the
 * streaming time); a whole number of waves streams at the full rate. */
double dev__channel_blocks_s(double bytes, uint64_t channels, unsigned sms, double stream_Bps)
{
  if (bytes <= 0 || channels == 0 || sms == 0 || stream_Bps <= 0)
    return 0;
  double waves = (double)ceil_div(channels, sms);
  return bytes / stream_Bps * waves * (double)sms / (double)channels;
}

/* Winograd F(4x4, 3x3): for forward and backward-data the spatial GEMM dimension (m) becomes
 * the number of 4x4 output tiles (m / 16) and the reduction (k = channels x 9) loses its 3x3
 * factor; backward-weights reduces over tiles (k / 16) for a K x C filter (n / 9). 36 such
 * GEMMs (one per point of the 6x6 transformed tile) do 36 / (16 x 9) = 1/4 of the direct
 * multiplies. */
static void winograd_gemm(const wl_op_cost *op, uint64_t *m, uint64_t *n, uint64_t *k,
                          uint64_t *batch)
{
  *m = op->gemm_m, *n = op->gemm_n, *k = op->gemm_k;
  if (op->pass == WL_PASS_BACKWARD_WEIGHTS) {
    *n = *n / 9;
    *k = ceil_div(*k, 16);
  } else {
    *m = ceil_div(*m, 16);
    *k = *k / 9;
  }
  *batch = 36 * (op->gemm_batch ? op->gemm_batch : 1);
}

static double winograd_s(const dev_device *dev, const wl_op_cost *op, double peak, double eff)
{
  uint64_t m, n, k, batch;
  winograd_gemm(op, &m, &n, &k, &batch);
  if (m == 0 || n == 0 || k == 0)
    return INFINITY;
  double tc = dev__gemm_seconds(m, n, k, batch, dev->units, dev->prm.k_overhead, peak * eff);
  double tm = bytes_of(op) / dev->stream_Bps;
  /* cuDNN has fused Winograd kernels for forward and backward-data only; backward-weights
   * always runs the non-fused transforms (there is no fused BWD_FILTER Winograd algorithm). */
  if (dev->winograd == DEV_WINOGRAD_FUSED && op->pass != WL_PASS_BACKWARD_WEIGHTS)
    return tc > tm ? tc : tm;
  /* Separate transform kernels stream the transformed tiles (2.25x the tensors they come
   * from) through memory before and after the GEMMs. */
  return tc + tm * dev->prm.winograd_traffic;
}

/* FlashAttention's tile: 128 queries (one thread block) by 128 keys per step of its loop, the
 * size FlashAttention-2 and -3 and cuDNN's fused kernels use at head width 128 on Ampere and
 * Hopper (Dao 2023, section 3.3; Shah et al. 2024). */
#define ATTN_TILE 128

double dev__attention_fill(uint64_t q, uint64_t k, uint64_t batch, gboolean causal,
                           unsigned sms)
{
  if (q == 0 || k == 0 || batch == 0 || sms == 0)
    return 1.0;
  uint64_t nq = ceil_div(q, ATTN_TILE), nk = ceil_div(k, ATTN_TILE);
  uint64_t blocks = batch * nq;
  double steps, makespan;
  if (!causal) {
    /* Every block runs nk steps; ceil(blocks / sms) waves. */
    steps = (double)blocks * (double)nk;
    makespan = (double)ceil_div(blocks, sms) * (double)nk;
  } else {
    /* The queries are the last q of the k keys: query tile i (from 0) sees the key tiles up to
     * its own, (nk - nq) + i + 1 of them. */
    uint64_t first = nk > nq ? nk - nq : 0, longest = first + nq;
    steps = (double)batch * ((double)nq * (double)first + (double)nq * (double)(nq + 1) / 2);
    /* Two bounds on list scheduling, the lower taken: Graham's, and waves no longer than the
     * longest block (exact when the blocks are equal, one query tile each). */
    double graham = steps / sms + (1.0 - 1.0 / sms) * (double)longest;
    double waves = (double)ceil_div(blocks, sms) * (double)longest;
    makespan = graham < waves ? graham : waves;
  }
  /* The last tile of a sequence not a multiple of 128 is padded. */
  double pad = ((double)q / (double)(nq * ATTN_TILE)) * ((double)k / (double)(nk * ATTN_TILE));
  double fill = pad * steps / ((double)sms * makespan);
  return fill < 1.0 ? fill : 1.0;
}

/* Fused (flash) attention: its matrix products on the tensor cores at a measured fraction of
 * the peak (FlashAttention-2/3, cuDNN), spread over its tiles (dev__attention_fill: wave
 * quantization, and the tail of a causal kernel's unequal blocks), or its memory traffic,
 * whichever is longer. fp8 attention runs at the bf16 rate: training recipes keep attention
 * in bf16. An op without its shape (gemm_m zero) runs at the rate alone. */
static double attention_s(const dev_device *dev, const wl_op_cost *op)
{
  wl_precision p = op->precision == WL_PREC_FP8 || op->precision == WL_PREC_AMP
                       ? WL_PREC_BF16 : op->precision;
  if (op->precision == WL_PREC_AMP || (p == WL_PREC_BF16 && dev->prm.peak_tflops_bf16_tensor <= 0))
    p = WL_PREC_FP16;
  double eff = op->pass == WL_PASS_FORWARD ? dev->prm.eff_attention_fwd
                                           : dev->prm.eff_attention_bwd;
  gboolean tensor = (p == WL_PREC_FP16 && dev->prm.peak_tflops_fp16_tensor > 0) ||
                    (p == WL_PREC_BF16 && dev->prm.peak_tflops_bf16_tensor > 0) ||
                    (p == WL_PREC_TF32 && dev->prm.peak_tflops_tf32_tensor > 0);
  double rate = tensor ? dev->peak_flops[p] * dev->clock_scale * eff
                       : dev->vector_flops[p] * dev->prm.eff_gemm;
  if (op->gemm_m && op->gemm_k && op->gemm_batch)
    rate *= dev__attention_fill(op->gemm_m, op->gemm_k, op->gemm_batch, op->causal != 0,
                                dev->units);
  return dev__roofline_s((double)op->flops, rate, bytes_of(op), dev->stream_Bps);
}

/* A dimension rounded up to the granule g; one that spans `taps` filter taps per channel
 * rounds its channel count: ceil(d / taps / g) x g x taps. */
static uint64_t pad_channels(uint64_t d, uint64_t taps, unsigned g)
{
  if (taps > 1 && d % taps == 0)
    return ceil_div(d / taps, g) * g * taps;
  return ceil_div(d, g) * g;
}

/* Compute seconds of a GEMM-like op run as an m x n x k GEMM (n and k possibly padded) at
 * `rate` FLOP/s, over its tiles and waves. FLOPs beyond the op's own GEMM (a bias) run at the
 * same rate. When the op does fewer FLOPs than its GEMM shape (backward-data of a strided
 * convolution, whose GEMM spans every input pixel but only stride^2-th of them receive a tap),
 * the library skips the empty work: the time scales down by the ratio. */
static double gemm_op_seconds(const dev_device *dev, const wl_op_cost *op, uint64_t n,
                              uint64_t k, double rate)
{
  uint64_t batch = op->gemm_batch ? op->gemm_batch : 1;
  double tc = dev__gemm_seconds(op->gemm_m, n, k, batch, dev->units, dev->prm.k_overhead, rate);
  double gemm_flops = 2.0 * (double)op->gemm_m * (double)op->gemm_n * (double)op->gemm_k *
                      (double)batch;
  if ((double)op->flops > gemm_flops)
    tc += ((double)op->flops - gemm_flops) / rate;
  else if (op->pass == WL_PASS_BACKWARD_DATA && gemm_flops > 0)
    tc *= (double)op->flops / gemm_flops;
  return tc;
}

/* Seconds of one op; *winograd tells whether the Winograd form was the faster. */
static double op_path_seconds(const dev_device *dev, const wl_op_cost *op, gboolean *winograd)
{
  *winograd = FALSE;
  double bytes = bytes_of(op);
  double t;
  if (op->kind == WL_OP_ATTENTION)
    return attention_s(dev, op) + dev->launch_s;
  gboolean gemm_like = (op->kind == WL_OP_CONV || op->kind == WL_OP_GEMM) && op->gemm_m &&
                       op->gemm_n && op->gemm_k;
  if (gemm_like) {
    double peak, eff;
    gboolean tensor;
    unsigned granule;
    double tensor_rate;
    gemm_path(dev, op, &peak, &eff, &tensor, &granule, &tensor_rate);
    double rate = peak * eff;
    double tm = bytes / dev->stream_Bps;
    double tc = gemm_op_seconds(dev, op, op->gemm_n, op->gemm_k, rate);
    t = tc > tm ? tc : tm;
    if (op->kind == WL_OP_CONV && !tensor && dev->winograd != DEV_WINOGRAD_OFF &&
        op->kernel_h == 3 && op->kernel_w == 3 && op->stride == 1 &&
        (op->precision == WL_PREC_FP32 || op->precision == WL_PREC_FP16 ||
         op->precision == WL_PREC_AMP)) {
      double tw = winograd_s(dev, op, peak, eff);
      if (tw < t) {
        t = tw;
        *winograd = TRUE;
      }
    }
    /* A convolution whose channels are not multiples of the tensor cores' granule (the 3
     * colour channels of a first layer) still runs on them with the channels zero-padded:
     * cuDNN pads them itself since 7.2, and NVIDIA's convolution performance guide has the
     * first layer of a CNN padded to 4 channels. The autotuner keeps the faster of that and
     * the vector path. A GEMM dimension that spans the filter taps (C x R x S) pads its
     * channels, ceil(C / g) x g x R x S: k in forward and backward-data, n in
     * backward-weights. */
    if (op->kind == WL_OP_CONV && !tensor && granule > 0) {
      uint64_t taps = (uint64_t)(op->kernel_h ? op->kernel_h : 1) *
                      (uint64_t)(op->kernel_w ? op->kernel_w : 1);
      gboolean k_taps = op->pass != WL_PASS_BACKWARD_WEIGHTS;
      uint64_t n = pad_channels(op->gemm_n, k_taps ? 1 : taps, granule);
      uint64_t k = pad_channels(op->gemm_k, k_taps ? taps : 1, granule);
      double tp = gemm_op_seconds(dev, op, n, k, tensor_rate);
      if (tp < tm)
        tp = tm;
      if (tp < t) {
        t = tp;
        *winograd = FALSE;
      }
    }
  } else {
    /* Non-GEMM kernels stream their tensors; their arithmetic runs on the vector units. */
    wl_precision p = op->precision == WL_PREC_AMP ? WL_PREC_FP32
                     : op->precision == WL_PREC_FP8 ? WL_PREC_BF16 : op->precision;
    t = dev__roofline_s((double)op->flops, dev->vector_flops[p] * dev->prm.eff_other, bytes,
                        dev->stream_Bps);
    if (op->kind == WL_OP_BATCHNORM && op->channels > 0) {
      double tb = dev__channel_blocks_s(bytes, op->channels, dev->units, dev->stream_Bps);
      if (tb > t)
        t = tb;
    }
  }
  return t + dev->launch_s;
}

static double gpu_op_seconds(const dev_device *dev, const wl_op_cost *op, unsigned threads)
{
  (void)threads;
  gboolean winograd;
  return op_path_seconds(dev, op, &winograd);
}

/* The FLOPs the op runs: its own, or where Winograd is the faster form, the multiplies and adds
 * of its 36 transformed GEMMs (a quarter of the direct convolution's). */
static double gpu_op_flops(const dev_device *dev, const wl_op_cost *op)
{
  gboolean winograd;
  op_path_seconds(dev, op, &winograd);
  if (!winograd)
    return (double)op->flops;
  uint64_t m, n, k, batch;
  winograd_gemm(op, &m, &n, &k, &batch);
  return 2.0 * (double)m * (double)n * (double)k * (double)batch;
}

/* The datasheet rates are at the boost clock; under sustained load a power- or thermal-limited
 * board holds a lower clock, and every arithmetic rate scales with it. Memory bandwidth does
 * not: the memory clock is fixed. This is the clock of a die alone on its board (or of a
 * single-die device), as a fraction of the boost clock. */
double dev__gpu_alone_clock(const dev_params *p)
{
  return p->sustained_clock_mhz > 0 ? p->sustained_clock_mhz / p->clock_mhz
         : p->sustained_clock > 0   ? p->sustained_clock
                                    : 1.0;
}

/* The arithmetic clock, as a fraction of the boost clock: the vector rates follow it (the
 * tensor rates read dev->clock_scale per op). */
void dev__gpu_set_clock(dev_device *dev, double scale)
{
  const dev_params *p = &dev->prm;
  double fp32 = p->peak_tflops_fp32 * 1e12;
  double fp16 = p->peak_tflops_fp16 > 0 ? p->peak_tflops_fp16 * 1e12 : fp32;
  dev->clock_scale = scale;
  /* Vector (non-tensor) rates a kernel can sustain: the datasheet peak times the fraction the
   * SM's schedulers can issue (Kepler needs dual issue to fill its lanes). tf32 and bf16 math
   * without tensor cores runs at the fp32 rate. */
  double sustained32 = fp32 * p->fp32_issue_fraction * scale;
  double sustained16 = fp16 * p->fp32_issue_fraction * scale;
  dev->vector_flops[WL_PREC_FP32] = sustained32;
  dev->vector_flops[WL_PREC_TF32] = sustained32;
  dev->vector_flops[WL_PREC_FP16] = sustained16;
  dev->vector_flops[WL_PREC_BF16] = sustained32;
  dev->vector_flops[WL_PREC_AMP] = sustained16;
  dev->vector_flops[WL_PREC_FP8] = sustained32;
}

/* [device] dies_per_board is a whole number, and board_busy_clock_mhz belongs to a board of
 * several dies and lies at or below the clock a die holds alone. */
static gboolean board_check(const dev_device *dev, const dt_ini *base, const dt_ini *overlay,
                            GError **error)
{
  const dev_params *p = &dev->prm;
  const char *key = NULL;
  g_autofree char *why = NULL;
  double alone = dev__gpu_alone_clock(p) * p->clock_mhz;
  if (p->dies_per_board != floor(p->dies_per_board)) {
    key = "dies_per_board";
    why = g_strdup_printf("%g is not a whole number of dies", p->dies_per_board);
  } else if (p->board_busy_clock_mhz > 0 && p->dies_per_board < 2) {
    key = "board_busy_clock_mhz";
    why = g_strdup_printf("%g MHz needs dies_per_board of 2 or more (a board of one die is "
                          "never shared)", p->board_busy_clock_mhz);
  } else if (p->board_busy_clock_mhz > alone) {
    key = "board_busy_clock_mhz";
    why = g_strdup_printf("%g MHz is above the %g MHz a die holds alone", p->board_busy_clock_mhz,
                          alone);
  }
  if (!key)
    return TRUE;
  const dt_ini *where = overlay && dt_ini_has(overlay, "device", key) ? overlay : base;
  if (where)
    return dt_ini_error(where, "device", key, error, "%s", why);
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: [device] %s: %s", dev->path, key, why);
  return FALSE;
}

static gboolean gpu_prepare(dev_device *dev, const dt_ini *base, const dt_ini *overlay,
                            GError **error)
{
  const dev_params *p = &dev->prm;
  if (!dev__require(dev, base, "device", "peak_tflops_fp32", p->peak_tflops_fp32, error) ||
      !dev__require(dev, base, "device", "memory_bandwidth_GBps", p->memory_bandwidth_GBps,
                    error) ||
      !dev__require(dev, base, "device", "sms", p->sms, error) ||
      !dev__require(dev, base, "device", "clock_mhz", p->clock_mhz, error) ||
      !dev__require(dev, base, "device", "memory_bytes", (double)dev->memory_bytes, error))
    return FALSE;
  if (p->sustained_clock_mhz > p->clock_mhz) {
    const dt_ini *where = overlay && dt_ini_has(overlay, "device", "sustained_clock_mhz")
                              ? overlay : base;
    if (where)
      return dt_ini_error(where, "device", "sustained_clock_mhz", error,
                          "%g MHz is above the boost clock clock_mhz = %g MHz",
                          p->sustained_clock_mhz, p->clock_mhz);
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: [device] sustained_clock_mhz: %g MHz is above the boost clock %g MHz",
                dev->path, p->sustained_clock_mhz, p->clock_mhz);
    return FALSE;
  }
  if (!board_check(dev, base, overlay, error))
    return FALSE;
  dev->units = (unsigned)p->sms;
  dev->hw_threads = dev->units;
  dev->stream_Bps = p->memory_bandwidth_GBps * 1e9 * p->eff_memory;
  dev->launch_s = p->kernel_launch_us * 1e-6;
  double fp32 = p->peak_tflops_fp32 * 1e12;
  double fp16 = p->peak_tflops_fp16 > 0 ? p->peak_tflops_fp16 * 1e12 : fp32;
  /* A die starts as if alone on its board (dev_device_set_busy_dies says otherwise). */
  dev__gpu_set_clock(dev, dev__gpu_alone_clock(p));
  dev->peak_flops[WL_PREC_FP32] = fp32;
  dev->peak_flops[WL_PREC_TF32] =
      p->peak_tflops_tf32_tensor > 0 ? p->peak_tflops_tf32_tensor * 1e12 : fp32;
  dev->peak_flops[WL_PREC_FP16] =
      p->peak_tflops_fp16_tensor > 0 ? p->peak_tflops_fp16_tensor * 1e12 : fp16;
  dev->peak_flops[WL_PREC_BF16] =
      p->peak_tflops_bf16_tensor > 0 ? p->peak_tflops_bf16_tensor * 1e12 : fp32;
  dev->peak_flops[WL_PREC_AMP] = dev->peak_flops[WL_PREC_FP16];
  dev->peak_flops[WL_PREC_FP8] =
      p->peak_tflops_fp8_tensor > 0 ? p->peak_tflops_fp8_tensor * 1e12 : dev->peak_flops[WL_PREC_BF16];
  return TRUE;
}

const dev_model dev__model_gpu = {
    .name = "gpu",
    .description = "roofline with op-kind efficiencies, tile/wave quantization over SMs, "
                   "tensor cores, Winograd, launch overhead",
    .prepare = gpu_prepare,
    .op_seconds = gpu_op_seconds,
    .op_flops = gpu_op_flops,
};
