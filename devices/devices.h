/* devices/: how long one op (layer, pass, precision, batch) takes on one device.
 *
 * A device is loaded from a catalog entry (devices/catalog/NAME.ini) or from any INI file with
 * the same keys, optionally with a calibration overlay on top (written by `dtsim calibrate`).
 * The loaded device is immutable: it holds the datasheet numbers, the model parameters and
 * rates derived from them, so timing an op is a few arithmetic operations and may be called
 * from many places at once.
 *
 * Device models (GPU roofline, the two Xeon Phi models, CPUs) are entries of a registry; the
 * catalog entry names its model with `model = KIND` in [device].
 *
 * Times are int64_t picoseconds (the engine's sim_time_ps). */
#ifndef DTSIM_DEVICES_H
#define DTSIM_DEVICES_H

#include "wl_op.h"

#include <glib.h>
#include <stdint.h>

typedef struct dev_device dev_device;

/* ---- Model registry ------------------------------------------------------------------------ */

typedef struct dev_model dev_model;

/* The registered device models, in a fixed order; *n_out receives the count. */
const dev_model *const *dev_models(gsize *n_out);
const dev_model *dev_model_find(const char *name);
const char *dev_model_name(const dev_model *model);
/* One line saying what the model computes. */
const char *dev_model_description(const dev_model *model);

/* ---- Loading ------------------------------------------------------------------------------- */

/* Loads a device by catalog name ("v100-sxm2-16gb", "host") or INI path, then applies the
 * calibration overlay INI `calibration_path` when it is not NULL. Errors (unknown name, bad
 * file, bad value) are DT_ERROR_INPUT and name the file, line, group and key. */
dev_device *dev_device_load(const char *name_or_path, const char *calibration_path,
                            GError **error);
/* The same from INI text in memory (tests, generated devices); `name` is used in messages. */
dev_device *dev_device_load_data(const char *name, const char *data, gsize len,
                                 const char *calibration_path, GError **error);
void dev_device_free(dev_device *dev);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(dev_device, dev_device_free)

/* ---- Timing -------------------------------------------------------------------------------- */

/* Time of one op on this device in picoseconds, >= 1. `threads` is the number of hardware
 * threads used on a Xeon Phi or CPU (0 means all of them; values above the device's count are
 * clamped); GPUs ignore it. */
int64_t dev_op_time_ps(const dev_device *dev, const wl_op_cost *op, unsigned threads);
/* The FLOPs the device runs for the op: op->flops, or fewer where the device's algorithm does
 * less arithmetic (Winograd convolutions on GPUs). What utilization is measured by. */
double dev_op_flops(const dev_device *dev, const wl_op_cost *op);

/* Host work of one training iteration that the device waits for, in picoseconds: copying the
 * input batch (`input_bytes_per_batch`) over the host link and the framework's per-step
 * overhead. 0 input bytes means data already resident (synthetic data). */
int64_t dev_host_overhead_ps(const dev_device *dev, uint64_t input_bytes_per_batch);
/* Its two parts, for callers that run the copy on its own stream: the framework's per-step
 * overhead, and the copy of `bytes` over the host link (latency included; 0 for 0 bytes). */
int64_t dev_step_overhead_ps(const dev_device *dev);
int64_t dev_input_copy_ps(const dev_device *dev, uint64_t bytes);

/* ---- Descriptors --------------------------------------------------------------------------- */

typedef enum {
  DEV_LINK_PCIE,    /* PCI Express to the host CPU */
  DEV_LINK_NVLINK,  /* NVLink to the host CPU (POWER9 hosts) or only to peers */
  DEV_LINK_NONE,    /* the device is the host (CPU, self-booted Knights Landing) */
} dev_link_kind;

typedef struct {
  dev_link_kind kind;
  unsigned pcie_gen;       /* 1..5 for PCIe, 0 otherwise */
  unsigned lanes;          /* PCIe lanes, or NVLink links */
  double bandwidth_Bps;    /* usable one-direction host<->device bandwidth, bytes/s */
  int64_t latency_ps;      /* one-way latency of a transfer, ps */
  double peer_bandwidth_Bps; /* NVLink bandwidth to each peer device, bytes/s; 0 without NVLink */
} dev_host_link;

