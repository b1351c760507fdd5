/* Tests of comm/coll against the test double of the network (fake_net.c): closed forms worked
 * out by hand, flow schedules against closed forms, pipelined rings against step-by-step rings,
 * bytes conservation, hierarchical against flat ring, and the parameter server's port
 * bottleneck. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "coll_internal.h"
#include "fake_net.h"
#include "util.h"

/* One device per node, every pair 2 us and 12.5 GB/s (100 Gb/s). */
static comm_topology *flat(uint32_t n)
{
  fake_topology_spec s = {n, 1, 0, SIM_NS(500), 100000000000ULL, SIM_US(2), 12500000000ULL};
  return fake_topology_new(&s);
}

static const comm_coll_algorithm *algo(const char *name)
{
  g_autoptr(GError) e = NULL;
  const comm_coll_algorithm *a = comm_coll_algorithm_find(name, "test", &e);
  assert_non_null(a);
  return a;
}

static sim_time_ps analytic(const comm_topology *t, const comm_coll_group *g, const char *name,
                            const comm_coll_args *args)
{
  g_autoptr(GError) e = NULL;
  sim_time_ps ps = 0;
  assert_true(comm_coll_analytic_time(t, g, algo(name), args, &ps, &e));
  return ps;
}

typedef struct {
  sim_time_ps time;
  uint64_t flows;
  uint64_t *recv;      /* per member, owned */
} run_result;

static void on_done(sim_engine *engine, void *user)
{
  (*(int *)user)++;
}

/* Runs the collective with the given network model and returns its duration. */
static run_result run(const comm_topology *t, const comm_coll_group *g, const char *name,
                      const comm_coll_args *args, comm_net_model model)
{
  g_autoptr(sim_engine) engine = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(engine, t, model);
  g_autoptr(GError) e = NULL;
  g_autoptr(comm_coll) c = comm_coll_new(net, g, algo(name), args, &e);
  assert_non_null(c);
  int done = 0;
  comm_coll_start(c, on_done, &done);
  sim_engine_run(engine);
  assert_int_equal(done, 1);
  assert_true(comm_coll_finished(c));
  run_result r = {comm_coll_end_time(c) - comm_coll_start_time(c), comm_coll_flows(c),
                  g_new(uint64_t, g->n)};
  for (uint32_t i = 0; i < g->n; i++)
    r.recv[i] = comm_coll_bytes_received(c, i);
  return r;
}

static void assert_close(sim_time_ps got, sim_time_ps want, double tol)
{
  double err = fabs((double)got - (double)want) / (double)want;
  if (err > tol)
    fail_msg("got %" G_GINT64_FORMAT " ps, want %" G_GINT64_FORMAT " ps (error %.4f%%)", got, want,
             100 * err);
}

/* ---- Closed forms by hand (n = 4 or 5, alpha = 2 us, 12.5 GB/s, reduction at 100 GB/s) ---- */

static void test_closed_forms(void **state)
{
  g_autoptr(comm_topology) t4 = flat(4);
  g_autoptr(comm_topology) t5 = flat(5);
  g_autoptr(comm_coll_group) g4 = comm_coll_group_new(t4, NULL, 0);
  g_autoptr(comm_coll_group) g5 = comm_coll_group_new(t5, NULL, 0);
  comm_coll_args a = {.op = COMM_COLL_ALLREDUCE, .bytes = 4000000, .reduce_Bps = 1e11};
  /* Ring: 6 steps of 1e6 bytes: 2 + 80 us each, 3 reductions of 1e6 bytes at 1e11: 10 us. */
  assert_int_equal(analytic(t4, g4, "ring", &a), SIM_US(6 * 82 + 3 * 10));
  a.bytes = 1000000;
  /* Binomial tree: 2 reduce steps of (2 + 80 + 10) us, 2 broadcast steps of 82 us. */
  assert_int_equal(analytic(t4, g4, "tree", &a), SIM_US(2 * 92 + 2 * 82));
  /* Recursive doubling: 2 exchanges of (82 + 10) us. */
  assert_int_equal(analytic(t4, g4, "recursive-doubling", &a), SIM_US(2 * 92));
  /* n = 5: one fold (82 + 10), 2 exchanges, one unfold (82). */
  assert_int_equal(analytic(t5, g5, "recursive-doubling", &a), SIM_US(92 + 2 * 92 + 82));
  /* Halving-doubling: 5e5 bytes (2 + 40 + 5), 2.5e5 (2 + 20 + 2.5), then 2.5e5 and 5e5
   * without reduction. */
  assert_int_equal(analytic(t4, g4, "halving-doubling", &a),
                   SIM_NS(47000 + 24500 + 22000 + 42000));
  /* One to all: every member sends to the root at once, each on its own link of the fake (a
   * link per ordered pair): the busiest link carries one buffer, 2 + 80 us; the root reduces
   * 3e6 bytes, 30 us; then it sends back the same way, 82 us. */
  assert_int_equal(analytic(t4, g4, "onetoall", &a), SIM_US(82 + 30 + 82));
  /* Chain broadcast of 2 MiB in 4 chunks of 512 KiB: 4 - 2 + 4 = 6 steps of
   * 2 us + 524288 / 12.5e9 s = 43.94304 us. */
  comm_coll_args b = {.op = COMM_COLL_BROADCAST, .bytes = 2 << 20, .chunk_bytes = 512 << 10};
  assert_int_equal(analytic(t4, g4, "ring", &b), SIM_PS(6 * INT64_C(43943040)));
  /* Without a chunk size the chain takes C = sqrt((D - 1) B beta / alpha) chunks, D = 3 hops:
   * sqrt(2 x 167.77216 us / 2 us) = 12.95 -> 13 chunks of at most 161320 bytes (12.9056 us):
   * 15 steps of 14.9056 us = 223.584 us, better than the 263.658 us of 4 chunks. */
  b.chunk_bytes = 0;
  assert_int_equal(analytic(t4, g4, "ring", &b), SIM_PS(15 * INT64_C(14905600)));
  /* Ring allgather of 4e6 bytes: 3 steps of 82 us. */
  comm_coll_args ag = {.op = COMM_COLL_ALLGATHER, .bytes = 4000000};
  assert_int_equal(analytic(t4, g4, "ring", &ag), SIM_US(3 * 82));
}

