/* Tests of sim/app/search.c: the space enumerated (counted by hand), the best configuration of a
 * small case (worked out by hand), Kendall's tau, and the same output on one and two threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "coll.h"
#include "plan.h"
#include "strategy.h"
#include "svg.h"
#include "sweep.h"
#include "search.h"
#include "util.h"

/* Two devices behind one switch, 10 GB/s and 2.5 us per hop (see the file). */
#define PAIR DTSIM_TEST_DIR "/../cli/data/pair.ini"

static void set(sim_scenario *s, const char *key, const char *value)
{
  g_autoptr(GError) error = NULL;
  gboolean ok = sim_scenario_set(s, key, value, NULL, &error);
  if (!ok)
    fail_msg("%s=%s: %s", key, value, error->message);
}

/* A search of the demo workload on the pair, with extra key=value settings. */
static sim_search *demo_search(const char *const *settings, int jobs)
{
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  set(&s, "model", "demo");
  set(&s, "system", PAIR);
  for (const char *const *kv = settings; *kv; kv += 2)
    set(&s, kv[0], kv[1]);
  char text[16];
  g_snprintf(text, sizeof text, "%d", jobs);
  set(&s, "jobs", text);
  g_autoptr(GError) error = NULL;
  if (!sim_search_check(&s, &error))
    fail_msg("check: %s", error->message);
  sim_search *S = sim_search_new(&s, &error);
  if (!S)
    fail_msg("new: %s", error->message);
  if (!sim_search_run(S, NULL, NULL, &error))
    fail_msg("run: %s", error->message);
  return S;
}

/* The allreduce algorithms a search tries: not the "auto" rule, which stands for one of them. */
static guint allreduce_algorithms(void)
{
  guint n = 0;
  for (size_t i = 0; i < comm_coll_algorithm_count(); i++) {
    const comm_coll_algorithm *a = comm_coll_algorithm_at(i);
    n += comm_coll_algorithm_supports(a, COMM_COLL_ALLREDUCE) && !comm_coll_algorithm_is_rule(a);
  }
  return n;
}

/* Data parallel, ring, overlap off, batch 32 per device on the pair: only the bucket size
 * varies (1, 5, 25, 64 MiB). The demo's gradients in backward order are fc 64 MiB, conv2
 * 16 MiB, conv1 4 MiB, and a bucket closes when it reaches the size: 1 and 5 MiB make three
 * buckets, 25 and 64 MiB make two (64; 16 + 4 = 20). A ring allreduce of b bytes over two
 * devices: two steps, each 5 us (two hops of 2.5 us) + (b/2) / 10 GB/s, and one sum of b/2
 * at the demo's 300 GB/s. Over the buckets the bytes add up to 84 MiB whatever the split, so
 * each bucket adds 2 x 5 us: fc 6.83273451 ms + conv 2.14210453 ms = 8.97483904 ms with two
 * buckets, 8.98483904 ms with three. Iteration = forward 6.1 + backward 10.1 + allreduce +
 * update (84 MiB x 4 / 300 GB/s = 1.17440512 ms): 26.34924416 ms with two buckets,
 * 26.35924416 ms with three. Best: 25 MiB (64 MiB ties and comes after it in the table). */
static void test_best_by_hand(void **state)
{
  (void)state;
  const char *settings[] = {"strategy", "dp", "allreduce", "ring", "overlap", "off",
                            "batch", "32", NULL};
  g_autoptr(sim_search) S = demo_search(settings, 1);
  assert_int_equal(sim_search_n_combinations(S), 4);
  assert_int_equal(sim_search_n_rows(S), 4);
  const double want[] = {26.34924416e-3, 26.34924416e-3, 26.35924416e-3, 26.35924416e-3};
  const char *labels[] = {"dp bucket-mib=25 batch=32", "dp bucket-mib=64 batch=32",
                          "dp bucket-mib=1 batch=32", "dp bucket-mib=5 batch=32"};
  for (guint k = 0; k < 4; k++) {
    const sim_search_result *r;
    guint i = sim_search_row(S, k, &r);
    assert_int_equal(r->status, SIM_SEARCH_OK);
    /* The rows are ranked on the flow network, which agrees with the analytic closed form
     * here to 0.5 % (tests/cli: "flow model agrees with analytic"). */
    assert_true(fabs(r->report.iteration_time_s - want[k]) <= 0.005 * want[k]);
    assert_string_equal(sim_search_label(S, i), labels[k]);
  }
  /* The analytic results are the closed forms to the picosecond. */
  const sim_search_result *a = sim_search_analytic(S);
  for (guint i = 0; i < 4; i++) {
    const char *l = sim_search_label(S, i);
    double w = strstr(l, "=25 ") || strstr(l, "=64 ") ? 26.34924416e-3 : 26.35924416e-3;
    assert_true(fabs(a[i].report.iteration_time_s - w) <= 1e-9 * w);
  }
}

