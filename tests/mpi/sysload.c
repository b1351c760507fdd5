/* Loads a system INI written by dtsim-mpi calibrate the way the simulator reads it, and prints
 * its fabrics: exit 0 when it loads, 2 with the reader's message when it does not. */
#include "comm_mpi.h"
#include "util.h"

int main(int argc, char **argv)
{
  if (argc != 2) {
    fprintf(stderr, "usage: sysload FILE\n");
    return 2;
  }
  g_autoptr(GError) error = NULL;
  comm_mpi_system sys = {0};
  if (!comm_mpi_system_read(argv[1], &sys, &error)) {
    fprintf(stderr, "sysload: %s\n", error->message);
    return 2;
  }
  printf("%s: %u node(s) x %u; intra %.4g GB/s %.4g ns; inter %.4g GB/s %.4g ns\n", argv[1],
         sys.nodes, sys.ranks_per_node, sys.intra.bandwidth_GBps, sys.intra.latency_ns,
         sys.inter.bandwidth_GBps, sys.inter.latency_ns);
  int ok = sys.intra.bandwidth_GBps > 0 && sys.inter.bandwidth_GBps > 0;
  comm_mpi_system_clear(&sys);
  return ok ? 0 : 1;
}
