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

#include "coll.h"

/* Names of dtsim-mpi's scratch folders: $TMPDIR/dtsim-mpi-HOST-PID-XXXXXX (dt_scratch_new). */
#define COMM_MPI_SCRATCH_PREFIX "dtsim-mpi"

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

/* Two regimes of one link: a message of at least `break_bytes` follows `large`, a smaller one
 * `small` (Open MPI's shared memory: eager copies through a bounce buffer below ~4 KiB, a
 * rendezvous and one kernel-assisted copy above). `piecewise` FALSE: one line fitted all
 * points, and small, large and the single fit are the same. */
typedef struct {
  comm_mpi_fit small, large;
  double break_bytes;      /* smallest size of the large regime; 0 when not piecewise */
  gboolean piecewise;
  /* The latency that gives the small regime's points their times when they move at the large
   * regime's bandwidth (dtsim charges a link one bandwidth and a latency per regime): the mean
   * of time - bytes / large bandwidth over them, weighted by 1/time^2, within [0, large
   * latency]. Equal to large.latency_s when not piecewise. */
  double small_latency_s;
  double single_max_rel_residual; /* largest residual of one line through every point */
} comm_mpi_regimes;

/* Fits one line, then every break between two consecutive sizes that leaves at least three
 * sizes on each side; the break whose two lines have the smallest sum of squared relative
 * residuals is kept when the single line is off by more than 5% somewhere and the break at
 * least halves that sum. */
gboolean comm_mpi_fit_regimes(const comm_mpi_point *points, size_t n, comm_mpi_regimes *out,
                              GError **error);

/* A node's links and switch (its memory system) from exchanges: `ranks` ranks of a node
 * exchanging with a partner at once, each moving `bytes` each way (points of `bytes` >=
 * from_bytes; all when 0). The line through them gives each rank's rate per direction,
 * *per_rank_Bps. A rank's link carries at least that one way: *link_Bps is the larger of it
 * and pingpong_Bps, the one-way rate of a lone pair (a ping-pong waits for each message to
 * land before sending the next, which an exchange does not). Within 5% of *link_Bps the switch
 * kept up with every rank: *switch_Bps = 0, non-blocking. Otherwise the ranks shared it:
 * *switch_Bps = ranks x per_rank_Bps, but never below *link_Bps, which one flow alone
 * reached. */
gboolean comm_mpi_fit_switch(const comm_mpi_point *points, size_t n, double from_bytes,
                             double pingpong_Bps, uint32_t ranks, double *per_rank_Bps,
                             double *link_Bps, double *switch_Bps, GError **error);

/* Relative error of a prediction: (predicted - measured) / measured. */
double comm_mpi_rel_error(double predicted_s, double measured_s);
/* Geometric-mean error of n (predicted, measured) pairs: exp(mean |ln(pred/meas)|) - 1, so
 * 0.10 means "off by a factor of 1.10 on average", symmetric in over- and under-prediction. */
double comm_mpi_geomean_error(const double *predicted_s, const double *measured_s, size_t n);

/* ---- Option values (options.c) ------------------------------------------------------------ */

/* A comma-separated list of sizes, each at least 1 byte (dt_parse_size_list: an item "A..B"
 * means A, 2A, 4A, ... up to B). Returns a GArray of uint64_t bytes, sorted and without
 * duplicates. */
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

/* One algorithm both dtsim and Open MPI 4.1's tuned component have, tied to the tuned
 * component's number for it (`ompi_info --param coll tuned --level 9`) and the coll/base
 * function that carries it out. Some need more variables forced (the segment size of a
 * pipelined broadcast, the reduce and broadcast inside Open MPI's reduce-then-broadcast). */
typedef struct {
  const char *cvar;        /* MCA variable, e.g. "coll_tuned_reduce_algorithm" */
  int value;
  const char *base_fn;     /* the function it makes Open MPI call too, or NULL */
} comm_mpi_forced;

typedef struct {
  comm_mpi_op op;
  const char *name;        /* dtsim's algorithm name (dtsim list algorithms) */
  int ompi_id;             /* value of coll_tuned_<op>_algorithm */
  const char *ompi_name;   /* Open MPI's enumerator name */
  const char *base_fn;     /* ompi_coll_base_... function that runs it */
  comm_mpi_forced extra[2];/* further variables to force; cvar NULL ends the list */
  const char *description; /* one line */
  /* Local copies Open MPI 4.1's function makes on its slowest rank besides the transfers and
   * reductions (the send buffer into the receive buffer or a temporary, a result out of a
   * temporary), as multiples of the whole buffer n and of one block n/p. */
  double copies_whole, copies_block;
} comm_mpi_algorithm;

const char *comm_mpi_op_name(comm_mpi_op op);  /* "allreduce", "reduce-scatter", ... */
/* The MCA variable that forces the algorithm of `op`, e.g. "coll_tuned_allreduce_algorithm". */
const char *comm_mpi_op_cvar(comm_mpi_op op);
gboolean comm_mpi_op_parse(const char *name, comm_mpi_op *out, GError **error);
/* All algorithms, in table order; *n receives the count. */
const comm_mpi_algorithm *comm_mpi_algorithms(size_t *n);
/* Bytes the slowest rank copies locally in one call of `algo` on `bytes` (nccl-tests size) and
 * `ranks` ranks: copies_whole * bytes + copies_block * bytes / ranks. */
double comm_mpi_algorithm_copy_bytes(const comm_mpi_algorithm *algo, uint64_t bytes,
                                     uint32_t ranks);
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