/* The flow schedules give the hand values too (the double has no contention, and every
 * pair is alike). */
static void test_flow_hand(void **state)
{
  g_autoptr(comm_topology) t4 = flat(4);
  g_autoptr(comm_coll_group) g4 = comm_coll_group_new(t4, NULL, 0);
  comm_coll_args a = {.op = COMM_COLL_ALLREDUCE, .bytes = 4000000, .reduce_Bps = 1e11};
  run_result r = run(t4, g4, "ring", &a, COMM_NET_FLOW);
  assert_int_equal(r.time, SIM_US(6 * 82 + 3 * 10));
  assert_int_equal(r.flows, 2 * 4);   /* pipelined: one flow per rank and phase */
  g_free(r.recv);
  a.form = COMM_COLL_FORM_STEPS;
  r = run(t4, g4, "ring", &a, COMM_NET_FLOW);
  assert_int_equal(r.time, SIM_US(6 * 82 + 3 * 10));
  assert_int_equal(r.flows, 6 * 4);
  g_free(r.recv);
  a.bytes = 1000000;
  r = run(t4, g4, "tree", &a, COMM_NET_FLOW);
  assert_int_equal(r.time, SIM_US(2 * 92 + 2 * 82));
  g_free(r.recv);
  /* The analytic network model is one event at the closed form. */
  g_autoptr(sim_engine) engine = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(engine, t4, COMM_NET_ANALYTIC);
  g_autoptr(comm_coll) c = comm_coll_new(net, g4, algo("tree"), &a, NULL);
  int done = 0;
  comm_coll_start(c, on_done, &done);
  assert_int_equal(sim_engine_run(engine), 1);
  assert_int_equal(comm_coll_end_time(c), SIM_US(2 * 92 + 2 * 82));
}

/* Flow and analytic agree within 0.5% on 2 to 1024 ranks. */
static void test_flow_vs_analytic(void **state)
{
  static const uint32_t sizes[] = {2, 3, 4, 5, 7, 8, 16, 33, 64, 100, 128, 256, 512, 1024};
  static const char *const names[] = {"ring", "tree", "recursive-doubling", "halving-doubling"};
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    g_autoptr(comm_topology) t = flat(sizes[i]);
    g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
    for (gsize k = 0; k < G_N_ELEMENTS(names); k++) {
      comm_coll_args a = {.op = COMM_COLL_ALLREDUCE, .bytes = (8 << 20) + 12345,
                          .reduce_Bps = 3e11};
      run_result r = run(t, g, names[k], &a, COMM_NET_FLOW);
      assert_close(r.time, analytic(t, g, names[k], &a), 0.005);
      g_free(r.recv);
    }
  }
}

/* The pipelined ring (one flow per rank and phase) and the step ring agree, also on nodes of
 * 8 with a fast inside and a slow outside. */
