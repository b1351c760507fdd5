/* Pipeline schedules (sim/strategies/schedule.c): the orders written out by hand from their definitions
 * (GPipe: Huang et al. 2019; 1F1B: Narayanan et al. 2019, PipeDream-Flush; interleaved 1F1B:
 * Narayanan et al. 2021, Megatron-LM, section 2.2.2), and for many shapes the properties every
 * order must have: each pass once, a backward after its forward, and a peak of live activations
 * equal to the count memory is planned with (wl_tf_inflight_chunks, and sim_schedule_inflight
 * with warm-up forwards ahead). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "schedule.h"

/* An order as text: F or B, micro-batch, and with chunks ".chunk". */
static char *order_text(const sim_schedule_unit *u, size_t n, gboolean chunks)
{
  GString *t = g_string_new(NULL);
  for (size_t i = 0; i < n; i++) {
    g_string_append_printf(t, "%s%c%u", i ? " " : "", u[i].fwd ? 'F' : 'B', u[i].mb);
    if (chunks)
      g_string_append_printf(t, ".%u", u[i].chunk);
  }
  return g_string_free(t, FALSE);
}

static void expect_ahead(wl_schedule sched, uint32_t P, uint32_t s, uint32_t M, uint32_t V,
                         uint32_t ahead, const char *want)
{
  g_autofree sim_schedule_unit *u = g_new(sim_schedule_unit, 2 * (gsize)M * V);
  if (ahead)
    sim_schedule_order_ahead(sched, P, s, M, V, ahead, u);
  else
    sim_schedule_order(sched, P, s, M, V, u);
  g_autofree char *got = order_text(u, 2 * (size_t)M * V, V > 1);
  if (strcmp(got, want) != 0) {
    print_error("P %u stage %u M %u V %u:\n got  %s\n want %s\n", P, s, M, V, got, want);
    fail();
  }
}

static void expect(wl_schedule sched, uint32_t P, uint32_t s, uint32_t M, uint32_t V,
                   const char *want)
{
  expect_ahead(sched, P, s, M, V, 0, want);
}

/* GPipe: every forward, then the backwards last micro-batch first, on every stage. */
static void test_gpipe(void **state)
{
  (void)state;
  expect(WL_SCHED_GPIPE, 4, 0, 3, 1, "F0 F1 F2 B2 B1 B0");
  expect(WL_SCHED_GPIPE, 4, 3, 3, 1, "F0 F1 F2 B2 B1 B0");
}

/* 1F1B with P = 4, M = 5: stage 0 warms up with P - 1 = 3 forwards, then alternates, then
 * drains; the last stage (no warm-up) alternates from the start; with M = 2 < P - 1 the
 * warm-up is every forward. */
static void test_1f1b(void **state)
{
  (void)state;
  expect(WL_SCHED_1F1B, 4, 0, 5, 1, "F0 F1 F2 F3 B0 F4 B1 B2 B3 B4");
  expect(WL_SCHED_1F1B, 4, 2, 5, 1, "F0 F1 B0 F2 B1 F3 B2 F4 B3 B4");
  expect(WL_SCHED_1F1B, 4, 3, 5, 1, "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4");
  expect(WL_SCHED_1F1B, 4, 0, 2, 1, "F0 F1 B0 B1");
}

/* Interleaved, P = 2, V = 2, M = 4: forwards in groups of P micro-batches per chunk (0,1 on
 * chunk 0; 0,1 on chunk 1; 2,3 on chunk 0; 2,3 on chunk 1), backwards the same groups from the
 * last chunk. Stage 0 warms up (P - 1) 2 + (V - 1) P = 4 units, stage 1 (P - 2) 2 + 2 = 2. With
 * V = 1 the interleaved order is 1F1B's (P = 4, stage 1: two warm-up forwards). */
