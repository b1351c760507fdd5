/* dtsim-mpi replay: runs simulated iterations of a dp or ps scenario for real. Every rank
 * simulates the scenario on the fitted system (compute on the scenario's device, communication
 * on the measured network), reads device 0's timeline from the per-task CSV, then replays it:
 * compute tasks (the device's compute stream and its host's framework step, one chain) become
 * busy-waits of their simulated durations on the main thread (or sleeps, --sleep, when ranks
 * and their communication threads outnumber the cores), and the communication runs for real on
 * a communication thread (the device's comm stream), each task started when the compute task
 * it follows has finished.
 *
 * dp: the gradient buckets' collectives run in order; a bucket follows the backward task that
 * completed its gradients (the last compute task ending before the collective's simulated
 * start), and the optimizer update (category "update") waits for every collective issued
 * before it. ps: each layer's push/pull goes to the rank playing its server shard
 * (replay_ps.c); it follows the layer's dW task, and the layer's forward in the next iteration
 * waits for it. Input copies (h2d) are not replayed: they overlap the host's framework step.
 *
 * Measured and simulated iteration times are compared (an iteration ends when every task of
 * it on device 0 has: the update for dp, the last backward task and pull for ps); both
 * timelines are written as Chrome traces (the simulated one by dtsim's own writer through
 * --trace, the measured one through the same writer fed with the measured intervals), so they
 * open side by side in Perfetto. Other strategies are refused before anything is measured,
 * naming the first task of theirs that has no counterpart here.
 *
 * The communication thread is the only one calling MPI while the timeline runs, so
 * MPI_THREAD_SERIALIZED is enough (requested in main.c). */
#include "chrome.h"
#include "comm_net.h"
#include "replay_internal.h"
#include "strategy.h"
#include "simulate.h"
#include "util.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- dp: the collectives, one at a time on the communication thread --------------------------- */

typedef struct {
  const comm_mpi_ctx *ctx;
  replay_comm *rc;
  MPI_Comm comm;
  float *send, *recv;
  int *counts;
} dp_thread;

static gpointer dp_main(gpointer data)
{
  dp_thread *dt = data;
  replay_comm *rc = dt->rc;
  for (;;) {
    guint idx = GPOINTER_TO_UINT(g_async_queue_pop(rc->queue));
    if (idx == REPLAY_STOP)
      break;
    replay_task *t = &g_array_index(rc->comms, replay_task, idx - 1);
    int p = dt->ctx->size;
    int count = (int)MAX(t->bytes / sizeof(float) / (uint64_t)p * (uint64_t)p, (uint64_t)p);
    t->real_start_s = replay__now_s() - rc->t0;
    switch (t->op) {
    case COMM_MPI_ALLREDUCE:
      MPI_Allreduce(dt->send, dt->recv, count, MPI_FLOAT, MPI_SUM, dt->comm);
      break;
    case COMM_MPI_ALLGATHER:
      MPI_Allgather(dt->send, count / p, MPI_FLOAT, dt->recv, count / p, MPI_FLOAT, dt->comm);
      break;
    case COMM_MPI_REDUCE_SCATTER:
      for (int r = 0; r < p; r++)
        dt->counts[r] = count / p;
      MPI_Reduce_scatter(dt->send, dt->recv, dt->counts, MPI_FLOAT, MPI_SUM, dt->comm);
      break;
    case COMM_MPI_BROADCAST:
      MPI_Bcast(dt->send, count, MPI_FLOAT, 0, dt->comm);
      break;
    default:
      g_assert_not_reached();
    }
    t->real_end_s = replay__now_s() - rc->t0;
    g_atomic_int_set(&rc->done[idx - 1], 1);
  }
  return NULL;
}

/* ---- The compute thread ------------------------------------------------------------------------ */

/* Waits until t_s (CLOCK_MONOTONIC seconds): spinning, as a device's kernel keeps its core
 * busy, or sleeping, which leaves the core to the communication thread on a small machine. */
