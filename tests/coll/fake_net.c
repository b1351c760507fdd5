/* The test double of comm_net.h described in fake_net.h. */
#include "fake_net.h"
#include "comm_internal.h"

struct comm_topology {
  fake_topology_spec s;
  comm__link_class intra, inter;   /* the spec's figures as link classes (comm__link_class_of) */
};

struct comm_net {
  sim_engine *engine;
  const comm_topology *topo;
  comm_net_model model;
  gboolean serialise;
  GHashTable *port_free;   /* endpoint -> sim_time_ps* when its ingress is next idle */
  uint64_t active, peak;
};

typedef struct {
  comm_net *net;
  comm_done_fn done;
  void *user;
} fake_msg;

comm_topology *fake_topology_new(const fake_topology_spec *spec)
{
  comm_topology *t = g_new0(comm_topology, 1);
  t->s = *spec;
  t->intra = (comm__link_class){(double)spec->intra_Bps, spec->intra_latency_ps, "nvswitch", 0, 0};
  t->inter = (comm__link_class){(double)spec->inter_Bps, spec->inter_latency_ps, "net", 0, 0};
  return t;
}

comm_topology *comm_topology_build(const comm_cluster_spec *spec, GError **error)
{
  fake_topology_spec s = {spec->nodes, spec->devices_per_node ? spec->devices_per_node : 8,
                          spec->extra_nodes, SIM_NS(500), 100000000000ULL, SIM_US(2),
                          12500000000ULL};
  return fake_topology_new(&s);
}

void comm_topology_free(comm_topology *topo)
{
  g_free(topo);
}

uint32_t comm_topology_nodes(const comm_topology *t) { return t->s.nodes; }
uint32_t comm_topology_devices_per_node(const comm_topology *t) { return t->s.devices_per_node; }
uint32_t comm_topology_devices(const comm_topology *t)
{
  return t->s.nodes * t->s.devices_per_node;
}
uint32_t comm_topology_node_of(const comm_topology *t, uint32_t rank)
{
  return rank / t->s.devices_per_node;
}
comm_ep comm_topology_device(const comm_topology *t, uint32_t rank) { return rank; }
comm_ep comm_topology_host(const comm_topology *t, uint32_t node, uint32_t socket)
{
  return comm_topology_devices(t) + node;
}
uint32_t comm_topology_sockets(const comm_topology *t) { return 1; }
uint32_t comm_topology_extra_nodes(const comm_topology *t) { return t->s.extra_nodes; }
const char *comm_topology_device_kind(const comm_topology *t) { return "fake"; }
const char *comm_topology_endpoint_name(const comm_topology *t, comm_ep ep) { return "fake"; }

static uint32_t ep_node(const comm_topology *t, comm_ep ep)
{
  uint32_t devs = comm_topology_devices(t);
  return ep < devs ? ep / t->s.devices_per_node : ep - devs;
}

sim_time_ps comm_topology_p2p_time(const comm_topology *t, comm_ep src, comm_ep dst,
                                   uint64_t bytes)
{
  if (src == dst)
    return 0;
  gboolean intra = ep_node(t, src) == ep_node(t, dst);
  sim_time_ps lat = intra ? t->s.intra_latency_ps : t->s.inter_latency_ps;
  return lat + sim_time_for_work((double)bytes, (double)(intra ? t->s.intra_Bps : t->s.inter_Bps));
}

comm_net *comm_net_new(sim_engine *engine, const comm_topology *topo, comm_net_model model)
{
  comm_net *n = g_new0(comm_net, 1);
  n->engine = engine;
  n->topo = topo;
  n->model = model;
  n->port_free = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
  return n;
}

void comm_net_free(comm_net *net)
{
  if (net == NULL)
    return;
  g_hash_table_destroy(net->port_free);
  g_free(net);
}

comm_net_model comm_net_get_model(const comm_net *net) { return net->model; }
const comm_topology *comm_net_topology(const comm_net *net) { return net->topo; }
sim_engine *comm_net_engine(const comm_net *net) { return net->engine; }
uint64_t comm_net_active_flows(const comm_net *net) { return net->active; }
uint64_t comm_net_peak_flows(const comm_net *net) { return net->peak; }

