/* One collective on a modeled cluster: the `dtsim collective` keys and the run of one size on a
 * fresh engine and network (see collective.h). */
#include "collective.h"

#include "chrome.h"
#include "devices.h"
#include "simulate.h"
#include "util.h"

#include <math.h>

SIM_CHOICES_OF(comm_coll_op_name, comm_coll_op)
static const sim_key collective_keys[] = {
    {"op", SIM_KEY_CHOICE, SIM_KEY_OFF(coll_op), "allreduce",
     .choice_name = comm_coll_op_name_choice, .n_choices = COMM_COLL_N_OPS,
     .commands = SIM_OPTS_COLLECTIVE, .help = "the collective operation"},
    {"bytes", SIM_KEY_SIZE_LIST, SIM_KEY_OFF(coll_bytes), .commands = SIM_OPTS_COLLECTIVE,
     .arg = "SIZES", .help = "size (nccl-tests meaning), a list a,b,c or a doubling range 1K..1G"},
    {"algorithm", SIM_KEY_REF, SIM_KEY_OFF(coll_algorithm), "auto",
     .resolve = sim_algorithm_resolve, .commands = SIM_OPTS_COLLECTIVE, .arg = "NAME",
     .help = "algorithm (dtsim list algorithms)"},
    {"reduce-GBps", SIM_KEY_DOUBLE, SIM_KEY_OFF(reduce_GBps), "-1", -1, 1000000,
     .commands = SIM_OPTS_COLLECTIVE, .arg = "X",
     .help = "reduction rate on the device, 1e9 bytes/s (-1: the device's streaming memory "
             "bandwidth / 3; 0: free)"},
    {"chunk", SIM_KEY_SIZE, SIM_KEY_OFF(chunk_bytes), NULL, 1, INT64_MAX,
     .commands = SIM_OPTS_COLLECTIVE, .arg = "SIZE",
     .help = "pipeline chunk of chains and trees (default: best for the size)"},
    {"launch-us", SIM_KEY_DOUBLE, SIM_KEY_OFF(launch_us), "0", 0, 1000000000000,
     .commands = SIM_OPTS_COLLECTIVE, .arg = "X",
     .help = "software cost before the first transfer, microseconds"},
    {"step-us", SIM_KEY_DOUBLE, SIM_KEY_OFF(step_us), "0", 0, 1000000000000,
     .commands = SIM_OPTS_COLLECTIVE, .arg = "X",
     .help = "software cost of every step a rank takes part in, microseconds"},
    {"root", SIM_KEY_INT, SIM_KEY_OFF(root), "0", 0, SIM_MAX_DEVICES,
     .commands = SIM_OPTS_COLLECTIVE, .arg = "R", .help = "root rank of broadcast and reduce"},
    {"steps", SIM_KEY_FLAG, SIM_KEY_OFF(steps), .commands = SIM_OPTS_COLLECTIVE,
     .help = "run rings step by step instead of one pipelined flow per rank"},
};
const sim_key_group sim_keys_collective = SIM_KEY_GROUP("collective", 0, collective_keys);

static void on_coll_done(sim_engine *engine, void *user)
{
  (void)engine;
  *(gboolean *)user = TRUE;
}

/* The software-cost keys an algorithm with its own costs (nccl) would ignore: refused, naming
 * the key, when the algorithm of any of the sizes is such. */
static gboolean refuse_ignored_costs(const sim_scenario *s, const sim_collective *c,
                                     GError **error)
{
  static const char *const keys[] = {"launch-us", "step-us", "reduce-GBps", "chunk"};
  for (guint i = 0; i < s->coll_bytes->len; i++) {
    comm_coll_args args = c->args;
    args.bytes = g_array_index(s->coll_bytes, uint64_t, i);
    const comm_coll_algorithm *a = comm_coll_resolve(s->coll_algorithm, c->group, &args);
    if (!comm_coll_algorithm_own_costs(a))
      continue;
    for (gsize k = 0; k < G_N_ELEMENTS(keys); k++)
      if (sim_scenario_given(s, keys[k])) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "%s: changes nothing under %s (NCCL's own costs); pick another --algorithm",
                    sim_scenario_where(s, keys[k]), comm_coll_algorithm_name(a));
        return FALSE;
      }
  }
  return TRUE;
}

