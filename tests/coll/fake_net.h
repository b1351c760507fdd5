/* A test double of comm/comm_net.h: nodes of devices (endpoints 0 .. n-1, rank order) plus one
 * host endpoint per node, one latency and bandwidth for pairs inside a node and one for pairs
 * across nodes, and no contention unless port serialisation is switched on (then transfers into
 * the same endpoint are served one after another at the pair's bandwidth, which gives the same
 * last arrival as fair sharing of the receiver's link). Linked instead of dtsim_comm. */
#ifndef DTSIM_TEST_FAKE_NET_H
#define DTSIM_TEST_FAKE_NET_H

#include "comm_net.h"

typedef struct {
  uint32_t nodes, devices_per_node, extra_nodes;
  sim_time_ps intra_latency_ps;
  uint64_t intra_Bps;
  sim_time_ps inter_latency_ps;
  uint64_t inter_Bps;
} fake_topology_spec;

comm_topology *fake_topology_new(const fake_topology_spec *spec);
/* Transfers into one endpoint queue behind each other (for the parameter-server test). */
void fake_net_set_port_serialisation(comm_net *net, gboolean on);

#endif
