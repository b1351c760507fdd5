/* Folding: runs that compute less must give the same times, to the picosecond, as the runs
 * they stand for.
 * - Symmetric data parallelism builds one device for all (sim/strategies/strategy_dp.c); on the flow
 *   network its iterations must equal those of the run that builds every device.
 * - Its collectives are timed once per (algorithm, group, operation, size) and reused
 *   (sim/net_adapter.c): over several iterations the reused times must equal those of the
 *   unfolded run, where every collective runs as flows. "nccl" (and "auto" on GPUs), whose
 *   channels share links, is timed by its closed form: within the 0.5% that closed form keeps
 *   to the flow model (test_closed_vs_flow, tests/coll), every other algorithm to the
 *   picosecond.
 * - A collective whose transfers never share a link is computed without flows
 *   (comm/coll/unshared.h); its duration and flow count must equal those of the executor
 *   running it as flows on the flow network, and a collective whose transfers do share links
 *   must be refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "simulate.h"
#include "unshared.h"
#include "util.h"

/* ---- Symmetric data parallelism ------------------------------------------------------------- */

typedef struct {
  const char *system, *topology, *allreduce;
  int nodes;
  gboolean overlap;
  int iterations;
} dp_case;

static void simulate(const dp_case *c, gboolean symmetry, sim_report *r)
{
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  assert_true(sim_scenario_set(&s, "system", c->system, NULL, NULL));
  assert_true(sim_scenario_set(&s, "topology", c->topology, NULL, NULL));
  assert_true(sim_scenario_set(&s, "allreduce", c->allreduce, NULL, NULL));
  assert_true(sim_scenario_set(&s, "net-model", "flow", NULL, NULL));
  s.nodes = c->nodes;
  s.overlap = c->overlap;
  s.iterations = c->iterations;
  s.symmetry = symmetry;
  sim_run_opts o = {0};
  g_autoptr(GError) e = NULL;
  if (!sim_simulate(&s, &o, r, &e))
    fail_msg("%s", e->message);
}

static void test_dp_folded_equals_unfolded(void **state)
{
  /* Rings (computed without flows once folded), and algorithms whose transfers share links
   * (run as flows over all ranks once folded). */
  const dp_case cases[] = {
      {"dgx1-v100", "fat-tree", "ring", 4, TRUE, 2},
      {"dgx1-v100", "fat-tree", "ring", 3, FALSE, 1},
      {"dgx-a100", "switch", "ring", 2, TRUE, 2},
      {"dgx1-v100", "torus2d", "ring", 4, TRUE, 1},
      {"dgx1-v100", "fat-tree", "halving-doubling", 4, TRUE, 1},
      {"dgx1-v100", "dragonfly", "double-tree", 2, TRUE, 1},
      {"dgx-h100", "fat-tree", "hierarchical", 2, FALSE, 2},
      {"dgx-a100", "fat-tree", "nccl", 2, TRUE, 1},
      /* NCCL's channels on shared links (trees and rings of 12 channels over 4 or 8 NICs
       * per node), run over several iterations so that later collectives reuse the times of
       * the first ones. */
      {"dgx1-v100", "fat-tree", "nccl", 2, TRUE, 3},
      {"dgx1-v100", "fat-tree", "nccl", 4, FALSE, 2},
      {"dgx1-v100", "fat-tree", "auto", 8, TRUE, 2},
      {"dgx-a100", "fat-tree", "nccl", 4, TRUE, 2},
      {"dgx-a100", "switch", "nccl", 3, FALSE, 2},
      {"dgx1-v100", "torus2d", "double-tree", 4, TRUE, 2},
  };
  for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
    sim_report folded, full;
    simulate(&cases[i], TRUE, &folded);
    simulate(&cases[i], FALSE, &full);
    assert_int_equal(folded.devices, full.devices);
    assert_true(folded.compute_time_s == full.compute_time_s);
    if (strcmp(cases[i].allreduce, "nccl") == 0 || strcmp(cases[i].allreduce, "auto") == 0) {
      assert_true(fabs(folded.iteration_time_s / full.iteration_time_s - 1) <= 0.005);
      assert_true(fabs(folded.comm_time_s / full.comm_time_s - 1) <= 0.005);
      /* Exposed time is what the iteration adds to compute: bound it by the iteration's. */
      assert_true(fabs(folded.exposed_comm_time_s - full.exposed_comm_time_s) <=
                  0.005 * full.iteration_time_s);
    } else {
      assert_true(folded.iteration_time_s == full.iteration_time_s);
      assert_true(folded.comm_time_s == full.comm_time_s);
      assert_true(folded.exposed_comm_time_s == full.exposed_comm_time_s);
    }
    /* Folding did fold: fewer events than one per device and task. */
    assert_true(folded.events < full.events);
  }
}

