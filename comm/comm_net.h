/* The cluster and its network: topology built from catalog presets, and the network model that
 * moves bytes between endpoints as engine events.
 *
 * Endpoints are the places bytes start and end: devices (by global rank), host CPU sockets,
 * and the extra nodes that hold dedicated parameter servers. Ranks are numbered node-major:
 * rank = node * devices_per_node + local_index.
 *
 * Two models share this interface. COMM_NET_FLOW: every transfer is a flow on its route;
 * concurrent flows share each link max-min fairly, recomputed when a flow starts or ends.
 * COMM_NET_ANALYTIC: each transfer takes its closed-form idle-network time (no contention),
 * one event per transfer. On an uncontended pattern the two agree to rounding. */
#ifndef DTSIM_COMM_NET_H
#define DTSIM_COMM_NET_H

#include <glib.h>
#include <stdint.h>

#include "engine.h"

typedef struct comm_topology comm_topology;
typedef struct comm_net comm_net;
typedef uint32_t comm_ep;

typedef enum { COMM_NET_FLOW, COMM_NET_ANALYTIC } comm_net_model;

/* ---- Catalog descriptors (immutable data read from comm/catalog; see docs/network.md) ---- */

/* A fabric or network: one link's bandwidth and latency, as the catalog file gives them. */
typedef struct {
  char *name;                 /* catalog name, or the path for a user file */
  char *path;                 /* file it was read from */
  char *description;
  gboolean inter;             /* scope = inter (between nodes) */
  double bandwidth_GBps;      /* per link, per direction, 1e9 bytes/s */
  double efficiency;          /* usable fraction of bandwidth_GBps */
  double latency_ns;          /* one hop */
  double nic_bandwidth_GBps;  /* NIC-to-first-switch link (inter networks) */
  uint32_t links_per_device;  /* NVLink ports per device (intra fabrics) */
  uint64_t small_message_bytes;    /* messages of fewer bytes pay small_message_latency_ns */
  double small_message_latency_ns; /* per link, <= latency_ns (eager protocols); 0 bytes: none */
  uint32_t switch_radix;      /* ports per switch (inter networks) */
  double nvls_efficiency;     /* NVLink SHARP (switch multicast and reduction): its throughput
                               * as a fraction of the ports' line rate; 0: the switch has none */
  gboolean collnet_sharp;     /* inter networks: the switches reduce in the network (SHARP),
                               * NCCL's CollNet */
  gboolean in_order_writes;   /* inter networks: RDMA writes land in order (default yes), as
                               * NCCL's LL and LL128 need; no: NCCL runs Simple across nodes */
} comm_fabric;

/* Loads fabric `name` (catalog name or INI path); `what` names the option or key in errors. */
comm_fabric *comm_fabric_load(const char *name, const char *what, GError **error);
void comm_fabric_free(comm_fabric *fabric);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(comm_fabric, comm_fabric_free)

/* A node preset. Fabrics named in the file are loaded (or taken from inline groups). */
typedef struct {
  char *name;
  char *path;
  char *description;
  char *device;               /* devices/catalog name */
  char *layout;               /* nvlink-hybrid-cube | nvswitch | pcie-tree | single | host */
  char *topology;             /* default inter-node topology */
  char *nvlink_pairs;         /* explicit wiring "A-B:N,...", or NULL */
  uint32_t devices_per_node;
  uint32_t nics_per_node;
  uint32_t sockets;
  uint32_t pcie_switches_per_socket;
  double socket_link_GBps;    /* per direction, 1e9 bytes/s */
  double socket_link_latency_ns;
  uint32_t nvlink_domain_nodes;   /* nvswitch layout: consecutive nodes whose devices share one
                                   * NVLink domain (GB200 NVL72: 18 trays of 4); 0 or 1: a node */
  double switch_GBps;         /* nvswitch layout: what the switch carries in total, all flows
                               * through it in both directions together (1e9 bytes/s); 0:
                               * non-blocking */
  /* Peer-to-peer as the hardware allows it (docs/nccl.md, "Peer-to-peer paths"). */
  uint8_t p2p_level;          /* comm_path_class up to which GPUs use PCIe peer-to-peer (NCCL's
                               * P2P level; default PXB); beyond it a bounce through host memory */
  gboolean gpudirect_rdma;    /* the NICs read and write GPU memory (up to PXB, NCCL's default
                               * GDR level); otherwise network traffic is staged in host memory */
  double host_memory_GBps;    /* per socket, 1e9 bytes/s; 0: not a constraint */
  gboolean nvlink_forwarding; /* GPUs without an NVLink between them reach each other over two
                               * NVLink hops through a third GPU (NCCL 2's PATH_NVL through an
                               * intermediate GPU; default yes); no: over PCIe and the host, as
                               * NCCL 1 and the libraries of 2016-2017 did */
  /* Rails (docs/network.md, docs/nccl.md "Rails"). */
  gboolean rail_optimized;    /* fat tree: NIC k of every node on the leaf of rail k */
  gboolean pxn;               /* NCCL's PXN: a send leaves through the NIC of the receiver's rail,
                               * reached over NVLink through the GPU beside it (default yes) */
  comm_fabric *intra;         /* NULL when the layout has no device-to-device fabric */
  comm_fabric *inter;
  comm_fabric *pcie;
} comm_system;

