/* The system INI that calibration writes and `dtsim --system FILE` loads (docs/network.md):
 * device "host", layout "nvswitch" (with the switch's total bandwidth when the node's ranks
 * share it), inline [intra] and [inter] fabrics whose per-link latencies, for large and for
 * small messages, make dtsim's routes give back the fitted end-to-end latencies. */
#include "comm_mpi.h"
#include "comm_net.h"
#include "util.h"

#include <glib/gstdio.h>
#include <math.h>

static const char *const locality_names[COMM_MPI_N_CLASSES] = {
    [COMM_MPI_SAME_SOCKET] = "same-socket",
    [COMM_MPI_SAME_NODE] = "same-node",
    [COMM_MPI_OTHER_NODE] = "other-node",
};

/* The host link of the ranks' "devices" and of the NIC. A rank of an MPI job has no PCIe hop
 * of its own, so the fastest catalog fabric is used (63 GB/s x 0.8): it never becomes the
 * bottleneck of a measured route, and its latency is taken out of the network link's. */
#define HOST_LINK_FABRIC "pcie5-x16"

const char *comm_mpi_locality_name(comm_mpi_locality loc)
{
  g_return_val_if_fail(loc < COMM_MPI_N_CLASSES, "?");
  return locality_names[loc];
}

/* Open MPI's shared-memory transport moves a small message in 0.2-1 us on one node and RDMA or
 * TCP networks in 1-100 us; 100x those is no path's latency. */
#define SHARED_MEMORY_MAX_LATENCY_S 100e-6
#define NETWORK_MAX_LATENCY_S 1e-3

char *comm_mpi_fit_warning(comm_mpi_locality loc, double latency_s)
{
  double limit = loc == COMM_MPI_OTHER_NODE ? NETWORK_MAX_LATENCY_S : SHARED_MEMORY_MAX_LATENCY_S;
  if (!(latency_s > limit))
    return NULL;
  return g_strdup_printf("%s latency fitted at %.1f us, above the %.0f us %s takes at most: "
                         "ranks sharing cores or a busy machine? (the fit is written as "
                         "measured; rerun with fewer ranks per node or on an idle machine)",
                         comm_mpi_locality_name(loc), latency_s * 1e6, limit * 1e6,
                         loc == COMM_MPI_OTHER_NODE ? "a network" : "shared memory");
}

void comm_mpi_system_clear(comm_mpi_system *sys)
{
  if (sys == NULL)
    return;
  g_free(sys->description);
  *sys = (comm_mpi_system){0};
}

/* Per-link latencies of the file, ns; a small-message latency below 0: none written. */
typedef struct {
  double intra, inter, intra_small, inter_small;
} link_latencies;