/* Reuse did happen: with the double tree on a torus (its transfers share links, so the first
 * collective of each size runs as flows), the iterations after the first cost one event per
 * task of device 0 (ResNet-50 has 161 layers: under 4 events per layer and iteration), not the
 * thousands of flow events of the first. The nccl allreduce runs no flows at all: every
 * iteration costs that little. */
static void test_dp_folded_reuses(void **state)
{
  dp_case c = {"dgx1-v100", "torus2d", "double-tree", 4, TRUE, 1};
  sim_report one, three;
  simulate(&c, TRUE, &one);
  c.iterations = 3;
  simulate(&c, TRUE, &three);
  assert_true(one.events > 5000);
  assert_true(three.events - one.events < 2 * 4 * 161);
  dp_case n = {"dgx1-v100", "fat-tree", "nccl", 4, TRUE, 3};
  simulate(&n, TRUE, &three);
  assert_true(three.events < 3 * 4 * 161);
}

/* ---- Collectives without flows ------------------------------------------------------------- */

static comm_topology *build(const char *system, uint32_t nodes, uint32_t per_node,
                            const char *topology)
{
  comm_cluster_spec spec = {.system = system, .nodes = nodes, .devices_per_node = per_node,
                            .topology = topology};
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

/* The executor on the flow network: duration and flows. */
static sim_time_ps run_flows(const comm_topology *t, const comm_coll_group *g,
                             const comm_coll_algorithm *a, const comm_coll_args *args,
                             uint64_t *flows)
{
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  /* Start later than 0, so that absolute and relative times differ. */
  sim_engine_run_until(e, SIM_US(3));
  g_autoptr(GError) err = NULL;
  g_autoptr(comm_coll) c = comm_coll_new(net, g, a, args, &err);
  assert_non_null(c);
  int done = 0;
  comm_coll_start(c, on_done, &done);
  sim_engine_run(e);
  assert_int_equal(done, 1);
  *flows = comm_coll_flows(c);
  return comm_coll_end_time(c) - comm_coll_start_time(c);
}

static comm_coll_unshared_result unshared(const comm_topology *t, const comm_coll_group *g,
                                          const comm_coll_algorithm *a,
                                          const comm_coll_args *args, sim_time_ps *d,
                                          uint64_t *flows)
{
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  g_autoptr(GError) err = NULL;
  comm_coll_unshared_result r = comm_coll_unshared_time(net, g, a, args, d, flows, &err);
  assert_true(r != COMM_COLL_UNSHARED_ERROR);
  return r;
}

static void test_unshared_equals_flows(void **state)
{
  const struct {
    const char *system, *topology;
    uint32_t nodes, per_node;
  } clusters[] = {
      {"dgx1-v100", "fat-tree", 4, 0}, {"dgx1-v100", "torus2d", 6, 0},
      {"dgx-a100", "switch", 3, 0},    {"dgx1-v100", "dragonfly", 5, 2},
      {"dgx1-v100", "ring", 3, 1},
  };
  const char *algorithms[] = {"ring", "tree", "double-tree", "recursive-doubling",
                              "halving-doubling", "hierarchical", "onetoall", "auto", "nccl"};
  /* Fewer bytes than ranks (empty segments), small messages, large ones. */
  const uint64_t sizes[] = {5, 3000, 1 << 20, 100000007};
  int computed = 0, refused = 0;
  for (size_t k = 0; k < G_N_ELEMENTS(clusters); k++) {
    g_autoptr(comm_topology) t = build(clusters[k].system, clusters[k].nodes,
                                       clusters[k].per_node, clusters[k].topology);
    g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
    for (size_t i = 0; i < G_N_ELEMENTS(algorithms); i++) {
      const comm_coll_algorithm *a = algo(algorithms[i]);
      for (size_t j = 0; j < G_N_ELEMENTS(sizes); j++) {
        for (int form = 0; form < 2; form++) {
          comm_coll_args args = {.op = COMM_COLL_ALLREDUCE, .bytes = sizes[j],
                                 .reduce_Bps = 300e9,
                                 .form = form ? COMM_COLL_FORM_STEPS : COMM_COLL_FORM_PIPELINED,
                                 .launch_ps = form ? SIM_US(5) : 0,
                                 .step_ps = form ? SIM_NS(700) : 0};
          g_autoptr(GError) err = NULL;
          g_autoptr(comm_coll) probe = NULL;
          {
            g_autoptr(sim_engine) e = sim_engine_new();
            g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
            probe = comm_coll_new(net, g, a, &args, &err);
          }
          if (!probe)
            continue;   /* the algorithm does not run on this group */
          sim_time_ps d_fast = 0;
          uint64_t f_fast = 0, f_flow = 0;
          comm_coll_unshared_result r = unshared(t, g, a, &args, &d_fast, &f_fast);
          if (r == COMM_COLL_UNSHARED_SHARED) {
            refused++;
            continue;
          }
          sim_time_ps d_flow = run_flows(t, g, a, &args, &f_flow);
          if (d_fast != d_flow || f_fast != f_flow)
            fail_msg("%s %s x%u, %s, %" G_GUINT64_FORMAT " bytes, form %d: %" G_GINT64_FORMAT
                     " ps (%" G_GUINT64_FORMAT " flows) without flows, %" G_GINT64_FORMAT
                     " ps (%" G_GUINT64_FORMAT " flows) with", clusters[k].system,
                     clusters[k].topology, clusters[k].nodes, algorithms[i], sizes[j], form,
                     d_fast, f_fast, d_flow, f_flow);
          computed++;
        }
      }
    }
  }
  /* Both outcomes happened: rings were computed, and some algorithm shared links. */
  assert_true(computed >= 40);
  assert_true(refused > 0);
}

/* Two ranks on two nodes, one device each: a ring allreduce by steps is one reduce-scatter
 * step (each rank sends half the buffer and reduces the half it received) and one allgather
 * step, each a lone transfer of b/2 across the network: 2 p2p(b/2) + reduce(b/2). */
static void test_unshared_two_ranks(void **state)
{
  g_autoptr(comm_topology) t = build("dgx1-v100", 2, 1, "switch");
  g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
  const uint64_t b = 64 << 20;
  comm_coll_args args = {.op = COMM_COLL_ALLREDUCE, .bytes = b, .reduce_Bps = 250e9,
                         .form = COMM_COLL_FORM_STEPS};
  sim_time_ps d = 0;
  uint64_t flows = 0;
  assert_int_equal(unshared(t, g, algo("ring"), &args, &d, &flows), COMM_COLL_UNSHARED_DONE);
  sim_time_ps p2p = comm_topology_p2p_time(t, comm_topology_device(t, 0),
                                           comm_topology_device(t, 1), b / 2);
  /* 32 MiB at 250 GB/s: 134217.728 us, rounded up to the picosecond. */
  sim_time_ps reduce = (sim_time_ps)ceil((double)(b / 2) * 1e12 / 250e9);
  assert_int_equal(d, 2 * p2p + reduce);
  assert_int_equal(flows, 4);
}

/* Refusals: a gather to one root shares the root's links; the analytic network and a network
 * with a flow in flight are not the idle flow network the shortcut needs. */
static void test_unshared_refusals(void **state)
{
  g_autoptr(comm_topology) t = build("dgx1-v100", 4, 0, "fat-tree");
  g_autoptr(comm_coll_group) g = comm_coll_group_new(t, NULL, 0);
  comm_coll_args args = {.op = COMM_COLL_ALLREDUCE, .bytes = 1 << 20};
  sim_time_ps d;
  uint64_t flows;
  assert_int_equal(unshared(t, g, algo("onetoall"), &args, &d, &flows),
                   COMM_COLL_UNSHARED_SHARED);
  g_autoptr(GError) err = NULL;
  {
    g_autoptr(sim_engine) e = sim_engine_new();
    g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_ANALYTIC);
    assert_int_equal(comm_coll_unshared_time(net, g, algo("ring"), &args, &d, &flows, &err),
                     COMM_COLL_UNSHARED_SHARED);
  }
  {
    g_autoptr(sim_engine) e = sim_engine_new();
    g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
    comm_net_send(net, comm_topology_device(t, 0), comm_topology_device(t, 9), 1000, NULL, NULL);
    assert_int_equal(comm_coll_unshared_time(net, g, algo("ring"), &args, &d, &flows, &err),
                     COMM_COLL_UNSHARED_SHARED);
    sim_engine_run(e);
    /* Once the network is idle again the same ring is computed. */
    assert_int_equal(comm_coll_unshared_time(net, g, algo("ring"), &args, &d, &flows, &err),
                     COMM_COLL_UNSHARED_DONE);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dp_folded_equals_unfolded),
      cmocka_unit_test(test_dp_folded_reuses),
      cmocka_unit_test(test_unshared_equals_flows),
      cmocka_unit_test(test_unshared_two_ranks),
      cmocka_unit_test(test_unshared_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
