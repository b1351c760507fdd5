/* Several jobs simulated together on one cluster (see jobs.h): each job's plan built alone on
 * its nodes, the plans appended into one task graph on the cluster's devices, one run, a report
 * per job. */
#include "jobs.h"

#include "chrome.h"
#include "faults.h"
#include "linkviews.h"
#include "net_adapter.h"
#include "simulate.h"
#include "strategy.h"
#include "timeline.h"
#include "trainrun_keys.h"
#include "util.h"

#include <string.h>

/* What the run keeps of each job's own plan. */
typedef struct {
  sim_plan *plan;               /* built alone; its graph is copied into the shared one */
  const sim_strategy *strategy;
  sim_costs *costs;             /* NULL for transformer strategies */
  sim_graph_offsets at;         /* where its units, streams and tasks are in the shared graph */
  char note[240];               /* what stragglers did (sim_faults_apply) */
} built_job;

static void built_clear(built_job *b)
{
  sim_plan_free(b->plan);
  sim_costs_free(b->costs);
}

/* The cluster device of a job's device `rank`: the same place in the node the job's node
 * `rank / per_node` was given. */
static uint32_t cluster_device(const sim_job *job, uint32_t rank, uint32_t per_node)
{
  return g_array_index(job->nodes, uint32_t, rank / per_node) * per_node + rank % per_node;
}

/* Builds a job's plan alone on its nodes (the cluster's system, its node count) and appends it
 * to `all`, its units renamed "NAME: ..." and moved onto the cluster's devices and hosts. */
static gboolean build_job(const sim_job *job, comm_net_model net_model, const char *device,
                          uint32_t per_node, sim_plan *all, built_job *b, GError **error)
{
  g_autoptr(comm_topology) alone = sim_scenario_topology(&job->s, error);
  if (!alone)
    return FALSE;
  b->plan = sim_scenario_plan(&job->s, alone, net_model, device, FALSE, &b->strategy, &b->costs,
                              error);
  if (!b->plan)
    return FALSE;
  /* Jobs load with --symmetry off: a plan folded all the same cannot share the cluster. */
  if (b->plan->symmetric || b->plan->fold_pp) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: job %s cannot be simulated device by device, so it cannot share the cluster",
                sim_scenario_where(&job->s, "strategy"), job->name);
    return FALSE;
  }
  if (!sim_faults_apply(&job->s, alone, b->plan, FALSE, 1, 1, b->note, sizeof b->note, error))
    return FALSE;
  g_autofree char *prefix = g_strdup_printf("job %s: ", job->name);
  sim_graph_append(all->graph, b->plan->graph, prefix, &b->at);
  for (guint u = 0; u < b->plan->units->len; u++) {
    sim_unit_info info = g_array_index(b->plan->units, sim_unit_info, u);
    if (info.role == SIM_UNIT_DEVICE)
      info.index = cluster_device(job, info.index, per_node);
    else if (info.role == SIM_UNIT_HOST)
      info.index = g_array_index(job->nodes, uint32_t, info.index);
    else
      g_assert_not_reached();   /* strategies with servers are refused at load */
    g_array_append_val(all->units, info);
  }
  return TRUE;
}

/* A view of the shared plan that measures one job: its probe device, its iterations, its
 * batch (the shared plan's arrays, the job's numbers). */
static sim_plan job_view(const sim_plan *all, const built_job *b, GArray *iteration_end)
{
  sim_plan v = *all;
  const sim_plan *p = b->plan;
  for (guint i = 0; i < p->iteration_end->len; i++) {
    sim_task_id t = g_array_index(p->iteration_end, sim_task_id, i) + b->at.task_base;
    g_array_append_val(iteration_end, t);
  }
  v.iteration_end = iteration_end;
  v.probe_unit = p->probe_unit + b->at.unit_base;
  v.probe_compute = p->probe_compute + b->at.stream_base;
  v.samples_per_iteration = p->samples_per_iteration;
  v.devices = p->devices;
  v.memory_per_device_bytes = p->memory_per_device_bytes;
  v.extra = p->extra;
  v.extra_free = NULL;
  return v;
}

