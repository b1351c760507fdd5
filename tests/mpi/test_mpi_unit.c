/* Unit tests of dtsim-mpi's MPI-free parts: statistics, the latency/bandwidth fit, size lists,
 * the argument hash, the algorithm table (against ompi_info when it is installed and against
 * dtsim's registry), the predictions through dtsim's model, the system file, and the pieces of
 * the replay that need no MPI: where parameter servers go and how a timeline is read. Expected
 * values are worked out by hand in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "coll.h"
#include "comm_mpi.h"
#include "replay_internal.h"
#include "strategy.h"
#include "util.h"

#define assert_close(a, b, rel) assert_true(fabs((a) - (b)) <= (rel) * fabs(b))

static void test_median(void **state)
{
  double odd[] = {3, 1, 2}, even[] = {4, 1, 3, 2};
  assert_true(comm_mpi_median(odd, 3) == 2);
  assert_true(comm_mpi_median(even, 4) == 2.5); /* (2 + 3) / 2 */
  assert_true(odd[0] == 3);                     /* the input is not sorted in place */
}

static void test_fit_exact_line(void **state)
{
  /* t = 2 us + bytes / 1e9 B/s at 0, 1 kB and 1 MB: 2e-6, 3e-6 and 1.002e-3 s. */
  comm_mpi_point p[] = {{0, 2e-6}, {1000, 3e-6}, {1e6, 1.002e-3}};
  comm_mpi_fit fit;
  g_autoptr(GError) error = NULL;
  assert_true(comm_mpi_fit_points(p, 3, &fit, &error));
  assert_close(fit.latency_s, 2e-6, 1e-9);
  assert_close(fit.bandwidth_Bps, 1e9, 1e-9);
  assert_true(fit.max_rel_residual < 1e-9);
  assert_false(fit.negative_latency);
}

static void test_fit_relative_weighting(void **state)
{
  /* Two points off the line by the same relative amount (+10% at 8 bytes, -10% at 1 MB) around
   * t = 1 us + b / 1e9: both residuals come out at 10% or less rather than the small point
   * absorbing the large one's absolute error (which would be 1e-4 s, 100x the small time). */
  comm_mpi_point p[] = {{8, 1.1 * (1e-6 + 8e-9)}, {1048576, 0.9 * (1e-6 + 1048576e-9)},
                        {65536, 1e-6 + 65536e-9}};
  comm_mpi_fit fit;
  assert_true(comm_mpi_fit_points(p, 3, &fit, NULL));
  assert_true(fit.max_rel_residual <= 0.1 + 1e-9);
  assert_true(fit.latency_s > 0.5e-6 && fit.latency_s < 1.5e-6);
}

static void test_fit_negative_intercept(void **state)
{
  /* (1000 B, 0.5 us) and (2000 B, 1.5 us): the line through them has slope 1e-9 s/B and
   * intercept -0.5 us, so the latency is clamped to 0 and flagged. */
  comm_mpi_point p[] = {{1000, 0.5e-6}, {2000, 1.5e-6}};
  comm_mpi_fit fit;
  assert_true(comm_mpi_fit_points(p, 2, &fit, NULL));
  assert_true(fit.negative_latency);
  assert_true(fit.latency_s == 0);
  assert_true(fit.bandwidth_Bps > 0);
}

static void test_fit_errors(void **state)
{
  comm_mpi_fit fit;
  g_autoptr(GError) e1 = NULL, e2 = NULL, e3 = NULL;
  comm_mpi_point one[] = {{64, 1e-6}, {64, 2e-6}};
  assert_false(comm_mpi_fit_points(one, 2, &fit, &e1));
  assert_non_null(strstr(e1->message, "two different message sizes"));
  comm_mpi_point falling[] = {{64, 2e-6}, {1024, 1e-6}};
  assert_false(comm_mpi_fit_points(falling, 2, &fit, &e2));
  assert_non_null(strstr(e2->message, "does not grow"));
  comm_mpi_point zero[] = {{64, 0}, {1024, 1e-6}};
  assert_false(comm_mpi_fit_points(zero, 2, &fit, &e3));
}

/* Three sizes on each of two lines: 0.2 us + b / 2 GB/s (8, 64, 512 bytes: 0.204, 0.232 and
 * 0.456 us) and 2 us + b / 10 GB/s (4 KiB, 64 KiB, 1 MiB: 2.4096, 8.5536 and 106.8576 us). */
static const comm_mpi_point two_lines[] = {
    {8, 0.204e-6},     {64, 0.232e-6},     {512, 0.456e-6},
    {4096, 2.4096e-6}, {65536, 8.5536e-6}, {1048576, 106.8576e-6},
};

