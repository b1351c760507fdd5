/* Routes as the topology tests count them (see route_shape.h). */
#include "route_shape.h"

#include <string.h>

route_shape shape_of(const comm_topology *t, uint32_t a, uint32_t b)
{
  g_autofree uint32_t *buf = g_new(uint32_t, comm__route_max(t));
  route_shape r = {0, 0, UINT32_MAX, UINT32_MAX};
  r.links = comm__route(t, comm_topology_device(t, a), comm_topology_device(t, b), buf);
  for (uint32_t i = 0; i < r.links; i++) {
    uint32_t node, nic;
    if (strcmp(comm__link_class_of(t, buf[i])->kind, "net") == 0)
      r.spine_links++;
    if (comm__nic_uplink(t, buf[i], &node, &nic)) {
      r.node = node;
      r.nic = nic;
    }
  }
  return r;
}
