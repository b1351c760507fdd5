/* dtsim-mpi validate: times allreduce, allgather, reduce-scatter and broadcast with Open MPI's
 * algorithm forced to the one the model prices, checks that Open MPI really ran it, and prints
 * measured time, predicted time and error per row, with the geometric-mean error.
 *
 * Forcing: coll_tuned_use_dynamic_rules is set before MPI_Init (main.c); for each algorithm the
 * MCA variable coll_tuned_<op>_algorithm is written through MPI_T, and a communicator duplicated
 * afterwards gets a tuned module that reads the forced value when it is built. The check: the
 * interposers of spy.c record which ompi_coll_base_* function carried out the call.
 *
 * Predictions: dtsim's own model (comm/coll on the topology built from the fitted system file),
 * with the ranks numbered as dtsim numbers them, plus the host-side work measured here for
 * each size (host.c): the reduction rate, and Open MPI's local copies and fresh temporary pages
 * as the collective's launch cost. Each row also gives the ranks' CPU share, which tells a row
 * measured while another process held a core. */
#include "comm_mpi_run.h"
#include "util.h"

#include <math.h>
#include <string.h>
#include <glib/gstdio.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_SIZES "1K..64M"

typedef struct {
  const comm_mpi_algorithm *algo;
  uint64_t bytes;
  double measured_s, predicted_s;
  char ran[256];
  gboolean ran_ok;
  double faults;           /* fresh pages touched per call, slowest rank */
  double cpu_share;        /* median over repetitions of the least CPU share of a rank */
  comm_mpi_row_costs costs;/* what the row adds to the network model */
} row;

/* Host-side rates measured for one size of the row list. */
typedef struct {
  uint64_t bytes;
  double reduce_Bps, copy_Bps;
} size_rates;

/* Writes `value` to the MPI_T control variable `name`; FALSE (with an error) when the variable
 * is missing or read-only, as with an MPI other than Open MPI 4.x. */
static gboolean cvar_write_int(const char *name, int value, GError **error)
{
  int index, count, readback = -1;
  MPI_T_cvar_handle h;
  if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL,
                "the MPI library has no control variable %s (needs Open MPI 4.x with the tuned "
                "collective component)", name);
    return FALSE;
  }
  if (MPI_T_cvar_handle_alloc(index, NULL, &h, &count) != MPI_SUCCESS ||
      MPI_T_cvar_write(h, &value) != MPI_SUCCESS || MPI_T_cvar_read(h, &readback) != MPI_SUCCESS ||
      readback != value) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "could not set %s to %d through MPI_T",
                name, value);
    return FALSE;
  }
  MPI_T_cvar_handle_free(&h);
  return TRUE;
}

/* Buffers for the largest row; floats so that reductions do real arithmetic. */
typedef struct {
  float *send, *recv;
  int *counts;
} buffers;

/* One call of the collective on `comm` with `count` floats in total. */
static void run_once(const comm_mpi_ctx *ctx, comm_mpi_op op, MPI_Comm comm, buffers *b, int count)
{
  int block = count / ctx->size;
  switch (op) {
  case COMM_MPI_ALLREDUCE:
    MPI_Allreduce(b->send, b->recv, count, MPI_FLOAT, MPI_SUM, comm);
    break;
  case COMM_MPI_ALLGATHER:
    MPI_Allgather(b->send, block, MPI_FLOAT, b->recv, block, MPI_FLOAT, comm);
    break;
  case COMM_MPI_REDUCE_SCATTER:
    for (int r = 0; r < ctx->size; r++)
      b->counts[r] = block;
    MPI_Reduce_scatter(b->send, b->recv, b->counts, MPI_FLOAT, MPI_SUM, comm);
    break;
  case COMM_MPI_BROADCAST:
    MPI_Bcast(b->send, count, MPI_FLOAT, 0, comm);
    break;
  default:
    g_assert_not_reached();
  }
}

