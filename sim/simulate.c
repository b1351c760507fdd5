/* The simulation pipeline shared by the commands (see simulate.h). */
#include "simulate.h"
#include "measure.h"

#include "chakra.h"
#include "chakra_out.h"
#include "chrome.h"
#include "timeline.h"
#include "faults.h"
#include "linkviews.h"
#include "net_adapter.h"
#include "strategy.h"
#include "trainrun_keys.h"
#include "util.h"

#include <string.h>

/* Aggregation rate of a parameter server on a host CPU, bytes of gradient per second. Servers
 * update many variables at once on all cores (TensorFlow runs independent ops in parallel), so
 * the bound is memory bandwidth: one socket of a 2016-2017 two-socket server has four channels
 * of DDR4-2133/2400 (68-77 GB/s, Intel Xeon E5 v4 datasheet), and a sum reads two operands and
 * writes one: about 22 GB/s of gradient. An estimate from the datasheet, not a measurement. */
#define SIM_HOST_REDUCE_BPS 22e9

/* ---- Keys ---------------------------------------------------------------------------------- */

static const sim_key cluster_keys[] = {
    {"system", SIM_KEY_STRING, SIM_KEY_OFF(system), "dgx1-v100", .commands = SIM_OPTS_CLUSTER,
     .arg = "NAME|FILE", .help = "node preset: devices, intra-node fabric, NICs, host CPUs"},
    {"device", SIM_KEY_STRING, SIM_KEY_OFF(device),
     .commands = SIM_OPTS_CLUSTER | SIM_OPTS_CALIBRATE,
     .arg = "NAME|FILE", .help = "device kind, overriding the preset's"},
    {"nodes", SIM_KEY_INT, SIM_KEY_OFF(nodes), "1", 1, SIM_MAX_DEVICES,
     .commands = SIM_OPTS_CLUSTER, .arg = "N", .help = "nodes"},
    {"devices-per-node", SIM_KEY_INT, SIM_KEY_OFF(devices_per_node), NULL, 1, 4096,
     .commands = SIM_OPTS_CLUSTER, .arg = "G", .help = "devices per node (default: the preset's)"},
    {"intra", SIM_KEY_STRING, SIM_KEY_OFF(intra), .commands = SIM_OPTS_CLUSTER,
     .arg = "NAME|FILE", .help = "intra-node fabric (default: the preset's)"},
    {"inter", SIM_KEY_STRING, SIM_KEY_OFF(inter), .commands = SIM_OPTS_CLUSTER,
     .arg = "NAME|FILE", .help = "inter-node network (default: the preset's)"},
    {"topology", SIM_KEY_STRING, SIM_KEY_OFF(topology), .commands = SIM_OPTS_CLUSTER,
     .arg = "NAME",
     .help = "switch, fat-tree[:OVERSUB], rail[:OVERSUB], ring, torus2d, torus3d, dragonfly"},
    {"net-model", SIM_KEY_CHOICE, SIM_KEY_OFF(net_model), "flow", .choices = "flow|analytic",
     .commands = SIM_OPTS_CLUSTER,
     .help = "network fidelity (DTSIM_NET_PLAIN=1 in the environment: flow without its "
             "speed-ups)"},
};
const sim_key_group sim_keys_cluster = SIM_KEY_GROUP("cluster", 0, cluster_keys);

static const sim_key run_keys[] = {
    {"strategy", SIM_KEY_REF, SIM_KEY_OFF(strategy), "dp", .resolve = sim_strategy_resolve,
     .commands = SIM_OPTS_RUN, .arg = "S", .help = "dp, ps, mp, pp, hybrid, 3d or chaos"},
    {"iterations", SIM_KEY_INT, SIM_KEY_OFF(iterations), "2", 1, 100000,
     .commands = SIM_OPTS_RUN, .arg = "N",
     .help = "iterations to simulate; the last one is reported (the steady state: the ones "
             "before it fill the pipeline and start the gathers and transfers that overlap "
             "the next), 1 for a cold first iteration"},
    {"strict", SIM_KEY_FLAG, SIM_KEY_OFF(strict), .commands = SIM_OPTS_RUN,
     .help = "a configuration that does not fit in device memory is an error"},
    {"max-memory", SIM_KEY_SIZE, SIM_KEY_OFF(max_memory), NULL, 1 << 20, INT64_MAX,
     .commands = SIM_OPTS_RUN, .arg = "SIZE",
     .help = "memory the simulation may take; larger task graphs and searches are refused "
             "before they are built (default: half the physical memory)"},
};
const sim_key_group sim_keys_run = SIM_KEY_GROUP("run", 0, run_keys);