static void wait_until(double t_s, gboolean sleep)
{
  if (sleep) {
    struct timespec ts = {(time_t)t_s, (long)((t_s - (double)(time_t)t_s) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
      ;
    return;
  }
  while (replay__now_s() < t_s)
    ;
}

/* Waits until communication task `c` has finished: spinning, or polling every 20 us. Returns
 * whether it had to wait. */
static gboolean wait_done(const replay_comm *rc, guint c)
{
  if (g_atomic_int_get(&rc->done[c]))
    return FALSE;
  while (!g_atomic_int_get(&rc->done[c]))
    if (rc->sleep)
      g_usleep(20);
  return TRUE;
}

/* Runs the timeline once on this rank; times are relative to t0. Compute tasks follow a
 * schedule: each ends its duration after the previous one's scheduled end (or after the
 * communication it waited for), so a thread descheduled past a deadline catches up instead of
 * adding the delay to every later task. */
static void replay(replay_comm *rc, GArray *compute)
{
  guint next = 0;
  double end = replay__now_s();
  for (guint k = 0; k < compute->len; k++) {
    replay_task *t = &g_array_index(compute, replay_task, k);
    gboolean waited = FALSE;
    if (strcmp(t->category, "update") == 0)
      for (guint c = 0; c < next; c++)
        waited |= wait_done(rc, c);
    if (t->wait_for >= 0)
      waited |= wait_done(rc, (guint)t->wait_for);
    if (waited)
      end = MAX(end, replay__now_s());
    t->real_start_s = end - rc->t0;
    end += t->sim_end_s - t->sim_start_s;
    wait_until(end, rc->sleep);
    t->real_end_s = end - rc->t0;
    while (next < rc->comms->len && g_array_index(rc->comms, replay_task, next).after <= (int)k) {
      g_async_queue_push(rc->queue, GUINT_TO_POINTER(next + 1));
      next++;
    }
  }
  for (; next < rc->comms->len; next++)
    g_async_queue_push(rc->queue, GUINT_TO_POINTER(next + 1));
  for (guint c = 0; c < rc->comms->len; c++)
    wait_done(rc, c);
}

/* ---- The measured trace ------------------------------------------------------------------------ */

typedef struct {
  char *name;
  sim_proc_kind kind;
  int sort_index;
  const char *tracks[2];   /* NULL: no second track */
} mproc;

typedef struct {
  guint proc, track;
  const char *name;        /* must outlive the trace's engine */
  const char *category;
  uint64_t bytes;
  double start_s, end_s;
} mspan;

typedef struct {
  sim_time_ps at;
  int begin;       /* 0: end (first at equal times), 1: begin */
  guint span;
} trace_event;

static int by_time(gconstpointer a, gconstpointer b)
{
  const trace_event *x = a, *y = b;
  if (x->at != y->at)
    return (x->at > y->at) - (x->at < y->at);
  if (x->begin != y->begin)
    return x->begin - y->begin;
  return (x->span > y->span) - (x->span < y->span);
}

typedef struct {
  const GArray *spans;     /* mspan */
  const sim_track_id *tracks; /* 2 per process */
  uint64_t *ids;           /* per span */
} trace_state;

static void on_trace_event(sim_engine *engine, void *data, uint64_t arg)
{
  trace_state *ts = data;
  const trace_event *e = (const trace_event *)(uintptr_t)arg;
  const mspan *s = &g_array_index(ts->spans, mspan, e->span);
  if (e->begin)
    ts->ids[e->span] = sim_engine_span_begin(engine, ts->tracks[2 * s->proc + s->track], s->name,
                                             s->category, s->bytes, 0);
  else
    sim_engine_span_end(engine, ts->ids[e->span]);
}

/* Writes measured spans through dtsim's Chrome trace writer: an engine replays them as spans
 * at their times. */
static gboolean write_measured_trace(const char *path, const GArray *procs, const GArray *spans,
                                     GError **error)
{
  g_autoptr(sim_engine) engine = sim_engine_new();
  g_autoptr(trace_chrome) trace = trace_chrome_new(path, error);
  if (trace == NULL)
    return FALSE;
  trace_chrome_set_info(trace, "command", "dtsim-mpi replay (measured)");
  trace_chrome_attach(trace, engine);
  g_autofree sim_track_id *tracks = g_new0(sim_track_id, 2 * MAX(procs->len, 1));
  for (guint p = 0; p < procs->len; p++) {
    const mproc *mp = &g_array_index(procs, mproc, p);
    sim_proc_id proc = sim_engine_add_proc(engine, mp->kind, mp->name, mp->sort_index);
    for (int k = 0; k < 2; k++)
      if (mp->tracks[k])
        tracks[2 * p + k] = sim_engine_add_track(engine, proc, mp->tracks[k], k);
  }
  g_autofree uint64_t *ids = g_new0(uint64_t, MAX(spans->len, 1));
  trace_state ts = {spans, tracks, ids};
  g_autoptr(GArray) events = g_array_new(FALSE, FALSE, sizeof(trace_event));
  for (guint i = 0; i < spans->len; i++) {
    const mspan *s = &g_array_index(spans, mspan, i);
    trace_event b = {sim_time_from_s(MAX(s->start_s, 0)), 1, i};
    trace_event e = {sim_time_from_s(MAX(s->end_s, s->start_s)), 0, i};
    g_array_append_val(events, b);
    g_array_append_val(events, e);
  }
  g_array_sort(events, by_time);
  for (guint i = 0; i < events->len; i++)
    sim_engine_schedule_at(engine, g_array_index(events, trace_event, i).at, on_trace_event, &ts,
                           (uint64_t)(uintptr_t)&g_array_index(events, trace_event, i));
  sim_engine_run(engine);
  sim_engine_finish(engine);
  return trace_chrome_close(trace, error);
}

static void mproc_clear(gpointer p)
{
  g_free(((mproc *)p)->name);
}

/* ---- Refusals and rank layout ------------------------------------------------------------------ */

/* Strategies other than dp and ps are refused before anything is measured: the scenario is
 * simulated as given (its own system, the launch's shape) and the first task of device 0 that
 * the replay has no counterpart for is named. Never returns. */
G_GNUC_NORETURN static void refuse(const comm_mpi_ctx *ctx, const sim_scenario *s)
{
  g_autoptr(GError) error = NULL;
  g_auto(sim_scenario) probe;
  sim_scenario_copy(&probe, s);
  probe.nodes = ctx->nodes;
  probe.devices_per_node = ctx->ranks_per_node;
  g_clear_pointer(&probe.trace, g_free);
  g_clear_pointer(&probe.csv, g_free);
  sim_report rep;
  g_auto(sim_outcome) out = {0};
  sim_run_opts ro = {.with_speedup = FALSE, .keep = &out};
  if (sim_simulate(&probe, &ro, &rep, &error)) {
    replay_timeline tl;
    replay__timeline_init(&tl);
    g_autoptr(GArray) rows = replay__rows_from_plan(out.plan, out.exec);
    gboolean ok = replay__read_timeline(rows, probe.strategy, &tl, &error);
    replay__timeline_clear(&tl);
    g_assert(!ok);
  }
  comm_mpi__fail_all(ctx, error);
}

/* The workers' ranks as dtsim's cluster: the first `workers` ranks (ps with dedicated servers
 * keeps the last ones for the servers), node-major. */
static void worker_layout(const comm_mpi_ctx *ctx, int workers, comm_mpi_ctx *out)
{
  *out = *ctx;
  out->size = workers;
  out->nodes = 0;
  out->ranks_per_node = 0;
  /* Nodes are numbered in order of first appearance, so the first ranks' nodes come first. */
  g_autofree int *count = g_new0(int, ctx->nodes);
  for (int r = 0; r < workers; r++) {
    int n = ctx->node_of[r];
    count[n]++;
    out->nodes = MAX(out->nodes, n + 1);
    out->ranks_per_node = MAX(out->ranks_per_node, count[n]);
  }
}

/* ---- The command ------------------------------------------------------------------------------- */

/* The keys replay would ignore, refused by name: its cluster is the ranks mpirun launched and the
 * network the measured one, and it prints a table. */
static gboolean replay_check(sim_scenario *s, GError **error)
{
  static const char *const not_here[] = {"nodes", "devices-per-node", "intra", "inter",
                                         "topology", "json"};
  if (!sim_scenario_check(s, error))
    return FALSE;
  for (size_t i = 0; i < G_N_ELEMENTS(not_here); i++)
    if (sim_scenario_given(s, not_here[i])) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  strcmp(not_here[i], "json") == 0
                      ? "%s: dtsim-mpi replay writes a table (--trace and --measured-trace for "
                        "the timelines)"
                      : "%s: dtsim-mpi replay takes its ranks and nodes from mpirun and its "
                        "network from the measurement (--fitted)",
                  sim_scenario_where(s, not_here[i]));
      return FALSE;
    }
  return TRUE;
}