/* Floats moved for a row of `bytes`: a whole number of blocks of at least one float per rank. */
static int row_count(const comm_mpi_ctx *ctx, uint64_t bytes)
{
  uint64_t count = bytes / sizeof(float);
  count -= count % (uint64_t)ctx->size;
  return (int)MAX(count, (uint64_t)ctx->size);
}

void comm_mpi__force(const comm_mpi_ctx *ctx, const comm_mpi_algorithm *algo, gboolean on)
{
  if (algo == NULL)
    return;
  g_autoptr(GError) error = NULL;
  gboolean ok = cvar_write_int(comm_mpi_op_cvar(algo->op), on ? algo->ompi_id : 0, &error);
  for (int i = 0; ok && i < (int)G_N_ELEMENTS(algo->extra) && algo->extra[i].cvar; i++)
    ok = cvar_write_int(algo->extra[i].cvar, on ? algo->extra[i].value : 0, &error);
  comm_mpi__agree(ctx, ok, error);
}

static gboolean ran_as_forced(const comm_mpi_algorithm *algo)
{
  if (!comm_mpi__spy_saw(algo->base_fn))
    return FALSE;
  for (int i = 0; i < (int)G_N_ELEMENTS(algo->extra) && algo->extra[i].cvar; i++)
    if (algo->extra[i].base_fn && !comm_mpi__spy_saw(algo->extra[i].base_fn))
      return FALSE;
  return TRUE;
}

static void measure_row(const comm_mpi_ctx *ctx, MPI_Comm comm, buffers *b, row *r, int reps,
                        int warmup)
{
  int count = row_count(ctx, r->bytes);
  for (int i = 0; i < warmup; i++)
    run_once(ctx, r->algo->op, comm, b, count);
  /* What ran: the functions entered during one more call, checked on every rank. */
  comm_mpi__spy_reset();
  long faults0 = comm_mpi__minor_faults();
  run_once(ctx, r->algo->op, comm, b, count);
  /* The pages this call touched for the first time: Open MPI's temporaries when the allocator
   * mapped them afresh (glibc maps every block of 32 MiB or more anew). */
  double faults = (double)(comm_mpi__minor_faults() - faults0);
  MPI_Allreduce(&faults, &r->faults, 1, MPI_DOUBLE, MPI_MAX, comm);
  int ok = ran_as_forced(r->algo), all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
  r->ran_ok = all_ok;
  g_strlcpy(r->ran, comm_mpi__spy_seen(), sizeof r->ran);
  if (r->ran[0] == '\0')
    g_strlcpy(r->ran, "(no coll/base function: another component ran it)", sizeof r->ran);

  g_autofree double *t = g_new(double, reps);
  g_autofree double *share = g_new(double, reps);
  for (int i = 0; i < reps; i++) {
    /* A barrier lines the ranks up; the collective's time is its slowest rank's. */
    MPI_Barrier(comm);
    struct timespec c0, c1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    double t0 = MPI_Wtime();
    run_once(ctx, r->algo->op, comm, b, count);
    double mine = MPI_Wtime() - t0;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    /* A rank polls its transport while it waits, so it runs all the time unless another
     * process takes its core: the share of the call's wall time it ran tells. */
    double cpu = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    double my_share = mine > 0 ? MIN(1.0, cpu / mine) : 1.0;
    MPI_Allreduce(&mine, &t[i], 1, MPI_DOUBLE, MPI_MAX, comm);
    MPI_Allreduce(&my_share, &share[i], 1, MPI_DOUBLE, MPI_MIN, comm);
  }
  r->measured_s = comm_mpi_median(t, (size_t)reps);
  r->cpu_share = comm_mpi_median(share, (size_t)reps);
}

