/* Strategy tests on hand-made cost tables with the simple communication model, so every
 * expected time is a closed form worked out in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "plan.h"
#include "coll.h"
#include "util.h"
#include "report.h"

/* n identical layers: forward f ms, backward (data + weights) b ms, `param_bytes` each. */
static sim_costs *uniform(guint n, double f_ms, double bd_ms, double bw_ms, uint64_t param_bytes,
                          uint64_t saved_bytes)
{
  sim_costs *c = sim_costs_new();
  for (guint i = 0; i < n; i++) {
    char name[16];
    g_snprintf(name, sizeof name, "l%u", i);
    sim_layer_cost l = {.name = name,
                        .forward_ps = sim_time_from_s(f_ms * 1e-3),
                        .backward_data_ps = sim_time_from_s(bd_ms * 1e-3),
                        .backward_weights_ps = sim_time_from_s(bw_ms * 1e-3),
                        .param_bytes = param_bytes,
                        .params = param_bytes / 4,
                        .saved_bytes = saved_bytes};
    sim_costs_add_layer(c, &l);
  }
  c->batch = 8;
  c->state_bytes_per_param = 12;
  return c;
}

static sim_plan_opts opts(uint32_t devices)
{
  sim_plan_opts o = {.nodes = 1, .devices_per_node = devices, .overlap = TRUE,
                     .bucket_bytes = 25u << 20,
                     .allreduce = comm_coll_algorithm_find("ring", "ring", NULL), .iterations = 1,
                     .micro_batches = 1, .ps_count = 1, .hybrid = SIM_HYBRID_DP_PP};
  return o;
}

static void run(const sim_strategy *s, const sim_costs *c, const sim_plan_opts *o,
                const sim_simple_comm *net, sim_report *r)
{
  g_autoptr(GError) err = NULL;
  g_autoptr(sim_plan) p = s->build(c, o, &err);
  assert_non_null(p);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(sim_exec) x = sim_exec_new(e, p->graph);
  sim_exec_set_comm(x, &sim_simple_comm_ops, (void *)net);
  assert_true(sim_exec_run(x, &err));
  sim_report_measure(r, p, x);
  r->memory_per_device_bytes = p->memory_per_device_bytes;
}

static const sim_simple_comm instant = {0, UINT64_MAX / 2};

/* Four stages of one layer each (forward 1 ms, backward 2 ms, all of it the weight gradient so
 * the first stage is no lighter), eight micro-batches, free
 * communication. GPipe: stage 0 runs 8 forwards, waits for the last micro-batch to go down and
 * its gradient to come back up, then 8 backwards. Iteration = (M + P - 1)(f + b) = 11 x 3 ms =
 * 33 ms; stage 0 idles (P - 1)(f + b) = 9 ms: bubble fraction (P-1)/(M+P-1) = 3/11. */
static void test_gpipe_bubble(void **state)
{
  g_autoptr(sim_costs) c = uniform(4, 1.0, 0.0, 2.0, 0, 0);
  sim_plan_opts o = opts(4);
  o.micro_batches = 8;
  o.gpipe = TRUE;
  sim_report r;
  run(sim_strategy_find("pp"), c, &o, &instant, &r);
  assert_float_equal(r.iteration_time_s, 0.033, 1e-12);
  assert_float_equal(r.idle_time_s / r.iteration_time_s, 3.0 / 11.0, 1e-9);
  assert_int_equal(r.samples_per_iteration, 8 * 8);
}

/* 1F1B has the same bubble on uniform stages; what changes is memory: stage 0 keeps at most
 * P = 4 micro-batches of activations instead of M = 8. With 100 B saved per layer per
 * micro-batch, 1 parameter per layer (4 B) at 12 B of state per parameter:
 * GPipe: 12 + 8 x 100 = 812 B; 1F1B: 12 + 4 x 100 = 412 B. */
static void test_1f1b(void **state)
{
  g_autoptr(sim_costs) c = uniform(4, 1.0, 0.0, 2.0, 4, 100);
  sim_plan_opts o = opts(4);
  o.micro_batches = 8;
  o.gpipe = FALSE;
  sim_report r;
  run(sim_strategy_find("pp"), c, &o, &instant, &r);
  assert_float_equal(r.iteration_time_s, 0.033, 1e-12);
  assert_int_equal(r.memory_per_device_bytes, 412);
  o.gpipe = TRUE;
  run(sim_strategy_find("pp"), c, &o, &instant, &r);
  assert_int_equal(r.memory_per_device_bytes, 812);
}

/* Data parallel on 4 devices, overlap off, one bucket: compute + ring allreduce exactly.
 * Compute: forward 3 x 1 ms, backward 3 dW of 1 ms and 2 dX of 1 ms (the first layer computes
 * no data gradient): 8 ms. Gradients 3 x 4 MB = 12 MB; ring of n = 4: 2(n-1) = 6 steps of
 * 10 us + (12 MB / 4) / 10 GB/s = 310 us each: 1.86 ms. Iteration 8 + 1.86 = 9.86 ms. */
