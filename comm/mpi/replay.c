/* dtsim-mpi replay: runs one simulated data-parallel iteration for real. Every rank simulates
 * the scenario on the fitted system (compute on the scenario's device, communication on the
 * measured network), reads device 0's timeline from the per-task CSV, then replays it: compute
 * tasks become busy-waits of their simulated durations on the main thread (or sleeps, --sleep,
 * when ranks and their communication threads outnumber the cores), and the gradient
 * buckets' collectives run for real, in order, on a communication thread (the device's comm
 * stream), started when the compute task they follow has finished. Dependencies of the dp
 * strategy: a bucket's collective follows the backward task that completed its gradients (the
 * last compute task ending before the collective's simulated start), and the optimizer update
 * (category "update") waits for every collective issued before it. Measured and simulated
 * iteration times are compared; both timelines are written as Chrome traces (the simulated one
 * by dtsim's own writer through --trace, the measured one through the same writer fed with the
 * measured intervals), so they open side by side in Perfetto.
 *
 * The communication thread is the only one calling MPI while the timeline runs, so
 * MPI_THREAD_SERIALIZED is enough (requested in main.c). */
#include "chrome.h"
#include "comm_mpi_run.h"
#include "comm_net.h"
#include "simulate.h"
#include "util.h"

#include <glib/gstdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef enum { TASK_COMPUTE, TASK_COLLECTIVE } task_kind;

typedef struct {
  char *name;
  char *category;
  task_kind kind;
  comm_mpi_op op;         /* collectives */
  double sim_start_s, sim_end_s;
  uint64_t bytes;
  int after;              /* collectives: index of the compute task they follow, -1: none */
  double real_start_s, real_end_s;
} task;

static void task_clear(gpointer p)
{
  task *t = p;
  g_free(t->name);
  g_free(t->category);
}

/* Splits one CSV line: fields separated by commas, a field in double quotes may hold commas. */
static GPtrArray *csv_fields(const char *line)
{
  GPtrArray *f = g_ptr_array_new_with_free_func(g_free);
  GString *cur = g_string_new(NULL);
  gboolean quoted = FALSE;
  for (const char *p = line; *p && *p != '\n' && *p != '\r'; p++) {
    if (*p == '"')
      quoted = !quoted;
    else if (*p == ',' && !quoted) {
      g_ptr_array_add(f, g_string_free(cur, FALSE));
      cur = g_string_new(NULL);
    } else
      g_string_append_c(cur, *p);
  }
  g_ptr_array_add(f, g_string_free(cur, FALSE));
  return f;
}

static int by_start(gconstpointer a, gconstpointer b)
{
  const task *x = a, *y = b;
  return (x->sim_start_s > y->sim_start_s) - (x->sim_start_s < y->sim_start_s);
}

/* Device 0's compute and collective tasks from the per-task CSV of `dtsim run --csv`
 * (columns task,name,kind,category,unit,stream,start_s,end_s,duration_s,bytes,flops), each
 * list in order of simulated start. */
static gboolean read_timeline(const char *path, GArray *compute, GArray *colls, GError **error)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, error))
    return FALSE;
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_autofree char *unit0 = NULL;
  for (char **l = lines + 1; *l && **l; l++) {
    g_autoptr(GPtrArray) f = csv_fields(*l);
    if (f->len < 11) {
      g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s: malformed row '%s'", path, *l);
      return FALSE;
    }
    const char *name = f->pdata[1], *kind = f->pdata[2], *cat = f->pdata[3], *unit = f->pdata[4];
    const char *stream = f->pdata[5];
    if (unit0 == NULL && strcmp(stream, "compute") == 0)
      unit0 = g_strdup(unit);
    if (unit0 == NULL || strcmp(unit, unit0) != 0)
      continue;
    task t = {.sim_start_s = g_ascii_strtod(f->pdata[6], NULL),
              .sim_end_s = g_ascii_strtod(f->pdata[7], NULL),
              .bytes = g_ascii_strtoull(f->pdata[9], NULL, 10), .after = -1};
    if (strcmp(stream, "compute") == 0) {
      t.kind = TASK_COMPUTE;
    } else if (strcmp(kind, "collective") == 0) {
      t.kind = TASK_COLLECTIVE;
      /* The collective is named after its operation ("allreduce bucket 3 (25.0 MiB)"). */
      g_auto(GStrv) words = g_strsplit(name, " ", 2);
      if (!comm_mpi_op_parse(words[0], &t.op, NULL)) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "communication task '%s' is not a collective dtsim-mpi can replay", name);
        return FALSE;
      }
    } else if (strcmp(stream, "comm") == 0) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "communication task '%s' (%s) cannot be replayed: only collectives can "
                  "(the dp strategy)", name, kind);
      return FALSE;
    } else {
      continue; /* host-to-device copies overlap compute; their time is not replayed */
    }
    t.name = g_strdup(name);
    t.category = g_strdup(cat);
    g_array_append_val(t.kind == TASK_COMPUTE ? compute : colls, t);
  }
  g_array_sort(compute, by_start);
  g_array_sort(colls, by_start);
  gboolean has_update = FALSE;
  for (guint k = 0; k < compute->len; k++)
    has_update |= strcmp(g_array_index(compute, task, k).category, "update") == 0;
  if (!has_update) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: device 0 has no optimizer update task: no iteration to replay", path);
    return FALSE;
  }
  /* A collective follows the last compute task that ended by its simulated start. */
  for (guint c = 0, k = 0; c < colls->len; c++) {
    task *ct = &g_array_index(colls, task, c);
    while (k < compute->len && g_array_index(compute, task, k).sim_end_s <= ct->sim_start_s + 1e-12)
      k++;
    ct->after = (int)k - 1;
  }
  return TRUE;
}

