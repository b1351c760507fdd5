/* dtsim-mpi calibrate: ping-pong between every pair of ranks over a range of sizes, one pair at
 * a time (so no two pairs share a link), then exchanges of every rank of a node with a partner
 * at once; a least-squares latency/bandwidth fit per locality class (two regimes when the
 * points show them), and the node's shared bandwidth when the exchanges are slower than a lone
 * pair, written as a system INI that `dtsim --system FILE` loads. */
#include "comm_mpi_run.h"
#include "util.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_SIZES "8,64,512,4K,32K,256K,1M,4M,16M,64M"
#define TAG_PING 71

/* Median one-way time (seconds) of `reps` ping-pongs of `bytes` between ranks a and b, after
 * `warmup` untimed ones. Valid on rank a; other ranks return 0. */
static double pingpong(const comm_mpi_ctx *ctx, int a, int b, char *buf, uint64_t bytes,
                       int reps, int warmup)
{
  int count = (int)bytes;
  g_autofree double *t = g_new(double, reps);
  for (int i = -warmup; i < reps; i++) {
    if (ctx->rank == a) {
      double t0 = MPI_Wtime();
      MPI_Send(buf, count, MPI_BYTE, b, TAG_PING, MPI_COMM_WORLD);
      MPI_Recv(buf, count, MPI_BYTE, b, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (i >= 0)
        t[i] = 0.5 * (MPI_Wtime() - t0);
    } else {
      MPI_Recv(buf, count, MPI_BYTE, a, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, count, MPI_BYTE, a, TAG_PING, MPI_COMM_WORLD);
    }
  }
  return ctx->rank == a ? comm_mpi_median(t, (size_t)reps) : 0;
}

/* The fabric written to the system file is the large-message regime: the messages of the
 * collectives that matter (gradient buckets) are far above an eager limit of a few KiB. */
static void to_fabric(const comm_mpi_regimes *fit, comm_mpi_fabric *fab, comm_mpi_regimes *keep)
{
  fab->latency_ns = fit->large.latency_s * 1e9;
  fab->bandwidth_GBps = fit->large.bandwidth_Bps / 1e9;
  *keep = *fit;
}

static void print_fit(const char *name, int pairs, const comm_mpi_regimes *fit)
{
  const comm_mpi_fit *f = &fit->large;
  printf("%-12s %6d %12.3f %14.4f %13.1f", name, pairs, f->latency_s * 1e6, f->bandwidth_Bps / 1e9,
         100 * f->max_rel_residual);
  if (fit->piecewise)
    printf("  from %.0f B; below: %.3f us + B / %.4g GB/s (resid %.1f%%); one line: resid %.1f%%",
           fit->break_bytes, fit->small.latency_s * 1e6, fit->small.bandwidth_Bps / 1e9,
           100 * fit->small.max_rel_residual, 100 * fit->single_max_rel_residual);
  if (f->negative_latency)
    printf("  (latency fitted below 0, set to 0)");
  printf("\n");
}

/* Measured one-way medians: times[pair * nsizes + size]. */
typedef struct {
  int npairs;
  int *pa, *pb;
  guint nsizes;
  double *times;
  /* Exchanges: every rank of a node with a partner of its node at once. xranks is the number
   * of ranks of the fullest node taking part (0: no node has two ranks); xa and xb the first
   * pair, for the CSV; xtimes[size] the slowest rank's median. */
  int xranks, xa, xb;
  double *xtimes;
} measurements;

static void measurements_clear(measurements *m)
{
  g_free(m->pa);
  g_free(m->pb);
  g_free(m->times);
  g_free(m->xtimes);
}

/* The partner of `rank` for the exchanges: the rank of its node whose index on the node
 * differs in the lowest bit (0 with 1, 2 with 3, ...); -1 for the odd one out. */
static int partner_of(const comm_mpi_ctx *ctx, int rank)
{
  int local = 0;
  for (int r = 0; r < rank; r++)
    local += ctx->node_of[r] == ctx->node_of[rank];
  int want = local ^ 1, seen = 0;
  for (int r = 0; r < ctx->size; r++) {
    if (ctx->node_of[r] != ctx->node_of[rank])
      continue;
    if (seen++ == want)
      return r;
  }
  return -1;
}

/* Median over reps of the slowest rank's MPI_Sendrecv of `bytes` each way with its partner,
 * all pairs at once, each repetition after a barrier. Separate send and receive buffers, as
 * a collective's steps have. */
static double exchange(const comm_mpi_ctx *ctx, char *sbuf, char *rbuf, uint64_t bytes,
                       int reps, int warmup)
{
  int peer = partner_of(ctx, ctx->rank);
  int count = (int)bytes;
  g_autofree double *t = g_new(double, reps);
  for (int i = -warmup; i < reps; i++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (peer >= 0)
      MPI_Sendrecv(sbuf, count, MPI_BYTE, peer, TAG_PING, rbuf, count, MPI_BYTE, peer, TAG_PING,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double mine = peer >= 0 ? MPI_Wtime() - t0 : 0, slowest;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (i >= 0)
      t[i] = slowest;
  }
  return comm_mpi_median(t, (size_t)reps);
}

static void measure(const comm_mpi_ctx *ctx, const GArray *sizes, int reps, int warmup,
                    measurements *m)
{
  int p = ctx->size;
  m->npairs = p * (p - 1) / 2;
  m->nsizes = sizes->len;
  m->pa = g_new(int, m->npairs);
  m->pb = g_new(int, m->npairs);
  uint64_t maxb = g_array_index(sizes, uint64_t, sizes->len - 1);
  /* Written, not only allocated: pages a process never wrote all map the kernel's one zero
   * page, which a peer copies out of its cache at twice the speed of real data (a broadcast of
   * 8 MiB on this machine: 0.7 ms from a never-written buffer, 1.4 ms from a written one). */
  g_autofree char *buf = g_malloc(MAX(maxb, 1));
  memset(buf, 0x5a, MAX(maxb, 1));
  g_autofree double *mine = g_new0(double, (size_t)m->npairs * m->nsizes);
  m->times = g_new0(double, (size_t)m->npairs * m->nsizes);
  int k = 0;
  for (int a = 0; a < p; a++) {
    for (int b = a + 1; b < p; b++, k++) {
      m->pa[k] = a;
      m->pb[k] = b;
      /* One pair at a time: the others wait here, so the pair has its link to itself. */
      MPI_Barrier(MPI_COMM_WORLD);
      if (ctx->rank != a && ctx->rank != b)
        continue;
      for (guint s = 0; s < m->nsizes; s++)
        mine[(size_t)k * m->nsizes + s] =
            pingpong(ctx, a, b, buf, g_array_index(sizes, uint64_t, s), reps, warmup);
    }
  }
  /* Only the first rank of each pair holds its times; the sum gathers them everywhere. */
  MPI_Allreduce(mine, m->times, m->npairs * (int)m->nsizes, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

  /* Then every rank at once, as in a collective's steps. */
  m->xtimes = g_new0(double, m->nsizes);
  for (int r = 0; r < p; r++) {
    int local_ranks = 0;
    for (int q = 0; q < p; q++)
      local_ranks += ctx->node_of[q] == ctx->node_of[r];
    m->xranks = MAX(m->xranks, local_ranks - local_ranks % 2);
  }
  if (m->xranks < 2)
    return;
  m->xa = 0;
  m->xb = partner_of(ctx, 0);
  if (m->xb < 0) { /* rank 0 is alone on its node: the first rank with a partner */
    for (int r = 1; r < p && m->xb < 0; r++)
      if ((m->xb = partner_of(ctx, r)) >= 0)
        m->xa = r;
  }
  g_autofree char *rbuf = g_malloc(MAX(maxb, 1));
  memset(rbuf, 0xa5, MAX(maxb, 1));
  for (guint s = 0; s < m->nsizes; s++)
    m->xtimes[s] = exchange(ctx, buf, rbuf, g_array_index(sizes, uint64_t, s), reps, warmup);
}

static gboolean fit_class(const comm_mpi_ctx *ctx, const measurements *m, const GArray *sizes,
                          gboolean (*in_class)(const comm_mpi_ctx *, int, int, int), int cls,
                          comm_mpi_regimes *fit, int *pairs, GError **error)
{
  g_autoptr(GArray) pts = g_array_new(FALSE, FALSE, sizeof(comm_mpi_point));
  *pairs = 0;
  for (int k = 0; k < m->npairs; k++) {
    if (!in_class(ctx, m->pa[k], m->pb[k], cls))
      continue;
    (*pairs)++;
    for (guint s = 0; s < m->nsizes; s++) {
      comm_mpi_point pt = {(double)g_array_index(sizes, uint64_t, s),
                           m->times[(size_t)k * m->nsizes + s]};
      g_array_append_val(pts, pt);
    }
  }
  if (*pairs == 0)
    return TRUE;
  return comm_mpi_fit_regimes((const comm_mpi_point *)(void *)pts->data, pts->len, fit, error);
}

static gboolean is_class(const comm_mpi_ctx *ctx, int a, int b, int cls)
{
  return (int)comm_mpi__pair_locality(ctx, a, b) == cls;
}

/* Same node, whatever the socket: the pairs behind the [intra] fabric. */
static gboolean is_intra(const comm_mpi_ctx *ctx, int a, int b, int unused)
{
  return comm_mpi__pair_locality(ctx, a, b) != COMM_MPI_OTHER_NODE;
}

static void write_csv(const comm_mpi_ctx *ctx, const measurements *m, const GArray *sizes,
                      const char *path)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(dt_outfile) out = dt_outfile_open(path, &error);
  if (out == NULL)
    comm_mpi__fail_here(ctx, error);
  FILE *f = dt_outfile_stream(out);
  /* one_way_s: half a ping-pong's round trip; for the exchanges, the time of a send and a
   * receive of `bytes` each way (the slowest of all pairs exchanging at once). */
  fprintf(f, "rank_a,rank_b,locality,bytes,one_way_s,pattern\n");
  for (int k = 0; k < m->npairs; k++)
    for (guint s = 0; s < m->nsizes; s++)
      fprintf(f, "%d,%d,%s,%" G_GUINT64_FORMAT ",%.9e,ping-pong\n", m->pa[k], m->pb[k],
              comm_mpi_locality_name(comm_mpi__pair_locality(ctx, m->pa[k], m->pb[k])),
              g_array_index(sizes, uint64_t, s), m->times[(size_t)k * m->nsizes + s]);
  for (guint s = 0; m->xranks >= 2 && s < m->nsizes; s++)
    fprintf(f, "%d,%d,%s,%" G_GUINT64_FORMAT ",%.9e,exchange\n", m->xa, m->xb,
            comm_mpi_locality_name(comm_mpi__pair_locality(ctx, m->xa, m->xb)),
            g_array_index(sizes, uint64_t, s), m->xtimes[s]);
  if (!dt_outfile_commit(out, &error))
    comm_mpi__fail_here(ctx, error);
}

static void calibrate(comm_mpi_ctx *ctx, const GArray *sizes, int reps, int warmup,
                      gboolean print, const char *csv, comm_mpi_system *out)
{
  g_autoptr(GError) error = NULL;
  comm_mpi__locate(ctx);
  measurements m = {0};
  measure(ctx, sizes, reps, warmup, &m);
  if (csv && ctx->rank == 0)
    write_csv(ctx, &m, sizes, csv);

  /* Every rank holds the same times, so every rank fits the same lines. */
  comm_mpi_system sys = {0};
  sys.ranks_per_node = (uint32_t)ctx->ranks_per_node;
  if (print && ctx->rank == 0)
    printf("%-12s %6s %12s %14s %13s\n", "locality", "pairs", "latency_us", "bandwidth_GBps",
           "max_resid_%");
  for (int cls = 0; cls < COMM_MPI_N_CLASSES; cls++) {
    comm_mpi_regimes fit;
    int pairs;
    if (!fit_class(ctx, &m, sizes, is_class, cls, &fit, &pairs, &error)) {
      g_prefix_error(&error, "%s pairs: ", comm_mpi_locality_name(cls));
      comm_mpi__fail_all(ctx, error);
    }
    if (pairs == 0)
      continue;
    if (print && ctx->rank == 0)
      print_fit(comm_mpi_locality_name(cls), pairs, &fit);
    g_autofree char *warning = comm_mpi_fit_warning(cls, fit.large.latency_s);
    if (warning && ctx->rank == 0)
      fprintf(stderr, "dtsim-mpi calibrate: warning: %s\n", warning);
    if (cls == COMM_MPI_OTHER_NODE)
      to_fabric(&fit, &sys.inter, &sys.inter_regimes);
    sys.inter_measured |= cls == COMM_MPI_OTHER_NODE;
  }
  comm_mpi_regimes fit;
  int pairs;
  if (!fit_class(ctx, &m, sizes, is_intra, 0, &fit, &pairs, &error))
    comm_mpi__fail_all(ctx, error);
  if (pairs > 0) {
    to_fabric(&fit, &sys.intra, &sys.intra_regimes);
    sys.intra_measured = TRUE;
  }
  if (pairs > 0 && m.xranks >= 2) {
    /* The node's switch from the exchanges, over the large-message regime's sizes. */
    g_autofree comm_mpi_point *xp = g_new(comm_mpi_point, m.nsizes);
    for (guint s = 0; s < m.nsizes; s++)
      xp[s] = (comm_mpi_point){(double)g_array_index(sizes, uint64_t, s), m.xtimes[s]};
    double per_rank, link, sw;
    if (!comm_mpi_fit_switch(xp, m.nsizes, fit.break_bytes, fit.large.bandwidth_Bps,
                             (uint32_t)m.xranks, &per_rank, &link, &sw, &error))
      comm_mpi__fail_all(ctx, error);
    sys.intra.bandwidth_GBps = link / 1e9;
    sys.switch_GBps = sw / 1e9;
    sys.exchange_GBps = per_rank / 1e9;
    sys.exchange_ranks = (uint32_t)m.xranks;
    if (print && ctx->rank == 0) {
      printf("exchange     %d ranks of a node at once: %.4f GB/s per rank and direction (one "
             "pair alone, ping-pong: %.4f): ", m.xranks, per_rank / 1e9,
             fit.large.bandwidth_Bps / 1e9);
      if (sw > 0)
        printf("the node carries %.4f GB/s in all\n", sw / 1e9);
      else if (link > fit.large.bandwidth_Bps)
        printf("no sharing; the links carry %.4f GB/s\n", link / 1e9);
      else
        printf("no sharing (non-blocking)\n");
    }
  }
  if (!sys.intra_measured) {
    sys.intra = sys.inter;
    sys.intra_regimes = sys.inter_regimes;
  }
  if (!sys.inter_measured) {
    sys.inter = sys.intra;
    sys.inter_regimes = sys.intra_regimes;
  }
  if (print && ctx->rank == 0)
    printf("%d ranks on %d node(s), at most %d per node\n", ctx->size, ctx->nodes,
           ctx->ranks_per_node);
  measurements_clear(&m);
  *out = sys;
}

void comm_mpi__calibrate_run(comm_mpi_ctx *ctx, const GArray *sizes, int reps, int warmup,
                            gboolean print, comm_mpi_system *out)
{
  g_autoptr(GArray) defaults = NULL;
  if (sizes == NULL) {
    defaults = comm_mpi_parse_sizes(DEFAULT_SIZES, "--sizes", NULL);
    sizes = defaults;
  }
  calibrate(ctx, sizes, reps, warmup, print, NULL, out);
}

int comm_mpi__cmd_calibrate(comm_mpi_ctx *ctx, int argc, char **argv)
{
  g_autofree char *sizes_text = NULL, *output = NULL, *csv = NULL, *name = NULL;
  int reps = 20, warmup = 3;
  GOptionEntry entries[] = {
      {"sizes", 0, 0, G_OPTION_ARG_STRING, &sizes_text,
       "message sizes, e.g. 8,4K,1M or 1K..4M (doubling); default " DEFAULT_SIZES, "LIST"},
      {"reps", 0, 0, G_OPTION_ARG_INT, &reps, "timed ping-pongs per size and pair (20)", "N"},
      {"warmup", 0, 0, G_OPTION_ARG_INT, &warmup, "untimed ping-pongs first (3)", "N"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "write the fitted system INI here", "FILE"},
      {"csv", 0, 0, G_OPTION_ARG_FILENAME, &csv, "write every measured point here", "FILE"},
      {"description", 0, 0, G_OPTION_ARG_STRING, &name,
       "one-line description written in the INI", "TEXT"},
      {NULL},
  };
  g_autoptr(GOptionContext) octx = g_option_context_new("- fit latency and bandwidth per locality class");
  dt_option_entries_as_bytes(entries);
  g_option_context_add_main_entries(octx, entries, NULL);
  if (!comm_mpi__parse(ctx, octx, &argc, &argv))
    return 0;
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) sizes = comm_mpi_parse_sizes(sizes_text ? sizes_text : DEFAULT_SIZES,
                                                 "--sizes", &error);
  if (sizes == NULL)
    comm_mpi__fail_all(ctx, error);
  if (sizes->len < 2 || g_array_index(sizes, uint64_t, sizes->len - 1) > INT32_MAX) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                "--sizes: give at least two different sizes of at most 2 GiB - 1");
    comm_mpi__fail_all(ctx, error);
  }
  if (reps < 1 || reps > 100000 || warmup < 0 || warmup > 100000) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                "--reps must be in 1..100000 and --warmup in 0..100000");
    comm_mpi__fail_all(ctx, error);
  }
  /* The outputs can be written, or nothing is measured. */
  if ((output && !dt_outfile_check(output, "--output", &error)) ||
      (csv && !dt_outfile_check(csv, "--csv", &error)))
    comm_mpi__fail_all(ctx, error);
  comm_mpi_system sys = {0};
  calibrate(ctx, sizes, reps, warmup, TRUE, csv, &sys);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  sys.description = name ? g_strdup(name)
                         : g_strdup_printf("%s, measured with dtsim-mpi calibrate (%d ranks on %d "
                                           "node(s))", host, ctx->size, ctx->nodes);
  if (output && ctx->rank == 0) {
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    g_autofree char *when = g_date_time_format(now, "%Y-%m-%d %H:%M UTC");
    g_autofree char *comment = g_strdup_printf(
        "Measured on %s, %s: %d ranks on %d node(s), sizes %s, median of %d repetitions.", host,
        when, ctx->size, ctx->nodes, sizes_text ? sizes_text : DEFAULT_SIZES, reps);
    if (!comm_mpi_system_write(&sys, comment, output, &error))
      comm_mpi__fail_here(ctx, error);
    printf("wrote %s\n", output);
  }
  comm_mpi_system_clear(&sys);
  return 0;
}
