/* Device descriptors: loading catalog entries and user INI files (plus calibration overlays),
 * the model registry, the parameter table shared with the calibration, and the public
 * accessors. The models themselves are in gpu.c and manycore.c. */
#include "dev_internal.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* ---- Registry ------------------------------------------------------------------------------ */

static const dev_model *const registry[] = {
    &dev__model_gpu,
    &dev__model_phi_spec,
    &dev__model_phi_measured,
    &dev__model_cpu,
};

const dev_model *const *dev_models(gsize *n_out)
{
  *n_out = G_N_ELEMENTS(registry);
  return registry;
}

const dev_model *dev_model_find(const char *name)
{
  for (gsize i = 0; i < G_N_ELEMENTS(registry); i++)
    if (name && strcmp(name, registry[i]->name) == 0)
      return registry[i];
  return NULL;
}

const char *dev_model_name(const dev_model *model) { return model->name; }
const char *dev_model_description(const dev_model *model) { return model->description; }

/* ---- Parameter table ----------------------------------------------------------------------- */

#define P(g, k, f, lo, hi, fit, unit) {g, k, offsetof(dev_params, f), lo, hi, fit, unit}
/* Peaks, when given, are at least 1e6 FLOP/s (1e-6 TFLOP/s): a denormal peak made every op's
 * time overflow (found by the device fuzz harness). */
const dev_param_info dev__params[] = {
    P("device", "peak_tflops_fp32", peak_tflops_fp32, 1e-6, 1e4, FALSE, "1e12 FLOP/s"),
    P("device", "peak_tflops_fp16", peak_tflops_fp16, 1e-6, 1e4, FALSE, "1e12 FLOP/s"),
    P("device", "peak_tflops_fp16_tensor", peak_tflops_fp16_tensor, 1e-6, 1e5, FALSE,
      "1e12 FLOP/s"),
    P("device", "peak_tflops_bf16_tensor", peak_tflops_bf16_tensor, 1e-6, 1e5, FALSE,
      "1e12 FLOP/s"),
    P("device", "peak_tflops_tf32_tensor", peak_tflops_tf32_tensor, 1e-6, 1e5, FALSE,
      "1e12 FLOP/s"),
    P("device", "peak_tflops_fp8_tensor", peak_tflops_fp8_tensor, 1e-6, 1e5, FALSE,
      "1e12 FLOP/s"),
    P("device", "memory_bandwidth_GBps", memory_bandwidth_GBps, 0.001, 1e6, FALSE, "1e9 bytes/s"),
    P("device", "sms", sms, 1, 10000, FALSE, "SMs"),
    P("device", "cores", cores, 1, 10000, FALSE, "cores"),
    P("device", "threads_per_core", threads_per_core, 1, DEV_MAX_TPC, FALSE, "threads"),
    P("device", "clock_mhz", clock_mhz, 1, 1e5, FALSE, "MHz"),
    P("device", "sustained_clock_mhz", sustained_clock_mhz, 0, 1e5, FALSE, "MHz"),
    P("device", "dies_per_board", dies_per_board, 1, 16, FALSE, "dies"),
    P("device", "board_busy_clock_mhz", board_busy_clock_mhz, 0, 1e5, FALSE, "MHz"),
    P("device", "vector_bits", vector_bits, 32, 4096, FALSE, "bits"),
    P("device", "fma_units", fma_units, 1, 16, FALSE, "units per core"),
    P("device", "per_core_bandwidth_GBps", per_core_bandwidth_GBps, 0.001, 1e4, FALSE,
      "1e9 bytes/s"),
    P("device", "fp32_issue_fraction", fp32_issue_fraction, 0.05, 1, FALSE, "fraction of peak"),
    P("device", "coherence_latency_ns", coherence_latency_ns, 0, 1e5, FALSE, "nanoseconds"),
    P("efficiency", "conv", eff_conv, 0.01, 1, TRUE, "fraction of peak"),
    P("efficiency", "gemm", eff_gemm, 0.01, 1, TRUE, "fraction of peak"),
    P("efficiency", "tensor", eff_tensor, 0.01, 1, TRUE, "fraction of tensor peak"),
    P("efficiency", "tensor_fp8", eff_tensor_fp8, 0.01, 1, TRUE, "fraction of fp8 tensor peak"),
    P("efficiency", "other", eff_other, 0.01, 1, TRUE, "fraction of vector peak"),
    P("efficiency", "memory", eff_memory, 0.01, 1, TRUE, "fraction of peak bandwidth"),
    P("efficiency", "k_overhead", k_overhead, 0, 4096, TRUE, "k elements"),
    P("efficiency", "attention_forward", eff_attention_fwd, 0.01, 1, TRUE, "fraction of tensor peak"),
    P("efficiency", "attention_backward", eff_attention_bwd, 0.01, 1, TRUE,
      "fraction of tensor peak"),
    P("efficiency", "sustained_clock", sustained_clock, 0, 1, TRUE, "fraction of boost clock"),
    P("software", "kernel_launch_us", kernel_launch_us, 0, 1e4, TRUE, "microseconds"),
    P("software", "framework_step_us", framework_step_us, 0, 1e7, TRUE, "microseconds"),
    P("software", "winograd_traffic", winograd_traffic, 0, 100, TRUE, "x op bytes"),
    P("software", "sync_us", sync_us, 0, 1e4, TRUE, "microseconds"),
    P("software", "chaos_efficiency", chaos_efficiency, 0.001, 1, TRUE, "fraction of [efficiency]"),
    P("measured", "shared_ps_per_byte", shared_ps_per_byte, 0, 1e7, FALSE, "ps per byte"),
    P("host_link", "bandwidth_GBps", link_bandwidth_GBps, 0, 1e5, FALSE, "1e9 bytes/s"),
    P("host_link", "latency_us", link_latency_us, 0, 1e6, FALSE, "microseconds"),
    P("host_link", "nvlink_peer_GBps", nvlink_peer_GBps, 0, 1e5, FALSE, "1e9 bytes/s"),
    P("host_link", "pcie_gen", pcie_gen, 0, 7, FALSE, "generation"),
    P("host_link", "lanes", link_lanes, 0, 64, FALSE, "lanes or links"),
    {NULL, NULL, 0, 0, 0, FALSE, NULL},
};
#undef P

