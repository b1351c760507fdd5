/* Tests of devices/: the GPU roofline on hand-computed ops, tile/wave quantization, tensor-core
 * paths, monotonicity over the catalog, the Xeon Phi speedup curves, CPUs from hwloc synthetic
 * topologies, host overhead, calibration recovering known parameters, and the errors users see
 * for bad catalog files and unknown names. Expected values are worked out in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cli.h"
#include "dev_internal.h"
#include "devices.h"
#include "workloads.h"

#include <glib/gstdio.h>
#include <hwloc.h>
#include <unistd.h>
#include <math.h>
#include <string.h>

/* A GPU with round numbers: 8 SMs, 10 TFLOP/s fp32, 100 TFLOP/s fp16 tensor, 1000 GB/s, and
 * efficiencies of exactly one half with no launch or k-loop overhead. */
static const char round_gpu[] =
    "[device]\nmodel = gpu\nsms = 8\nclock_mhz = 1000\npeak_tflops_fp32 = 10\n"
    "peak_tflops_fp16_tensor = 100\nmemory_bandwidth_GBps = 1000\nmemory_bytes = 1G\n"
    "[efficiency]\nconv = 0.5\ngemm = 0.5\ntensor = 0.5\nother = 0.5\nmemory = 0.5\n"
    "k_overhead = 0\n"
    "[software]\nkernel_launch_us = 0\nframework_step_us = 1000\n"
    "[host_link]\nkind = pcie\npcie_gen = 3\nlanes = 16\nlatency_us = 5\n";

/* A temporary file holding `text` (an overlay or a table): its path, to g_unlink and free. */
static char *tmp_text_file(const char *pattern, const char *text)
{
  g_autoptr(GError) error = NULL;
  char *path = NULL;
  int fd = g_file_open_tmp(pattern, &path, &error);
  assert_true(fd >= 0);
  close(fd);
  assert_true(g_file_set_contents(path, text, -1, &error));
  return path;
}

static dev_device *load_text(const char *text)
{
  g_autoptr(GError) error = NULL;
  dev_device *d = dev_device_load_data("test.ini", text, strlen(text), NULL, &error);
  if (d == NULL)
    fail_msg("%s", error->message);
  return d;
}

static wl_op_cost gemm_op(uint64_t m, uint64_t n, uint64_t k, wl_precision prec)
{
  wl_op_cost op = {0};
  op.kind = WL_OP_GEMM;
  op.pass = WL_PASS_FORWARD;
  op.precision = prec;
  op.gemm_m = m;
  op.gemm_n = n;
  op.gemm_k = k;
  op.gemm_batch = 1;
  op.flops = 2 * m * n * k;
  op.bytes_read = (m * k + k * n) * 4;
  op.bytes_written = m * n * 4;
  op.out_elems = m * n;
  return op;
}

static void test_roofline_memory_bound(void **state)
{
  g_autoptr(dev_device) d = load_text(round_gpu);
  /* An element-wise op moving 1e9 bytes at 1000 GB/s x 0.5 = 5e11 B/s takes 2 ms; its 1e6
   * FLOPs at 5 TFLOP/s take 0.2 us, so memory bounds it: 2e9 ps. */
  wl_op_cost op = {0};
  op.kind = WL_OP_ELEMENTWISE;
  op.flops = 1000000;
  op.bytes_read = 500000000;
  op.bytes_written = 500000000;
  assert_int_equal(dev_op_time_ps(d, &op, 0), INT64_C(2000000000));
}

static void test_roofline_compute_bound(void **state)
{
  g_autoptr(dev_device) d = load_text(round_gpu);
  /* 1024 x 1024 x 4096: 64 tiles of 128x128 fill 8 SMs in exactly 8 waves, so the GEMM runs at
   * 10 TFLOP/s x 0.5 = 5e12: 2*1024*1024*4096 / 5e12 s = 1717986918.4 ps, rounded up. Its
   * 29 MB move in 58 us, far less. */
  wl_op_cost op = gemm_op(1024, 1024, 4096, WL_PREC_FP32);
  assert_int_equal(dev_op_time_ps(d, &op, 0), INT64_C(1717986919));
}

static void test_wave_quantization(void **state)
{
  g_autoptr(dev_device) d = load_text(round_gpu);
  /* m = 1088 needs 9 rows of 128-row tiles: 72 tiles = 9 full waves of 8, the last row of tiles
   * half empty. Every tile size pads m to 1152, so the GEMM takes as long as one of m = 1152
   * (whose FLOPs are 1152/1088 times more). */
  wl_op_cost a = gemm_op(1088, 1024, 4096, WL_PREC_FP32);
  wl_op_cost b = gemm_op(1152, 1024, 4096, WL_PREC_FP32);
  int64_t ta = dev_op_time_ps(d, &a, 0), tb = dev_op_time_ps(d, &b, 0);
  assert_true(llabs(ta - tb) <= 1);
  /* Fill fraction by hand: 1088 / 1152. */
  assert_true(fabs(dev__gemm_fill(1088, 1024, 4096, 1, 8, 0) - 1088.0 / 1152.0) < 1e-12);
  /* One 128x128 tile on 8 SMs with a long k: split-k into 8 pieces of 512 fills the device. */
  assert_true(fabs(dev__gemm_fill(128, 128, 4096, 1, 8, 0) - 1.0) < 1e-12);
  /* A 64x64x64 GEMM without k-loop overhead: one 64x64 tile split 32 ways over k fills the
   * 32 slots of 64x64 tiles in one wave, at 0.85 of the big tile's efficiency; a 128x128 tile
   * would be only a quarter used (0.25), 32x32 tiles run at 0.55. */
  assert_true(fabs(dev__gemm_fill(64, 64, 64, 1, 8, 0) - 0.85) < 1e-12);
  /* With an overhead of 64 k elements per tile, splitting gets costly: on 128x128 tiles
   * split 8 ways (one wave over 8 SMs, each tile a quarter used) 0.25 x 8/72 = 1/36; split 4
   * ways 0.125 x 16/80 = 0.025; unsplit 1/32 x 64/128; on 64x64 tiles split 32 ways (one
   * full wave) 0.85 x 2/66 = 0.0258, split 16 ways 0.5 x 0.85 x 4/68 = 0.025. Best: 1/36. */
  assert_true(fabs(dev__gemm_fill(64, 64, 64, 1, 8, 64) - 1.0 / 36.0) < 1e-12);
  /* The k-loop overhead: k / (k + k_overhead). */
  assert_true(fabs(dev__gemm_fill(1024, 1024, 96, 1, 8, 32) - 96.0 / 128.0) < 1e-12);
}

static void test_tensor_cores(void **state)
{
  g_autoptr(dev_device) d = load_text(round_gpu);
  /* fp16 with dimensions divisible by 8 runs on tensor cores at 100 x 0.5 = 50 TFLOP/s: 10x
   * faster than fp32 on the same shape. */
  wl_op_cost h = gemm_op(1024, 1024, 4096, WL_PREC_FP16);
  h.bytes_read /= 2;
  h.bytes_written /= 2;
  assert_int_equal(dev_op_time_ps(d, &h, 0), INT64_C(171798692));
  /* n = 1020 is not a multiple of 8: the library falls back to the fp16 vector path, which
   * this device runs at the fp32 rate (no peak_tflops_fp16 given). */
  wl_op_cost odd = gemm_op(1024, 1020, 4096, WL_PREC_FP16);
  assert_true(dev_op_time_ps(d, &odd, 0) > 5 * dev_op_time_ps(d, &h, 0));
  /* AMP runs GEMMs in fp16. */
  h.precision = WL_PREC_AMP;
  assert_int_equal(dev_op_time_ps(d, &h, 0), INT64_C(171798692));
  assert_true(dev_peak_flops(d, WL_PREC_FP16) == 100e12);
  assert_true(dev_peak_flops(d, WL_PREC_FP32) == 10e12);
}

/* A convolution op of the given GEMM shape and filter, compute-bound (its bytes are few). */
static wl_op_cost conv_op(wl_pass pass, uint64_t m, uint64_t n, uint64_t k, unsigned taps_hw,
                          unsigned stride, wl_precision prec)
{
  wl_op_cost op = gemm_op(m, n, k, prec);
  op.kind = WL_OP_CONV;
  op.pass = pass;
  op.kernel_h = op.kernel_w = taps_hw;
  op.stride = stride;
  op.bytes_read = 1000;
  op.bytes_written = 1000;
  return op;
}

static void test_tensor_cores_padded_channels(void **state)
{
  g_autoptr(dev_device) d = load_text(round_gpu);
  /* A first layer: 3 input channels, 3x3 filter, stride 2, 128 filters, 1024 output pixels.
   * Forward is a 1024 x 128 x 27 GEMM; 27 is not a multiple of 8, so the tensor cores run it
   * with the channels padded to 8: k = 8 x 9 = 72 (not 32, the 27 rounded up). Eight
   * 128x128 tiles fill the 8 SMs in one wave at 100 x 0.5 = 50 TFLOP/s:
   * 2 x 1024 x 128 x 72 / 50e12 s = 377487.36 ps, rounded up (128x64 and 64x64 tiles also
   * fill one wave, at 0.94 and 0.85 of that rate). The vector path would take
   * 2 x 1024 x 128 x 27 / (10e12 x 0.5) s = 1415577.6 ps. */
  wl_op_cost fw = conv_op(WL_PASS_FORWARD, 1024, 128, 27, 3, 2, WL_PREC_FP16);
  assert_int_equal(dev_op_time_ps(d, &fw, 0), INT64_C(377488));
  /* The same as an 8-channel layer's GEMM (padding the 27 to 32 would be faster). */
  wl_op_cost c8 = conv_op(WL_PASS_FORWARD, 1024, 128, 72, 3, 2, WL_PREC_FP16);
  c8.flops = fw.flops;
  assert_int_equal(dev_op_time_ps(d, &c8, 0), dev_op_time_ps(d, &fw, 0));
  /* Backward-weights: 128 x 27 x 1024, the taps on n; padded to 128 x 72 x 1024, the same
   * time as an 8-channel layer's. */
  wl_op_cost bw = conv_op(WL_PASS_BACKWARD_WEIGHTS, 128, 27, 1024, 3, 2, WL_PREC_FP16);
  wl_op_cost bw8 = conv_op(WL_PASS_BACKWARD_WEIGHTS, 128, 72, 1024, 3, 2, WL_PREC_FP16);
  bw8.flops = bw.flops;
  assert_int_equal(dev_op_time_ps(d, &bw, 0), dev_op_time_ps(d, &bw8, 0));
  /* fp32 has no tensor cores on this device: the vector path, 1415577.6 ps rounded up. */
  wl_op_cost f32 = conv_op(WL_PASS_FORWARD, 1024, 128, 27, 3, 2, WL_PREC_FP32);
  assert_int_equal(dev_op_time_ps(d, &f32, 0), INT64_C(1415578));
  /* A plain GEMM with n = 1020 still takes the vector path (test_tensor_cores). */
}

