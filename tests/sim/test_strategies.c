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
#include "net_adapter.h"
#include "fake_net.h"

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

/* Hybrid dp-pp: 2 nodes of 2 devices, so P = 2 stages (a node's devices) and R = 2 replicas.
 * Two layers (one per stage), forward 1 ms, backward data 1 ms and weights 1 ms (stage 0 has no
 * data gradient: 1 ms; stage 1: 2 ms), 4 MB of parameters and 1 MB of output each; GPipe with
 * M = 2 micro-batches. Simple network: 10 us + bytes / 10 GB/s, so an activation or gradient
 * transfer takes 10 + 100 = 110 us and the 2-member ring allreduce of a stage's 4 MB takes
 * 2 x (10 us + 2 MB / 10 GB/s) = 420 us. Times in ms, every replica alike:
 *   stage 0: F0 [0, 1], F1 [1, 2]; activations arrive at 1.11 and 2.11;
 *   stage 1: F0 [1.11, 2.11], F1 [2.11, 3.11], B1 [3.11, 5.11], B0 [5.11, 7.11];
 *   gradients back at 5.22 (mb1) and 7.22 (mb0);
 *   stage 0: B1 [5.22, 6.22], B0 [7.22, 8.22]; allreduce of stage 0 [8.22, 8.64], then its
 *   update (0 ms): device 0's iteration ends at 8.64 ms. Samples: R x M x batch = 2 x 2 x 8. */
static void test_hybrid_dp_pp_closed_form(void **state)
{
  g_autoptr(sim_costs) c = uniform(2, 1.0, 1.0, 1.0, 4000000, 0);
  for (guint i = 0; i < 2; i++)
    g_array_index(c->layers, sim_layer_cost, i).output_bytes = 1000000;
  sim_plan_opts o = opts(2);
  o.nodes = 2;
  o.micro_batches = 2;
  o.gpipe = TRUE;
  o.hybrid = SIM_HYBRID_DP_PP;
  sim_simple_comm net = {SIM_US(10), 10000000000ULL};
  sim_report r;
  run(sim_strategy_find("hybrid"), c, &o, &net, &r);
  assert_float_equal(r.iteration_time_s, 0.00864, 1e-12);
  assert_int_equal(r.samples_per_iteration, 32);
  /* One replica (R = 1) has no allreduce: 8.22 ms. */
  o.nodes = 1;
  run(sim_strategy_find("hybrid"), c, &o, &net, &r);
  assert_float_equal(r.iteration_time_s, 0.00822, 1e-12);
}

/* Hybrid owt on N = 2 devices: l0 convolutional, l1 and l2 dense (the tail); each layer forward
 * 1 ms, backward data 1 ms, weights 1 ms, 4 MB (1e6 parameters); outputs l0 1 MB, l1 0.5 MB.
 * Simple network, 10 us + bytes / 10 GB/s; every collective of 2 members costs the ring's
 * 2 x (10 us + B / 2 / 10 GB/s) = 20 us + B / 10 GB/s. Times in ms:
 *   l0 forward [0, 1]; allgather of N x 1 MB = 2 MB: 220 us [1, 1.22]; l1 forward [1.22, 2.22];
 *   allgather of N x 0.5 MB: 120 us [2.22, 2.34]; l2 forward [2.34, 3.34];
 *   l2 dW [3.34, 4.34], l2 dX [4.34, 5.34], reduce-scatter of N x l1's output (1 MB): 120 us
 *   [5.34, 5.46]; l1 dW (after it) [5.46, 6.46], l1 dX [6.46, 7.46], reduce-scatter of 2 MB:
 *   220 us [7.46, 7.68]; l0 dW [7.68, 8.68] (the first layer has no dX); the one 4 MB gradient
 *   bucket: 20 us + 400 us [8.68, 9.10]; update 0 ms. Iteration 9.10 ms.
 * Memory: the 2e6 dense parameters at 12 B each are split 2 ways: 1e8 - 2e6 x 12 / 2 = 88e6 B. */
static void test_hybrid_owt_closed_form(void **state)
{
  g_autoptr(sim_costs) c = uniform(3, 1.0, 1.0, 1.0, 4000000, 0);
  g_array_index(c->layers, sim_layer_cost, 0).output_bytes = 1000000;
  g_array_index(c->layers, sim_layer_cost, 1).output_bytes = 500000;
  g_array_index(c->layers, sim_layer_cost, 1).dense = TRUE;
  g_array_index(c->layers, sim_layer_cost, 2).dense = TRUE;
  c->memory_bytes = 100000000;
  sim_plan_opts o = opts(2);
  o.hybrid = SIM_HYBRID_OWT;
  sim_simple_comm net = {SIM_US(10), 10000000000ULL};
  sim_report r;
  run(sim_strategy_find("hybrid"), c, &o, &net, &r);
  assert_float_equal(r.iteration_time_s, 0.00910, 1e-12);
  assert_int_equal(r.memory_per_device_bytes, 88000000);
  assert_int_equal(r.samples_per_iteration, 16);
}

/* Parameter servers on the test network of tests/coll/fake_net.c: `nodes` nodes of `per_node`
 * devices, a pair inside a node 0.5 us + bytes / 100 GB/s, across nodes 2 us + bytes /
 * 12.5 GB/s, no contention. `servers` servers with `placement`, aggregating at `reduce_Bps`. */