static const sim_key output_keys[] = {
    {"json", SIM_KEY_FLAG, SIM_KEY_OFF(json),
     .commands = SIM_OPTS_CLUSTER | SIM_OPTS_DESCRIBE | SIM_OPTS_CALIBRATE,
     .help = "print JSON instead of a table"},
    {"trace", SIM_KEY_STRING, SIM_KEY_OFF(trace), .commands = SIM_OPTS_RUN | SIM_OPTS_COLLECTIVE,
     .arg = "FILE", .help = "write a Chrome trace"},
    {"csv", SIM_KEY_STRING, SIM_KEY_OFF(csv), .commands = SIM_OPTS_CLUSTER, .arg = "FILE",
     .help = "run: one row per task; sweep and search: one row per point"},
    {"trace-limit", SIM_KEY_INT, SIM_KEY_OFF(trace_limit), "1000000", 1, INT64_C(1) << 40,
     .commands = SIM_OPTS_RUN, .arg = "N",
     .help = "most events written to the trace (about 150 bytes each)"},
    {"trace-devices", SIM_KEY_INT, SIM_KEY_OFF(trace_procs), "64", 1, 1000000,
     .commands = SIM_OPTS_RUN, .arg = "N",
     .help = "trace only the first N devices (and N of each other process kind)"},
};
const sim_key_group sim_keys_output = SIM_KEY_GROUP("output", 0, output_keys);

/* ---- Simulation ------------------------------------------------------------------------------ */

double sim_ps_server_reduce_Bps(comm_ps_placement placement, const sim_costs *costs)
{
  return placement == COMM_PS_GPU ? (double)costs->reduce_Bps : SIM_HOST_REDUCE_BPS;
}

gboolean sim_check_net_scale(uint64_t devices, gboolean flow, GError **error)
{
  if (flow && devices > SIM_FLOW_MAX_DEVICES) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "--net-model flow: %" G_GUINT64_FORMAT " devices is more than the flow model "
                "simulates in reasonable time (%d); use --net-model analytic", devices,
                SIM_FLOW_MAX_DEVICES);
    return FALSE;
  }
  return TRUE;
}

gboolean sim_check_clock(const sim_engine *engine, GError **error)
{
  if (sim_engine_error(engine)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s", sim_engine_error(engine));
    return FALSE;
  }
  return sim_engine_check_clock(engine, error);
}

comm_topology *sim_scenario_topology(const sim_scenario *s, GError **error)
{
  comm_cluster_spec spec = {
      .system = s->system,
      .nodes = (uint32_t)s->nodes,
      .devices_per_node = (uint32_t)s->devices_per_node,
      .intra = s->intra,
      .inter = s->inter,
      .topology = s->topology,
      .extra_nodes = (s->strategy->flags & SIM_STRATEGY_SERVERS) &&
                             s->ps_placement == COMM_PS_DEDICATED
                         ? (uint32_t)s->ps_count : 0,
      .system_where = sim_scenario_where(s, "system"),
      .intra_where = sim_scenario_where(s, "intra"),
      .inter_where = sim_scenario_where(s, "inter"),
      .devices_per_node_where = sim_scenario_where(s, "devices-per-node"),
  };
  sim_faults_spec(s, &spec);
  return comm_topology_build(&spec, error);
}

/* Most devices a traced dp run simulates one by one when --symmetry is not given: a ResNet-50
 * iteration over 512 GPUs takes well under a second of CPU unfolded. */
#define SIM_TRACE_UNFOLD_MAX_DEVICES 512u

