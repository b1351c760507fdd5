/* dtsim-mpi replay, internal: the replayed timeline of one device and the hand-over between the
 * thread that replays compute and the communication thread. Shared by replay.c (the command,
 * the timeline, dp's collectives, the report and the traces) and replay_ps.c (parameter servers
 * played by ranks over point-to-point messages). */
#ifndef DTSIM_COMM_MPI_REPLAY_INTERNAL_H
#define DTSIM_COMM_MPI_REPLAY_INTERNAL_H

#include "plan.h"
#include "comm_mpi_run.h"

typedef enum { REPLAY_COMPUTE, REPLAY_COLLECTIVE, REPLAY_PS } replay_kind;

/* One task of device 0's simulated timeline, and when it ran here. Times are seconds. */
typedef struct {
  char *name;
  char *category;
  replay_kind kind;
  comm_mpi_op op;          /* collectives */
  uint32_t id;             /* row of the per-task CSV: the task graph's order */
  uint32_t iteration;
  double sim_start_s, sim_end_s;
  uint64_t bytes;
  int after;               /* communication: index of the compute task it follows, -1: none */
  uint32_t after_id;       /* ps, while reading: the CSV row of that compute task */
  int wait_for;            /* compute: index of the communication task it waits for, -1: none */
  uint32_t tensor;         /* ps: the tensor pushed (layers with parameters, in layer order) */
  double real_start_s, real_end_s; /* measured, from the start of the replay */
} replay_task;

/* Device 0's timeline, as replayed. */
typedef struct {
  GArray *compute;         /* replay_task: one chain (compute stream and framework step), in order */
  GArray *comms;           /* replay_task: collectives or push/pull tasks, in the order started */
  GArray *sim_ends;        /* double: simulated end of each iteration, seconds */
  GPtrArray *tensor_names; /* ps: the layer of each tensor */
  GArray *tensor_bytes;    /* ps: uint64_t per tensor */
} replay_timeline;

void replay__timeline_init(replay_timeline *tl);
void replay__timeline_clear(replay_timeline *tl);

/* One task of a simulated iteration as the replay reads it (the columns of `dtsim run --csv`):
 * its graph index, name, kind ("compute", "delay", "transfer", "collective", "custom"),
 * category, unit and stream names ("" for a task on no stream), simulated times and bytes. */
typedef struct {
  uint32_t id;
  const char *name, *kind, *category, *unit, *stream;
  double start_s, end_s;
  uint64_t bytes;
} replay_row;

/* The rows of a simulation's plan and timeline, in the task graph's order. The strings belong
 * to the graph. */
GArray *replay__rows_from_plan(const sim_plan *plan, const sim_exec *exec);

/* Reads device 0's tasks from the rows of a simulated run (in the task graph's order) into an
 * initialised timeline. Device 0 is the unit of the first compute-stream row; its host
 * thread is "framework for" the unit's first word (sim/strategies/plan.c names them so). Tasks on no
 * stream (ps pushes, iteration ends) belong to the device of the row before them: the
 * strategies add them right after the task they follow. Input copies are left out. dp: the
 * collectives, each following the last compute task that ended by its simulated start; an
 * iteration ends with the update. ps: each push/pull follows the row before it (its dW task),
 * a forward waits for its layer's push/pull of the iteration before, tensors are numbered in
 * layer order; an iteration ends with its "iteration end" task. Any other communication of
 * device 0, and any other strategy, is refused (DT_ERROR_INPUT) naming the task. */
gboolean replay__read_timeline(const GArray *rows, const sim_strategy *st, replay_timeline *tl,
                               GError **error);

/* The hand-over: the compute thread queues communication tasks as their inputs become ready
 * (index + 1: the queue refuses NULL; REPLAY_STOP ends the thread once its work is done) and
 * waits on their done flags; the communication thread is the only one calling MPI. */
#define REPLAY_STOP G_MAXUINT

typedef struct {
  GArray *comms;           /* replay_task, in the order the compute thread starts them */
  GAsyncQueue *queue;
  gint *done;              /* per communication task, set (atomically) once it has finished */
  double t0;               /* CLOCK_MONOTONIC seconds when the replay started */
  gboolean sleep;          /* idle by sleeping rather than by spinning (small machines) */
} replay_comm;

double replay__now_s(void);

/* Parameter servers (replay_ps.c). */
typedef struct replay_ps replay_ps;

typedef struct {
  comm_ps_placement placement;
  uint32_t servers;               /* shards, K */
  const uint64_t *tensor_bytes;   /* per tensor */
  uint32_t tensors;
  uint32_t iterations;
  uint32_t nodes, per_node;       /* the workers: nodes x per_node ranks */
  const int *worker_rank;         /* MPI rank of each worker, in dtsim's node-major order */
  double server_reduce_Bps;       /* aggregation rate of a server, bytes/s */
} replay_ps_config;

/* Places the tensors on shards and the shards on ranks, and duplicates MPI_COMM_WORLD twice
 * (pushes, pulls): collective, on the main thread. Fails (DT_ERROR_INPUT) when a tensor is too
 * large for one message or there are more tensors than tags. */
replay_ps *replay_ps_new(const comm_mpi_ctx *ctx, const replay_ps_config *cfg, replay_comm *rc,
                         GError **error);
/* Frees the communicators too: collective, after the thread has been joined. */
void replay_ps_free(replay_ps *ps);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(replay_ps, replay_ps_free)
/* The communication thread of a ps replay: pushes and pulls of this rank's worker, and the
 * shards this rank serves. */
gpointer replay_ps_main(gpointer ps);
gboolean replay_ps_is_worker(const replay_ps *ps);
uint32_t replay_ps_shard_of(const replay_ps *ps, uint32_t tensor);
int replay_ps_shard_rank(const replay_ps *ps, uint32_t shard);

/* One aggregation a server of this rank did: tensor, iteration, shard, and when (seconds from
 * the start of the replay) the aggregation unit took it and let it go. All doubles, so that
 * the records travel to rank 0 as MPI_DOUBLE. */
typedef struct {
  double tensor, iteration, shard, start_s, end_s;
} replay_ps_aggregation;

/* This rank's aggregations, in the order they were taken; *n receives the count. */
const replay_ps_aggregation *replay_ps_aggregations(const replay_ps *ps, guint *n);

#endif