static void run_ps(const sim_costs *c, uint32_t nodes, uint32_t per_node, uint32_t extra_nodes,
                   comm_ps_placement placement, uint32_t servers, double reduce_Bps,
                   uint32_t iterations, sim_report *r)
{
  fake_topology_spec spec = {nodes, per_node, extra_nodes, SIM_NS(500), 100000000000ULL, SIM_US(2),
                             12500000000ULL};
  g_autoptr(comm_topology) topo = fake_topology_new(&spec);
  sim_plan_opts o = opts(per_node);
  o.nodes = nodes;
  o.ps_count = servers;
  o.iterations = iterations;
  g_autoptr(GError) err = NULL;
  g_autoptr(sim_plan) p = sim_strategy_find("ps")->build(c, &o, &err);
  assert_non_null(p);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, topo, COMM_NET_FLOW);
  g_autoptr(sim_net_adapter) a = sim_net_adapter_new(net, p, 1e12);
  sim_net_adapter_set_ps(a, placement, servers, reduce_Bps);
  g_autoptr(sim_exec) x = sim_exec_new(e, p->graph);
  sim_exec_set_comm(x, &sim_net_adapter_ops, a);
  assert_true(sim_exec_run(x, &err));
  assert_null(sim_net_adapter_error(a));
  sim_report_measure(r, p, x);
  r->memory_per_device_bytes = p->memory_per_device_bytes;
}

/* Two workers, two layers: forward 1 ms, backward data 1 ms and weights 1 ms, 1.25 MB of
 * parameters each (tensor t = layer t). A worker: F0 [0, 1], F1 [1, 2], l1 dW [2, 3] (push of
 * tensor 1 at 3), l1 dX [3, 4], l0 dW [4, 5] (push of tensor 0 at 5; layer 0 has no dX).
 * A push or pull across nodes: 2 us + 1.25e6 B / 12.5 GB/s = 102 us; inside a node 0.5 us +
 * 1.25e6 / 100 GB/s = 13 us. The server aggregates 2 x 1.25e6 B per tensor. One iteration
 * is measured up to its last event (the last pull of any worker).
 *
 * (a) one dedicated server (extra node), aggregation at 10 GB/s = 250 us: tensor 0's pushes
 *     arrive at 5.102, aggregate [5.102, 5.352], pulled by 5.454 ms: iteration 5.454 ms.
 * (b) aggregation at 1 GB/s = 2.5 ms, so the server's one aggregation unit queues: tensor 1
 *     [3.102, 5.602], tensor 0 arrives at 5.102 but waits: [5.602, 8.102], pulled by 8.204 ms.
 * (c) as (b) with two dedicated servers on two extra nodes: equal tensors shard in index
 *     order (tensor 0 on server 0, tensor 1 on server 1), no queue: [5.102, 7.602], pulled by
 *     7.704 ms.
 * (d) both workers in one node, one colocated server on its host at 10 GB/s: every push and
 *     pull takes 13 us. Tensor 0 complete at 5.013, aggregated at 5.263, pulled by 5.276 ms.
 *     The default placement, cpu, puts server 0 on the same host: the same 5.276 ms.
 * (e) two iterations of (a): the next forward of layer 0 waits for its pull (5.454), the
 *     whole iteration shifts by 5.454 ms: the steady-state window is 5.454 ms again. */
static void test_ps_closed_form(void **state)
{
  g_autoptr(sim_costs) c = uniform(2, 1.0, 1.0, 1.0, 1250000, 0);
  c->memory_bytes = 1000;
  sim_report r;
  run_ps(c, 2, 1, 1, COMM_PS_DEDICATED, 1, 1e10, 1, &r);
  assert_int_equal(sim_time_from_s(r.iteration_time_s), SIM_NS(5454000));
  assert_int_equal(r.samples_per_iteration, 16);
  /* Workers keep no optimizer state: the costs' footprint as it is. */
  assert_int_equal(r.memory_per_device_bytes, 1000);
  run_ps(c, 2, 1, 1, COMM_PS_DEDICATED, 1, 1e9, 1, &r);
  assert_int_equal(sim_time_from_s(r.iteration_time_s), SIM_NS(8204000));
  run_ps(c, 2, 1, 2, COMM_PS_DEDICATED, 2, 1e9, 1, &r);
  assert_int_equal(sim_time_from_s(r.iteration_time_s), SIM_NS(7704000));
  run_ps(c, 1, 2, 0, COMM_PS_COLOCATED, 1, 1e10, 1, &r);
  assert_int_equal(sim_time_from_s(r.iteration_time_s), SIM_NS(5276000));
  run_ps(c, 1, 2, 0, COMM_PS_CPU, 1, 1e10, 1, &r);
  assert_int_equal(sim_time_from_s(r.iteration_time_s), SIM_NS(5276000));
  run_ps(c, 2, 1, 1, COMM_PS_DEDICATED, 1, 1e10, 2, &r);
  assert_int_equal(sim_time_from_s(r.iteration_time_s), SIM_NS(5454000));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpipe_bubble),  cmocka_unit_test(test_1f1b),
      cmocka_unit_test(test_dp_closed_form), cmocka_unit_test(test_overlap_never_slower),
      cmocka_unit_test(test_partition),     cmocka_unit_test(test_mp_chain),
      cmocka_unit_test(test_hybrid_dp_pp_closed_form),
      cmocka_unit_test(test_hybrid_owt_closed_form), cmocka_unit_test(test_ps_closed_form),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