static void test_sustained_clock(void **state)
{
  /* The round GPU held at 500 of its 1000 MHz: arithmetic runs at half the rate, memory at the
   * same. The GEMM of test_roofline_compute_bound takes 2 x 1717986918.4 ps = 3435973836.8 ps,
   * rounded up; the memory-bound op of test_roofline_memory_bound still 2 ms; fp16 on tensor
   * cores at 100 x 0.5 x 0.5 = 25 TFLOP/s: 2 x 171798691.84 ps, rounded up. The datasheet
   * peak is still reported as is. */
  static const char text[] =
      "[device]\nmodel = gpu\nsms = 8\nclock_mhz = 1000\nsustained_clock_mhz = 500\n"
      "peak_tflops_fp32 = 10\npeak_tflops_fp16_tensor = 100\nmemory_bandwidth_GBps = 1000\n"
      "memory_bytes = 1G\n"
      "[efficiency]\nconv = 0.5\ngemm = 0.5\ntensor = 0.5\nother = 0.5\nmemory = 0.5\n"
      "k_overhead = 0\n"
      "[software]\nkernel_launch_us = 0\nframework_step_us = 1000\n"
      "[host_link]\nkind = pcie\npcie_gen = 3\nlanes = 16\nlatency_us = 5\n";
  g_autoptr(dev_device) d = load_text(text);
  wl_op_cost op = gemm_op(1024, 1024, 4096, WL_PREC_FP32);
  assert_int_equal(dev_op_time_ps(d, &op, 0), INT64_C(3435973837));
  wl_op_cost h = gemm_op(1024, 1024, 4096, WL_PREC_FP16);
  h.bytes_read /= 2;
  h.bytes_written /= 2;
  assert_int_equal(dev_op_time_ps(d, &h, 0), INT64_C(343597384));
  wl_op_cost mem = {0};
  mem.kind = WL_OP_ELEMENTWISE;
  mem.flops = 1000000;
  mem.bytes_read = 500000000;
  mem.bytes_written = 500000000;
  assert_int_equal(dev_op_time_ps(d, &mem, 0), INT64_C(2000000000));
  assert_true(dev_peak_flops(d, WL_PREC_FP32) == 10e12);
}

/* The catalog's Kepler Teslas: a K80 die runs its arithmetic at 718 of 875 MHz and streams at
 * 240 GB/s x 0.68 = 163.2 GB/s (inline ECC); a K40 at its 745 MHz default clock. */
static void test_kepler_clocks_and_ecc(void **state)
{
  g_autoptr(GError) error = NULL;
  /* The same die held at its top boost clock. */
  g_autofree char *path =
      tmp_text_file("dtsim-boost-XXXXXX.ini", "[device]\nsustained_clock_mhz = 875\n");
  g_autoptr(dev_device) k80 = dev_device_load("k80", NULL, &error);
  g_autoptr(dev_device) boost = dev_device_load("k80", path, &error);
  g_unlink(path);
  assert_non_null(k80);
  assert_non_null(boost);
  assert_true(fabs(dev_stream_Bps(k80) - 163.2e9) < 1e3);
  assert_true(dev_peak_flops(k80, WL_PREC_FP32) == 4.37e12);
  /* A compute-bound GEMM (17.2 GFLOP, about 7 ms; tiles and waves do not depend on the clock)
   * takes 875 / 718 times longer at the sustained clock, up to its 6 us launch (a 2e-4 shift
   * of the ratio); its 40 MB move in a quarter of a millisecond. */
  wl_op_cost op = gemm_op(1024, 1024, 8192, WL_PREC_FP32);
  double ratio = (double)dev_op_time_ps(k80, &op, 0) / (double)dev_op_time_ps(boost, &op, 0);
  assert_true(fabs(ratio - 875.0 / 718.0) < 1e-3);
  /* A streaming op does not depend on the core clock. */
  wl_op_cost mem = {0};
  mem.kind = WL_OP_ELEMENTWISE;
  mem.bytes_read = 163200000;
  mem.bytes_written = 0;
  assert_int_equal(dev_op_time_ps(k80, &mem, 0), dev_op_time_ps(boost, &mem, 0));
  g_autoptr(dev_device) k40 = dev_device_load("k40", NULL, &error);
  static const char k40_boost[] =
      "[device]\nmodel = gpu\nsms = 15\nclock_mhz = 875\nfp32_issue_fraction = 0.67\n"
      "peak_tflops_fp32 = 5.04\nmemory_bandwidth_GBps = 288\nmemory_bytes = 12G\n"
      "[efficiency]\nmemory = 0.68\n[host_link]\nkind = pcie\npcie_gen = 3\nlanes = 16\n"
      "[software]\nwinograd = nonfused\n";
  g_autoptr(dev_device) k40b =
      dev_device_load_data("k40-boost.ini", k40_boost, strlen(k40_boost), NULL, &error);
  assert_non_null(k40);
  assert_non_null(k40b);
  ratio = (double)dev_op_time_ps(k40, &op, 0) / (double)dev_op_time_ps(k40b, &op, 0);
  assert_true(fabs(ratio - 875.0 / 745.0) < 1e-3);
}

/* The 500 W H100 SXM5 96GB holds the clock a cubic power law gives from the 700 W part's: the
 * SMs get 400 of 600 W (the board's other 100 W apart), (400 / 600)^(1/3) = 0.874 of its
 * sustained clock, 0.74 x 0.874 = 0.647, rounded to 0.65 in the catalog. A compute-bound GEMM
 * (same SMs, tiles and waves) takes 0.74 / 0.65 times as long. */
static void test_power_limited_h100(void **state)
{
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(dev_device) h700 = dev_device_load("h100-sxm5-80gb", NULL, &error);
  g_autoptr(dev_device) h500 = dev_device_load("h100-sxm5-96gb", NULL, &error);
  assert_non_null(h700);
  assert_non_null(h500);
  assert_true(fabs(0.74 * cbrt(400.0 / 600.0) - 0.65) < 0.005);
  wl_op_cost op = gemm_op(8192, 8192, 8192, WL_PREC_BF16);
  double ratio = (double)dev_op_time_ps(h500, &op, 0) / (double)dev_op_time_ps(h700, &op, 0);
  assert_true(fabs(ratio - 0.74 / 0.65) < 2e-3);
}

/* fp8 GEMMs at their own efficiency: the H100 catalog runs a compute-bound 8192^3 GEMM at
 * 0.82 of the bf16 peak (989.4) and 0.75 of the fp8 peak (1979), so fp8 takes
 * (989.4 x 0.82) / (1979 x 0.75) = 0.5467 of the bf16 time (same tiles and waves; the 6 us
 * launches shift it by about 2e-3). At tensor_fp8 = tensor it is 989.4 / 1979 = 0.5. */
static void test_fp8_efficiency(void **state)
{
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(dev_device) h100 = dev_device_load("h100-sxm5-80gb", NULL, &error);
  assert_non_null(h100);
  wl_op_cost bf = gemm_op(8192, 8192, 8192, WL_PREC_BF16);
  wl_op_cost f8 = gemm_op(8192, 8192, 8192, WL_PREC_FP8);
  double ratio = (double)dev_op_time_ps(h100, &f8, 0) / (double)dev_op_time_ps(h100, &bf, 0);
  assert_true(fabs(ratio - (989.4 * 0.82) / (1979.0 * 0.75)) < 3e-3);
  g_autofree char *path =
      tmp_text_file("dtsim-fp8-XXXXXX.ini", "[efficiency]\ntensor_fp8 = 0.82\n");
  g_autoptr(dev_device) same = dev_device_load("h100-sxm5-80gb", path, &error);
  g_unlink(path);
  assert_non_null(same);
  ratio = (double)dev_op_time_ps(same, &f8, 0) / (double)dev_op_time_ps(same, &bf, 0);
  assert_true(fabs(ratio - 989.4 / 1979.0) < 3e-3);
}

/* The DGX-2's V100 holds the shared sustained clock (0.74): a compute-bound fp16 tensor-core GEMM
 * takes 1 / 0.74 of its time at the boost clock (same tiles and waves; the 6 us launches shift
 * the ratio by about 1e-3), while the V100 SXM2 keeps the boost clock. */
static void test_dgx2_v100_clock(void **state)
{
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autofree char *path =
      tmp_text_file("dtsim-v100-XXXXXX.ini", "[efficiency]\nsustained_clock = 1\n");
  g_autoptr(dev_device) v = dev_device_load("v100-sxm3-32gb", NULL, &error);
  g_autoptr(dev_device) boost = dev_device_load("v100-sxm3-32gb", path, &error);
  g_autoptr(dev_device) sxm2 = dev_device_load("v100-sxm2-16gb", path, &error);
  g_autoptr(dev_device) sxm2_catalog = dev_device_load("v100-sxm2-16gb", NULL, &error);
  g_unlink(path);
  assert_non_null(v);
  assert_non_null(boost);
  assert_non_null(sxm2);
  assert_non_null(sxm2_catalog);
  wl_op_cost op = gemm_op(8192, 8192, 8192, WL_PREC_FP16);
  double ratio = (double)dev_op_time_ps(v, &op, 0) / (double)dev_op_time_ps(boost, &op, 0);
  assert_true(fabs(ratio - 1 / 0.74) < 3e-3);
  assert_int_equal(dev_op_time_ps(sxm2, &op, 0), dev_op_time_ps(sxm2_catalog, &op, 0));
}

