/* Xeon Phi and CPU models: the two performance models of Viebke, Pllana et al. for CNN
 * training on Intel many-integrated-core processors (HPCS 2019; CHAOS, J. Supercomputing 2017),
 * in their thread-parallel setting where p hardware threads share the work of an op and
 * results are combined without locks.
 *
 *   xeon-phi-spec      time from the specification: cores, threads per core, clock, vector
 *                      width and FMA units give the FLOP/s of a core; how much of that one core
 *                      reaches with 1..4 threads (the issue fraction: a Knights Corner core
 *                      cannot issue from the same thread in back-to-back cycles, so one thread
 *                      reaches at most half of it) scales the compute time; memory time is
 *                      bytes over the bandwidth the busy cores can draw, saturating at the
 *                      device's streaming bandwidth; a fork-join barrier costs sync_us per
 *                      doubling of the thread count.
 *                        T(p) = max(T_comp(p), T_mem(p)) + T_sync(p)
 *   xeon-phi-measured  time from measured parameters: the single-thread rate of each op kind
 *                      (FLOP/s one thread reaches on this device), scaled by the issue capacity
 *                      of p threads, plus a memory-contention term measured as a function of
 *                      the thread count (ps per byte a thread sees with p threads running):
 *                        T(p) = T_1 * issue(1) / capacity(p) + bytes * c(p) / p + T_sync(p)
 *   cpu                the spec model on a topology read with hwloc (sockets, cores, threads):
 *                      `host` reads this machine, catalog CPUs give an hwloc synthetic
 *                      description such as "pack:2 core:10 pu:2".
 *
 * Work is shared dynamically over threads (CHAOS threads take the next image when done), so
 * compute throughput is the sum of what each core reaches with the threads placed on it. */
#include "dev_internal.h"

#include <hwloc.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

double dev_issue_capacity(const dev_device *dev, unsigned threads)
{
  g_return_val_if_fail(dev != NULL, 0);
  return dev__issue_capacity(dev, threads);
}

double dev__issue_capacity(const dev_device *dev, unsigned threads)
{
  unsigned cores = dev->units;
  unsigned tpc = dev->hw_threads / (cores ? cores : 1);
  if (threads > cores * tpc)
    threads = cores * tpc;
  if (threads <= cores)
    return threads * dev->issue[1];
  /* Threads spread evenly ("scatter"/"balanced" affinity): rem cores hold base+1 threads. */
  unsigned base = threads / cores, rem = threads % cores;
  double capacity = (cores - rem) * dev->issue[base];
  /* With every core full (base = threads per core, possibly DEV_MAX_TPC) there is no base+1. */
  if (rem > 0)
    capacity += rem * dev->issue[base + 1];
  return capacity;
}

double dev__contention_ps_per_byte(const dev_device *dev, unsigned threads)
{
  unsigned n = dev->n_contention;
  if (n == 0)
    return 0;
  double x = threads;
  if (x <= dev->contention_threads[0])
    return dev->contention_ps_per_byte[0];
  for (unsigned i = 1; i < n; i++) {
    if (x <= dev->contention_threads[i]) {
      double x0 = dev->contention_threads[i - 1], x1 = dev->contention_threads[i];
      double y0 = dev->contention_ps_per_byte[i - 1], y1 = dev->contention_ps_per_byte[i];
      return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
    }
  }
  return dev->contention_ps_per_byte[n - 1];
}

/* FLOP/s of one core at full issue: vector lanes x 2 (FMA) x FMA units x clock. */
static double core_flops(const dev_device *dev)
{
  return dev->prm.clock_mhz * 1e6 * (dev->prm.vector_bits / 32.0) * 2.0 * dev->prm.fma_units;
}

static double kind_efficiency(const dev_device *dev, wl_op_kind kind)
{
  switch (kind) {
  case WL_OP_CONV: return dev->prm.eff_conv;
  case WL_OP_GEMM: return dev->prm.eff_gemm;
  default: return dev->prm.eff_other;
  }
}

/* Fork-join cost of one op: a tree barrier over p threads. */
static double sync_s(const dev_device *dev, unsigned threads)
{
  return threads > 1 ? dev->prm.sync_us * 1e-6 * log2((double)threads) : 0;
}