/* NCCL's classes of a path inside a node (its PATH_* types), best first: NVLink only; one PCIe
 * switch; several PCIe switches; through a CPU's root complex; across the socket link. COMM_PATH_NET:
 * between nodes. */
typedef enum {
  COMM_PATH_LOC,
  COMM_PATH_NVL,
  COMM_PATH_PIX,
  COMM_PATH_PXB,
  COMM_PATH_PHB,
  COMM_PATH_SYS,
  COMM_PATH_NET,
} comm_path_class;

comm_system *comm_system_load(const char *name, const char *what, GError **error);
void comm_system_free(comm_system *system);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(comm_system, comm_system_free)

/* Called once when a transfer (or a collective, see comm/coll) has fully arrived. */
typedef void (*comm_done_fn)(sim_engine *engine, void *user);

/* ---- Topology ---------------------------------------------------------------------------- */

/* A link named by its two vertices as traces show them ("node0/nic1", "leaf3", "spine0",
 * "switch"), for --link-down. */
typedef struct {
  char a[64], b[64];
} comm_link_name;

/* What the user asked for; NULL or 0 fields take the preset's value. */
typedef struct {
  const char *system;           /* system preset name or INI path (required) */
  uint32_t nodes;               /* >= 1 */
  uint32_t devices_per_node;    /* 0: the preset's */
  const char *intra;            /* intra-node fabric name or INI path */
  const char *inter;            /* inter-node network name or INI path */
  const char *topology;         /* "switch", "fat-tree[:OVERSUB]", "rail[:OVERSUB]", ... */
  uint32_t extra_nodes;         /* nodes without devices (dedicated parameter servers) */
  /* Where system, intra and inter were given, for messages ("--intra" or "FILE:LINE: [scenario]
   * intra"); NULL: the option. */
  const char *system_where, *intra_where, *inter_where;
  /* Failed links (--link-down): routes avoid them; a cluster they cut in two is refused. */
  const comm_link_name *links_down;
  uint32_t n_links_down;
  const char *links_down_where;   /* how messages name them; NULL: "--link-down" */
  const char *devices_per_node_where;   /* NULL: --devices-per-node */
} comm_cluster_spec;

comm_topology *comm_topology_build(const comm_cluster_spec *spec, GError **error);
void comm_topology_free(comm_topology *topo);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(comm_topology, comm_topology_free)

uint32_t comm_topology_nodes(const comm_topology *topo);          /* worker nodes */
uint32_t comm_topology_devices_per_node(const comm_topology *topo);
uint32_t comm_topology_devices(const comm_topology *topo);        /* total ranks */
uint32_t comm_topology_node_of(const comm_topology *topo, uint32_t rank);
comm_ep comm_topology_device(const comm_topology *topo, uint32_t rank);
/* Host CPU socket `socket` of worker node `node` (or of extra node nodes + i). */
comm_ep comm_topology_host(const comm_topology *topo, uint32_t node, uint32_t socket);
uint32_t comm_topology_sockets(const comm_topology *topo);
/* The device catalog name the preset puts in its nodes (e.g. "v100-sxm2-16gb"). */
const char *comm_topology_device_kind(const comm_topology *topo);
const char *comm_topology_endpoint_name(const comm_topology *topo, comm_ep ep);
/* The name of directed link `dlink` as "FROM-TO" (vertex names as above, switches of the
 * network as "switch", "leaf3", "spine0", "router5"; a switch's or a memory's own capacity as
 * "node0/nvswitch (switch)", "node0/cpu0 (memory)"). Newly allocated. */
char *comm_topology_link_name(const comm_topology *topo, uint32_t dlink);
/* The tier of directed link `dlink`, for plots: "nvlink" (NVLink, NVSwitch), "pcie", "host"
 * (socket links, memory), a NIC's cable "leaf" (fat tree), "rail" (fat tree in rails) or "nic"
 * (other networks), "spine" (leaf to spine) or "network" (ring, torus, dragonfly links). */
const char *comm_topology_link_tier(const comm_topology *topo, uint32_t dlink);
/* Its capacity, bytes/s (after the fabric's efficiency). */
double comm_topology_link_Bps(const comm_topology *topo, uint32_t dlink);
/* Undirected links that are down (--link-down). */
uint32_t comm_topology_links_down(const comm_topology *topo);
/* Closed-form time of `bytes` from src to dst on an idle network: the sum of per-hop latencies
 * (each link's small-message latency when `bytes` is below its fabric's small_message_bytes)
 * plus bytes over the route's bottleneck bandwidth. 0 bytes gives the route's latency for
 * large messages. */
