/* Unit tests of the link model of dtsim-netwire (sim/app/mpi/wire.h). Times are worked out by hand
 * in the comments: rate 1e9 B/s puts one byte on a link per nanosecond. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "wire.h"

static void test_serialize(void **state)
{
  (void)state;
  g_autoptr(comm_wire) w = comm_wire_new(2, 1000000000, 0);
  assert_int_equal(comm_wire_serialize_ns(w, 1500), 1500);
  assert_int_equal(comm_wire_serialize_ns(w, 0), 0);
  /* 1 byte at 3 B/s: 1e9 / 3 = 333333333.3 ns, rounded up. */
  g_autoptr(comm_wire) slow = comm_wire_new(2, 3, 0);
  assert_int_equal(comm_wire_serialize_ns(slow, 1), 333333334);
  /* 65535 bytes at 125e6 B/s (1 Gbit/s): 524280 ns exactly. */
  g_autoptr(comm_wire) gbit = comm_wire_new(2, 125000000, 0);
  assert_int_equal(comm_wire_serialize_ns(gbit, 65535), 524280);
}

static void test_schedule(void **state)
{
  (void)state;
  /* Three hosts, 1e9 B/s, 1000 ns one way. */
  g_autoptr(comm_wire) w = comm_wire_new(3, 1000000000, 1000);
  /* One packet of 1000 B from 0 to 1 at t = 0: leaves 0..1000, starts to arrive at 1000 and is
   * whole at 2000 = delay + bytes / rate. */
  assert_int_equal(comm_wire_schedule(w, 0, 1, 1000, 0), 2000);
  /* A second one at t = 0 waits for the uplink: leaves 1000..2000, arrives 2000..3000. */
  assert_int_equal(comm_wire_schedule(w, 0, 1, 1000, 0), 3000);
  /* Host 2 sends to 1 at t = 0: its uplink is free (leaves 0..1000, could arrive from 1000),
   * but 1's downlink is busy until 3000: delivered at 4000. */
  assert_int_equal(comm_wire_schedule(w, 2, 1, 1000, 0), 4000);
  /* Host 1 sends to 0 at t = 0: full duplex, its uplink and 0's downlink are free: 2000. */
  assert_int_equal(comm_wire_schedule(w, 1, 0, 1000, 0), 2000);
  /* Handed in later than everything: 0 to 2 at 10000 leaves at once, whole at 12000. */
  assert_int_equal(comm_wire_schedule(w, 0, 2, 1000, 10000), 12000);
}

static void test_stream_is_alpha_beta(void **state)
{
  (void)state;
  /* 100 packets of 65535 B handed in at once over 1 Gbit/s and 100 us: the last is delivered
   * at 100 us + 100 * 524.28 us = 52528 us, the line dtsim-mpi calibrate fits. */
  g_autoptr(comm_wire) w = comm_wire_new(2, 125000000, 100000);
  int64_t last = 0;
  for (int i = 0; i < 100; i++)
    last = comm_wire_schedule(w, 0, 1, 65535, 0);
  assert_int_equal(last, 100000 + 100 * INT64_C(524280));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_serialize),
      cmocka_unit_test(test_schedule),
      cmocka_unit_test(test_stream_is_alpha_beta),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