const char *dev_device_name(const dev_device *dev);       /* catalog name or file stem */
const char *dev_device_title(const dev_device *dev);      /* "NVIDIA Tesla V100-SXM2-16GB" */
const dev_model *dev_device_model(const dev_device *dev);
/* TRUE for a GPU (the gpu model), FALSE for CPUs and Xeon Phi. */
gboolean dev_device_is_gpu(const dev_device *dev);
/* Dies on one board, sharing its heat sink and power ([device] dies_per_board: two GK210 dies
 * on a Tesla K80); 1 for a device of one die. */
unsigned dev_board_dies(const dev_device *dev);
/* Says how many dies of each board the run keeps busy (the devices of a node, up to
 * dev_board_dies). With every die of its board busy a GPU runs its arithmetic at [device]
 * board_busy_clock_mhz where the entry gives one; otherwise, and on a die alone, at its
 * sustained clock (docs/devices.md, "Dies sharing a board"). Memory rates do not change. */
void dev_device_set_busy_dies(dev_device *dev, unsigned busy);
uint64_t dev_memory_bytes(const dev_device *dev);
/* Peak memory bandwidth from the datasheet, bytes/s. */
double dev_memory_Bps(const dev_device *dev);
/* Bandwidth a streaming kernel reaches (peak times the memory efficiency), bytes/s: what a
 * reduction in a collective runs at. */
double dev_stream_Bps(const dev_device *dev);
/* FALSE with an error "WHERE: DEVICE has no PRECISION: why" when the device cannot compute at
 * this precision (tf32 and bf16 on GPUs before Ampere, and on CPUs and Xeon Phi; fp8 without fp8 tensor
 * cores, Hopper and later). */
gboolean dev_check_precision(const dev_device *dev, wl_precision precision, const char *where,
                             GError **error);
/* Peak FLOP/s for ops at this precision (tensor cores where the device has them). */
double dev_peak_flops(const dev_device *dev, wl_precision precision);
const dev_host_link *dev_device_host_link(const dev_device *dev);
/* "PCIe 3.0 x16", "NVLink x4", "none". Owned by the device. */
const char *dev_host_link_text(const dev_device *dev);
/* Compute units: SMs of a GPU, cores of a Xeon Phi or CPU. */
unsigned dev_compute_units(const dev_device *dev);
/* Hardware threads (cores x threads per core) of a Phi or CPU; SMs of a GPU. */
unsigned dev_hw_threads(const dev_device *dev);

/* ---- Xeon Phi / CPU thread scaling ----------------------------------------------------------- */

/* Speedup of an op on `threads` hardware threads over one thread (same device and model).
 * With dynamic scheduling of work over threads (as CHAOS does) this is non-decreasing in
 * compute throughput and shows sync and memory-contention saturation. */
double dev_thread_speedup(const dev_device *dev, const wl_op_cost *op, unsigned threads);

/* Thread-parallel training where every thread trains its own sample and writes its updates to
 * shared weights without locks (CHAOS, Hogwild). `threads` are spread evenly over the cores.
 *
 * Issue capacity of `threads` threads, in cores' worth of full issue: the sum over cores of the
 * issue fraction each core reaches with the threads placed on it (Knights Corner: 0.5 with one
 * thread, 1.0 with two or more). */
double dev_issue_capacity(const dev_device *dev, unsigned threads);
/* Seconds one of `threads` concurrent threads takes for `op` on its own sample: the op's
 * arithmetic at one thread's rate (the [efficiency] rates times software.chaos_efficiency, or
 * the measured single-thread rates), slowed by the share of its core's issue the thread gets
 * (threads / issue capacity, relative to one thread alone). A sample's own tensors stay in its
 * core's cache; only the shared weights travel (dev_shared_weights_s). Xeon Phi and CPU
 * models; 0 on a GPU. */
