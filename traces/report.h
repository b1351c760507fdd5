/* The numbers a run reports (the report types that traces/ writes; sim/measure.c measures them
 * on the simulated timeline of device 0 (all devices of a
 * symmetric strategy look alike; pipeline strategies report their first stage). Times are
 * seconds per iteration, taken from the last simulated iteration so warm-up effects such as the
 * first input copy are excluded when --iterations > 1. */
#ifndef DTSIM_REPORT_H
#define DTSIM_REPORT_H

#include <glib.h>
#include <stdint.h>
#include <stdio.h>

#include "trainrun.h"

typedef struct {
  double iteration_time_s;
  double throughput_samples_per_s;
  double compute_time_s;        /* compute stream busy (forward + backward + update + host) */
  double comm_time_s;           /* communication stream busy */
  double exposed_comm_time_s;   /* communication while the compute stream is idle */
  double idle_time_s;           /* neither computing nor communicating: bubbles, waits */
  double forward_time_s, backward_time_s, update_time_s;
  uint64_t memory_per_device_bytes;
  uint64_t memory_capacity_bytes;
  uint32_t devices;
  char device[64];              /* the device kind simulated (catalog name or file) */
  uint64_t samples_per_iteration;
  uint64_t events;
  double sim_wall_s;
  double speedup;               /* against one device at the same per-device batch; 0 if unknown */
  double scaling_efficiency;    /* speedup / devices (chaos: / threads) */
  uint32_t threads;             /* chaos: threads training at once; speedup is over one thread */
  /* Sequence models (strategy 3d): tokens per second, model FLOPs (no recomputation) per second
   * per device in 1e12, that over the dense peak, and the memory of the fullest device. */
  gboolean transformer;
  double tokens_per_s, model_tflops_per_device, mfu;
  uint64_t memory_weights_bytes, memory_gradients_bytes, memory_optimizer_bytes;
  uint64_t memory_activations_bytes, memory_other_bytes;
  uint64_t memory_framework_reserved_bytes;   /* CUDA context, NCCL buffers, allocator slack */
  uint64_t memory_host_bytes;   /* offloaded to host memory per device (0: nothing offloaded) */
  /* Context parallelism's key/value buffers (memory key activations_cp, when has_*), and the
   * routed token copies a capacity factor drops per iteration (tokens_dropped). */
  gboolean has_activations_cp, has_tokens_dropped;
  uint64_t memory_activations_cp_bytes;
  double tokens_dropped;
  uint64_t tokens_per_iteration;  /* sequence models: samples x sequence length; else 0 */
  /* Parameter servers: the busiest server's bytes over the mean (0: no servers). */
  double ps_busiest_share;
  /* What stragglers did to the folding of the run ("unfolded: ...", "folded: ..."), or "". */
  char symmetry_note[240];
  /* The whole training run (--train-tokens or --train-samples), when has_train. */
  gboolean has_train;
  sim_trainrun train;
} sim_report;

/* One JSON object on one line (the contract's keys first), with the scenario's extra pairs. */
void sim_report_print_json(FILE *out, const sim_report *r, const char *extra_json);
/* The same object appended to o, without the newline. */
void sim_report_append_json(GString *o, const sim_report *r, const char *extra_json);
void sim_report_print_table(FILE *out, const sim_report *r, const char *title);

#endif