sim_time_ps comm_topology_p2p_time(const comm_topology *topo, comm_ep src, comm_ep dst,
                                   uint64_t bytes);
/* Links on the route from src to dst (0 when src == dst). */
uint32_t comm_topology_hops(const comm_topology *topo, comm_ep src, comm_ep dst);
/* Bottleneck bandwidth of the route in bytes/s (0 when src == dst), and its total latency for
 * large messages (at least every link's small_message_bytes). */
double comm_topology_route_Bps(const comm_topology *topo, comm_ep src, comm_ep dst);
sim_time_ps comm_topology_route_latency(const comm_topology *topo, comm_ep src, comm_ep dst);
/* The extra (device-less) nodes of the spec, and the resolved presets in use. */
uint32_t comm_topology_extra_nodes(const comm_topology *topo);
const comm_system *comm_topology_system(const comm_topology *topo);
/* The inter-node topology in use, as given ("fat-tree:2") or the preset's default. */
const char *comm_topology_kind(const comm_topology *topo);
/* The NVSwitch of worker node `node` as an endpoint (flows to and from it model NVLink SHARP's
 * multicast and in-switch reduction), or UINT32_MAX when the layout has no switch. */
comm_ep comm_topology_nvswitch(const comm_topology *topo, uint32_t node);
/* NVLink ports joining local devices a and b of a node (0: none, or a switch layout). */
uint32_t comm_topology_nvlinks(const comm_topology *topo, uint32_t a, uint32_t b);
/* The class of the path between two endpoints as the hardware has it (before any bounce through
 * host memory), and whether traffic between them goes through host memory: GPU pairs beyond the
 * system's p2p_level (NCCL's SHM transport), GPU-NIC pairs without GPUDirect RDMA. */
comm_path_class comm_topology_path_class(const comm_topology *topo, comm_ep a, comm_ep b);
gboolean comm_topology_bounces(const comm_topology *topo, comm_ep a, comm_ep b);
/* Directed links in the whole cluster (for memory figures). */
uint64_t comm_topology_links(const comm_topology *topo);

const char *comm_net_model_name(comm_net_model model);

comm_net *comm_net_new(sim_engine *engine, const comm_topology *topo, comm_net_model model);
void comm_net_free(comm_net *net);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(comm_net, comm_net_free)
comm_net_model comm_net_get_model(const comm_net *net);
const comm_topology *comm_net_topology(const comm_net *net);
sim_engine *comm_net_engine(const comm_net *net);

/* Starts moving `bytes` from src to dst now; done(engine, user) fires when the last byte has
 * arrived. src == dst or bytes == 0 completes after zero time (still through an event). */
void comm_net_send(comm_net *net, comm_ep src, comm_ep dst, uint64_t bytes, comm_done_fn done,
                   void *user);
/* The plain solver of the flow model: every speed-up off, so that the same max-min progressive
 * filling runs as written in comm/net_fill.c's note: no reserved transfers (every transfer waits
 * out its latency as an event, then joins its links and seeds a recompute), every recompute
 * searches for its components and fills each by scanning its links (no heap, no global fill,
 * no sorted order, no log to resume from), no route memo, and no lone-route sets for
 * collectives computed without flows (comm__lone_new gives NULL). Outputs are the same bytes
 * with it on and off (tests/cli/plain_tests.sh); only the engine's event count and the speed
 * differ. Set at comm_net_new from the environment variable DTSIM_NET_PLAIN (any value but
 * empty or "0" turns it on), or here before the first send. */
void comm_net_set_plain(comm_net *net, gboolean plain);
gboolean comm_net_get_plain(const comm_net *net);
/* The invariants of the flow network (comm/net_check.c): records that agree, no link over its
 * capacity, max-min fair rates (every flow has a bottleneck link, saturated, where no flow has
 * a larger rate). Rates are checked only when no recompute is pending. FALSE with
 * DT_ERROR_INTERNAL naming the class, link and figures of the first breach. The analytic model
 * has nothing to check. Builds without NDEBUG run the checks after every recompute. */
gboolean comm_net_check(comm_net *net, GError **error);
/* Told of every transfer of the flow network as it ends: its route (directed link ids), when
 * its bytes started moving (after the route's latency) and when the last one arrived. For views
 * of link load (traces/linkload.h); fn NULL turns it off. Costs a route lookup per flow. */
typedef void (*comm_flow_observer_fn)(void *user, const uint32_t *links, uint32_t n,
                                      sim_time_ps start_ps, sim_time_ps end_ps, uint64_t bytes);
void comm_net_set_flow_observer(comm_net *net, comm_flow_observer_fn fn, void *user);
/* Flows currently in flight, and the most ever in flight at once. */
uint64_t comm_net_active_flows(const comm_net *net);
uint64_t comm_net_peak_flows(const comm_net *net);

#endif