double dev_thread_op_s(const dev_device *dev, const wl_op_cost *op, unsigned threads);
/* Seconds one of `threads` threads spends on `bytes` of shared weights per sample: its forward
 * reads every line and its update takes ownership of every line, and each time another core
 * has most likely written the line since (probability 1 - 1/busy cores). A transfer costs the
 * coherence latency, or the thread's share of the coherent bandwidth (the streaming bandwidth
 * over all threads) when that is longer. The measured model uses [measured] shared_ps_per_byte
 * (a measured transfer, per byte) or its contention table at `threads` (ps per byte with that
 * many threads streaming), whichever is higher. 0 for one thread or one core. */
double dev_shared_weights_s(const dev_device *dev, uint64_t bytes, unsigned threads);

/* ---- Calibration ---------------------------------------------------------------------------- */

/* Fits efficiency parameters ("efficiency.conv", "software.kernel_launch_us", ...) to measured
 * step times by differential evolution on a regularized relative error, reports the fit and
 * leave-one-out errors (MAPE, %) and writes an overlay INI. The parameters fitted are shared by
 * every device of the rows (a device, or a software stack over several devices). */
typedef struct dev_calib dev_calib;
#define DEV_CALIB_MAX_PARAMS 8

dev_calib *dev_calib_new(void);
void dev_calib_free(dev_calib *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(dev_calib, dev_calib_free)
/* Weight of the penalty ln(theta/theta0)^2 that keeps parameters near their catalog values
 * (default 1e-3); and the number of DE generations (default 200). */
void dev_calib_set_lambda(dev_calib *c, double lambda);
void dev_calib_set_generations(dev_calib *c, unsigned generations);
/* An overlay applied to every device when it is loaded (before any row is added). */
gboolean dev_calib_set_overlay(dev_calib *c, const char *path, GError **error);
gboolean dev_calib_add_param(dev_calib *c, const char *group_dot_key, GError **error);
/* One measured row: the ops of one timed step on `device` (catalog name or INI path), the
 * threads used (0: all), whether the per-iteration host overhead is part of the measurement,
 * bytes copied as input and bytes of parameters/gradients moved over the host link per step. */
gboolean dev_calib_add_row(dev_calib *c, const char *label, const char *device,
                           const wl_op_cost *ops, gsize n_ops, unsigned threads,
                           gboolean host_overhead, uint64_t input_bytes, uint64_t link_bytes,
                           double measured_s, GError **error);
/* Reads the single-device rows of a CSV in the format of reference/training.csv (zoo models,
 * whole training steps) or reference/kernels.csv (single convolutions); `only_device` keeps
 * the rows of one device when not NULL. Errors name the file and line. */
gboolean dev_calib_load_csv(dev_calib *c, const char *path, const char *only_device,
                            GError **error);
/* Predicts every row with the catalog parameters (done by dev_calib_fit too). */
gboolean dev_calib_predict_defaults(dev_calib *c);
gboolean dev_calib_fit(dev_calib *c, gboolean leave_one_out, GError **error);
guint dev_calib_n_rows(const dev_calib *c);
unsigned dev_calib_n_params(const dev_calib *c);
double dev_calib_default_mape(const dev_calib *c);
double dev_calib_fit_mape(const dev_calib *c);
double dev_calib_loo_mape(const dev_calib *c);   /* NaN without leave-one-out */
void dev_calib_param(const dev_calib *c, unsigned j, const char **group, const char **key,
                     double *initial, double *fitted);
void dev_calib_row(const dev_calib *c, guint i, const char **label, const char **device,
                   double *measured_s, double *default_s, double *fit_s, double *loo_s);
/* Writes the fitted parameters as an overlay INI (atomically); `stack` names a software stack
 * ("tensorflow-2017") or is NULL. */
gboolean dev_calib_write_overlay(const dev_calib *c, const char *path, const char *stack,
                                 GError **error);

#endif
