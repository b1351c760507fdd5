/* The hold-model benchmark's exponential sampler (bench/engine/exp_ziggurat.h) against the
 * exponential distribution of rate 1: mean 1, variance 1, P(X <= q) = 1 - exp(-q) at quantiles
 * from the body to the far tail (beyond the ziggurat's base strip at R = 7.697), and the
 * construction of its strips (equal areas, the last one ending at 0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "exp_ziggurat.h"

#define DRAWS 4000000

/* Every strip has the area V, so the recursion that builds them lands on x = 0 after 255
 * strips; strip 0 (rectangle of height exp(-R) plus the tail) has the area (R + 1) exp(-R). */
static void test_strips(void **state)
{
  static zig_exp z;
  zig_exp_init(&z, 1);
  assert_true(fabs((ZIG_EXP_R + 1.0) * exp(-ZIG_EXP_R) - ZIG_EXP_V) < 1e-12);
  double next = -log(ZIG_EXP_V / z.x[255] + exp(-z.x[255]));
  assert_true(fabs(next) < 1e-9);
  for (int i = 1; i < 256; i++)
    assert_true(fabs(z.x[i] * (z.f[i + 1] - z.f[i]) - ZIG_EXP_V) < 1e-12);
}

static void test_moments_and_quantiles(void **state)
{
  static zig_exp z;
  zig_exp_init(&z, 12345);
  static const double q[] = {0.01, 0.1, 0.5, 1.0, 2.0, 4.0, 7.0, 7.69711747013104972, 9.0, 12.0};
  enum { NQ = sizeof q / sizeof q[0] };
  uint64_t below[NQ] = {0};
  double sum = 0, sum2 = 0;
  for (int i = 0; i < DRAWS; i++) {
    double x = zig_exp_draw(&z);
    assert_true(x >= 0.0);
    sum += x;
    sum2 += x * x;
    for (int k = 0; k < NQ; k++)
      below[k] += x <= q[k];
  }
  double n = DRAWS, mean = sum / n, var = sum2 / n - mean * mean;
  /* Standard errors: sd/sqrt(n) = 5e-4 for the mean; the sample variance of an exponential
   * has variance (mu4 - sigma^4)/n = (9 - 1)/n, so 1.4e-3. Five of each. */
  if (fabs(mean - 1.0) > 5 * sqrt(1.0 / n))
    fail_msg("mean %.6f", mean);
  if (fabs(var - 1.0) > 5 * sqrt(8.0 / n))
    fail_msg("variance %.6f", var);
  for (int k = 0; k < NQ; k++) {
    double p = 1.0 - exp(-q[k]);
    double sd = sqrt(p * (1 - p) / n);
    /* The far tail: 1 - p = 6.1e-6 at 12, about 25 draws; five standard errors again. */
    if (fabs((double)below[k] / n - p) > 5 * sd + 1.0 / n)
      fail_msg("P(X <= %g) = %.7f, not %.7f (sd %.2g)", q[k], (double)below[k] / n, p, sd);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_strips),
      cmocka_unit_test(test_moments_and_quantiles),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