/* A shared-memory fit of 3 ms (ranks sharing cores) is named; the two lines above are not. */
static void test_fit_warning(void **state)
{
  (void)state;
  comm_mpi_regimes r;
  assert_true(comm_mpi_fit_regimes(two_lines, 6, &r, NULL));
  assert_null(comm_mpi_fit_warning(COMM_MPI_SAME_SOCKET, r.large.latency_s));
  /* 3 ms + b / 10 GB/s: 8 B at 3.0000008 ms, 1 MiB at 3.1048576 ms. */
  comm_mpi_point slow[6];
  for (int i = 0; i < 6; i++)
    slow[i] = (comm_mpi_point){two_lines[i].bytes, 3e-3 + two_lines[i].bytes / 1e10};
  assert_true(comm_mpi_fit_regimes(slow, 6, &r, NULL));
  g_autofree char *w = comm_mpi_fit_warning(COMM_MPI_SAME_SOCKET, r.large.latency_s);
  assert_non_null(w);
  assert_non_null(strstr(w, "same-socket latency fitted at 3000.0 us"));
  assert_non_null(strstr(w, "shared memory"));
  /* Across nodes 3 ms is also beyond a network's 1 ms; 500 us is not. */
  g_autofree char *net = comm_mpi_fit_warning(COMM_MPI_OTHER_NODE, 3e-3);
  assert_non_null(net);
  assert_null(comm_mpi_fit_warning(COMM_MPI_OTHER_NODE, 500e-6));
}

static void test_regimes_two_lines(void **state)
{
  comm_mpi_regimes r;
  g_autoptr(GError) error = NULL;
  assert_true(comm_mpi_fit_regimes(two_lines, 6, &r, &error));
  assert_true(r.piecewise);
  assert_true(r.break_bytes == 4096);
  assert_close(r.small.latency_s, 0.2e-6, 1e-9);
  assert_close(r.small.bandwidth_Bps, 2e9, 1e-9);
  assert_close(r.large.latency_s, 2e-6, 1e-9);
  assert_close(r.large.bandwidth_Bps, 1e10, 1e-9);
  assert_true(r.small.max_rel_residual < 1e-9 && r.large.max_rel_residual < 1e-9);
  /* At the large regime's 10 GB/s the small points need 0.2032, 0.2256 and 0.4048 us of
   * latency (0.204 - 0.0008, 0.232 - 0.0064, 0.456 - 0.0512); weighted by 1/t^2 (24.029,
   * 18.579 and 4.809 per us^2): (24.029 x 0.2032 + 18.579 x 0.2256 + 4.809 x 0.4048) /
   * 47.417 = 0.23242 us. */
  assert_close(r.small_latency_s, 0.23242e-6, 1e-4);
  /* No line passes within 5% of both 0.204 us at 8 bytes and 2.41 us at 4 KiB while
   * reaching 107 us at 1 MiB. */
  assert_true(r.single_max_rel_residual > 0.05);
}

static void test_regimes_one_line(void **state)
{
  /* Six points on 1 us + b / 1 GB/s: no break, both regimes are that line. */
  comm_mpi_point p[6];
  for (int i = 0; i < 6; i++) {
    double b = 8 << (3 * i); /* 8, 64, 512, 4096, 32768, 262144 */
    p[i] = (comm_mpi_point){b, 1e-6 + b / 1e9};
  }
  comm_mpi_regimes r;
  assert_true(comm_mpi_fit_regimes(p, 6, &r, NULL));
  assert_false(r.piecewise);
  assert_true(r.break_bytes == 0);
  assert_close(r.large.latency_s, 1e-6, 1e-9);
  assert_close(r.small.bandwidth_Bps, 1e9, 1e-9);
  assert_close(r.small_latency_s, 1e-6, 1e-9);
  /* Five sizes of the two lines above (the 8-byte point left out): a break would leave two
   * sizes on one side, which any line fits exactly, so there is none. */
  assert_true(comm_mpi_fit_regimes(two_lines + 1, 5, &r, NULL));
  assert_false(r.piecewise);
  assert_true(r.single_max_rel_residual > 0.05);
}

