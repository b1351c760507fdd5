/* Parameter-server iteration times on the test double of the network (tests/coll/fake_net.c,
 * linked ahead of dtsim_comm), so every expected time is a closed form worked out in the
 * comments: the ps strategy's plan, the network adapter's synchronous steps and comm/coll's
 * servers (shards, one aggregation at a time per server, pushes and pulls as transfers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "comm_internal.h"
#include "fake_net.h"
#include "net_adapter.h"
#include "plan.h"
#include "strategy.h"
#include "measure.h"
#include "util.h"

/* The test double has no routes of its own: no collective is computed without flows
 * (comm_internal.h lets comm__lone_new give NULL), so comm/coll/unshared.c links and stays
 * unused. */
comm__lone *comm__lone_new(comm_net *net) { return NULL; }
void comm__lone_free(comm__lone *lone) {}
uint32_t comm__lone_route(comm__lone *lone, comm_ep src, comm_ep dst) { return UINT32_MAX; }
sim_time_ps comm__lone_time(comm__lone *lone, uint32_t route, uint64_t bytes) { return 0; }

/* n identical layers: forward, backward data and backward weights of `ms` each, `param_bytes`
 * of parameters each, batch 8. */
static sim_costs *uniform(guint n, double ms, uint64_t param_bytes)
{
  sim_costs *c = sim_costs_new();
  for (guint i = 0; i < n; i++) {
    char name[16];
    g_snprintf(name, sizeof name, "l%u", i);
    sim_layer_cost l = {.name = name,
                        .forward_ps = sim_time_from_s(ms * 1e-3),
                        .backward_data_ps = sim_time_from_s(ms * 1e-3),
                        .backward_weights_ps = sim_time_from_s(ms * 1e-3),
                        .param_bytes = param_bytes,
                        .params = param_bytes / 4};
    sim_costs_add_layer(c, &l);
  }
  c->batch = 8;
  c->state_bytes_per_param = 12;
  return c;
}

/* Parameter servers on the test network of tests/coll/fake_net.c: `nodes` nodes of `per_node`
 * devices, a pair inside a node 0.5 us + bytes / 100 GB/s, across nodes 2 us + bytes /
 * 12.5 GB/s, no contention. The plan is built for `servers` servers; the adapter is given
 * `adapter_servers` with `placement`, aggregating at `reduce_Bps`. FALSE with sim_exec_run's
 * error when the run fails; *end_ps gets the engine's time at the end either way. */
/* The sharding of the next plans (--ps-sharding); the tests that set it put it back. */
static comm_ps_sharding sharding = COMM_PS_SHARD_BYTES;

static gboolean try_ps_workers(const sim_costs *c, uint32_t nodes, uint32_t per_node,
                               uint32_t extra_nodes, comm_ps_placement placement,
                               uint32_t servers, uint32_t adapter_servers, double reduce_Bps,
                               uint32_t iterations, comm_ps_workers workers, sim_report *r,
                               sim_time_ps *end_ps, GError **error)
{
  fake_topology_spec spec = {nodes, per_node, extra_nodes, SIM_NS(500), 100000000000ULL, SIM_US(2),
                             12500000000ULL};
  g_autoptr(comm_topology) topo = fake_topology_new(&spec);
  sim_plan_opts o = {.devices_per_node = per_node, .overlap = TRUE, .iterations = 1,
                     .micro_batches = 1};
  o.nodes = nodes;
  o.ps_count = servers;
  o.iterations = iterations;
  g_auto(sim_scenario) sc;
  sim_scenario_init(&sc);
  sc.ps_workers = workers;
  sc.ps_sharding = sharding;
  o.scenario = &sc;
  g_autoptr(sim_plan) p = sim_strategy_find("ps")->build(c, &o, error);
  assert_non_null(p);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, topo, COMM_NET_FLOW);
  g_autoptr(sim_net_adapter) a = sim_net_adapter_new(net, p, 1e12);
  /* Node workers sum on a device for free (rate 0), so only the transfers count. */
  sim_net_adapter_set_ps(a, placement, adapter_servers, reduce_Bps,
                         workers == COMM_PS_WORKER_NODE, 0);
  g_autoptr(sim_exec) x = sim_exec_new(e, p->graph);
  sim_exec_set_comm(x, &sim_net_adapter_ops, a);
  gboolean ran = sim_exec_run(x, error);
  *end_ps = sim_engine_now(e);
  if (!ran)
    return FALSE;
  sim_report_measure(r, p, x);
  r->memory_per_device_bytes = p->memory_per_device_bytes;
  return TRUE;
}