static double spec_op_seconds(const dev_device *dev, const wl_op_cost *op, unsigned threads)
{
  double cap = dev__issue_capacity(dev, threads);
  double flops_per_s = core_flops(dev) * cap * kind_efficiency(dev, op->kind);
  unsigned busy = threads < dev->units ? threads : dev->units;
  double bw = busy * dev->prm.per_core_bandwidth_GBps * 1e9;
  if (bw > dev->stream_Bps)
    bw = dev->stream_Bps;
  double bytes = (double)op->bytes_read + (double)op->bytes_written;
  return dev__roofline_s((double)op->flops, flops_per_s, bytes, bw) + sync_s(dev, threads) +
         dev->launch_s;
}

static double measured_op_seconds(const dev_device *dev, const wl_op_cost *op, unsigned threads)
{
  double t1 = (double)op->flops / (dev->single_thread_gflops[op->kind] * 1e9);
  double tc = t1 * dev->issue[1] / dev__issue_capacity(dev, threads);
  double bytes = (double)op->bytes_read + (double)op->bytes_written;
  double tm = bytes * dev__contention_ps_per_byte(dev, threads) * 1e-12 / threads;
  return tc + tm + sync_s(dev, threads) + dev->launch_s;
}

/* ---- Thread-parallel training (CHAOS) --------------------------------------------------------- */

static gboolean is_manycore(const dev_device *dev)
{
  return dev->model == &dev__model_phi_spec || dev->model == &dev__model_phi_measured ||
         dev->model == &dev__model_cpu;
}

static unsigned clamp_to_hw(const dev_device *dev, unsigned threads)
{
  if (threads == 0 || threads > dev->hw_threads)
    return dev->hw_threads;
  return threads;
}

double dev_thread_op_s(const dev_device *dev, const wl_op_cost *op, unsigned threads)
{
  g_return_val_if_fail(dev != NULL && op != NULL, 0);
  if (!is_manycore(dev) || op->flops == 0)
    return 0;
  threads = clamp_to_hw(dev, threads);
  /* One thread alone reaches issue[1] of its core; the `threads` threads together reach the
   * issue capacity, so each gets capacity / threads. */
  double one_thread_flops_per_s =
      dev->model == &dev__model_phi_measured
          ? dev->single_thread_gflops[op->kind] * 1e9 * dev->prm.chaos_efficiency
          : core_flops(dev) * dev->issue[1] * kind_efficiency(dev, op->kind) *
                dev->prm.chaos_efficiency;
  double slowdown = threads * dev->issue[1] / dev__issue_capacity(dev, threads);
  return (double)op->flops / one_thread_flops_per_s * slowdown;
}

/* Bytes of one cache line: 64 on every Xeon Phi and Xeon. */
#define DEV_LINE_BYTES 64.0

double dev_shared_weights_s(const dev_device *dev, uint64_t bytes, unsigned threads)
{
  g_return_val_if_fail(dev != NULL, 0);
  if (!is_manycore(dev) || bytes == 0)
    return 0;
  threads = clamp_to_hw(dev, threads);
  unsigned busy = threads < dev->units ? threads : dev->units;
  if (busy <= 1)
    return 0;
  /* The last writer of a line is one of the busy cores, each about equally likely. */
  double foreign = 1.0 - 1.0 / busy;
  /* A forward read and an update's ownership request per line and sample. */
  double transfers_bytes = 2.0 * (double)bytes * foreign;
  if (dev->model == &dev__model_phi_measured) {
    /* The measured transfer cost per byte, or the streaming contention with this many threads
     * running when that is higher. */
    double ps = dev->prm.shared_ps_per_byte;
    double stream_ps = dev__contention_ps_per_byte(dev, threads);
    return transfers_bytes * (ps > stream_ps ? ps : stream_ps) * 1e-12;
  }
  double latency_s = dev->prm.coherence_latency_ns * 1e-9;
  double share_s = threads * DEV_LINE_BYTES / dev->stream_Bps;
  return transfers_bytes / DEV_LINE_BYTES * (latency_s > share_s ? latency_s : share_s);
}

