/* `dtsim collective`: one collective (or a sweep over sizes) on a modeled cluster, reported as
 * nccl-tests does (time, algbw = bytes / time, busbw = algbw x the operation's bus factor), and
 * `dtsim list algorithms`: the registry of comm/coll. */
#include "cli.h"
#include "simulate.h"
#include "coll.h"
#include "chrome.h"
#include "devices.h"
#include "util.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

/* ---- dtsim list algorithms ---------------------------------------------------------------- */

int dtsim_list_algorithms(FILE *out, gboolean json)
{
  if (!json)
    fprintf(out, "%-19s %-52s  %s\n", "NAME", "OPERATIONS", "DESCRIPTION");
  for (size_t i = 0; i < comm_coll_algorithm_count(); i++) {
    const comm_coll_algorithm *a = comm_coll_algorithm_at(i);
    g_autoptr(GString) ops = g_string_new(NULL);
    for (int op = 0; op < COMM_COLL_N_OPS; op++)
      if (comm_coll_algorithm_supports(a, (comm_coll_op)op))
        g_string_append_printf(ops, "%s%s", ops->len ? "," : "", comm_coll_op_name(op));
    if (!json) {
      fprintf(out, "%-19s %-52s  %s\n", comm_coll_algorithm_name(a), ops->str,
              comm_coll_algorithm_description(a));
      continue;
    }
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, comm_coll_algorithm_name(a));
    json_builder_set_member_name(b, "operations");
    json_builder_begin_array(b);
    for (int op = 0; op < COMM_COLL_N_OPS; op++)
      if (comm_coll_algorithm_supports(a, (comm_coll_op)op))
        json_builder_add_string_value(b, comm_coll_op_name(op));
    json_builder_end_array(b);
    json_builder_set_member_name(b, "description");
    json_builder_add_string_value(b, comm_coll_algorithm_description(a));
    json_builder_end_object(b);
    g_autoptr(JsonNode) root = json_builder_get_root(b);
    g_autofree char *text = json_to_string(root, FALSE);
    fprintf(out, "%s\n", text);
  }
  return 0;
}

/* ---- dtsim collective ---------------------------------------------------------------------- */

typedef struct {
  sim_time_ps time_ps;
  uint64_t flows, events, peak_flows;
  double wall_s;
  const char *algorithm;
} coll_result;

static void on_coll_done(sim_engine *engine, void *user)
{
  *(gboolean *)user = TRUE;
}

/* Runs one collective on a fresh engine and network; with a trace, the collective is a span
 * on its own track and the network reports every flow. */
static gboolean run_one(const comm_topology *topo, const comm_coll_group *group,
                        const comm_coll_algorithm *algo, const comm_coll_args *args,
                        comm_net_model model, const char *trace_path, coll_result *res,
                        GError **error)
{
  g_autoptr(sim_engine) engine = sim_engine_new();
  g_autoptr(trace_chrome) trace = NULL;
  if (trace_path) {
    trace = trace_chrome_new(trace_path, error);
    if (!trace)
      return FALSE;
    trace_chrome_set_info(trace, "command", "dtsim collective");
    trace_chrome_attach(trace, engine);
  }
  g_autoptr(comm_net) net = comm_net_new(engine, topo, model);
  g_autoptr(comm_coll) coll = comm_coll_new(net, group, algo, args, error);
  if (!coll)
    return FALSE;
  const char *used = comm_coll_algorithm_name(comm_coll_algorithm_used(coll));
  uint64_t span = 0;
  g_autofree char *span_name = g_strdup_printf("%s %s", comm_coll_op_name(args->op), used);
  if (trace) {
    sim_proc_id proc = sim_engine_add_proc(engine, SIM_PROC_OTHER, "collective", -1);
    sim_track_id track = sim_engine_add_track(engine, proc, used, 0);
    span = sim_engine_span_begin(engine, track, span_name, "comm", args->bytes, 0);
  }
  gboolean done = FALSE;
  comm_coll_start(coll, on_coll_done, &done);
  sim_engine_run(engine);
  if (!sim_check_clock(engine, error))
    return FALSE;
  if (!done) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "the collective did not complete");
    return FALSE;
  }
  if (trace) {
    sim_engine_span_end(engine, span);
    sim_engine_finish(engine);
    if (!trace_chrome_close(trace, error))
      return FALSE;
  }
  res->time_ps = comm_coll_end_time(coll) - comm_coll_start_time(coll);
  res->flows = comm_coll_flows(coll);
  res->events = sim_engine_events(engine);
  res->peak_flows = comm_net_peak_flows(net);
  res->wall_s = sim_engine_wall_s(engine);
  res->algorithm = used;   /* registry strings are static */
  return TRUE;
}