static void test_pipelined_vs_steps(void **state)
{
  static const uint32_t nodes[] = {1, 2, 3, 8, 32};
  for (gsize i = 0; i < G_N_ELEMENTS(nodes); i++) {
    fake_topology_spec s = {nodes[i], 8, 0, SIM_US(1), 125000000000ULL, SIM_US(5),
                            12500000000ULL};
    g_autoptr(comm_topology) t = fake_topology_new(&s);
    g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
    const comm_coll_op ops[] = {COMM_COLL_ALLREDUCE, COMM_COLL_ALLGATHER,
                                COMM_COLL_REDUCE_SCATTER};
    for (gsize k = 0; k < G_N_ELEMENTS(ops); k++) {
      comm_coll_args a = {.op = ops[k], .bytes = 3 << 20, .reduce_Bps = 3e11};
      run_result p = run(t, g, "ring", &a, COMM_NET_FLOW);
      a.form = COMM_COLL_FORM_STEPS;
      run_result st = run(t, g, "ring", &a, COMM_NET_FLOW);
      assert_close(p.time, st.time, 0.005);
      for (uint32_t m = 0; m < g->n; m++)
        assert_int_equal(p.recv[m], st.recv[m]);
      g_free(p.recv);
      g_free(st.recv);
    }
  }
}

/* Every rank receives exactly what the algorithm moves. */
static void test_bytes_conservation(void **state)
{
  const uint32_t n = 8;
  const uint64_t b = 1000003;   /* not divisible by n: segments of 125001 and 125000 bytes */
  g_autoptr(comm_topology) t = flat(n);
  g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
  comm_coll_args a = {.op = COMM_COLL_ALLREDUCE, .bytes = b};
  /* Ring: rank p receives all segments but its own in the reduce-scatter and all but p + 1 in
   * the allgather; segment i has 125001 bytes for i < 3. */
  for (int form = 0; form < 2; form++) {
    a.form = form ? COMM_COLL_FORM_STEPS : COMM_COLL_FORM_PIPELINED;
    run_result r = run(t, g, "ring", &a, COMM_NET_FLOW);
    for (uint32_t p = 0; p < n; p++) {
      uint64_t segp = p < 3 ? 125001 : 125000, segq = (p + 1) % n < 3 ? 125001 : 125000;
      assert_int_equal(r.recv[p], 2 * b - segp - segq);
    }
    g_free(r.recv);
  }
  a.form = COMM_COLL_FORM_PIPELINED;
  /* Binomial tree: every non-root sends its partial sum up once and receives the result once:
   * 2 (n - 1) B in all; rank 0 hears from its log2(8) = 3 children. */
  run_result r = run(t, g, "tree", &a, COMM_NET_FLOW);
  uint64_t total = 0;
  for (uint32_t p = 0; p < n; p++)
    total += r.recv[p];
  assert_int_equal(total, 2 * (n - 1) * b);
  assert_int_equal(r.recv[0], 3 * b);   /* log2(8) children */
  g_free(r.recv);
  /* Recursive doubling: log2(8) = 3 full buffers per rank. */
  r = run(t, g, "recursive-doubling", &a, COMM_NET_FLOW);
  for (uint32_t p = 0; p < n; p++)
    assert_int_equal(r.recv[p], 3 * b);
  g_free(r.recv);
  /* Halving-doubling: 2 x (ceil(B/2) + ceil(B/4) + ceil(B/8)) per rank. */
  r = run(t, g, "halving-doubling", &a, COMM_NET_FLOW);
  for (uint32_t p = 0; p < n; p++)
    assert_int_equal(r.recv[p], 2 * (500002 + 250001 + 125001));
  g_free(r.recv);
  /* Double tree: each tree moves its half up (n - 1 edges) and down (n - 1 edges). */
  r = run(t, g, "double-tree", &a, COMM_NET_FLOW);
  total = 0;
  for (uint32_t p = 0; p < n; p++)
    total += r.recv[p];
  assert_int_equal(total, 2 * (n - 1) * b);
  g_free(r.recv);
  /* One to all: the root receives 7 buffers, everyone else one. */
  r = run(t, g, "onetoall", &a, COMM_NET_FLOW);
  assert_int_equal(r.recv[0], 7 * b);
  for (uint32_t p = 1; p < n; p++)
    assert_int_equal(r.recv[p], b);
  g_free(r.recv);
  /* Broadcast from rank 3 down a chain: everyone but the root receives the buffer once. */
  comm_coll_args bc = {.op = COMM_COLL_BROADCAST, .bytes = b, .root = 3, .chunk_bytes = 65536};
  const char *const bnames[] = {"ring", "tree", "onetoall"};
  for (gsize k = 0; k < G_N_ELEMENTS(bnames); k++) {
    r = run(t, g, bnames[k], &bc, COMM_NET_FLOW);
    for (uint32_t p = 0; p < n; p++)
      assert_int_equal(r.recv[p], p == 3 ? 0 : b);
    g_free(r.recv);
  }
  /* Reduce to rank 3: every non-root sends one buffer's worth: (n - 1) B in all. */
  bc.op = COMM_COLL_REDUCE;
  for (gsize k = 0; k < G_N_ELEMENTS(bnames); k++) {
    r = run(t, g, bnames[k], &bc, COMM_NET_FLOW);
    total = 0;
    for (uint32_t p = 0; p < n; p++)
      total += r.recv[p];
    assert_int_equal(total, (n - 1) * b);
    g_free(r.recv);
  }
  /* Recursive-doubling allgather: everyone ends with all segments but its own. */
  comm_coll_args ag = {.op = COMM_COLL_ALLGATHER, .bytes = b};
  r = run(t, g, "recursive-doubling", &ag, COMM_NET_FLOW);
  for (uint32_t p = 0; p < n; p++)
    assert_int_equal(r.recv[p], b - (p < 3 ? 125001 : 125000));
  g_free(r.recv);
}