static void print_table(FILE *f, const row *rows, size_t n, gboolean markdown)
{
  if (markdown)
    fprintf(f, "| collective | algorithm | Open MPI | bytes | measured (us) | predicted (us) "
               "| of which host (us) | error | CPU share | ran |\n"
               "|---|---|---|---:|---:|---:|---:|---:|---:|---|\n");
  else
    fprintf(f, "%-14s %-18s %-22s %10s %13s %14s %9s %8s %5s  %s\n", "collective", "algorithm",
            "open-mpi", "bytes", "measured_us", "predicted_us", "host_us", "error", "cpu%",
            "ran");
  for (size_t i = 0; i < n; i++) {
    const row *r = &rows[i];
    g_autofree char *ompi = g_strdup_printf("%d:%s", r->algo->ompi_id, r->algo->ompi_name);
    double err = 100 * comm_mpi_rel_error(r->predicted_s, r->measured_s);
    const char *ran = r->ran_ok ? "yes" : "NO";
    if (markdown)
      fprintf(f, "| %s | %s | %s | %" G_GUINT64_FORMAT " | %.2f | %.2f | %.2f | %+.1f%% | %.0f%% "
                 "| %s |\n",
              comm_mpi_op_name(r->algo->op), r->algo->name, ompi, r->bytes, r->measured_s * 1e6,
              r->predicted_s * 1e6, r->costs.host_s * 1e6, err, 100 * r->cpu_share, ran);
    else
      fprintf(f, "%-14s %-18s %-22s %10" G_GUINT64_FORMAT " %13.2f %14.2f %9.2f %+7.1f%% %4.0f%%  "
                 "%s\n",
              comm_mpi_op_name(r->algo->op), r->algo->name, ompi, r->bytes, r->measured_s * 1e6,
              r->predicted_s * 1e6, r->costs.host_s * 1e6, err, 100 * r->cpu_share, ran);
  }
}

/* Geometric-mean error of the rows of one algorithm (algo NULL: all rows). */
static double geomean(const row *rows, size_t n, const comm_mpi_algorithm *algo, uint64_t min_bytes)
{
  g_autofree double *pred = g_new(double, n);
  g_autofree double *meas = g_new(double, n);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if ((algo && rows[i].algo != algo) || rows[i].bytes < min_bytes)
      continue;
    pred[k] = rows[i].predicted_s;
    meas[k++] = rows[i].measured_s;
  }
  return k ? comm_mpi_geomean_error(pred, meas, k) : NAN;
}

static void print_summary(FILE *f, const row *rows, size_t n, gboolean markdown)
{
  if (markdown)
    fprintf(f, "\n| collective | algorithm | geometric-mean error | same, rows >= 256 KiB |\n"
               "|---|---|---:|---:|\n");
  const comm_mpi_algorithm *last = NULL;
  for (size_t i = 0; i < n; i++) {
    if (rows[i].algo == last)
      continue;
    last = rows[i].algo;
    double all = geomean(rows, n, last, 0), big = geomean(rows, n, last, 256 * 1024);
    if (markdown)
      fprintf(f, "| %s | %s | %.1f%% | %.1f%% |\n", comm_mpi_op_name(last->op), last->name,
              100 * all, 100 * big);
    else
      fprintf(f, "geomean error %-14s %-18s %6.1f%%   (>= 256 KiB: %.1f%%)\n",
              comm_mpi_op_name(last->op), last->name, 100 * all, 100 * big);
  }
  double all = geomean(rows, n, NULL, 0);
  if (markdown)
    fprintf(f, "| all | all | **%.1f%%** | %.1f%% |\n", 100 * all,
            100 * geomean(rows, n, NULL, 256 * 1024));
  else
    fprintf(f, "geomean error over all %zu rows: %.1f%%\n", n, 100 * all);
}