static void test_fit_switch(void **state)
{
  /* Exchanges on 1 us + b / 6 GB/s at 64 KiB, 1 MiB and 16 MiB, ping-pongs at 10 GB/s one
   * way: each of 2 ranks got 6 GB/s per direction, so the switch carries 2 x 6 = 12 GB/s and
   * the links keep the ping-pong's 10 GB/s. */
  comm_mpi_point p[3];
  const double b[3] = {65536, 1048576, 16777216};
  for (int i = 0; i < 3; i++)
    p[i] = (comm_mpi_point){b[i], 1e-6 + b[i] / 6e9};
  double per_rank, link, sw;
  g_autoptr(GError) error = NULL;
  assert_true(comm_mpi_fit_switch(p, 3, 0, 10e9, 2, &per_rank, &link, &sw, &error));
  assert_close(per_rank, 6e9, 1e-9);
  assert_close(link, 10e9, 1e-9);
  assert_close(sw, 12e9, 1e-9);
  /* Four ranks at once at 6 GB/s each: 24 GB/s. */
  assert_true(comm_mpi_fit_switch(p, 3, 0, 10e9, 4, &per_rank, &link, &sw, NULL));
  assert_close(sw, 24e9, 1e-9);
  /* At 9.8 GB/s each, within 5% of the 10 GB/s links: non-blocking. */
  for (int i = 0; i < 3; i++)
    p[i].time_s = 1e-6 + b[i] / 9.8e9;
  assert_true(comm_mpi_fit_switch(p, 3, 0, 10e9, 2, &per_rank, &link, &sw, NULL));
  assert_true(sw == 0);
  assert_close(link, 10e9, 1e-9);
  /* At 12 GB/s each, faster than the ping-pong: the links carry 12 GB/s, non-blocking. */
  for (int i = 0; i < 3; i++)
    p[i].time_s = 1e-6 + b[i] / 12e9;
  assert_true(comm_mpi_fit_switch(p, 3, 0, 10e9, 2, &per_rank, &link, &sw, NULL));
  assert_close(link, 12e9, 1e-9);
  assert_true(sw == 0);
  /* At 4 GB/s each: 2 x 4 = 8 GB/s is below what one flow alone reached, 10 GB/s. */
  for (int i = 0; i < 3; i++)
    p[i].time_s = 1e-6 + b[i] / 4e9;
  assert_true(comm_mpi_fit_switch(p, 3, 0, 10e9, 2, &per_rank, &link, &sw, NULL));
  assert_close(sw, 10e9, 1e-9);
  /* Only the points from 1 MiB: a 64 KiB point far off the line is left out. */
  p[0].time_s = 1e-3;
  assert_true(comm_mpi_fit_switch(p, 3, 1048576, 10e9, 2, &per_rank, &link, &sw, NULL));
  assert_close(per_rank, 4e9, 1e-9);
  /* One size left: no line. */
  g_autoptr(GError) e2 = NULL;
  assert_false(comm_mpi_fit_switch(p, 3, 16777216, 10e9, 2, &per_rank, &link, &sw, &e2));
  assert_non_null(strstr(e2->message, "exchanges"));
}

static void test_errors(void **state)
{
  assert_close(comm_mpi_rel_error(1.1, 1.0), 0.1, 1e-12);
  /* Off by a factor of 2 once over and once under: exp(ln 2) - 1 = 1. */
  double pred[] = {2, 0.5}, meas[] = {1, 1};
  assert_close(comm_mpi_geomean_error(pred, meas, 2), 1.0, 1e-12);
  double exact[] = {3, 4};
  assert_true(comm_mpi_geomean_error(exact, exact, 2) == 0);
}

static void test_sizes(void **state)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) a = comm_mpi_parse_sizes("1K..8K", "--sizes", &error);
  assert_non_null(a);
  assert_int_equal(a->len, 4);
  assert_true(g_array_index(a, uint64_t, 0) == 1024 && g_array_index(a, uint64_t, 3) == 8192);
  g_autoptr(GArray) b = comm_mpi_parse_sizes("4K, 1K,4096", "--sizes", NULL);
  assert_int_equal(b->len, 2); /* sorted, 4K and 4096 are one size */
  assert_true(g_array_index(b, uint64_t, 0) == 1024 && g_array_index(b, uint64_t, 1) == 4096);
  g_autoptr(GError) e1 = NULL, e2 = NULL;
  assert_null(comm_mpi_parse_sizes("8K..1K", "--sizes", &e1));
  assert_non_null(strstr(e1->message, "--sizes"));
  assert_null(comm_mpi_parse_sizes("1K,banana", "--sizes", &e2));
  assert_non_null(strstr(e2->message, "banana"));
  /* An empty message has no bandwidth: 0 is refused (validate printed "nan%"). */
  g_autoptr(GError) e3 = NULL;
  assert_null(comm_mpi_parse_sizes("0", "--sizes", &e3));
  assert_non_null(strstr(e3->message, "--sizes: 0 bytes"));
}

static void test_hash(void **state)
{
  /* FNV-1a 64 of the single byte 0 (one empty argument): (14695981039346656037 ^ 0) *
   * 1099511628211 mod 2^64 = 0xaf63bd4c8601b7df. */
  char *empty[] = {""};
  assert_true(comm_mpi_hash_argv(1, empty) == UINT64_C(0xaf63bd4c8601b7df));
  /* The terminating NULs keep "a","b" apart from "ab": bytes a,NUL,b,NUL vs a,b,NUL. */
  char *ab1[] = {"a", "b"}, *ab2[] = {"ab"};
  assert_true(comm_mpi_hash_argv(2, ab1) != comm_mpi_hash_argv(1, ab2));
  char *ab0[] = {"ab"};
  assert_true(comm_mpi_hash_argv(1, ab0) == UINT64_C(0xe72003190541fc1e));
}

static void test_algorithm_table(void **state)
{
  g_autoptr(GError) error = NULL;
  const comm_mpi_algorithm *ring = comm_mpi_algorithm_find(COMM_MPI_ALLREDUCE, "ring", NULL);
  assert_non_null(ring);
  assert_int_equal(ring->ompi_id, 4);
  assert_string_equal(comm_mpi_op_cvar(COMM_MPI_REDUCE_SCATTER),
                      "coll_tuned_reduce_scatter_algorithm");
  assert_null(comm_mpi_algorithm_find(COMM_MPI_BROADCAST, "halving-doubling", &error));
  assert_non_null(strstr(error->message, "tree, ring, onetoall"));
  comm_mpi_op op;
  assert_true(comm_mpi_op_parse("reduce-scatter", &op, NULL) && op == COMM_MPI_REDUCE_SCATTER);
  assert_false(comm_mpi_op_parse("alltoall", &op, NULL));
}