/* 8 nodes x 8 GPUs, 125 GB/s and 1 us inside a node, 12.5 GB/s (100 Gb/s) and 5 us between,
 * 64 MiB allreduce, no reduction cost.
 * Flat ring: 126 steps of 5 us + 1 MiB / 12.5 GB/s (83.88608 us) = 11199.64608 us.
 * Hierarchical: intra reduce-scatter 7 x (1 + 8 MiB / 125 GB/s = 68.108864 us),
 * inter ring over 8 nodes on 8 MiB: 14 x (5 + 83.88608) us, intra allgather as the first:
 * 2 x 476.762048 + 1244.40512 = 2197.929216 us. */
static void test_hierarchical_beats_ring(void **state)
{
  fake_topology_spec s = {8, 8, 0, SIM_US(1), 125000000000ULL, SIM_US(5), 12500000000ULL};
  g_autoptr(comm_topology) t = fake_topology_new(&s);
  g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
  assert_int_equal(comm_coll_group_nodes(g), 8);
  assert_int_equal(comm_coll_group_per_node(g), 8);
  comm_coll_args a = {.op = COMM_COLL_ALLREDUCE, .bytes = 64 << 20};
  sim_time_ps ring_want = SIM_PS(INT64_C(11199646080)), hier_want = SIM_PS(INT64_C(2197929216));
  assert_int_equal(analytic(t, g, "ring", &a), ring_want);
  assert_int_equal(analytic(t, g, "hierarchical", &a), hier_want);
  run_result r = run(t, g, "ring", &a, COMM_NET_FLOW);
  assert_close(r.time, ring_want, 0.001);
  g_free(r.recv);
  r = run(t, g, "hierarchical", &a, COMM_NET_FLOW);
  assert_close(r.time, hier_want, 0.001);
  g_free(r.recv);
}

/* W = 16 workers push 4 tensors of 1e6 bytes to one shard (a host endpoint) whose port takes
 * 12.5 GB/s: the hand formula for the last push is latency + W x bytes / bandwidth =
 * 2 us + 16 x 4e6 / 12.5e9 s = 5122 us. Aggregating one tensor reads 16 x 1e6 bytes at 1e12 B/s
 * (16 us); its pull to a worker (no contention at the workers) takes 2 + 80 = 82 us. */
static int pulled_count;
static void on_pulled(sim_engine *e, uint32_t w, uint32_t t, void *user)
{
  pulled_count++;
}

static void test_ps_port_bottleneck(void **state)
{
  const uint32_t w = 16;
  /* The server sits on an extra node so that every push crosses the network. */
  fake_topology_spec s = {w, 1, 1, SIM_NS(500), 100000000000ULL, SIM_US(2), 12500000000ULL};
  g_autoptr(comm_topology) t = fake_topology_new(&s);
  g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
  g_autoptr(sim_engine) engine = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(engine, t, COMM_NET_FLOW);
  fake_net_set_port_serialisation(net, TRUE);
  const uint64_t bytes[4] = {1000000, 1000000, 1000000, 1000000};
  comm_ps_config cfg = {COMM_PS_DEDICATED, 1, bytes, 4, 1e12, FALSE, 0, NULL};
  g_autoptr(GError) e = NULL;
  g_autoptr(comm_ps) ps = comm_ps_new(net, g, &cfg, &e);
  assert_non_null(ps);
  int done = 0;
  pulled_count = 0;
  comm_ps_step_begin(ps, on_pulled, on_done, &done);
  comm_ps_push_all(ps);
  sim_engine_run(engine);
  assert_int_equal(done, 1);
  assert_int_equal(pulled_count, 4 * 16);
  /* Pushes are issued tensor by tensor, so tensor 3 completes last. */
  assert_int_equal(sim_engine_now(engine), SIM_US(5122 + 16 + 82));
}

