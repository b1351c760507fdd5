/* Fuzz harness for the node-preset (system) catalog reader, comm_system_load(), followed by
 * building a two-node cluster from the preset with comm_topology_build() (which reads the
 * preset's inter-node topology and NVLink wiring). Each input is written to a temporary .ini
 * file first; fabrics it names by catalog name come from comm/catalog.
 *
 * Invariants on a preset that loads: the fabrics a layout needs are there and of the right
 * scope; on a cluster that builds, every pair of devices among the first and last few is
 * connected with a finite positive bandwidth, and a transfer's time is positive, grows with
 * the bytes and is at least the route's latency. Refusals are DT_ERROR messages naming the
 * file. */
#include "fuzz.h"

#include "comm_net.h"
#include "util.h"

#include <math.h>
#include <string.h>

/* Nodes of the cluster built, and the largest node it is built for (a 4096-device node is
 * valid but takes long to build for every input). */
#define NODES 2
#define MAX_DEVICES_PER_NODE 64

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  fuzz_init();
  return 0;
}

static void check_pair(const comm_topology *topo, uint32_t a, uint32_t b)
{
  comm_ep ea = comm_topology_device(topo, a), eb = comm_topology_device(topo, b);
  if (a == b) {
    FUZZ_CHECK(comm_topology_hops(topo, ea, eb) == 0, "a device is hops away from itself");
    return;
  }
  FUZZ_CHECK(comm_topology_hops(topo, ea, eb) > 0, "devices %u and %u are not connected", a, b);
  double bw = comm_topology_route_Bps(topo, ea, eb);
  FUZZ_CHECK(isfinite(bw) && bw > 0, "devices %u-%u: bandwidth %g", a, b, bw);
  sim_time_ps lat = comm_topology_route_latency(topo, ea, eb);
  sim_time_ps t1 = comm_topology_p2p_time(topo, ea, eb, 1);
  sim_time_ps tg = comm_topology_p2p_time(topo, ea, eb, UINT64_C(1) << 30);
  /* A message below a fabric's small_message_bytes may start sooner than the route's latency
   * (that of large messages), never a 1 GiB one. */
  FUZZ_CHECK(lat >= 0 && tg >= lat && t1 > 0 && tg >= t1,
             "devices %u-%u: latency %lld ps, 1 B in %lld ps, 1 GiB in %lld ps", a, b,
             (long long)lat, (long long)t1, (long long)tg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = fuzz_temp_file(".ini", data, size);
  g_autoptr(GError) error = NULL;
  g_autoptr(comm_system) s = comm_system_load(path, "--system", &error);
  if (!s) {
    fuzz_check_error(error, path);
    return 0;
  }
  FUZZ_CHECK(s->devices_per_node >= 1 && s->devices_per_node <= 4096, "devices_per_node %u",
             s->devices_per_node);
  FUZZ_CHECK(s->inter && s->inter->inter, "no inter-node network");
  FUZZ_CHECK(s->pcie && !s->pcie->inter, "no PCIe fabric");
  FUZZ_CHECK(!s->intra || !s->intra->inter, "an inter-node intra fabric");
  if (strcmp(s->layout, "nvswitch") == 0 || strcmp(s->layout, "nvlink-hybrid-cube") == 0)
    FUZZ_CHECK(s->intra != NULL, "layout %s without an intra fabric", s->layout);
  FUZZ_CHECK(s->topology && s->device && s->description, "missing strings");
  fuzz_accepted();
  if (s->devices_per_node > MAX_DEVICES_PER_NODE)
    return 0;

  comm_cluster_spec spec = {.system = path, .nodes = NODES};
  g_autoptr(comm_topology) topo = comm_topology_build(&spec, &error);
  if (!topo) {
    fuzz_check_error(error, NULL);
    return 0;
  }
  uint32_t n = comm_topology_devices(topo);
  FUZZ_CHECK(n == NODES * comm_topology_devices_per_node(topo), "%u devices", n);
  FUZZ_CHECK(comm_topology_devices_per_node(topo) == s->devices_per_node, "devices per node");
  /* The first and last three devices: both nodes, both ends of each node. */
  uint32_t pick[6] = {0, 1 % n, 2 % n, n - 3 < n ? n - 3 : 0, n - 2 < n ? n - 2 : 0, n - 1};
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++)
      check_pair(topo, pick[i], pick[j]);
  return 0;
}
