/* Link load (traces/linkload.c): totals, intervals, the busiest links, the counters written into
 * a Chrome trace and the heat map's cells, from two flows worked out by hand:
 *
 *   flow A: 1000 bytes on link 3 from 0 to 1 us          -> 1000 / 1e-6 s = 1.0 GB/s
 *   flow B:  500 bytes on links 3 and 5 from 0.5 to 1.5 us -> 0.5 GB/s
 *
 * Link 3 carries 1500 bytes, link 5 500. Link 3's rate: 1.0 GB/s on [0, 0.5 us), 1.5 on
 * [0.5, 1), 0.5 on [1, 1.5), then 0. Its bytes in [0, 1 us): 1000 + 250 = 1250; in [1, 2 us):
 * 250. At 2.5 GB/s that is 1250 / (2.5e9 x 1e-6) = 50% and 250 / 2500 = 10%. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "linkload.h"

static trace_linkload *two_flows(void)
{
  trace_linkload *ll = trace_linkload_new(8, 1000);
  uint32_t a[] = {3}, b[] = {3, 5};
  trace_linkload_flow(ll, a, 1, 0, SIM_US(1), 1000);
  trace_linkload_flow(ll, b, 2, SIM_NS(500), SIM_NS(1500), 500);
  return ll;
}

static void test_totals(void **state)
{
  (void)state;
  g_autoptr(trace_linkload) ll = two_flows();
  assert_true(trace_linkload_bytes(ll, 3) == 1500);
  assert_true(trace_linkload_bytes(ll, 5) == 500);
  assert_true(trace_linkload_bytes(ll, 4) == 0);
  assert_true(fabs(trace_linkload_bytes_between(ll, 3, 0, SIM_NS(500)) - 500) < 1e-9);
  assert_true(fabs(trace_linkload_bytes_between(ll, 3, SIM_NS(500), SIM_US(1)) - 750) < 1e-9);
  assert_true(fabs(trace_linkload_bytes_between(ll, 3, 0, SIM_US(1)) - 1250) < 1e-9);
  assert_true(fabs(trace_linkload_bytes_between(ll, 3, SIM_US(1), SIM_US(2)) - 250) < 1e-9);
  uint32_t top[4];
  assert_int_equal(trace_linkload_busiest(ll, 4, top), 2);
  assert_int_equal(top[0], 3);
  assert_int_equal(top[1], 5);
  assert_false(trace_linkload_truncated(ll));
  /* Past max_records the totals still count, the records stop. */
  g_autoptr(trace_linkload) small = trace_linkload_new(8, 1);
  uint32_t b[] = {3, 5};
  trace_linkload_flow(small, b, 2, 0, SIM_US(1), 100);
  assert_true(trace_linkload_truncated(small));
  assert_true(trace_linkload_bytes(small, 5) == 100);
}

static char *name_of(void *user, uint32_t link)
{
  (void)user;
  return g_strdup_printf("L%u", link);
}
static const char *tier_of(void *user, uint32_t link)
{
  (void)user;
  return link == 3 ? "spine" : "nvlink";
}
static double Bps_of(void *user, uint32_t link)
{
  (void)user;
  (void)link;
  return 2.5e9;
}

static char *read_all(const char *path)
{
  char *text = NULL;
  assert_true(g_file_get_contents(path, &text, NULL, NULL));
  return text;
}

static void test_counters(void **state)
{
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("dtsim-linkload-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "t.json", NULL);
  g_autoptr(trace_linkload) ll = two_flows();
  g_autoptr(sim_engine) engine = sim_engine_new();
  g_autoptr(trace_chrome) t = trace_chrome_new(path, NULL);
  trace_chrome_attach(t, engine);
  trace_link_info info = {name_of, tier_of, Bps_of, NULL};
  uint32_t top[2];
  uint32_t n = trace_linkload_busiest(ll, 1, top);
  trace_linkload_counters(ll, t, engine, "busiest links", top, n, &info);
  assert_true(trace_chrome_close(t, NULL));
  g_autofree char *text = read_all(path);
  assert_non_null(strstr(text, "\"name\":\"busiest links\""));
  assert_non_null(strstr(text, "\"name\":\"L3 GB/s\",\"ts\":0.000,\"pid\":1,\"args\":{\"value\":1}"));
  assert_non_null(strstr(text, "\"name\":\"L3 GB/s\",\"ts\":0.500,\"pid\":1,\"args\":{\"value\":1.5}"));
  assert_non_null(strstr(text, "\"name\":\"L3 GB/s\",\"ts\":1.000,\"pid\":1,\"args\":{\"value\":0.5}"));
  assert_non_null(strstr(text, "\"name\":\"L3 GB/s\",\"ts\":1.500,\"pid\":1,\"args\":{\"value\":0}"));
  assert_null(strstr(text, "L5 GB/s"));
  g_unlink(path);
  g_rmdir(dir);
}

static void test_svg(void **state)
{
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("dtsim-linkload-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "h.svg", NULL);
  g_autoptr(trace_linkload) ll = two_flows();
  trace_link_info info = {name_of, tier_of, Bps_of, NULL};
  assert_true(trace_linkload_write_svg(ll, path, "two flows", SIM_US(2), 2, 8, &info, NULL));
  g_autofree char *text = read_all(path);
  /* Tiers in order (nvlink before spine), one row each, and the cells worked out above:
   * link 5 carries 250 bytes in each half: 10% in both. */
  const char *nv = strstr(text, ">nvlink<"), *sp = strstr(text, ">spine<");
  assert_non_null(nv);
  assert_non_null(sp);
  assert_true(nv < sp);
  assert_non_null(strstr(text, "<title>L3, 0.000-0.001 ms: 50%</title>"));
  assert_non_null(strstr(text, "<title>L3, 0.001-0.002 ms: 10%</title>"));
  assert_non_null(strstr(text, "<title>L5, 0.000-0.001 ms: 10%</title>"));
  assert_non_null(strstr(text, "<title>L5, 0.001-0.002 ms: 10%</title>"));
  g_unlink(path);
  g_rmdir(dir);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_totals),
      cmocka_unit_test(test_counters),
      cmocka_unit_test(test_svg),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
