/* The simulation pipeline shared by the commands (see simulate.h). */
#include "simulate.h"

#include "chrome.h"
#include "net_adapter.h"
#include "strategy_3d.h"
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
    {"device", SIM_KEY_STRING, SIM_KEY_OFF(device), .commands = SIM_OPTS_CLUSTER,
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
     .arg = "NAME", .help = "switch, fat-tree[:OVERSUB], ring, torus2d, torus3d, dragonfly"},
    {"net-model", SIM_KEY_CHOICE, SIM_KEY_OFF(net_model), "flow", .choices = "flow|analytic",
     .commands = SIM_OPTS_CLUSTER, .help = "network fidelity"},
};
const sim_key_group sim_keys_cluster = SIM_KEY_GROUP("cluster", NULL, cluster_keys);

static const sim_key run_keys[] = {
    {"strategy", SIM_KEY_REF, SIM_KEY_OFF(strategy), "dp", .resolve = sim_strategy_resolve,
     .commands = SIM_OPTS_RUN, .arg = "S", .help = "dp, ps, mp, pp, hybrid, 3d or chaos"},
    {"iterations", SIM_KEY_INT, SIM_KEY_OFF(iterations), "1", 1, 100000,
     .commands = SIM_OPTS_RUN, .arg = "N", .help = "iterations to simulate"},
    {"strict", SIM_KEY_FLAG, SIM_KEY_OFF(strict), .commands = SIM_OPTS_RUN,
     .help = "a configuration that does not fit in device memory is an error"},
};
const sim_key_group sim_keys_run = SIM_KEY_GROUP("run", NULL, run_keys);

static const sim_key output_keys[] = {
    {"json", SIM_KEY_FLAG, SIM_KEY_OFF(json), .commands = SIM_OPTS_CLUSTER,
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
const sim_key_group sim_keys_output = SIM_KEY_GROUP("output", NULL, output_keys);

/* ---- Simulation ------------------------------------------------------------------------------ */

double sim_ps_server_reduce_Bps(comm_ps_placement placement, const sim_costs *costs)
{
  return placement == COMM_PS_GPU ? (double)costs->reduce_Bps : SIM_HOST_REDUCE_BPS;
}

static gboolean write_csv(const char *path, const sim_plan *p, const sim_exec *x, GError **error)
{
  g_autoptr(dt_outfile) out = dt_outfile_open(path, error);
  if (!out)
    return FALSE;
  FILE *f = dt_outfile_stream(out);
  const sim_graph *g = p->graph;
  fputs("task,name,kind,category,unit,stream,start_s,end_s,duration_s,bytes,flops\n", f);
  static const char *const kinds[] = {"compute", "delay", "transfer", "collective", "custom"};
  for (sim_task_id t = 0; t < sim_graph_n_tasks(g); t++) {
    const sim_stream_id *m;
    uint32_t nm = sim_graph_task_members(g, t, &m);
    const char *unit = nm ? sim_graph_unit_name(g, sim_graph_stream_unit(g, m[0])) : "";
    const char *stream = nm ? sim_graph_stream_name(g, m[0]) : "";
    sim_time_ps a = sim_exec_task_start(x, t), b = sim_exec_task_end(x, t);
    /* Names may hold commas ("gpu2 (replica 1, stage 0)") or quotes: RFC 4180 fields. */
    g_autoptr(GString) row = g_string_new(NULL);
    g_string_append_printf(row, "%u,", t);
    dt_csv_field(row, sim_graph_task_name(g, t));
    g_string_append_printf(row, ",%s,", kinds[sim_graph_task_kind(g, t)]);
    dt_csv_field(row, sim_graph_task_category(g, t));
    g_string_append_c(row, ',');
    dt_csv_field(row, unit);
    g_string_append_c(row, ',');
    dt_csv_field(row, stream);
    fprintf(f, "%s,%.12f,%.12f,%.12f,%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT "\n", row->str,
            sim_time_to_s(a), sim_time_to_s(b), sim_time_to_s(b - a), sim_graph_task_bytes(g, t),
            sim_graph_task_flops(g, t));
  }
  return dt_outfile_commit(out, error);
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
  if (sim_engine_saturated(engine) == 0)
    return TRUE;
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
              "the simulated time overflows the clock (more than %.0f days at picosecond "
              "resolution): use smaller sizes, faster links or fewer iterations",
              sim_time_to_s(SIM_TIME_MAX) / 86400);
  return FALSE;
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
      .extra_nodes = strcmp(sim_scenario_strategy_name(s), "ps") == 0 &&
                             s->ps_placement == COMM_PS_DEDICATED
                         ? (uint32_t)s->ps_count : 0,
      .system_where = sim_scenario_where(s, "system"),
      .intra_where = sim_scenario_where(s, "intra"),
      .inter_where = sim_scenario_where(s, "inter"),
  };
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
static void note_auto_fallback(const sim_scenario *s, const comm_topology *topo)
{
  uint32_t n = comm_topology_devices(topo);
  if (n <= 65536 || !s->allreduce || !comm_coll_algorithm_is_rule(s->allreduce) ||
      strcmp(sim_scenario_strategy_name(s), "dp") != 0)
    return;
  g_autoptr(comm_coll_group) g = comm_coll_group_new(topo, NULL, 0);
  comm_coll_args a = {.op = COMM_COLL_ALLREDUCE, .bytes = s->bucket_bytes};
  const comm_coll_algorithm *used = comm_coll_resolve(s->allreduce, g, &a);
  if (!comm_coll_algorithm_own_costs(used))
    g_printerr("dtsim: note: on %u devices auto is %s without comparing the algorithms (their "
               "plans would take minutes); --allreduce NAME picks one\n", n,
               comm_coll_algorithm_name(used));
}

/* --strict: a configuration that does not fit in device memory is an error. */
static gboolean check_strict(const sim_scenario *s, const sim_report *r, GError **error)
{
  if (!s->strict || !r->memory_capacity_bytes ||
      r->memory_per_device_bytes <= r->memory_capacity_bytes)
    return TRUE;
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %.2f GiB per device does not fit in %.2f GiB",
              sim_scenario_where(s, "strict"), (double)r->memory_per_device_bytes / (1 << 30),
              (double)r->memory_capacity_bytes / (1 << 30));
  return FALSE;
}