/* Two servers on one host share its aggregation (the host's memory reads every gradient that
 * arrives, whichever server it is for). As test_ps_port_bottleneck, with two dedicated servers
 * on the one extra node and a slow aggregation, 1e9 B/s: 16 x 1e6 bytes take 16 ms a tensor.
 * The last pushes of tensors 0..3 arrive at 1282, 2562, 3842 and 5122 us (one port, 80 us a
 * push); the host aggregates one tensor at a time: tensor 0 from 1282 to 17282 us, tensor 1 to
 * 33282, tensor 2 to 49282, tensor 3 to 65282; its pulls take 82 us: 65364 us. Were the two
 * servers' aggregations independent (shard 0 holds tensors 0 and 2, shard 1 tensors 1 and 3),
 * the step would end at 34644 us. */
static void test_ps_servers_share_host(void **state)
{
  const uint32_t w = 16;
  fake_topology_spec s = {w, 1, 1, SIM_NS(500), 100000000000ULL, SIM_US(2), 12500000000ULL};
  g_autoptr(comm_topology) t = fake_topology_new(&s);
  g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
  g_autoptr(sim_engine) engine = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(engine, t, COMM_NET_FLOW);
  fake_net_set_port_serialisation(net, TRUE);
  const uint64_t bytes[4] = {1000000, 1000000, 1000000, 1000000};
  comm_ps_config cfg = {COMM_PS_DEDICATED, 2, bytes, 4, 1e9, FALSE, 0, NULL};
  g_autoptr(comm_ps) ps = comm_ps_new(net, g, &cfg, NULL);
  assert_non_null(ps);
  assert_int_equal(comm_ps_server_endpoint(ps, 0), comm_ps_server_endpoint(ps, 1));
  int done = 0;
  pulled_count = 0;
  comm_ps_step_begin(ps, on_pulled, on_done, &done);
  comm_ps_push_all(ps);
  sim_engine_run(engine);
  assert_int_equal(done, 1);
  assert_int_equal(sim_engine_now(engine), SIM_US(65364));
}

/* Node workers (TensorFlow's distributed_replicated): 2 nodes of 4 devices push one tensor of
 * 1e6 bytes to one server on an extra node; ports serialise, a pair inside a node takes
 * 0.5 us + bytes / 100 GB/s (10 us), across nodes 2 us + bytes / 12.5 GB/s (80 us).
 *   - Each node sums on its member 0 mod 4 (devices 0 and 4): device 0's own gradient is there
 *     at once, the other three queue at its port: 0.5 + 3 x 10 = 30.5 us.
 *   - The sum reads 4 x 1e6 bytes at 1e11 B/s: 40 us, so 70.5 us.
 *   - Both nodes' one copy queues at the server's port: 70.5 + 2 x 80 + 2 = 232.5 us.
 *   - The server aggregates 2 copies (not 8) at 1e12 B/s: 2 us, 234.5 us.
 *   - One copy to each node's host (no contention, different ports): 82 us, 316.5 us.
 *   - The host copies it to its 4 devices (different ports): 10.5 us, 327 us.
 * With a worker per device the server's port would take 8 pushes (8 x 80 + 2 = 642 us), then
 * 8 us of aggregation and 82 us of pulls: 732 us. */
static void test_ps_node_workers(void **state)
{
  fake_topology_spec s = {2, 4, 1, SIM_NS(500), 100000000000ULL, SIM_US(2), 12500000000ULL};
  g_autoptr(comm_topology) t = fake_topology_new(&s);
  g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
  const uint64_t bytes[1] = {1000000};
  for (int node = 0; node <= 1; node++) {
    g_autoptr(sim_engine) engine = sim_engine_new();
    g_autoptr(comm_net) net = comm_net_new(engine, t, COMM_NET_FLOW);
    fake_net_set_port_serialisation(net, TRUE);
    comm_ps_config cfg = {COMM_PS_DEDICATED, 1, bytes, 1, 1e12, node, 1e11, NULL};
    g_autoptr(comm_ps) ps = comm_ps_new(net, g, &cfg, NULL);
    assert_non_null(ps);
    int done = 0;
    pulled_count = 0;
    comm_ps_step_begin(ps, on_pulled, on_done, &done);
    comm_ps_push_all(ps);
    sim_engine_run(engine);
    assert_int_equal(done, 1);
    assert_int_equal(pulled_count, 8);
    assert_int_equal(sim_engine_now(engine), node ? SIM_NS(327000) : SIM_US(732));
  }
}

