/* One training iteration (or several) as a task graph, and the executor that replays it on the
 * engine.
 *
 * Tasks run on streams. A stream belongs to one device (or host, or parameter server) and runs
 * its tasks strictly in the order they were added, as a CUDA stream does: a task starts when it
 * is at the head of each of its streams and all its dependencies have finished. Compute and
 * delay tasks have a fixed duration; transfers and collectives span several streams (one per
 * member) and take as long as the communication model says. Overlap of communication with
 * compute therefore comes from the graph alone: put them on different streams.
 *
 * Lifecycle: sim_graph_new() -> add streams, tasks, dependencies -> sim_exec_new() ->
 * sim_exec_set_comm() -> sim_exec_run() -> read times -> free. */
#ifndef DTSIM_TASKGRAPH_H
#define DTSIM_TASKGRAPH_H

#include <glib.h>
#include <stdint.h>

#include "engine.h"

/* The collective algorithm a task runs with (comm/coll/coll.h); the graph only carries it. */
typedef struct comm_coll_algorithm comm_coll_algorithm;

typedef uint32_t sim_task_id;
typedef uint32_t sim_stream_id;
typedef uint32_t sim_unit_id;    /* a device, host CPU or server: one trace process */

typedef enum {
  SIM_TASK_COMPUTE,     /* fixed duration on one stream */
  SIM_TASK_DELAY,       /* fixed duration on no stream (e.g. a host-side wait) */
  SIM_TASK_TRANSFER,    /* point-to-point: member 0 sends, member 1 receives */
  SIM_TASK_COLLECTIVE,  /* a collective over all members */
  SIM_TASK_CUSTOM,      /* started and finished by the communication model (e.g. PS push) */
  SIM_TASK_KIND_COUNT
} sim_task_kind;

typedef struct sim_graph sim_graph;

sim_graph *sim_graph_new(void);
/* Makes room for `tasks` tasks and `edges` dependencies in all (a hint: the graph still grows
 * past them), so that a builder that knows its size fills arrays made once at their final
 * size instead of doubling and copying them. The room includes that of one executor's
 * arrays, which sim_exec_new() takes when the graph stayed within it. */
void sim_graph_reserve(sim_graph *g, uint64_t tasks, uint64_t edges);
/* Memory a run of a graph of `tasks` tasks takes, bytes per task: the graph, its executor, the
 * engine's events and the network's state (peak resident memory of whole runs over their
 * tasks, measured: pipeline of 917 514 tasks 129, unfolded data parallel of 3.67 million 113). */
#define SIM_RUN_BYTES_PER_TASK 128
/* Refuses (DT_ERROR_INPUT, naming --max-memory, the estimate and the limit) a graph of `tasks`
 * tasks that would take more than the memory limit or more tasks than ids can number. Builders
 * call it with their count before they allocate anything per task. */
gboolean sim_graph_check_size(uint64_t tasks, GError **error);
void sim_graph_free(sim_graph *graph);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sim_graph, sim_graph_free)

/* Units are what a trace shows as processes; `kind` is the engine's process kind. */
sim_unit_id sim_graph_add_unit(sim_graph *g, sim_proc_kind kind, const char *name);
/* A stream of a unit, e.g. "compute", "comm", "h2d". */
sim_stream_id sim_graph_add_stream(sim_graph *g, sim_unit_id unit, const char *name);
uint32_t sim_graph_n_units(const sim_graph *g);
uint32_t sim_graph_n_streams(const sim_graph *g);
uint32_t sim_graph_n_tasks(const sim_graph *g);
sim_unit_id sim_graph_stream_unit(const sim_graph *g, sim_stream_id s);

/* Task names are copied into the graph. `category` must be a static string. */
/* The graph's copy of a name, valid until the graph is freed. Builders that give many tasks one
 * name (a layer on every device, a micro-batch on every stage) format it once and pass the copy:
 * a copy is recognized by its address, without reading its text. */