static void append_fabric(GString *s, const char *group, const comm_mpi_fabric *fit,
                          const comm_mpi_regimes *regimes, double link_latency_ns,
                          double small_link_latency_ns, gboolean measured, const char *route)
{
  g_string_append_printf(s, "\n[%s]\n", group);
  if (measured && regimes->piecewise)
    g_string_append_printf(s, "# Two regimes were measured. Messages of %.0f\n"
                              "# bytes and more: %.4g us + bytes / %.4g GB/s (largest residual %.0f%%);\n"
                              "# smaller ones: %.4g us + bytes / %.4g GB/s (largest residual %.0f%%).\n"
                              "# One line through all sizes would be off by up to %.0f%%.\n",
                           regimes->break_bytes, regimes->large.latency_s * 1e6,
                           regimes->large.bandwidth_Bps / 1e9,
                           100 * regimes->large.max_rel_residual, regimes->small.latency_s * 1e6,
                           regimes->small.bandwidth_Bps / 1e9,
                           100 * regimes->small.max_rel_residual,
                           100 * regimes->single_max_rel_residual);
  if (measured && fit->bandwidth_GBps > regimes->large.bandwidth_Bps / 1e9 * (1 + 1e-9))
    g_string_append_printf(s, "# bandwidth: what each rank moved one way while exchanging, above the\n"
                              "# ping-pong's %.4g GB/s (a ping-pong waits for each message to land).\n",
                           regimes->large.bandwidth_Bps / 1e9);
  if (measured && regimes->piecewise)
    g_string_append_printf(s, "description = measured by dtsim-mpi: %.4g GB/s, %.4g us end to end "
                              "from %.0f B, %.4g us below\n",
                           fit->bandwidth_GBps, fit->latency_ns / 1e3, regimes->break_bytes,
                           regimes->small_latency_s * 1e6);
  else if (measured)
    g_string_append_printf(s, "description = measured by dtsim-mpi: %.4g GB/s, %.4g us end to end\n",
                           fit->bandwidth_GBps, fit->latency_ns / 1e3);
  else
    g_string_append_printf(s, "description = not measured (no pair of ranks of this kind): a "
                              "copy of the other fabric\n");
  /* %.6g: six significant digits, far below the run-to-run spread of the measurement. */
  g_string_append_printf(s, "bandwidth_GBps = %.6g\n", fit->bandwidth_GBps);
  g_string_append_printf(s, "# %s\nlatency_ns = %.6g\n", route, link_latency_ns);
  if (small_link_latency_ns >= 0 && regimes->piecewise)
    g_string_append_printf(s, "# smaller messages: %.4g us end to end at the same bandwidth\n"
                              "small_message_bytes = %.0f\nsmall_message_latency_ns = %.6g\n",
                           regimes->small_latency_s * 1e6, regimes->break_bytes,
                           small_link_latency_ns);
}

static char *system_text(const comm_mpi_system *sys, const char *comment,
                         const link_latencies *lat, uint32_t per_node)
{
  GString *s = g_string_new(NULL);
  /* Text from outside (host names, the command line) on one line each: escaped, so that a
   * newline cannot add keys or groups. */
  g_autofree char *comment_line = comment ? dt_escape(comment) : NULL;
  g_autofree char *description = dt_escape(sys->description ? sys->description
                                                            : "measured with dtsim-mpi");
  g_string_append(s, "# System fitted by dtsim-mpi calibrate: one-way time = latency + bytes /\n"
                     "# bandwidth per locality class, by least squares on ping-pong times.\n");
  if (comment_line)
    g_string_append_printf(s, "# %s\n", comment_line);
  g_string_append_printf(s,
                         "\n[system]\ndescription = %s\n"
                         "# The ranks are processes on the hosts' CPUs: each is a \"host\" device\n"
                         "# with one link to a switch standing for the node's memory system.\n"
                         "device = host\ndevices_per_node = %u\nlayout = nvswitch\n"
                         "pcie = " HOST_LINK_FABRIC "\nnics_per_node = 1\nsockets = 1\n"
                         "topology = switch\n",
                         description, per_node);
  if (sys->switch_GBps > 0)
    g_string_append_printf(s, "# %u ranks of a node exchanging at once moved %.4g GB/s each per\n"
                              "# direction: the node's memory system carries that many times as\n"
                              "# much in all, shared by every transfer inside the node.\n"
                              "switch_bandwidth_GBps = %.6g\n",
                           sys->exchange_ranks, sys->exchange_GBps, sys->switch_GBps);
  else if (sys->exchange_ranks >= 2)
    g_string_append_printf(s, "# %u ranks of a node exchanging at once moved %.4g GB/s each per\n"
                              "# direction, as fast as one pair alone: the switch is non-blocking\n"
                              "# (and a link carries at least that one way; see [intra]).\n",
                           sys->exchange_ranks, sys->exchange_GBps);
  append_fabric(s, "intra", &sys->intra, &sys->intra_regimes, lat->intra, lat->intra_small,
                sys->intra_measured,
                "per link; a route inside a node is rank - switch - rank");
  append_fabric(s, "inter", &sys->inter, &sys->inter_regimes, lat->inter, lat->inter_small,
                sys->inter_measured,
                "per network link, after the host links' latencies; a route between nodes is "
                "rank - host links - NIC - switch - NIC - host links - rank");
  return g_string_free(s, FALSE);
}

