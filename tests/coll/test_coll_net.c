/* Tests of comm/coll on the real topology and network models of comm/: flow against analytic on
 * uncontended clusters of 2 to 1024 ranks, hierarchical against flat ring on 8 NVSwitch nodes
 * with 100 Gb/s between them, and a parameter server's NIC bottleneck, each against times
 * worked out by hand from the catalog numbers quoted in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>

#include "coll.h"
#include "util.h"

static comm_topology *build(const char *system, uint32_t nodes, const char *inter,
                            const char *topology, uint32_t extra)
{
  comm_cluster_spec spec = {.system = system, .nodes = nodes, .inter = inter,
                            .topology = topology, .extra_nodes = extra};
  g_autoptr(GError) e = NULL;
  comm_topology *t = comm_topology_build(&spec, &e);
  if (t == NULL)
    fail_msg("%s", e->message);
  return t;
}

static const comm_coll_algorithm *algo(const char *name)
{
  const comm_coll_algorithm *a = comm_coll_algorithm_find(name, "test", NULL);
  assert_non_null(a);
  return a;
}

static void on_done(sim_engine *engine, void *user)
{
  (*(int *)user)++;
}

static sim_time_ps run(const comm_topology *t, const comm_coll_group *g, const char *name,
                       const comm_coll_args *args, comm_net_model model)
{
  g_autoptr(sim_engine) engine = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(engine, t, model);
  g_autoptr(comm_coll) c = comm_coll_new(net, g, algo(name), args, NULL);
  assert_non_null(c);
  int done = 0;
  comm_coll_start(c, on_done, &done);
  uint64_t events = sim_engine_run(engine);
  assert_int_equal(done, 1);
  if (model == COMM_NET_ANALYTIC)
    assert_int_equal(events, 1);
  return comm_coll_end_time(c) - comm_coll_start_time(c);
}

static void assert_close(double got, double want, double tol, const char *what)
{
  double err = fabs(got - want) / want;
  if (err > tol)
    fail_msg("%s: got %.6g, want %.6g (error %.4f%%)", what, got, want, 100 * err);
}

/* One V100 per node (p3.2xlarge), one switch: in every step of these algorithms each NIC sends
 * at most one flow and receives at most one, so nothing is contended and the flow model must
 * give the closed form. */
static void test_flow_vs_analytic(void **state)
{
  static const uint32_t sizes[] = {2, 3, 4, 5, 7, 8, 16, 33, 64, 100, 128, 256, 512, 1024};
  static const char *const names[] = {"ring", "tree", "recursive-doubling", "halving-doubling"};
  for (gsize i = 0; i < G_N_ELEMENTS(sizes); i++) {
    g_autoptr(comm_topology) t = build("p3.2xlarge", sizes[i], NULL, "switch", 0);
    g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
    for (gsize k = 0; k < G_N_ELEMENTS(names); k++) {
      comm_coll_args a = {.op = COMM_COLL_ALLREDUCE, .bytes = (8 << 20) + 12345,
                          .reduce_Bps = 3e11};
      sim_time_ps want = 0;
      assert_true(comm_coll_analytic_time(t, g, algo(names[k]), &a, &want, NULL));
      g_autofree char *what = g_strdup_printf("%s on %u ranks", names[k], sizes[i]);
      assert_close((double)run(t, g, names[k], &a, COMM_NET_FLOW), (double)want, 0.005, what);
      assert_close((double)run(t, g, names[k], &a, COMM_NET_ANALYTIC), (double)want, 1e-12, what);
    }
  }
}

/* 8 DGX A100 nodes (NVSwitch inside), 100 GbE RoCE between them through one switch, 64 MiB
 * allreduce without reduction cost.
 * Inside a node: GPU - NVSwitch - GPU, 2 hops of 350 ns, 12 links x 25 GB/s x 0.8 = 240 GB/s.
 * Between nodes: GPU - PCIe switch - NIC - switch - NIC - PCIe switch - GPU: 4 PCIe 4.0 hops of
 * 150 ns (25.2 GB/s) and 2 Ethernet hops of 800 ns at 12.5 x 0.93 = 11.625 GB/s:
 * alpha = 2.2 us, bottleneck 11.625 GB/s; every GPU has its own NIC.
 * Flat ring over 64 ranks: 126 steps of 2.2 us + 1 MiB / 11.625 GB/s (90.200086 us) =
 * 11642.411 us (the node-crossing hop is the slowest of every step).
 * Hierarchical: intra reduce-scatter 7 x (0.7 + 8 MiB / 240 GB/s = 35.652533 us) = 249.56773 us,
 * inter ring on 8 MiB over 8 nodes: 14 x 92.400086 us = 1293.6012 us (the 8 rings use 8
 * different NICs), intra allgather 249.56773 us: 1792.7367 us. */
static void test_hierarchical_beats_ring(void **state)
{
  g_autoptr(comm_topology) t = build("dgx-a100", 8, "100gbe-roce", "switch", 0);
  g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
  comm_coll_args a = {.op = COMM_COLL_ALLREDUCE, .bytes = 64 << 20};
  double ring_us = 11642.411, hier_us = 1792.7367;
  assert_close(sim_time_to_us(run(t, g, "ring", &a, COMM_NET_FLOW)), ring_us, 0.005, "ring flow");
  assert_close(sim_time_to_us(run(t, g, "ring", &a, COMM_NET_ANALYTIC)), ring_us, 0.005,
               "ring analytic");
  assert_close(sim_time_to_us(run(t, g, "hierarchical", &a, COMM_NET_FLOW)), hier_us, 0.005,
               "hierarchical flow");
  assert_close(sim_time_to_us(run(t, g, "hierarchical", &a, COMM_NET_ANALYTIC)), hier_us, 0.005,
               "hierarchical analytic");
}