void fake_net_set_port_serialisation(comm_net *net, gboolean on)
{
  net->serialise = on;
}

static void on_arrive(sim_engine *engine, void *data, uint64_t arg)
{
  fake_msg *m = data;
  m->net->active--;
  comm_done_fn done = m->done;
  void *user = m->user;
  g_free(m);
  done(engine, user);
}

void comm_net_send(comm_net *net, comm_ep src, comm_ep dst, uint64_t bytes, comm_done_fn done,
                   void *user)
{
  fake_msg *m = g_new(fake_msg, 1);
  *m = (fake_msg){net, done, user};
  net->active++;
  net->peak = MAX(net->peak, net->active);
  sim_time_ps now = sim_engine_now(net->engine);
  sim_time_ps t = comm_topology_p2p_time(net->topo, src, dst, bytes);
  sim_time_ps at = now + t;
  if (net->serialise && src != dst) {
    /* The receiver's port moves one transfer's bytes at a time; latency overlaps. */
    sim_time_ps lat = comm_topology_p2p_time(net->topo, src, dst, 0);
    sim_time_ps *free_at = g_hash_table_lookup(net->port_free, GUINT_TO_POINTER(dst + 1));
    if (free_at == NULL) {
      free_at = g_new0(sim_time_ps, 1);
      g_hash_table_insert(net->port_free, GUINT_TO_POINTER(dst + 1), free_at);
    }
    sim_time_ps begin = MAX(now, *free_at);
    *free_at = begin + (t - lat);
    at = *free_at + lat;
  }
  sim_engine_schedule_at(net->engine, at, on_arrive, m, 0);
}

/* What the "nccl" algorithm and the closed forms ask of the topology: the fake has no links of
 * its own, so every route is one link of the spec's intra- or inter-node figures, a link of its
 * own for every ordered pair (no contention, as in the fake's transfers), and no NVLink or
 * switch. */
uint32_t comm__route_max(const comm_topology *t) { return 1; }
uint64_t comm_topology_links(const comm_topology *t) { return UINT64_C(2) << 30; }
uint32_t comm__route(const comm_topology *t, comm_ep src, comm_ep dst, uint32_t *out)
{
  if (src == dst)
    return 0;
  g_assert(src < 32768 && dst < 32768);
  out[0] = 2 * (src * 32768u + dst) + (ep_node(t, src) == ep_node(t, dst) ? 0 : 1);
  return 1;
}
const comm__link_class *comm__link_class_of(const comm_topology *t, uint32_t dlink)
{
  return (dlink & 1) ? &t->inter : &t->intra;
}
uint32_t comm__ep_nic(const comm_topology *t, comm_ep ep) { return 0; }
uint32_t comm__nics_per_node(const comm_topology *t) { return 1; }
uint32_t comm_topology_nvlinks(const comm_topology *t, uint32_t a, uint32_t b) { return 0; }
comm_ep comm_topology_nvswitch(const comm_topology *t, uint32_t node) { return UINT32_MAX; }
sim_time_ps comm_topology_route_latency(const comm_topology *t, comm_ep src, comm_ep dst)
{
  return comm_topology_p2p_time(t, src, dst, 0);
}
const comm_system *comm_topology_system(const comm_topology *t) { return NULL; }
/* Link views and failed links have nothing to show on the fake network. */
const char *comm_topology_kind(const comm_topology *t) { return "fake"; }
char *comm_topology_link_name(const comm_topology *t, uint32_t dlink) { return g_strdup("fake"); }
const char *comm_topology_link_tier(const comm_topology *t, uint32_t dlink) { return "network"; }
double comm_topology_link_Bps(const comm_topology *t, uint32_t dlink)
{
  return comm__link_class_of(t, dlink)->Bps;
}
uint32_t comm_topology_links_down(const comm_topology *t) { return 0; }
void comm_net_set_flow_observer(comm_net *net, comm_flow_observer_fn fn, void *user) {}