static void test_launch_and_host(void **state)
{
  static const char text[] =
      "[device]\nmodel = gpu\nsms = 8\nclock_mhz = 1000\npeak_tflops_fp32 = 10\n"
      "memory_bandwidth_GBps = 1000\nmemory_bytes = 1G\n"
      "[software]\nkernel_launch_us = 7\nframework_step_us = 1000\n"
      "[host_link]\nkind = pcie\npcie_gen = 3\nlanes = 16\nlatency_us = 5\n";
  g_autoptr(dev_device) d = load_text(text);
  /* An empty op costs only its launch: 7 us. */
  wl_op_cost op = {0};
  op.kind = WL_OP_ELEMENTWISE;
  assert_int_equal(dev_op_time_ps(d, &op, 0), ((int64_t)(7) * INT64_C(1000000)));
  /* PCIe 3.0 x16: 16 lanes x 8 GT/s x 128/130 = 15.754 GB/s raw, x 0.85 packet efficiency =
   * 13.39056 GB/s. Copying 1.339056 GB takes 100 ms, plus 5 us latency and the 1 ms step. */
  const dev_host_link *l = dev_device_host_link(d);
  assert_true(fabs(l->bandwidth_Bps - 13.39056e9) < 1e3);
  assert_string_equal(dev_host_link_text(d), "PCIe 3.0 x16");
  int64_t t = dev_host_overhead_ps(d, UINT64_C(1339056000));
  assert_true(llabs(t - (((int64_t)(100000) * INT64_C(1000000)) + ((int64_t)(5) * INT64_C(1000000)) + ((int64_t)(1000) * INT64_C(1000000)))) <= 2);
  /* The parts: 1 ms of step, and the copy with its latency. */
  assert_int_equal(dev_step_overhead_ps(d), ((int64_t)(1000) * INT64_C(1000000)));
  assert_true(llabs(dev_input_copy_ps(d, UINT64_C(1339056000)) -
                    ((int64_t)(100005) * INT64_C(1000000))) <= 2);
  assert_int_equal(dev_input_copy_ps(d, 0), 0);
  /* Synthetic data: only the step overhead. */
  assert_int_equal(dev_host_overhead_ps(d, 0), ((int64_t)(1000) * INT64_C(1000000)));
  assert_int_equal(dev_memory_bytes(d), UINT64_C(1) << 30);
  assert_true(dev_memory_Bps(d) == 1000e9);
}

static void test_conv_ops(void **state)
{
  /* DeepBench vgg_conv2: N=16, 112x112x64 -> 128 filters 3x3 pad 1: P = Q = 112;
   * FLOPs = 2 N K C R S P Q = 2 x 16 x 128 x 64 x 9 x 112 x 112 = 29,595,009,024 per pass. */
  wl_op_cost ops[3];
  dev__conv_ops(16, 112, 112, 64, 128, 3, 3, 1, 1, WL_PREC_FP32, ops);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(ops[i].flops, UINT64_C(29595009024));
    assert_int_equal(2 * ops[i].gemm_m * ops[i].gemm_n * ops[i].gemm_k, ops[i].flops);
  }
  assert_int_equal(ops[0].gemm_m, 16 * 112 * 112);
  assert_int_equal(ops[0].gemm_k, 64 * 9);
  assert_int_equal(ops[2].gemm_k, 16 * 112 * 112);
}

/* The FLOPs a device runs: DeepBench vgg_conv2 forward (2 x 16 x 128 x 64 x 9 x 112 x 112 =
 * 29,595,009,024 direct) in fp32 on a V100, whose cuDNN runs it as fused Winograd F(4x4, 3x3):
 * 36 GEMMs over the 16 x 112 x 112 / 16 = 12,544 output tiles, 128 filters and 64 channels,
 * 2 x 12544 x 128 x 64 x 36 = 7,398,752,256, a quarter. A 1x1 convolution has no Winograd form
 * and runs its own FLOPs; so does fp16 on the tensor cores. */
static void test_op_flops_winograd(void **state)
{
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(dev_device) v100 = dev_device_load("v100-sxm2-16gb", NULL, &error);
  assert_non_null(v100);
  wl_op_cost ops[3];
  dev__conv_ops(16, 112, 112, 64, 128, 3, 3, 1, 1, WL_PREC_FP32, ops);
  assert_true(dev_op_flops(v100, &ops[0]) == 7398752256.0);
  dev__conv_ops(16, 112, 112, 64, 128, 1, 1, 0, 1, WL_PREC_FP32, ops);
  assert_true(dev_op_flops(v100, &ops[0]) == (double)ops[0].flops);
  dev__conv_ops(16, 112, 112, 64, 128, 3, 3, 1, 1, WL_PREC_FP16, ops);
  assert_true(dev_op_flops(v100, &ops[0]) == 29595009024.0);
}

/* cuDNN 9 on Hopper (and, assumed, Blackwell) runs no fused Winograd convolution
 * (bench/h200): a 3x3 stride-1 fp32 convolution pays the non-fused transforms. ResNet-50's
 * 64->64 3x3 layer at 56x56, batch 64, forward: input and output 64 x 64 x 56 x 56 =
 * 12,845,056 values each, filters 64 x 64 x 9 = 36,864, (2 x 12845056 + 36864) x 4 =
 * 102,907,904 bytes; Winograd runs 2 x (64 x 56 x 56 / 16 = 12,544 tiles) x 64 x 64 x 36 =
 * 3,699,376,128 FLOPs, a quarter of the direct 14,797,504,512. On the H200 (4800 GB/s x 0.8 =
 * 3.84e12 B/s) the transforms add 5.5 x 102907904 / 3.84e12 s = 147,394,133 ps over the fused
 * form (overlay winograd = fused), whose GEMMs are the same. Each Hopper and Blackwell entry
 * pays 5.5 x its own op bytes over its streaming rate. */
static void test_hopper_winograd_nonfused(void **state)
{
  (void)state;
  static const char *const names[] = {"h200-sxm-141gb", "h100-sxm5-80gb", "h100-sxm5-96gb",
                                      "h800-sxm5-80gb", "b200-sxm-180gb", "gb200"};
  g_autoptr(GError) error = NULL;
  g_autofree char *path =
      tmp_text_file("dtsim-wino-XXXXXX.ini", "[software]\nwinograd = fused\n");
  wl_op_cost ops[3];
  dev__conv_ops(64, 56, 56, 64, 64, 3, 3, 1, 1, WL_PREC_FP32, ops);
  assert_int_equal(ops[0].bytes_read + ops[0].bytes_written, UINT64_C(102907904));
  assert_int_equal(ops[0].flops, UINT64_C(14797504512));
  for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
    g_autoptr(dev_device) cat = dev_device_load(names[i], NULL, &error);
    g_autoptr(dev_device) fused = dev_device_load(names[i], path, &error);
    assert_non_null(cat);
    assert_non_null(fused);
    assert_true(dev_op_flops(cat, &ops[0]) == 3699376128.0);
    double extra_ps = 5.5 * 102907904.0 / dev_stream_Bps(cat) * 1e12;
    int64_t diff = dev_op_time_ps(cat, &ops[0], 0) - dev_op_time_ps(fused, &ops[0], 0);
    assert_true(fabs((double)diff - extra_ps) <= 2);
    if (i == 0)
      assert_true(llabs(diff - INT64_C(147394133)) <= 2);
  }
  g_unlink(path);
}

/* Batch norm runs one block per channel, one per SM at a time, each at its SM's share of the
 * streaming rate: C channels take ceil(C / sms) x sms / C times the streaming time. 1e9 bytes
 * at 1e12 B/s stream in 1 ms; on 132 SMs, 32 channels take 132 / 32 = 4.125 ms, 132 and 264
 * take 1 ms, 133 take 2 x 132 / 133 = 1.984962 ms. On the round GPU (8 SMs, 1000 GB/s x 0.5,
 * no launch), a batch norm moving 1e9 bytes streams in 2 ms: with 4 channels 2 x 8 / 4 = 4 ms,
 * 12 channels 2 x 2 x 8 / 12 = 2.666667 ms, 16 channels 2 ms, and without a channel count (or
 * as another kind) 2 ms. ResNet-50's first batch norm has 64 channels in each of its passes. */
static void test_batchnorm_channel_blocks(void **state)
{
  (void)state;
  assert_true(fabs(dev__channel_blocks_s(1e9, 32, 132, 1e12) - 4.125e-3) < 1e-12);
  assert_true(fabs(dev__channel_blocks_s(1e9, 132, 132, 1e12) - 1e-3) < 1e-12);
  assert_true(fabs(dev__channel_blocks_s(1e9, 264, 132, 1e12) - 1e-3) < 1e-12);
  assert_true(fabs(dev__channel_blocks_s(1e9, 133, 132, 1e12) - 2e-3 * 132 / 133) < 1e-12);
  assert_true(dev__channel_blocks_s(1e9, 0, 132, 1e12) == 0);
  assert_true(dev__channel_blocks_s(0, 32, 132, 1e12) == 0);
  g_autoptr(dev_device) d = load_text(round_gpu);
  wl_op_cost bn = {.kind = WL_OP_BATCHNORM, .pass = WL_PASS_FORWARD,
                   .precision = WL_PREC_FP32, .flops = 1000, .bytes_read = 600000000,
                   .bytes_written = 400000000, .out_elems = 250000000};
  static const struct {
    uint32_t channels;
    int64_t ps;
  } want[] = {{0, 2000000000}, {4, 4000000000}, {12, 2666666667}, {16, 2000000000}};
  for (gsize i = 0; i < G_N_ELEMENTS(want); i++) {
    bn.channels = want[i].channels;
    assert_true(llabs(dev_op_time_ps(d, &bn, 0) - want[i].ps) <= 1);
  }
  wl_op_cost elt = bn;
  elt.kind = WL_OP_ELEMENTWISE;
  elt.channels = 4;
  assert_true(llabs(dev_op_time_ps(d, &elt, 0) - 2000000000) <= 1);
  g_autoptr(GError) error = NULL;
  g_autoptr(wl_model) m = wl_zoo_build("resnet50", &error);
  assert_non_null(m);
  g_autoptr(wl_net) net = wl_net_new(m, 32, WL_PREC_FP32, &error);
  assert_non_null(net);
  gboolean seen = FALSE;
  for (size_t i = 0; i < wl_net_n_layers(net) && !seen; i++) {
    const wl_layer *L = wl_net_layer(net, i);
    if (L->cost[WL_PASS_FORWARD].kind != WL_OP_BATCHNORM)
      continue;
    for (int p = WL_PASS_FORWARD; p <= WL_PASS_BACKWARD_WEIGHTS; p++)
      assert_int_equal(L->cost[p].channels, 64);
    seen = TRUE;
  }
  assert_true(seen);
}

