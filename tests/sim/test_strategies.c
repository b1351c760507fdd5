/* Strategy tests on hand-made cost tables with the simple communication model, so every
 * expected time is a closed form worked out in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "plan.h"
#include "strategy.h"
#include "coll.h"
#include "util.h"
#include "measure.h"
#include "devices.h"
#include "strategy_3d.h"
#include "simulate.h"

#include <glib/gstdio.h>
#include <unistd.h>
#include <math.h>
#include <string.h>

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
                     .micro_batches = 1, .ps_count = 1};
  return o;
}

/* The hybrid strategy's own options for --hybrid KIND, through the scenario's keys. */
static gconstpointer hybrid_own(sim_scenario *s, const char *kind)
{
  sim_scenario_init(s);
  const sim_strategy *st = sim_strategy_find("hybrid");
  assert_true(sim_scenario_set(s, "strategy", "hybrid", NULL, NULL));
  assert_true(sim_scenario_set(s, "hybrid", kind, NULL, NULL));
  return sim_scenario_own(s, st->keys);
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
  g_auto(sim_scenario) s;
  o.own = hybrid_own(&s, "dp-pp");
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

/* The registry answers by flags, never by name: which strategies take micro-batches (the
 * pipelines: pp, and hybrid's dp-pp replicas), run parameter servers (ps), fold (dp and 3d),
 * plan transformers (3d, with dp as its one-rank form); hybrid's kind decides whether it is
 * costed per micro-batch. */
static void test_registry_flags(void **state)
{
  (void)state;
  g_autofree char *mb = sim_strategy_names_with(SIM_STRATEGY_MICRO_BATCHES, ",");
  g_autofree char *servers = sim_strategy_names_with(SIM_STRATEGY_SERVERS, ",");
  g_autofree char *fold = sim_strategy_names_with(SIM_STRATEGY_FOLDABLE, ",");
  g_autofree char *form = sim_strategy_names_with(SIM_STRATEGY_TRANSFORMER_FORM, ",");
  assert_string_equal(mb, "pp,hybrid");
  assert_string_equal(servers, "ps");
  assert_string_equal(fold, "dp,3d");
  assert_string_equal(form, "dp");
  assert_string_equal(sim_strategy_transformer()->name, "3d");
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  assert_true(sim_scenario_set(&s, "strategy", "hybrid", NULL, NULL));
  const sim_strategy *h = sim_strategy_find("hybrid");
  assert_true(sim_strategy_flags_for(h, &s) & SIM_STRATEGY_PIPELINED);   /* dp-pp, the default */
  assert_true(sim_scenario_key_equals(&s, "hybrid", "dp-pp"));
  assert_true(sim_scenario_set(&s, "hybrid", "owt", NULL, NULL));
  assert_false(sim_strategy_flags_for(h, &s) & SIM_STRATEGY_PIPELINED);
  assert_false(sim_scenario_key_equals(&s, "hybrid", "dp-pp"));
  /* A transformer with dp runs as 3d; with pp it is refused naming the strategies that can. */
  assert_true(sim_scenario_set(&s, "model", "gpt3-1.7b", NULL, NULL));
  assert_true(sim_scenario_set(&s, "strategy", "dp", NULL, NULL));
  assert_ptr_equal(sim_strategy_for_scenario(&s, NULL), sim_strategy_transformer());
  assert_true(sim_scenario_set(&s, "strategy", "pp", NULL, NULL));
  g_autoptr(GError) err = NULL;
  assert_null(sim_strategy_for_scenario(&s, &err));
  assert_non_null(strstr(err->message, "--strategy 3d (or dp"));
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
  g_auto(sim_scenario) s;
  o.own = hybrid_own(&s, "owt");
  sim_simple_comm net = {SIM_US(10), 10000000000ULL};
  sim_report r;
  run(sim_strategy_find("hybrid"), c, &o, &net, &r);
  assert_float_equal(r.iteration_time_s, 0.00910, 1e-12);
  assert_int_equal(r.memory_per_device_bytes, 88000000);
  assert_int_equal(r.samples_per_iteration, 16);
}

/* CHAOS on 4 threads, 10 training, 3 validation and 2 test samples, 1 ms of preparation.
 * Layer 0: forward 1 ms, weight gradient 2 ms, shared update 0.5 ms (no data gradient: first
 * layer); layer 1: forward 3 ms, data gradient 1 ms, weight gradient 1 ms, shared update
 * 0.25 ms. A training sample: 1 + 3 + (1 + 0.25 + 1) + (2 + 0.5) = 8.75 ms; threads take 3, 3,
 * 2 and 2 samples: 26.25 ms. Validation: 1, 1, 1, 0 samples of 4 ms forward: 4 ms; test: 1, 1:
 * 4 ms. First epoch 1 + 26.25 + 4 + 4 = 35.25 ms; later epochs 34.25 ms. Thread 0's training
 * forward: 3 x 4 = 12 ms, backward 3 x 4 = 12 ms, update 3 x 0.75 = 2.25 ms. */
static void test_chaos_closed_form(void **state)
{
  g_autoptr(sim_costs) c = sim_costs_new();
  sim_layer_cost l0 = {.name = "l0", .forward_ps = SIM_MS(1), .backward_weights_ps = SIM_MS(2),
                       .update_ps = SIM_US(500), .param_bytes = 400, .params = 100};
  sim_layer_cost l1 = {.name = "l1", .forward_ps = SIM_MS(3), .backward_data_ps = SIM_MS(1),
                       .backward_weights_ps = SIM_MS(1), .update_ps = SIM_US(250),
                       .param_bytes = 40, .params = 10};
  sim_costs_add_layer(c, &l0);
  sim_costs_add_layer(c, &l1);
  c->batch = 1;
  c->threads = 4;
  c->train_samples = 10;
  c->validation_samples = 3;
  c->test_samples = 2;
  c->prepare_ps = SIM_MS(1);
  sim_plan_opts o = opts(1);
  sim_report r;
  run(sim_strategy_find("chaos"), c, &o, &instant, &r);
  assert_float_equal(r.iteration_time_s, 0.03525, 1e-12);
  assert_int_equal(r.samples_per_iteration, 10);
  assert_float_equal(r.forward_time_s, 0.012, 1e-12);
  assert_float_equal(r.backward_time_s, 0.012, 1e-12);
  assert_float_equal(r.update_time_s, 0.00225, 1e-12);
  o.iterations = 2;
  run(sim_strategy_find("chaos"), c, &o, &instant, &r);
  assert_float_equal(r.iteration_time_s, 0.03425, 1e-12);
  /* A cost table not built for threads is refused. */
  c->threads = 0;
  g_autoptr(GError) err = NULL;
  assert_null(sim_strategy_find("chaos")->build(c, &o, &err));
  assert_non_null(err);
}

/* The cost table of chaos on a small Knights-Corner-like device (4 cores of 4 threads at
 * 1 GHz, 512-bit vectors, one FMA unit: 32 GFLOP/s per core; issue 0.5 with one thread;
 * CHAOS's code at 0.1 of the tuned rates). The sequential preparation of 80,000 images of
 * 29 x 29 = 841 elements, 2 FLOPs each, at one thread's elementwise rate 32e9 x 0.5 x 0.3 x 0.1
 * = 0.48 GFLOP/s: 80,000 x 1682 / 0.48e9 = 0.280333 s. conv1 of chaos-small (5 maps of 26 x 26
 * from 4 x 4 kernels: 2 x 5 x 676 x 16 = 108,160 FLOPs plus 3,380 bias adds = 111,540) at one
 * thread's conv rate 32e9 x 0.5 x 0.72 x 0.1 = 1.152 GFLOP/s: 96.823 us alone, and with 16
 * threads (four per core, issue 1.0: slowed by 16 x 0.5 / 4 = 2) 193.646 us. */
static void test_chaos_costs(void **state)
{
  g_autofree char *ini = NULL;
  int fd = g_file_open_tmp("dtsim-knc-XXXXXX.ini", &ini, NULL);
  assert_true(fd >= 0);
  close(fd);
  static const char text[] =
      "[device]\nmodel = xeon-phi-spec\ncores = 4\nthreads_per_core = 4\nclock_mhz = 1000\n"
      "vector_bits = 512\nfma_units = 1\nissue_fraction = 0.5; 1.0; 1.0; 1.0\n"
      "memory_bandwidth_GBps = 64\nmemory_bytes = 1G\ncoherence_latency_ns = 100\n"
      "[software]\nchaos_efficiency = 0.1\n[host_link]\nkind = none\n";
  assert_true(g_file_set_contents(ini, text, -1, NULL));
  for (int threads = 1; threads <= 16; threads += 15) {
    g_auto(sim_scenario) s;
    sim_scenario_init(&s);
    g_autofree char *t = g_strdup_printf("%d", threads);
    assert_true(sim_scenario_set(&s, "model", "chaos-small", NULL, NULL));
    assert_true(sim_scenario_set(&s, "threads", t, NULL, NULL));
    g_autoptr(GError) err = NULL;
    g_autoptr(sim_costs) c = sim_chaos_costs_build(&s, ini, &err);
    if (!c)
      fail_msg("%s", err->message);
    assert_int_equal(c->threads, threads);
    assert_int_equal(c->train_samples, 60000);
    assert_int_equal(c->validation_samples + c->test_samples, 20000);
    assert_float_equal(sim_time_to_s(c->prepare_ps), 80000 * 1682 / 0.48e9, 1e-9);
    const sim_layer_cost *conv1 = sim_costs_layer(c, 0);
    assert_float_equal(sim_time_to_s(conv1->forward_ps), 111540 / 1.152e9 * (threads == 1 ? 1 : 2),
                       1e-11);
    /* The first layer has no data gradient. */
    assert_int_equal(conv1->backward_data_ps, 0);
  }
  g_unlink(ini);
}

/* The report's communication time is the union of the probe device's communication streams'
 * busy time, whatever order the streams' intervals come in (microseconds):
 *   stream a: [0, 2) [5, 7) [20, 21);  b: [1, 3) [4, 5) [9, 12);  c: [6, 10) [15, 16)
 * unite into [0, 3) [4, 12) ([4, 5) and [5, 7) touch) [15, 16) [20, 21): 13 us. Compute
 * [11, 25) leaves [0, 3) and [4, 11) exposed: 10 us. The h2d stream's [30, 40) is no
 * communication but ends the run: 40 us, of which 40 - 14 - 10 = 16 idle. */
static void test_report_comm_union(void **state)
{
  (void)state;
  g_autoptr(sim_plan) p = sim__plan_new();
  sim_graph *g = p->graph;
  sim_unit_id u = sim__plan_add_unit(p, SIM_PROC_DEVICE, SIM_UNIT_DEVICE, 0, "gpu0");
  p->probe_unit = u;
  p->probe_compute = sim_graph_add_stream(g, u, "compute");
  static const struct {
    const char *stream;
    int64_t from_us, to_us;
  } busy[] = {{"a", 0, 2},  {"a", 5, 7},   {"a", 20, 21}, {"b", 1, 3},   {"b", 4, 5},
              {"b", 9, 12}, {"c", 6, 10},  {"c", 15, 16}, {"compute", 11, 25}, {"h2d", 30, 40}};
  for (size_t i = 0; i < G_N_ELEMENTS(busy); i++) {
    sim_stream_id s = G_MAXUINT32;
    for (sim_stream_id k = 0; k < sim_graph_n_streams(g); k++)
      if (strcmp(sim_graph_stream_name(g, k), busy[i].stream) == 0)
        s = k;
    if (s == G_MAXUINT32)
      s = sim_graph_add_stream(g, u, busy[i].stream);
    sim_task_id wait = sim_graph_add_delay(g, "wait", SIM_US(busy[i].from_us));
    sim_task_id t = sim_graph_add_compute(g, s, "busy", "x",
                                          SIM_US(busy[i].to_us - busy[i].from_us), 0, 0);
    sim_graph_depend(g, t, wait);
  }
  g_autoptr(GError) err = NULL;
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(sim_exec) x = sim_exec_new(e, g);
  sim_exec_set_comm(x, &sim_simple_comm_ops, (void *)&instant);
  assert_true(sim_exec_run(x, &err));
  sim_report r;
  sim_report_measure(&r, p, x);
  assert_int_equal(sim_time_from_s(r.iteration_time_s), SIM_US(40));
  assert_int_equal(sim_time_from_s(r.comm_time_s), SIM_US(13));
  assert_int_equal(sim_time_from_s(r.exposed_comm_time_s), SIM_US(10));
  assert_int_equal(sim_time_from_s(r.compute_time_s), SIM_US(14));
  assert_int_equal(sim_time_from_s(r.idle_time_s), SIM_US(16));
}

/* ---- Strategy 3d ---------------------------------------------------------------------------- */

static comm_topology *cluster(const char *system, uint32_t nodes, uint32_t per_node)
{
  comm_cluster_spec spec = {.system = system, .nodes = nodes, .devices_per_node = per_node};
  g_autoptr(GError) error = NULL;
  comm_topology *t = comm_topology_build(&spec, &error);
  if (!t)
    fail_msg("%s", error->message);
  return t;
}

/* A 3d plan on A100s over the analytic network; `reduce` gets the reduction rate it used. */
static sim_plan *build_3d(const sim_3d_opts *o, const comm_topology *topo, double *reduce,
                          sim_3d_metrics *m)
{
  g_autoptr(GError) error = NULL;
  sim_plan *plan = sim_3d_build(o, topo, COMM_NET_ANALYTIC, "a100-sxm4-80gb", NULL, reduce, m,
                                &error);
  if (!plan)
    fail_msg("%s", error->message);
  return plan;
}

/* Runs a plan with transfers of 1 ns per byte-free hop (the simple model at 1e15 B/s). */
static sim_exec *run_simple(sim_engine *e, const sim_plan *plan)
{
  static const sim_simple_comm comm = {.latency_ps = 0,
                                       .bandwidth_Bps = UINT64_C(1000000000000000)};
  sim_exec *x = sim_exec_new(e, plan->graph);
  sim_exec_set_comm(x, &sim_simple_comm_ops, (void *)&comm);
  g_autoptr(GError) error = NULL;
  if (!sim_exec_run(x, &error))
    fail_msg("%s", error->message);
  return x;
}

static double run_3d(const sim_3d_opts *o, const comm_topology *topo, sim_3d_metrics *m)
{
  double reduce;
  g_autoptr(sim_plan) plan = build_3d(o, topo, &reduce, m);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(sim_exec) x = run_simple(e, plan);
  return sim_time_to_s(sim_exec_makespan(x));
}

/* One chunk of `layers` blocks through the device: forward and backward seconds, summed from
 * the kernels independently of the strategy. */
static void block_times(const char *model, uint32_t mb, uint32_t layers, double *f, double *b)
{
  wl_tf tf;
  assert_true(wl_tf_parse(model, &tf, NULL));
  g_autoptr(dev_device) d = dev_device_load("a100-sxm4-80gb", NULL, NULL);
  wl_tf_shard sh = {.micro_batch = mb, .seq = tf.seq, .tp = 1, .precision = WL_PREC_BF16};
  wl_tf_kernel k[WL_TF_MAX_KERNELS];
  size_t n = wl_tf_layer_kernels(&tf, &sh, k);
  *f = *b = 0;
  for (size_t i = 0; i < n; i++)
    for (int p = 0; p < 3; p++)
      if (k[i].has[p])
        *(p ? b : f) += sim_time_to_s(dev_op_time_ps(d, &k[i].pass[p], 0)) * layers;
}

/* Pipeline schedules against their closed forms, with negligible transfers, an embedding and
 * LM head of a 8-word vocabulary, and sequences long enough (4096) that the optimizer step
 * (about 1.7 ms) is under 1% of the iteration: GPipe and 1F1B take (m + P - 1)(F + B) for m
 * micro-batches over P stages of forward F and backward B; interleaving V chunks per device
 * shrinks the bubble to (P - 1)/V: (m + (P - 1)/V)(F + B). */
static void test_3d_schedules(void **state)
{
  (void)state;
  const char *model = "transformer:layers=32,hidden=1024,heads=16,seq=4096,vocab=8";
  g_autoptr(comm_topology) topo = cluster("dgx-a100", 1, 4);
  double F, B;
  block_times(model, 1, 8, &F, &B);
  sim_3d_opts o;
  sim_3d_opts_init(&o);
  o.model = model;
  o.pp = 4;
  o.global_batch = 8;
  o.micro_batch = 1;
  sim_3d_metrics m;
  static const wl_schedule scheds[] = {WL_SCHED_GPIPE, WL_SCHED_1F1B};
  for (size_t i = 0; i < G_N_ELEMENTS(scheds); i++) {
    o.schedule = scheds[i];
    double t = run_3d(&o, topo, &m);
    double expect = (8 + 3) * (F + B);
    if (fabs(t / expect - 1) > 0.02)
      fail_msg("%s: %.6f s, closed form %.6f s", wl_schedule_name(scheds[i]), t, expect);
  }
  o.schedule = WL_SCHED_INTERLEAVED;
  o.interleave = 2;
  double t = run_3d(&o, topo, &m);
  double expect = (8 + 3.0 / 2) * (F + B);
  if (fabs(t / expect - 1) > 0.02)
    fail_msg("interleaved: %.6f s, closed form %.6f s", t, expect);
}

/* Memory of the first stage of GPT-3 175B on TP 8 x PP 8 x DP 16, ZeRO 1, full recomputation,
 * 1F1B, micro-batch 1 (worked by hand): 12 blocks of 12h^2 + 13h = 1,812,099,072 parameters and
 * the embedding (51200 + 2048) x 12288 = 654,311,424, over 8 tensor ranks: 2,799,937,536.
 * Weights 2 bytes each, the 12 bytes of Adam state over 16 data-parallel ranks; activations:
 * 8 micro-batches in flight x 12 blocks x 2 s b h (s b h = 2048 x 12288 = 25,165,824) plus one
 * block recomputed in full, s b h (10 + 24/8) with flash attention. */
static void test_3d_memory(void **state)
{
  (void)state;
  g_autoptr(comm_topology) topo = cluster("dgx-a100", 128, 8);
  sim_3d_opts o;
  sim_3d_opts_init(&o);
  o.model = "gpt3-175b";
  o.precision = WL_PREC_FP16;
  o.tp = 8, o.pp = 8, o.dp = 16;
  o.global_batch = 1536;
  o.micro_batch = 1;
  o.zero = 1;
  o.recompute = WL_RECOMPUTE_FULL;
  double reduce;
  sim_3d_metrics m;
  g_autoptr(sim_plan) plan = build_3d(&o, topo, &reduce, &m);
  uint64_t params = 2799937536ULL, sbh = 25165824ULL;
  assert_int_equal(m.weights_bytes, 2 * params);
  assert_int_equal(m.gradients_bytes, 2 * params);
  assert_int_equal(m.optimizer_bytes, 12 * params / 16);
  assert_int_equal(m.activations_bytes, 8 * 12 * 2 * sbh + 13 * sbh);
  /* The trace's tracks: tensor-parallel, data-parallel and pipeline traffic apart. */
  gboolean tp = FALSE, dp = FALSE, pp = FALSE;
  for (sim_stream_id s = 0; s < sim_graph_n_streams(plan->graph); s++) {
    const char *n = sim_graph_stream_name(plan->graph, s);
    tp |= strcmp(n, "tp") == 0;
    dp |= strcmp(n, "dp") == 0;
    pp |= g_str_has_prefix(n, "pp ");
  }
  assert_true(tp && dp && pp);
}

/* Data-parallel gradient reductions of a 3-D plan: the two chunks' allreduces (pp 2, tp 2,
 * dp 2 on 4 nodes of 2 A100s; without overlap a chunk's reduction is one task of its whole
 * time) take the closed form of a ring over the chunk's gradients on groups made here: the two
 * groups {0, 2} and {1, 3} of stage 0, {4, 6} and {5, 7} of stage 1, each across two nodes. The
 * plan times its collectives on groups it makes once per layout (and times the tensor-parallel
 * ones on {0, 1} first): taking another layout's groups, or another size's time, shows here. */
static void test_3d_dp_collective_times(void **state)
{
  (void)state;
  const char *model = "transformer:layers=8,hidden=1024,heads=16,seq=512,vocab=8";
  g_autoptr(comm_topology) topo = cluster("dgx-a100", 4, 2);
  sim_3d_opts o;
  sim_3d_opts_init(&o);
  o.model = model;
  o.tp = 2, o.pp = 2, o.dp = 2;
  o.global_batch = 4;
  o.micro_batch = 1;
  o.overlap = FALSE;
  double reduce;
  sim_3d_metrics m;
  g_autoptr(sim_plan) plan = build_3d(&o, topo, &reduce, &m);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(sim_exec) x = run_simple(e, plan);

  /* Gradients per tensor rank, 2 bytes each (bf16): 4 blocks, plus the embedding on the first
   * chunk and the final norm and a copy of the tied embedding on the last. */
  wl_tf tf;
  assert_true(wl_tf_parse(model, &tf, NULL));
  assert_true(tf.tied_head);
  uint64_t blocks = 4 * wl_tf_layer_params(&tf);
  uint64_t params[2] = {blocks + wl_tf_embedding_params(&tf),
                        blocks + wl_tf_head_params(&tf) + (uint64_t)tf.vocab * tf.hidden};
  assert_true(params[0] != params[1]);
  const comm_coll_algorithm *ring = comm_coll_algorithm_find("ring", "test", NULL);
  guint found = 0;
  for (sim_task_id t = 0; t < sim_graph_n_tasks(plan->graph); t++) {
    if (strcmp(sim_graph_task_name(plan->graph, t), "allreduce grads c0") != 0)
      continue;
    uint32_t s = found++;   /* stage 0's task is made first */
    assert_true(s < 2);
    comm_coll_args a = {.op = COMM_COLL_ALLREDUCE, .bytes = (params[s] + 1) / 2 * 2,
                        .reduce_Bps = reduce, .form = COMM_COLL_FORM_PIPELINED};
    sim_time_ps want = 0;
    for (uint32_t r = 0; r < 2; r++) {
      uint32_t ranks[2] = {4 * s + r, 4 * s + r + 2};
      g_autoptr(comm_coll_group) g = comm_coll_group_new(topo, ranks, 2);
      sim_time_ps ps;
      assert_true(comm_coll_analytic_time(topo, g, ring, &a, &ps, NULL));
      want = MAX(want, ps);
    }
    sim_time_ps got = sim_exec_task_end(x, t) - sim_exec_task_start(x, t);
    if (got != want)
      fail_msg("stage %u: gradient allreduce %" G_GINT64_FORMAT " ps, closed form %"
               G_GINT64_FORMAT " ps", s, got, want);
  }
  assert_int_equal(found, 2);

  /* With overlap, buckets of a quarter of stage 0's gradients (of a tensor rank; --bucket-mib):
   * four buckets,
   * each the ring's closed form over a quarter of them; the first starts before the last
   * micro-batch's backward of the chunk ends (it closes with the first quarter of it), the
   * last after it. */
  o.overlap = TRUE;
  uint64_t rank_params = (params[0] + 1) / 2;   /* one tensor rank's */
  o.bucket_bytes = rank_params / 4 * 2 + 2;
  g_autoptr(sim_plan) p2 = build_3d(&o, topo, &reduce, &m);
  g_autoptr(sim_engine) e2 = sim_engine_new();
  g_autoptr(sim_exec) x2 = run_simple(e2, p2);
  uint64_t per = o.bucket_bytes / 2, k = (rank_params + per - 1) / per;
  assert_int_equal(k, 4);
  comm_coll_args a = {.op = COMM_COLL_ALLREDUCE, .bytes = (rank_params + k - 1) / k * 2,
                      .reduce_Bps = reduce, .form = COMM_COLL_FORM_PIPELINED};
  sim_time_ps want = 0;
  for (uint32_t r = 0; r < 2; r++) {
    uint32_t ranks[2] = {r, r + 2};
    g_autoptr(comm_coll_group) g = comm_coll_group_new(topo, ranks, 2);
    sim_time_ps ps;
    assert_true(comm_coll_analytic_time(topo, g, ring, &a, &ps, NULL));
    want = MAX(want, ps);
  }
  sim_time_ps first_start = -1, last_start = -1, backward_end = 0;
  guint buckets = 0;
  for (sim_task_id t = 0; t < sim_graph_n_tasks(p2->graph); t++) {
    const char *name = sim_graph_task_name(p2->graph, t);
    /* Stage 0's last micro-batch (mb 1) backward through chunk 0, made first. */
    if (strcmp(name, "B mb1 c0") == 0 && buckets == 0)
      backward_end = MAX(backward_end, sim_exec_task_end(x2, t));
    if (!g_str_has_prefix(name, "allreduce grads c0 bucket ") || buckets >= k)
      continue;
    buckets++;
    assert_int_equal(sim_exec_task_end(x2, t) - sim_exec_task_start(x2, t), want);
    if (first_start < 0)
      first_start = sim_exec_task_start(x2, t);
    last_start = sim_exec_task_start(x2, t);
  }
  assert_int_equal(buckets, k);
  assert_true(first_start < backward_end);
  assert_true(last_start >= backward_end);
}

static void expect_3d_error(const sim_3d_opts *o, const comm_topology *topo, const char *device,
                            const char *const *words)
{
  g_autoptr(GError) error = NULL;
  double reduce;
  sim_3d_metrics m;
  g_autoptr(sim_plan) plan = sim_3d_build(o, topo, COMM_NET_ANALYTIC, device, NULL, &reduce, &m,
                                          &error);
  assert_null(plan);
  assert_int_equal(error->code, DT_ERROR_INPUT);
  assert_null(strchr(error->message, '\n'));
  for (; *words; words++)
    if (!strstr(error->message, *words))
      fail_msg("'%s' does not name %s", error->message, *words);
}

static void test_3d_bad_input(void **state)
{
  (void)state;
  g_autoptr(comm_topology) topo = cluster("dgx-a100", 2, 8);
  sim_3d_opts o;
  sim_3d_opts_init(&o);
  o.model = "transformer:layers=12,hidden=1024,heads=16,seq=512,vocab=1000";
  o.global_batch = 64;
  o.tp = 4, o.pp = 2, o.dp = 3;
  expect_3d_error(&o, topo, "a100-sxm4-80gb", (const char *[]){"--tp", "--pp", "--dp", NULL});
  o.tp = 3, o.pp = 1, o.dp = 0;
  expect_3d_error(&o, topo, "a100-sxm4-80gb", (const char *[]){"--tp", NULL});
  o.tp = 8, o.pp = 2;
  o.model = "transformer:layers=12,hidden=1024,heads=8,seq=512,vocab=1000";
  o.tp = 16, o.pp = 1;
  expect_3d_error(&o, topo, "a100-sxm4-80gb", (const char *[]){"--tp", "heads", NULL});
  /* Blocks that do not divide the stages are spread; more stages than blocks are refused. */
  o.tp = 1, o.pp = 16, o.dp = 1;
  expect_3d_error(&o, topo, "a100-sxm4-80gb", (const char *[]){"--pp", "--interleave", NULL});
  o.tp = 2, o.pp = 2, o.dp = 4;
  o.schedule = WL_SCHED_INTERLEAVED;
  o.interleave = 2;
  o.global_batch = 60;
  o.micro_batch = 4;
  expect_3d_error(&o, topo, "a100-sxm4-80gb",
                  (const char *[]){"--global-batch", "--dp", "--micro-batch", NULL});
  o.global_batch = 64;
  o.micro_batch = 0;
  /* Interleaving without chunks (V = 1) or without a pipeline (P = 1). */
  o.interleave = 1;
  expect_3d_error(&o, topo, "a100-sxm4-80gb", (const char *[]){"interleaved", "--interleave", NULL});
  o.interleave = 2, o.tp = 4, o.pp = 1;
  expect_3d_error(&o, topo, "a100-sxm4-80gb", (const char *[]){"interleaved", "--pp", NULL});
  o.schedule = WL_SCHED_1F1B, o.interleave = 1;
  /* Two nodes of 8: tensor parallelism of 16 leaves the NVLink domain. */
  o.tp = 16, o.pp = 1, o.dp = 0;
  o.model = "transformer:layers=12,hidden=1024,heads=16,seq=512,vocab=1000";
  expect_3d_error(&o, topo, "a100-sxm4-80gb", (const char *[]){"--tp 16", "NVLink", NULL});
  /* Sequence parallelism without tensor parallelism, ZeRO without data parallelism. */
  o.tp = 1, o.seq_parallel = TRUE;
  expect_3d_error(&o, topo, "a100-sxm4-80gb", (const char *[]){"--sequence-parallel", NULL});
  o.seq_parallel = FALSE, o.tp = 8, o.pp = 2, o.zero = 1;
  expect_3d_error(&o, topo, "a100-sxm4-80gb", (const char *[]){"--zero 1", "--dp 1", NULL});
  o.zero = 0, o.tp = 2, o.pp = 2, o.dp = 4;
  o.precision = WL_PREC_FP8;
  expect_3d_error(&o, topo, "a100-sxm4-80gb", (const char *[]){"--precision", "fp8", NULL});
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_3d_schedules), cmocka_unit_test(test_3d_memory),
      cmocka_unit_test(test_3d_bad_input), cmocka_unit_test(test_registry_flags), cmocka_unit_test(test_3d_dp_collective_times),
      cmocka_unit_test(test_report_comm_union),
      cmocka_unit_test(test_gpipe_bubble),  cmocka_unit_test(test_1f1b),
      cmocka_unit_test(test_dp_closed_form), cmocka_unit_test(test_overlap_never_slower),
      cmocka_unit_test(test_partition),     cmocka_unit_test(test_mp_chain),
      cmocka_unit_test(test_hybrid_dp_pp_closed_form),
      cmocka_unit_test(test_hybrid_owt_closed_form),
      cmocka_unit_test(test_chaos_closed_form), cmocka_unit_test(test_chaos_costs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