/* The numbers of the table are Open MPI's: each must appear in ompi_info's list of
 * enumerators for its variable with the same name. Skipped when ompi_info is missing. */
/* Every algorithm of the table is one dtsim models for its collective. */
static void test_algorithms_known_to_dtsim(void **state)
{
  size_t n;
  const comm_mpi_algorithm *algos = comm_mpi_algorithms(&n);
  static const comm_coll_op ops[] = {COMM_COLL_ALLREDUCE, COMM_COLL_ALLGATHER,
                                     COMM_COLL_REDUCE_SCATTER, COMM_COLL_BROADCAST};
  for (size_t i = 0; i < n; i++) {
    const comm_coll_algorithm *ca = comm_coll_algorithm_find(algos[i].name, "test", NULL);
    assert_non_null(ca);
    assert_true(comm_coll_algorithm_supports(ca, ops[algos[i].op]));
  }
}

static void test_algorithm_numbers_match_ompi_info(void **state)
{
  g_autofree char *out = NULL;
  int status = -1;
  if (!g_spawn_command_line_sync("ompi_info --param coll tuned --level 9 --parsable", &out,
                                 NULL, &status, NULL) || status != 0) {
    skip();
  }
  size_t n;
  const comm_mpi_algorithm *algos = comm_mpi_algorithms(&n);
  for (size_t i = 0; i < n; i++) {
    g_autofree char *line =
        g_strdup_printf("mca:coll:tuned:param:%s:enumerator:value:%d:%s\n",
                        comm_mpi_op_cvar(algos[i].op), algos[i].ompi_id, algos[i].ompi_name);
    if (strstr(out, line) == NULL)
      fail_msg("ompi_info does not list %s", line);
    for (int k = 0; k < 2 && algos[i].extra[k].cvar; k++) {
      g_autofree char *var = g_strdup_printf("mca:coll:tuned:param:%s:", algos[i].extra[k].cvar);
      if (strstr(out, var) == NULL)
        fail_msg("ompi_info has no variable %s", algos[i].extra[k].cvar);
    }
  }
}

#define TEST_SYSTEM DTSIM_TEST_DIR "/data/switch-1us-1GBps.ini"

static double predict(comm_mpi_model *m, comm_mpi_op op, const char *name, uint64_t bytes)
{
  double t = -1;
  g_autoptr(GError) error = NULL;
  const comm_mpi_algorithm *a = comm_mpi_algorithm_find(op, name, &error);
  assert_non_null(a);
  if (!comm_mpi_model_predict(m, a, bytes, &t, &error))
    fail_msg("%s", error->message);
  return t;
}

/* dtsim's model on the test system, 4 ranks on one node, n = 4e6 bytes; a message of b bytes
 * costs 1e-6 + b / 1e9 s (data/switch-1us-1GBps.ini). Both network models must give the
 * textbook times: these patterns never put two flows on one link direction. */
static void check_one_node(gboolean flow)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(comm_mpi_model) m = comm_mpi_model_new(TEST_SYSTEM, 1, 4, NULL, flow, 0, &error);
  if (m == NULL)
    fail_msg("%s", error->message);
  /* Ring allreduce: 2(p-1) = 6 steps of n/p = 1e6 bytes: 6 * 1.001e-3. */
  assert_close(predict(m, COMM_MPI_ALLREDUCE, "ring", 4000000), 6.006e-3, 1e-6);
  /* Recursive doubling: log2 4 = 2 exchanges of the whole 4e6 bytes: 2 * 4.001e-3. */
  assert_close(predict(m, COMM_MPI_ALLREDUCE, "recursive-doubling", 4000000), 8.002e-3, 1e-6);
  /* Rabenseifner: halving 2e6 then 1e6, doubling 1e6 then 2e6: 2 * (2.001e-3 + 1.001e-3). */
  assert_close(predict(m, COMM_MPI_ALLREDUCE, "halving-doubling", 4000000), 6.004e-3, 1e-6);
  /* Ring allgather: 3 steps of 1e6 bytes. */
  assert_close(predict(m, COMM_MPI_ALLGATHER, "ring", 4000000), 3.003e-3, 1e-6);
  /* Binomial broadcast: 2 rounds of the whole 4e6 bytes. */
  assert_close(predict(m, COMM_MPI_BROADCAST, "tree", 4000000), 8.002e-3, 1e-6);
}

static void test_model_one_node_flow(void **state)
{
  check_one_node(TRUE);
}

static void test_model_one_node_analytic(void **state)
{
  check_one_node(FALSE);
}