const dev_param_info *dev__param_find(const char *group_dot_key)
{
  for (const dev_param_info *p = dev__params; p->key; p++) {
    gsize gl = strlen(p->group);
    if (strncmp(group_dot_key, p->group, gl) == 0 && group_dot_key[gl] == '.' &&
        strcmp(group_dot_key + gl + 1, p->key) == 0)
      return p;
  }
  return NULL;
}

double dev__param_get(const dev_device *dev, const dev_param_info *p)
{
  return *(const double *)((const char *)&dev->prm + p->offset);
}

void dev__param_set(dev_device *dev, const dev_param_info *p, double value)
{
  *(double *)((char *)&dev->prm + p->offset) = value;
}

/* Defaults for what a catalog entry may leave out. Efficiencies are those of well-tuned vendor
 * libraries (cuBLAS/cuDNN, MKL); they are starting points that `dtsim calibrate` refines. */
static void set_defaults(dev_device *dev)
{
  dev_params *p = &dev->prm;
  p->threads_per_core = 1;
  p->dies_per_board = 1;
  p->fp32_issue_fraction = 1;
  p->vector_bits = 256;
  p->fma_units = 2;
  p->per_core_bandwidth_GBps = 10;
  p->eff_conv = 0.72;
  p->eff_gemm = 0.80;
  p->eff_tensor = 0.55;
  p->eff_other = 0.30;
  p->eff_memory = 0.80;
  p->k_overhead = 48;
  /* FlashAttention-2 on A100 (Dao 2023, arXiv 2307.08691): forward 50-73% of the tensor peak,
   * backward lower (its five products re-read Q, K, V and the output gradient). */
  p->eff_attention_fwd = 0.60;
  p->eff_attention_bwd = 0.45;
  /* A framework op dispatch plus a CUDA kernel launch costs a few microseconds (launch alone is
   * about 5 us on these GPUs, as NVIDIA's launch-latency measurements show), and a training
   * step of a 2017-era framework spends about a millisecond of host work outside the ops
   * (session run, feeds, synchronization). */
  p->kernel_launch_us = 6;
  p->framework_step_us = 1000;
  p->winograd_traffic = 5.5;
  p->sync_us = 2;
  /* CHAOS's own C++ loops (thread-parallel training, --strategy chaos) reach 8.5% of the rates
   * of tuned libraries: the one fitted parameter of that model, fitted to the three published
   * speedups at 244 threads on the Xeon Phi 7120P (bench/phi/fit.sh; leave-one-out MAPE 8.3%).
   * The same code on other devices is assumed to reach the same fraction. */
  p->chaos_efficiency = 0.085;
  p->link_latency_us = 5;
  dev->winograd = DEV_WINOGRAD_OFF;
  dev->issue[1] = 1.0;
  for (int i = 2; i <= DEV_MAX_TPC; i++)
    dev->issue[i] = 1.0;
}