static double now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- The communication thread ------------------------------------------------------------- */

typedef struct {
  const comm_mpi_ctx *ctx;
  MPI_Comm comm;
  GArray *colls;             /* task */
  GAsyncQueue *queue;        /* indices + 1 into colls; STOP ends the thread */
  gint done;                 /* collectives finished, in order */
  double t0;
  float *send, *recv;
  int *counts;
} comm_thread;

/* The queue refuses NULL, so indices travel as index + 1 and the end as G_MAXUINT. */
#define STOP G_MAXUINT

static gpointer comm_main(gpointer data)
{
  comm_thread *ct = data;
  for (;;) {
    guint idx = GPOINTER_TO_UINT(g_async_queue_pop(ct->queue));
    if (idx == STOP)
      break;
    task *t = &g_array_index(ct->colls, task, idx - 1);
    int p = ct->ctx->size;
    int count = (int)MAX(t->bytes / sizeof(float) / (uint64_t)p * (uint64_t)p, (uint64_t)p);
    t->real_start_s = now_s() - ct->t0;
    switch (t->op) {
    case COMM_MPI_ALLREDUCE:
      MPI_Allreduce(ct->send, ct->recv, count, MPI_FLOAT, MPI_SUM, ct->comm);
      break;
    case COMM_MPI_ALLGATHER:
      MPI_Allgather(ct->send, count / p, MPI_FLOAT, ct->recv, count / p, MPI_FLOAT, ct->comm);
      break;
    case COMM_MPI_REDUCE_SCATTER:
      for (int r = 0; r < p; r++)
        ct->counts[r] = count / p;
      MPI_Reduce_scatter(ct->send, ct->recv, ct->counts, MPI_FLOAT, MPI_SUM, ct->comm);
      break;
    case COMM_MPI_BROADCAST:
      MPI_Bcast(ct->send, count, MPI_FLOAT, 0, ct->comm);
      break;
    default:
      g_assert_not_reached();
    }
    t->real_end_s = now_s() - ct->t0;
    g_atomic_int_inc(&ct->done);
  }
  return NULL;
}

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
  while (now_s() < t_s)
    ;
}

/* Waits until `count` collectives have finished: spinning, or polling every 20 us. */
static void wait_collectives(comm_thread *ct, guint count, gboolean sleep)
{
  while ((guint)g_atomic_int_get(&ct->done) < count)
    if (sleep)
      g_usleep(20);
}

/* Runs the timeline once on this rank; times are relative to t0. Compute tasks follow a
 * schedule: each ends its duration after the previous one's scheduled end (or after the
 * collectives it waited for), so a thread descheduled past a deadline catches up instead of
 * adding the delay to every later task. */
static void replay(comm_thread *ct, GArray *compute, gboolean sleep)
{
  guint next_coll = 0, issued = 0;
  double end = now_s();
  for (guint k = 0; k < compute->len; k++) {
    task *t = &g_array_index(compute, task, k);
    if (strcmp(t->category, "update") == 0 && (guint)g_atomic_int_get(&ct->done) < issued) {
      wait_collectives(ct, issued, sleep);
      end = MAX(end, now_s());
    }
    t->real_start_s = end - ct->t0;
    end += t->sim_end_s - t->sim_start_s;
    wait_until(end, sleep);
    t->real_end_s = end - ct->t0;
    while (next_coll < ct->colls->len &&
           g_array_index(ct->colls, task, next_coll).after <= (int)k) {
      g_async_queue_push(ct->queue, GUINT_TO_POINTER(next_coll + 1));
      next_coll++;
      issued++;
    }
  }
  for (; next_coll < ct->colls->len; next_coll++)
    g_async_queue_push(ct->queue, GUINT_TO_POINTER(next_coll + 1));
  wait_collectives(ct, ct->colls->len, sleep);
}