/* Every op of a ResNet-50 step at batch 32, for monotonicity tests. */
static GArray *resnet_ops(wl_precision prec)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(wl_model) m = wl_zoo_build("resnet50", &error);
  assert_non_null(m);
  g_autoptr(wl_net) net = wl_net_new(m, 32, prec, &error);
  assert_non_null(net);
  GArray *ops = g_array_new(FALSE, FALSE, sizeof(wl_op_cost));
  for (size_t i = 0; i < wl_net_n_layers(net); i++) {
    const wl_layer *L = wl_net_layer(net, i);
    for (int p = 0; p < WL_PASS_COUNT; p++)
      if (L->has_pass[p])
        g_array_append_val(ops, L->cost[p]);
  }
  return ops;
}

static void test_more_flops_never_faster(void **state)
{
  g_auto(GStrv) names = dt_catalog_names("devices/catalog");
  for (char **n = names; *n; n++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(dev_device) d = dev_device_load(*n, NULL, &error);
    assert_non_null(d);
    for (int prec = WL_PREC_FP32; prec <= WL_PREC_FP16; prec++) {
      int64_t prev = 0;
      /* Growing m by one adds FLOPs and bytes; time never drops. */
      for (uint64_t m = 1; m <= 2048; m += 7) {
        wl_op_cost op = gemm_op(m, 512, 1024, (wl_precision)prec);
        int64_t t = dev_op_time_ps(d, &op, 0);
        if (t < prev)
          fail_msg("%s: m=%" G_GUINT64_FORMAT " took %" G_GINT64_FORMAT " < %" G_GINT64_FORMAT,
                   *n, m, t, prev);
        prev = t;
      }
      /* Convolutions: more filters never faster (Winograd or direct, whichever is faster). */
      prev = 0;
      for (unsigned k = 8; k <= 512; k += 8) {
        wl_op_cost ops[3];
        dev__conv_ops(16, 28, 28, 64, k, 3, 3, 1, 1, (wl_precision)prec, ops);
        int64_t t = 0;
        for (int i = 0; i < 3; i++)
          t += dev_op_time_ps(d, &ops[i], 0);
        if (t < prev)
          fail_msg("%s: conv with %u filters faster than with fewer", *n, k);
        prev = t;
      }
    }
  }
}

static void test_faster_datasheet_never_slower(void **state)
{
  /* An overlay raising every peak and bandwidth of a V100 and a P100 by 1.5x: no op of a
   * ResNet-50 step gets slower. */
  static const char *const devs[][2] = {
      {"v100-sxm2-16gb", "[device]\npeak_tflops_fp32 = 23.55\npeak_tflops_fp16 = 47.1\n"
                         "peak_tflops_fp16_tensor = 187.5\nmemory_bandwidth_GBps = 1350\n"},
      {"p100-sxm2-16gb", "[device]\npeak_tflops_fp32 = 15.9\npeak_tflops_fp16 = 31.8\n"
                         "memory_bandwidth_GBps = 1098\n"},
  };
  g_autoptr(GArray) ops32 = resnet_ops(WL_PREC_FP32);
  g_autoptr(GArray) ops16 = resnet_ops(WL_PREC_FP16);
  for (gsize i = 0; i < G_N_ELEMENTS(devs); i++) {
    g_autoptr(GError) error = NULL;
    g_autofree char *path = tmp_text_file("dtsim-overlay-XXXXXX.ini", devs[i][1]);
    g_autoptr(dev_device) base = dev_device_load(devs[i][0], NULL, &error);
    g_autoptr(dev_device) fast = dev_device_load(devs[i][0], path, &error);
    assert_non_null(base);
    assert_non_null(fast);
    GArray *sets[] = {ops32, ops16};
    for (int s = 0; s < 2; s++)
      for (guint j = 0; j < sets[s]->len; j++) {
        const wl_op_cost *op = &g_array_index(sets[s], wl_op_cost, j);
        assert_true(dev_op_time_ps(fast, op, 0) <= dev_op_time_ps(base, op, 0));
      }
    g_unlink(path);
  }
  /* Across the catalog: a V100 is never slower than a P100 on any op of the step, nor an
   * H100 than an A100: every datasheet number, including the fp32 rate per SM, is at least as
   * large. (An A100 SM is slower in fp32 than a V100 SM, 0.18 vs 0.196 TFLOP/s, so an A100
   * can lose to a V100 on a GEMM of exactly two V100 waves.) */
  g_autoptr(GError) error = NULL;
  g_autoptr(dev_device) p100 = dev_device_load("p100-sxm2-16gb", NULL, &error);
  g_autoptr(dev_device) v100 = dev_device_load("v100-sxm2-16gb", NULL, &error);
  g_autoptr(dev_device) a100 = dev_device_load("a100-sxm4-80gb", NULL, &error);
  g_autoptr(dev_device) h100 = dev_device_load("h100-sxm5-80gb", NULL, &error);
  for (guint j = 0; j < ops32->len; j++) {
    const wl_op_cost *op = &g_array_index(ops32, wl_op_cost, j);
    assert_true(dev_op_time_ps(v100, op, 0) <= dev_op_time_ps(p100, op, 0));
    assert_true(dev_op_time_ps(h100, op, 0) <= dev_op_time_ps(a100, op, 0));
  }
}

/* A large convolution (CHAOS-style layers are small; this one is compute bound). */
static wl_op_cost big_conv(void)
{
  wl_op_cost ops[3];
  dev__conv_ops(64, 28, 28, 128, 128, 3, 3, 1, 1, WL_PREC_FP32, ops);
  return ops[0];
}

static void check_phi_curve(const char *name, const char *overlay, unsigned cores,
                            gboolean second_thread_helps)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(dev_device) d = NULL;
  if (overlay) {
    g_autofree char *path = tmp_text_file("dtsim-phi-XXXXXX.ini", overlay);
    d = dev_device_load(name, path, &error);
    g_unlink(path);
  } else {
    d = dev_device_load(name, NULL, &error);
  }
  if (d == NULL)
    fail_msg("%s", error->message);
  assert_int_equal(dev_hw_threads(d), 4 * cores);
  wl_op_cost op = big_conv();
  assert_true(fabs(dev_thread_speedup(d, &op, 1) - 1.0) < 1e-12);
  double prev = 0;
  for (unsigned p = 1; p <= 4 * cores; p++) {
    double s = dev_thread_speedup(d, &op, p);
    /* Sub-linear: never more than p, and less than p once threads share anything. */
    assert_true(s <= p + 1e-9);
    if (p > 1)
      assert_true(s < p);
    /* Up to the core count every thread adds a core: strictly increasing. */
    if (p <= cores)
      assert_true(s > prev);
    prev = s;
  }
  double s_cores = dev_thread_speedup(d, &op, cores);
  double s_2 = dev_thread_speedup(d, &op, 2 * cores);
  double s_4 = dev_thread_speedup(d, &op, 4 * cores);
  /* Near the core count each core is busy: at most a 2x gain from more threads per core, and
   * from two to four threads per core under 10%. */
  assert_true(s_4 < 1.1 * s_2);
  assert_true(s_2 < 2.0 * s_cores);
  if (second_thread_helps)
    /* Knights Corner: one thread issues every other cycle, so the second thread on each core
     * brings close to 2x. */
    assert_true(s_2 > 1.6 * s_cores);
  else
    assert_true(s_2 < 1.6 * s_cores);
  /* Threads beyond the device clamp. */
  assert_true(dev_op_time_ps(d, &op, 100000) == dev_op_time_ps(d, &op, 4 * cores));
}

static void test_phi_speedup_curves(void **state)
{
  check_phi_curve("xeon-phi-7120p", NULL, 61, TRUE);
  check_phi_curve("xeon-phi-7120p", "[device]\nmodel = xeon-phi-measured\n", 61, TRUE);
  check_phi_curve("xeon-phi-7250", NULL, 68, FALSE);
  check_phi_curve("xeon-phi-7250", "[device]\nmodel = xeon-phi-measured\n", 68, FALSE);
}

static void test_phi_spec_hand(void **state)
{
  /* 7120P, spec model, one thread, compute-bound op: 61 cores are not in play; one core at
   * 1.238 GHz x 16 lanes x 2 = 39.616 GFLOP/s, issue 0.5 and conv efficiency 0.72:
   * 14.261760 GFLOP/s. 1.4261760e10 FLOPs take 1 s, plus the 6 us launch. */
  g_autoptr(GError) error = NULL;
  g_autoptr(dev_device) d = dev_device_load("xeon-phi-7120p", NULL, &error);
  assert_non_null(d);
  wl_op_cost op = {0};
  op.kind = WL_OP_CONV;
  op.flops = UINT64_C(14261760000);
  int64_t t = dev_op_time_ps(d, &op, 1);
  assert_true(llabs(t - (((int64_t)(1000000) * INT64_C(1000000)) + ((int64_t)(6) * INT64_C(1000000)))) <= 2);
  /* With 122 threads (2 per core, issue 1.0 each core): 61 x 39.616 x 0.72 GFLOP/s, so the
   * compute is 1 s / 122; a barrier over 122 threads costs 1.5 us x log2(122). */
  double expect = 1.0 / 122 + 1.5e-6 * log2(122.0) + 6e-6;
  t = dev_op_time_ps(d, &op, 122);
  assert_true(fabs((double)t * 1e-12 - expect) < 1e-9);
  assert_true(fabs(dev_peak_flops(d, WL_PREC_FP32) - 61 * 39.616e9) < 1e3);
}

/* A small Knights-Corner-like device: 4 cores of 4 threads at 1 GHz, 512-bit vectors, one FMA
 * unit: 1e9 x 16 x 2 = 32 GFLOP/s per core at full issue. */
#define KNC_LIKE                                                                                 \
  "cores = 4\nthreads_per_core = 4\nclock_mhz = 1000\nvector_bits = 512\nfma_units = 1\n"     \
  "issue_fraction = 0.5; 1.0; 1.0; 1.0\nmemory_bandwidth_GBps = 64\nmemory_bytes = 1G\n"       \
  "coherence_latency_ns = 100\n[efficiency]\nconv = 0.5\nmemory = 0.5\n"                       \
  "[software]\nchaos_efficiency = 0.1\n[host_link]\nkind = none\n"