/* Keys each group may hold (catches typos such as bandwith_GBps). */
static const char *const device_keys[] = {
    "model", "title", "memory_bytes", "l2_cache_bytes", "peak_tflops_fp32", "peak_tflops_fp16",
    "peak_tflops_fp16_tensor", "peak_tflops_bf16_tensor", "peak_tflops_tf32_tensor",
    "peak_tflops_fp8_tensor",
    "memory_bandwidth_GBps", "sms", "cores", "threads_per_core", "clock_mhz",
    "sustained_clock_mhz", "dies_per_board", "board_busy_clock_mhz", "vector_bits",
    "fma_units", "per_core_bandwidth_GBps", "fp32_issue_fraction", "topology", "issue_fraction",
    "coherence_latency_ns", NULL};
static const char *const efficiency_keys[] = {"conv", "gemm", "tensor", "tensor_fp8", "other",
                                              "memory",
                                              "k_overhead", "attention_forward",
                                              "attention_backward", "sustained_clock", NULL};
static const char *const software_keys[] = {"stack", "kernel_launch_us", "framework_step_us",
                                            "winograd", "winograd_traffic", "sync_us",
                                            "chaos_efficiency", NULL};
static const char *const link_keys[] = {"kind", "pcie_gen", "lanes", "bandwidth_GBps",
                                        "latency_us", "nvlink_peer_GBps", NULL};
static const char *const measured_keys[] = {
    "single_thread_gflops_conv", "single_thread_gflops_gemm", "single_thread_gflops_other",
    "contention_threads", "contention_ps_per_byte", "shared_ps_per_byte", NULL};
static const char *const calibration_keys[] = {"device", "stack", "fit_mape", "loo_mape",
                                               "samples", "source", NULL};

static gboolean check_groups(const dt_ini *ini, GError **error)
{
  static const struct {
    const char *group;
    const char *const *keys;
  } groups[] = {
      {"device", device_keys},     {"efficiency", efficiency_keys},
      {"software", software_keys}, {"host_link", link_keys},
      {"measured", measured_keys}, {"calibration", calibration_keys},
  };
  gsize n = 0;
  g_auto(GStrv) names = g_key_file_get_groups(dt_ini_keyfile(ini), &n);
  for (gsize i = 0; i < n; i++) {
    gboolean known = FALSE;
    for (gsize g = 0; g < G_N_ELEMENTS(groups); g++) {
      if (strcmp(names[i], groups[g].group) != 0)
        continue;
      known = TRUE;
      if (!dt_ini_check_keys(ini, names[i], groups[g].keys, error))
        return FALSE;
    }
    if (!known)
      return dt_ini_error(ini, names[i], NULL, error,
                          "unknown group (expected device, efficiency, software, host_link, "
                          "measured or calibration)");
  }
  return TRUE;
}

/* Reads every scalar parameter present in `ini` (none is required here: each model's prepare()
 * checks what it needs). */
static gboolean read_params(dev_device *dev, const dt_ini *ini, GError **error)
{
  for (const dev_param_info *p = dev__params; p->key; p++) {
    double v = dev__param_get(dev, p);
    if (!dt_ini_double(ini, p->group, p->key, FALSE, p->min, p->max, &v, error))
      return FALSE;
    dev__param_set(dev, p, v);
  }
  return TRUE;
}

/* Reads "a;b;c" (or commas) as a list of finite doubles in [min, max]. */
static gboolean read_list(const dt_ini *ini, const char *group, const char *key, double min,
                          double max, double *out, unsigned cap, unsigned *n_out, GError **error)
{
  g_autofree char *text = dt_ini_string(ini, group, key, FALSE, NULL);
  if (text == NULL)
    return TRUE;
  g_strdelimit(text, ",", ';');
  g_auto(GStrv) parts = g_strsplit(text, ";", -1);
  unsigned n = 0;
  for (char **pp = parts; *pp; pp++) {
    char *item = g_strstrip(*pp);
    if (*item == '\0')
      continue;
    if (n == cap)
      return dt_ini_error(ini, group, key, error, "more than %u values", cap);
    char *end = NULL;
    double v = g_ascii_strtod(item, &end);
    if (end == item || *end != '\0' || !isfinite(v) || v < min || v > max)
      return dt_ini_error(ini, group, key, error, "'%s' is not a number in [%g, %g]", item, min,
                          max);
    out[n++] = v;
  }
  if (n == 0)
    return dt_ini_error(ini, group, key, error, "empty list");
  *n_out = n;
  return TRUE;
}