static void test_model_reduction_rate(void **state)
{
  /* Ring reduce-scatter with reductions at 1e9 bytes/s: each of the 3 steps also reduces its
   * 1e6 bytes: 3 * (1e-6 + 1e-3 + 1e-3). */
  g_autoptr(comm_mpi_model) m = comm_mpi_model_new(TEST_SYSTEM, 1, 4, NULL, FALSE, 1e9, NULL);
  assert_non_null(m);
  assert_close(predict(m, COMM_MPI_REDUCE_SCATTER, "ring", 4000000), 6.003e-3, 1e-6);
}

static void test_model_rank_order(void **state)
{
  /* 2 nodes x 2 ranks; MPI placed its ranks round-robin (MPI rank 1 on node 1), so MPI ranks
   * 0, 1, 2, 3 are dtsim ranks 0, 2, 1, 3. A recursive-doubling allgather of 4e6 bytes
   * exchanges 1e6 bytes with MPI rank r^1, then 2e6 bytes with r^2. In the identity order the
   * small step stays in the node and the large one crosses; round-robin is the other way
   * round. Both ranks of a node cross its one NIC in the same step, so the step that crosses
   * takes the NIC's bytes, twice one rank's (the busiest link, docs/network.md). The
   * latencies cancel, so identity - round-robin = (2 x 2e6 / 1e8 + 1e6 / 1e9) - (2 x 1e6 /
   * 1e8 + 2e6 / 1e9) = 0.041 - 0.022 = 0.019 s. */
  const uint32_t round_robin[] = {0, 2, 1, 3};
  g_autoptr(comm_mpi_model) id = comm_mpi_model_new(TEST_SYSTEM, 2, 2, NULL, FALSE, 0, NULL);
  g_autoptr(comm_mpi_model) rr = comm_mpi_model_new(TEST_SYSTEM, 2, 2, round_robin, FALSE, 0, NULL);
  assert_non_null(id);
  assert_non_null(rr);
  double t_id = predict(id, COMM_MPI_ALLGATHER, "recursive-doubling", 4000000);
  double t_rr = predict(rr, COMM_MPI_ALLGATHER, "recursive-doubling", 4000000);
  assert_close(t_id - t_rr, 0.019, 1e-6);
}

static void test_model_unsupported(void **state)
{
  g_autoptr(comm_mpi_model) m = comm_mpi_model_new(TEST_SYSTEM, 1, 3, NULL, FALSE, 0, NULL);
  assert_non_null(m);
  const comm_mpi_algorithm *rd =
      comm_mpi_algorithm_find(COMM_MPI_ALLGATHER, "recursive-doubling", NULL);
  double t;
  g_autoptr(GError) error = NULL;
  assert_false(comm_mpi_model_predict(m, rd, 1024, &t, &error));
  assert_non_null(strstr(error->message, "power-of-two"));
}