static void test_chaos_issue_rules(void **state)
{
  g_autoptr(dev_device) d = load_text("[device]\nmodel = xeon-phi-spec\n" KNC_LIKE);
  /* Issue capacity in cores' worth: one thread per core reaches half a core (no issue from one
   * thread in consecutive cycles), two or more fill it. 5 threads: three cores with one, one
   * with two: 1.5 + 1. */
  static const struct { unsigned threads; double capacity; } cap[] = {
      {1, 0.5}, {2, 1.0}, {4, 2.0}, {5, 2.5}, {8, 4.0}, {12, 4.0}, {16, 4.0}, {100, 4.0}};
  for (gsize i = 0; i < G_N_ELEMENTS(cap); i++)
    assert_float_equal(dev_issue_capacity(d, cap[i].threads), cap[i].capacity, 1e-12);
  /* One thread alone: 32 GFLOP/s x 0.5 issue x 0.5 conv efficiency x 0.1 CHAOS code = 0.8
   * GFLOP/s, so 8e8 FLOPs take 1 s. Per thread with 1, 2, 3, 4 threads on every core: slowed
   * by threads x 0.5 / capacity = 1, 1, 1.5, 2; throughput per core relative to one thread
   * 1, 2, 2, 2. */
  wl_op_cost op = {.kind = WL_OP_CONV, .flops = 800000000};
  static const struct { unsigned threads; double seconds; } t[] = {
      {1, 1.0}, {4, 1.0}, {8, 1.0}, {12, 1.5}, {16, 2.0}};
  for (gsize i = 0; i < G_N_ELEMENTS(t); i++)
    assert_float_equal(dev_thread_op_s(d, &op, t[i].threads), t[i].seconds, 1e-12);
  /* Shared weights, 6400 B = 100 lines: with 4 busy cores the last writer of a line is another
   * core 3/4 of the time, and a sample reads and then writes every line: 150 transfers. Each
   * costs the 100 ns latency, as the thread's share of the coherent bandwidth (64 GB/s x 0.5)
   * is shorter: 16 threads x 64 B / 32 GB/s = 32 ns. 150 x 100 ns = 15 us. */
  assert_float_equal(dev_shared_weights_s(d, 6400, 1), 0, 0);
  assert_float_equal(dev_shared_weights_s(d, 6400, 4), 15e-6, 1e-15);
  assert_float_equal(dev_shared_weights_s(d, 6400, 16), 15e-6, 1e-15);
  /* Two threads on two cores: a line is foreign half the time: 100 transfers, 10 us. */
  assert_float_equal(dev_shared_weights_s(d, 6400, 2), 10e-6, 1e-15);
  /* With a 10 ns latency, bandwidth decides at 16 threads: 150 x 32 ns = 4.8 us. */
  g_auto(GStrv) parts = g_strsplit("[device]\nmodel = xeon-phi-spec\n" KNC_LIKE,
                                   "coherence_latency_ns = 100", 2);
  g_autofree char *fast_text = g_strjoinv("coherence_latency_ns = 10", parts);
  g_autoptr(dev_device) fast = load_text(fast_text);
  assert_float_equal(dev_shared_weights_s(fast, 6400, 16), 150 * 32e-9, 1e-15);
  assert_float_equal(dev_shared_weights_s(fast, 6400, 4), 150 * 10e-9, 1e-15);
}

/* The measured model: one thread's rate is measured (2 GFLOP/s on convolutions, times the
 * CHAOS code's 0.1: 0.2 GFLOP/s), and the shared weights cost what the contention table says
 * per byte with that many threads running. */
static void test_chaos_measured(void **state)
{
  g_autoptr(dev_device) d = load_text(
      "[device]\nmodel = xeon-phi-measured\n" KNC_LIKE
      "[measured]\nsingle_thread_gflops_conv = 2\nsingle_thread_gflops_gemm = 2\n"
      "single_thread_gflops_other = 1\ncontention_threads = 1; 16\n"
      "contention_ps_per_byte = 100; 1600\n");
  wl_op_cost op = {.kind = WL_OP_CONV, .flops = 200000000};
  assert_float_equal(dev_thread_op_s(d, &op, 1), 1.0, 1e-12);
  assert_float_equal(dev_thread_op_s(d, &op, 16), 2.0, 1e-12);
  /* 16 threads: 2 x 6400 B x 3/4 foreign = 9600 B at 1600 ps/B = 15.36 us. */
  assert_float_equal(dev_shared_weights_s(d, 6400, 16), 15.36e-6, 1e-15);
  /* A measured transfer of 2000 ps per byte is higher than the 1600 of streaming contention:
   * 9600 B x 2000 ps = 19.2 us; at 2 threads (two cores, half the lines foreign: 6400 B) it is
   * higher than the table's 200 ps (100 + 1500 x 1/15): 12.8 us. */
  g_autoptr(dev_device) m = load_text(
      "[device]\nmodel = xeon-phi-measured\n" KNC_LIKE
      "[measured]\nsingle_thread_gflops_conv = 2\nsingle_thread_gflops_gemm = 2\n"
      "single_thread_gflops_other = 1\ncontention_threads = 1; 16\n"
      "contention_ps_per_byte = 100; 1600\nshared_ps_per_byte = 2000\n");
  assert_float_equal(dev_shared_weights_s(m, 6400, 16), 19.2e-6, 1e-15);
  assert_float_equal(dev_shared_weights_s(m, 6400, 2), 12.8e-6, 1e-15);
  /* A GPU has no CHAOS threads. */
  g_autoptr(GError) error = NULL;
  g_autoptr(dev_device) gpu = dev_device_load("v100-sxm2-16gb", NULL, &error);
  assert_non_null(gpu);
  assert_float_equal(dev_thread_op_s(gpu, &op, 4), 0, 0);
  assert_float_equal(dev_shared_weights_s(gpu, 6400, 4), 0, 0);
}

static void test_cpu_synthetic_topology(void **state)
{
  static const char text[] =
      "[device]\nmodel = cpu\ntopology = pack:2 core:8 pu:2\nclock_mhz = 2400\n"
      "vector_bits = 256\nfma_units = 2\nmemory_bandwidth_GBps = 100\nmemory_bytes = 64G\n"
      "issue_fraction = 1.0; 1.25\n[host_link]\nkind = none\n";
  g_autoptr(dev_device) d = load_text(text);
  /* 2 packages x 8 cores, 2 PUs each. */
  assert_int_equal(dev_compute_units(d), 16);
  assert_int_equal(dev_hw_threads(d), 32);
  /* 16 cores x 2.4 GHz x 8 lanes x 2 (FMA) x 2 units = 1.2288 TFLOP/s. */
  assert_true(fabs(dev_peak_flops(d, WL_PREC_FP32) - 1.2288e12) < 1);
  /* Compute-bound op: 32 threads (two per core) reach 1.25 cores' worth each: 20 cores of
   * compute vs 16 with 16 threads: speedup 32 / 16 threads = 1.25 before barriers. */
  wl_op_cost op = big_conv();
  double s16 = dev_thread_speedup(d, &op, 16), s32 = dev_thread_speedup(d, &op, 32);
  assert_true(s32 / s16 > 1.2 && s32 / s16 < 1.25);
  /* The same machine from an exported hwloc XML file. */
  hwloc_topology_t topo;
  hwloc_topology_init(&topo);
  assert_int_equal(hwloc_topology_set_synthetic(topo, "pack:2 core:8 pu:2"), 0);
  assert_int_equal(hwloc_topology_load(topo), 0);
  g_autofree char *xml = NULL;
  int fd = g_file_open_tmp("dtsim-topo-XXXXXX.xml", &xml, NULL);
  close(fd);
  assert_int_equal(hwloc_topology_export_xml(topo, xml, 0), 0);
  hwloc_topology_destroy(topo);
  g_autofree char *xtext = g_strdup_printf(
      "[device]\nmodel = cpu\ntopology = %s\nclock_mhz = 2400\nmemory_bandwidth_GBps = 100\n"
      "memory_bytes = 64G\n[host_link]\nkind = none\n", xml);
  g_autoptr(dev_device) dx = load_text(xtext);
  assert_int_equal(dev_compute_units(dx), 16);
  assert_int_equal(dev_hw_threads(dx), 32);
  g_unlink(xml);
  /* A topology that is not hwloc syntax is an input error naming the key. */
  static const char bad[] = "[device]\nmodel = cpu\ntopology = two sockets\nclock_mhz = 2400\n"
                            "memory_bandwidth_GBps = 100\nmemory_bytes = 64G\n";
  g_autoptr(GError) error = NULL;
  assert_null(dev_device_load_data("bad.ini", bad, strlen(bad), NULL, &error));
  assert_true(g_error_matches(error, DT_ERROR, DT_ERROR_INPUT));
  assert_non_null(strstr(error->message, "bad.ini:3: [device] topology"));
}

static void test_host_device(void **state)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(dev_device) d = dev_device_load("host", NULL, &error);
  if (d == NULL)
    fail_msg("%s", error->message);
  assert_true(dev_compute_units(d) >= 1);
  assert_true(dev_hw_threads(d) >= dev_compute_units(d));
  /* The memory is the kernel's total, whatever NUMA nodes this process may use, on every load. */
  uint64_t total = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
  assert_int_equal(dev_memory_bytes(d), total);
  g_autoptr(dev_device) again = dev_device_load("host", NULL, &error);
  assert_non_null(again);
  assert_int_equal(dev_memory_bytes(again), total);
}