static void test_ps_sharding(void **state)
{
  g_autoptr(comm_topology) t = flat(4);
  g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
  g_autoptr(sim_engine) engine = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(engine, t, COMM_NET_FLOW);
  /* Largest first onto the lightest shard: 9 -> 0, 7 -> 1, 5 -> 2, 4 -> 2 (loads 9, 7, 5),
   * 3 -> 1 (loads 9, 7, 9), 1 -> 0 (loads 9, 10, 9: the lowest of the two lightest). */
  const uint64_t bytes[6] = {3, 9, 4, 1, 7, 5};
  comm_ps_config cfg = {COMM_PS_GPU, 3, bytes, 6, 0, FALSE, 0, NULL};
  g_autoptr(comm_ps) ps = comm_ps_new(net, g, &cfg, NULL);
  assert_int_equal(comm_ps_shard_of(ps, 1), 0);
  assert_int_equal(comm_ps_shard_of(ps, 4), 1);
  assert_int_equal(comm_ps_shard_of(ps, 5), 2);
  assert_int_equal(comm_ps_shard_of(ps, 2), 2);
  assert_int_equal(comm_ps_shard_of(ps, 0), 1);
  assert_int_equal(comm_ps_shard_of(ps, 3), 0);
  assert_int_equal(comm_ps_shard_bytes(ps, 0), 10);
  assert_int_equal(comm_ps_shard_bytes(ps, 1), 10);
  assert_int_equal(comm_ps_shard_bytes(ps, 2), 9);
  /* gpu placement: shard k on device (k % nodes) of node k. */
  assert_int_equal(comm_ps_server_endpoint(ps, 2), 2);
  /* Colocated: K servers on the hosts of the worker nodes, round-robin, K < N allowed
   * (TensorFlow jobs ran them so) and K > N too: server 4 shares node 0's host (one socket
   * here) with server 0. gpu: 6 servers on 4 devices, servers 4 and 5 on devices 0 and 1.
   * Dedicated needs extra nodes; no server at all is refused. */
  comm_ps_config three = {COMM_PS_COLOCATED, 3, bytes, 6, 0, FALSE, 0, NULL};
  g_autoptr(comm_ps) co = comm_ps_new(net, g, &three, NULL);
  assert_non_null(co);
  assert_int_equal(comm_ps_servers(co), 3);
  for (uint32_t k = 0; k < 3; k++)
    assert_int_equal(comm_ps_server_endpoint(co, k), comm_topology_host(t, k, 0));
  comm_ps_config five = {COMM_PS_COLOCATED, 5, bytes, 6, 0, FALSE, 0, NULL};
  g_autoptr(comm_ps) co5 = comm_ps_new(net, g, &five, NULL);
  assert_non_null(co5);
  assert_int_equal(comm_ps_server_endpoint(co5, 4), comm_topology_host(t, 0, 0));
  comm_ps_config six = {COMM_PS_GPU, 6, bytes, 6, 0, FALSE, 0, NULL};
  g_autoptr(comm_ps) gp = comm_ps_new(net, g, &six, NULL);
  assert_non_null(gp);
  assert_int_equal(comm_ps_server_endpoint(gp, 4), comm_topology_device(t, 0));
  assert_int_equal(comm_ps_server_endpoint(gp, 5), comm_topology_device(t, 1));
  g_autoptr(GError) e = NULL;
  comm_ps_config bad = {COMM_PS_DEDICATED, 1, bytes, 6, 0, FALSE, 0, NULL};
  assert_null(comm_ps_new(net, g, &bad, &e));
  assert_true(g_error_matches(e, DT_ERROR, DT_ERROR_INPUT));
  g_clear_error(&e);
  bad.placement = COMM_PS_CPU;
  bad.servers = 0;
  assert_null(comm_ps_new(net, g, &bad, &e));
  assert_true(g_error_matches(e, DT_ERROR, DT_ERROR_INPUT));
}

/* Software overheads: launch once, per step on every step a rank takes part in. Ring of 4,
 * 4e6 bytes, launch 8.4 us, 3.4 us per step: 8.4 + 6 x (82 + 3.4) + 3 x 10 = 550.8 us. */