/* Whether dp folds the devices into one (--symmetry, exact on both networks). A trace shows the
 * devices and the transfers between them, so a traced run on up to
 * SIM_TRACE_UNFOLD_MAX_DEVICES devices simulates each device unless --symmetry on is given;
 * the figures are the same. */
static gboolean fold_devices(const sim_scenario *s, gboolean outputs, uint32_t devices)
{
  if (outputs && s->trace && !sim_scenario_given(s, "symmetry") &&
      devices <= SIM_TRACE_UNFOLD_MAX_DEVICES)
    return FALSE;
  return s->symmetry;
}

/* Beyond 65536 ranks (262144 on accelerators) auto takes the ring without comparing (the plans
 * of the others take minutes there): said once, with the way to name one. */
static void note_auto_fallback(const sim_scenario *s, const comm_topology *topo,
                               unsigned flags)
{
  uint32_t n = comm_topology_devices(topo);
  if (n <= 65536 || !s->allreduce || !comm_coll_algorithm_is_rule(s->allreduce) ||
      !(flags & SIM_STRATEGY_ALLREDUCE) || (flags & SIM_STRATEGY_TRANSFORMER))
    return;
  g_autoptr(comm_coll_group) g = comm_coll_group_new(topo, NULL, 0);
  comm_coll_args a = {.op = COMM_COLL_ALLREDUCE, .bytes = s->bucket_bytes};
  const comm_coll_algorithm *used = comm_coll_resolve(s->allreduce, g, &a);
  if (!comm_coll_algorithm_own_costs(used))
    g_printerr("dtsim: note: on %u devices auto is %s without comparing the algorithms (their "
               "plans would take minutes); --allreduce NAME picks one\n", n,
               comm_coll_algorithm_name(used));
}

gboolean sim_check_strict(const sim_scenario *s, const sim_report *r, GError **error)
{
  if (!s->strict || !r->memory_capacity_bytes ||
      r->memory_per_device_bytes <= r->memory_capacity_bytes)
    return TRUE;
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %.2f GiB per device does not fit in %.2f GiB",
              sim_scenario_where(s, "strict"), (double)r->memory_per_device_bytes / (1 << 30),
              (double)r->memory_capacity_bytes / (1 << 30));
  return FALSE;
}

sim_plan *sim_scenario_plan(const sim_scenario *s, const comm_topology *topo,
                            comm_net_model net_model, const char *device, gboolean outputs,
                            const sim_strategy **strategy_out, sim_costs **costs_out,
                            GError **error)
{
  /* Transformers train with the transformer strategy (dp is its special case of one tensor
   * and one pipeline rank): its plan comes from the model's hyper-parameters, not a cost
   * table. */
  const sim_strategy *strategy = sim_strategy_for_scenario(s, error);
  if (!strategy)
    return NULL;
  sim_shape shape = {comm_topology_devices(topo), comm_topology_nodes(topo),
                     comm_topology_devices_per_node(topo)};
  if (strategy->check && strategy->check(s, &shape, error))
    return NULL;
  unsigned flags = sim_strategy_flags_for(strategy, s);
  g_autoptr(sim_costs) costs = NULL;
  if (!(flags & SIM_STRATEGY_TRANSFORMER)) {
    /* Pipelines cost their passes per micro-batch; --batch is the pipeline's mini-batch. */
    uint64_t cost_batch = (uint64_t)s->batch;
    if (flags & SIM_STRATEGY_PIPELINED) {
      if (s->batch % s->micro_batches != 0) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "%s: %" G_GINT64_FORMAT " micro-batches do not divide a batch of %"
                    G_GINT64_FORMAT " samples", sim_scenario_where(s, "micro-batches"),
                    s->micro_batches, s->batch);
        return NULL;
      }
      cost_batch = (uint64_t)(s->batch / s->micro_batches);
    }
    costs = strategy->costs ? strategy->costs(s, device, cost_batch, error)
                            : sim_costs_build(s, device, cost_batch, error);
    if (!costs)
      return NULL;
  }
  sim_plan_opts po = {
      .nodes = comm_topology_nodes(topo),
      .devices_per_node = comm_topology_devices_per_node(topo),
      .overlap = s->overlap,
      .bucket_bytes = s->bucket_bytes,
      .allreduce = s->allreduce,
      .iterations = (uint32_t)s->iterations,
      .micro_batches = (uint32_t)s->micro_batches,
      .gpipe = s->schedule == WL_SCHED_GPIPE,
      .stages = (uint32_t)s->stages,
      .ps_count = (uint32_t)s->ps_count,
      .split = s->split,
      .symmetric = fold_devices(s, outputs, comm_topology_devices(topo)) &&
                   !sim_faults_unfold(s),
      .scenario = s,
      .own = strategy->keys ? sim_scenario_own(s, strategy->keys) : NULL,
      .topology = topo,
      .net_model = net_model,
      .device = device,
  };
  sim_plan *plan = strategy->build(costs, &po, error);
  if (!plan)
    return NULL;
  *strategy_out = strategy;
  *costs_out = g_steal_pointer(&costs);
  return plan;
}