static gboolean read_strings(dev_device *dev, const dt_ini *ini, GError **error)
{
  g_autofree char *model = dt_ini_string(ini, "device", "model", FALSE, NULL);
  if (model) {
    dev->model = dev_model_find(model);
    if (dev->model == NULL)
      return dt_ini_error(ini, "device", "model", error,
                          "unknown device model '%s' (gpu, xeon-phi-spec, xeon-phi-measured, cpu)",
                          model);
  }
  char *title = dt_ini_string(ini, "device", "title", FALSE, NULL);
  if (title) {
    g_free(dev->title);
    dev->title = title;
  }
  char *topo = dt_ini_string(ini, "device", "topology", FALSE, NULL);
  if (topo) {
    g_free(dev->topology);
    dev->topology = topo;
  }
  if (dt_ini_has(ini, "device", "memory_bytes") &&
      !dt_ini_size(ini, "device", "memory_bytes", TRUE, &dev->memory_bytes, error))
    return FALSE;
  if (dt_ini_has(ini, "device", "l2_cache_bytes") &&
      !dt_ini_size(ini, "device", "l2_cache_bytes", TRUE, &dev->l2_bytes, error))
    return FALSE;
  g_autofree char *wino = dt_ini_string(ini, "software", "winograd", FALSE, NULL);
  if (wino) {
    if (strcmp(wino, "off") == 0)
      dev->winograd = DEV_WINOGRAD_OFF;
    else if (strcmp(wino, "nonfused") == 0)
      dev->winograd = DEV_WINOGRAD_NONFUSED;
    else if (strcmp(wino, "fused") == 0)
      dev->winograd = DEV_WINOGRAD_FUSED;
    else
      return dt_ini_error(ini, "software", "winograd", error,
                          "'%s' is not one of off, nonfused, fused", wino);
  }
  g_autofree char *kind = dt_ini_string(ini, "host_link", "kind", FALSE, NULL);
  if (kind) {
    if (strcmp(kind, "pcie") == 0)
      dev->link.kind = DEV_LINK_PCIE;
    else if (strcmp(kind, "nvlink") == 0)
      dev->link.kind = DEV_LINK_NVLINK;
    else if (strcmp(kind, "none") == 0)
      dev->link.kind = DEV_LINK_NONE;
    else
      return dt_ini_error(ini, "host_link", "kind", error, "'%s' is not one of pcie, nvlink, none",
                          kind);
  }
  double issue[DEV_MAX_TPC];
  unsigned n_issue = 0;
  if (!read_list(ini, "device", "issue_fraction", 0.01, 4, issue, DEV_MAX_TPC, &n_issue, error))
    return FALSE;
  for (unsigned i = 0; i < n_issue; i++)
    dev->issue[i + 1] = issue[i];
  for (unsigned i = n_issue ? n_issue + 1 : DEV_MAX_TPC + 1; i <= DEV_MAX_TPC; i++)
    dev->issue[i] = dev->issue[n_issue];
  /* Measured single-thread rates: convolutions, GEMMs, and one rate for every other kind. */
  static const char *const rate_keys[] = {"single_thread_gflops_conv",
                                          "single_thread_gflops_gemm",
                                          "single_thread_gflops_other"};
  for (gsize i = 0; i < G_N_ELEMENTS(rate_keys); i++) {
    double v = 0;
    if (!dt_ini_double(ini, "measured", rate_keys[i], FALSE, 1e-6, 1e6, &v, error))
      return FALSE;
    if (v <= 0)
      continue;
    for (int k = 0; k < WL_OP_KIND_COUNT; k++) {
      gsize which = k == WL_OP_CONV ? 0 : k == WL_OP_GEMM ? 1 : 2;
      if (which == i)
        dev->single_thread_gflops[k] = v;
    }
  }
  unsigned nt = 0, nc = 0;
  double thr[DEV_MAX_CONTENTION], cps[DEV_MAX_CONTENTION];
  if (!read_list(ini, "measured", "contention_threads", 1, 1e5, thr, DEV_MAX_CONTENTION, &nt,
                 error) ||
      !read_list(ini, "measured", "contention_ps_per_byte", 0, 1e6, cps, DEV_MAX_CONTENTION, &nc,
                 error))
    return FALSE;
  if (nt != nc)
    return dt_ini_error(ini, "measured", "contention_ps_per_byte", error,
                        "has %u values but contention_threads has %u", nc, nt);
  for (unsigned i = 1; i < nt; i++)
    if (thr[i] <= thr[i - 1])
      return dt_ini_error(ini, "measured", "contention_threads", error,
                          "thread counts must increase");
  if (nt) {
    dev->n_contention = nt;
    memcpy(dev->contention_threads, thr, nt * sizeof thr[0]);
    memcpy(dev->contention_ps_per_byte, cps, nt * sizeof cps[0]);
  }
  return TRUE;
}