static void test_overheads(void **state)
{
  g_autoptr(comm_topology) t = flat(4);
  g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
  comm_coll_args a = {.op = COMM_COLL_ALLREDUCE, .bytes = 4000000, .reduce_Bps = 1e11,
                      .launch_ps = SIM_NS(8400), .step_ps = SIM_NS(3400)};
  sim_time_ps want = SIM_NS(550800);
  assert_int_equal(analytic(t, g, "ring", &a), want);
  run_result r = run(t, g, "ring", &a, COMM_NET_FLOW);
  assert_int_equal(r.time, want);
  g_free(r.recv);
  a.form = COMM_COLL_FORM_STEPS;
  r = run(t, g, "ring", &a, COMM_NET_FLOW);
  assert_int_equal(r.time, want);
  g_free(r.recv);
  /* Binomial tree of 4 with 1e6 bytes: 4 steps each (82 + 3.4) us, 2 reductions of 10 us. */
  a.bytes = 1000000;
  a.form = COMM_COLL_FORM_PIPELINED;
  assert_int_equal(analytic(t, g, "tree", &a), SIM_NS(8400 + 4 * 85400 + 2 * 10000));
  r = run(t, g, "tree", &a, COMM_NET_FLOW);
  assert_int_equal(r.time, SIM_NS(8400 + 4 * 85400 + 2 * 10000));
  g_free(r.recv);
}

/* NCCL's trees on 2 nodes of 4: chains inside the nodes, heads joined across nodes; the second
 * tree mirrored. */
static void test_double_tree_shape(void **state)
{
  fake_topology_spec s = {2, 4, 0, SIM_US(1), 125000000000ULL, SIM_US(5), 12500000000ULL};
  g_autoptr(comm_topology) t = fake_topology_new(&s);
  g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
  coll__tree *t0 = coll__tree_build(g, 0), *t1 = coll__tree_build(g, 1);
  const uint32_t p0[8] = {COLL__NONE, 0, 1, 2, 0, 4, 5, 6};
  const uint32_t p1[8] = {1, 2, 3, 7, 5, 6, 7, COLL__NONE};
  for (int r = 0; r < 8; r++) {
    assert_int_equal(t0->parent[r], p0[r]);
    assert_int_equal(t1->parent[r], p1[r]);
  }
  assert_int_equal(t0->root, 0);
  assert_int_equal(t1->root, 7);
  /* Rank 0: chain 1-2-3 below (3 levels) and node 1's chain 4-5-6-7 (4 levels). */
  assert_int_equal(t0->root_height, 4);
  assert_int_equal(t0->depth[7], 4);
  assert_int_equal(t1->root_height, 4);
  coll__tree_free(t0);
  coll__tree_free(t1);
  /* Without contention and with every pair alike, the pipelined trees take exactly
   * 2H + C - 1 steps of one chunk: here flat ranks, H = 3 (heap of 8), 1 MiB per tree in
   * 4 chunks of 256 KiB: 9 steps of 2 us + 262144 / 12.5e9 s = 22.97152 us. */
  g_autoptr(comm_topology) f = flat(8);
  g_autoptr(comm_coll_group) gf = comm_coll_group_new(f, NULL, 0);
  comm_coll_args a = {.op = COMM_COLL_ALLREDUCE, .bytes = 2 << 20, .chunk_bytes = 256 << 10};
  assert_int_equal(analytic(f, gf, "double-tree", &a), 9 * SIM_PS(22971520));
  run_result r = run(f, gf, "double-tree", &a, COMM_NET_FLOW);
  assert_int_equal(r.time, 9 * SIM_PS(22971520));
  g_free(r.recv);
}