gboolean sim_jobs_simulate(const sim_scenario *cluster, sim_jobs *j, const char *command_line,
                           GError **error)
{
  gint64 t0 = g_get_monotonic_time();
  dt_memory_set_limit(cluster->max_memory);
  if ((cluster->trace && !dt_outfile_check(cluster->trace, "--trace", error)) ||
      (cluster->csv && !dt_outfile_check(cluster->csv, "--csv", error)) ||
      !sim_linkviews_check_outputs(cluster, error))
    return FALSE;
  comm_net_model net_model = cluster->net_model;
  g_autoptr(comm_topology) topo = sim_scenario_topology(cluster, error);
  if (!topo)
    return FALSE;
  j->devices = comm_topology_devices(topo);
  if (!sim_check_net_scale(j->devices, net_model == COMM_NET_FLOW, error))
    return FALSE;
  const char *device = cluster->device ? cluster->device : comm_topology_device_kind(topo);
  uint32_t per_node = comm_topology_devices_per_node(topo);

  g_autoptr(sim_plan) all = sim__plan_new();
  guint n = j->jobs->len;
  g_autofree built_job *built = g_new0(built_job, n);
  gboolean ok = TRUE;
  double reduce_Bps = 0;
  for (guint i = 0; i < n && ok; i++) {
    ok = build_job(j->jobs->pdata[i], net_model, device, per_node, all, &built[i], error);
    /* One device kind: the first job's reduction rate is every job's. */
    if (ok && i == 0)
      reduce_Bps = built[0].costs ? (double)built[0].costs->reduce_Bps : built[0].plan->reduce_Bps;
  }
  g_autoptr(sim_engine) engine = NULL;
  g_autoptr(trace_chrome) trace = NULL;
  g_autoptr(comm_net) net = NULL;
  g_autoptr(sim_exec) exec = NULL;
  g_autoptr(sim_net_adapter) adapter = NULL;
  g_autoptr(sim_linkviews) views = NULL;
  if (!ok)
    goto done;
  all->devices = j->devices;
  all->probe_unit = built[0].plan->probe_unit;
  all->probe_compute = built[0].plan->probe_compute;
#ifndef NDEBUG
  {
    g_autoptr(GError) broken = NULL;
    if (!sim_graph_check(all->graph, &broken))
      g_error("%s", broken->message);
  }
#endif
  engine = sim_engine_new();
  if (cluster->trace) {
    if (!(trace = trace_chrome_new(cluster->trace, error))) {
      ok = FALSE;
      goto done;
    }
    trace_chrome_set_limit(trace, (uint64_t)cluster->trace_limit);
    trace_chrome_set_max_procs(trace, (uint32_t)cluster->trace_procs);
    if (command_line)
      trace_chrome_set_info(trace, "command", command_line);
    trace_chrome_attach(trace, engine);
  }
  net = comm_net_new(engine, topo, net_model);
  exec = sim_exec_new(engine, all->graph);
  adapter = sim_net_adapter_new(net, all, reduce_Bps);
  views = sim_linkviews_attach(cluster, all, FALSE, net, topo, trace != NULL, error);
  if (!views && error && *error) {
    ok = FALSE;
    goto done;
  }
  sim_exec_set_comm(exec, &sim_net_adapter_ops, adapter);
  if (!sim_exec_run(exec, error) || !sim_check_clock(engine, error)) {
    ok = FALSE;
    goto done;
  }
  sim_engine_finish(engine);
  j->events = sim_engine_events(engine);
  for (guint i = 0; i < n && ok; i++) {
    sim_job *job = j->jobs->pdata[i];
    built_job *b = &built[i];
    g_autoptr(GArray) ends = g_array_new(FALSE, FALSE, sizeof(sim_task_id));
    sim_plan view = job_view(all, b, ends);
    sim_report *r = &job->report;
    sim_report_measure(r, &view, exec);
    g_strlcpy(r->symmetry_note, b->note, sizeof r->symmetry_note);
    r->events = j->events;
    g_strlcpy(r->device, device, sizeof r->device);
    r->memory_capacity_bytes = b->costs ? b->costs->memory_capacity_bytes
                                        : b->plan->memory_capacity_bytes;
    if (b->strategy->report)
      b->strategy->report(&view, r);
    ok = sim_check_strict(&job->s, r, error) && sim_trainrun_report(&job->s, r, error);
  }
  if (ok && views) {
    g_autofree char *title = g_strdup_printf("%u jobs, %u devices, %s", n, j->devices,
                                             comm_topology_kind(topo));
    ok = sim_linkviews_finish(views, trace, engine, sim_exec_makespan(exec), title, error);
  }
  if (ok && trace) {
    ok = trace_chrome_close(trace, error);
    if (ok && trace_chrome_hidden_procs(trace))
      g_printerr("dtsim: note: the trace shows the first %" G_GINT64_FORMAT " devices (and "
                 "links, hosts) of %u; --trace-devices N shows more\n", cluster->trace_procs,
                 j->devices);
    if (ok && trace_chrome_truncated(trace))
      g_printerr("dtsim: warning: the trace was cut after %" G_GUINT64_FORMAT " events to stay "
                 "readable; --trace-limit N raises the limit, --iterations 1 shortens it\n",
                 trace_chrome_events(trace));
  }
  if (ok && cluster->csv)
    ok = trace_timeline_write_csv(cluster->csv, all->graph, exec, error);
  j->sim_wall_s = (double)(g_get_monotonic_time() - t0) * 1e-6;
  for (guint i = 0; i < n; i++)
    ((sim_job *)j->jobs->pdata[i])->report.sim_wall_s = j->sim_wall_s;
done:
  /* The executor and the network read the engine and the graph: freed first. */
  g_clear_pointer(&views, sim_linkviews_free);
  g_clear_pointer(&adapter, sim_net_adapter_free);
  g_clear_pointer(&exec, sim_exec_free);
  g_clear_pointer(&net, comm_net_free);
  for (guint i = 0; i < n; i++)
    built_clear(&built[i]);
  return ok;
}

