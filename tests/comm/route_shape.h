/* What a route between two devices crosses, for the topology tests: its links, the links
 * between switches (spine hops), and the node and NIC where it enters the network (UINT32_MAX:
 * none). */
#ifndef DTSIM_TESTS_ROUTE_SHAPE_H
#define DTSIM_TESTS_ROUTE_SHAPE_H

#include <stdint.h>

#include "comm_internal.h"

typedef struct {
  uint32_t links, spine_links, node, nic;
} route_shape;

route_shape shape_of(const comm_topology *t, uint32_t a, uint32_t b);

#endif
