/* The whole training run (sim/trainrun.c): every expected value worked out by hand from the
 * formulas of docs/trainrun.md (Young 1974, Daly 2006), with the arithmetic in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "trainrun.h"
#include "util.h"

static void near(double got, double want, double rel)
{
  if (!(fabs(got - want) <= rel * fabs(want))) {
    print_error("got %.12g, want %.12g\n", got, want);
    fail();
  }
}

/* Young: sqrt(2 d M) with d = 60 s, M = 10 h = 36000 s: sqrt(4 320 000) = 2078.4610 s. */
static void test_young(void **state)
{
  (void)state;
  near(sim_trainrun_young_interval_s(60, 36000), 2078.460969, 1e-9);
}

/* Daly's higher order, same d and M: x = d / 2M = 60 / 72000 = 1/1200, sqrt(x) = 0.0288675,
 * factor 1 + 0.0288675/3 + (1/1200)/9 = 1 + 0.0096225 + 0.0000926 = 1.0097151;
 * 2078.4610 x 1.0097151 = 2098.6534; less d: 2038.6534 s. At d >= 2M the interval is M. No
 * write cost or no failures: no checkpoints (0). */
static void test_daly(void **state)
{
  (void)state;
  near(sim_trainrun_daly_interval_s(60, 36000), 2038.653419, 1e-8);
  near(sim_trainrun_daly_interval_s(100, 40), 40, 1e-12);
  near(sim_trainrun_daly_interval_s(80, 40), 40, 1e-12);
  assert_true(sim_trainrun_daly_interval_s(0, 36000) == 0);
  assert_true(sim_trainrun_daly_interval_s(60, 0) == 0);
}

/* Daly's wall time. M = 36000 s, t = 3540 s, d = 60 s: (t + d)/M = 0.1 and e^0.1 - 1 =
 * 0.10517092. Ts = 35400 s is 10 intervals: Tw = 36000 x 0.10517092 x 10 = 37861.531 s. A
 * restart of R = 360 s multiplies by e^(R/M) = e^0.01 = 1.01005017: 38242.045 s. */
static void test_wall(void **state)
{
  (void)state;
  near(sim_trainrun_wall_s(35400, 3540, 60, 0, 36000), 37861.53051, 1e-9);
  near(sim_trainrun_wall_s(35400, 3540, 60, 360, 36000), 38242.04521, 1e-9);
  /* No failures: every 600 s of work pays 60 s of checkpoint: 6000 s -> 6600 s; without
   * checkpoints the work alone. */
  near(sim_trainrun_wall_s(6000, 600, 60, 0, 0), 6600, 1e-12);
  near(sim_trainrun_wall_s(6000, 0, 0, 0, 0), 6000, 1e-12);
  /* Free continuous checkpoints (t = d = 0): only the restarts cost, Ts e^(R/M) = 3600 e^0.01
   * = 3636.1806 s with R = 36 s, M = 3600 s. */
  near(sim_trainrun_wall_s(3600, 0, 0, 36, 3600), 3636.180602, 1e-9);
  /* Failures every 0.0036 s and checkpoints of 60 s: e^(16667) overflows. */
  assert_true(isinf(sim_trainrun_wall_s(3600, 0.0036, 60, 0, 0.0036)));
}

/* A whole run: 10 devices of MTBF 100 h each fail as a job every 100 x 3600 / 10 = 36000 s.
 * 100 samples per iteration of 3.54 s, 999 901 samples: ceil(9999.01) = 10000 iterations,
 * Ts = 35400 s. Interval 3540 s, checkpoint 60 s: Tw = 37861.531 s (above); failures
 * Tw / M = 1.0517092; goodput 35400 / 37861.531 = 0.9349860; at 2.50 USD per device-hour,
 * 10 x 37861.531 / 3600 x 2.5 = 262.92730 USD. */