static gboolean write_csv(const row *rows, size_t n, int ranks, int nodes, const char *path,
                          GError **error)
{
  g_autoptr(dt_outfile) out = dt_outfile_open(path, error);
  if (out == NULL)
    return FALSE;
  FILE *f = dt_outfile_stream(out);
  fprintf(f, "collective,algorithm,ompi_algorithm,ompi_id,ranks,nodes,bytes,measured_s,"
             "predicted_s,error,ran_requested,ran,host_s,reduce_Bps,fresh_pages,cpu_share\n");
  for (size_t i = 0; i < n; i++) {
    const row *r = &rows[i];
    fprintf(f, "%s,%s,%s,%d,%d,%d,%" G_GUINT64_FORMAT ",%.9e,%.9e,%.6f,%s,%s,%.9e,%.6e,%.0f,%.4f\n",
            comm_mpi_op_name(r->algo->op), r->algo->name, r->algo->ompi_name, r->algo->ompi_id,
            ranks, nodes, r->bytes, r->measured_s, r->predicted_s,
            comm_mpi_rel_error(r->predicted_s, r->measured_s), r->ran_ok ? "yes" : "no", r->ran,
            r->costs.host_s, r->costs.reduce_Bps, r->faults, r->cpu_share);
  }
  return dt_outfile_commit(out, error);
}

static gboolean write_report(const comm_mpi_ctx *ctx, const char *model, const char *system_src,
                             const comm_mpi_fabric *intra, const comm_mpi_fabric *inter,
                             const size_rates *rates, guint nrates, double touch_s,
                             const row *rows, size_t n, int reps, const char *path,
                             GError **error)
{
  g_autoptr(dt_outfile) out = dt_outfile_open(path, error);
  if (out == NULL)
    return FALSE;
  FILE *f = dt_outfile_stream(out);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  fprintf(f, "# dtsim-mpi validate\n\n"
             "%d ranks on %d node(s) (host %s); median of %d repetitions after warm-up; the\n"
             "time of a repetition is its slowest rank's. Predictions: %s of the system\n"
             "%s, plus the host-side work measured here for each size: reductions at the\n"
             "rate of MPI_Reduce_local, and, before the transfers, Open MPI's local copies at\n"
             "the rate of memcpy and the fresh pages its temporaries touch (counted per call) at\n"
             "%.2f us each. The CPU share is the median over repetitions of the smallest share\n"
             "of a call's wall time a rank ran (below 100%%: another process took its core).\n\n",
          ctx->size, ctx->nodes, host, reps, model, system_src, touch_s * 1e6);
  fprintf(f, "| bytes | MPI_Reduce_local (GB/s) | memcpy (GB/s) |\n|---:|---:|---:|\n");
  for (guint i = 0; i < nrates; i++)
    fprintf(f, "| %" G_GUINT64_FORMAT " | %.2f | %.2f |\n", rates[i].bytes,
            rates[i].reduce_Bps / 1e9, rates[i].copy_Bps / 1e9);
  fprintf(f, "\n");
  if (intra->bandwidth_GBps > 0)
    fprintf(f, "- between ranks of one node the model charges %.3g us + bytes / %.4g GB/s\n",
            intra->latency_ns / 1e3, intra->bandwidth_GBps);
  if (inter->bandwidth_GBps > 0)
    fprintf(f, "- between ranks of two nodes the model charges %.3g us + bytes / %.4g GB/s\n",
            inter->latency_ns / 1e3, inter->bandwidth_GBps);
  fprintf(f, "\n");
  fprintf(f, "Error = (predicted - measured) / measured. Geometric-mean error = "
             "exp(mean |ln(predicted / measured)|) - 1.\n\n");
  print_table(f, rows, n, TRUE);
  print_summary(f, rows, n, TRUE);
  return dt_outfile_commit(out, error);
}

/* Of the shared cluster and output keys, validate takes --system (a catalog name or the file
 * calibrate wrote), --net-model and --csv: the ranks and nodes are mpirun's, and the network the
 * measured one. */
static gboolean validate_check(sim_scenario *s, GError **error)
{
  static const char *const not_here[] = {"device", "nodes", "devices-per-node", "intra", "inter",
                                         "topology", "precision", "json"};
  if (!sim_scenario_check(s, error))
    return FALSE;
  for (size_t i = 0; i < G_N_ELEMENTS(not_here); i++)
    if (sim_scenario_given(s, not_here[i])) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  strcmp(not_here[i], "json") == 0
                      ? "%s: dtsim-mpi validate writes a table, --csv and --report"
                      : "%s: dtsim-mpi validate takes its ranks and nodes from mpirun and its "
                        "network from --system",
                  sim_scenario_where(s, not_here[i]));
      return FALSE;
    }
  return TRUE;
}