static gboolean apply_ini(dev_device *dev, const dt_ini *ini, GError **error)
{
  return check_groups(ini, error) && read_params(dev, ini, error) &&
         read_strings(dev, ini, error);
}

gboolean dev__require(const dev_device *dev, const dt_ini *base, const char *group,
                      const char *key, double value, GError **error)
{
  if (value > 0)
    return TRUE;
  if (base)
    return dt_ini_error(base, group, key, error, "missing required key for model %s",
                        dev->model->name);
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: [%s] %s: missing for model %s", dev->path,
              group, key, dev->model->name);
  return FALSE;
}

gboolean dev__prepare(dev_device *dev, GError **error)
{
  return dev->model->prepare(dev, NULL, NULL, error);
}

static void finish_link_text(dev_device *dev)
{
  g_free(dev->link_text);
  switch (dev->link.kind) {
  case DEV_LINK_PCIE:
    dev->link_text = g_strdup_printf("PCIe %u.0 x%u", dev->link.pcie_gen, dev->link.lanes);
    break;
  case DEV_LINK_NVLINK:
    dev->link_text = g_strdup_printf("NVLink x%u", dev->link.lanes);
    break;
  default:
    dev->link_text = g_strdup("none");
  }
}

/* Usable PCIe bandwidth per lane, bytes/s, one direction: raw rate after line coding times
 * about 0.85 for packet overhead (TLP headers at 256-byte payloads), as measured by
 * bandwidthTest-style copies of pinned memory. */
static double pcie_lane_Bps(unsigned gen)
{
  switch (gen) {
  case 1: return 250e6 * 0.85;          /* 2.5 GT/s, 8b/10b */
  case 2: return 500e6 * 0.85;          /* 5 GT/s, 8b/10b */
  case 3: return 984.6e6 * 0.85;        /* 8 GT/s, 128b/130b */
  case 4: return 1969.2e6 * 0.85;       /* 16 GT/s */
  case 5: return 3938.5e6 * 0.85;       /* 32 GT/s */
  default: return 0;
  }
}

static char *stem_of(const char *name_or_path);

/* An overlay must change something, and one fitted on a single device applies to that device
 * only (fits over several devices, "a;b", are shared by design). */
static gboolean check_overlay(const dt_ini *base, const dt_ini *overlay, GError **error)
{
  GKeyFile *kf = dt_ini_keyfile(overlay);
  g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
  gsize fitted = 0;
  for (char **g = groups; *g; g++)
    if (strcmp(*g, "calibration") != 0) {
      g_auto(GStrv) keys = g_key_file_get_keys(kf, *g, NULL, NULL);
      fitted += keys ? g_strv_length(keys) : 0;
    }
  if (fitted == 0) {
    g_autofree char *shown = dt_escape(dt_ini_path(overlay));
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: an empty calibration overlay (no fitted parameter)", shown);
    return FALSE;
  }
  g_autofree char *fitted_on = g_key_file_get_value(kf, "calibration", "device", NULL);
  if (!fitted_on)
    return TRUE;
  g_strstrip(fitted_on);
  g_autofree char *device = stem_of(dt_ini_path(base));
  if (!strchr(fitted_on, ';') && strcmp(fitted_on, device) != 0)
    return dt_ini_error(overlay, "calibration", "device", error,
                        "fitted on %s, not on %s (refit on %s or give --device %s)", fitted_on,
                        device, device, fitted_on);
  return TRUE;
}