static void test_catalog_complete(void **state)
{
  static const char *const required[] = {
      "k20x", "k40", "k80", "m60", "titanx-maxwell", "titanx-pascal", "gtx1080ti",
      "p100-pcie-16gb", "p100-sxm2-16gb", "v100-pcie-16gb", "v100-sxm2-16gb", "v100-sxm2-32gb",
      "t4", "a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm5-80gb", "xeon-phi-7120p",
      "xeon-phi-7250", "xeon-e5-2630v3-2s", "xeon-e5-2686v4-2s", "xeon-gold-6148-2s",
      "xeon-platinum-8124m-2s", "host"};
  for (gsize i = 0; i < G_N_ELEMENTS(required); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(dev_device) d = dev_device_load(required[i], NULL, &error);
    if (d == NULL)
      fail_msg("%s: %s", required[i], error->message);
    assert_string_equal(dev_device_name(d), required[i]);
  }
  /* Datasheet spot checks: V100 SXM2 15.7 TFLOP/s fp32, 900 GB/s, 16 GiB, 80 SMs. */
  g_autoptr(GError) error = NULL;
  g_autoptr(dev_device) v = dev_device_load("v100-sxm2-16gb", NULL, &error);
  assert_true(dev_peak_flops(v, WL_PREC_FP32) == 15.7e12);
  assert_true(dev_memory_Bps(v) == 900e9);
  assert_int_equal(dev_memory_bytes(v), UINT64_C(16) << 30);
  assert_int_equal(dev_compute_units(v), 80);
  /* The lister prints every entry and the four models. */
  g_autofree char *path = NULL;
  int fd = g_file_open_tmp("dtsim-list-XXXXXX.txt", &path, &error);
  FILE *f = fdopen(fd, "w+");
  assert_int_equal(dtsim_list_devices(f, FALSE), 0);
  fflush(f);
  g_autofree char *text = NULL;
  g_file_get_contents(path, &text, NULL, &error);
  fclose(f);
  g_unlink(path);
  for (gsize i = 0; i < G_N_ELEMENTS(required); i++)
    assert_non_null(strstr(text, required[i]));
  gsize n = 0;
  const dev_model *const *models = dev_models(&n);
  assert_int_equal(n, 4);
  for (gsize i = 0; i < n; i++) {
    assert_non_null(strstr(text, dev_model_name(models[i])));
    assert_ptr_equal(dev_model_find(dev_model_name(models[i])), models[i]);
  }
  assert_null(dev_model_find("tpu"));
}

/* A board of two dies: the round GPU of test_sustained_clock alone on its board at 800 of its
 * 1000 MHz, at 600 MHz with its partner busy. The GEMM of test_roofline_compute_bound
 * (1717986918.4 ps at 1000 MHz) takes 1000/800 x that = 2147483648 ps alone and 1000/600 x
 * that = 2863311530.67 ps, rounded up, with both dies busy; the memory-bound op of
 * test_roofline_memory_bound stays at 2 ms either way; one busy die of two is a die alone. */
static void test_board_busy_clock(void **state)
{
  static const char text[] =
      "[device]\nmodel = gpu\nsms = 8\nclock_mhz = 1000\nsustained_clock_mhz = 800\n"
      "dies_per_board = 2\nboard_busy_clock_mhz = 600\n"
      "peak_tflops_fp32 = 10\nmemory_bandwidth_GBps = 1000\nmemory_bytes = 1G\n"
      "[efficiency]\nconv = 0.5\ngemm = 0.5\ntensor = 0.5\nother = 0.5\nmemory = 0.5\n"
      "k_overhead = 0\n"
      "[software]\nkernel_launch_us = 0\nframework_step_us = 1000\n"
      "[host_link]\nkind = pcie\npcie_gen = 3\nlanes = 16\nlatency_us = 5\n";
  g_autoptr(dev_device) d = load_text(text);
  assert_int_equal(dev_board_dies(d), 2);
  wl_op_cost op = gemm_op(1024, 1024, 4096, WL_PREC_FP32);
  wl_op_cost mem = {0};
  mem.kind = WL_OP_ELEMENTWISE;
  mem.flops = 1000000;
  mem.bytes_read = 500000000;
  mem.bytes_written = 500000000;
  assert_int_equal(dev_op_time_ps(d, &op, 0), INT64_C(2147483648));
  dev_device_set_busy_dies(d, 2);
  assert_int_equal(dev_op_time_ps(d, &op, 0), INT64_C(2863311531));
  assert_int_equal(dev_op_time_ps(d, &mem, 0), INT64_C(2000000000));
  assert_true(dev_peak_flops(d, WL_PREC_FP32) == 10e12);
  dev_device_set_busy_dies(d, 1);
  assert_int_equal(dev_op_time_ps(d, &op, 0), INT64_C(2147483648));
  /* The catalog's K80: 718 MHz alone, 670 MHz with both dies of its board busy; a GEMM of
   * about 7 ms scales by 718 / 670 up to its 6 us launch (a 2e-4 shift of the ratio). A P100
   * (one die) does not change. */
  g_autoptr(GError) error = NULL;
  g_autoptr(dev_device) k80 = dev_device_load("k80", NULL, &error);
  assert_non_null(k80);
  assert_int_equal(dev_board_dies(k80), 2);
  wl_op_cost big = gemm_op(1024, 1024, 8192, WL_PREC_FP32);
  int64_t alone = dev_op_time_ps(k80, &big, 0);
  dev_device_set_busy_dies(k80, 2);
  assert_true(fabs((double)dev_op_time_ps(k80, &big, 0) / (double)alone - 718.0 / 670.0) < 1e-3);
  g_autoptr(dev_device) p100 = dev_device_load("p100-sxm2-16gb", NULL, &error);
  assert_non_null(p100);
  assert_int_equal(dev_board_dies(p100), 1);
  alone = dev_op_time_ps(p100, &big, 0);
  dev_device_set_busy_dies(p100, 8);
  assert_int_equal(dev_op_time_ps(p100, &big, 0), alone);
}

/* Loading `text` fails with an input error whose message contains `expect`. */
static void expect_error(const char *text, const char *expect)
{
  g_autoptr(GError) error = NULL;
  dev_device *d = dev_device_load_data("bad.ini", text, strlen(text), NULL, &error);
  assert_null(d);
  assert_true(g_error_matches(error, DT_ERROR, DT_ERROR_INPUT));
  if (strstr(error->message, expect) == NULL)
    fail_msg("expected '%s' in '%s'", expect, error->message);
}

static void test_errors(void **state)
{
  g_autoptr(GError) error = NULL;
  assert_null(dev_device_load("no-such-gpu", NULL, &error));
  assert_true(g_error_matches(error, DT_ERROR, DT_ERROR_INPUT));
  assert_non_null(strstr(error->message, "no-such-gpu"));
  g_clear_error(&error);
  assert_null(dev_device_load("/nonexistent/dev.ini", NULL, &error));
  assert_true(g_error_matches(error, DT_ERROR, DT_ERROR_INPUT));
  g_clear_error(&error);
  assert_null(dev_device_load("v100-sxm2-16gb", "/nonexistent/overlay.ini", &error));
  assert_true(g_error_matches(error, DT_ERROR, DT_ERROR_INPUT));
  assert_non_null(strstr(error->message, "/nonexistent/overlay.ini"));

  expect_error("[device]\nsms = 8\n", "bad.ini:1: [device] model: missing required key");
  expect_error("[device]\nmodel = tpu\n", "bad.ini:2: [device] model: unknown device model 'tpu'");
  expect_error("[device]\nmodel = gpu\nsms = many\n", "bad.ini:3: [device] sms");
  expect_error("[device]\nmodel = gpu\nsms = 8\nclock_mhz = 1000\nsustained_clock_mhz = 1200\n"
               "peak_tflops_fp32 = 10\nmemory_bandwidth_GBps = 100\nmemory_bytes = 1G\n"
               "[host_link]\nkind = pcie\npcie_gen = 3\nlanes = 16\n",
               "bad.ini:5: [device] sustained_clock_mhz: 1200 MHz is above the boost clock");
  /* A board clock: above the clock a die holds alone, on a board of one die, on half a die. */
  expect_error("[device]\nmodel = gpu\nsms = 8\nclock_mhz = 1000\nsustained_clock_mhz = 800\n"
               "dies_per_board = 2\nboard_busy_clock_mhz = 900\n"
               "peak_tflops_fp32 = 10\nmemory_bandwidth_GBps = 100\nmemory_bytes = 1G\n"
               "[host_link]\nkind = pcie\npcie_gen = 3\nlanes = 16\n",
               "bad.ini:7: [device] board_busy_clock_mhz: 900 MHz is above the 800 MHz a die "
               "holds alone");
  expect_error("[device]\nmodel = gpu\nsms = 8\nclock_mhz = 1000\nboard_busy_clock_mhz = 900\n"
               "peak_tflops_fp32 = 10\nmemory_bandwidth_GBps = 100\nmemory_bytes = 1G\n"
               "[host_link]\nkind = pcie\npcie_gen = 3\nlanes = 16\n",
               "bad.ini:5: [device] board_busy_clock_mhz: 900 MHz needs dies_per_board of 2");
  expect_error("[device]\nmodel = gpu\nsms = 8\nclock_mhz = 1000\ndies_per_board = 1.5\n"
               "peak_tflops_fp32 = 10\nmemory_bandwidth_GBps = 100\nmemory_bytes = 1G\n"
               "[host_link]\nkind = pcie\npcie_gen = 3\nlanes = 16\n",
               "bad.ini:5: [device] dies_per_board: 1.5 is not a whole number of dies");
  expect_error("[device]\nmodel = gpu\nsms = 8\nclock_mhz = 1000\ndies_per_board = 0\n",
               "bad.ini:5: [device] dies_per_board");
  expect_error("[device]\nmodel = gpu\nsms = 8\nclock_mhz = 1000\npeak_tflops_fp32 = 10\n"
               "memory_bandwith_GBps = 900\nmemory_bytes = 1G\n",
               "memory_bandwith_GBps");
  expect_error("[device]\nmodel = gpu\nsms = 8\nclock_mhz = 1000\nmemory_bandwidth_GBps = 9\n"
               "memory_bytes = 1G\n[host_link]\nkind = pcie\npcie_gen = 3\nlanes = 16\n",
               "peak_tflops_fp32: missing required key for model gpu");
  expect_error("[device]\nmodel = gpu\n[efficiency]\nconv = 1.5\n", "bad.ini:4: [efficiency] conv");
  expect_error("[device]\nmodel = gpu\n[bogus]\nx = 1\n", "bad.ini:3: [bogus]: unknown group");
  expect_error("[device]\nmodel = gpu\nsms = 8\nclock_mhz = 1000\npeak_tflops_fp32 = 10\n"
               "memory_bandwidth_GBps = 900\nmemory_bytes = 1G\n[host_link]\nkind = pcie\n",
               "pcie_gen");
  expect_error("[device]\nmodel = xeon-phi-measured\ncores = 4\nclock_mhz = 1000\n"
               "memory_bandwidth_GBps = 9\nmemory_bytes = 1G\n[host_link]\nkind = none\n",
               "single_thread_gflops");
  expect_error("[device\nmodel = gpu\n", "bad.ini");
}