gboolean comm_mpi_system_p2p(const char *path, uint32_t nodes, uint32_t per_node, uint32_t peer,
                             comm_mpi_fabric *out, GError **error)
{
  comm_cluster_spec spec = {.system = path, .nodes = nodes, .devices_per_node = per_node};
  g_autoptr(comm_topology) topo = comm_topology_build(&spec, error);
  if (topo == NULL)
    return FALSE;
  g_return_val_if_fail(peer < comm_topology_devices(topo), FALSE);
  comm_ep a = comm_topology_device(topo, 0), b = comm_topology_device(topo, peer);
  /* Latency from an empty message, bandwidth from the extra time of 1e9 bytes. */
  sim_time_ps t0 = comm_topology_p2p_time(topo, a, b, 0);
  sim_time_ps t1 = comm_topology_p2p_time(topo, a, b, 1000000000);
  out->latency_ns = (double)t0 / 1e3;
  out->bandwidth_GBps = 1.0 / sim_time_to_s(t1 - t0);
  return TRUE;
}

/* End-to-end latencies (ns) inside a node and between nodes for one pair of link latencies. */
static gboolean probe(const comm_mpi_system *sys, const char *dir, double intra_link_ns,
                      double inter_link_ns, double *intra_ns, double *inter_ns, GError **error)
{
  g_autofree char *path = g_build_filename(dir, "probe.ini", NULL);
  link_latencies lat = {intra_link_ns, inter_link_ns, -1, -1};
  g_autofree char *text = system_text(sys, NULL, &lat, 2);
  if (!g_file_set_contents(path, text, -1, error))
    return FALSE;
  comm_mpi_fabric in, out;
  /* Two nodes of two ranks: rank 1 shares rank 0's node, rank 2 does not. */
  gboolean ok = comm_mpi_system_p2p(path, 2, 2, 1, &in, error) &&
                comm_mpi_system_p2p(path, 2, 2, 2, &out, error);
  g_unlink(path);
  *intra_ns = in.latency_ns;
  *inter_ns = out.latency_ns;
  return ok;
}

gboolean comm_mpi_system_write(const comm_mpi_system *sys, const char *comment, const char *path,
                               GError **error)
{
  g_return_val_if_fail(sys->intra.bandwidth_GBps > 0 && sys->inter.bandwidth_GBps > 0, FALSE);
  g_autofree char *dir = dt_scratch_new(COMM_MPI_SCRATCH_PREFIX, error);
  if (dir == NULL)
    return FALSE;
  /* Route latency = fixed part + hops x link latency: two probes give both. */
  const double probe_ns = 1000;
  double in0, out0, in1, out1;
  gboolean ok = probe(sys, dir, 0, 0, &in0, &out0, error) &&
                probe(sys, dir, probe_ns, probe_ns, &in1, &out1, error);
  dt_scratch_remove(dir);
  if (!ok)
    return FALSE;
  double in_hops = round((in1 - in0) / probe_ns), out_hops = round((out1 - out0) / probe_ns);
  g_assert(in_hops >= 1 && out_hops >= 1);
  link_latencies lat;
  lat.intra = fmax(0, (sys->intra.latency_ns - in0) / in_hops);
  lat.inter = fmax(0, (sys->inter.latency_ns - out0) / out_hops);
  /* The small-message regime on the same links: only the fabric's own links have it, so the
   * fixed part of a route is the same. */
  lat.intra_small = fmin(lat.intra, fmax(0, (sys->intra_regimes.small_latency_s * 1e9 - in0) /
                                                in_hops));
  lat.inter_small = fmin(lat.inter, fmax(0, (sys->inter_regimes.small_latency_s * 1e9 - out0) /
                                                out_hops));

  g_autofree char *text = system_text(sys, comment, &lat, MAX(sys->ranks_per_node, 1));
  g_autoptr(dt_outfile) out = dt_outfile_open(path, error);
  if (out == NULL)
    return FALSE;
  fputs(text, dt_outfile_stream(out));
  return dt_outfile_commit(out, error);
}