int dtsim_cmd_collective(int argc, char **argv)
{
  const char *cmd = "collective";
  g_autofree char *op_s = NULL, *bytes_s = NULL, *algo_s = NULL, *system = NULL, *intra = NULL,
                  *inter = NULL, *topology = NULL, *model_s = NULL, *trace_path = NULL,
                  *chunk_s = NULL;
  gint nodes = 1, per_node = 0, root = 0;
  gdouble reduce_GBps = -1, launch_us = 0, step_us = 0;
  gboolean json = FALSE, steps = FALSE;
  GOptionEntry entries[] = {
      {"op", 0, 0, G_OPTION_ARG_STRING, &op_s,
       "allreduce (default), allgather, reduce-scatter, broadcast or reduce", "OP"},
      {"bytes", 0, 0, G_OPTION_ARG_STRING, &bytes_s,
       "size (nccl-tests meaning), a list a,b,c or a doubling range 1K..1G", "SIZES"},
      {"algorithm", 0, 0, G_OPTION_ARG_STRING, &algo_s,
       "algorithm (dtsim list algorithms); default auto", "NAME"},
      {"system", 0, 0, G_OPTION_ARG_STRING, &system, "node preset (default dgx1-v100)", "S"},
      {"nodes", 0, 0, G_OPTION_ARG_INT, &nodes, "nodes (default 1)", "N"},
      {"devices-per-node", 0, 0, G_OPTION_ARG_INT, &per_node, "devices per node", "G"},
      {"intra", 0, 0, G_OPTION_ARG_STRING, &intra, "intra-node fabric", "F"},
      {"inter", 0, 0, G_OPTION_ARG_STRING, &inter, "inter-node network", "F"},
      {"topology", 0, 0, G_OPTION_ARG_STRING, &topology, "inter-node topology", "T"},
      {"net-model", 0, 0, G_OPTION_ARG_STRING, &model_s, "flow (default) or analytic", "M"},
      {"reduce-GBps", 0, 0, G_OPTION_ARG_DOUBLE, &reduce_GBps,
       "reduction rate on the device, 1e9 bytes/s (default: the device's streaming memory "
       "bandwidth / 3; 0: free)", "X"},
      {"chunk", 0, 0, G_OPTION_ARG_STRING, &chunk_s, "pipeline chunk of chains and trees (default: best for the size)", "SIZE"},
      {"launch-us", 0, 0, G_OPTION_ARG_DOUBLE, &launch_us,
       "software cost before the first transfer, us (default 0)", "X"},
      {"step-us", 0, 0, G_OPTION_ARG_DOUBLE, &step_us,
       "software cost of every step a rank takes part in, us (default 0)", "X"},
      {"root", 0, 0, G_OPTION_ARG_INT, &root, "root rank of broadcast and reduce", "R"},
      {"steps", 0, 0, G_OPTION_ARG_NONE, &steps,
       "run rings step by step instead of one pipelined flow per rank", NULL},
      {"json", 0, 0, G_OPTION_ARG_NONE, &json, "one JSON object per size", NULL},
      {"trace", 0, 0, G_OPTION_ARG_FILENAME, &trace_path, "write a Chrome trace", "FILE"},
      {NULL},
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("- one collective on a modeled cluster");
  dt_option_entries_as_bytes(entries);
  g_option_context_add_main_entries(ctx, entries, NULL);
  int status = 0;
  if (!dtsim_cli_parse(ctx, cmd, &argc, &argv, &status))
    return status;

  g_autoptr(GError) error = NULL;
  if (argc > 1) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT, "unexpected argument '%s'", argv[1]);
    return dtsim_cli_fail(cmd, error);
  }
  comm_coll_args args = {.op = COMM_COLL_ALLREDUCE};
  if (op_s && !comm_coll_op_parse(op_s, "--op", &args.op, &error))
    return dtsim_cli_fail(cmd, error);
  if (bytes_s == NULL) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT, "--bytes is required");
    return dtsim_cli_fail(cmd, error);
  }
  g_autoptr(GArray) sizes = dt_parse_size_list(bytes_s, "--bytes", 0, &error);
  if (!sizes)
    return dtsim_cli_fail(cmd, error);
  const comm_coll_algorithm *algo =
      comm_coll_algorithm_find(algo_s ? algo_s : "auto", "--algorithm", &error);
  if (!algo)
    return dtsim_cli_fail(cmd, error);
  if (!comm_coll_algorithm_supports(algo, args.op)) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT, "--algorithm: '%s' does not implement %s",
                comm_coll_algorithm_name(algo), comm_coll_op_name(args.op));
    return dtsim_cli_fail(cmd, error);
  }
  comm_net_model model = COMM_NET_FLOW;
  if (model_s && !comm_net_model_parse(model_s, "--net-model", &model, &error))
    return dtsim_cli_fail(cmd, error);
  if (nodes < 1 || per_node < 0 || root < 0) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT, "%s: must be %s",
                nodes < 1 ? "--nodes" : per_node < 0 ? "--devices-per-node" : "--root",
                nodes < 1 ? "at least 1" : "zero or more");
    return dtsim_cli_fail(cmd, error);
  }
  gboolean reduce_given = reduce_GBps != -1;
  if (reduce_given && (!(reduce_GBps >= 0) || !isfinite(reduce_GBps))) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT, "--reduce-GBps: must be zero or more");
    return dtsim_cli_fail(cmd, error);
  }
  args.reduce_Bps = reduce_given ? reduce_GBps * 1e9 : 0;
  if (!(launch_us >= 0 && launch_us < 1e12) || !(step_us >= 0 && step_us < 1e12)) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT, "%s: must be zero or more microseconds",
                launch_us >= 0 && launch_us < 1e12 ? "--step-us" : "--launch-us");
    return dtsim_cli_fail(cmd, error);
  }
  args.launch_ps = sim_time_from_s(launch_us * 1e-6);
  args.step_ps = sim_time_from_s(step_us * 1e-6);
  if (chunk_s) {
    if (!dt_parse_size(chunk_s, "--chunk", &args.chunk_bytes, &error))
      return dtsim_cli_fail(cmd, error);
    if (args.chunk_bytes == 0) {
      g_set_error(&error, DT_ERROR, DT_ERROR_INPUT, "--chunk: must be at least one byte");
      return dtsim_cli_fail(cmd, error);
    }
  }
  args.root = (uint32_t)root;
  args.form = steps ? COMM_COLL_FORM_STEPS : COMM_COLL_FORM_PIPELINED;
  if (trace_path && !dt_outfile_check(trace_path, "--trace", &error))
    return dtsim_cli_fail(cmd, error);
  if (trace_path && sizes->len > 1) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT, "--trace: needs a single --bytes value");
    return dtsim_cli_fail(cmd, error);
  }

  comm_cluster_spec spec = {.system = system ? system : "dgx1-v100", .nodes = (uint32_t)nodes,
                            .devices_per_node = (uint32_t)per_node, .intra = intra,
                            .inter = inter, .topology = topology};
  g_autoptr(comm_topology) topo = comm_topology_build(&spec, &error);
  if (topo && !sim_check_net_scale(comm_topology_devices(topo), model == COMM_NET_FLOW, &error))
    return dtsim_cli_fail(cmd, error);
  if (!topo)
    return dtsim_cli_fail(cmd, error);
  if (!reduce_given) {
    /* As `dtsim run` does: a reduction reads two operands and writes one result, so it runs
     * at a third of the device's streaming memory bandwidth. */
    g_autoptr(dev_device) dev = dev_device_load(comm_topology_device_kind(topo), NULL, &error);
    if (!dev)
      return dtsim_cli_fail(cmd, error);
    args.reduce_Bps = dev_stream_Bps(dev) / 3.0;
  }
  g_autoptr(comm_coll_group) group = comm_coll_group_new(topo, NULL, 0);
  uint32_t n = comm_coll_group_size(group);
  /* One rank holds all the data already: there is no time or bandwidth to report. */
  if (n < 2) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT, "--nodes, --devices-per-node: a collective "
                "over 1 rank moves nothing; give 2 or more devices");
    return dtsim_cli_fail(cmd, error);
  }
  if (args.root >= n) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT, "--root: %u is not below the %u ranks",
                args.root, n);
    return dtsim_cli_fail(cmd, error);
  }

  /* Everything is computed before anything is printed, so an error leaves no partial table. */
  g_autofree coll_result *res = g_new0(coll_result, sizes->len);
  for (guint i = 0; i < sizes->len; i++) {
    args.bytes = g_array_index(sizes, uint64_t, i);
    if (!run_one(topo, group, algo, &args, model, trace_path, &res[i], &error))
      return dtsim_cli_fail(cmd, error);
  }

  double factor = comm_coll_busbw_factor(args.op, n);
  const char *model_name = model == COMM_NET_FLOW ? "flow" : "analytic";
  if (!json)
    printf("# %s on %u ranks (%u nodes x %u), %s, %s network, %s model\n",
           comm_coll_op_name(args.op), n, comm_topology_nodes(topo),
           comm_topology_devices_per_node(topo), spec.system, comm_topology_kind(topo),
           model_name);
  if (!json)
    printf("%14s  %-19s %14s %12s %12s %10s\n", "bytes", "algorithm", "time_us", "algbw_GBps",
           "busbw_GBps", "flows");
  for (guint i = 0; i < sizes->len; i++) {
    uint64_t bytes = g_array_index(sizes, uint64_t, i);
    double t_s = sim_time_to_s(res[i].time_ps);
    double algbw = t_s > 0 ? (double)bytes / t_s : 0;
    double busbw = algbw * factor;
    if (!json) {
      printf("%14" G_GUINT64_FORMAT "  %-19s %14.3f %12.3f %12.3f %10" G_GUINT64_FORMAT "\n",
             bytes, res[i].algorithm, t_s * 1e6, algbw / 1e9, busbw / 1e9, res[i].flows);
      continue;
    }
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
#define MEMBER_STR(k, v) (json_builder_set_member_name(b, k), json_builder_add_string_value(b, v))
#define MEMBER_INT(k, v) (json_builder_set_member_name(b, k), json_builder_add_int_value(b, (gint64)(v)))
#define MEMBER_DBL(k, v) (json_builder_set_member_name(b, k), json_builder_add_double_value(b, v))
    MEMBER_STR("op", comm_coll_op_name(args.op));
    MEMBER_STR("algorithm", res[i].algorithm);
    if (bytes > INT64_MAX)
      MEMBER_DBL("bytes", (double)bytes);
    else
      MEMBER_INT("bytes", bytes);
    MEMBER_INT("ranks", n);
    MEMBER_INT("nodes", comm_topology_nodes(topo));
    MEMBER_STR("system", spec.system);
    MEMBER_STR("topology", comm_topology_kind(topo));
    MEMBER_STR("net_model", model_name);
    MEMBER_DBL("time_s", t_s);
    MEMBER_DBL("algbw_Bps", algbw);
    MEMBER_DBL("busbw_Bps", busbw);
    MEMBER_INT("flows", res[i].flows);
    MEMBER_INT("peak_flows", res[i].peak_flows);
    MEMBER_INT("events", res[i].events);
    MEMBER_DBL("sim_wall_s", res[i].wall_s);
#undef MEMBER_STR
#undef MEMBER_INT
#undef MEMBER_DBL
    json_builder_end_object(b);
    g_autoptr(JsonNode) root_node = json_builder_get_root(b);
    g_autofree char *text = json_to_string(root_node, FALSE);
    printf("%s\n", text);
  }
  return 0;
}