static void test_run(void **state)
{
  (void)state;
  sim_trainrun_opts o = {.train_samples = 999901, .gpu_hour_cost_usd = 2.5, .mtbf_hours = 100,
                         .checkpoint_interval_s = 3540, .checkpoint_write_s = 60};
  sim_trainrun_step st = {.iteration_time_s = 3.54, .samples_per_iteration = 100,
                          .devices = 10};
  sim_trainrun r;
  GError *error = NULL;
  assert_true(sim_trainrun_compute(&o, &st, &r, &error));
  assert_int_equal(r.iterations, 10000);
  near(r.solve_time_s, 35400, 1e-12);
  near(r.job_mtbf_s, 36000, 1e-12);
  near(r.train_time_s, 37861.53051, 1e-9);
  near(r.expected_failures, 1.051709181, 1e-9);
  near(r.goodput, 0.9349859746, 1e-9);
  assert_true(r.has_cost);
  near(r.train_cost_usd, 262.9272952, 1e-9);
  /* Exactly 100 x 10000 samples: still 10000 iterations; one more sample: 10001. */
  o.train_samples = 1000000;
  assert_true(sim_trainrun_compute(&o, &st, &r, &error));
  assert_int_equal(r.iterations, 10000);
  o.train_samples = 1000001;
  assert_true(sim_trainrun_compute(&o, &st, &r, &error));
  assert_int_equal(r.iterations, 10001);
  /* No interval given: Daly's optimum for d = 60 s, M = 36000 s (2038.6534 s, above). */
  o.checkpoint_interval_s = 0;
  assert_true(sim_trainrun_compute(&o, &st, &r, &error));
  near(r.checkpoint_interval_s, 2038.653419, 1e-8);
  /* Without a price there is no cost. */
  o.gpu_hour_cost_usd = -1;
  assert_true(sim_trainrun_compute(&o, &st, &r, &error));
  assert_false(r.has_cost);
}

/* Tokens: 8 sequences of 2048 tokens per iteration = 16384 tokens; 1e9 tokens is
 * ceil(61035.156) = 61036 iterations; at 0.5 s, 30518 s with no failures and no checkpoints
 * (goodput 1, no failures). */
static void test_tokens(void **state)
{
  (void)state;
  sim_trainrun_opts o = {.train_tokens = 1000000000, .gpu_hour_cost_usd = -1};
  sim_trainrun_step st = {.iteration_time_s = 0.5, .samples_per_iteration = 8,
                          .tokens_per_iteration = 16384, .devices = 64};
  sim_trainrun r;
  GError *error = NULL;
  assert_true(sim_trainrun_compute(&o, &st, &r, &error));
  assert_int_equal(r.iterations, 61036);
  near(r.train_time_s, 30518, 1e-12);
  near(r.goodput, 1, 1e-15);
  assert_true(r.expected_failures == 0);
  assert_true(r.checkpoint_interval_s == 0);
}

static void test_refusals(void **state)
{
  (void)state;
  sim_trainrun r;
  GError *error = NULL;
  /* Tokens of a model without sequences. */
  sim_trainrun_opts o = {.train_tokens = 1000, .gpu_hour_cost_usd = -1};
  sim_trainrun_step st = {.iteration_time_s = 1, .samples_per_iteration = 64, .devices = 8};
  assert_false(sim_trainrun_compute(&o, &st, &r, &error));
  assert_true(g_error_matches(error, DT_ERROR, DT_ERROR_INPUT));
  assert_non_null(strstr(error->message, "--train-tokens"));
  g_clear_error(&error);
  /* A million devices of MTBF 1 h fail every 3.6 ms; checkpoints of 60 s never finish. */
  sim_trainrun_opts f = {.train_samples = 64, .gpu_hour_cost_usd = -1, .mtbf_hours = 1,
                         .checkpoint_write_s = 60, .mtbf_where = "x.ini:3: [scenario] mtbf-hours"};
  st.devices = 1000000;
  assert_false(sim_trainrun_compute(&f, &st, &r, &error));
  assert_non_null(strstr(error->message, "x.ini:3: [scenario] mtbf-hours"));
  g_clear_error(&error);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_young),  cmocka_unit_test(test_daly),   cmocka_unit_test(test_wall),
      cmocka_unit_test(test_run),    cmocka_unit_test(test_tokens), cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