/* The whole space of the demo on the pair at a global batch of 48: dp is A algorithms x 4
 * buckets; ps is 2 counts (1 and 2: one node, two devices) x 4 placements; pp is 7 micro-batch
 * counts (1..64) x 2 schedules, of which 32 and 64 do not divide 48 (4 dropped); hybrid dp-pp
 * needs a stage count strictly between 1 and 2 devices (none); owt is one configuration, which
 * the strategy refuses (the demo has no fully connected tail). */
static void test_space_by_hand(void **state)
{
  (void)state;
  const char *settings[] = {"global-batch", "48", "top", "3", NULL};
  g_autoptr(sim_search) S = demo_search(settings, 2);
  guint A = allreduce_algorithms();
  assert_int_equal(sim_search_n_combinations(S), 4 * A + 8 + 14 + 1);
  assert_int_equal(sim_search_n_candidates(S), 4 * A + 8 + 10 + 1);
  guint count = 0;
  const char *reason = sim_search_drop(S, 0, &count);
  assert_non_null(reason);
  assert_non_null(strstr(reason, "micro-batches"));
  assert_int_equal(count, 4);
  assert_null(sim_search_drop(S, 1, &count));
  /* Every dp and ps candidate trains 24 samples per device, every pp one 48 per pipeline. */
  const sim_search_result *a = sim_search_analytic(S);
  guint refused_owt = 0;
  for (guint i = 0; i < sim_search_n_candidates(S); i++) {
    const char *l = sim_search_label(S, i);
    /* auto is nccl on GPUs: the same candidate as allreduce=nccl, never tried twice. */
    assert_null(strstr(l, "allreduce=auto"));
    if (g_str_has_prefix(l, "hybrid hybrid=owt")) {
      refused_owt += a[i].status == SIM_SEARCH_REFUSED;
      continue;
    }
    if (a[i].status == SIM_SEARCH_OK)
      assert_int_equal(a[i].report.samples_per_iteration, 48);
  }
  assert_int_equal(refused_owt, 1);
  assert_int_equal(sim_search_n_rows(S), 3);
}

static guint drops(const sim_search *S, const char *words)
{
  guint count = 0;
  const char *reason;
  for (guint k = 0; (reason = sim_search_drop(S, k, &count)) != NULL; k++)
    if (strstr(reason, words))
      return count;
  return 0;
}

