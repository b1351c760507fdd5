/* Unit tests of dtsim-mpi's MPI-free parts: statistics, the latency/bandwidth fit, size lists,
 * the argument hash, the algorithm table (against ompi_info when it is installed), the
 * closed-form predictions and the system file. Expected values are worked out by hand in the
 * comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "comm_mpi.h"
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
  assert_null(comm_mpi_algorithm_find(COMM_MPI_BROADCAST, "ring", &error));
  assert_non_null(strstr(error->message, "binomial, pipeline, scatter-allgather"));
  comm_mpi_op op;
  assert_true(comm_mpi_op_parse("reduce-scatter", &op, NULL) && op == COMM_MPI_REDUCE_SCATTER);
  assert_false(comm_mpi_op_parse("alltoall", &op, NULL));
}

/* The numbers of the table are Open MPI's: each must appear in ompi_info's list of
 * enumerators for its variable with the same name. Skipped when ompi_info is missing. */
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
  }
}

static comm_mpi_system one_node(void)
{
  /* 1 us and 1 GB/s inside a node; reductions at 1 GB/s. */
  comm_mpi_system s = {.nodes = 1, .ranks_per_node = 4, .intra = {1000, 1}, .inter = {1000, 1},
                       .intra_measured = TRUE, .inter_measured = TRUE, .reduce_GBps = 0};
  return s;
}

static double predict(const comm_mpi_system *s, comm_mpi_op op, const char *name, uint64_t bytes,
                      uint32_t ranks)
{
  double t = -1;
  g_autoptr(GError) error = NULL;
  const comm_mpi_algorithm *a = comm_mpi_algorithm_find(op, name, &error);
  assert_non_null(a);
  if (!comm_mpi_predict(s, a, bytes, ranks, &t, &error))
    fail_msg("%s", error->message);
  return t;
}

static void test_predict_one_node(void **state)
{
  comm_mpi_system s = one_node();
  /* n = 4e6 bytes on p = 4 ranks; a step of b bytes costs 1e-6 + b / 1e9 s. */
  /* Ring allreduce: 2(p-1) = 6 steps of n/p = 1e6 bytes: 6 * 1.001e-3. */
  assert_close(predict(&s, COMM_MPI_ALLREDUCE, "ring", 4000000, 4), 6.006e-3, 1e-12);
  /* Recursive doubling: log2 4 = 2 steps of the whole 4e6 bytes: 2 * 4.001e-3. */
  assert_close(predict(&s, COMM_MPI_ALLREDUCE, "recursive-doubling", 4000000, 4), 8.002e-3, 1e-12);
  /* Rabenseifner: halving 2e6 then 1e6, doubling 1e6 then 2e6: 2 * (2.001e-3 + 1.001e-3). */
  assert_close(predict(&s, COMM_MPI_ALLREDUCE, "halving-doubling", 4000000, 4), 6.004e-3, 1e-12);
  /* Ring allgather: 3 steps of 1e6 bytes. Bruck: 1 block then 2 blocks. */
  assert_close(predict(&s, COMM_MPI_ALLGATHER, "ring", 4000000, 4), 3.003e-3, 1e-12);
  assert_close(predict(&s, COMM_MPI_ALLGATHER, "bruck", 4000000, 4), 3.002e-3, 1e-12);
  /* Binomial broadcast: 2 rounds of 4e6 bytes; unsegmented chain: 3 hops of 4e6 bytes;
   * scatter-allgather: 2e6 + 1e6 scattered, 1e6 + 2e6 gathered. */
  assert_close(predict(&s, COMM_MPI_BROADCAST, "binomial", 4000000, 4), 8.002e-3, 1e-12);
  assert_close(predict(&s, COMM_MPI_BROADCAST, "pipeline", 4000000, 4), 12.003e-3, 1e-12);
  assert_close(predict(&s, COMM_MPI_BROADCAST, "scatter-allgather", 4000000, 4), 6.004e-3, 1e-12);
  /* With reductions at 1 GB/s, ring reduce-scatter adds 1e6 bytes reduced per step. */
  s.reduce_GBps = 1;
  assert_close(predict(&s, COMM_MPI_REDUCE_SCATTER, "ring", 4000000, 4), 6.003e-3, 1e-12);
}