const char *sim_graph_intern(sim_graph *g, const char *name);
sim_task_id sim_graph_add_compute(sim_graph *g, sim_stream_id stream, const char *name,
                                  const char *category, sim_time_ps duration_ps,
                                  uint64_t flops, uint64_t bytes);
sim_task_id sim_graph_add_delay(sim_graph *g, const char *name, sim_time_ps duration_ps);
sim_task_id sim_graph_add_transfer(sim_graph *g, sim_stream_id src, sim_stream_id dst,
                                   const char *name, uint64_t bytes);
/* `op` and `algorithm` are passed through to the communication model untouched. */
sim_task_id sim_graph_add_collective(sim_graph *g, const sim_stream_id *members, uint32_t n,
                                     const char *name, int op,
                                     const comm_coll_algorithm *algorithm,
                                     uint64_t bytes);
sim_task_id sim_graph_add_custom(sim_graph *g, const sim_stream_id *members, uint32_t n,
                                 const char *name, const char *category, int op, uint64_t bytes);
/* A task on no stream (a custom task with no members, such as a parameter-server push that
 * ends when its pull is back) shows in the trace on `stream`'s track, as a span from its start
 * to its end, without holding the stream: it neither waits for the stream's tasks nor they for
 * it. Overlapping shown tasks take lanes of the track. */
void sim_graph_show_on(sim_graph *g, sim_task_id task, sim_stream_id stream);
/* Device memory, for the trace's per-unit "memory" counter: a unit's resident bytes (weights,
 * gradients, optimizer state), and how a task changes the unit's memory when it ends
 * (activations saved by a forward pass, released by its backward pass); deltas add up. */
void sim_graph_set_unit_memory(sim_graph *g, sim_unit_id unit, uint64_t resident_bytes);
void sim_graph_add_memory_delta(sim_graph *g, sim_task_id task, int64_t delta_bytes);

/* Where the units, streams and tasks of an appended graph start in the graph it joined: its
 * unit u is unit_base + u there, and so on. */
typedef struct {
  sim_unit_id unit_base;
  sim_stream_id stream_base;
  sim_task_id task_base;
} sim_graph_offsets;
/* Appends a copy of every unit (its name after `unit_prefix`, or unchanged when NULL), stream,
 * task (with its memory delta and the stream it is shown on) and dependency of `src` to `dst`,
 * in order, so that ids move by the offsets written to *out (if not NULL): several task graphs
 * made one, to run on one engine. */
void sim_graph_append(sim_graph *dst, const sim_graph *src, const char *unit_prefix,
                      sim_graph_offsets *out);

/* `task` starts only after `before` has finished. */
void sim_graph_depend(sim_graph *g, sim_task_id task, sim_task_id before);
/* The dependencies, in the order they were added: edge i says `task` waits for `before`. */
uint32_t sim_graph_n_edges(const sim_graph *g);
void sim_graph_edge(const sim_graph *g, uint32_t i, sim_task_id *before, sim_task_id *task);

/* Multiplies the duration of every compute task on the streams of `unit` (except its host-to-
 * device copies, stream "h2d") by factor, rounded to the picosecond: a slower device.
 * Returns how many tasks changed. */
uint32_t sim_graph_scale_unit_compute(sim_graph *g, sim_unit_id unit, double factor);

sim_task_kind sim_graph_task_kind(const sim_graph *g, sim_task_id t);
const char *sim_graph_task_name(const sim_graph *g, sim_task_id t);
/* The fixed duration of a compute or delay task; 0 for the others. */
sim_time_ps sim_graph_task_duration(const sim_graph *g, sim_task_id t);
const char *sim_graph_task_category(const sim_graph *g, sim_task_id t);
uint64_t sim_graph_task_bytes(const sim_graph *g, sim_task_id t);
uint64_t sim_graph_task_flops(const sim_graph *g, sim_task_id t);
int sim_graph_task_op(const sim_graph *g, sim_task_id t);
const comm_coll_algorithm *sim_graph_task_algorithm(const sim_graph *g, sim_task_id t);
uint32_t sim_graph_task_members(const sim_graph *g, sim_task_id t, const sim_stream_id **members);
/* What a communication model reads of a task as it starts it, in one call (it starts one per
 * transfer of a pipeline run). */