int comm_mpi__cmd_replay(comm_mpi_ctx *ctx, int argc, char **argv)
{
  g_autofree char *fitted = NULL, *measured_trace = NULL;
  gboolean sleep = FALSE;
  GOptionEntry entries[] = {
      {"sleep", 0, 0, G_OPTION_ARG_NONE, &sleep,
       "sleep through compute instead of busy-waiting (frees the core on small machines)", NULL},
      {"fitted", 0, 0, G_OPTION_ARG_FILENAME, &fitted,
       "system INI from dtsim-mpi calibrate (default: calibrate first)", "FILE"},
      {"measured-trace", 0, 0, G_OPTION_ARG_FILENAME, &measured_trace,
       "write the measured timeline as a Chrome trace (--trace writes the simulated one)",
       "FILE"},
      {NULL},
  };
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  if (!comm_mpi__scenario(ctx, "[SCENARIO.ini] - replay a dp or ps iteration for real", entries,
                          SIM_CMD_RUN, replay_check, argc, argv, &s))
    return 0;
  g_autoptr(GError) error = NULL;

  /* Every output can be written, or nothing is measured (calibration takes minutes). */
  if ((measured_trace && !dt_outfile_check(measured_trace, "--measured-trace", &error)) ||
      (s.trace && !dt_outfile_check(s.trace, "--trace", &error)) ||
      (s.csv && !dt_outfile_check(s.csv, "--csv", &error)))
    comm_mpi__fail_all(ctx, error);
  /* The compute device stays the scenario's; the network becomes the measured one. */
  comm_mpi__locate(ctx);
  if (s.device == NULL) {
    comm_cluster_spec spec = {.system = s.system, .nodes = 1};
    g_autoptr(comm_topology) topo = comm_topology_build(&spec, &error);
    if (topo == NULL)
      comm_mpi__fail_all(ctx, error);
    s.device = g_strdup(comm_topology_device_kind(topo));
  }
  if (!(s.strategy->flags & SIM_STRATEGY_REPLAYABLE))
    refuse(ctx, &s);
  gboolean is_ps = (s.strategy->flags & SIM_STRATEGY_SERVERS) != 0;
  const char *tmpdir = comm_mpi__scratch(&error);
  comm_mpi__agree(ctx, tmpdir != NULL, error);

  /* Workers are every rank, except that dedicated parameter servers are the last ranks. */
  comm_ps_placement placement = is_ps ? s.ps_placement : COMM_PS_CPU;
  int workers = ctx->size;
  if (is_ps && s.ps_workers == COMM_PS_WORKER_NODE) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                "--ps-workers node: replay runs a worker per rank; use --ps-workers device");
    comm_mpi__fail_all(ctx, error);
  }
  if (is_ps && s.ps_sharding != COMM_PS_SHARD_BYTES) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                "--ps-sharding %s: replay places a tensor per layer by bytes; use --ps-sharding "
                "bytes", comm_ps_sharding_name(s.ps_sharding));
    comm_mpi__fail_all(ctx, error);
  }
  if (is_ps && placement == COMM_PS_DEDICATED) {
    if (s.ps_count >= ctx->size) {
      g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                  "--ps-placement dedicated: the %" G_GINT64_FORMAT " server(s) are the last "
                  "ranks and the workers the ranks before them: launch W + %" G_GINT64_FORMAT
                  " ranks for W workers (at least %" G_GINT64_FORMAT "; got %d)", s.ps_count,
                  s.ps_count, s.ps_count + 1, ctx->size);
      comm_mpi__fail_all(ctx, error);
    }
    workers = ctx->size - (int)s.ps_count;
  }
  comm_mpi_ctx wctx;
  worker_layout(ctx, workers, &wctx);
  g_autofree uint32_t *dtsim_rank = g_new(uint32_t, workers);
  if (!comm_mpi__dtsim_ranks(&wctx, dtsim_rank, &error))
    comm_mpi__fail_all(ctx, error);
  g_autofree int *worker_rank = g_new(int, workers);
  for (int r = 0; r < workers; r++)
    worker_rank[dtsim_rank[r]] = r;

  g_autofree char *sysfile = g_build_filename(tmpdir, "system.ini", NULL);
  if (fitted == NULL) {
    if (ctx->rank == 0)
      printf("no --fitted system given: calibrating first\n");
    comm_mpi_system sys = {0};
    comm_mpi__calibrate_run(ctx, NULL, 10, 2, ctx->rank == 0, &sys);
    sys.description = g_strdup("calibrated by dtsim-mpi replay");
    gboolean ok = comm_mpi_system_write(&sys, NULL, sysfile, &error);
    comm_mpi_system_clear(&sys);
    comm_mpi__agree(ctx, ok, error);
  }
  g_free(s.system);
  s.system = g_strdup(fitted ? fitted : sysfile);
  g_clear_pointer(&s.intra, g_free);
  g_clear_pointer(&s.inter, g_free);
  s.nodes = wctx.nodes;
  s.devices_per_node = wctx.ranks_per_node;

  /* Every rank simulates (the same deterministic run) and reads the plan and timeline it built;
   * only rank 0 writes the user's trace and CSV. */
  if (ctx->rank != 0) {
    g_clear_pointer(&s.csv, g_free);
    g_clear_pointer(&s.trace, g_free);
  }
  sim_report rep;
  g_auto(sim_outcome) out = {0};
  sim_run_opts ro = {.with_speedup = FALSE, .command_line = "dtsim-mpi replay (simulated)",
                     .keep = &out};
  gboolean ok = sim_simulate(&s, &ro, &rep, &error);
  comm_mpi__agree(ctx, ok, error);
  replay_timeline tl;
  replay__timeline_init(&tl);
  g_autoptr(GArray) rows = replay__rows_from_plan(out.plan, out.exec);
  ok = replay__read_timeline(rows, s.strategy, &tl, &error);
  comm_mpi__scratch_remove();
  comm_mpi__agree(ctx, ok, error);
  GArray *compute = tl.compute, *comms = tl.comms;
  guint iterations = tl.sim_ends->len;

  replay_comm rc = {.comms = comms, .queue = g_async_queue_new(), .sleep = sleep,
                    .done = g_new0(gint, MAX(comms->len, 1))};
  const comm_mpi_algorithm *algo = NULL;
  dp_thread dt = {.ctx = ctx, .rc = &rc, .comm = MPI_COMM_NULL};
  g_autoptr(replay_ps) ps = NULL;
  double server_Bps = 0;
  uint32_t servers = 0;
  if (is_ps) {
    g_autoptr(sim_costs) costs = sim_costs_build(&s, s.device, (uint64_t)s.batch, &error);
    comm_mpi__agree(ctx, costs != NULL, error);
    server_Bps = sim_ps_server_reduce_Bps(placement, costs);
    servers = placement == COMM_PS_COLOCATED ? (uint32_t)wctx.nodes : (uint32_t)s.ps_count;
    replay_ps_config cfg = {placement, servers, (const uint64_t *)(void *)tl.tensor_bytes->data,
                            tl.tensor_bytes->len, iterations, (uint32_t)wctx.nodes,
                            (uint32_t)wctx.ranks_per_node, worker_rank, server_Bps};
    ps = replay_ps_new(ctx, &cfg, &rc, &error);
    comm_mpi__agree(ctx, ps != NULL, error);
  } else {
    /* The algorithm the scenario simulated, forced in Open MPI when both have it. */
    algo = comm_mpi_algorithm_find(COMM_MPI_ALLREDUCE, comm_coll_algorithm_name(s.allreduce), NULL);
    comm_mpi__force(ctx, algo, TRUE);
    MPI_Comm_dup(MPI_COMM_WORLD, &dt.comm);
    uint64_t maxb = 0;
    for (guint c = 0; c < comms->len; c++)
      maxb = MAX(maxb, g_array_index(comms, replay_task, c).bytes);
    size_t maxcount = (size_t)(maxb / sizeof(float)) + (size_t)ctx->size;
    dt.send = g_new0(float, maxcount);
    dt.recv = g_new0(float, maxcount);
    dt.counts = g_new0(int, ctx->size);
    /* Warm-up outside the timed replay, which the model has no term for: one allreduce of the
     * largest bucket touches the buffers' pages and connects the ranks. */
    MPI_Allreduce(dt.send, dt.recv, (int)maxcount, MPI_FLOAT, MPI_SUM, dt.comm);
  }
  gboolean worker = ps == NULL || replay_ps_is_worker(ps);

  MPI_Barrier(MPI_COMM_WORLD);
  rc.t0 = replay__now_s();
  GThread *thread = ps ? g_thread_new("ps", replay_ps_main, ps) : g_thread_new("comm", dp_main, &dt);
  if (worker)
    replay(&rc, compute);
  g_async_queue_push(rc.queue, GUINT_TO_POINTER(REPLAY_STOP));
  g_thread_join(thread);
  if (!ps) {
    MPI_Comm_free(&dt.comm);
    comm_mpi__force(ctx, algo, FALSE);
    g_free(dt.send);
    g_free(dt.recv);
    g_free(dt.counts);
  }
  g_async_queue_unref(rc.queue);
  g_free(rc.done);

  /* An iteration ends when all its tasks have; the slowest worker's end counts. */
  g_autofree double *ends = g_new(double, iterations);
  g_autofree double *max_ends = g_new0(double, iterations);
  for (guint i = 0; i < iterations; i++)
    ends[i] = -1;
  for (int pass = 0; worker && pass < 2; pass++) {
    GArray *tasks = pass == 0 ? compute : comms;
    for (guint k = 0; k < tasks->len; k++) {
      const replay_task *t = &g_array_index(tasks, replay_task, k);
      if (t->iteration < iterations)
        ends[t->iteration] = MAX(ends[t->iteration], t->real_end_s);
    }
  }
  MPI_Allreduce(ends, max_ends, (int)iterations, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

  /* Every rank's intervals to rank 0 (NaN from ranks that only serve), and the servers'
   * aggregations. */
  guint ntasks = compute->len + comms->len;
  g_autofree double *mine = g_new(double, (gsize)ntasks * 2);
  for (guint i = 0; i < ntasks; i++) {
    const replay_task *t = i < compute->len ? &g_array_index(compute, replay_task, i)
                                            : &g_array_index(comms, replay_task, i - compute->len);
    mine[2 * i] = worker ? t->real_start_s : NAN;
    mine[2 * i + 1] = worker ? t->real_end_s : NAN;
  }
  g_autofree double *all = ctx->rank == 0 ? g_new(double, (gsize)ntasks * 2 * ctx->size) : NULL;
  MPI_Gather(mine, (int)ntasks * 2, MPI_DOUBLE, all, (int)ntasks * 2, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);
  const int rec = sizeof(replay_ps_aggregation) / sizeof(double);
  guint naggs = 0;
  const replay_ps_aggregation *aggs = ps ? replay_ps_aggregations(ps, &naggs) : NULL;
  int my_count = (int)naggs * rec;
  g_autofree int *counts = g_new0(int, ctx->size);
  g_autofree int *displs = g_new0(int, ctx->size);
  MPI_Gather(&my_count, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < ctx->size; r++) {
    displs[r] = total;
    total += counts[r];
  }
  g_autofree double *all_aggs = g_new(double, MAX(total, 1));
  MPI_Gatherv(aggs, my_count, MPI_DOUBLE, all_aggs, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);

  if (ctx->rank == 0) {
    double busy_s = 0;
    for (guint k = 0; k < compute->len; k++)
      busy_s += g_array_index(compute, replay_task, k).sim_end_s -
                g_array_index(compute, replay_task, k).sim_start_s;
    if (is_ps) {
      printf("replay of ps %s (batch %" G_GINT64_FORMAT ", %s, %u %s parameter server(s)) on "
             "%d ranks (%d worker(s) on %d node(s))\n", s.model, s.batch, s.device, servers,
             comm_ps_placement_name(placement), ctx->size, workers, wctx.nodes);
      printf("%u compute tasks (%.3f ms per iteration) %s, %u push/pull tasks per iteration, "
             "%u iteration(s)\n", compute->len, busy_s / iterations * 1e3,
             sleep ? "slept through" : "busy-waited", comms->len / iterations, iterations);
      g_autofree uint64_t *shard_bytes = g_new0(uint64_t, servers);
      g_autofree guint *shard_tensors = g_new0(guint, servers);
      for (guint t = 0; t < tl.tensor_bytes->len; t++) {
        shard_bytes[replay_ps_shard_of(ps, t)] += g_array_index(tl.tensor_bytes, uint64_t, t);
        shard_tensors[replay_ps_shard_of(ps, t)]++;
      }
      for (uint32_t k = 0; k < servers; k++)
        printf("server %u on rank %d: %u tensors, %.3f MB; aggregation waited out at the "
               "simulated %.1f GB/s\n", k, replay_ps_shard_rank(ps, k), shard_tensors[k],
               (double)shard_bytes[k] * 1e-6, server_Bps * 1e-9);
    } else {
      printf("replay of dp %s (batch %" G_GINT64_FORMAT ", %s, allreduce %s%s) on %d ranks, %d "
             "node(s)\n", s.model, s.batch, s.device, comm_coll_algorithm_name(s.allreduce),
             algo ? " forced in Open MPI" : ": Open MPI's own choice", ctx->size, ctx->nodes);
      printf("%u compute tasks (%.3f ms per iteration) %s, %u collectives per iteration, %u "
             "iteration(s)\n", compute->len, busy_s / iterations * 1e3,
             sleep ? "slept through" : "busy-waited", comms->len / iterations, iterations);
    }
    printf("%-10s %14s %14s %8s\n", "iteration", "measured_ms", "simulated_ms", "error");
    double prev = 0, sprev = 0, last_meas = 0, last_sim = 0;
    for (guint i = 0; i < iterations; i++) {
      last_meas = max_ends[i] - prev;
      last_sim = g_array_index(tl.sim_ends, double, i) - sprev;
      printf("%-10u %14.3f %14.3f %+7.1f%%\n", i, last_meas * 1e3, last_sim * 1e3,
             100 * comm_mpi_rel_error(last_sim, last_meas));
      prev = max_ends[i];
      sprev = g_array_index(tl.sim_ends, double, i);
    }
    printf("last iteration: measured %.3f ms, simulated %.3f ms (dtsim run reports %.3f ms), "
           "error %+.1f%%\n", last_meas * 1e3, last_sim * 1e3, rep.iteration_time_s * 1e3,
           100 * comm_mpi_rel_error(last_sim, last_meas));
    if (s.trace)
      printf("simulated timeline: %s\n", s.trace);
    if (measured_trace) {
      /* One process per worker rank (compute and comm tracks), one per server shard. */
      g_autoptr(GArray) procs = g_array_new(FALSE, TRUE, sizeof(mproc));
      g_array_set_clear_func(procs, mproc_clear);
      g_autoptr(GArray) spans = g_array_new(FALSE, FALSE, sizeof(mspan));
      for (int r = 0; r < ctx->size; r++) {
        const double *times = all + (gsize)r * ntasks * 2;
        if (ntasks > 0 && isnan(times[0]))
          continue;
        mproc p = {g_strdup_printf("rank %d (measured)", r), SIM_PROC_DEVICE, r,
                   {"compute", "comm"}};
        g_array_append_val(procs, p);
        for (guint i = 0; i < ntasks; i++) {
          gboolean is_comp = i < compute->len;
          const replay_task *t = is_comp ? &g_array_index(compute, replay_task, i)
                                         : &g_array_index(comms, replay_task, i - compute->len);
          mspan sp = {procs->len - 1, is_comp ? 0 : 1, t->name, is_comp ? "compute" : "comm",
                      is_comp ? 0 : t->bytes, times[2 * i], times[2 * i + 1]};
          g_array_append_val(spans, sp);
        }
      }
      g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
      guint first_server = procs->len;
      for (uint32_t k = 0; k < servers; k++) {
        mproc p = {g_strdup_printf("parameter server %u (rank %d, measured)", k,
                                   replay_ps_shard_rank(ps, k)),
                   SIM_PROC_PARAM_SERVER, ctx->size + (int)k, {"aggregate and update", NULL}};
        g_array_append_val(procs, p);
      }
      for (int r = 0; r < ctx->size; r++) {
        for (int i = 0; i < counts[r]; i += rec) {
          const replay_ps_aggregation *a =
              (const replay_ps_aggregation *)(void *)(all_aggs + displs[r] + i);
          const char *layer = g_ptr_array_index(tl.tensor_names, (guint)a->tensor);
          char *name = g_strdup_printf("aggregate %s", layer);
          g_ptr_array_add(names, name);
          mspan sp = {first_server + (guint)a->shard, 0, name, "ps",
                      g_array_index(tl.tensor_bytes, uint64_t, (guint)a->tensor) * (uint64_t)workers,
                      a->start_s, a->end_s};
          g_array_append_val(spans, sp);
        }
      }
      if (!write_measured_trace(measured_trace, procs, spans, &error))
        comm_mpi__fail_here(ctx, error);
      printf("measured timeline: %s\n", measured_trace);
    }
  }
  /* The servers' communicators are freed on every rank, together. */
  g_clear_pointer(&ps, replay_ps_free);
  replay__timeline_clear(&tl);
  return 0;
}