static void test_dp_closed_form(void **state)
{
  g_autoptr(sim_costs) c = uniform(3, 1.0, 1.0, 1.0, 4000000, 0);
  sim_plan_opts o = opts(4);
  o.overlap = FALSE;
  o.bucket_bytes = 1u << 30;
  sim_simple_comm net = {SIM_US(10), 10000000000ULL};
  sim_report r;
  run(sim_strategy_find("dp"), c, &o, &net, &r);
  assert_float_equal(r.iteration_time_s, 0.00986, 1e-12);
  assert_float_equal(r.exposed_comm_time_s, 0.00186, 1e-12);
  assert_float_equal(r.compute_time_s, 0.008, 1e-12);
}

/* Overlap never makes an iteration slower, whatever the layer times and bucket size. */
static void test_overlap_never_slower(void **state)
{
  GRand *rng = g_rand_new_with_seed(11);
  for (int trial = 0; trial < 50; trial++) {
    guint n = (guint)g_rand_int_range(rng, 2, 12);
    g_autoptr(sim_costs) c = sim_costs_new();
    for (guint i = 0; i < n; i++) {
      sim_layer_cost l = {.name = "l",
                          .forward_ps = g_rand_int_range(rng, 1, 1000000000),
                          .backward_data_ps = g_rand_int_range(rng, 1, 1000000000),
                          .backward_weights_ps = g_rand_int_range(rng, 0, 1000000000),
                          .param_bytes = (uint64_t)g_rand_int_range(rng, 0, 50000000)};
      sim_costs_add_layer(c, &l);
    }
    c->batch = 1;
    sim_plan_opts o = opts((uint32_t)g_rand_int_range(rng, 2, 9));
    o.bucket_bytes = (uint64_t)g_rand_int_range(rng, 1, 60000000);
    sim_simple_comm net = {SIM_US(g_rand_int_range(rng, 0, 50)), 5000000000ULL};
    sim_report on, off;
    o.overlap = TRUE;
    run(sim_strategy_find("dp"), c, &o, &net, &on);
    o.overlap = FALSE;
    run(sim_strategy_find("dp"), c, &o, &net, &off);
    assert_true(on.iteration_time_s <= off.iteration_time_s);
  }
  g_rand_free(rng);
}

/* Balanced split: layer work 1,1,1,1,4 ms (forward only) over 2 stages: {0..3} and {4}. */
static void test_partition(void **state)
{
  g_autoptr(sim_costs) c = uniform(5, 1.0, 0.0, 0.0, 0, 0);
  sim_layer_cost *last = &g_array_index(c->layers, sim_layer_cost, 4);
  last->forward_ps = SIM_MS(4);
  uint32_t first[3];
  g_autoptr(GError) err = NULL;
  assert_true(sim__partition(c, 2, NULL, first, &err));
  assert_int_equal(first[0], 0);
  assert_int_equal(first[1], 4);
  assert_int_equal(first[2], 5);
  /* Five stages over five layers: one each. */
  uint32_t five[6];
  assert_true(sim__partition(c, 5, NULL, five, &err));
  for (int i = 0; i <= 5; i++)
    assert_int_equal(five[i], i);
  /* A user split, and bad ones. */
  g_autoptr(GArray) two = dt_parse_int_list("2", "--split", 1, 100, NULL);
  g_autoptr(GArray) down = dt_parse_int_list("3,2", "--split", 1, 100, NULL);
  g_autoptr(GArray) extra = dt_parse_int_list("1,2", "--split", 1, 100, NULL);
  g_autoptr(GArray) past = dt_parse_int_list("9", "--split", 1, 100, NULL);
  assert_true(sim__partition(c, 2, two, first, &err));
  assert_int_equal(first[1], 2);
  assert_false(sim__partition(c, 3, down, first, &err));
  g_clear_error(&err);
  assert_false(sim__partition(c, 2, past, first, &err));
  g_clear_error(&err);
  assert_false(sim__partition(c, 2, extra, first, &err));
  g_clear_error(&err);
  assert_false(sim__partition(c, 6, NULL, first, &err));
}

/* Model parallel (one micro-batch) on 2 devices with 2 layers: forward 1 + 1, then the 1 MB
 * activation at 1 GB/s (1 ms) between them, backward 2 + (transfer 1 ms) + 1 (layer 0 has
 * no dX, only dW of 1 ms). Iteration = 1 + 1 + 1 + 2 + 1 + 1 = 7 ms. */
static void test_mp_chain(void **state)
{
  g_autoptr(sim_costs) c = uniform(2, 1.0, 1.0, 1.0, 0, 0);
  for (guint i = 0; i < 2; i++)
    g_array_index(c->layers, sim_layer_cost, i).output_bytes = 1000000;
  sim_plan_opts o = opts(2);
  sim_simple_comm net = {0, 1000000000ULL};
  sim_report r;
  run(sim_strategy_find("mp"), c, &o, &net, &r);
  assert_float_equal(r.iteration_time_s, 0.007, 1e-12);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpipe_bubble),  cmocka_unit_test(test_1f1b),
      cmocka_unit_test(test_dp_closed_form), cmocka_unit_test(test_overlap_never_slower),
      cmocka_unit_test(test_partition),     cmocka_unit_test(test_mp_chain),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