/* One simulation of a scenario; trace and csv only when asked. */
static gboolean simulate_once(const sim_scenario *s, const sim_run_opts *o, gboolean outputs,
                              sim_report *r, sim_outcome *keep, GError **error)
{
  dt_memory_set_limit(s->max_memory);
  /* Every output can be written, or nothing is simulated. */
  if (outputs && ((s->trace && !dt_outfile_check(s->trace, "--trace", error)) ||
                  (s->csv && !dt_outfile_check(s->csv, "--csv", error)) ||
                  !sim_linkviews_check_outputs(s, error)))
    return FALSE;
  comm_net_model net_model = s->net_model;
  g_autoptr(comm_topology) topo = sim_scenario_topology(s, error);
  if (!topo)
    return FALSE;
  if (!sim_check_net_scale(comm_topology_devices(topo), net_model == COMM_NET_FLOW, error))
    return FALSE;
  const char *device = s->device ? s->device : comm_topology_device_kind(topo);
  /* The plan: a Chakra trace's, or the strategy's (transformers train with the transformer
   * strategy, dp being its special case of one tensor and one pipeline rank: its plan comes
   * from the model's hyper-parameters, not a cost table). */
  const sim_strategy *strategy = NULL;
  g_autoptr(sim_costs) costs = NULL;
  g_autoptr(sim_plan) plan = NULL;
  double reduce_Bps = 0;
  if (s->chakra) {
    plan = sim_chakra_plan(s, device, comm_topology_devices(topo), &reduce_Bps, error);
  } else {
    plan = sim_scenario_plan(s, topo, net_model, device, outputs, &strategy, &costs, error);
    if (plan)
      reduce_Bps = costs ? (double)costs->reduce_Bps : plan->reduce_Bps;
  }
  if (!plan)
    return FALSE;
  unsigned flags = strategy ? sim_strategy_flags_for(strategy, s) : 0;
  /* A folded 3-D plan holds one unit per stage (plan->fold_pp, sim_plan). */
  gboolean folded_3d = plan->fold_pp != 0;
  char symmetry_note[sizeof r->symmetry_note];
  if (!sim_faults_apply(s, topo, plan, folded_3d, folded_3d ? plan->fold_tp : 1,
                        folded_3d ? plan->fold_pp : 1, symmetry_note, sizeof symmetry_note, error))
    return FALSE;
  g_autoptr(sim_engine) engine = sim_engine_new();
  g_autoptr(trace_chrome) trace = NULL;
  if (outputs && s->trace) {
    trace = trace_chrome_new(s->trace, error);
    if (!trace)
      return FALSE;
    trace_chrome_set_limit(trace, (uint64_t)s->trace_limit);
    trace_chrome_set_max_procs(trace, (uint32_t)s->trace_procs);
    if (o && o->command_line)
      trace_chrome_set_info(trace, "command", o->command_line);
    trace_chrome_attach(trace, engine);
  }
#ifndef NDEBUG
  g_autoptr(GError) broken = NULL;
  if (!sim_graph_check(plan->graph, &broken))
    g_error("%s", broken->message);
#endif
  g_autoptr(comm_net) net = comm_net_new(engine, topo, net_model);
  g_autoptr(sim_exec) exec = sim_exec_new(engine, plan->graph);
  g_autoptr(sim_net_adapter) adapter = sim_net_adapter_new(net, plan, reduce_Bps);
  g_autoptr(GError) views_error = NULL;
  g_autoptr(sim_linkviews) views =
      outputs ? sim_linkviews_attach(s, plan, folded_3d, net, topo, trace != NULL, &views_error)
              : NULL;
  if (views_error) {
    g_propagate_error(error, g_steal_pointer(&views_error));
    return FALSE;
  }
  sim_exec_set_comm(exec, &sim_net_adapter_ops, adapter);
  if (flags & SIM_STRATEGY_SERVERS)
    sim_net_adapter_set_ps(adapter, s->ps_placement, (uint32_t)s->ps_count,
                           sim_ps_server_reduce_Bps(s->ps_placement, costs),
                           s->ps_workers == COMM_PS_WORKER_NODE,
                           sim_ps_server_reduce_Bps(COMM_PS_GPU, costs));
  if (!sim_exec_run(exec, error) || !sim_check_clock(engine, error))
    return FALSE;
  sim_engine_finish(engine);
  sim_report_measure(r, plan, exec);
  g_strlcpy(r->symmetry_note, symmetry_note, sizeof r->symmetry_note);
  r->events = sim_engine_events(engine);
  g_strlcpy(r->device, device, sizeof r->device);
  r->sim_wall_s = sim_engine_wall_s(engine);
  r->memory_capacity_bytes = costs ? costs->memory_capacity_bytes : plan->memory_capacity_bytes;
  r->threads = costs ? costs->threads : 0;
  if (strategy && strategy->report)
    strategy->report(plan, r);
  if (views) {
    g_autofree char *title = g_strdup_printf("%s, %s, %u devices, %s", s->model,
                                             s->chakra ? "chakra" : sim_scenario_strategy_name(s),
                                             r->devices, comm_topology_kind(topo));
    if (!sim_linkviews_finish(views, trace, engine, sim_exec_makespan(exec), title, error))
      return FALSE;
  }
  /* Before any output is written: a refused run leaves no trace or CSV behind. */
  if (outputs && !sim_check_strict(s, r, error))
    return FALSE;
  if (trace) {
    if (!trace_chrome_close(trace, error))
      return FALSE;
    if (trace_chrome_hidden_procs(trace))
      g_printerr("dtsim: note: the trace shows the first %" G_GINT64_FORMAT " devices (and links, "
                 "hosts) of %u; --trace-devices N shows more\n", s->trace_procs, r->devices);
    if (plan->symmetric)
      g_printerr("dtsim: note: the trace shows one device standing for all %u (--symmetry on); "
                 "--symmetry off traces each device and the transfers between them\n",
                 r->devices);
    if (trace_chrome_truncated(trace))
      g_printerr("dtsim: warning: the trace was cut after %" G_GUINT64_FORMAT " events to stay "
                 "readable; --trace-limit N raises the limit, --trace-devices N samples fewer "
                 "devices, --iterations 1 shortens it\n", trace_chrome_events(trace));
  }
  if (outputs && s->csv && !trace_timeline_write_csv(s->csv, plan->graph, exec, error))
    return FALSE;
  if (outputs && s->chakra_out) {
    sim_chakra_servers servers = {(uint32_t)s->ps_count,
                                  costs ? sim_ps_server_reduce_Bps(s->ps_placement, costs) : 0,
                                  s->ps_placement != COMM_PS_GPU,
                                  comm_topology_nodes(topo),
                                  comm_topology_devices_per_node(topo), adapter};
    if (!sim_chakra_write(plan, s->chakra_out, (flags & SIM_STRATEGY_SERVERS) ? &servers : NULL,
                          error))
      return FALSE;
  }
  if (outputs && !(o && o->quiet))
    note_auto_fallback(s, topo, flags);   /* after the last error: a refused run prints one line */
  if (keep) {
    keep->plan = g_steal_pointer(&plan);
    keep->exec = g_steal_pointer(&exec);
    keep->engine = g_steal_pointer(&engine);
    keep->net = g_steal_pointer(&net);
    keep->topology = g_steal_pointer(&topo);
  }
  return TRUE;
}