static dev_device *load(const char *name, const dt_ini *base, const char *overlay_path,
                        GError **error)
{
  g_autoptr(dev_device) dev = g_new0(dev_device, 1);
  dev->name = g_strdup(name);
  dev->path = g_strdup(dt_ini_path(base));
  set_defaults(dev);
  if (!g_key_file_has_group(dt_ini_keyfile(base), "device")) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: missing group [device]", dt_ini_path(base));
    return NULL;
  }
  if (!dt_ini_has(base, "device", "model")) {
    dt_ini_error(base, "device", "model", error,
                 "missing required key (gpu, xeon-phi-spec, xeon-phi-measured or cpu)");
    return NULL;
  }
  if (!apply_ini(dev, base, error))
    return NULL;
  g_autoptr(dt_ini) overlay = NULL;
  if (overlay_path) {
    overlay = dt_ini_load(overlay_path, error);
    if (overlay == NULL || !apply_ini(dev, overlay, error))
      return NULL;
    dev->overlay_path = g_strdup(overlay_path);
  }
  if (dev->title == NULL)
    dev->title = g_strdup(name);
  if (!dev->model->prepare(dev, base, overlay, error))
    return NULL;
  /* After its keys are known good: an unknown key is named before the overlay is called empty. */
  if (overlay && !check_overlay(base, overlay, error))
    return NULL;
  /* The host link: datasheet generation and lanes give the bandwidth unless it is stated. */
  dev->link.pcie_gen = (unsigned)dev->prm.pcie_gen;
  dev->link.lanes = (unsigned)dev->prm.link_lanes;
  if (dev->link.kind == DEV_LINK_PCIE && dev->prm.link_bandwidth_GBps <= 0) {
    double lane = pcie_lane_Bps(dev->link.pcie_gen);
    if (lane <= 0 || dev->link.lanes == 0) {
      dt_ini_error(base, "host_link", "pcie_gen", error,
                   "a PCIe link needs pcie_gen (1..5) and lanes, or bandwidth_GBps");
      return NULL;
    }
    dev->prm.link_bandwidth_GBps = lane * dev->link.lanes / 1e9;
  }
  if (dev->link.kind != DEV_LINK_NONE && dev->prm.link_bandwidth_GBps <= 0) {
    dt_ini_error(base, "host_link", "bandwidth_GBps", error, "missing (needed for kind %s)",
                 dev->link.kind == DEV_LINK_NVLINK ? "nvlink" : "pcie");
    return NULL;
  }
  dev->link.bandwidth_Bps = dev->prm.link_bandwidth_GBps * 1e9;
  dev->link.latency_ps = (int64_t)llround(dev->prm.link_latency_us * 1e6);
  dev->link.peer_bandwidth_Bps = dev->prm.nvlink_peer_GBps * 1e9;
  finish_link_text(dev);
  return g_steal_pointer(&dev);
}

/* The name a device is known by: the catalog name, or a file's stem. */
static char *stem_of(const char *name_or_path)
{
  g_autofree char *base = g_path_get_basename(name_or_path);
  if (g_str_has_suffix(base, ".ini"))
    base[strlen(base) - 4] = '\0';
  return g_steal_pointer(&base);
}

dev_device *dev_device_load(const char *name_or_path, const char *calibration_path,
                            GError **error)
{
  g_return_val_if_fail(name_or_path != NULL, NULL);
  g_autofree char *path = dt_catalog_path("devices/catalog", name_or_path, "device", error);
  if (path == NULL)
    return NULL;
  g_autoptr(dt_ini) ini = dt_ini_load(path, error);
  if (ini == NULL)
    return NULL;
  g_autofree char *stem = stem_of(name_or_path);
  /* A calibration overlay of one device given as the device itself (--device FIT.ini): the
   * catalog device it was fitted on, with the overlay on top. */
  if (!dt_ini_has(ini, "device", "model") && dt_ini_has(ini, "calibration", "device")) {
    g_autofree char *base = dt_ini_string(ini, "calibration", "device", TRUE, error);
    if (base == NULL)
      return NULL;
    if (strchr(base, ';') || strchr(base, '/') || g_str_has_suffix(base, ".ini")) {
      dt_ini_error(ini, "calibration", "device", error,
                   "fitted over several devices or a file: load it with --calibration on top "
                   "of a device");
      return NULL;
    }
    if (calibration_path) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: is a calibration overlay; give a device with --device and this file "
                  "with --calibration", path);
      return NULL;
    }
    g_autofree char *base_path = dt_catalog_path("devices/catalog", base, "device", error);
    if (base_path == NULL) {
      g_prefix_error(error, "%s: [calibration] device: ", path);
      return NULL;
    }
    g_autoptr(dt_ini) base_ini = dt_ini_load(base_path, error);
    if (base_ini == NULL)
      return NULL;
    return load(stem, base_ini, path, error);
  }
  return load(stem, ini, calibration_path, error);
}