/* The 3d space of a small transformer (4 layers, 4 heads) on 8 devices, 4 per node, global
 * batch 16, counted by hand. Axes: tp in {1, 2, 4} (divisors of 4 devices per node), pp in
 * {1, 2, 4} (divisors of 4 layers), micro-batch in {1, 2, 4, 8} (divisors of 16 up to 8),
 * schedule 1f1b or interleaved with V = 2 or 4 (the divisors of the 4 layers from 2: 3 values),
 * sequence parallelism off or on, 3 recompute modes, 4 ZeRO stages:
 * 3 x 3 x 4 x 3 x 2 x 3 x 4 = 2592 combinations; each (tp, pp, micro-batch, schedule, sequence
 * parallelism) stands for 12 of them (recompute x ZeRO). In the order of the checks:
 * - tp x pp must divide 8: only (4, 4) fails: 4 x 3 x 2 x 12 = 288.
 * - (2, 4) and (4, 2) leave dp = 1, where ZeRO 1 to 3 has nothing to shard: 2 x 4 x 3 x 2 x 3
 *   x 3 = 432; these two stand for 3 combinations each (recompute) from here on.
 * - Sequence parallelism needs tp > 1: (1, 1), (1, 2) and (1, 4) with it on: 3 x 4 x 3 x 12
 *   = 432.
 * - dp = 8 / (tp pp) leaves 16 / dp = 2 tp pp samples per replica, which the micro-batch must
 *   divide: (1, 1) fails for 4 and 8, (1, 2) and (2, 1) for 8: with the sequence parallelism
 *   left (off only for tp 1) (2 x 1 + 1 x 1 + 1 x 2) x 3 x 12 = 180.
 * - Interleaving needs pp > 1 and a block per model chunk (pp x V <= 4 layers: only pp 2 with
 *   V 2): every V of pp 1, (1, 1) 2 x 1 + (2, 1) 3 x 2 + (4, 1) 4 x 2 = 16 micro-batch and
 *   sequence-parallel pairs, x 2 V x 12 = 384; V 4 of pp 2, (1, 2) 3 x 12 + (2, 2) 8 x 12 +
 *   (4, 2) 8 x 3 = 156; every V of pp 4, (1, 4) 4 x 2 x 12 + (2, 4) 8 x 2 x 3 = 144: 684.
 * - Interleaving also needs micro-batches (samples per replica / micro-batch) a multiple of
 *   pp = 2: (1, 2) with micro-batch 4 (12) and (2, 2) with 8 (2 x 12) leave one: 36.
 * - The search keeps to even chunks (4 blocks on pp 2 x V 2 are): 0 dropped.
 * Left: 2592 - 288 - 432 - 432 - 180 - 684 - 36 = 540 candidates; counted the other way, 1f1b
 * 24 + 36 + 48 + 72 + 96 + 96 + 24 + 24 = 420 and V 2 on pp 2 24 + 72 + 24 = 120.  * The framework and offload axes are fixed (megatron, none); on two nodes the sharding group
 * is an axis of two values: all of dp (the 2592 above) and one node's 4 devices (2592 more),
 * where after tp x pp (288) and ZeRO with dp = 1 (432) come the sharding group's rules: ZeRO 0
 * of the 8 dividing (tp, pp) pairs, 8 x 4 x 3 x 2 x 3 = 576; ZeRO 1-3 with dp = 2 ((1, 4),
 * (4, 1), (2, 2)), 3 x 4 x 3 x 2 x 9 = 648. Of (1, 1), (1, 2), (2, 1) with ZeRO 1-3: sequence
 * parallelism with tp 1, 2 x 4 x 3 x 9 = 216; micro-batches, (1, 1) 4 and 8, (1, 2) and
 * (2, 1) 8: (2 + 1) x 3 x 9 + 1 x 3 x 2 x 9 = 135; interleaving with pp 1, (1, 1) 2 x 2 x 9 +
 * (2, 1) 3 x 2 x 2 x 9 = 144, and V 4 with pp 2, 3 x 9 = 27: 171; (1, 2) V 2 with one
 * micro-batch of 4, 9; the 117 left have a sharding group with megatron, which the search's
 * bound drops (it tries sharding groups with per-block frameworks only): 540 candidates. */
