/* Views of link load (see linkviews.h; docs/faults.md, "Link load"). */
#include "linkviews.h"

#include "linkload.h"
#include "util.h"

/* Most (flow, link) records kept for the views over time: 16 M records of 32 bytes. */
#define SIM_LINKVIEWS_MAX_RECORDS (UINT64_C(1) << 24)

static const sim_key links_keys[] = {
    {"trace-links", SIM_KEY_INT, SIM_KEY_OFF(trace_links), "8", 0, 1024,
     .commands = SIM_OPTS_RUN, .arg = "N",
     .help = "with --trace: the rate of the N busiest links over time as counters"},
    {"link-heatmap", SIM_KEY_STRING, SIM_KEY_OFF(link_heatmap), .commands = SIM_OPTS_RUN,
     .arg = "FILE.svg",
     .help = "heat map of link utilization over time by tier (NVLink, PCIe, rail or leaf, "
             "spine) of an unfolded run"},
};
const sim_key_group sim_keys_links = SIM_KEY_GROUP("links", 0, links_keys);

struct sim_linkviews {
  const sim_scenario *s;
  const comm_topology *topo;
  comm_net *net;
  trace_linkload *load;
  gboolean counters;
};

gboolean sim_linkviews_check(const sim_scenario *s, GError **error)
{
  if (sim_scenario_given(s, "trace-links") && !s->trace) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: the busiest links are counters of a trace: "
                "give --trace FILE", sim_scenario_where(s, "trace-links"));
    return FALSE;
  }
  return TRUE;
}

gboolean sim_linkviews_check_outputs(const sim_scenario *s, GError **error)
{
  return !s->link_heatmap || dt_outfile_check(s->link_heatmap, "--link-heatmap", error);
}

sim_linkviews *sim_linkviews_attach(const sim_scenario *s, const sim_plan *plan, gboolean folded,
                                    comm_net *net, const comm_topology *topo, gboolean tracing,
                                    GError **error)
{
  gboolean counters = tracing && s->trace_links > 0 && s->net_model == COMM_NET_FLOW;
  if (!counters && !s->link_heatmap)
    return NULL;
  if (s->link_heatmap && s->net_model != COMM_NET_FLOW) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: the analytic network has no flows on "
                "links; use --net-model flow", sim_scenario_where(s, "link-heatmap"));
    return NULL;
  }
  if (s->link_heatmap && (folded || plan->symmetric)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: the run is folded (one device stands for "
                "many, and collectives after the first of each kind are timed without flows); %s",
                sim_scenario_where(s, "link-heatmap"),
                folded ? "--strategy 3d is always folded" : "give --symmetry off");
    return NULL;
  }
  sim_linkviews *v = g_new0(sim_linkviews, 1);
  v->s = s;
  v->topo = topo;
  v->net = net;
  v->counters = counters;
  v->load = trace_linkload_new((uint32_t)comm_topology_links(topo), SIM_LINKVIEWS_MAX_RECORDS);
  comm_net_set_flow_observer(net, trace_linkload_flow, v->load);
  return v;
}

static char *link_name(void *user, uint32_t link)
{
  return comm_topology_link_name(user, link);
}

static const char *link_tier(void *user, uint32_t link)
{
  return comm_topology_link_tier(user, link);
}

static double link_Bps(void *user, uint32_t link)
{
  return comm_topology_link_Bps(user, link);
}

gboolean sim_linkviews_finish(sim_linkviews *v, trace_chrome *trace, sim_engine *engine,
                              sim_time_ps end_ps, const char *title, GError **error)
{
  comm_net_set_flow_observer(v->net, NULL, NULL);
  trace_link_info info = {link_name, link_tier, link_Bps, (void *)v->topo};
  if (v->counters && trace) {
    g_autofree uint32_t *busiest = g_new(uint32_t, (gsize)v->s->trace_links);
    uint32_t n = trace_linkload_busiest(v->load, (uint32_t)v->s->trace_links, busiest);
    trace_linkload_counters(v->load, trace, engine, "busiest links", busiest, n, &info);
  }
  if (v->s->link_heatmap && end_ps > 0 &&
      !trace_linkload_write_svg(v->load, v->s->link_heatmap, title, end_ps, 60, 24, &info, error))
    return FALSE;
  if (trace_linkload_truncated(v->load))
    g_printerr("dtsim: note: link load recorded for the first %" G_GUINT64_FORMAT " (flow, link) "
               "pairs only; the busiest links and the heat map are partial\n",
               SIM_LINKVIEWS_MAX_RECORDS);
  return TRUE;
}

void sim_linkviews_free(sim_linkviews *v)
{
  if (!v)
    return;
  if (v->net)
    comm_net_set_flow_observer(v->net, NULL, NULL);
  trace_linkload_free(v->load);
  g_free(v);
}