/* "0-3,8,10-11": the nodes of a job, runs of consecutive numbers as ranges. */
static char *node_ranges(const GArray *nodes)
{
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < nodes->len;) {
    uint32_t a = g_array_index(nodes, uint32_t, i), b = a;
    guint k = i + 1;
    while (k < nodes->len && g_array_index(nodes, uint32_t, k) == b + 1)
      b = g_array_index(nodes, uint32_t, k++);
    g_string_append_printf(s, "%s%u", s->len ? "," : "", a);
    if (b > a)
      g_string_append_printf(s, "-%u", b);
    i = k;
  }
  return g_string_free(s, FALSE);
}

void sim_jobs_print(FILE *out, const sim_scenario *cluster, const sim_jobs *j)
{
  if (cluster->json) {
    g_autoptr(GString) o = g_string_new("{\"jobs\":[");
    for (guint i = 0; i < j->jobs->len; i++) {
      const sim_job *job = j->jobs->pdata[i];
      g_autoptr(GString) extra = g_string_new("\"name\":");
      dt_json_string(extra, job->name);
      g_string_append(extra, ",\"nodes\":[");
      for (guint k = 0; k < job->nodes->len; k++)
        g_string_append_printf(extra, "%s%u", k ? "," : "", g_array_index(job->nodes, uint32_t, k));
      g_string_append(extra, "],\"model\":");
      dt_json_string(extra, job->s.model);
      g_string_append(extra, ",\"strategy\":");
      dt_json_string(extra, sim_scenario_strategy_name(&job->s));
      if (job->report.transformer)
        g_string_append_printf(extra, ",\"global_batch\":%" G_GUINT64_FORMAT,
                               job->report.samples_per_iteration);
      else
        g_string_append_printf(extra, ",\"batch\":%" G_GINT64_FORMAT, job->s.batch);
      if (i)
        g_string_append_c(o, ',');
      sim_report_append_json(o, &job->report, extra->str);
    }
    g_string_append_printf(o, "],\"devices\":%u,\"events\":%" G_GUINT64_FORMAT ",\"sim_wall_s\":",
                           j->devices, j->events);
    dt_json_double(o, j->sim_wall_s);
    g_string_append(o, "}\n");
    fputs(o->str, out);
    return;
  }
  for (guint i = 0; i < j->jobs->len; i++) {
    const sim_job *job = j->jobs->pdata[i];
    g_autofree char *nodes = node_ranges(job->nodes);
    g_autofree char *title = g_strdup_printf(
        "job %s: %s, %s, %u devices on node%s %s of %" G_GINT64_FORMAT " (%s, %s)", job->name,
        job->s.model, sim_scenario_strategy_name(&job->s), job->report.devices,
        job->nodes->len == 1 ? "" : "s", nodes, cluster->nodes, cluster->system,
        cluster->topology ? cluster->topology : "the system's topology");
    if (i)
      fputc('\n', out);
    sim_report_print_table(out, &job->report, title);
  }
}