static void test_3d_space_by_hand(void **state)
{
  (void)state;
  if (!sim_strategy_find("3d"))
    skip();
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  set(&s, "model", "transformer:layers=4,hidden=64,heads=4,seq=32,vocab=128");
  set(&s, "system", "dgx-a100");
  set(&s, "nodes", "2");
  set(&s, "devices-per-node", "4");
  set(&s, "global-batch", "16");
  set(&s, "precision", "bf16");
  set(&s, "net-model", "analytic");
  set(&s, "top", "3");
  set(&s, "framework", "megatron");
  set(&s, "offload", "none");
  g_autoptr(GError) error = NULL;
  if (!sim_search_check(&s, &error))
    fail_msg("check: %s", error->message);
  g_autoptr(sim_search) S = sim_search_new(&s, &error);
  if (!S)
    fail_msg("new: %s", error->message);
  assert_int_equal(sim_search_n_combinations(S), 2 * 2592);
  assert_int_equal(drops(S, "tp x pp"), 2 * 288);
  assert_int_equal(drops(S, "ZeRO needs a data-parallel group"), 2 * 432);
  assert_int_equal(drops(S, "a shard group needs ZeRO"), 576);
  assert_int_equal(drops(S, "shard group does not divide dp"), 648);
  assert_int_equal(drops(S, "sequence parallelism needs tp > 1"), 432 + 216);
  assert_int_equal(drops(S, "micro-batches do not divide"), 180 + 135);
  assert_int_equal(drops(S, "pp > 1"), 684 + 171);
  assert_int_equal(drops(S, "multiple of pp"), 36 + 9);
  assert_int_equal(drops(S, "unequal blocks"), 0);
  assert_int_equal(drops(S, "memory"), 0);
  assert_int_equal(drops(S, "sharding groups with per-block frameworks"), 117);
  assert_int_equal(sim_search_n_candidates(S), 540);
}

/* Axis bounds: the least of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k at or above the value,
 * never beyond 4/3 times it (from 1.5, 3 or 6 to the next step). The demo's throughput axis (21105 samples/s with its 5% margin)
 * ran to 50000, 2.37 times it; it is 25000. */
static void test_nice_ceiling(void **state)
{
  (void)state;
  assert_true(trace_svg_nice_ceiling(21105) == 25000);
  assert_true(trace_svg_nice_ceiling(1.05) == 1.2);
  assert_true(trace_svg_nice_ceiling(100) == 100);
  assert_true(trace_svg_nice_ceiling(101) == 120);
  assert_true(trace_svg_nice_ceiling(610) == 800);
  assert_true(trace_svg_nice_ceiling(0) == 1);
  for (double v = 0.013; v < 1e7; v *= 1.07) {
    double c = trace_svg_nice_ceiling(v);
    if (c < v || c > v * 4.0 / 3.0 * (1 + 1e-12))
      fail_msg("nice ceiling of %g is %g", v, c);
  }
}

static void test_kendall_tau(void **state)
{
  (void)state;
  const double a[] = {4, 3, 2, 1};
  const double rev[] = {1, 2, 3, 4};
  /* One swap among three: pairs (1,2) (1,3) concordant, (2,3) discordant: 1/3. */
  const double x[] = {3, 2, 1}, y[] = {3, 1, 2};
  assert_true(fabs(sim_search_kendall_tau(a, a, 4) - 1) < 1e-12);
  assert_true(fabs(sim_search_kendall_tau(a, rev, 4) + 1) < 1e-12);
  assert_true(fabs(sim_search_kendall_tau(x, y, 3) - 1.0 / 3) < 1e-12);
  /* Ties in both scores do not count against agreement (tau-b): 4 concordant of 4 untied. */
  const double t[] = {3, 2, 2, 1};
  assert_true(fabs(sim_search_kendall_tau(t, t, 4) - 1) < 1e-12);
  /* Tied in one score only: 2 concordant, 0 discordant over sqrt(3 x 2) untied pairs. */
  const double u[] = {2, 1, 1}, v[] = {3, 2, 1};
  assert_true(fabs(sim_search_kendall_tau(u, v, 3) - 2 / sqrt(6)) < 1e-12);
}

static char *printed(const sim_search *S)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  g_autoptr(trace_search_table) t = sim_search_table(S);
  trace_search_print(t, FALSE, f, f);
  fclose(f);
  return buf;
}

/* The same search on one and on two threads prints the same bytes. */
static void test_threads_same_output(void **state)
{
  (void)state;
  const char *settings[] = {"global-batch", "64", "top", "8", NULL};
  g_autoptr(sim_search) one = demo_search(settings, 1);
  g_autoptr(sim_search) two = demo_search(settings, 2);
  g_autofree char *a = printed(one);
  g_autofree char *b = printed(two);
  assert_string_equal(a, b);
  assert_non_null(strstr(a, "rank"));
}