/* What the spec, measured and CPU models share once cores and threads are known. */
static gboolean finish_manycore(dev_device *dev, const dt_ini *base, GError **error)
{
  const dev_params *p = &dev->prm;
  if (!dev__require(dev, base, "device", "clock_mhz", p->clock_mhz, error) ||
      !dev__require(dev, base, "device", "memory_bandwidth_GBps", p->memory_bandwidth_GBps,
                    error) ||
      !dev__require(dev, base, "device", "memory_bytes", (double)dev->memory_bytes, error))
    return FALSE;
  dev->units = (unsigned)p->cores;
  dev->hw_threads = (unsigned)p->cores * (unsigned)p->threads_per_core;
  dev->stream_Bps = p->memory_bandwidth_GBps * 1e9 * p->eff_memory;
  dev->launch_s = p->kernel_launch_us * 1e-6;
  /* No fp16 arithmetic on these cores: lower precisions run at the fp32 rate. */
  double peak = core_flops(dev) * p->cores;
  for (int i = 0; i < WL_PREC_COUNT; i++) {
    dev->peak_flops[i] = peak;
    dev->vector_flops[i] = peak;
  }
  dev->prm.peak_tflops_fp32 = peak / 1e12;
  return TRUE;
}

static gboolean phi_spec_prepare(dev_device *dev, const dt_ini *base, const dt_ini *overlay,
                                 GError **error)
{
  if (!dev__require(dev, base, "device", "cores", dev->prm.cores, error))
    return FALSE;
  return finish_manycore(dev, base, error);
}

static gboolean phi_measured_prepare(dev_device *dev, const dt_ini *base, const dt_ini *overlay,
                                     GError **error)
{
  if (!phi_spec_prepare(dev, base, overlay, error))
    return FALSE;
  for (int k = 0; k < WL_OP_KIND_COUNT; k++)
    if (dev->single_thread_gflops[k] <= 0)
      return dev__require(dev, base, "measured",
                          k == WL_OP_CONV   ? "single_thread_gflops_conv"
                          : k == WL_OP_GEMM ? "single_thread_gflops_gemm"
                                            : "single_thread_gflops_other",
                          0, error);
  if (dev->n_contention == 0)
    return dev__require(dev, base, "measured", "contention_threads", 0, error);
  return TRUE;
}

/* The most hardware threads a synthetic topology may describe: above the largest single
 * machines sold (8 sockets of 60 cores, 2 threads each, is 960), and what hwloc builds in about
 * half a second; 262 144 (pack:64 core:64 pu:64) took over a minute and a gigabyte. */
#define MAX_SYNTHETIC_PUS 4096

/* Hardware threads of an hwloc synthetic description: the product of the arities of its levels
 * ("pack:2 core:8 pu:2" is 32), saturated; attached memory ("[numa]") counts nothing. Tokens
 * it cannot read are left to hwloc to refuse. */
static uint64_t synthetic_pus(const char *desc)
{
  uint64_t pus = 1;
  g_auto(GStrv) tokens = g_strsplit_set(desc, " \t", -1);
  for (char **t = tokens; *t; t++) {
    if (**t == '\0' || **t == '[')
      continue;
    const char *colon = strchr(*t, ':'), *paren = strchr(*t, '(');
    const char *num = colon && (!paren || colon < paren) ? colon + 1 : *t;
    if (!g_ascii_isdigit(*num))
      continue;
    uint64_t arity = g_ascii_strtoull(num, NULL, 10);
    pus = arity && pus > UINT64_MAX / arity ? UINT64_MAX : pus * arity;
  }
  return pus;
}

/* Reads sockets, cores and hardware threads (and, for this machine, the memory size) from an
 * hwloc topology: "host" is this machine, a name ending in .xml an exported hwloc XML topology
 * (lstopo file.xml), anything else an hwloc synthetic description. */
