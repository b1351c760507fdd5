/* Fuzz harness for the fabric/network catalog reader, comm_fabric_load(). It takes a catalog
 * name or a path, so each input is written to a temporary .ini file first.
 *
 * Invariants on a fabric that loads: bandwidths, efficiency and latency are finite and inside
 * the ranges docs/network.md gives (bandwidth 1e-3..1e5 GB/s, efficiency in (0, 1], latency
 * 0..1e9 ns, at least one link per device, switches with at least two ports). A refusal is a
 * DT_ERROR naming the file. */
#include "fuzz.h"

#include "comm_net.h"
#include "util.h"

#include <math.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  fuzz_init();
  return 0;
}

static gboolean in_range(double v, double lo, double hi)
{
  return isfinite(v) && v >= lo && v <= hi;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = fuzz_temp_file(".ini", data, size);
  g_autoptr(GError) error = NULL;
  g_autoptr(comm_fabric) f = comm_fabric_load(path, "--inter", &error);
  if (!f) {
    fuzz_check_error(error, path);
    return 0;
  }
  FUZZ_CHECK(in_range(f->bandwidth_GBps, 1e-3, 1e5), "bandwidth %g", f->bandwidth_GBps);
  FUZZ_CHECK(in_range(f->nic_bandwidth_GBps, 1e-3, 1e5), "NIC bandwidth %g",
             f->nic_bandwidth_GBps);
  FUZZ_CHECK(in_range(f->efficiency, 1e-3, 1.0), "efficiency %g", f->efficiency);
  FUZZ_CHECK(in_range(f->latency_ns, 0, 1e9), "latency %g", f->latency_ns);
  FUZZ_CHECK(f->links_per_device >= 1 && f->switch_radix >= 2, "links %u, radix %u",
             f->links_per_device, f->switch_radix);
  FUZZ_CHECK(f->name && f->path && f->description, "missing strings");
  fuzz_accepted();
  return 0;
}
