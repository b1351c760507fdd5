/* Strategy `3d`: Megatron-style tensor x pipeline x data parallelism of a transformer, with
 * sequence parallelism, interleaved pipeline schedules, ZeRO 1-3 and activation recomputation.
 *
 * The job is T x P x D devices, ranked as Megatron ranks them: tensor-parallel rank fastest
 * (a tensor-parallel group is T neighbouring devices, inside one NVLink domain when T divides
 * the devices of a node), then data-parallel, then pipeline stage. All tensor-parallel ranks of
 * a stage do the same work at the same time, and so do all data-parallel replicas; the task
 * graph therefore holds one device per pipeline stage (tensor rank 0 of replica 0) and the
 * pipeline's point-to-point transfers between them on the network, while the time of each
 * tensor-parallel and data-parallel collective comes from running that collective (with every
 * concurrent group of the job that shares its links) on the same network model and topology.
 * Those collectives are tasks on tracks of their own ("tp", "dp"); the pipeline's transfers are
 * on "pp-*" tracks.
 *
 * The options are a typed struct (sim_3d_opts) so a front end fills them in a few lines. */
#ifndef DTSIM_STRATEGY_3D_H
#define DTSIM_STRATEGY_3D_H

#include <glib.h>
#include <stdint.h>
#include <stdio.h>

#include "comm_net.h"
#include "plan.h"
#include "report.h"
#include "scenario.h"
#include "wl_transformer.h"

typedef struct {
  const char *model;           /* zoo name or transformer: spec */
  uint32_t seq_len;            /* 0: the model's */
  wl_precision precision;
  uint32_t tp, pp, dp;         /* dp 0: devices / (tp pp) */
  uint64_t batch;              /* sequences per replica when global_batch is 0 */
  uint64_t global_batch;       /* sequences per iteration over the job (0: batch x dp) */
  uint64_t micro_batch;        /* sequences per micro-batch; 0: the rule of docs/workloads.md */
  wl_schedule schedule;
  uint32_t interleave;         /* model chunks per device (interleaved schedule); 0: 1 */
  gboolean seq_parallel;
  gboolean tp_overlap;         /* tensor-parallel collectives run beside the GEMMs (Megatron's
                                * --tp-comm-overlap) instead of between them */
  wl_recompute recompute;
  wl_attention attention;      /* flash (default) or unfused */
  unsigned zero;               /* 0..3 */
  gboolean overlap;            /* data-parallel reduction overlapped with backward */
  uint64_t bucket_bytes;       /* gradient bucket, bytes; 0: Megatron's max(40M, 1M x dp)
                                * parameters */
  const char *allreduce;       /* algorithm of the collectives ("ring", "auto", ...) */
  uint32_t iterations;
  /* Which blocks each pipeline stage holds (wl_tf_partition): the first block of each virtual
   * stage after the first, or Megatron-Core's layout string, or neither (spread); the
   * embedding and the loss counted as blocks when spreading. */
  const int64_t *split;
  size_t n_split;
  const char *pp_layout;
  gboolean embedding_in_split, loss_in_split;
  uint32_t ep;                 /* expert parallelism (0 or 1: none) */
  uint32_t etp;                /* expert tensor parallelism (0 or 1: whole experts) */
  uint32_t cp;                 /* context parallelism (0 or 1: none) */
  wl_cp_comm cp_comm;          /* how context-parallel attention gets the keys and values */
  double moe_capacity;         /* expert capacity factor (0: dropless) */
  double moe_imbalance;        /* busiest expert's tokens over the mean (0 or 1: even) */
  const char *framework;       /* catalog name or INI of the framework (NULL: megatron) */
  uint32_t shard_group;        /* ZeRO/FSDP sharding group (0: dp; HSDP below it) */
  unsigned offload;            /* sim_offload: what lives on the host */
  gboolean ep_overlap;         /* expert-parallel all-to-alls under another micro-batch's
                                * compute (ep_overlap.h) */
  gboolean every_device;       /* --symmetry off: every device simulated (build_every_device) */
} sim_3d_opts;

/* The options of a scenario (--strategy 3d, or dp of a transformer: one tensor and one
 * pipeline rank). */
gboolean sim_3d_opts_from_scenario(const sim_scenario *s, sim_3d_opts *o, GError **error);
/* Defaults: tp = pp = 1, dp from the devices, 1f1b, no sequence parallelism, no recomputation,
 * ZeRO 0, overlap on, ring, one iteration, bf16. */
void sim_3d_opts_init(sim_3d_opts *o);

/* What `run` adds for transformers (the contract's keys). */
typedef struct {
  double tokens_per_s;
  double model_tflops_per_device;  /* model FLOPs (no recomputation) per second per device, 1e12 */
  double mfu;                      /* that over the device's dense peak at the precision */
  uint64_t weights_bytes, gradients_bytes, optimizer_bytes, activations_bytes, other_bytes;
  uint64_t framework_reserved_bytes;   /* CUDA context, NCCL buffers, allocator slack */
  uint64_t host_bytes;             /* offloaded to host memory, per device */
  uint64_t activations_cp_bytes;   /* context parallelism's key/value buffers (wl_tf_cp) */
  double tokens_dropped;           /* routed token copies over capacity per iteration */
  gboolean has_cp, has_capacity;   /* report activations_cp, tokens_dropped */
  uint64_t micro_batch;            /* as used (the rule's choice when not given) */
  double model_flops;              /* per iteration */
  double peak_flops;               /* the device's dense peak at the precision, FLOP/s */
  uint64_t capacity_bytes;         /* the device's memory */
  uint64_t global_batch;           /* as used */
  uint32_t seq;                    /* tokens per sequence */
} sim_3d_metrics;

/* Validates the options against the model and the cluster (exit-2 errors name the options)
 * and builds the task graph of `iterations` iterations. `device` is a catalog name or INI;
 * `calibration` an overlay or NULL. *reduce_Bps receives the devices' reduction rate for the
 * pipeline transfers' network adapter; *metrics the memory breakdown and the FLOP count (the
 * rates are filled by sim_3d_finish_metrics once the iteration time is known). */
sim_plan *sim_3d_build(const sim_3d_opts *o, const comm_topology *topo,
                       comm_net_model net_model, const char *device, const char *calibration,
                       double *reduce_Bps, sim_3d_metrics *metrics, GError **error);
/* Fills the rates of *m from the simulated iteration time and copies them into the report. */
void sim_3d_report(sim_3d_metrics *m, sim_report *r);

/* `dtsim describe` of a transformer: parameters and FLOPs per layer for `batch` sequences
 * (one kernel table of a block, then the model's rows and totals); --json prints the object
 * of the contract. */
int sim_3d_describe(FILE *out, const char *model, uint32_t batch, uint32_t seq_len,
                    wl_precision precision, gboolean json, GError **error);

#endif