int comm_mpi__cmd_validate(comm_mpi_ctx *ctx, int argc, char **argv)
{
  g_autofree char *ops_text = NULL, *algos_text = NULL, *sizes_text = NULL, *report = NULL;
  int reps = 10, warmup = 2;
  GOptionEntry entries[] = {
      {"ops", 0, 0, G_OPTION_ARG_STRING, &ops_text,
       "collectives (allreduce,allgather,reduce-scatter,broadcast: all)", "LIST"},
      {"algorithms", 0, 0, G_OPTION_ARG_STRING, &algos_text,
       "algorithms to force, dtsim names (all modeled ones)", "LIST"},
      {"sizes", 0, 0, G_OPTION_ARG_STRING, &sizes_text, "sizes, e.g. 1K..64M (" DEFAULT_SIZES ")",
       "LIST"},
      {"reps", 0, 0, G_OPTION_ARG_INT, &reps, "timed repetitions per row (10)", "N"},
      {"warmup", 0, 0, G_OPTION_ARG_INT, &warmup, "untimed repetitions first (2)", "N"},
      {"report", 0, 0, G_OPTION_ARG_FILENAME, &report, "write a markdown report", "FILE"},
      {NULL},
  };
  /* --system (default: calibrate first), --net-model and --csv are the shared keys (the rest
   * of the shared groups is refused by validate_check). */
  g_auto(sim_scenario) sc;
  sim_scenario_init(&sc);
  if (!comm_mpi__scenario(ctx,
                          "[SCENARIO.ini] - compare forced Open MPI collectives with the model "
                          "(of the shared options it takes --system, --net-model and --csv)",
                          entries, SIM_OPTS_CLUSTER, validate_check, argc, argv, &sc))
    return 0;
  const char *system = sim_scenario_given(&sc, "system") ? sc.system : NULL;
  const char *csv = sc.csv;
  gboolean flow = sc.net_model == COMM_NET_FLOW;

  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) sizes = comm_mpi_parse_sizes(sizes_text ? sizes_text : DEFAULT_SIZES,
                                                 "--sizes", &error);
  if (sizes == NULL)
    comm_mpi__fail_all(ctx, error);
  if (g_array_index(sizes, uint64_t, sizes->len - 1) > (uint64_t)INT32_MAX) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT, "--sizes: at most 2 GiB - 1 per row");
    comm_mpi__fail_all(ctx, error);
  }
  /* Every option is checked before the calibration, which takes minutes. */
  if ((csv && !dt_outfile_check(csv, "--csv", &error)) ||
      (report && !dt_outfile_check(report, "--report", &error)))
    comm_mpi__fail_all(ctx, error);
  if (reps < 1 || reps > 100000 || warmup < 0 || warmup > 100000) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                "--reps must be in 1..100000 and --warmup in 0..100000");
    comm_mpi__fail_all(ctx, error);
  }
  gboolean want_op[COMM_MPI_N_OPS] = {0};
  {
    g_auto(GStrv) ops = dt_parse_name_list(ops_text ? ops_text
                                                    : "allreduce,allgather,reduce-scatter,broadcast",
                                           "--ops", &error);
    if (ops == NULL)
      comm_mpi__fail_all(ctx, error);
    for (char **o = ops; *o; o++) {
      comm_mpi_op op;
      if (!comm_mpi_op_parse(*o, &op, &error))
        comm_mpi__fail_all(ctx, error);
      want_op[op] = TRUE;
    }
  }
  g_auto(GStrv) algo_names = NULL;
  if (algos_text) {
    algo_names = dt_parse_name_list(algos_text, "--algorithms", &error);
    if (algo_names == NULL)
      comm_mpi__fail_all(ctx, error);
    /* Every name must be an algorithm of at least one requested collective. */
    for (char **a = algo_names; *a; a++) {
      gboolean found = FALSE;
      g_autoptr(GError) first = NULL;
      for (int op = 0; op < COMM_MPI_N_OPS && !found; op++) {
        g_autoptr(GError) e = NULL;
        if (want_op[op] && comm_mpi_algorithm_find(op, *a, &e))
          found = TRUE;
        else if (want_op[op] && first == NULL)
          first = g_steal_pointer(&e);
      }
      if (!found)
        comm_mpi__fail_all(ctx, first);
    }
  }

  /* The fitted system: the file given, or one measured now and written to a temporary file,
   * so both paths go through the loader dtsim uses. */
  comm_mpi__locate(ctx);
  g_autofree char *tmpfile = NULL;
  if (system == NULL) {
    if (ctx->rank == 0)
      printf("no --system given: calibrating first\n");
    comm_mpi_system fitted = {0};
    comm_mpi__calibrate_run(ctx, NULL, 10, 2, ctx->rank == 0, &fitted);
    fitted.description = g_strdup("calibrated by dtsim-mpi validate");
    const char *tmpdir = comm_mpi__scratch(&error);
    gboolean ok = tmpdir != NULL;
    if (ok) {
      tmpfile = g_build_filename(tmpdir, "system.ini", NULL);
      ok = comm_mpi_system_write(&fitted, NULL, tmpfile, &error);
    }
    comm_mpi_system_clear(&fitted);
    comm_mpi__agree(ctx, ok, error);
  }
  const char *system_path = system ? system : tmpfile;
  g_autofree uint32_t *dtsim_rank = g_new(uint32_t, ctx->size);
  if (!comm_mpi__dtsim_ranks(ctx, dtsim_rank, &error))
    comm_mpi__fail_all(ctx, error);
  g_autoptr(comm_mpi_model) model =
      comm_mpi_model_new(system_path, (uint32_t)ctx->nodes, (uint32_t)ctx->ranks_per_node,
                         dtsim_rank, flow, 0, &error);
  if (model == NULL)
    comm_mpi__fail_all(ctx, error);
  /* What the model charges between two ranks, for the report. */
  comm_mpi_fabric intra = {0}, inter = {0};
  if ((ctx->ranks_per_node > 1 &&
       !comm_mpi_system_p2p(system_path, (uint32_t)ctx->nodes, (uint32_t)ctx->ranks_per_node, 1,
                            &intra, &error)) ||
      (ctx->nodes > 1 &&
       !comm_mpi_system_p2p(system_path, (uint32_t)ctx->nodes, (uint32_t)ctx->ranks_per_node,
                            (uint32_t)ctx->ranks_per_node, &inter, &error)))
    comm_mpi__fail_all(ctx, error);

  /* Plan the rows: every (algorithm, size) the model prices for this many ranks. Algorithms
   * named explicitly must be priceable; the default set skips the ones that are not. */
  size_t nalgos;
  const comm_mpi_algorithm *algos = comm_mpi_algorithms(&nalgos);
  g_autoptr(GArray) rows = g_array_new(FALSE, TRUE, sizeof(row));
  for (size_t a = 0; a < nalgos; a++) {
    if (!want_op[algos[a].op] ||
        (algo_names && !g_strv_contains((const char *const *)algo_names, algos[a].name)))
      continue;
    for (guint s = 0; s < sizes->len; s++) {
      row r = {.algo = &algos[a], .bytes = g_array_index(sizes, uint64_t, s)};
      g_autoptr(GError) e = NULL;
      if (!comm_mpi_model_predict(model, r.algo, r.bytes, &r.predicted_s, &e)) {
        if (algo_names)
          comm_mpi__fail_all(ctx, e);
        if (ctx->rank == 0 && s == 0)
          printf("skipped: %s\n", e->message);
        break;
      }
      g_array_append_val(rows, r);
    }
  }
  if (rows->len == 0) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT, "no row to measure for these options");
    comm_mpi__fail_all(ctx, error);
  }

  uint64_t maxb = g_array_index(sizes, uint64_t, sizes->len - 1);
  size_t maxcount = (size_t)row_count(ctx, maxb);
  buffers b = {g_new(float, maxcount), g_new(float, maxcount), g_new0(int, ctx->size)};
  /* Real data on every page: a page never written maps the kernel's zero page, which a peer
   * reads from its cache at twice the speed of memory (see calibrate.c). */
  for (size_t i = 0; i < maxcount; i++) {
    b.send[i] = (float)(i % 1000) * 0.001f;
    b.recv[i] = 0;
  }
  /* The host-side rates of every size, on the buffers the collectives use, before them. */
  g_autofree size_rates *rates = g_new0(size_rates, sizes->len);
  for (guint s = 0; s < sizes->len; s++) {
    rates[s].bytes = g_array_index(sizes, uint64_t, s);
    comm_mpi__host_rates(b.send, b.recv, (uint64_t)row_count(ctx, rates[s].bytes) * sizeof(float),
                         MAX(reps, 3), &rates[s].reduce_Bps, &rates[s].copy_Bps);
  }
  double touch_s = comm_mpi__first_touch_s(ctx, MAX(reps, 3));
  for (guint i = 0; i < rows->len;) {
    const comm_mpi_algorithm *algo = g_array_index(rows, row, i).algo;
    comm_mpi__force(ctx, algo, TRUE);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    for (; i < rows->len && g_array_index(rows, row, i).algo == algo; i++)
      measure_row(ctx, comm, &b, &g_array_index(rows, row, i), reps, warmup);
    MPI_Comm_free(&comm);
    comm_mpi__force(ctx, algo, FALSE);
  }
  g_free(b.send);
  g_free(b.recv);
  g_free(b.counts);

  /* The predictions, now that each row's host-side work is known. */
  for (guint i = 0; i < rows->len; i++) {
    row *r = &g_array_index(rows, row, i);
    const size_rates *sr = NULL;
    for (guint s = 0; s < sizes->len && sr == NULL; s++)
      if (rates[s].bytes == r->bytes)
        sr = &rates[s];
    g_assert(sr != NULL);
    double copy = comm_mpi_algorithm_copy_bytes(r->algo, r->bytes, (uint32_t)ctx->size);
    r->costs.reduce_Bps = sr->reduce_Bps;
    r->costs.host_s = copy / sr->copy_Bps + r->faults * touch_s;
    if (!comm_mpi_model_predict_costs(model, r->algo, r->bytes, &r->costs, &r->predicted_s,
                                      &error))
      comm_mpi__fail_all(ctx, error);
  }

  int mismatched = 0;
  const row *rv = (const row *)(void *)rows->data;
  for (guint i = 0; i < rows->len; i++)
    mismatched += !rv[i].ran_ok;
  if (ctx->rank == 0) {
    printf("%d ranks on %d node(s); predictions: %s of %s\n", ctx->size, ctx->nodes,
           comm_mpi_model_name(model), system ? system : "the system just calibrated");
    print_table(stdout, rv, rows->len, FALSE);
    print_summary(stdout, rv, rows->len, FALSE);
    if ((csv && !write_csv(rv, rows->len, ctx->size, ctx->nodes, csv, &error)) ||
        (report && !write_report(ctx, comm_mpi_model_name(model),
                                 system ? system : "calibrated at start", &intra, &inter, rates,
                                 sizes->len, touch_s, rv, rows->len, reps, report, &error)))
      comm_mpi__fail_here(ctx, error);
  }
  comm_mpi__scratch_remove();
  if (mismatched > 0) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INTERNAL,
                "%d row(s) ran another algorithm than the one forced (column ran)", mismatched);
    comm_mpi__fail_all(ctx, error);
  }
  return 0;
}