static void test_predict_two_nodes(void **state)
{
  /* 2 nodes x 2 ranks; inside a node 1 us, 1 GB/s; between nodes 10 us, 0.1 GB/s. */
  comm_mpi_system s = one_node();
  s.nodes = 2;
  s.ranks_per_node = 2;
  s.inter = (comm_mpi_fabric){10000, 0.1};
  /* Every ring step has a pair across nodes (1 -> 2, 3 -> 0): 6 * (1e-5 + 1e6 / 1e8). */
  assert_close(predict(&s, COMM_MPI_ALLREDUCE, "ring", 4000000, 4), 0.06006, 1e-12);
  /* Recursive doubling: partners r^1 share a node, r^2 do not: 4.001e-3 + (1e-5 + 4e-2). */
  assert_close(predict(&s, COMM_MPI_ALLREDUCE, "recursive-doubling", 4000000, 4), 0.044011, 1e-12);
}

static void test_predict_unsupported(void **state)
{
  comm_mpi_system s = one_node();
  const comm_mpi_algorithm *rd = comm_mpi_algorithm_find(COMM_MPI_ALLREDUCE, "recursive-doubling", NULL);
  double t;
  g_autoptr(GError) error = NULL;
  assert_false(comm_mpi_predict(&s, rd, 1024, 3, &t, &error));
  assert_non_null(strstr(error->message, "power-of-two"));
}

static void test_system_roundtrip(void **state)
{
  g_autofree char *dir = g_dir_make_tmp("dtsim-mpi-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "sys.ini", NULL);
  comm_mpi_system s = one_node();
  s.name = g_strdup("unit");
  s.inter = (comm_mpi_fabric){12345.6, 0.125};
  s.inter_measured = FALSE;
  s.reduce_GBps = 7.5;
  g_autoptr(GError) error = NULL;
  assert_true(comm_mpi_system_write(&s, "unit test", path, &error));
  comm_mpi_system back = {0};
  assert_true(comm_mpi_system_read(path, &back, &error));
  assert_string_equal(back.name, "unit");
  assert_close(back.inter.latency_ns, 12345.6, 1e-6);
  assert_close(back.inter.bandwidth_GBps, 0.125, 1e-6);
  assert_close(back.intra.bandwidth_GBps, 1.0, 1e-6);
  assert_close(back.reduce_GBps, 7.5, 1e-6);
  assert_int_equal(back.ranks_per_node, 4);
  /* A file missing a fabric is refused with the file, line and key named. */
  g_autofree char *bad = g_build_filename(dir, "bad.ini", NULL);
  g_assert_true(g_file_set_contents(bad, "[intra]\nbandwidth_GBps = 1\nlatency_ns = 5\n", -1, NULL));
  g_autoptr(GError) e2 = NULL;
  assert_false(comm_mpi_system_read(bad, &back, &e2));
  assert_non_null(strstr(e2->message, "inter"));
  comm_mpi_system_clear(&s);
  comm_mpi_system_clear(&back);
  g_unlink(path);
  g_unlink(bad);
  g_rmdir(dir);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_median),
      cmocka_unit_test(test_fit_exact_line),
      cmocka_unit_test(test_fit_relative_weighting),
      cmocka_unit_test(test_fit_negative_intercept),
      cmocka_unit_test(test_fit_errors),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_sizes),
      cmocka_unit_test(test_hash),
      cmocka_unit_test(test_algorithm_table),
      cmocka_unit_test(test_algorithm_numbers_match_ompi_info),
      cmocka_unit_test(test_predict_one_node),
      cmocka_unit_test(test_predict_two_nodes),
      cmocka_unit_test(test_predict_unsupported),
      cmocka_unit_test(test_system_roundtrip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