/* One simulation of a scenario; trace and csv only when asked. */
static gboolean simulate_once(const sim_scenario *s, const sim_run_opts *o, gboolean outputs,
                              sim_report *r, sim_outcome *keep, GError **error)
{
  /* Every output can be written, or nothing is simulated. */
  if (outputs && ((s->trace && !dt_outfile_check(s->trace, "--trace", error)) ||
                  (s->csv && !dt_outfile_check(s->csv, "--csv", error))))
    return FALSE;
  const sim_strategy *strategy = s->strategy;
  comm_net_model net_model = s->net_model;
  g_autoptr(comm_topology) topo = sim_scenario_topology(s, error);
  if (!topo)
    return FALSE;
  if (!sim_check_net_scale(comm_topology_devices(topo), net_model == COMM_NET_FLOW, error))
    return FALSE;
  const char *device = s->device ? s->device : comm_topology_device_kind(topo);
  const char *sname = strategy->name;
  /* Transformers train with strategy 3d (dp is its special case of one tensor and one
   * pipeline rank): its plan comes from the model's hyper-parameters, not a cost table. */
  gboolean three_d = strcmp(sname, "3d") == 0 || wl_tf_is_transformer(s->model);
  g_autoptr(sim_costs) costs = NULL;
  g_autoptr(sim_plan) plan = NULL;
  comm_ps_placement placement = s->ps_placement;
  double reduce_Bps = 0;
  sim_3d_opts o3;
  sim_3d_metrics m3;
  if (three_d) {
    if (!sim_3d_opts_from_scenario(s, &o3, error))
      return FALSE;
    plan = sim_3d_build(&o3, topo, net_model, device, s->calibration, &reduce_Bps, &m3, error);
    if (!plan)
      return FALSE;
  } else {
    /* Pipelines cost their passes per micro-batch; --batch is the pipeline's mini-batch. */
    gboolean pipelined = strcmp(sname, "pp") == 0 ||
                         (strcmp(sname, "hybrid") == 0 && s->hybrid == SIM_HYBRID_DP_PP);
    uint64_t cost_batch = (uint64_t)s->batch;
    if (pipelined) {
      if (s->batch % s->micro_batches != 0) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "%s: %" G_GINT64_FORMAT " micro-batches do not divide a batch of %"
                    G_GINT64_FORMAT " samples", sim_scenario_where(s, "micro-batches"),
                    s->micro_batches, s->batch);
        return FALSE;
      }
      cost_batch = (uint64_t)(s->batch / s->micro_batches);
    }
    gboolean chaos = strcmp(sname, "chaos") == 0;
    costs = chaos ? sim_chaos_costs_build(s, device, error)
                  : sim_costs_build(s, device, cost_batch, error);
    if (!costs)
      return FALSE;
    sim_plan_opts po = {
        .nodes = comm_topology_nodes(topo),
        .devices_per_node = comm_topology_devices_per_node(topo),
        .overlap = s->overlap,
        .bucket_bytes = s->bucket_bytes,
        .allreduce = s->allreduce,
        .iterations = (uint32_t)s->iterations,
        .micro_batches = (uint32_t)s->micro_batches,
        .gpipe = s->schedule == SIM_SCHEDULE_GPIPE,
        .stages = (uint32_t)s->stages,
        .ps_count = (uint32_t)s->ps_count,
        .hybrid = s->hybrid,
        .split = s->split,
        .symmetric = fold_devices(s, outputs, comm_topology_devices(topo)),
        .scenario = s,
    };
    plan = strategy->build(costs, &po, error);
    if (!plan)
      return FALSE;
    reduce_Bps = (double)costs->reduce_Bps;
  }
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
  g_autoptr(comm_net) net = comm_net_new(engine, topo, net_model);
  g_autoptr(sim_exec) exec = sim_exec_new(engine, plan->graph);
  g_autoptr(sim_net_adapter) adapter = sim_net_adapter_new(net, plan, reduce_Bps);
  sim_exec_set_comm(exec, &sim_net_adapter_ops, adapter);
  if (!three_d)
    sim_net_adapter_set_ps(adapter, placement, (uint32_t)s->ps_count,
                           sim_ps_server_reduce_Bps(placement, costs));
  gboolean ran = sim_exec_run(exec, error);
  if (sim_net_adapter_error(adapter)) {
    g_clear_error(error);
    g_propagate_error(error, g_error_copy(sim_net_adapter_error(adapter)));
    return FALSE;
  }
  if (!ran || !sim_check_clock(engine, error))
    return FALSE;
  sim_engine_finish(engine);
  sim_report_measure(r, plan, exec);
  r->events = sim_engine_events(engine);
  r->sim_wall_s = sim_engine_wall_s(engine);
  r->memory_capacity_bytes = three_d ? m3.capacity_bytes : costs->memory_capacity_bytes;
  r->threads = three_d ? 0 : costs->threads;
  if (three_d)
    sim_3d_report(&m3, r);
  /* Before any output is written: a refused run leaves no trace or CSV behind. */
  if (outputs && !check_strict(s, r, error))
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
  if (outputs && s->csv && !write_csv(s->csv, plan, exec, error))
    return FALSE;
  if (outputs)
    note_auto_fallback(s, topo);   /* after the last error: a refused run prints one line */
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
  const char *name = sim_scenario_strategy_name(s);
  if (strcmp(name, "ps") != 0 && strcmp(name, "dp") != 0 && strcmp(name, "chaos") != 0)
    one->strategy = sim_strategy_find("dp");
  g_clear_pointer(&one->split, g_array_unref);
  one->stages = 0;
  g_clear_pointer(&one->trace, g_free);
  g_clear_pointer(&one->csv, g_free);
}

gboolean sim_simulate(const sim_scenario *s, const sim_run_opts *o, sim_report *out,
                      GError **error)
{
  gint64 t0 = g_get_monotonic_time();
  if (!simulate_once(s, o, TRUE, out, o ? o->keep : NULL, error))
    return FALSE;
  if (o && o->with_speedup && strcmp(sim_scenario_strategy_name(s), "chaos") == 0) {
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
  } else if (o && o->with_speedup && strcmp(sim_scenario_strategy_name(s), "3d") != 0 &&
             !wl_tf_is_transformer(s->model)) {
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
  out->sim_wall_s = (double)(g_get_monotonic_time() - t0) * 1e-6;
  return TRUE;
}