dev_device *dev_device_load_data(const char *name, const char *data, gsize len,
                                 const char *calibration_path, GError **error)
{
  g_autoptr(dt_ini) ini = dt_ini_load_data(name, data, len, error);
  if (ini == NULL)
    return NULL;
  return load(name, ini, calibration_path, error);
}

void dev_device_free(dev_device *dev)
{
  if (dev == NULL)
    return;
  g_free(dev->name);
  g_free(dev->title);
  g_free(dev->path);
  g_free(dev->overlay_path);
  g_free(dev->link_text);
  g_free(dev->topology);
  g_free(dev);
}

dev_device *dev__device_copy(const dev_device *dev)
{
  dev_device *c = g_new(dev_device, 1);
  *c = *dev;
  c->name = g_strdup(dev->name);
  c->title = g_strdup(dev->title);
  c->path = g_strdup(dev->path);
  c->overlay_path = g_strdup(dev->overlay_path);
  c->link_text = g_strdup(dev->link_text);
  c->topology = g_strdup(dev->topology);
  return c;
}

/* ---- Timing -------------------------------------------------------------------------------- */

/* Seconds to whole picoseconds, rounded up, at least 1 ps, saturating. */
static int64_t to_ps(double s)
{
  if (!(s > 0))
    return 1;
  double ps = ceil(s * 1e12);
  if (ps >= 9.2e18)
    return INT64_MAX;
  return ps < 1 ? 1 : (int64_t)ps;
}

static unsigned clamp_threads(const dev_device *dev, unsigned threads)
{
  if (threads == 0 || threads > dev->hw_threads)
    return dev->hw_threads;
  return threads;
}

int64_t dev_op_time_ps(const dev_device *dev, const wl_op_cost *op, unsigned threads)
{
  g_return_val_if_fail(dev != NULL && op != NULL, 1);
  return to_ps(dev->model->op_seconds(dev, op, clamp_threads(dev, threads)));
}

double dev_op_flops(const dev_device *dev, const wl_op_cost *op)
{
  g_return_val_if_fail(dev != NULL && op != NULL, 0);
  return dev->model->op_flops ? dev->model->op_flops(dev, op) : (double)op->flops;
}

double dev_thread_speedup(const dev_device *dev, const wl_op_cost *op, unsigned threads)
{
  g_return_val_if_fail(dev != NULL && op != NULL, 1);
  double t1 = dev->model->op_seconds(dev, op, 1);
  double tp = dev->model->op_seconds(dev, op, clamp_threads(dev, threads));
  return t1 / tp;
}

static double copy_s(const dev_device *dev, uint64_t bytes)
{
  if (bytes == 0)
    return 0;
  if (dev->link.kind != DEV_LINK_NONE)
    return (double)bytes / dev->link.bandwidth_Bps + dev->prm.link_latency_us * 1e-6;
  return (double)bytes / dev->stream_Bps;  /* a copy within host memory */
}

int64_t dev_host_overhead_ps(const dev_device *dev, uint64_t input_bytes_per_batch)
{
  g_return_val_if_fail(dev != NULL, 0);
  return to_ps(dev->prm.framework_step_us * 1e-6 + copy_s(dev, input_bytes_per_batch));
}

int64_t dev_step_overhead_ps(const dev_device *dev)
{
  g_return_val_if_fail(dev != NULL, 0);
  return dev->prm.framework_step_us > 0 ? to_ps(dev->prm.framework_step_us * 1e-6) : 0;
}

int64_t dev_input_copy_ps(const dev_device *dev, uint64_t bytes)
{
  g_return_val_if_fail(dev != NULL, 0);
  return bytes ? to_ps(copy_s(dev, bytes)) : 0;
}

/* ---- Accessors ----------------------------------------------------------------------------- */

const char *dev_device_name(const dev_device *dev) { return dev->name; }
const char *dev_device_title(const dev_device *dev) { return dev->title; }
const dev_model *dev_device_model(const dev_device *dev) { return dev->model; }
gboolean dev_device_is_gpu(const dev_device *dev) { return dev->model == &dev__model_gpu; }
unsigned dev_board_dies(const dev_device *dev) { return (unsigned)dev->prm.dies_per_board; }