/* A small 3-D search, pruned by the time bounds or not (every candidate simulated). */
static sim_search *tf_search(gboolean prune, int jobs)
{
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  set(&s, "model", "transformer:layers=8,hidden=1024,heads=16,seq=1024,vocab=32000");
  set(&s, "system", "dgx-a100");
  set(&s, "nodes", "2");
  set(&s, "global-batch", "64");
  set(&s, "precision", "bf16");
  set(&s, "top", "5");
  set(&s, "offload", "none");
  char text[16];
  g_snprintf(text, sizeof text, "%d", jobs);
  set(&s, "jobs", text);
  g_autoptr(GError) error = NULL;
  if (!sim_search_check(&s, &error))
    fail_msg("check: %s", error->message);
  sim_search *S = sim_search_new(&s, &error);
  if (!S)
    fail_msg("new: %s", error->message);
  sim_search_set_pruning(S, prune);
  if (!sim_search_run(S, NULL, NULL, &error))
    fail_msg("run: %s", error->message);
  return S;
}

static char *printed_rows(const sim_search *S)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  FILE *null = fopen("/dev/null", "w");
  g_autoptr(trace_search_table) t = sim_search_table(S);
  trace_search_print(t, TRUE, f, null);
  fclose(null);
  fclose(f);
  return buf;
}

/* The time bound is a lower bound of every simulated candidate's analytic iteration, and
 * pruning by it leaves the best rows as simulating every candidate finds them, byte for byte,
 * while simulating fewer candidates; on one thread or two the pruned search is the same. */
static void test_pruning_keeps_the_best(void **state)
{
  (void)state;
  if (!sim_strategy_find("3d"))
    skip();
  g_autoptr(sim_search) all = tf_search(FALSE, 2);
  guint n = sim_search_n_candidates(all);
  assert_true(n > 100);
  assert_int_equal(drops(all, "lower bound of its time"), 0);
  const sim_search_result *analytic = sim_search_analytic(all);
  guint unfit = 0;
  for (guint i = 0; i < n; i++) {
    uint64_t memory;
    int64_t b = sim_search_bound_ps(all, i, &memory);
    if (b <= 0)
      fail_msg("%s: no bound", sim_search_label(all, i));
    if (analytic[i].status == SIM_SEARCH_REFUSED)
      continue;
    /* The plan's memory known before simulating is the simulation's. */
    assert_int_equal(memory, analytic[i].report.memory_per_device_bytes);
    unfit += analytic[i].status == SIM_SEARCH_NO_FIT;
    double t = analytic[i].report.iteration_time_s;
    if ((double)b * 1e-12 > t)
      fail_msg("%s: bound %.9f s above its time %.9f s", sim_search_label(all, i),
               (double)b * 1e-12, t);
  }
  g_autoptr(sim_search) pruned = tf_search(TRUE, 2);
  g_autoptr(sim_search) pruned1 = tf_search(TRUE, 1);
  guint left_out = drops(pruned, "lower bound of its time");
  assert_true(left_out > n / 2);
  guint unfit_before = drops(pruned, "its plan, before simulating");
  assert_true(unfit_before <= unfit);
  assert_int_equal(sim_search_n_candidates(pruned) + left_out + unfit_before, n);
  g_autofree char *a = printed_rows(all);
  g_autofree char *b = printed_rows(pruned);
  g_autofree char *c = printed_rows(pruned1);
  assert_string_equal(a, b);
  assert_string_equal(b, c);
  g_autofree char *s2 = printed(pruned);
  g_autofree char *s1 = printed(pruned1);
  assert_string_equal(s1, s2);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_best_by_hand),
      cmocka_unit_test(test_space_by_hand),
      cmocka_unit_test(test_3d_space_by_hand),
      cmocka_unit_test(test_nice_ceiling), cmocka_unit_test(test_kendall_tau),
      cmocka_unit_test(test_threads_same_output),
      cmocka_unit_test(test_pruning_keeps_the_best),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