/* A warning (to free) when the fitted latency of a locality class is far above what its path
 * can take, or NULL: within a node (shared memory) 100 us, between nodes 1 ms. Such fits come
 * from ranks sharing cores or a busy machine, not from the path. */
char *comm_mpi_fit_warning(comm_mpi_locality loc, double latency_s);

/* End-to-end point-to-point cost between two ranks: one-way time = latency + bytes / bw. */
typedef struct {
  double latency_ns;
  double bandwidth_GBps; /* 1e9 bytes/s per direction */
} comm_mpi_fabric;

/* What calibration found, written as a dtsim system. */
typedef struct {
  char *description;        /* one line for `dtsim list systems` */
  uint32_t ranks_per_node;  /* devices_per_node of the system */
  comm_mpi_fabric intra;    /* between ranks of one node */
  comm_mpi_fabric inter;    /* between ranks of different nodes */
  gboolean intra_measured, inter_measured;
  /* The fits behind intra and inter (which hold their large-message regime), for the file's
   * comments; zero when not measured. */
  comm_mpi_regimes intra_regimes, inter_regimes;
  /* The node's switch: total bytes/s of all ranks of a node at once (0: non-blocking), and
   * what it was read from: exchange_ranks ranks each moving exchange_GBps per direction. */
  double switch_GBps, exchange_GBps;
  uint32_t exchange_ranks;
} comm_mpi_system;

void comm_mpi_system_clear(comm_mpi_system *sys);

/* Writes the system INI that `dtsim --system FILE` loads (docs/network.md): device "host",
 * layout "nvswitch" (each rank has one link to a non-blocking switch standing for the node's
 * memory system), inline [intra] and [inter] fabrics. The per-link latencies are chosen so that
 * the topology dtsim builds from the file gives back the fitted end-to-end latency between two
 * ranks (a route has several links: rank - switch - rank inside a node; rank, PCIe, NIC, network
 * switch and back between nodes): the file is loaded once with probe latencies to count them,
 * and once more at the end to check. Atomic: nothing is left behind on failure. */
gboolean comm_mpi_system_write(const comm_mpi_system *sys, const char *comment, const char *path,
                               GError **error);
/* End-to-end latency and bandwidth between rank 0 and rank `peer` of a topology built from
 * the system file with `nodes` x `per_node` ranks (what the model will charge). */
gboolean comm_mpi_system_p2p(const char *path, uint32_t nodes, uint32_t per_node, uint32_t peer,
                             comm_mpi_fabric *out, GError **error);

/* ---- Predictions through dtsim's model (predict.c) ------------------------------------------ */

typedef struct comm_mpi_model comm_mpi_model;

/* The cluster of the system file with `nodes` x `per_node` ranks. `dtsim_rank_of[i]` is the
 * dtsim (node-major) rank of MPI rank i, i < nodes * per_node; NULL means the identity. Flow or
 * analytic network model; reductions at reduce_Bps (bytes/s, 0: free). */
comm_mpi_model *comm_mpi_model_new(const char *system_path, uint32_t nodes, uint32_t per_node,
                                   const uint32_t *dtsim_rank_of, gboolean flow, double reduce_Bps,
                                   GError **error);
void comm_mpi_model_free(comm_mpi_model *model);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(comm_mpi_model, comm_mpi_model_free)
/* Simulated time (seconds) of `algo` moving `bytes` (nccl-tests sizes: allreduce and
 * broadcast buffer, allgather output, reduce-scatter input). */
gboolean comm_mpi_model_predict(comm_mpi_model *model, const comm_mpi_algorithm *algo,
                                uint64_t bytes, double *out_s, GError **error);
/* What one row of the validation adds to the network model, measured on the host for that
 * row's size: the reduction rate, and the time of the host-side work before the transfers
 * (local copies and first touches of fresh temporary pages), charged as the collective's
 * launch cost. */
typedef struct {
  double reduce_Bps;  /* bytes/s; 0: reductions are free */
  double host_s;      /* seconds, >= 0 */
} comm_mpi_row_costs;

/* As comm_mpi_model_predict, with the row's own reduction rate and host time instead of the
 * model's reduction rate. */
gboolean comm_mpi_model_predict_costs(comm_mpi_model *model, const comm_mpi_algorithm *algo,
                                      uint64_t bytes, const comm_mpi_row_costs *costs,
                                      double *out_s, GError **error);
/* "dtsim flow model" or "dtsim analytic model", for reports. */
const char *comm_mpi_model_name(const comm_mpi_model *model);

/* ---- Parameter servers in a replay (replay_plan.c) ----------------------------------------- */

/* The rank that plays parameter-server shard `shard` (of `servers`) when a ps scenario with
 * `nodes` x `per_node` workers is replayed, as a worker's index in dtsim's node-major numbering
 * (node * per_node + index on the node) or, for dedicated servers, an index past the workers.
 * Servers on worker nodes go where comm_ps puts them: shard k on node k mod nodes, and there
 * on the node's ((k div nodes) mod per_node)-th worker, which is the device comm_ps uses for
 * gpu servers and, for cpu and colocated servers (a host, which is no rank of its own), a
 * worker of the same node standing in for it, the node's workers taken in turn. Dedicated
 * servers are the ranks after the workers: shard k on nodes * per_node + k mod servers. */
uint32_t comm_mpi_ps_server_rank(comm_ps_placement placement, uint32_t shard, uint32_t servers,
                                 uint32_t nodes, uint32_t per_node);

#endif