/* ---- The measured trace --------------------------------------------------------------------- */

typedef struct {
  sim_time_ps at;
  int begin;      /* 0: end (first at equal times), 1: begin */
  int rank;
  guint index;    /* into the rank's task list: compute first, then collectives */
} trace_event;

static int by_time(gconstpointer a, gconstpointer b)
{
  const trace_event *x = a, *y = b;
  if (x->at != y->at)
    return (x->at > y->at) - (x->at < y->at);
  if (x->begin != y->begin)
    return x->begin - y->begin;
  if (x->rank != y->rank)
    return x->rank - y->rank;
  return (x->index > y->index) - (x->index < y->index);
}

typedef struct {
  GArray *compute, *colls;
  sim_track_id *tracks;   /* 2 per rank: compute, comm */
  uint64_t *span_ids;     /* per rank and task */
  guint ntasks;
} trace_state;

static void on_trace_event(sim_engine *engine, void *data, uint64_t arg)
{
  trace_state *ts = data;
  const trace_event *e = (const trace_event *)(uintptr_t)arg;
  gboolean is_comp = e->index < ts->compute->len;
  const task *t = is_comp ? &g_array_index(ts->compute, task, e->index)
                          : &g_array_index(ts->colls, task, e->index - ts->compute->len);
  uint64_t *id = &ts->span_ids[(gsize)e->rank * ts->ntasks + e->index];
  if (e->begin)
    *id = sim_engine_span_begin(engine, ts->tracks[2 * e->rank + (is_comp ? 0 : 1)], t->name,
                                is_comp ? "compute" : "comm", is_comp ? 0 : t->bytes, 0);
  else
    sim_engine_span_end(engine, *id);
}

/* Writes the measured intervals of every rank (times[rank][task][start, end], seconds)
 * through dtsim's Chrome trace writer: an engine replays them as spans at their times. */
static gboolean write_measured_trace(const char *path, int ranks, GArray *compute, GArray *colls,
                                     const double *times, GError **error)
{
  g_autoptr(sim_engine) engine = sim_engine_new();
  g_autoptr(trace_chrome) trace = trace_chrome_new(path, error);
  if (trace == NULL)
    return FALSE;
  trace_chrome_set_info(trace, "command", "dtsim-mpi replay (measured)");
  trace_chrome_attach(trace, engine);
  guint ntasks = compute->len + colls->len;
  trace_state ts = {compute, colls, g_new(sim_track_id, 2 * ranks),
                    g_new0(uint64_t, (gsize)ranks * ntasks), ntasks};
  for (int r = 0; r < ranks; r++) {
    g_autofree char *name = g_strdup_printf("rank %d (measured)", r);
    sim_proc_id proc = sim_engine_add_proc(engine, SIM_PROC_DEVICE, name, r);
    ts.tracks[2 * r] = sim_engine_add_track(engine, proc, "compute", 0);
    ts.tracks[2 * r + 1] = sim_engine_add_track(engine, proc, "comm", 1);
  }
  g_autoptr(GArray) events = g_array_new(FALSE, FALSE, sizeof(trace_event));
  for (int r = 0; r < ranks; r++)
    for (guint i = 0; i < ntasks; i++)
      for (int b = 0; b < 2; b++) {
        double s = times[((gsize)r * ntasks + i) * 2 + (b ? 0 : 1)];
        trace_event e = {sim_time_from_s(s < 0 ? 0 : s), b, r, i};
        g_array_append_val(events, e);
      }
  g_array_sort(events, by_time);
  for (guint i = 0; i < events->len; i++)
    sim_engine_schedule_at(engine, g_array_index(events, trace_event, i).at, on_trace_event, &ts,
                           (uint64_t)(uintptr_t)&g_array_index(events, trace_event, i));
  sim_engine_run(engine);
  sim_engine_finish(engine);
  gboolean ok = trace_chrome_close(trace, error);
  g_free(ts.tracks);
  g_free(ts.span_ids);
  return ok;
}