/* Calibration on synthetic rows made by a device with known parameters recovers them. */
static void test_calibration_recovers(void **state)
{
  static const char truth_overlay[] =
      "[efficiency]\nconv = 0.61\nmemory = 0.66\n[software]\nkernel_launch_us = 11\n";
  g_autoptr(GError) error = NULL;
  g_autofree char *tpath = tmp_text_file("dtsim-truth-XXXXXX.ini", truth_overlay);
  g_autoptr(dev_device) truth = dev_device_load("p100-pcie-16gb", tpath, &error);
  assert_non_null(truth);
  g_autoptr(dev_calib) c = dev_calib_new();
  dev_calib_set_lambda(c, 1e-7);
  dev_calib_set_generations(c, 120);
  assert_true(dev_calib_add_param(c, "efficiency.conv", &error));
  assert_true(dev_calib_add_param(c, "efficiency.memory", &error));
  assert_true(dev_calib_add_param(c, "software.kernel_launch_us", &error));
  /* Rows: compute-bound 1x1 convolutions, memory-bound element-wise ops, and tiny ops whose
   * time is mostly launch overhead, alone and mixed. */
  for (int r = 0; r < 12; r++) {
    wl_op_cost ops[5];
    dev__conv_ops(8 + 8 * (unsigned)r, 28, 28, 256, 256, 1, 1, 0, 1, WL_PREC_FP32, ops);
    wl_op_cost *ew = &ops[3], *tiny = &ops[4];
    memset(ew, 0, sizeof *ew);
    ew->kind = WL_OP_ELEMENTWISE;
    ew->bytes_read = ew->bytes_written = UINT64_C(4000000) * (uint64_t)(r % 4 + 1);
    ew->flops = ew->bytes_read / 4;
    memset(tiny, 0, sizeof *tiny);
    tiny->kind = WL_OP_ELEMENTWISE;
    tiny->bytes_read = 4096;
    gsize first = (gsize)(r % 3 == 0 ? 3 : 0), count = r % 3 == 1 ? 3 : 5 - first;
    double s = 0;
    for (gsize i = first; i < first + count; i++)
      s += (double)dev_op_time_ps(truth, &ops[i], 0) * 1e-12;
    g_autofree char *label = g_strdup_printf("row%d", r);
    assert_true(dev_calib_add_row(c, label, "p100-pcie-16gb", &ops[first], count, 0, FALSE, 0,
                                  0, s, &error));
  }
  assert_true(dev_calib_fit(c, TRUE, &error));
  static const double want[] = {0.61, 0.66, 11};
  for (unsigned j = 0; j < 3; j++) {
    const char *g, *k;
    double init, fit;
    dev_calib_param(c, j, &g, &k, &init, &fit);
    if (fabs(fit - want[j]) > 0.05 * want[j])
      fail_msg("%s.%s fitted %g, truth %g", g, k, fit, want[j]);
  }
  assert_true(dev_calib_default_mape(c) > 5);
  assert_true(dev_calib_fit_mape(c) < 1);
  assert_true(dev_calib_loo_mape(c) < 2);
  /* The overlay reloads and reproduces the fitted values. */
  g_autofree char *opath = g_strdup_printf("%s.fit.ini", tpath);
  assert_true(dev_calib_write_overlay(c, opath, "synthetic", &error));
  g_autoptr(dev_device) fitted = dev_device_load("p100-pcie-16gb", opath, &error);
  if (fitted == NULL)
    fail_msg("%s", error->message);
  assert_true(fabs(fitted->prm.eff_conv - 0.61) < 0.05 * 0.61);
  /* The same overlay works as the device itself (--device FILE): the catalog device it was
   * fitted on with the overlay on top. */
  g_autoptr(dev_device) as_device = dev_device_load(opath, NULL, &error);
  if (as_device == NULL)
    fail_msg("%s", error->message);
  assert_true(as_device->prm.eff_conv == fitted->prm.eff_conv);
  assert_true(as_device->prm.peak_tflops_fp32 == 9.3);
  g_unlink(opath);
  g_unlink(tpath);
  /* Unknown parameters are refused with the list of those that can be fitted. */
  assert_false(dev_calib_add_param(c, "device.sms", &error));
  assert_non_null(strstr(error->message, "efficiency.conv"));
}

static void test_calibration_csv_errors(void **state)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *path =
      tmp_text_file("dtsim-rows-XXXXXX.csv",
                    "layer,input_hwc,batch,filters,kernel,pad,stride,device,total_ms\n"
                    "c1,56x56x64,16,64,3x3,1,1,v100-sxm2-16gb,1.0\n"
                    "c2,56x56,16,64,3x3,1,1,v100-sxm2-16gb,1.0\n");
  g_autoptr(dev_calib) c = dev_calib_new();
  assert_false(dev_calib_load_csv(c, path, NULL, &error));
  assert_true(g_error_matches(error, DT_ERROR, DT_ERROR_INPUT));
  assert_non_null(strstr(error->message, ":3: input_hwc"));
  g_clear_error(&error);
  g_file_set_contents(path,
                      "layer,input_hwc,batch,filters,kernel,pad,stride,device,total_ms\n"
                      "c1,56x56x64,16,64,3x3,1,1,gpu9000,1.0\n",
                      -1, NULL);
  g_autoptr(dev_calib) c2 = dev_calib_new();
  assert_false(dev_calib_load_csv(c2, path, NULL, &error));
  assert_non_null(strstr(error->message, "gpu9000"));
  g_unlink(path);
}

/* Default prediction of each row of a training table, the table written to a temporary file. */
static void training_predictions(const char *rows, double *pred, guint n)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;
  int fd = g_file_open_tmp("dtsim-train-XXXXXX.csv", &path, &error);
  close(fd);
  g_autofree char *text = g_strconcat("model,framework,precision,device,system,nodes,"
                                      "devices_per_node,batch_per_device,strategy,ps_placement,"
                                      "measured,unit,source\n",
                                      rows, NULL);
  assert_true(g_file_set_contents(path, text, -1, NULL));
  g_autoptr(dev_calib) c = dev_calib_new();
  assert_true(dev_calib_load_csv(c, path, NULL, &error));
  assert_int_equal(dev_calib_n_rows(c), n);
  dev_calib_predict_defaults(c);
  for (guint i = 0; i < n; i++) {
    const char *label, *device;
    double measured_s, fit_s, loo_s;
    dev_calib_row(c, i, &label, &device, &measured_s, &pred[i], &fit_s, &loo_s);
  }
  g_unlink(path);
}

/* Rows of one model, batch and precision share one op list within a table (the fwd+bwd rows
 * another, without the update): every row of a table of four predicts what it predicts alone,
 * and the fwd+bwd row less than the same step with its update. */
static void test_calibration_shared_ops(void **state)
{
  static const char *const rows[] = {
      "resnet18,tf,fp32,v100-sxm2-16gb,x,1,1,32,dp,-,100,images_per_s,s\n",
      "resnet18,tf,fp32,p100-sxm2-16gb,x,1,1,32,dp,-,80,images_per_s,s\n",
      "resnet18,tf,fp32,v100-sxm2-16gb,x,1,1,32,fwd+bwd,-,120,images_per_s,s\n",
      "resnet18,tf,fp32,v100-sxm2-16gb,x,1,1,64,dp,-,100,images_per_s,s\n",
  };
  g_autofree char *all = g_strconcat(rows[0], rows[1], rows[2], rows[3], NULL);
  double together[4], alone[4];
  training_predictions(all, together, 4);
  for (int i = 0; i < 4; i++) {
    training_predictions(rows[i], &alone[i], 1);
    assert_true(together[i] == alone[i]);
    assert_true(alone[i] > 0);
  }
  assert_true(together[2] < together[0]);   /* no update, no host overhead */
  assert_true(together[3] > together[0]);   /* twice the batch */
}

static int run_calibrate(const char *const *args)
{
  g_auto(GStrv) argv = g_strdupv((char **)args);
  int argc = (int)g_strv_length(argv);
  /* GOptionContext rearranges argv; the strings stay owned by the vector copy. */
  g_autofree char **view = g_new(char *, (gsize)argc + 1);
  memcpy(view, argv, sizeof(char *) * ((gsize)argc + 1));
  return dtsim_cmd_calibrate(argc, view);
}

static void test_cli_calibrate(void **state)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *csv =
      tmp_text_file("dtsim-cal-XXXXXX.csv",
                    "layer,input_hwc,batch,filters,kernel,pad,stride,device,total_ms\n"
                    "a,56x56x64,16,64,3x3,1,1,v100-sxm2-16gb,0.5\n"
                    "b,28x28x128,16,128,1x1,0,1,v100-sxm2-16gb,0.2\n");
  g_autofree char *out = g_strdup_printf("%s.ini", csv);
  const char *ok[] = {"calibrate", csv, "--params", "efficiency.conv", "--generations", "5",
                      "--no-loo", "-o", out, NULL};
  assert_int_equal(run_calibrate(ok), 0);
  g_autoptr(dev_device) d = dev_device_load("v100-sxm2-16gb", out, &error);
  assert_non_null(d);
  const char *bad_param[] = {"calibrate", csv, "--params", "device.sms", NULL};
  assert_int_equal(run_calibrate(bad_param), 2);
  const char *no_file[] = {"calibrate", "/nonexistent.csv", NULL};
  assert_int_equal(run_calibrate(no_file), 2);
  const char *no_rows[] = {"calibrate", csv, "--device", "k80", NULL};
  assert_int_equal(run_calibrate(no_rows), 2);
  const char *no_arg[] = {"calibrate", NULL};
  assert_int_equal(run_calibrate(no_arg), 2);
  g_unlink(out);
  g_unlink(csv);
}

/* ---- Transformer-era GPUs ------------------------------------------------------------------ */

