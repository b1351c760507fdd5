/* The system INI that calibration writes and `dtsim --system FILE` loads: inline [intra] and
 * [inter] fabrics (keys bandwidth_GBps, 1e9 bytes/s per direction, and latency_ns), as
 * docs/network.md describes, plus the shape of the measured cluster. */
#include "comm_mpi.h"
#include "util.h"

#include <math.h>

static const char *const locality_names[COMM_MPI_N_CLASSES] = {
    [COMM_MPI_SAME_SOCKET] = "same-socket",
    [COMM_MPI_SAME_NODE] = "same-node",
    [COMM_MPI_OTHER_NODE] = "other-node",
};

const char *comm_mpi_locality_name(comm_mpi_locality loc)
{
  g_return_val_if_fail(loc < COMM_MPI_N_CLASSES, "?");
  return locality_names[loc];
}

void comm_mpi_system_clear(comm_mpi_system *sys)
{
  if (sys == NULL)
    return;
  g_free(sys->name);
  *sys = (comm_mpi_system){0};
}

static void write_fabric(FILE *f, const char *group, const comm_mpi_fabric *fab,
                         gboolean measured, const char *fallback_note)
{
  fprintf(f, "\n[%s]\n", group);
  if (!measured)
    fprintf(f, "# %s\n", fallback_note);
  /* %.6g keeps six significant digits: far below the run-to-run spread of the measurement. */
  fprintf(f, "bandwidth_GBps = %.6g\n", fab->bandwidth_GBps);
  fprintf(f, "latency_ns = %.6g\n", fab->latency_ns);
}

gboolean comm_mpi_system_write(const comm_mpi_system *sys, const char *comment, const char *path,
                               GError **error)
{
  g_autoptr(dt_outfile) out = dt_outfile_open(path, error);
  if (out == NULL)
    return FALSE;
  FILE *f = dt_outfile_stream(out);
  fprintf(f, "# System fitted by dtsim-mpi calibrate: latency and bandwidth per locality class\n"
             "# from a least-squares fit of ping-pong times (one-way time = latency_ns +\n"
             "# bytes / bandwidth_GBps).\n");
  if (comment)
    fprintf(f, "# %s\n", comment);
  fprintf(f, "\n[system]\nname = %s\nnodes = %u\ndevices_per_node = %u\n",
          sys->name ? sys->name : "mpi-calibrated", sys->nodes, sys->ranks_per_node);
  if (sys->reduce_GBps > 0)
    fprintf(f, "# MPI_SUM of floats on one core, bytes of input per second (MPI_Reduce_local).\n"
               "reduce_GBps = %.6g\n", sys->reduce_GBps);
  write_fabric(f, "intra", &sys->intra, sys->intra_measured,
               "Not measured (no two ranks shared a node): copied from [inter].");
  write_fabric(f, "inter", &sys->inter, sys->inter_measured,
               "Not measured (all ranks on one node): copied from [intra].");
  return dt_outfile_commit(out, error);
}

static gboolean read_fabric(const dt_ini *ini, const char *group, comm_mpi_fabric *fab,
                            GError **error)
{
  return dt_ini_double(ini, group, "bandwidth_GBps", TRUE, 1e-9, 1e9, &fab->bandwidth_GBps,
                       error) &&
         dt_ini_double(ini, group, "latency_ns", TRUE, 0, 1e12, &fab->latency_ns, error);
}

gboolean comm_mpi_system_read(const char *path, comm_mpi_system *out, GError **error)
{
  g_autoptr(dt_ini) ini = dt_ini_load(path, error);
  if (ini == NULL)
    return FALSE;
  comm_mpi_system sys = {0};
  int64_t nodes = 1, per_node = 1;
  sys.name = dt_ini_string(ini, "system", "name", FALSE, NULL);
  if (!dt_ini_int64(ini, "system", "nodes", FALSE, 1, 1 << 20, &nodes, error) ||
      !dt_ini_int64(ini, "system", "devices_per_node", FALSE, 1, 1 << 20, &per_node, error) ||
      !dt_ini_double(ini, "system", "reduce_GBps", FALSE, 0, 1e9, &sys.reduce_GBps, error) ||
      !read_fabric(ini, "intra", &sys.intra, error) ||
      !read_fabric(ini, "inter", &sys.inter, error)) {
    comm_mpi_system_clear(&sys);
    return FALSE;
  }
  sys.nodes = (uint32_t)nodes;
  sys.ranks_per_node = (uint32_t)per_node;
  sys.intra_measured = sys.inter_measured = TRUE;
  *out = sys;
  return TRUE;
}
