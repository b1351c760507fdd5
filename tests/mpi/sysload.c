/* Loads a system INI written by dtsim-mpi calibrate with dtsim's own loader (comm's topology
 * builder) on 2 nodes, and prints what dtsim charges between two ranks of one node and of two
 * nodes: exit 0 when it loads, 2 with the loader's message when it does not. */
#include "comm_mpi.h"
#include "util.h"

int main(int argc, char **argv)
{
  if (argc != 3) {
    fprintf(stderr, "usage: sysload FILE RANKS_PER_NODE\n");
    return 2;
  }
  g_autoptr(GError) error = NULL;
  uint32_t per_node = (uint32_t)g_ascii_strtoull(argv[2], NULL, 10);
  comm_mpi_fabric in = {0}, out = {0};
  if ((per_node > 1 && !comm_mpi_system_p2p(argv[1], 2, per_node, 1, &in, &error)) ||
      !comm_mpi_system_p2p(argv[1], 2, per_node, per_node, &out, &error)) {
    fprintf(stderr, "sysload: %s\n", error->message);
    return 2;
  }
  printf("%s: same node %.4g us + bytes / %.4g GB/s; other node %.4g us + bytes / %.4g GB/s\n",
         argv[1], in.latency_ns / 1e3, in.bandwidth_GBps, out.latency_ns / 1e3,
         out.bandwidth_GBps);
  return 0;
}