static gboolean try_ps(const sim_costs *c, uint32_t nodes, uint32_t per_node,
                       uint32_t extra_nodes, comm_ps_placement placement, uint32_t servers,
                       uint32_t adapter_servers, double reduce_Bps, uint32_t iterations,
                       sim_report *r, sim_time_ps *end_ps, GError **error)
{
  return try_ps_workers(c, nodes, per_node, extra_nodes, placement, servers, adapter_servers,
                        reduce_Bps, iterations, COMM_PS_WORKER_DEVICE, r, end_ps, error);
}

static void run_ps(const sim_costs *c, uint32_t nodes, uint32_t per_node, uint32_t extra_nodes,
                   comm_ps_placement placement, uint32_t servers, double reduce_Bps,
                   uint32_t iterations, sim_report *r)
{
  g_autoptr(GError) err = NULL;
  sim_time_ps end_ps;
  if (!try_ps(c, nodes, per_node, extra_nodes, placement, servers, servers, reduce_Bps,
              iterations, r, &end_ps, &err))
    fail_msg("%s", err->message);
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
  g_autoptr(sim_costs) c = uniform(2, 1.0, 1250000);
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

/* Replicas refreshed inside the step (--ps-workers node): the next forward waits for every
 * pull, not only its layer's. Two nodes of one device, one dedicated server aggregating at
 * 1 GB/s, two layers of 1 ms per pass; layer 0 has no parameters, layer 1 1.25 MB. A worker:
 * F0 [0, 1], F1 [1, 2], l1 dW [2, 3] (push at 3), l1 dX [3, 4], l0 dW [4, 5]. The push crosses
 * in 102 us (3.102), the server aggregates 2 x 1.25e6 B in 2.5 ms (5.602).
 *   - A worker per device pulls straight to the device (102 us, 5.704); the next F1 starts at
 *     6 ms, after it: nothing waits, and the iterations follow each other every 5 ms.
 *   - A worker per node (its one device sums alone, for free) pulls to the node's host
 *     (102 us, 5.704), which copies it to the device (0.5 + 12.5 = 13 us, 5.717); the next F0
 *     waits for it: [5.717, 6.717], and every iteration takes 5.717 ms. */
static void test_ps_replicas_wait_for_every_pull(void **state)
{
  g_autoptr(sim_costs) c = sim_costs_new();
  for (guint i = 0; i < 2; i++) {
    sim_layer_cost l = {.name = i ? "l1" : "l0",
                        .forward_ps = SIM_NS(1000000),
                        .backward_data_ps = SIM_NS(1000000),
                        .backward_weights_ps = SIM_NS(1000000),
                        .param_bytes = i ? 1250000 : 0,
                        .params = i ? 1250000 / 4 : 0};
    sim_costs_add_layer(c, &l);
  }
  c->batch = 8;
  sim_report r;
  sim_time_ps end;
  g_autoptr(GError) err = NULL;
  assert_true(try_ps_workers(c, 2, 1, 1, COMM_PS_DEDICATED, 1, 1, 1e9, 2, COMM_PS_WORKER_DEVICE,
                             &r, &end, &err));
  assert_int_equal(sim_time_from_s(r.iteration_time_s), SIM_NS(5000000));
  assert_true(try_ps_workers(c, 2, 1, 1, COMM_PS_DEDICATED, 1, 1, 1e9, 2, COMM_PS_WORKER_NODE,
                             &r, &end, &err));
  assert_int_equal(sim_time_from_s(r.iteration_time_s), SIM_NS(5717000));
}

/* The network adapter's error comes back from sim_exec_run(): the plan is built for one
 * server, the adapter is given none, and the first push (at the end of layer 1's weight
 * gradients, 3 ms) cannot place its tensor. Nothing is measured. */
static void test_ps_adapter_error(void **state)
{
  g_autoptr(sim_costs) c = uniform(2, 1.0, 1250000);
  g_autoptr(GError) err = NULL;
  sim_report r;
  sim_time_ps end_ps;
  assert_false(try_ps(c, 2, 1, 1, COMM_PS_DEDICATED, 1, 0, 1e10, 1, &r, &end_ps, &err));
  assert_non_null(err);
  assert_true(g_error_matches(err, DT_ERROR, DT_ERROR_INPUT));
  assert_string_equal(err->message, "--ps-count: needs at least one server");
  assert_int_equal(end_ps, SIM_NS(3000000));
}

/* Layers of `bytes[i]` parameter bytes, `second[i]` of them in a second variable (a bias or a
 * batch norm's shift), 1 ms per pass each, batch 8. */
static sim_costs *layers_of(guint n, const uint64_t *bytes, const uint64_t *second)
{
  sim_costs *c = uniform(n, 1.0, 0);
  for (guint i = 0; i < n; i++) {
    sim_layer_cost *l = &g_array_index(c->layers, sim_layer_cost, i);
    l->param_bytes = bytes[i];
    l->second_bytes = second[i];
    l->params = bytes[i] / 4;
  }
  return c;
}

static sim_plan *ps_plan(const sim_costs *c, uint32_t servers, comm_ps_sharding how)
{
  sim_plan_opts o = {.nodes = 1, .devices_per_node = 2, .iterations = 1, .micro_batches = 1,
                     .ps_count = servers};
  g_auto(sim_scenario) sc;
  sim_scenario_init(&sc);
  sc.ps_sharding = how;
  o.scenario = &sc;
  g_autoptr(GError) err = NULL;
  sim_plan *p = sim_strategy_find("ps")->build(c, &o, &err);
  if (!p)
    fail_msg("%s", err->message);
  return p;
}

/* Per-server bytes of a plan's tensors. */
static void server_bytes(const sim_plan *p, uint32_t servers, uint64_t *out)
{
  assert_int_equal(p->ps_shard_of->len, p->ps_tensor_bytes->len);
  memset(out, 0, servers * sizeof *out);
  for (guint t = 0; t < p->ps_tensor_bytes->len; t++) {
    uint32_t k = g_array_index(p->ps_shard_of, uint32_t, t);
    assert_true(k < servers);
    out[k] += g_array_index(p->ps_tensor_bytes, uint64_t, t);
  }
}

/* Three layers: 800 B (600 B weight, 200 B bias), 1000 B (one variable), 600 B (two vectors of
 * 300 B, a batch norm), 2400 B in all, on 3 servers.
 *
 * round-robin: tensors in creation order 600, 200, 1000, 300, 300, dealt after global_step
 *   (which takes server 0): tensor i on server (i + 1) mod 3: 600 -> 1, 200 -> 2, 1000 -> 0,
 *   300 -> 1, 300 -> 2. Servers hold 1000, 900 and 500 B; the busiest 1000 / 800 = 1.25x.
 * bytes: a tensor per layer, 800, 1000, 600; largest first onto the least loaded: 1000 -> 0,
 *   800 -> 1, 600 -> 2: 1000, 800 and 600 B, the busiest 1.25x as well.
 * A fourth layer of 1000 B in one variable (3400 B): round-robin deals it as tensor 5 to
 *   server 0: 2000, 900, 500 B, busiest 2000 / (3400 / 3) = 1.7647x; bytes sorts the layers
 *   again, 1000 (layer 1), 1000 (layer 3), 800, 600: 1000 -> 0, 1000 -> 1, 800 -> 2, 600 onto
 *   the least loaded, server 2: 1000, 1000, 1400 B, busiest 1400 / (3400 / 3) = 1.2353x. */
static void test_ps_sharding_by_hand(void **state)
{
  const uint64_t bytes[] = {800, 1000, 600, 1000}, second[] = {200, 0, 300, 0};
  uint64_t got[3];
  {
    g_autoptr(sim_costs) c = layers_of(3, bytes, second);
    g_autoptr(sim_plan) rr = ps_plan(c, 3, COMM_PS_SHARD_ROUND_ROBIN);
    assert_int_equal(rr->ps_tensor_bytes->len, 5);
    server_bytes(rr, 3, got);
    assert_int_equal(got[0], 1000);
    assert_int_equal(got[1], 900);
    assert_int_equal(got[2], 500);
    assert_float_equal(*(const double *)rr->extra, 1.25, 1e-12);
    /* A tensor per variable, each pushed by each device: 5 tensors x 2 devices. */
    assert_int_equal(rr->ps_tasks->len, 10);
    g_autoptr(sim_plan) by = ps_plan(c, 3, COMM_PS_SHARD_BYTES);
    assert_int_equal(by->ps_tensor_bytes->len, 3);
    server_bytes(by, 3, got);
    assert_int_equal(got[0], 1000);
    assert_int_equal(got[1], 800);
    assert_int_equal(got[2], 600);
  }
  g_autoptr(sim_costs) c = layers_of(4, bytes, second);
  g_autoptr(sim_plan) rr = ps_plan(c, 3, COMM_PS_SHARD_ROUND_ROBIN);
  server_bytes(rr, 3, got);
  assert_int_equal(got[0], 2000);
  assert_int_equal(got[1], 900);
  assert_int_equal(got[2], 500);
  assert_float_equal(*(const double *)rr->extra, 2000.0 * 3 / 3400, 1e-12);
  g_autoptr(sim_plan) by = ps_plan(c, 3, COMM_PS_SHARD_BYTES);
  server_bytes(by, 3, got);
  assert_int_equal(got[0], 1000);
  assert_int_equal(got[1], 1000);
  assert_int_equal(got[2], 1400);
  assert_float_equal(*(const double *)by->extra, 1400.0 * 3 / 3400, 1e-12);
}

/* The busiest server does its tensors' work. Two workers on two nodes, two dedicated servers
 * on two extra nodes aggregating at 1 GB/s; three layers of 1.25, 1.25 and 2.5 MB, one
 * variable each, 1 ms per pass. A worker: F0-F2 [0, 3], l2 dW [3, 4] (push of tensor 2 at 4),
 * l2 dX [4, 5], l1 dW [5, 6] (push at 6), l1 dX [6, 7], l0 dW [7, 8] (push at 8). Across nodes
 * 2 us + bytes / 12.5 GB/s: 102 us for 1.25 MB, 202 us for 2.5 MB. Aggregation of 2 copies:
 * 2.5 ms for 1.25 MB, 5 ms for 2.5 MB.
 *
 * bytes: 2.5 MB -> server 0, then the 1.25 MB tensors (lower index first) both on server 1.
 *   t2 [4.202, 9.202] on 0, pulled by 9.404; t1 [6.102, 8.602] on 1, pulled by 8.704; t0
 *   arrives 8.102, waits for server 1 until 8.602: [8.602, 11.102], pulled by 11.204 ms.
 * round-robin: t0 -> 1, t1 -> 0, t2 -> 1: server 1 holds 3.75 MB of 5 (1.5x the mean).
 *   t2 [4.202, 9.202] on 1, pulled by 9.404; t1 [6.102, 8.602] on 0, pulled by 8.704; t0
 *   arrives 8.102, waits for server 1 until 9.202: [9.202, 11.702], pulled by 11.804 ms. */
static void test_ps_busiest_server_time(void **state)
{
  const uint64_t bytes[] = {1250000, 1250000, 2500000}, second[] = {0, 0, 0};
  g_autoptr(sim_costs) c = layers_of(3, bytes, second);
  sim_report r;
  run_ps(c, 2, 1, 2, COMM_PS_DEDICATED, 2, 1e9, 1, &r);
  assert_int_equal(sim_time_from_s(r.iteration_time_s), SIM_NS(11204000));
  sharding = COMM_PS_SHARD_ROUND_ROBIN;
  run_ps(c, 2, 1, 2, COMM_PS_DEDICATED, 2, 1e9, 1, &r);
  sharding = COMM_PS_SHARD_BYTES;
  assert_int_equal(sim_time_from_s(r.iteration_time_s), SIM_NS(11804000));
}

int main(void)
{
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_ps_closed_form),
                                     cmocka_unit_test(test_ps_adapter_error),
                                     cmocka_unit_test(test_ps_replicas_wait_for_every_pull),
                                     cmocka_unit_test(test_ps_sharding_by_hand),
                                     cmocka_unit_test(test_ps_busiest_server_time)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