gboolean sim_collective_prepare(const sim_scenario *s, sim_collective *c, GError **error)
{
  memset(c, 0, sizeof *c);
  if (!s->coll_bytes) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--bytes is required");
    return FALSE;
  }
  for (guint i = 0; i < s->coll_bytes->len; i++)
    if (g_array_index(s->coll_bytes, uint64_t, i) == 0) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: a collective of 0 bytes moves nothing; give 1 byte or more",
                  sim_scenario_where(s, "bytes"));
      return FALSE;
    }
  if (!comm_coll_algorithm_supports(s->coll_algorithm, s->coll_op)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' does not implement %s",
                sim_scenario_where(s, "algorithm"), comm_coll_algorithm_name(s->coll_algorithm),
                comm_coll_op_name(s->coll_op));
    return FALSE;
  }
  if (s->trace && !dt_outfile_check(s->trace, sim_scenario_where(s, "trace"), error))
    return FALSE;
  if (s->trace && s->coll_bytes->len > 1) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: needs a single --bytes value",
                sim_scenario_where(s, "trace"));
    return FALSE;
  }
  c->topology = sim_scenario_topology(s, error);
  if (!c->topology)
    return FALSE;
  if (!sim_check_net_scale(comm_topology_devices(c->topology), s->net_model == COMM_NET_FLOW,
                           error))
    return FALSE;
  const char *device = s->device ? s->device : comm_topology_device_kind(c->topology);
  g_autoptr(dev_device) dev = sim_scenario_device(s, device, NULL, error);
  if (!dev)
    return FALSE;
  if (!dev_check_precision(dev, s->precision, sim_scenario_where(s, "precision"), error))
    return FALSE;
  c->args = (comm_coll_args){
      .op = s->coll_op,
      .root = (uint32_t)s->root,
      .chunk_bytes = s->chunk_bytes,
      .form = s->steps ? COMM_COLL_FORM_STEPS : COMM_COLL_FORM_PIPELINED,
      .launch_ps = sim_time_from_s(s->launch_us * 1e-6),
      .step_ps = sim_time_from_s(s->step_us * 1e-6),
      /* As `dtsim run` does: a reduction reads two operands and writes one result, so it runs
       * at a third of the device's streaming memory bandwidth. */
      .reduce_Bps = s->reduce_GBps >= 0 ? s->reduce_GBps * 1e9 : dev_stream_Bps(dev) / 3.0,
  };
  c->group = comm_coll_group_new(c->topology, NULL, 0);
  if (!refuse_ignored_costs(s, c, error))
    return FALSE;
  uint32_t n = comm_coll_group_size(c->group);
  /* One rank holds all the data already: there is no time or bandwidth to report. */
  if (n < 2) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s, %s: a collective over 1 rank moves "
                "nothing; give 2 or more devices", sim_scenario_where(s, "nodes"),
                sim_scenario_where(s, "devices-per-node"));
    return FALSE;
  }
  if (c->args.root >= n) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %u is not below the %u ranks",
                sim_scenario_where(s, "root"), c->args.root, n);
    return FALSE;
  }
  return TRUE;
}

void sim_collective_clear(sim_collective *c)
{
  g_clear_pointer(&c->group, comm_coll_group_free);
  g_clear_pointer(&c->topology, comm_topology_free);
}

gboolean sim_collective_run(const sim_scenario *s, const sim_collective *c, uint64_t bytes,
                            sim_collective_result *res, GError **error)
{
  comm_coll_args args = c->args;
  args.bytes = bytes;
  g_autoptr(sim_engine) engine = sim_engine_new();
  g_autoptr(trace_chrome) trace = NULL;
  if (s->trace) {
    trace = trace_chrome_new(s->trace, error);
    if (!trace)
      return FALSE;
    trace_chrome_set_info(trace, "command",
                          c->command_line ? c->command_line : "dtsim collective");
    trace_chrome_attach(trace, engine);
  }
  g_autoptr(comm_net) net = comm_net_new(engine, c->topology, s->net_model);
  g_autoptr(comm_coll) coll = comm_coll_new(net, c->group, s->coll_algorithm, &args, error);
  if (!coll)
    return FALSE;
  /* What ran: the algorithm, and for nccl its protocol and channels ("nccl:ring/LL128/16"). */
  const char *used = g_intern_string(comm_coll_label(coll));
  uint64_t span = 0;
  g_autofree char *span_name = g_strdup_printf("%s %s", comm_coll_op_name(args.op), used);
  if (trace) {
    sim_proc_id proc = sim_engine_add_proc(engine, SIM_PROC_OTHER, "collective", -1);
    sim_track_id track = sim_engine_add_track(engine, proc, used, 0);
    span = sim_engine_span_begin(engine, track, span_name, "comm", args.bytes, 0);
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
  res->bytes = bytes;
  res->time_ps = comm_coll_end_time(coll) - comm_coll_start_time(coll);
  res->flows = comm_coll_flows(coll);
  res->events = sim_engine_events(engine);
  res->peak_flows = comm_net_peak_flows(net);
  res->wall_s = sim_engine_wall_s(engine);
  res->algorithm = used;   /* registry strings are static */
  return TRUE;
}