static void test_system_roundtrip(void **state)
{
  /* What calibration measured must be what dtsim charges: end-to-end 2 us and 5 GB/s inside a
   * node, 30 us and 0.5 GB/s between nodes, read back through dtsim's own loader and routes. */
  g_autofree char *dir = g_dir_make_tmp("dtsim-mpi-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "sys.ini", NULL);
  comm_mpi_system s = {.description = g_strdup("unit"), .ranks_per_node = 2,
                       .intra = {2000, 5}, .inter = {30000, 0.5}, .intra_measured = TRUE,
                       .inter_measured = TRUE};
  g_autoptr(GError) error = NULL;
  if (!comm_mpi_system_write(&s, "unit test", path, &error))
    fail_msg("%s", error->message);
  comm_mpi_fabric in, out;
  if (!comm_mpi_system_p2p(path, 2, 2, 1, &in, &error) ||
      !comm_mpi_system_p2p(path, 2, 2, 2, &out, &error))
    fail_msg("%s", error->message);
  assert_close(in.latency_ns, 2000.0, 1e-3);
  assert_close(in.bandwidth_GBps, 5.0, 1e-3);
  assert_close(out.latency_ns, 30000.0, 1e-3);
  assert_close(out.bandwidth_GBps, 0.5, 1e-3);
  comm_mpi_system_clear(&s);
  g_unlink(path);

  /* Two regimes inside the node: from 4 KiB 2 us + b / 5 GB/s, below it 0.5 us at the same
   * bandwidth. 1000 bytes: 0.5 + 1000 / 5e9 s = 0.5 + 0.2 = 0.7 us; 4096 bytes: 2 + 0.8192 =
   * 2.8192 us, through the routes dtsim builds from the file. */
  comm_mpi_system r = {.description = g_strdup("unit"), .ranks_per_node = 2,
                       .intra = {2000, 5}, .inter = {30000, 0.5}, .intra_measured = TRUE,
                       .inter_measured = TRUE};
  r.intra_regimes.piecewise = TRUE;
  r.intra_regimes.break_bytes = 4096;
  r.intra_regimes.small_latency_s = 0.5e-6;
  r.intra_regimes.large = (comm_mpi_fit){2e-6, 5e9, 0, FALSE};
  if (!comm_mpi_system_write(&r, "unit test", path, &error))
    fail_msg("%s", error->message);
  comm_cluster_spec spec = {.system = path, .nodes = 1, .devices_per_node = 2};
  g_autoptr(comm_topology) topo = comm_topology_build(&spec, &error);
  if (topo == NULL)
    fail_msg("%s", error->message);
  comm_ep a = comm_topology_device(topo, 0), b = comm_topology_device(topo, 1);
  assert_close((double)comm_topology_p2p_time(topo, a, b, 1000), 0.7e6, 1e-4);
  assert_close((double)comm_topology_p2p_time(topo, a, b, 4096), 2.8192e6, 1e-4);
  comm_mpi_system_clear(&r);
  g_unlink(path);
  g_rmdir(dir);
}

static void test_ps_place_tensors(void **state)
{
  /* Sizes 4, 10, 6, 10, 1 bytes on 2 shards, largest first (equal sizes: lower index first):
   * t1 (10) -> s0 (loads 10, 0); t3 (10) -> s1 (10, 10); t2 (6) -> s0, the lower of two equal
   * loads (16, 10); t0 (4) -> s1 (16, 14); t4 (1) -> s1 (16, 15). */
  const uint64_t bytes[] = {4, 10, 6, 10, 1};
  uint32_t shard_of[5];
  comm_ps_place_tensors(bytes, 5, 2, shard_of);
  const uint32_t expect[] = {1, 0, 0, 1, 1};
  for (int i = 0; i < 5; i++)
    assert_int_equal(shard_of[i], expect[i]);
  /* One shard holds everything. */
  comm_ps_place_tensors(bytes, 5, 1, shard_of);
  for (int i = 0; i < 5; i++)
    assert_int_equal(shard_of[i], 0);
}

static void test_ps_server_rank(void **state)
{
  /* cpu, 2 nodes x 4 workers, 5 shards: shard k on node k mod 2, its (k div 2)-th worker:
   * 0 -> node 0 #0 = 0, 1 -> node 1 #0 = 4, 2 -> node 0 #1 = 1, 3 -> node 1 #1 = 5,
   * 4 -> node 0 #2 = 2. */
  const uint32_t cpu[] = {0, 4, 1, 5, 2};
  for (uint32_t k = 0; k < 5; k++) {
    assert_int_equal(comm_mpi_ps_server_rank(COMM_PS_CPU, k, 5, 2, 4), cpu[k]);
    /* comm_ps puts gpu server k on device (k mod nodes) * per_node + (k div nodes) mod
     * per_node: the same ranks. */
    assert_int_equal(comm_mpi_ps_server_rank(COMM_PS_GPU, k, 5, 2, 4), cpu[k]);
  }
  /* More shards than a node's workers: 1 node x 2, shard 2 comes back to worker (2 div 1)
   * mod 2 = 0. */
  assert_int_equal(comm_mpi_ps_server_rank(COMM_PS_CPU, 2, 3, 1, 2), 0);
  assert_int_equal(comm_mpi_ps_server_rank(COMM_PS_CPU, 1, 3, 1, 2), 1);
  /* colocated, 3 nodes x 2: one server per node on its first worker, 0, 2, 4. */
  for (uint32_t k = 0; k < 3; k++)
    assert_int_equal(comm_mpi_ps_server_rank(COMM_PS_COLOCATED, k, 3, 3, 2), 2 * k);
  /* dedicated: after the workers. 1 node x 3 workers, 2 servers: ranks 3 and 4; 2 nodes x 2
   * workers, 1 server: rank 4. */
  assert_int_equal(comm_mpi_ps_server_rank(COMM_PS_DEDICATED, 0, 2, 1, 3), 3);
  assert_int_equal(comm_mpi_ps_server_rank(COMM_PS_DEDICATED, 1, 2, 1, 3), 4);
  assert_int_equal(comm_mpi_ps_server_rank(COMM_PS_DEDICATED, 0, 1, 2, 2), 4);
}

/* Writes `text` to a temporary file; the caller unlinks it. */
#define CSV_HEAD "task,name,kind,category,unit,stream,start_s,end_s,duration_s,bytes,flops\n"

/* The rows of a hand-written per-task table (the columns of `dtsim run --csv`; fields in
 * double quotes may hold commas). The strings live in `keep`. */
static GArray *rows_of(const char *csv, GPtrArray *keep)
{
  GArray *rows = g_array_new(FALSE, TRUE, sizeof(replay_row));
  g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
  for (char **l = lines + 1; *l && **l; l++) {
    GPtrArray *f = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(keep, f);
    GString *cur = g_string_new(NULL);
    gboolean quoted = FALSE;
    for (const char *c = *l; *c; c++) {
      if (*c == '"')
        quoted = !quoted;
      else if (*c == ',' && !quoted) {
        g_ptr_array_add(f, g_string_free(cur, FALSE));
        cur = g_string_new(NULL);
      } else
        g_string_append_c(cur, *c);
    }
    g_ptr_array_add(f, g_string_free(cur, FALSE));
    assert_int_equal(f->len, 11);
    replay_row r = {.id = (uint32_t)g_ascii_strtoull(f->pdata[0], NULL, 10),
                    .name = f->pdata[1], .kind = f->pdata[2], .category = f->pdata[3],
                    .unit = f->pdata[4], .stream = f->pdata[5],
                    .start_s = g_ascii_strtod(f->pdata[6], NULL),
                    .end_s = g_ascii_strtod(f->pdata[7], NULL),
                    .bytes = g_ascii_strtoull(f->pdata[9], NULL, 10)};
    g_array_append_val(rows, r);
  }
  return rows;
}

static void test_read_timeline_ps(void **state)
{
  /* Two iterations of a two-layer model (a, b, both with parameters) on gpu0, with gpu1's
   * first tasks between them (its push must not be taken for gpu0's). Times in seconds. */
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
  g_autoptr(GArray) rows = rows_of(
      CSV_HEAD
      "0,\"step\",compute,host,\"host (node 0)\",framework for gpu0,0,1,1,0,0\n"
      "1,\"input copy\",compute,copy,\"gpu0 (node 0)\",h2d,0,0.5,0.5,100,0\n"
      "2,\"a\",compute,forward,\"gpu0 (node 0)\",compute,1,2,1,0,0\n"
      "3,\"b\",compute,forward,\"gpu0 (node 0)\",compute,2,3,1,0,0\n"
      "4,\"b dW\",compute,backward,\"gpu0 (node 0)\",compute,3,4,1,0,0\n"
      "5,\"push/pull b\",custom,ps,\"\",,4,6,2,800,0\n"
      "6,\"b dX\",compute,backward,\"gpu0 (node 0)\",compute,4,5,1,0,0\n"
      "7,\"a dW\",compute,backward,\"gpu0 (node 0)\",compute,5,6,1,0,0\n"
      "8,\"push/pull a\",custom,ps,\"\",,6,7,1,400,0\n"
      "9,\"iteration end\",delay,wait,\"\",,7,7,0,0,0\n"
      "10,\"step\",compute,host,\"host (node 0)\",framework for gpu1,0,1,1,0,0\n"
      "11,\"b dW\",compute,backward,\"gpu1 (node 0)\",compute,3,4,1,0,0\n"
      "12,\"push/pull b\",custom,ps,\"\",,4,6,2,800,0\n"
      "13,\"step\",compute,host,\"host (node 0)\",framework for gpu0,6,7,1,0,0\n"
      "14,\"a\",compute,forward,\"gpu0 (node 0)\",compute,7,8,1,0,0\n"
      "15,\"b\",compute,forward,\"gpu0 (node 0)\",compute,8,9,1,0,0\n"
      "16,\"b dW\",compute,backward,\"gpu0 (node 0)\",compute,9,10,1,0,0\n"
      "17,\"push/pull b\",custom,ps,\"\",,10,11,1,800,0\n"
      "18,\"b dX\",compute,backward,\"gpu0 (node 0)\",compute,10,11,1,0,0\n"
      "19,\"a dW\",compute,backward,\"gpu0 (node 0)\",compute,11,12,1,0,0\n"
      "20,\"push/pull a\",custom,ps,\"\",,12,13,1,400,0\n"
      "21,\"iteration end\",delay,wait,\"\",,13,13,0,0,0\n", keep);
  replay_timeline tl;
  replay__timeline_init(&tl);
  g_autoptr(GError) error = NULL;
  if (!replay__read_timeline(rows, sim_strategy_find("ps"), &tl, &error))
    fail_msg("%s", error->message);
  /* gpu0's chain: rows 0, 2, 3, 4, 6, 7 and 13, 14, 15, 16, 18, 19 (the copy left out). */
  const uint32_t ids[] = {0, 2, 3, 4, 6, 7, 13, 14, 15, 16, 18, 19};
  assert_int_equal(tl.compute->len, 12);
  for (guint k = 0; k < 12; k++) {
    const replay_task *t = &g_array_index(tl.compute, replay_task, k);
    assert_int_equal(t->id, ids[k]);
    assert_int_equal(t->iteration, k < 6 ? 0 : 1);
    /* Row 14 (a, iteration 1) waits for push/pull a of iteration 0 (comms[1]), row 15 (b)
     * for push/pull b (comms[0]); nothing else waits. */
    assert_int_equal(t->wait_for, k == 7 ? 1 : k == 8 ? 0 : -1);
  }
  /* gpu0's pushes: rows 5, 8, 17, 20, each after the dW before it (rows 4, 7, 16, 19 at
   * chain positions 3, 5, 9, 11); tensors in layer order: a = 0 (400 bytes), b = 1 (800). */
  assert_int_equal(tl.comms->len, 4);
  const int after[] = {3, 5, 9, 11};
  const uint32_t tensor[] = {1, 0, 1, 0};
  for (guint c = 0; c < 4; c++) {
    const replay_task *t = &g_array_index(tl.comms, replay_task, c);
    assert_int_equal(t->kind, REPLAY_PS);
    assert_int_equal(t->after, after[c]);
    assert_int_equal(t->tensor, tensor[c]);
    assert_int_equal(t->iteration, c / 2);
  }
  assert_int_equal(tl.tensor_names->len, 2);
  assert_string_equal(g_ptr_array_index(tl.tensor_names, 0), "a");
  assert_int_equal(g_array_index(tl.tensor_bytes, uint64_t, 0), 400);
  assert_int_equal(g_array_index(tl.tensor_bytes, uint64_t, 1), 800);
  /* Iterations end with their "iteration end" rows, at 7 s and 13 s. */
  assert_int_equal(tl.sim_ends->len, 2);
  assert_true(g_array_index(tl.sim_ends, double, 0) == 7);
  assert_true(g_array_index(tl.sim_ends, double, 1) == 13);
  replay__timeline_clear(&tl);
}

static void test_read_timeline_dp(void **state)
{
  /* One iteration: a 4 s backward, one allreduce starting at 3 s (after the task that ended
   * at 3 s, chain position 2), the update ending the iteration at 9 s. */
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
  g_autoptr(GArray) rows = rows_of(
      CSV_HEAD
      "0,\"step\",compute,host,\"host (node 0)\",framework for gpu0,0,1,1,0,0\n"
      "1,\"a\",compute,forward,\"gpu0 (node 0)\",compute,1,2,1,0,0\n"
      "2,\"a dW\",compute,backward,\"gpu0 (node 0)\",compute,2,3,1,0,0\n"
      "3,\"b dW\",compute,backward,\"gpu0 (node 0)\",compute,3,6,3,0,0\n"
      "4,\"allreduce bucket 0 (1.0 MiB)\",collective,allreduce,\"gpu0 (node 0)\",comm,3,8,5,1048576,0\n"
      "5,\"update\",compute,update,\"gpu0 (node 0)\",compute,8,9,1,0,0\n", keep);
  replay_timeline tl;
  replay__timeline_init(&tl);
  g_autoptr(GError) error = NULL;
  if (!replay__read_timeline(rows, sim_strategy_find("dp"), &tl, &error))
    fail_msg("%s", error->message);
  assert_int_equal(tl.compute->len, 5);
  assert_int_equal(tl.comms->len, 1);
  const replay_task *c = &g_array_index(tl.comms, replay_task, 0);
  assert_int_equal(c->kind, REPLAY_COLLECTIVE);
  assert_int_equal(c->op, COMM_MPI_ALLREDUCE);
  assert_int_equal(c->after, 2);
  assert_int_equal(tl.sim_ends->len, 1);
  assert_true(g_array_index(tl.sim_ends, double, 0) == 9);
  replay__timeline_clear(&tl);
}

static void test_read_timeline_refused(void **state)
{
  /* A pipeline's first stage: its activation transfer is named in the refusal. */
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
  g_autoptr(GArray) rows = rows_of(
      CSV_HEAD
      "0,\"step\",compute,host,\"host (node 0)\",framework for gpu0,0,1,1,0,0\n"
      "1,\"forward mb0\",compute,forward,\"gpu0 (stage 0)\",compute,1,2,1,0,0\n"
      "2,\"activations mb0\",transfer,p2p,\"gpu0 (stage 0)\",send activations,2,3,1,64,0\n", keep);
  replay_timeline tl;
  replay__timeline_init(&tl);
  g_autoptr(GError) error = NULL;
  assert_false(replay__read_timeline(rows, sim_strategy_find("pp"), &tl, &error));
  assert_int_equal(error->code, DT_ERROR_INPUT);
  assert_non_null(strstr(error->message, "--strategy pp: task 'activations mb0'"));
  assert_non_null(strstr(error->message, "cannot be replayed"));
  replay__timeline_clear(&tl);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_median),
      cmocka_unit_test(test_fit_warning),
      cmocka_unit_test(test_fit_exact_line),
      cmocka_unit_test(test_fit_relative_weighting),
      cmocka_unit_test(test_fit_negative_intercept),
      cmocka_unit_test(test_fit_errors),
      cmocka_unit_test(test_regimes_two_lines),
      cmocka_unit_test(test_regimes_one_line),
      cmocka_unit_test(test_fit_switch),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_sizes),
      cmocka_unit_test(test_hash),
      cmocka_unit_test(test_algorithm_table),
      cmocka_unit_test(test_algorithm_numbers_match_ompi_info),
      cmocka_unit_test(test_algorithms_known_to_dtsim),
      cmocka_unit_test(test_model_one_node_flow),
      cmocka_unit_test(test_model_one_node_analytic),
      cmocka_unit_test(test_model_reduction_rate),
      cmocka_unit_test(test_model_rank_order),
      cmocka_unit_test(test_model_unsupported),
      cmocka_unit_test(test_system_roundtrip),
      cmocka_unit_test(test_ps_place_tensors),
      cmocka_unit_test(test_ps_server_rank),
      cmocka_unit_test(test_read_timeline_ps),
      cmocka_unit_test(test_read_timeline_dp),
      cmocka_unit_test(test_read_timeline_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
