/* Internal interface of comm/: the topology's link classes and on-demand routing, shared by
 * the topology builder, the network models and the tests. Not for use outside comm/. */
#ifndef DTSIM_COMM_INTERNAL_H
#define DTSIM_COMM_INTERNAL_H

#include "comm_net.h"
#include "util.h"

#include <math.h>

/* Links come in a few classes (NVLink pair, PCIe, NIC, network); a directed link's bandwidth
 * and latency are those of its class. */
typedef struct {
  double Bps;              /* usable bytes/s per direction (bandwidth * efficiency) */
  sim_time_ps latency_ps;  /* one hop */
  const char *kind;        /* "nvlink", "nvswitch", "pcie", "socket", "nic", "net" */
  uint64_t small_bytes;    /* a message of 1 .. small_bytes - 1 bytes pays small_latency_ps */
  sim_time_ps small_latency_ps;
} comm__link_class;

/* One hop's latency for a message of `bytes`. A query for 0 bytes (no message moves 0 bytes)
 * gives the latency of the line, that of large messages. */
static inline sim_time_ps comm__link_latency(const comm__link_class *c, uint64_t bytes)
{
  return bytes > 0 && bytes < c->small_bytes ? c->small_latency_ps : c->latency_ps;
}

comm_fabric *comm__fabric_from_group(const dt_ini *ini, const char *group, const char *name,
                                     gboolean scope_required, gboolean inter_default,
                                     GError **error);

/* Longest route the topology can produce, in links: the size of the buffer comm__route needs. */
uint32_t comm__route_max(const comm_topology *topo);
/* Writes the directed link ids of the route from src to dst into out (room for
 * comm__route_max links) and returns their number. Deterministic; allocates nothing. */
uint32_t comm__route(const comm_topology *topo, comm_ep src, comm_ep dst, uint32_t *out);
/* comm_topology_p2p_time with a caller's route buffer (no allocation). */
sim_time_ps comm__p2p_time_buf(const comm_topology *topo, comm_ep src, comm_ep dst, uint64_t bytes,
                               uint32_t *buf);
/* The same, leaving the route's `hops` links in buf. */
sim_time_ps comm__p2p_time_route(const comm_topology *topo, comm_ep src, comm_ep dst,
                                 uint64_t bytes, uint32_t *buf, uint32_t *hops);
/* Directed link ids are 0 .. comm_topology_links() - 1. */
const comm__link_class *comm__link_class_of(const comm_topology *topo, uint32_t dlink);
/* Node (worker or extra) of a node-local endpoint. */
uint32_t comm__ep_node(const comm_topology *topo, comm_ep ep);
/* TRUE if dlink is the transmit direction of a NIC (NIC to network); gives its node and index. */
gboolean comm__nic_uplink(const comm_topology *topo, uint32_t dlink, uint32_t *node,
                          uint32_t *nic);
uint32_t comm__nics_per_node(const comm_topology *topo);
/* Total nodes, workers plus extra. */
uint32_t comm__total_nodes(const comm_topology *topo);
/* Endpoints in all: every ep below it is on a node of the topology (comm__ep_node). */
uint64_t comm__endpoints(const comm_topology *topo);
/* Local NIC index that traffic from ep to other nodes leaves through. */
uint32_t comm__ep_nic(const comm_topology *topo, comm_ep ep);
/* Flow model: recomputes that filled every live route at once, without a component search
 * (see comm/net_log.c); for tests. */
uint64_t comm__net_full_fills(const comm_net *net);
/* Flow model: steps of global fills taken from the log of the fill before; for tests. */
uint64_t comm__net_steps_reused(const comm_net *net);

/* Routes that share no directed link, for schedules computed without flows (see
 * comm/coll/unshared.h). While the flow network carries nothing else, a flow alone on every
 * link of its route takes exactly comm__lone_time: its route's latency, then its bytes at the
 * route's bottleneck rate, rounded as the flow model rounds. Only one set exists per network at
 * a time. */
typedef struct comm__lone comm__lone;
/* NULL unless the network is the flow model, carries no flow and has no observers. */
comm__lone *comm__lone_new(comm_net *net);
void comm__lone_free(comm__lone *lone);
/* The id of route src -> dst in the set (added if new), or UINT32_MAX if it shares a directed
 * link with another route of the set. src != dst. */
uint32_t comm__lone_route(comm__lone *lone, comm_ep src, comm_ep dst);
/* Time from a lone flow's start to the arrival of its last byte; bytes > 0. */
sim_time_ps comm__lone_time(comm__lone *lone, uint32_t route, uint64_t bytes);

#endif