/* ---- The command ---------------------------------------------------------------------------- */

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
  g_autoptr(GOptionContext) octx = g_option_context_new("[SCENARIO.ini] - replay a dp iteration for real");
  g_option_context_add_main_entries(octx, entries, NULL);
  g_autoptr(sim_scenario_opts) so = sim_scenario_opts_new(octx, SIM_OPTS_RUN);
  g_autoptr(GError) error = NULL;
  /* One positional argument is allowed here: the scenario file. */
  g_option_context_set_help_enabled(octx, FALSE);
  char *scenario_file = NULL;
  if (argc >= 2 && argv[1][0] != '-') {
    scenario_file = argv[1];
    argv[1] = argv[0];
    argv++;
    argc--;
  }
  if (!comm_mpi__parse(ctx, octx, &argc, &argv))
    return 0;
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  if ((scenario_file && !sim_scenario_load(&s, scenario_file, SIM_OPTS_RUN, &error)) ||
      !sim_scenario_apply_options(&s, so, &error))
    comm_mpi__fail_all(ctx, error);

  if (strcmp(s.strategy, "dp") != 0) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                "--strategy %s: only dp can be replayed (its gradient buckets are collectives; "
                "parameter-server pushes and pulls and pipeline activations are not replayed)",
                s.strategy);
    comm_mpi__fail_all(ctx, error);
  }
  /* The compute device stays the scenario's; the network becomes the measured one. */
  comm_mpi__locate(ctx);
  if (s.device == NULL) {
    comm_cluster_spec spec = {.system = s.system, .nodes = 1};
    g_autoptr(comm_topology) topo = comm_topology_build(&spec, &error);
    if (topo == NULL)
      comm_mpi__fail_all(ctx, error);
    s.device = g_strdup(comm_topology_device_kind(topo));
  }
  g_autofree char *tmpdir = g_dir_make_tmp("dtsim-mpi-XXXXXX", &error);
  comm_mpi__agree(ctx, tmpdir != NULL, error);
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
  s.nodes = ctx->nodes;
  s.devices_per_node = ctx->ranks_per_node;
  g_autofree uint32_t *dtsim_rank = g_new(uint32_t, ctx->size);
  if (!comm_mpi__dtsim_ranks(ctx, dtsim_rank, &error))
    comm_mpi__fail_all(ctx, error);

  /* Every rank simulates (the same deterministic run) and reads its own copy of the per-task
   * CSV; only rank 0 writes the user's trace and CSV. */
  g_autofree char *user_csv = s.csv;
  g_autofree char *user_trace = s.trace;
  g_autofree char *csv = g_build_filename(tmpdir, "tasks.csv", NULL);
  s.csv = g_strdup(csv);
  s.trace = ctx->rank == 0 && user_trace ? g_strdup(user_trace) : NULL;
  sim_report rep;
  sim_run_opts ro = {.with_speedup = FALSE, .command_line = "dtsim-mpi replay (simulated)"};
  gboolean ok = sim_simulate(&s, &ro, &rep, &error);
  comm_mpi__agree(ctx, ok, error);
  if (ctx->rank == 0 && user_csv) {
    g_autofree char *rows = NULL;
    gsize len = 0;
    g_autoptr(dt_outfile) out = NULL;
    if (!g_file_get_contents(csv, &rows, &len, &error) ||
        (out = dt_outfile_open(user_csv, &error)) == NULL ||
        fwrite(rows, 1, len, dt_outfile_stream(out)) != len || !dt_outfile_commit(out, &error))
      comm_mpi__fail_here(ctx, error);
  }
  g_autoptr(GArray) compute = g_array_new(FALSE, TRUE, sizeof(task));
  g_autoptr(GArray) colls = g_array_new(FALSE, TRUE, sizeof(task));
  g_array_set_clear_func(compute, task_clear);
  g_array_set_clear_func(colls, task_clear);
  ok = read_timeline(csv, compute, colls, &error);
  g_unlink(csv);
  g_unlink(sysfile);
  g_rmdir(tmpdir);
  comm_mpi__agree(ctx, ok, error);

  /* The algorithm the scenario simulated, forced in Open MPI when both have it. */
  const comm_mpi_algorithm *algo = comm_mpi_algorithm_find(COMM_MPI_ALLREDUCE, s.allreduce, NULL);
  comm_mpi__force(ctx, algo, TRUE);
  comm_thread ct = {.ctx = ctx, .comm = MPI_COMM_NULL, .colls = colls, .queue = g_async_queue_new()};
  MPI_Comm_dup(MPI_COMM_WORLD, &ct.comm);
  uint64_t maxb = 0;
  for (guint c = 0; c < colls->len; c++)
    maxb = MAX(maxb, g_array_index(colls, task, c).bytes);
  size_t maxcount = (size_t)(maxb / sizeof(float)) + (size_t)ctx->size;
  ct.send = g_new0(float, maxcount);
  ct.recv = g_new0(float, maxcount);
  ct.counts = g_new0(int, ctx->size);

  MPI_Barrier(MPI_COMM_WORLD);
  ct.t0 = now_s();
  GThread *thread = g_thread_new("comm", comm_main, &ct);
  replay(&ct, compute, sleep);
  g_async_queue_push(ct.queue, GUINT_TO_POINTER(STOP));
  g_thread_join(thread);
  MPI_Comm_free(&ct.comm);
  comm_mpi__force(ctx, algo, FALSE);
  g_async_queue_unref(ct.queue);
  g_free(ct.send);
  g_free(ct.recv);
  g_free(ct.counts);

  /* Iteration boundaries: the ends of the "update" tasks; the slowest rank's. */
  g_autoptr(GArray) ends = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) sim_ends = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint k = 0; k < compute->len; k++) {
    const task *t = &g_array_index(compute, task, k);
    if (strcmp(t->category, "update") == 0) {
      g_array_append_val(ends, t->real_end_s);
      g_array_append_val(sim_ends, t->sim_end_s);
    }
  }
  g_autofree double *max_ends = g_new0(double, MAX(ends->len, 1));
  MPI_Allreduce(ends->data, max_ends, (int)ends->len, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

  guint ntasks = compute->len + colls->len;
  g_autofree double *mine = g_new(double, (gsize)ntasks * 2);
  for (guint i = 0; i < ntasks; i++) {
    const task *t = i < compute->len ? &g_array_index(compute, task, i)
                                     : &g_array_index(colls, task, i - compute->len);
    mine[2 * i] = t->real_start_s;
    mine[2 * i + 1] = t->real_end_s;
  }
  g_autofree double *all = ctx->rank == 0 ? g_new(double, (gsize)ntasks * 2 * ctx->size) : NULL;
  MPI_Gather(mine, (int)ntasks * 2, MPI_DOUBLE, all, (int)ntasks * 2, MPI_DOUBLE, 0,
             MPI_COMM_WORLD);

  if (ctx->rank == 0) {
    printf("replay of %s %s (batch %" G_GINT64_FORMAT ", %s, allreduce %s%s) on %d ranks, %d "
           "node(s)\n", s.strategy, s.model, s.batch, s.device, s.allreduce,
           algo ? " forced in Open MPI" : ": Open MPI's own choice", ctx->size, ctx->nodes);
    double busy_s = 0;
    for (guint k = 0; k < compute->len; k++)
      busy_s += g_array_index(compute, task, k).sim_end_s - g_array_index(compute, task, k).sim_start_s;
    printf("%u compute tasks (%.3f ms per iteration) %s, %u collectives per iteration, %u "
           "iteration(s)\n", compute->len, busy_s / MAX(ends->len, 1) * 1e3,
           sleep ? "slept through" : "busy-waited", colls->len / MAX(ends->len, 1), ends->len);
    printf("%-10s %14s %14s %8s\n", "iteration", "measured_ms", "simulated_ms", "error");
    double prev = 0, sprev = 0, last_meas = 0, last_sim = 0;
    for (guint i = 0; i < ends->len; i++) {
      last_meas = max_ends[i] - prev;
      last_sim = g_array_index(sim_ends, double, i) - sprev;
      printf("%-10u %14.3f %14.3f %+7.1f%%\n", i, last_meas * 1e3, last_sim * 1e3,
             100 * comm_mpi_rel_error(last_sim, last_meas));
      prev = max_ends[i];
      sprev = g_array_index(sim_ends, double, i);
    }
    printf("last iteration: measured %.3f ms, simulated %.3f ms (dtsim run reports %.3f ms), "
           "error %+.1f%%\n", last_meas * 1e3, last_sim * 1e3, rep.iteration_time_s * 1e3,
           100 * comm_mpi_rel_error(last_sim, last_meas));
    if (user_trace)
      printf("simulated timeline: %s\n", user_trace);
    if (measured_trace) {
      if (!write_measured_trace(measured_trace, ctx->size, compute, colls, all, &error))
        comm_mpi__fail_here(ctx, error);
      printf("measured timeline: %s\n", measured_trace);
    }
  }
  return 0;
}
