/* dtsim-mpi: measures real MPI communication under mpirun and compares it with the model.
 *
 * The pieces that do not need MPI (least-squares fitting, statistics, size lists, the table of
 * Open MPI algorithms, closed-form predictions, the system INI writer) are plain functions so
 * the unit tests can check them without mpirun. The subcommands (calibrate, validate, replay,
 * sweep) run on every rank and share one runtime context (comm_mpi_ctx).
 *
 * Units: bytes, seconds as double only in reports, nanoseconds for latencies in INI files,
 * bytes per second (_Bps) and 1e9 bytes per second (_GBps) for bandwidths. */
#ifndef DTSIM_COMM_MPI_H
#define DTSIM_COMM_MPI_H

#include <glib.h>
#include <stdint.h>
#include <stdio.h>

/* ---- Statistics and fitting (fit.c) ------------------------------------------------------ */

/* Median of n values (n >= 1); sorts a copy, the input is left as it is. */
double comm_mpi_median(const double *values, size_t n);

/* One measured point-to-point transfer: `bytes` took `time_s` one way. */
typedef struct {
  double bytes;
  double time_s;
} comm_mpi_point;

/* time = latency + bytes / bandwidth, fitted by least squares on relative error (each point
 * weighted by 1/time^2, so a 1 us and a 10 ms point count alike). */
typedef struct {
  double latency_s;     /* intercept, >= 0 (clamped; see negative_latency) */
  double bandwidth_Bps; /* inverse of the slope, bytes/s */
  double max_rel_residual; /* largest |fit - measured| / measured over the points */
  gboolean negative_latency; /* the unconstrained intercept was below zero */
} comm_mpi_fit;

/* Fails (DT_ERROR_INPUT) when fewer than two distinct sizes are given or the slope is not
 * positive (time does not grow with size, so no bandwidth can be read from the points). */
gboolean comm_mpi_fit_points(const comm_mpi_point *points, size_t n, comm_mpi_fit *out,
                             GError **error);

/* Relative error of a prediction: (predicted - measured) / measured. */
double comm_mpi_rel_error(double predicted_s, double measured_s);
/* Geometric-mean error of n (predicted, measured) pairs: exp(mean |ln(pred/meas)|) - 1, so
 * 0.10 means "off by a factor of 1.10 on average", symmetric in over- and under-prediction. */
double comm_mpi_geomean_error(const double *predicted_s, const double *measured_s, size_t n);

/* ---- Option values (options.c) ------------------------------------------------------------ */

/* A comma-separated list of sizes (dt_parse_size syntax); an item "A..B" means A, 2A, 4A, ...
 * up to B (A > 0). Returns a GArray of uint64_t bytes, sorted and without duplicates. */
GArray *comm_mpi_parse_sizes(const char *text, const char *what, GError **error);
/* 64-bit FNV-1a hash of the argument vector (each argument and its terminating NUL). */
uint64_t comm_mpi_hash_argv(int argc, char *const *argv);

/* ---- Collectives and Open MPI's tuned algorithms (algos.c) -------------------------------- */

typedef enum {
  COMM_MPI_ALLREDUCE,
  COMM_MPI_ALLGATHER,
  COMM_MPI_REDUCE_SCATTER,
  COMM_MPI_BROADCAST,
  COMM_MPI_N_OPS,
} comm_mpi_op;

/* One algorithm the model knows, tied to the Open MPI 4.1 tuned component's number for it
 * (`ompi_info --param coll tuned --level 9`) and the coll/base function that carries it out. */
typedef struct {
  comm_mpi_op op;
  const char *name;        /* dtsim's name, as in --allreduce / dtsim list algorithms */
  int ompi_id;             /* value of coll_tuned_<op>_algorithm */
  const char *ompi_name;   /* Open MPI's enumerator name */
  const char *base_fn;     /* ompi_coll_base_... function that runs it */
  const char *description; /* one line */
} comm_mpi_algorithm;

const char *comm_mpi_op_name(comm_mpi_op op);  /* "allreduce", "reduce-scatter", ... */
/* The MCA variable that forces the algorithm of `op`, e.g. "coll_tuned_allreduce_algorithm". */
const char *comm_mpi_op_cvar(comm_mpi_op op);
gboolean comm_mpi_op_parse(const char *name, comm_mpi_op *out, GError **error);
/* All algorithms, in table order; *n receives the count. */
const comm_mpi_algorithm *comm_mpi_algorithms(size_t *n);
/* The algorithm `name` of `op`, or NULL with an error listing the known names of that op. */
const comm_mpi_algorithm *comm_mpi_algorithm_find(comm_mpi_op op, const char *name,
                                                  GError **error);

/* ---- Fitted system (sysfile.c) ------------------------------------------------------------ */

typedef enum {
  COMM_MPI_SAME_SOCKET,
  COMM_MPI_SAME_NODE,   /* same node, different (or unknown) socket */
  COMM_MPI_OTHER_NODE,
  COMM_MPI_N_CLASSES,
} comm_mpi_locality;

const char *comm_mpi_locality_name(comm_mpi_locality loc);

/* One fabric: what a fitted locality class becomes in the system file. */
typedef struct {
  double latency_ns;
  double bandwidth_GBps; /* 1e9 bytes/s per direction */
} comm_mpi_fabric;

/* What calibration found and what the predictions use. */
typedef struct {
  char *name;               /* system name written in the file */
  uint32_t nodes;           /* distinct nodes among the ranks */
  uint32_t ranks_per_node;  /* ranks on the most populated node */
  comm_mpi_fabric intra;    /* between ranks of one node */
  comm_mpi_fabric inter;    /* between ranks of different nodes */
  gboolean intra_measured, inter_measured;
  double reduce_GBps;       /* local MPI_SUM of floats, bytes of input per second; 0: unknown */
} comm_mpi_system;

void comm_mpi_system_clear(comm_mpi_system *sys);
/* Writes the system INI (inline [intra] and [inter] fabrics, docs/network.md) atomically.
 * `comment` is a free-form line (host, date, command) written at the top. */
gboolean comm_mpi_system_write(const comm_mpi_system *sys, const char *comment, const char *path,
                               GError **error);
/* Reads back the fabrics of a system INI written by comm_mpi_system_write or by hand. */
gboolean comm_mpi_system_read(const char *path, comm_mpi_system *out, GError **error);

/* ---- Predictions (predict.c) ---------------------------------------------------------------- */

/* Predicted time (seconds) of `algo` moving `bytes` (the full buffer: allreduce/broadcast
 * input, allgather output, reduce-scatter input) among `ranks` ranks spread node-major over
 * sys->nodes nodes. */
gboolean comm_mpi_predict(const comm_mpi_system *sys, const comm_mpi_algorithm *algo,
                          uint64_t bytes, uint32_t ranks, double *out_s, GError **error);
/* Name of the model behind comm_mpi_predict, printed in reports. */
const char *comm_mpi_predict_model(void);

#endif