static void test_interleaved(void **state)
{
  (void)state;
  expect(WL_SCHED_INTERLEAVED, 2, 0, 4, 2,
         "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  expect(WL_SCHED_INTERLEAVED, 2, 1, 4, 2,
         "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
  expect(WL_SCHED_INTERLEAVED, 4, 1, 5, 1, "F0 F1 F2 B0 F3 B1 F4 B2 B3 B4");
}

/* One warm-up forward ahead (expert-parallel overlap, Megatron-Core's combined 1F1B): without
 * a pipeline F0, then each forward beside the previous micro-batch's backward, then the last
 * backward; on a pipeline every stage warms up one forward more (P = 4, M = 5: stage 0 four,
 * the last stage one), and no warm-up passes the M forwards there are. Interleaved (P = 2,
 * V = 2, M = 4) stage 1 warms up 3 units where it warmed up 2 (test_interleaved). GPipe does
 * not change. */
static void test_ahead(void **state)
{
  (void)state;
  expect_ahead(WL_SCHED_1F1B, 1, 0, 4, 1, 1, "F0 F1 B0 F2 B1 F3 B2 B3");
  expect_ahead(WL_SCHED_1F1B, 4, 0, 5, 1, 1, "F0 F1 F2 F3 F4 B0 B1 B2 B3 B4");
  expect_ahead(WL_SCHED_1F1B, 4, 2, 5, 1, 1, "F0 F1 F2 B0 F3 B1 F4 B2 B3 B4");
  expect_ahead(WL_SCHED_1F1B, 4, 3, 5, 1, 1, "F0 F1 B0 F2 B1 F3 B2 F4 B3 B4");
  expect_ahead(WL_SCHED_1F1B, 1, 0, 1, 1, 1, "F0 B0");
  expect_ahead(WL_SCHED_INTERLEAVED, 2, 1, 4, 2, 1,
               "F0.0 F1.0 F0.1 F1.1 B0.1 F2.0 B1.1 F3.0 B0.0 F2.1 B1.0 F3.1 B2.1 B3.1 B2.0 B3.0");
  expect_ahead(WL_SCHED_GPIPE, 4, 3, 3, 1, 1, "F0 F1 F2 B2 B1 B0");
  /* The activations kept: one micro-batch more, at most all of them. */
  assert_int_equal(sim_schedule_inflight(WL_SCHED_1F1B, 1, 0, 4, 1, 1), 2);
  assert_int_equal(sim_schedule_inflight(WL_SCHED_1F1B, 4, 0, 5, 1, 1), 5);
  assert_int_equal(sim_schedule_inflight(WL_SCHED_1F1B, 4, 0, 4, 1, 1), 4);
  assert_int_equal(sim_schedule_inflight(WL_SCHED_1F1B, 4, 3, 5, 1, 1), 2);
  assert_int_equal(sim_schedule_inflight(WL_SCHED_INTERLEAVED, 2, 1, 4, 2, 1), 4);
  assert_int_equal(sim_schedule_inflight(WL_SCHED_GPIPE, 4, 3, 3, 1, 1), 3);
}

/* Every shape: each (micro-batch, chunk) runs forward once and backward once, after its
 * forward; the most units alive at once is what memory is planned for. */
static void test_properties(void **state)
{
  (void)state;
  const wl_schedule scheds[] = {WL_SCHED_GPIPE, WL_SCHED_1F1B, WL_SCHED_INTERLEAVED};
  for (size_t k = 0; k < G_N_ELEMENTS(scheds); k++) {
    /* Interleaving runs 2 or more chunks (3d refuses one), micro-batches a multiple of P. */
    gboolean inter = scheds[k] == WL_SCHED_INTERLEAVED;
    for (uint32_t P = 1; P <= 6; P++)
      for (uint32_t V = inter ? 2 : 1; V <= (inter ? 3u : 1u); V++)
        for (uint32_t M = P; M <= 3 * P; M += P)
          for (uint32_t s = 0; s < P * 2; s++) {
            /* Each stage with no warm-up forward ahead, then with one. */
            uint32_t ahead = s / P, sp = s % P;
            size_t n = 2 * (size_t)M * V;
            g_autofree sim_schedule_unit *u = g_new(sim_schedule_unit, n);
            g_autofree int *state_of = g_new0(int, (gsize)M * V);   /* 0, 1 fwd, 2 bwd */
            sim_schedule_order_ahead(scheds[k], P, sp, M, V, ahead, u);
            uint64_t alive = 0, peak = 0;
            for (size_t i = 0; i < n; i++) {
              assert_true(u[i].mb < M && u[i].chunk < V);
              int *st = &state_of[(gsize)u[i].mb * V + u[i].chunk];
              assert_int_equal(*st, u[i].fwd ? 0 : 1);
              *st = u[i].fwd ? 1 : 2;
              alive = u[i].fwd ? alive + 1 : alive - 1;
              peak = MAX(peak, alive);
            }
            assert_int_equal(alive, 0);
            if (!ahead)
              assert_int_equal(peak, wl_tf_inflight_chunks(scheds[k], P, V, M, sp));
            assert_int_equal(peak, sim_schedule_inflight(scheds[k], P, sp, M, V, ahead));
          }
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpipe),
      cmocka_unit_test(test_1f1b),
      cmocka_unit_test(test_interleaved),
      cmocka_unit_test(test_ahead),
      cmocka_unit_test(test_properties),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