void sim_outcome_clear(sim_outcome *o)
{
  /* The executor and network refer to the engine and the topology: free them first. */
  g_clear_pointer(&o->exec, sim_exec_free);
  g_clear_pointer(&o->net, comm_net_free);
  g_clear_pointer(&o->engine, sim_engine_free);
  g_clear_pointer(&o->plan, sim_plan_free);
  g_clear_pointer(&o->topology, comm_topology_free);
}

void sim_scenario_single_device(sim_scenario *one, const sim_scenario *s)
{
  sim_scenario_copy(one, s);
  one->nodes = 1;
  one->devices_per_node = 1;
  /* The same strategy on one device where it has a one-device form (dp, ps with its servers,
   * chaos); pipelines and model parallelism become plain training on one device. */
  if (!(s->strategy->flags & SIM_STRATEGY_ONE_DEVICE))
    one->strategy = sim_strategy_default();
  g_clear_pointer(&one->split, g_array_unref);
  /* The reference is a healthy device. */
  g_clear_pointer(&one->stragglers, g_array_unref);
  g_clear_pointer(&one->links_down, g_array_unref);
  one->stages = 0;
  g_clear_pointer(&one->trace, g_free);
  g_clear_pointer(&one->csv, g_free);
}

gboolean sim_simulate(const sim_scenario *s, const sim_run_opts *o, sim_report *out,
                      GError **error)
{
  gint64 t0 = g_get_monotonic_time();
  if (s->jobs_file) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: [job NAME] groups are simulated by "
                "`dtsim run` only", s->jobs_file);
    return FALSE;
  }
  /* A Chakra trace is one iteration of the job (as traces of real jobs are): --chakra-out
   * simulates one unless --iterations says otherwise, and every device unless --symmetry says
   * otherwise (sim_chakra_export_scenario). */
  g_auto(sim_scenario) one_iteration = {0};
  if (s->chakra_out) {
    sim_scenario_copy(&one_iteration, s);
    sim_chakra_export_scenario(&one_iteration);
    s = &one_iteration;
  }
  if (!simulate_once(s, o, TRUE, out, o ? o->keep : NULL, error))
    return FALSE;
  const sim_strategy *st = sim_strategy_for_scenario(s, NULL);
  unsigned flags = st ? sim_strategy_flags_for(st, s) : 0;
  if (o && o->with_speedup && (flags & SIM_STRATEGY_THREADS)) {
    /* CHAOS: the speedup over one thread of the same device. */
    g_auto(sim_scenario) one;
    sim_scenario_copy(&one, s);
    one.threads = 1;
    g_clear_pointer(&one.trace, g_free);
    g_clear_pointer(&one.csv, g_free);
    sim_report single;
    if (!simulate_once(&one, o, FALSE, &single, NULL, error))
      return FALSE;
    out->speedup = out->iteration_time_s > 0 ? single.iteration_time_s / out->iteration_time_s : 0;
    out->scaling_efficiency = out->threads ? out->speedup / out->threads : 0;
  } else if (o && o->with_speedup && !(flags & SIM_STRATEGY_TRANSFORMER) && !s->chakra) {
    if (out->devices == 1) {
      out->speedup = 1.0;
    } else {
      g_auto(sim_scenario) one;
      sim_scenario_single_device(&one, s);
      sim_report single;
      if (!simulate_once(&one, o, FALSE, &single, NULL, error))
        return FALSE;
      out->speedup = single.throughput_samples_per_s > 0
                         ? out->throughput_samples_per_s / single.throughput_samples_per_s
                         : 0;
    }
    out->scaling_efficiency = out->speedup / out->devices;
  }
  if (!sim_trainrun_report(s, out, error))
    return FALSE;
  out->sim_wall_s = (double)(g_get_monotonic_time() - t0) * 1e-6;
  return TRUE;
}
