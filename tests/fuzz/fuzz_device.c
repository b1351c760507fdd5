/* Fuzz harness for the device catalog reader, dev_device_load_data(), followed by timing the
 * ops of a real network on the loaded device.
 *
 * Invariants on a device that loads: its memory, peak rates and streaming bandwidth are
 * positive and finite; every op of ResNet-18 (batch 32, all passes, fp32 and fp16) and an op
 * as large as wl_net_new() allows takes at least 1 ps and the thread speedup behind it is a
 * finite positive number (a NaN time would otherwise be read as 1 ps); host overheads are
 * non-negative. A refusal is a DT_ERROR naming the entry. */
#include "fuzz.h"

#include "devices.h"
#include "util.h"
#include "workloads.h"

#include <math.h>

#define NAME "fuzz-device"

static GArray *ops;  /* wl_op_cost */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  fuzz_init();
  ops = g_array_new(FALSE, FALSE, sizeof(wl_op_cost));
  g_autoptr(wl_model) m = wl_zoo_build("resnet18", NULL);
  g_assert(m != NULL);
  for (wl_precision prec = WL_PREC_FP32; prec <= WL_PREC_FP16; prec += 2) {
    g_autoptr(wl_net) net = wl_net_new(m, 32, prec, NULL);
    g_assert(net != NULL);
    for (size_t i = 0; i < wl_net_n_layers(net); i++) {
      const wl_layer *L = wl_net_layer(net, i);
      for (int p = 0; p < WL_PASS_COUNT; p++)
        if (L->has_pass[p])
          g_array_append_val(ops, L->cost[p]);
    }
  }
  /* The largest convolution wl_net_new() lets through: about 1e18 FLOPs and bytes. */
  wl_op_cost big = {.kind = WL_OP_CONV, .pass = WL_PASS_FORWARD, .precision = WL_PREC_FP32,
                    .flops = UINT64_C(1000000000000000000), .bytes_read = UINT64_C(1) << 59,
                    .bytes_written = UINT64_C(1) << 59, .gemm_m = UINT64_C(1) << 30,
                    .gemm_n = 1 << 15, .gemm_k = 1 << 15, .gemm_batch = 1,
                    .out_elems = UINT64_C(1) << 45, .kernel_h = 3, .kernel_w = 3, .stride = 1};
  g_array_append_val(ops, big);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(dev_device) dev = dev_device_load_data(NAME, (const char *)data, size, NULL, &error);
  if (!dev) {
    fuzz_check_error(error, NAME);
    return 0;
  }
  FUZZ_CHECK(dev_memory_bytes(dev) > 0, "no memory");
  FUZZ_CHECK(isfinite(dev_stream_Bps(dev)) && dev_stream_Bps(dev) > 0, "stream bandwidth %g",
             dev_stream_Bps(dev));
  for (int p = 0; p < WL_PREC_COUNT; p++)
    FUZZ_CHECK(isfinite(dev_peak_flops(dev, p)) && dev_peak_flops(dev, p) > 0,
               "peak %s FLOP/s is %g", wl_precision_name(p), dev_peak_flops(dev, p));
  unsigned hw = dev_hw_threads(dev);
  FUZZ_CHECK(hw >= 1, "no hardware threads");
  /* All threads (0, or more than there are, clamp to all), one, and half. */
  const unsigned threads[] = {0, 1, (hw + 1) / 2};
  for (guint i = 0; i < ops->len; i++) {
    const wl_op_cost *op = &g_array_index(ops, wl_op_cost, i);
    for (gsize t = 0; t < G_N_ELEMENTS(threads); t++) {
      int64_t ps = dev_op_time_ps(dev, op, threads[t]);
      FUZZ_CHECK(ps >= 1, "op %u (%s %s) takes %lld ps", i, wl_op_kind_name(op->kind),
                 wl_pass_name(op->pass), (long long)ps);
      double speedup = dev_thread_speedup(dev, op, threads[t]);
      FUZZ_CHECK(isfinite(speedup) && speedup > 0, "op %u (%s %s) on %u threads: speedup %g", i,
                 wl_op_kind_name(op->kind), wl_pass_name(op->pass), threads[t], speedup);
    }
  }
  const uint64_t bytes[] = {0, 1, UINT64_C(1) << 30, UINT64_MAX};
  for (gsize b = 0; b < G_N_ELEMENTS(bytes); b++) {
    FUZZ_CHECK(dev_host_overhead_ps(dev, bytes[b]) >= 0, "negative host overhead");
    FUZZ_CHECK(dev_input_copy_ps(dev, bytes[b]) >= 0, "negative input copy");
  }
  FUZZ_CHECK(dev_step_overhead_ps(dev) >= 0, "negative step overhead");
  fuzz_accepted();
  return 0;
}