static gboolean read_topology(dev_device *dev, const dt_ini *base, GError **error)
{
  if (dev->topology == NULL)
    return dev__require(dev, base, "device", "topology", 0, error);
  gboolean host = strcmp(dev->topology, "host") == 0;
  gboolean xml = g_str_has_suffix(dev->topology, ".xml");
  if (!host && !xml && synthetic_pus(dev->topology) > MAX_SYNTHETIC_PUS) {
    if (base)
      return dt_ini_error(base, "device", "topology", error, "'%s' has more than %d hardware "
                          "threads", dev->topology, MAX_SYNTHETIC_PUS);
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: topology '%s' has more than %d hardware "
                "threads", dev->path, dev->topology, MAX_SYNTHETIC_PUS);
    return FALSE;
  }
  /* An XML topology is an input file like any other: read under the size limit. */
  g_autofree char *xml_text = NULL;
  gsize xml_len = 0;
  g_autoptr(GError) read_error = NULL;
  if (xml && !dt_read_file(dev->topology, NULL, DT_INPUT_MAX_BYTES, &xml_text, &xml_len,
                           &read_error)) {
    /* The message names the XML file; the device file and key that name it come first. */
    if (base)
      return dt_ini_error(base, "device", "topology", error, "%s", read_error->message);
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: topology: %s", dev->path,
                read_error->message);
    return FALSE;
  }
  hwloc_topology_t topo;
  /* Without /sys (containers, chroots) hwloc falls back to what the kernel tells every
   * process; its warning about that is noise to a user, so keep it quiet. */
  g_setenv("HWLOC_HIDE_ERRORS", "1", FALSE);
  if (hwloc_topology_init(&topo) != 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "hwloc: cannot initialize a topology");
    return FALSE;
  }
  int rc = host  ? 0
           : xml ? hwloc_topology_set_xmlbuffer(topo, xml_text, (int)MIN(xml_len + 1, G_MAXINT))
                 : hwloc_topology_set_synthetic(topo, dev->topology);
  if (rc != 0) {
    hwloc_topology_destroy(topo);
    if (base)
      return dt_ini_error(base, "device", "topology", error,
                          xml ? "cannot read the hwloc XML topology '%s'"
                              : "'%s' is not an hwloc synthetic topology (e.g. \"pack:2 core:8 "
                                "pu:2\") nor an XML file",
                          dev->topology);
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: bad topology '%s'", dev->path,
                dev->topology);
    return FALSE;
  }
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "hwloc: cannot load topology '%s'",
                dev->topology);
    return FALSE;
  }
  int packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  int pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  if (cores <= 0)
    cores = pus;
  hwloc_obj_t root = hwloc_get_root_obj(topo);
  uint64_t total_memory = root ? root->total_memory : 0;
  hwloc_topology_destroy(topo);
  if (host) {
    /* This machine's memory is the kernel's total (MemTotal), the same on every call: hwloc's
     * sums the NUMA nodes the process may use, which follows its binding and cgroup and can
     * differ from call to call (and finds nothing without /sys). hwloc also misses cores
     * without /sys; the C library asks the kernel directly. */
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (pages > 0 && page > 0)
      total_memory = (uint64_t)pages * (uint64_t)page;
    if (pus <= 0 && online > 0)
      pus = cores = (int)online;
  }
  if (cores <= 0 || pus <= 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: topology '%s' has no cores", dev->path,
                dev->topology);
    return FALSE;
  }
  dev->packages = packages > 0 ? (unsigned)packages : 1;
  dev->prm.cores = cores;
  unsigned tpc = (unsigned)((pus + cores - 1) / cores);
  dev->prm.threads_per_core = tpc > DEV_MAX_TPC ? DEV_MAX_TPC : tpc;
  if ((host || xml) && dev->memory_bytes == 0)
    dev->memory_bytes = total_memory;
  return TRUE;
}

static gboolean cpu_prepare(dev_device *dev, const dt_ini *base, const dt_ini *overlay,
                            GError **error)
{
  /* The topology is read once at load; re-preparing a copy (calibration) keeps it. */
  if (base && !read_topology(dev, base, error))
    return FALSE;
  return finish_manycore(dev, base, error);
}

const dev_model dev__model_phi_spec = {
    .name = "xeon-phi-spec",
    .description = "Viebke/Pllana model from specifications: cores, threads/core issue, clock, "
                   "vector width; thread scaling",
    .prepare = phi_spec_prepare,
    .op_seconds = spec_op_seconds,
};

const dev_model dev__model_phi_measured = {
    .name = "xeon-phi-measured",
    .description = "Viebke/Pllana model from measured single-thread rates and memory "
                   "contention vs. thread count",
    .prepare = phi_measured_prepare,
    .op_seconds = measured_op_seconds,
};

const dev_model dev__model_cpu = {
    .name = "cpu",
    .description = "multi-core CPU through the many-core spec model, topology from hwloc "
                   "(sockets, cores, threads)",
    .prepare = cpu_prepare,
    .op_seconds = spec_op_seconds,
};