/* A device refuses a precision it has no arithmetic for, naming the option and the device. */
static void test_precision_refusal(void **state)
{
  (void)state;
  static const struct {
    const char *dev;
    wl_precision p;
    gboolean ok;
  } cases[] = {
      {"v100-sxm2-16gb", WL_PREC_TF32, FALSE}, {"v100-sxm2-16gb", WL_PREC_BF16, FALSE},
      {"v100-sxm2-16gb", WL_PREC_FP16, TRUE},  {"a100-sxm4-80gb", WL_PREC_FP8, FALSE},
      {"a100-sxm4-80gb", WL_PREC_BF16, TRUE},  {"h100-sxm5-80gb", WL_PREC_FP8, TRUE},
      {"h200-sxm-141gb", WL_PREC_FP8, TRUE},   {"b200-sxm-180gb", WL_PREC_FP8, TRUE},
      {"xeon-phi-7250", WL_PREC_FP8, FALSE},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(dev_device) d = dev_device_load(cases[i].dev, NULL, &error);
    assert_non_null(d);
    gboolean ok = dev_check_precision(d, cases[i].p, "--precision", &error);
    assert_int_equal(ok, cases[i].ok);
    if (!ok) {
      assert_int_equal(error->code, DT_ERROR_INPUT);
      assert_non_null(strstr(error->message, "--precision"));
      assert_non_null(strstr(error->message, cases[i].dev));
    }
  }
}

/* The catalog reproduces the measured maximum achievable matmul rates (bf16, mamf-finder,
 * S. Bekman's ml-engineering table) at the shapes they were measured on, within 3%: A100 SXM
 * 267.9 TFLOP/s at 6912x16384x2048, H100 SXM 792.1 at 6144x17920x2816. Those short runs hold
 * the boost clock: the devices are loaded with sustained_clock = 1. */
static void test_catalog_matmul_rates(void **state)
{
  (void)state;
  static const struct {
    const char *dev;
    uint64_t m, n, k;
    double tflops;
  } rows[] = {
      {"a100-sxm4-80gb", 6912, 16384, 2048, 267.9},
      {"h100-sxm5-80gb", 6144, 17920, 2816, 792.1},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
    g_autoptr(GError) error = NULL;
    g_autofree char *overlay =
        tmp_text_file("dtsim-boost-XXXXXX.ini", "[efficiency]\nsustained_clock = 1\n");
    g_autoptr(dev_device) d = dev_device_load(rows[i].dev, overlay, &error);
    g_unlink(overlay);
    assert_non_null(d);
    wl_op_cost op = gemm_op(rows[i].m, rows[i].n, rows[i].k, WL_PREC_BF16);
    op.bytes_read = (rows[i].m * rows[i].k + rows[i].k * rows[i].n) * 2;
    op.bytes_written = rows[i].m * rows[i].n * 2;
    double t = (double)dev_op_time_ps(d, &op, 0) * 1e-12;
    double got = (double)op.flops / t / 1e12;
    if (fabs(got / rows[i].tflops - 1) > 0.03)
      fail_msg("%s: %.1f TFLOP/s, measured %.1f", rows[i].dev, got, rows[i].tflops);
  }
  /* fp8 on H100 runs the same GEMM at twice the bf16 tensor peak (1979 vs 989.4 TFLOP/s) at
   * its own efficiency (0.75 against 0.82; test_fp8_efficiency). */
  g_autoptr(dev_device) h = dev_device_load("h100-sxm5-80gb", NULL, NULL);
  wl_op_cost b = gemm_op(8192, 8192, 8192, WL_PREC_BF16), f = b;
  f.precision = WL_PREC_FP8;
  double tb = (double)dev_op_time_ps(h, &b, 0), tf = (double)dev_op_time_ps(h, &f, 0);
  assert_true(fabs(tb / tf - (1979.0 * 0.75) / (989.4 * 0.82)) < 0.02);
}

/* Fused attention: compute-bound at the tensor peak times the attention efficiency; the round
 * GPU has 100 TFLOP/s fp16 tensor, forward efficiency 0.5 (set below), no launch cost. A
 * 1e12-FLOP forward takes 1e12 / 5e13 = 20 ms; its memory (1 MB at 500 GB/s, 2 us) is hidden. */
static void test_attention_kernel(void **state)
{
  (void)state;
  g_autofree char *text = g_strdup_printf("%s[efficiency]\nattention_forward = 0.5\n"
                                          "attention_backward = 0.25\n", round_gpu);
  /* The round GPU's [efficiency] group comes first; a second group of the same name merges. */
  g_autoptr(GError) error = NULL;
  g_autoptr(dev_device) d = dev_device_load_data("t.ini", text, strlen(text), NULL, &error);
  if (!d)
    fail_msg("%s", error->message);
  wl_op_cost op = {0};
  op.kind = WL_OP_ATTENTION;
  op.pass = WL_PASS_FORWARD;
  op.precision = WL_PREC_FP16;
  op.flops = 1000000000000ULL;
  op.bytes_read = 1000000;
  assert_int_equal(dev_op_time_ps(d, &op, 0), 20000000000LL);
  op.pass = WL_PASS_BACKWARD_DATA;
  assert_int_equal(dev_op_time_ps(d, &op, 0), 40000000000LL);
  /* Memory-bound when the traffic dominates: 1e11 bytes at 500 GB/s is 200 ms. */
  op.bytes_read = 100000000000ULL;
  assert_int_equal(dev_op_time_ps(d, &op, 0), 200000000000LL);
}

/* Attention's tiles (dev__attention_fill), worked by hand with 128 x 128 tiles:
 *   full, 2048 x 2048, 32 heads, 132 SMs: 32 x 16 = 512 blocks of 16 steps in ceil(512 / 132) =
 *   4 waves: 512 / 528;
 *   causal, same: 32 x (1 + ... + 16) = 4352 steps; tail bound 4352 / 132 + (131 / 132) 16, so
 *   SMs x makespan = 4352 + 131 x 16 = 6448: 4352 / 6448;
 *   causal, 1024 x 1024, one head, 8 SMs: 8 blocks on 8 SMs, the longest 8 steps: 36 / 64;
 *   causal, 256 queries after 256 earlier keys (512 keys), one SM: blocks of 3 and 4 steps back
 *   to back, no idle SM: 1;
 *   full, 100 x 100, one SM: one padded tile: 100^2 / 128^2;
 *   causal, 128 queries after 896 earlier keys, 16 heads on 8 SMs: 16 equal blocks of 8 steps,
 *   two waves of 8 (Graham's bound, 128 / 8 + (7 / 8) 8 = 23, is the higher): 1. */
static void test_attention_fill(void **state)
{
  (void)state;
  assert_true(fabs(dev__attention_fill(2048, 2048, 32, FALSE, 132) - 512.0 / 528.0) < 1e-12);
  assert_true(fabs(dev__attention_fill(2048, 2048, 32, TRUE, 132) - 4352.0 / 6448.0) < 1e-12);
  assert_true(fabs(dev__attention_fill(1024, 1024, 1, TRUE, 8) - 36.0 / 64.0) < 1e-12);
  assert_true(fabs(dev__attention_fill(256, 512, 1, TRUE, 1) - 1.0) < 1e-12);
  assert_true(fabs(dev__attention_fill(100, 100, 1, FALSE, 1) - 10000.0 / 16384.0) < 1e-12);
  assert_true(fabs(dev__attention_fill(128, 1024, 16, TRUE, 8) - 1.0) < 1e-12);
  /* Long sequences fill the device: 131072 causal on 132 SMs is within 1% of full. */
  assert_true(dev__attention_fill(131072, 131072, 32, TRUE, 132) > 0.99);
  /* Through the round GPU (8 SMs, 100 TFLOP/s fp16 tensor, forward efficiency 0.5): a causal
   * forward of 1024 queries and keys, one head of widths 128 + 128, runs 2 x 1024^2 x 256 / 2 =
   * 268435456 FLOPs at 5e13 x 36 / 64 FLOP/s: 9544371.8 ps. */
  g_autofree char *text = g_strdup_printf("%s[efficiency]\nattention_forward = 0.5\n",
                                          round_gpu);
  g_autoptr(dev_device) d = load_text(text);
  wl_op_cost op = {.kind = WL_OP_ATTENTION, .pass = WL_PASS_FORWARD, .precision = WL_PREC_FP16,
                   .flops = 268435456, .gemm_m = 1024, .gemm_n = 256, .gemm_k = 1024,
                   .gemm_batch = 1, .causal = 1};
  assert_true(llabs(dev_op_time_ps(d, &op, 0) - 9544372) <= 1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_precision_refusal),
      cmocka_unit_test(test_catalog_matmul_rates),
      cmocka_unit_test(test_attention_kernel),
      cmocka_unit_test(test_attention_fill),
      cmocka_unit_test(test_roofline_memory_bound),
      cmocka_unit_test(test_roofline_compute_bound),
      cmocka_unit_test(test_wave_quantization),
      cmocka_unit_test(test_tensor_cores),
      cmocka_unit_test(test_tensor_cores_padded_channels),
      cmocka_unit_test(test_sustained_clock),
      cmocka_unit_test(test_kepler_clocks_and_ecc),
      cmocka_unit_test(test_board_busy_clock),
      cmocka_unit_test(test_power_limited_h100),
      cmocka_unit_test(test_fp8_efficiency),
      cmocka_unit_test(test_dgx2_v100_clock),
      cmocka_unit_test(test_launch_and_host),
      cmocka_unit_test(test_conv_ops),
      cmocka_unit_test(test_op_flops_winograd),
      cmocka_unit_test(test_hopper_winograd_nonfused),
      cmocka_unit_test(test_batchnorm_channel_blocks),
      cmocka_unit_test(test_more_flops_never_faster),
      cmocka_unit_test(test_faster_datasheet_never_slower),
      cmocka_unit_test(test_phi_speedup_curves),
      cmocka_unit_test(test_phi_spec_hand),
      cmocka_unit_test(test_cpu_synthetic_topology),
      cmocka_unit_test(test_host_device),
      cmocka_unit_test(test_catalog_complete),
      cmocka_unit_test(test_chaos_issue_rules),
      cmocka_unit_test(test_chaos_measured),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_calibration_recovers),
      cmocka_unit_test(test_calibration_csv_errors),
      cmocka_unit_test(test_calibration_shared_ops),
      cmocka_unit_test(test_cli_calibrate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
