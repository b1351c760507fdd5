/* Expert-parallel all-to-alls under another micro-batch's compute (sim/strategies/ep_overlap.c)
 * and --ep-overlap through `run`, each against a hand calculation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ep_overlap.h"

/* Forward all-to-alls 10 us under a 30 us backward: all hidden, the backward 10 x 20 / 112 =
 * 1.786 us longer for the 20 of 132 SMs they hold. Backward all-to-alls 20 us under a 15 us
 * forward: 5 us show, the forward 15 x 20 / 112 = 2.679 us longer. */
static void test_split(void **state)
{
  (void)state;
  const int64_t us = 1000000;
  int64_t a2a[2] = {10 * us, 20 * us}, compute[2] = {15 * us, 30 * us};
  sim_ep_overlap ov;
  sim_ep_overlap_time(a2a, compute, 132, 20, &ov);
  assert_int_equal(ov.exposed_ps[0], 0);
  assert_int_equal(ov.exposed_ps[1], 5 * us);
  assert_int_equal(ov.slower_ps[1], 1785714);
  assert_int_equal(ov.slower_ps[0], 2678571);
}

/* No SMs held: the hidden part costs nothing; no compute to hide under: everything shows. */
static void test_limits(void **state)
{
  (void)state;
  int64_t a2a[2] = {7, 9}, compute[2] = {100, 100}, none[2] = {0, 0};
  sim_ep_overlap ov;
  sim_ep_overlap_time(a2a, compute, 132, 0, &ov);
  assert_int_equal(ov.exposed_ps[0], 0);
  assert_int_equal(ov.exposed_ps[1], 0);
  assert_int_equal(ov.slower_ps[0], 0);
  assert_int_equal(ov.slower_ps[1], 0);
  sim_ep_overlap_time(a2a, none, 132, 20, &ov);
  assert_int_equal(ov.exposed_ps[0], 7);
  assert_int_equal(ov.exposed_ps[1], 9);
  assert_int_equal(ov.slower_ps[0], 0);
  assert_int_equal(ov.slower_ps[1], 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split),
      cmocka_unit_test(test_limits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