static void test_auto_and_registry(void **state)
{
  fake_topology_spec s = {8, 8, 0, SIM_US(1), 125000000000ULL, SIM_US(5), 12500000000ULL};
  g_autoptr(comm_topology) t = fake_topology_new(&s);
  g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
  const comm_coll_algorithm *au = algo("auto");
  comm_coll_args a = {.op = COMM_COLL_ALLREDUCE, .bytes = 4096};
  /* Off accelerators auto is the candidate with the least closed form, whatever the size. */
  static const char *const cands[] = {"ring", "double-tree", "tree", "recursive-doubling",
                                      "halving-doubling", "hierarchical"};
  static const uint64_t sizes[] = {4096, 256 << 10, 1 << 20, 256 << 20};
  for (gsize k = 0; k < G_N_ELEMENTS(sizes); k++) {
    a.bytes = sizes[k];
    sim_time_ps best = SIM_TIME_MAX;
    for (gsize i = 0; i < G_N_ELEMENTS(cands); i++)
      best = MIN(best, analytic(t, g, cands[i], &a));
    const char *picked = comm_coll_algorithm_name(comm_coll_resolve(au, g, &a));
    assert_int_equal(analytic(t, g, picked, &a), best);
    assert_int_equal(analytic(t, g, "auto", &a), best);
  }
  /* 4 KiB over 64 ranks is latency-bound: 2 x 63 ring steps lose to log2(64) = 6 exchanges. */
  a.bytes = 4096;
  assert_string_not_equal(comm_coll_algorithm_name(comm_coll_resolve(au, g, &a)), "ring");
  a.bytes = 256 << 20;
  uint32_t ranks[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  g_autoptr(comm_coll_group) one = comm_coll_group_new(t, ranks, 8);
  assert_int_equal(comm_coll_group_nodes(one), 1);
  /* Uneven or interleaved layouts are not hierarchical. */
  uint32_t uneven[3] = {0, 1, 8}, back[4] = {0, 8, 1, 9};
  g_autoptr(comm_coll_group) gu = comm_coll_group_new(t, uneven, 3);
  g_autoptr(comm_coll_group) gb = comm_coll_group_new(t, back, 4);
  assert_int_equal(comm_coll_group_nodes(gu), 2);
  assert_int_equal(comm_coll_group_per_node(gu), 0);
  assert_int_equal(comm_coll_group_nodes(gb), 2);
  assert_int_equal(comm_coll_group_per_node(gb), 0);
  g_autoptr(GError) he = NULL;
  sim_time_ps hout;
  assert_false(comm_coll_analytic_time(t, gu, algo("hierarchical"), &a, &hout, &he));
  assert_true(g_error_matches(he, DT_ERROR, DT_ERROR_INPUT));
  /* Unknown names and unsupported operations are input errors. */
  g_autoptr(GError) e = NULL;
  assert_null(comm_coll_algorithm_find("rign", "--algorithm", &e));
  assert_true(g_error_matches(e, DT_ERROR, DT_ERROR_INPUT));
  g_clear_error(&e);
  comm_coll_args bad = {.op = COMM_COLL_ALLGATHER, .bytes = 1024};
  sim_time_ps out;
  assert_false(comm_coll_analytic_time(t, g, algo("tree"), &bad, &out, &e));
  assert_true(g_error_matches(e, DT_ERROR, DT_ERROR_INPUT));
  for (size_t i = 0; i < comm_coll_algorithm_count(); i++)
    assert_true(strlen(comm_coll_algorithm_description(comm_coll_algorithm_at(i))) > 10);
  /* Bus-bandwidth factors (nccl-tests). */
  assert_true(fabs(comm_coll_busbw_factor(COMM_COLL_ALLREDUCE, 8) - 1.75) < 1e-12);
  assert_true(fabs(comm_coll_busbw_factor(COMM_COLL_ALLGATHER, 8) - 0.875) < 1e-12);
  assert_true(fabs(comm_coll_busbw_factor(COMM_COLL_BROADCAST, 8) - 1.0) < 1e-12);
}

/* Route latencies of member pairs are kept with the group: every pair of a 4-node x 4-device
 * group (256 pairs, past the first tables of 64 and 128 slots), members in a shuffled order,
 * asked twice, gives the hand value: 0 to itself, 500 ns inside a node, 2 us across nodes. */
static void test_latency_memo(void **state)
{
  fake_topology_spec s = {4, 4, 0, SIM_NS(500), 100000000000ULL, SIM_US(2), 12500000000ULL};
  g_autoptr(comm_topology) t = fake_topology_new(&s);
  uint32_t ranks[16];
  for (uint32_t i = 0; i < 16; i++)
    ranks[i] = (i * 7 + 3) % 16;   /* 7 is prime to 16: every rank once */
  g_autoptr(comm_coll_group) g = comm_coll_group_new(t, ranks, 16);
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t a = 0; a < 16; a++)
      for (uint32_t k = 0; k < 16; k++) {
        uint32_t b = (a + k * (pass ? 5 : 1)) % 16;   /* another order the second time */
        sim_time_ps want = ranks[a] == ranks[b]         ? 0
                           : ranks[a] / 4 == ranks[b] / 4 ? SIM_NS(500)
                                                          : SIM_US(2);
        if (coll__latency(g, a, b) != want)
          fail_msg("pass %d: latency of members %u -> %u (ranks %u -> %u) is %" G_GINT64_FORMAT
                   " ps, want %" G_GINT64_FORMAT, pass, a, b, ranks[a], ranks[b],
                   coll__latency(g, a, b), want);
      }
  assert_int_equal(g->lat_used, 256);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_closed_forms),       cmocka_unit_test(test_flow_hand),
      cmocka_unit_test(test_flow_vs_analytic),   cmocka_unit_test(test_pipelined_vs_steps),
      cmocka_unit_test(test_bytes_conservation), cmocka_unit_test(test_hierarchical_beats_ring),
      cmocka_unit_test(test_ps_port_bottleneck), cmocka_unit_test(test_ps_sharding),
      cmocka_unit_test(test_ps_servers_share_host), cmocka_unit_test(test_ps_node_workers),
      cmocka_unit_test(test_auto_and_registry),  cmocka_unit_test(test_overheads),
      cmocka_unit_test(test_double_tree_shape),  cmocka_unit_test(test_latency_memo),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