void dev_device_set_busy_dies(dev_device *dev, unsigned busy)
{
  g_return_if_fail(dev != NULL);
  const dev_params *p = &dev->prm;
  if (!dev_device_is_gpu(dev) || p->board_busy_clock_mhz <= 0)
    return;
  dev__gpu_set_clock(dev, busy >= dev_board_dies(dev) ? p->board_busy_clock_mhz / p->clock_mhz
                                                      : dev__gpu_alone_clock(p));
}
uint64_t dev_memory_bytes(const dev_device *dev) { return dev->memory_bytes; }
double dev_memory_Bps(const dev_device *dev) { return dev->prm.memory_bandwidth_GBps * 1e9; }
double dev_stream_Bps(const dev_device *dev) { return dev->stream_Bps; }
const dev_host_link *dev_device_host_link(const dev_device *dev) { return &dev->link; }
const char *dev_host_link_text(const dev_device *dev) { return dev->link_text; }
unsigned dev_compute_units(const dev_device *dev) { return dev->units; }
unsigned dev_hw_threads(const dev_device *dev) { return dev->hw_threads; }

gboolean dev_check_precision(const dev_device *dev, wl_precision precision, const char *where,
                             GError **error)
{
  g_return_val_if_fail(precision < WL_PREC_COUNT, FALSE);
  gboolean gpu = dev->model == &dev__model_gpu;
  gboolean has = TRUE;
  const char *why = NULL;
  if (precision == WL_PREC_TF32) {
    has = gpu && dev->prm.peak_tflops_tf32_tensor > 0;
    why = "tf32 is a tensor-core format (Ampere and later)";
  } else if (precision == WL_PREC_BF16) {
    has = gpu && dev->prm.peak_tflops_bf16_tensor > 0;
    why = "bf16 needs bf16 arithmetic (Ampere and later GPUs)";
  } else if (precision == WL_PREC_FP8) {
    has = dev->prm.peak_tflops_fp8_tensor > 0;
    why = "fp8 needs fp8 tensor cores (Hopper and later)";
  }
  if (!has) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s has no %s: %s", where,
                dev_device_name(dev), wl_precision_name(precision), why);
    return FALSE;
  }
  return TRUE;
}

double dev_peak_flops(const dev_device *dev, wl_precision precision)
{
  g_return_val_if_fail(precision < WL_PREC_COUNT, 0);
  return dev->peak_flops[precision];
}

/* ---- Convolution ops from a shape ----------------------------------------------------------- */

void dev__conv_ops(unsigned n, unsigned h, unsigned w, unsigned c, unsigned k, unsigned r,
                   unsigned s, unsigned pad, unsigned stride, wl_precision prec,
                   wl_op_cost out[3])
{
  uint64_t p = (h + 2 * pad - r) / stride + 1, q = (w + 2 * pad - s) / stride + 1;
  uint64_t eb = wl_precision_bytes(prec);
  uint64_t in = (uint64_t)n * h * w * c, outv = (uint64_t)n * p * q * k;
  uint64_t wt = (uint64_t)k * c * r * s;
  uint64_t macs = (uint64_t)n * k * c * r * s * p * q;
  for (int i = 0; i < 3; i++) {
    memset(&out[i], 0, sizeof out[i]);
    out[i].kind = WL_OP_CONV;
    out[i].precision = prec;
    out[i].flops = 2 * macs;
    out[i].kernel_h = r;
    out[i].kernel_w = s;
    out[i].stride = stride;
    out[i].gemm_batch = 1;
  }
  /* Forward: y = conv(x, w); GEMM m = N*P*Q, n = K, k = C*R*S. */
  out[0].pass = WL_PASS_FORWARD;
  out[0].bytes_read = (in + wt) * eb;
  out[0].bytes_written = outv * eb;
  out[0].gemm_m = (uint64_t)n * p * q;
  out[0].gemm_n = k;
  out[0].gemm_k = (uint64_t)c * r * s;
  out[0].out_elems = outv;
  /* Backward data: dx = convT(dy, w); m = N*H*W, n = C, k = K*R*S. */
  out[1].pass = WL_PASS_BACKWARD_DATA;
  out[1].bytes_read = (outv + wt) * eb;
  out[1].bytes_written = in * eb;
  out[1].gemm_m = (uint64_t)n * h * w;
  out[1].gemm_n = c;
  out[1].gemm_k = (uint64_t)k * r * s;
  out[1].out_elems = in;
  /* Backward weights: dw = x (*) dy; m = K, n = C*R*S, k = N*P*Q. */
  out[2].pass = WL_PASS_BACKWARD_WEIGHTS;
  out[2].bytes_read = (in + outv) * eb;
  out[2].bytes_written = wt * eb;
  out[2].gemm_m = k;
  out[2].gemm_n = (uint64_t)c * r * s;
  out[2].gemm_k = (uint64_t)n * p * q;
  out[2].out_elems = wt;
}