typedef struct {
  sim_task_kind kind;
  int op;                          /* sim_graph_task_op() */
  uint32_t n_members;
  const sim_stream_id *members;    /* NULL when n_members is 0 */
  uint64_t bytes;
} sim_task_view;
sim_task_view sim_graph_task_view(const sim_graph *g, sim_task_id t);
const char *sim_graph_stream_name(const sim_graph *g, sim_stream_id s);
/* The tasks of a stream, in the order they run. */
const sim_task_id *sim_graph_stream_tasks(const sim_graph *g, sim_stream_id s, uint32_t *n);
const char *sim_graph_unit_name(const sim_graph *g, sim_unit_id u);

/* The graph's invariants (as hwloc_topology_check() checks a topology): every dependency joins
 * two tasks of the graph, not a task to itself; every stream lists its tasks once each, in the
 * order they were added, and only tasks that name it among their members; every task names
 * streams of the graph; and no chain of dependencies and stream orders leads from a task back
 * to itself (every task can start). FALSE with DT_ERROR_INTERNAL naming the first breach.
 * Builds without NDEBUG check every strategy's graph before running it (sim/simulate.c). */
gboolean sim_graph_check(const sim_graph *g, GError **error);

/* ---- Execution -------------------------------------------------------------------------- */

typedef struct sim_exec sim_exec;

/* How communication tasks take time. start() is called when a transfer, collective or custom
 * task starts; the model must call sim_exec_task_done(exec, task) exactly once when it ends
 * (from an engine event, possibly at the same time). A model that cannot go on stops the
 * engine (sim_engine_stop) and keeps the error, which error() hands to sim_exec_run() after
 * the run (NULL: none; error may itself be NULL for a model that never fails). `user` is the
 * model's state. */
typedef struct {
  const char *name;
  void (*start)(void *user, sim_exec *exec, sim_task_id task);
  const GError *(*error)(void *user);
} sim_comm_ops;

/* An executor may live in room its graph keeps (sim_graph_reserve): it is freed before the
 * graph, as it reads the graph throughout. */
sim_exec *sim_exec_new(sim_engine *engine, const sim_graph *graph);
void sim_exec_free(sim_exec *exec);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sim_exec, sim_exec_free)
void sim_exec_set_comm(sim_exec *exec, const sim_comm_ops *ops, void *user);
const sim_graph *sim_exec_graph(const sim_exec *exec);
sim_engine *sim_exec_engine(const sim_exec *exec);
/* The engine track of a stream (valid after sim_exec_new). */
sim_track_id sim_exec_stream_track(const sim_exec *exec, sim_stream_id s);

/* Runs every task. Fails with the communication model's error (sim_comm_ops.error), with the
 * engine's scheduling error (DT_ERROR_INTERNAL, naming the call that asked for the past), or
 * (DT_ERROR_INTERNAL) if tasks are left that can never start, naming them: a dependency cycle,
 * or dependencies that contradict stream order. */
gboolean sim_exec_run(sim_exec *exec, GError **error);
void sim_exec_task_done(sim_exec *exec, sim_task_id task);

sim_time_ps sim_exec_task_start(const sim_exec *exec, sim_task_id t);
sim_time_ps sim_exec_task_end(const sim_exec *exec, sim_task_id t);
sim_time_ps sim_exec_makespan(const sim_exec *exec);
/* Time a stream spent running tasks (sum of its task durations). */
sim_time_ps sim_exec_stream_busy(const sim_exec *exec, sim_stream_id s);

/* A communication model for tests and the demo: every transfer takes latency + bytes / bw;
 * a collective of n members takes the ring allreduce time 2(n-1)(latency + bytes/(n bw)). */
typedef struct {
  sim_time_ps latency_ps;
  uint64_t bandwidth_Bps;
} sim_simple_comm;
extern const sim_comm_ops sim_simple_comm_ops;

#endif
