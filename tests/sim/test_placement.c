/* Placement of jobs on a cluster's nodes (sim/app/placement.h), on lists worked out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "placement.h"
#include "util.h"

#include <string.h>

static void assert_nodes(const GArray *a, const uint32_t *want, guint n)
{
  assert_int_equal(a->len, n);
  for (guint i = 0; i < n; i++)
    assert_int_equal(g_array_index(a, uint32_t, i), want[i]);
}

/* "0-3,8, 10-11" is seven nodes in that order; a list keeps the order given. */
static void test_parse(void **state)
{
  GArray *a = NULL;
  assert_true(sim_place_parse_list("0-3,8, 10-11", "k", 15, &a, NULL));
  assert_nodes(a, (const uint32_t[]){0, 1, 2, 3, 8, 10, 11}, 7);
  g_array_unref(a);
  assert_true(sim_place_parse_list("5,1", "k", 15, &a, NULL));
  assert_nodes(a, (const uint32_t[]){5, 1}, 2);
  g_array_unref(a);
}

/* Each bad list is refused with a message naming its key. */
static void test_parse_refused(void **state)
{
  static const char *const bad[] = {"", "1,,2", "3-1", "1-2-3", "x", "-1", "1,1", "0-2,2",
                                    "16", "0-99999999999"};
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    GArray *a = NULL;
    g_autoptr(GError) error = NULL;
    assert_false(sim_place_parse_list(bad[i], "f:3: [job a] node-list", 15, &a, &error));
    assert_null(a);
    assert_non_null(error);
    assert_non_null(strstr(error->message, "f:3: [job a] node-list"));
  }
}

/* On 6 nodes: job a lists 2,3; b asks 2 nodes and takes 0,1 (the lowest free); c asks 1 and
 * takes 4, passing a's. */
static void test_place(void **state)
{
  GArray *list = NULL;
  assert_true(sim_place_parse_list("2-3", "a", 5, &list, NULL));
  sim_place_request r[] = {{"a", 0, list, "a", NULL}, {"b", 2, NULL, "b", NULL},
                           {"c", 1, NULL, "c", NULL}};
  assert_true(sim_place_jobs(r, 3, 6, "cluster", NULL));
  assert_nodes(r[0].placed, (const uint32_t[]){2, 3}, 2);
  assert_nodes(r[1].placed, (const uint32_t[]){0, 1}, 2);
  assert_nodes(r[2].placed, (const uint32_t[]){4}, 1);
  sim_place_clear(r, 3);
  g_array_unref(list);
}

/* Lists that overlap, a list past the cluster, and more nodes than are left are refused,
 * naming the job that does not fit. */
static void test_place_refused(void **state)
{
  GArray *a = NULL, *b = NULL;
  assert_true(sim_place_parse_list("0-2", "a", 9, &a, NULL));
  assert_true(sim_place_parse_list("2,3", "b", 9, &b, NULL));
  g_autoptr(GError) e1 = NULL, e2 = NULL, e3 = NULL;
  sim_place_request overlap[] = {{"a", 0, a, "where-a", NULL}, {"b", 0, b, "where-b", NULL}};
  assert_false(sim_place_jobs(overlap, 2, 4, "cluster", &e1));
  assert_non_null(strstr(e1->message, "where-b: node 2 is also job a's"));
  sim_place_clear(overlap, 2);
  sim_place_request past[] = {{"b", 0, b, "where-b", NULL}};
  assert_false(sim_place_jobs(past, 1, 3, "cluster", &e2));
  assert_non_null(strstr(e2->message, "where-b: node 3 is out of range"));
  sim_place_clear(past, 1);
  sim_place_request many[] = {{"a", 0, a, "where-a", NULL}, {"c", 2, NULL, "where-c", NULL}};
  assert_false(sim_place_jobs(many, 2, 4, "cluster", &e3));
  assert_non_null(strstr(e3->message, "where-c: 2 nodes, but 1 of the cluster's 4 are left"));
  sim_place_clear(many, 2);
  g_array_unref(a);
  g_array_unref(b);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_parse_refused),
      cmocka_unit_test(test_place),
      cmocka_unit_test(test_place_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