/* A parameter server on a dedicated extra p3.2xlarge node, 8 workers, one 10 MB tensor.
 * Route worker GPU - socket - NIC - switch - NIC - socket(server): 3 PCIe hops of 150 ns and
 * 2 Ethernet hops of 10 us: alpha = 20.45 us; the server's NIC (10 GbE: 1.25 GB/s x 0.94 =
 * 1.175 GB/s) is shared by the 8 pushes: latency + W x bytes / bandwidth =
 * 20.45 us + 8e7 / 1.175e9 s = 68105.556 us; the pulls leave through the same NIC, so the step
 * takes twice that: 136211.11 us. */
static int pulls;
static void on_pulled(sim_engine *e, uint32_t w, uint32_t t, void *user)
{
  pulls++;
}

static void test_ps_nic_bottleneck(void **state)
{
  g_autoptr(comm_topology) t = build("p3.2xlarge", 8, NULL, "switch", 1);
  g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
  /* The flows share the server's NIC; the analytic model reserves it push after push and pull
   * after pull (docs/network.md, "Analytic bounds"), so its step ends at the same time. */
  for (int model = 0; model < 2; model++) {
    g_autoptr(sim_engine) engine = sim_engine_new();
    g_autoptr(comm_net) net =
        comm_net_new(engine, t, model == 0 ? COMM_NET_FLOW : COMM_NET_ANALYTIC);
    const uint64_t bytes[1] = {10000000};
    comm_ps_config cfg = {COMM_PS_DEDICATED, 1, bytes, 1, 0, FALSE, 0, NULL};
    g_autoptr(GError) e = NULL;
    g_autoptr(comm_ps) ps = comm_ps_new(net, g, &cfg, &e);
    assert_non_null(ps);
    int done = 0;
    pulls = 0;
    comm_ps_step_begin(ps, on_pulled, on_done, &done);
    comm_ps_push_all(ps);
    sim_engine_run(engine);
    assert_int_equal(done, 1);
    assert_int_equal(pulls, 8);
    assert_close(sim_time_to_us(sim_engine_now(engine)), 136211.11, 0.005,
                 model == 0 ? "ps step, flows" : "ps step, analytic");
  }
}

/* The busiest server's NIC carries its share. Two dedicated p3.2xlarge servers, 8 workers,
 * tensors of 10, 10 and 20 MB, no aggregation cost; every NIC 1.175 GB/s as above.
 * Dealt in turn after global_step (comm_ps_deal_tensors, first 1): tensor i on server
 * (i + 1) mod 2: 1, 0, 1; server 1 holds 30 of 40 MB. Its NIC takes 8 x 30 MB of pushes:
 * 204.255 ms, tensor 0's pushes ending first (136.17 ms, 16 flows sharing the NIC, then the
 * 8 of tensor 2 alone), then its NIC sends tensor 0's pulls (80 MB) and then tensor 2's
 * (160 MB): 400 MB in all through it, 340.43 ms plus a few alphas of 20.45 us.
 * By bytes (comm_ps_place_tensors): 20 MB on server 0, both 10 MB tensors on server 1: each NIC
 * 160 MB in and 160 MB out, 272.34 ms. */
static void test_ps_busiest_nic(void **state)
{
  g_autoptr(comm_topology) t = build("p3.2xlarge", 8, NULL, "switch", 2);
  g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
  const uint64_t bytes[3] = {10000000, 10000000, 20000000};
  uint32_t dealt[3];
  comm_ps_deal_tensors(3, 2, 1, dealt);
  assert_int_equal(dealt[0], 1);
  assert_int_equal(dealt[1], 0);
  assert_int_equal(dealt[2], 1);
  assert_close(comm_ps_busiest_share(bytes, 3, 2, dealt), 1.5, 1e-12, "share dealt");
  for (int placed = 0; placed < 2; placed++) {
    g_autoptr(sim_engine) engine = sim_engine_new();
    g_autoptr(comm_net) net = comm_net_new(engine, t, COMM_NET_FLOW);
    comm_ps_config cfg = {COMM_PS_DEDICATED, 2, bytes, 3, 0, FALSE, 0,
                          placed ? dealt : NULL};
    g_autoptr(GError) e = NULL;
    g_autoptr(comm_ps) ps = comm_ps_new(net, g, &cfg, &e);
    assert_non_null(ps);
    assert_int_equal(comm_ps_shard_bytes(ps, 1), placed ? 30000000 : 20000000);
    int done = 0;
    pulls = 0;
    comm_ps_step_begin(ps, on_pulled, on_done, &done);
    comm_ps_push_all(ps);
    sim_engine_run(engine);
    assert_int_equal(done, 1);
    assert_int_equal(pulls, 24);
    assert_close(sim_time_to_us(sim_engine_now(engine)), placed ? 340425.5 : 272340.4, 0.005,
                 placed ? "dealt in turn" : "by bytes");
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flow_vs_analytic),
      cmocka_unit_test(test_hierarchical_beats_ring),
      cmocka_unit_test(test_ps_nic_bottleneck),
      cmocka_unit_test(test_ps_busiest_nic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
