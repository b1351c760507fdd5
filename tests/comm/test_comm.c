/* Tests of comm/: catalogs, topology and routing, and the flow and analytic network models.
 * Expected values are worked out by hand in the comments (link counts along each route,
 * max-min shares by progressive filling, bytes over bandwidth), never taken from the
 * program's own output. Test fabrics with round numbers are written to a temporary folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli.h"
#include "comm_internal.h"
#include "route_shape.h"
#include "net_internal.h"

/* ---- Helpers ------------------------------------------------------------------------------ */

/* The listers report failures through the CLI's error printer, which lives in main.c. */
int dtsim_cli_fail(const char *command, const GError *error)
{
  fprintf(stderr, "dtsim %s: %s\n", command, error ? error->message : "failed");
  return 2;
}

static char *tmpdir;

static char *write_file(const char *name, const char *text)
{
  char *path = g_build_filename(tmpdir, name, NULL);
  g_assert_true(g_file_set_contents(path, text, -1, NULL));
  return path;
}

static int setup_tmp(void **state)
{
  tmpdir = g_dir_make_tmp("dtsim-comm-XXXXXX", NULL);
  g_autofree char *a = write_file("fastpcie.ini", "[fabric]\ndescription = test host link\n"
                                                  "scope = intra\nbandwidth_GBps = 100\n"
                                                  "latency_ns = 0\n");
  g_autofree char *b = write_file("pcie2.ini", "[fabric]\ndescription = 2 GB/s host link\n"
                                               "scope = intra\nbandwidth_GBps = 2\n"
                                               "latency_ns = 0\n");
  g_autofree char *c = write_file("net1.ini", "[fabric]\ndescription = 1 GB/s network\n"
                                              "scope = inter\nbandwidth_GBps = 1\nlatency_ns = 0\n"
                                              "switch_radix = 8\n");
  g_autofree char *d = write_file("net1r6.ini", "[fabric]\ndescription = 1 GB/s, radix 6\n"
                                                "scope = inter\nbandwidth_GBps = 1\n"
                                                "latency_ns = 0\nswitch_radix = 6\n");
  /* One device per node on one socket with its NIC, all through fast PCIe: the network is the
   * only bottleneck. */
  g_autofree char *sys = g_strdup_printf("[system]\ndescription = test node\ndevice = k80\n"
                                         "devices_per_node = 1\nlayout = single\n"
                                         "inter = %s/net1.ini\npcie = %s/fastpcie.ini\n",
                                         tmpdir, tmpdir);
  g_autofree char *e = write_file("one.ini", sys);
  /* Two devices on one socket through 2 GB/s PCIe, 1 GB/s network. */
  g_autofree char *sys2 = g_strdup_printf("[system]\ndescription = two devices\ndevice = k80\n"
                                          "devices_per_node = 2\nlayout = pcie-tree\n"
                                          "inter = %s/net1.ini\npcie = %s/pcie2.ini\n",
                                          tmpdir, tmpdir);
  g_autofree char *f = write_file("two.ini", sys2);
  return 0;
}

static int teardown_tmp(void **state)
{
  GDir *dir = g_dir_open(tmpdir, 0, NULL);
  const char *n;
  while (dir && (n = g_dir_read_name(dir)) != NULL) {
    g_autofree char *p = g_build_filename(tmpdir, n, NULL);
    unlink(p);
  }
  if (dir)
    g_dir_close(dir);
  rmdir(tmpdir);
  g_free(tmpdir);
  return 0;
}

static char *tmp(const char *name) { return g_build_filename(tmpdir, name, NULL); }

static comm_topology *build(const char *system, uint32_t nodes, const char *topology,
                            const char *inter)
{
  comm_cluster_spec spec = {.system = system, .nodes = nodes, .topology = topology,
                            .inter = inter};
  g_autoptr(GError) error = NULL;
  comm_topology *t = comm_topology_build(&spec, &error);
  if (!t)
    fail_msg("%s", error->message);
  return t;
}

/* Builds and expects failure; returns the message. */
static char *build_error(const comm_cluster_spec *spec)
{
  GError *error = NULL;
  comm_topology *t = comm_topology_build(spec, &error);
  assert_null(t);
  assert_non_null(error);
  assert_int_equal(error->code, DT_ERROR_INPUT);
  char *msg = g_strdup(error->message);
  g_error_free(error);
  return msg;
}

typedef struct {
  sim_time_ps at[16];
  int count;
} done_log;

typedef struct {
  done_log *log;
  int index;
} done_arg;

static void on_done(sim_engine *engine, void *user)
{
  done_arg *a = user;
  a->log->at[a->index] = sim_engine_now(engine);
  a->log->count++;
}

/* Incast flows of test_reserved_flow_through_global_fills: the end of flow k. */
typedef struct {
  sim_time_ps *at;
  int k;
} incast_arg;

static void on_incast_done(sim_engine *engine, void *user)
{
  incast_arg *a = user;
  a->at[a->k] = sim_engine_now(engine);
}

/* ---- Catalogs ----------------------------------------------------------------------------- */

static void test_catalog_presets_load(void **state)
{
  /* Every fabric and system preset the issue lists. */
  static const char *fabrics[] = {"pcie3-x16", "pcie4-x16", "nvlink1", "nvlink2",
                                  "nvswitch-v100", "nvswitch-a100", "nvswitch-h100", "10gbe",
                                  "25gbe", "100gbe-roce", "ib-fdr", "ib-edr", "ib-hdr", "ib-ndr",
                                  "aries", "opa100", "efa"};
  static const char *systems[] = {"dgx1-p100", "dgx1-v100", "dgx2", "dgx-a100", "dgx-h100",
                                  "p2.xlarge", "p2.8xlarge", "p3.2xlarge", "p3.16xlarge",
                                  "p3dn.24xlarge", "gce-k80x8", "piz-daint", "stampede2-knl",
                                  "pcie-8gpu", "workstation-1gpu", "pcie3-2gpu-nop2p",
                                  "rtx5090-8gpu"};
  for (gsize i = 0; i < G_N_ELEMENTS(fabrics); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(comm_fabric) f = comm_fabric_load(fabrics[i], "test", &error);
    if (!f)
      fail_msg("%s: %s", fabrics[i], error->message);
  }
  for (gsize i = 0; i < G_N_ELEMENTS(systems); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(comm_system) s = comm_system_load(systems[i], "test", &error);
    if (!s)
      fail_msg("%s: %s", systems[i], error->message);
    /* And each builds a two-node cluster on its default topology. */
    g_autoptr(comm_topology) t = build(systems[i], 2, NULL, NULL);
    assert_int_equal(comm_topology_devices(t), 2 * s->devices_per_node);
  }
}

static void test_catalog_values(void **state)
{
  g_autoptr(GError) error = NULL;
  /* EDR: 100 Gb/s = 12.5 GB/s per direction. */
  g_autoptr(comm_fabric) edr = comm_fabric_load("ib-edr", "test", &error);
  assert_non_null(edr);
  assert_true(edr->inter);
  assert_float_equal(edr->bandwidth_GBps, 12.5, 1e-12);
  /* NVLink 2.0: 6 links of 25 GB/s per direction on a V100. */
  g_autoptr(comm_fabric) nv2 = comm_fabric_load("nvlink2", "test", &error);
  assert_false(nv2->inter);
  assert_float_equal(nv2->bandwidth_GBps, 25.0, 1e-12);
  assert_int_equal(nv2->links_per_device, 6);
  g_autoptr(comm_system) dgx = comm_system_load("dgx1-v100", "test", &error);
  assert_int_equal(dgx->devices_per_node, 8);
  assert_int_equal(dgx->nics_per_node, 4);
  assert_int_equal(dgx->sockets, 2);
  assert_string_equal(dgx->device, "v100-sxm2-16gb");
  assert_string_equal(dgx->intra->name, "nvlink2");
  /* An inline network without description or scope. */
  g_autofree char *inl = write_file("inline.ini", "[system]\ndescription = x\ndevice = k80\n"
                                                  "devices_per_node = 1\nlayout = single\n"
                                                  "pcie = pcie3-x16\n\n[inter]\n"
                                                  "bandwidth_GBps = 11.9\nlatency_ns = 800\n");
  g_autoptr(comm_system) in = comm_system_load(inl, "test", &error);
  assert_non_null(in);
  assert_true(in->inter->inter);
  assert_float_equal(in->inter->bandwidth_GBps, 11.9, 1e-12);
  assert_string_equal(in->inter->name, "inline[inter]");
  /* gce-k80x8 carries its network inline: 16 Gb/s = 2 GB/s. */
  g_autoptr(comm_system) gce = comm_system_load("gce-k80x8", "test", &error);
  assert_true(gce->inter->inter);
  assert_float_equal(gce->inter->bandwidth_GBps, 2.0, 1e-12);
}

static void assert_contains(const char *text, const char *part)
{
  if (!strstr(text, part))
    fail_msg("'%s' does not contain '%s'", text, part);
}

/* A system file made of `base` and one more line is refused, and the message names the file's
 * line `where` (":LINE: [system] KEY"). */
static void assert_bad_system(const char *base, const char *line, const char *name,
                              const char *where)
{
  g_autofree char *text = g_strconcat(base, line, NULL);
  g_autofree char *path = write_file(name, text);
  g_autoptr(GError) e = NULL;
  assert_null(comm_system_load(path, "--system", &e));
  assert_contains(e->message, where);
}

static void test_catalog_errors(void **state)
{
  GError *error = NULL;
  assert_null(comm_fabric_load("no-such-net", "--inter", &error));
  assert_contains(error->message, "--inter");
  assert_contains(error->message, "no-such-net");
  g_clear_error(&error);

  /* A typo in a key is named with its file and line. */
  g_autofree char *typo = write_file("typo.ini", "[fabric]\ndescription = x\nscope = inter\n"
                                                 "bandwith_GBps = 1\nlatency_ns = 0\n");
  assert_null(comm_fabric_load(typo, "--inter", &error));
  g_autofree char *where = g_strdup_printf("%s:4: [fabric] bandwith_GBps", typo);
  assert_contains(error->message, where);
  g_clear_error(&error);

  /* A missing required key. */
  g_autofree char *nolat = write_file("nolat.ini", "[fabric]\ndescription = x\nscope = inter\n"
                                                   "bandwidth_GBps = 1\n");
  assert_null(comm_fabric_load(nolat, "--inter", &error));
  assert_contains(error->message, "latency_ns");
  g_clear_error(&error);

  /* A value out of range. */
  g_autofree char *neg = write_file("neg.ini", "[fabric]\ndescription = x\nscope = inter\n"
                                               "bandwidth_GBps = -3\nlatency_ns = 0\n");
  assert_null(comm_fabric_load(neg, "--inter", &error));
  assert_contains(error->message, ":4: [fabric] bandwidth_GBps");
  g_clear_error(&error);

  /* A yes/no key that is neither; the key defaults to yes and the first EFA says no. */
  g_autofree char *order = write_file("order.ini", "[fabric]\ndescription = x\nscope = inter\n"
                                                   "bandwidth_GBps = 1\nlatency_ns = 0\n"
                                                   "in_order_writes = sometimes\n");
  assert_null(comm_fabric_load(order, "--inter", &error));
  assert_contains(error->message, ":6: [fabric] in_order_writes");
  g_clear_error(&error);
  g_autoptr(comm_fabric) hdr = comm_fabric_load("ib-hdr", "test", &error);
  g_autoptr(comm_fabric) efa = comm_fabric_load("efa", "test", &error);
  assert_non_null(hdr);
  assert_non_null(efa);
  assert_true(hdr->in_order_writes);
  assert_false(efa->in_order_writes);

  /* A network where a fabric belongs. */
  g_autofree char *wrong = write_file("wrong.ini", "[system]\ndescription = x\ndevice = k80\n"
                                                   "devices_per_node = 8\n"
                                                   "layout = nvlink-hybrid-cube\nintra = ib-edr\n"
                                                   "inter = ib-edr\npcie = pcie3-x16\n");
  assert_null(comm_system_load(wrong, "--system", &error));
  assert_contains(error->message, ":6: [system] intra");
  g_clear_error(&error);

  /* An unknown layout. */
  g_autofree char *lay = write_file("lay.ini", "[system]\ndescription = x\ndevice = k80\n"
                                               "devices_per_node = 1\nlayout = mesh\n"
                                               "inter = ib-edr\npcie = pcie3-x16\n");
  assert_null(comm_system_load(lay, "--system", &error));
  assert_contains(error->message, ":5: [system] layout");
  g_clear_error(&error);

  /* Not INI at all. */
  g_autofree char *junk = write_file("junk.ini", "this is not\x01 an ini file\n");
  assert_null(comm_system_load(junk, "--system", &error));
  assert_contains(error->message, junk);
  g_clear_error(&error);
}

static void test_topology_errors(void **state)
{
  comm_cluster_spec spec = {.system = "dgx1-v100", .nodes = 0};
  g_autofree char *m1 = build_error(&spec);
  assert_contains(m1, "--nodes");

  spec = (comm_cluster_spec){.system = "no-such-system", .nodes = 2};
  g_autofree char *m2 = build_error(&spec);
  assert_contains(m2, "--system");

  spec = (comm_cluster_spec){.system = "dgx1-v100", .nodes = 2, .topology = "hypercube"};
  g_autofree char *m3 = build_error(&spec);
  assert_contains(m3, "--topology");
  assert_contains(m3, "hypercube");

  /* 30 nodes cannot be a 4x8 torus. */
  spec = (comm_cluster_spec){.system = "dgx1-v100", .nodes = 30, .topology = "torus2d:4x8"};
  g_autofree char *m4 = build_error(&spec);
  assert_contains(m4, "30 nodes");

  /* Oversubscription is down ports over up ports: below 1 it is not a fat tree. */
  spec = (comm_cluster_spec){.system = "dgx1-v100", .nodes = 2, .topology = "fat-tree:0.5"};
  g_autofree char *m5 = build_error(&spec);
  assert_contains(m5, "fat-tree:0.5");

  spec = (comm_cluster_spec){.system = "dgx1-v100", .nodes = 2, .intra = "ib-edr"};
  g_autofree char *m6 = build_error(&spec);
  assert_contains(m6, "--intra");

  spec = (comm_cluster_spec){.system = "dgx1-v100", .nodes = 2, .inter = "nvlink2"};
  g_autofree char *m7 = build_error(&spec);
  assert_contains(m7, "--inter");

  /* The hybrid cube mesh has 8 corners: 16 is the fault of the option (or key) that asked for
   * it, not of the system file, which is named after it. */
  spec = (comm_cluster_spec){.system = "dgx1-v100", .nodes = 1, .devices_per_node = 16};
  g_autofree char *m8 = build_error(&spec);
  assert_true(g_str_has_prefix(m8, "--devices-per-node: "));
  assert_contains(m8, "at most 8 devices, not 16 (system ");
  assert_contains(m8, "dgx1-v100.ini)");
  spec.devices_per_node_where = "s.ini:4: [scenario] devices-per-node";
  g_autofree char *m8b = build_error(&spec);
  assert_true(g_str_has_prefix(m8b, "s.ini:4: [scenario] devices-per-node: "));

  /* No NIC: the nodes are disconnected. */
  g_autofree char *nonic = write_file("nonic.ini", "[system]\ndescription = x\ndevice = k80\n"
                                                   "devices_per_node = 1\nlayout = single\n"
                                                   "inter = ib-edr\npcie = pcie3-x16\n"
                                                   "nics_per_node = 0\n");
  spec = (comm_cluster_spec){.system = nonic, .nodes = 2};
  g_autofree char *m9 = build_error(&spec);
  assert_contains(m9, "nics_per_node");
  /* ... which is fine for a single node. */
  spec.nodes = 1;
  g_autoptr(GError) error = NULL;
  g_autoptr(comm_topology) one = comm_topology_build(&spec, &error);
  assert_non_null(one);

  /* A self-hosted Xeon Phi node has one device per socket. */
  spec = (comm_cluster_spec){.system = "stampede2-knl", .nodes = 2, .devices_per_node = 2};
  g_autofree char *m10 = build_error(&spec);
  assert_contains(m10, "--devices-per-node");
}

/* ---- Routes ------------------------------------------------------------------------------- */

static uint32_t hops_dev(const comm_topology *t, uint32_t a, uint32_t b)
{
  return comm_topology_hops(t, comm_topology_device(t, a), comm_topology_device(t, b));
}

static void test_routes_intra(void **state)
{
  /* DGX-1V hybrid cube mesh: GPU0 has NVLinks to 1, 2, 3, 4; GPU5 is two NVLink hops away
   * (0-1-5 or 0-4-5), never through PCIe (which would be 5 hops). */
  g_autoptr(comm_topology) dgx = build("dgx1-v100", 1, NULL, NULL);
  assert_int_equal(hops_dev(dgx, 0, 1), 1);
  assert_int_equal(hops_dev(dgx, 0, 4), 1);
  assert_int_equal(hops_dev(dgx, 0, 5), 2);
  assert_int_equal(hops_dev(dgx, 3, 6), 2);
  /* Pairs 0-3 and 0-4 carry two NVLink 2.0 links: 2 * 25 GB/s * 0.92; pair 0-1 one. */
  comm_ep d0 = comm_topology_device(dgx, 0);
  assert_float_equal(comm_topology_route_Bps(dgx, d0, comm_topology_device(dgx, 3)), 46e9, 1e3);
  assert_float_equal(comm_topology_route_Bps(dgx, d0, comm_topology_device(dgx, 1)), 23e9, 1e3);
  /* GPU0 to its own socket: GPU - PCIe switch - socket, then into the socket's memory (the
   * loop of host_memory_GBps); to the other socket one more link, never forwarded by another
   * GPU. */
  assert_int_equal(comm_topology_hops(dgx, d0, comm_topology_host(dgx, 0, 0)), 3);
  assert_int_equal(comm_topology_hops(dgx, d0, comm_topology_host(dgx, 0, 1)), 4);

  /* pcie-8gpu: 2 sockets x 2 switches x 2 GPUs. Same switch: GPU-sw-GPU (2, peer-to-peer).
   * Other switch of the socket: beyond NCCL's default P2P level, so a bounce through host
   * memory: GPU-sw-socket, the sender's root port (its switch's host-DMA loop), the memory
   * loop, the receiver's root port, socket-sw-GPU (7). Other socket: through the receiver's
   * socket and its memory, GPU-sw-socket-socket-sw-GPU and the three loops (8). */
  g_autoptr(comm_topology) pc = build("pcie-8gpu", 1, NULL, NULL);
  assert_int_equal(hops_dev(pc, 0, 1), 2);
  assert_int_equal(hops_dev(pc, 0, 2), 7);
  assert_int_equal(hops_dev(pc, 0, 4), 8);
  assert_int_equal(hops_dev(pc, 7, 0), 8);

  /* DGX-1 P100: four NVLink 1.0 ports, so every cube edge is one link: 20 GB/s * 0.9. */
  g_autoptr(comm_topology) p100 = build("dgx1-p100", 1, NULL, NULL);
  assert_float_equal(comm_topology_route_Bps(p100, comm_topology_device(p100, 0),
                                             comm_topology_device(p100, 3)), 18e9, 1e3);

  /* DGX A100: two GPUs and two NICs under each PCIe switch; the GPUs take one NIC each. */
  g_autoptr(comm_topology) a8 = build("dgx-a100", 2, NULL, NULL);
  assert_int_equal(comm__ep_nic(a8, comm_topology_device(a8, 0)), 0);
  assert_int_equal(comm__ep_nic(a8, comm_topology_device(a8, 1)), 1);
  assert_int_equal(comm__ep_nic(a8, comm_topology_device(a8, 6)), 6);

  /* NVSwitch: GPU - switch - GPU for every pair. */
  g_autoptr(comm_topology) a100 = build("dgx-a100", 1, NULL, NULL);
  for (uint32_t i = 1; i < 8; i++)
    assert_int_equal(hops_dev(a100, 0, i), 2);
  /* 12 NVLink3 links * 25 GB/s * 0.8 efficiency = 240 GB/s. */
  assert_float_equal(comm_topology_route_Bps(a100, comm_topology_device(a100, 0),
                                             comm_topology_device(a100, 7)), 240e9, 1e3);
}

/* NCCL's path classes and the bounces through host memory, from the catalog's wiring. */
static void test_path_classes(void **state)
{
  /* pcie-8gpu: GPUs 0,1 under switch 0, 2,3 under switch 1 (socket 0), 4-7 on socket 1; the
   * EDR NIC under switch 0. */
  g_autoptr(comm_topology) pc = build("pcie-8gpu", 1, NULL, NULL);
  comm_ep d[8];
  for (uint32_t i = 0; i < 8; i++)
    d[i] = comm_topology_device(pc, i);
  assert_int_equal(comm_topology_path_class(pc, d[0], d[1]), COMM_PATH_PIX);
  assert_int_equal(comm_topology_path_class(pc, d[0], d[2]), COMM_PATH_PHB);
  assert_int_equal(comm_topology_path_class(pc, d[0], d[4]), COMM_PATH_SYS);
  assert_int_equal(comm_topology_path_class(pc, d[0], d[0]), COMM_PATH_LOC);
  assert_false(comm_topology_bounces(pc, d[0], d[1]));
  assert_true(comm_topology_bounces(pc, d[0], d[2]));
  assert_true(comm_topology_bounces(pc, d[5], d[1]));
  /* Peer-to-peer under one switch: the PCIe 3.0 x16 links, 15.75 GB/s * 0.8. A bounce across
   * the sockets: the socket link, NCCL's 6 GB/s for Broadwell. */
  assert_float_equal(comm_topology_route_Bps(pc, d[0], d[1]), 12.6e9, 1e3);
  assert_float_equal(comm_topology_route_Bps(pc, d[0], d[4]), 6e9, 1e3);
  /* Under the socket: the memory loop carries half of 76.8 GB/s, the PCIe links bind. */
  assert_float_equal(comm_topology_route_Bps(pc, d[0], d[2]), 12.6e9, 1e3);

  /* DGX-1V: every pair NVL (direct or forwarded over two NVLinks), never a bounce. */
  g_autoptr(comm_topology) dgx = build("dgx1-v100", 1, NULL, NULL);
  for (uint32_t b = 1; b < 8; b++) {
    assert_int_equal(comm_topology_path_class(dgx, comm_topology_device(dgx, 0),
                                              comm_topology_device(dgx, b)), COMM_PATH_NVL);
    assert_false(comm_topology_bounces(dgx, comm_topology_device(dgx, 0),
                                       comm_topology_device(dgx, b)));
  }
  /* DGX-1 with P100 (nvlink_forwarding = no, the libraries of 2016-2017): GPU 3 has NVLinks to
   * 0, 1, 2 and 7, not to 4. 3 -> 4 goes GPU - PCIe switch 1 - socket 0 - socket 1 - switch 2 -
   * GPU (5 links; class SYS, so a bounce through host memory, which this preset does not
   * limit, plus the host-DMA loops of the two switches' root ports: 7), at the socket link's
   * 6 GB/s, below PCIe's 12.6; 3 -> 0 keeps its own NVLink. */
  g_autoptr(comm_topology) p100 = build("dgx1-p100", 1, NULL, NULL);
  comm_ep g3 = comm_topology_device(p100, 3), g4 = comm_topology_device(p100, 4);
  assert_int_equal(comm_topology_path_class(p100, g3, g4), COMM_PATH_SYS);
  assert_true(comm_topology_bounces(p100, g3, g4));
  assert_int_equal(comm_topology_hops(p100, g3, g4), 7);
  assert_float_equal(comm_topology_route_Bps(p100, g3, g4), 6e9, 1e3);
  assert_int_equal(hops_dev(p100, 3, 0), 1);
  assert_int_equal(comm_topology_path_class(p100, g3, comm_topology_device(p100, 0)),
                   COMM_PATH_NVL);

  /* Two DGX-1V: GPU 0 reaches its EDR port through their shared switch (PIX) with GPUDirect
   * RDMA, so no bounce; between nodes the class is NET. */
  g_autoptr(comm_topology) dgx2 = build("dgx1-v100", 2, NULL, NULL);
  comm_ep a = comm_topology_device(dgx2, 0), b = comm_topology_device(dgx2, 8);
  assert_int_equal(comm_topology_path_class(dgx2, a, b), COMM_PATH_NET);
  assert_false(comm_topology_bounces(dgx2, a, b));

  /* p2.8xlarge with four dies: the node's first two K80 boards, so dies 0 and 1 share board 0's
   * PCIe switch (PIX, peer-to-peer) and dies 1 and 2 are on two boards under socket 0 (PHB:
   * a bounce through host memory). */
  comm_cluster_spec spec = {.system = "p2.8xlarge", .nodes = 2, .devices_per_node = 4};
  g_autoptr(GError) error = NULL;
  g_autoptr(comm_topology) k80 = comm_topology_build(&spec, &error);
  assert_non_null(k80);
  comm_ep k[4];
  for (uint32_t i = 0; i < 4; i++)
    k[i] = comm_topology_device(k80, i);
  assert_int_equal(comm_topology_path_class(k80, k[0], k[1]), COMM_PATH_PIX);
  assert_int_equal(comm_topology_path_class(k80, k[1], k[2]), COMM_PATH_PHB);
  assert_false(comm_topology_bounces(k80, k[0], k[1]));
  assert_true(comm_topology_bounces(k80, k[1], k[2]));
  /* die - switch - die: 2 hops; die - switch - socket, board 0's root port (host-DMA loop),
   * the memory loop, board 1's root port, socket - switch - die: 7. */
  assert_int_equal(comm_topology_hops(k80, k[0], k[1]), 2);
  assert_int_equal(comm_topology_hops(k80, k[1], k[2]), 7);
  /* No GPUDirect RDMA (TCP): to the other node the traffic is staged in host memory. */
  assert_true(comm_topology_bounces(k80, k[0], comm_topology_device(k80, 4)));
}

/* GPUDirect RDMA or staging in host memory, on a small node written here: one socket whose
 * memory gives 10 GB/s, one PCIe 3.0 switch with a GPU and a 100 Gb/s EDR NIC. */
static void test_gpudirect_staging(void **state)
{
  const char *base = "[system]\ndescription = x\ndevice = v100-pcie-16gb\ndevices_per_node = 1\n"
                     "layout = pcie-tree\ninter = ib-edr\npcie = pcie3-x16\nsockets = 1\n"
                     "pcie_switches_per_socket = 1\nhost_memory_GBps = 10\n";
  g_autofree char *gdr_text = g_strconcat(base, "gpudirect_rdma = yes\n", NULL);
  g_autofree char *host_text = g_strconcat(base, "gpudirect_rdma = no\n", NULL);
  g_autofree char *gdr = write_file("gdr.ini", gdr_text);
  g_autofree char *host = write_file("host.ini", host_text);
  g_autoptr(GError) error = NULL;
  comm_cluster_spec spec = {.system = gdr, .nodes = 2};
  g_autoptr(comm_topology) tg = comm_topology_build(&spec, &error);
  assert_non_null(tg);
  spec.system = host;
  g_autoptr(comm_topology) th = comm_topology_build(&spec, &error);
  assert_non_null(th);
  comm_ep ga = comm_topology_device(tg, 0), gb = comm_topology_device(tg, 1);
  comm_ep ha = comm_topology_device(th, 0), hb = comm_topology_device(th, 1);
  /* GPUDirect: GPU - switch - NIC - (network) - NIC - switch - GPU, 6 links, at the bottleneck
   * of the EDR links (12.5 GB/s line rate times the fabric's efficiency) or PCIe's 12.6. */
  assert_int_equal(comm_topology_hops(tg, ga, gb), 6);
  assert_false(comm_topology_bounces(tg, ga, gb));
  double edr = comm_topology_route_Bps(tg, ga, gb);
  assert_true(edr > 10e9 && edr <= 12.6e9);
  /* Staged: GPU - switch - socket, the memory loop, socket - switch - NIC: 5 links between GPU
   * and NIC instead of 2 on each side, so 6 + 3 + 3 = 12; the memory loop carries every byte in
   * and out, 10 / 2 = 5 GB/s. */
  assert_true(comm_topology_bounces(th, ha, hb));
  assert_int_equal(comm_topology_hops(th, ha, hb), 12);
  assert_float_equal(comm_topology_route_Bps(th, ha, hb), 5e9, 1e3);

  /* A parameter server on the host CPU: GPU - switch - socket, then the socket's memory loop
   * (the DMA writes each pushed byte, the aggregation reads it again; the update writes each
   * pulled byte, the DMA reads it): 3 links, at 10 / 2 = 5 GB/s, below PCIe's 12.6. The same
   * with GPUDirect RDMA, which is about NICs. */
  comm_ep host_a = comm_topology_host(th, 0, 0), host_g = comm_topology_host(tg, 0, 0);
  assert_int_equal(comm_topology_hops(th, ha, host_a), 3);
  assert_int_equal(comm_topology_hops(th, host_a, ha), 3);
  assert_float_equal(comm_topology_route_Bps(th, ha, host_a), 5e9, 1e3);
  assert_float_equal(comm_topology_route_Bps(tg, host_g, ga), 5e9, 1e3);
  assert_true(comm_topology_bounces(th, ha, host_a));
  /* A server on the other node: staged through the sender's memory, the network, then into
   * the server's memory: GPU - switch - socket - loop - socket - switch - NIC (5), the network
   * (2), NIC - switch - socket - loop (3): 10 links, at the 5 GB/s of the loops. */
  comm_ep remote = comm_topology_host(th, 1, 0);
  assert_int_equal(comm_topology_hops(th, ha, remote), 10);
  assert_float_equal(comm_topology_route_Bps(th, ha, remote), 5e9, 1e3);
  /* Without the key, host memory is no constraint: GPU - switch - socket at PCIe's 12.6. */
  g_autofree char *nomem_text = g_strconcat("[system]\ndescription = x\ndevice = v100-pcie-16gb\n"
                                            "devices_per_node = 1\nlayout = pcie-tree\n"
                                            "inter = ib-edr\npcie = pcie3-x16\nsockets = 1\n"
                                            "pcie_switches_per_socket = 1\n", NULL);
  g_autofree char *nomem = write_file("nomem.ini", nomem_text);
  spec.system = nomem;
  g_autoptr(comm_topology) tn = comm_topology_build(&spec, &error);
  assert_non_null(tn);
  assert_int_equal(comm_topology_hops(tn, comm_topology_device(tn, 0), comm_topology_host(tn, 0, 0)),
                   2);
  assert_float_equal(comm_topology_route_Bps(tn, comm_topology_device(tn, 0),
                                             comm_topology_host(tn, 0, 0)), 12.6e9, 1e3);

  /* Bad values are named with their file, line and key. */
  assert_bad_system(base, "p2p_level = CPU\n", "badp2p.ini", ":11: [system] p2p_level");
  assert_bad_system(base, "gpudirect_rdma = maybe\n", "badgdr.ini",
                    ":11: [system] gpudirect_rdma");
  assert_bad_system(base, "nvlink_forwarding = 2\n", "badfwd.ini",
                    ":11: [system] nvlink_forwarding");
}

/* A parameter server on a host takes its workers' traffic on their rails: four GPUs of one DGX
 * A100 (0-3, each with its own HDR NIC) push 1e9 bytes at once to a server on socket 0 of a
 * second DGX A100. Each push enters through the NIC of its rail (0-3, all on socket 0's two
 * PCIe 4.0 switches, two per switch), so the bottleneck is each switch's uplink to the socket,
 * 31.5e9 x 0.8 shared by two pushes: 12.6e9 bytes/s each (through one NIC it would be the
 * NIC's 25e9 x 0.97 shared four ways, 6.06e9). */
static void test_server_uses_rails(void **state)
{
  g_autoptr(comm_topology) t = build("dgx-a100", 2, NULL, NULL);
  comm_ep server = comm_topology_host(t, 1, 0);
  for (uint32_t k = 0; k < 4; k++)
    assert_float_equal(comm_topology_route_Bps(t, comm_topology_device(t, k), server), 24.25e9,
                       1e3);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  done_log log = {0};
  done_arg args[4];
  for (int k = 0; k < 4; k++) {
    args[k] = (done_arg){&log, k};
    comm_net_send(net, comm_topology_device(t, (uint32_t)k), server, 1000000000, on_done,
                  &args[k]);
  }
  sim_engine_run(e);
  assert_int_equal(log.count, 4);
  double want_s = 1e9 / 12.6e9;
  for (int k = 0; k < 4; k++) {
    double got = (double)log.at[k] * 1e-12;
    if (fabs(got - want_s) / want_s > 1e-3)
      fail_msg("push %d: %.9g s, by hand %.9g s", k, got, want_s);
  }
}

/* A multi-node NVLink domain: GB200 NVL72 trays of 4 GPUs, 18 trays per domain. GPU 0 reaches
 * GPU 71 (tray 17, same rack) over NVLink only: its NVSwitch link, the tray's link to the
 * domain's switches, the other tray's, the other GPU's NVSwitch link (4 links, no NIC, path
 * class NVL) at the GPU's 18 x 50 GB/s x 0.8 = 720 GB/s; GPU 72 (tray 18, the next rack) only
 * through the InfiniBand network (a NIC, class NET). */
static void test_nvlink_domain(void **state)
{
  (void)state;
  g_autoptr(comm_topology) t = build("gb200-nvl72", 36, NULL, NULL);
  assert_int_equal(comm_topology_devices_per_node(t), 4);
  route_shape in = shape_of(t, 0, 71);
  assert_int_equal(in.links, 4);
  assert_int_equal(in.spine_links, 0);
  assert_int_equal(in.node, UINT32_MAX);
  comm_ep a = comm_topology_device(t, 0);
  assert_int_equal(comm_topology_path_class(t, a, comm_topology_device(t, 71)), COMM_PATH_NVL);
  assert_false(comm_topology_bounces(t, a, comm_topology_device(t, 71)));
  assert_true(fabs(comm_topology_route_Bps(t, a, comm_topology_device(t, 71)) - 720e9) < 1e3);
  route_shape out = shape_of(t, 0, 72);
  assert_int_equal(out.node, 0);
  assert_int_equal(comm_topology_path_class(t, a, comm_topology_device(t, 72)), COMM_PATH_NET);
  assert_true(comm_topology_route_Bps(t, a, comm_topology_device(t, 72)) < 100e9);
  /* Inside one tray: the NVSwitch, two links. */
  assert_int_equal(shape_of(t, 0, 3).links, 2);
}

/* Rails and PXN on two DGX A100 (a GPU and a ConnectX-6 per rail) under a rail-optimized fat
 * tree whose 40-port leaves keep one port up (fat-tree:39, 39 down): leaf k holds NIC k of both
 * nodes. With PXN, GPU i sending to GPU j of the other node hands the data over the NVSwitch to
 * GPU j beside it, which sends through NIC j: GPU - NVSwitch - GPU - PCIe switch - NIC - leaf -
 * NIC - PCIe switch - GPU, 8 links, none between switches. Without PXN, GPU i leaves through
 * its own NIC i, and NIC i's leaf reaches NIC j's through the spine: GPU - switch - NIC - leaf -
 * spine - leaf - NIC - switch - GPU, also 8 links, two of them between switches. Nodes wired in
 * order fill one leaf with all 16 NICs: there rails cost nothing and GPU i keeps its NIC i. */
static void test_rails_and_pxn(void **state)
{
  const char *a100 = "[system]\ndescription = x\ndevice = a100-sxm4-80gb\ndevices_per_node = 8\n"
                     "layout = nvswitch\nintra = nvswitch-a100\ninter = ib-hdr\n"
                     "pcie = pcie4-x16\nnics_per_node = 8\nsockets = 2\n"
                     "pcie_switches_per_socket = 2\n";
  g_autofree char *nopxn_text = g_strconcat(a100, "rail_optimized = yes\npxn = no\n", NULL);
  g_autofree char *nopxn = write_file("a100-nopxn.ini", nopxn_text);
  g_autofree char *inorder_text = g_strconcat(a100, "rail_optimized = no\n", NULL);
  g_autofree char *inorder = write_file("a100-inorder.ini", inorder_text);
  g_autoptr(comm_topology) pxn = build("dgx-a100", 2, "fat-tree:39", NULL);
  g_autoptr(comm_topology) off = build(nopxn, 2, "fat-tree:39", NULL);
  g_autoptr(comm_topology) seq = build(inorder, 2, "fat-tree:39", NULL);
  assert_true(comm_topology_system(pxn)->rail_optimized && comm_topology_system(pxn)->pxn);
  for (uint32_t i = 0; i < 8; i++)
    for (uint32_t j = 0; j < 8; j++) {
      route_shape r = shape_of(pxn, i, 8 + j);
      assert_int_equal(r.links, i == j ? 6 : 8);
      assert_int_equal(r.spine_links, 0);
      assert_int_equal(r.node, 0);
      assert_int_equal(r.nic, j);
      r = shape_of(off, i, 8 + j);
      assert_int_equal(r.links, i == j ? 6 : 8);
      assert_int_equal(r.spine_links, i == j ? 0 : 2);
      assert_int_equal(r.nic, i);
      r = shape_of(seq, i, 8 + j);
      assert_int_equal(r.spine_links, 0);
      assert_int_equal(r.nic, i);
    }
  /* The other direction too: GPU 3 of node 1 to GPU 5 of node 0 leaves node 1 by NIC 5. */
  route_shape back = shape_of(pxn, 8 + 3, 5);
  assert_int_equal(back.node, 1);
  assert_int_equal(back.nic, 5);
  /* Inside a node nothing changes: GPU 0 to GPU 1 is GPU - NVSwitch - GPU. */
  assert_int_equal(shape_of(pxn, 0, 1).links, 2);

  /* Leaves of 20 down ports (fat-tree, 40-port HDR switches): nodes 0-19 share rail 0's leaf,
   * node 20 is on the next group's leaf of rail 0, reached through a spine. */
  g_autoptr(comm_topology) big = build("dgx-a100", 21, "fat-tree", NULL);
  assert_int_equal(shape_of(big, 0, 19 * 8).spine_links, 0);
  assert_int_equal(shape_of(big, 0, 20 * 8).spine_links, 2);

  /* DGX-1V wired in rails: NIC k serves GPUs 2k and 2k+1 and GPU 2k is the one beside it. GPU 0 reaches GPU 2
   * (NIC 1's) over one NVLink: to GPU 2 or 3 of the other node it sends through NIC 1. GPU 6
   * (NIC 3's) is two NVLink hops from GPU 0: no PXN, GPU 0 leaves by NIC 0. GPU 1 shares NIC 0
   * with GPU 0: its own. */
  g_autofree char *dgx1_file = write_file("dgx1-rails.ini",
                                          "[system]\ndescription = x\ndevice = v100-sxm2-16gb\n"
                                          "devices_per_node = 8\nlayout = nvlink-hybrid-cube\n"
                                          "intra = nvlink2\ninter = ib-edr\npcie = pcie3-x16\n"
                                          "nics_per_node = 4\nsockets = 2\n"
                                          "pcie_switches_per_socket = 2\nrail_optimized = yes\n");
  g_autoptr(comm_topology) dgx1 = build(dgx1_file, 2, "fat-tree", NULL);
  assert_int_equal(shape_of(dgx1, 0, 8 + 3).nic, 1);
  assert_int_equal(shape_of(dgx1, 0, 8 + 3).links, 7);
  assert_int_equal(shape_of(dgx1, 0, 8 + 7).nic, 0);
  assert_int_equal(shape_of(dgx1, 0, 8 + 1).nic, 0);

  /* No NVLink, no PXN: two PCIe GPUs, each beside its own NIC. */
  g_autofree char *pcie = write_file("pcie2nic.ini", "[system]\ndescription = x\n"
                                                     "device = v100-pcie-16gb\n"
                                                     "devices_per_node = 2\nlayout = pcie-tree\n"
                                                     "inter = ib-edr\npcie = pcie3-x16\n"
                                                     "nics_per_node = 2\nsockets = 1\n"
                                                     "pcie_switches_per_socket = 2\n"
                                                     "rail_optimized = yes\n");
  g_autoptr(comm_topology) pc = build(pcie, 2, "fat-tree", NULL);
  assert_int_equal(shape_of(pc, 0, 3).nic, 0);
  assert_int_equal(shape_of(pc, 1, 2).nic, 1);

  /* Bad values name their file, line and key. */
  assert_bad_system(a100, "pxn = sometimes\n", "badpxn.ini", ":12: [system] pxn");
}

static void test_nvlink_pairs(void **state)
{
  /* Four GPUs in a chain 0-1-2-3 with a triple link 1-2: 0 to 3 is three NVLink hops, and
   * 1 to 2 has 3 * 25 GB/s * 0.92 = 69 GB/s. */
  g_autofree char *chain = write_file("chain.ini", "[system]\ndescription = chain\n"
                                                   "device = v100-sxm2-16gb\n"
                                                   "devices_per_node = 4\nlayout = pcie-tree\n"
                                                   "intra = nvlink2\n"
                                                   "nvlink_pairs = 0-1:1, 1-2:3, 2-3:1\n"
                                                   "inter = ib-edr\npcie = pcie3-x16\n");
  g_autoptr(comm_topology) t = build(chain, 1, NULL, NULL);
  assert_int_equal(hops_dev(t, 0, 3), 3);
  assert_float_equal(comm_topology_route_Bps(t, comm_topology_device(t, 1),
                                             comm_topology_device(t, 2)), 69e9, 1e3);
  g_autofree char *bad = write_file("badpairs.ini", "[system]\ndescription = chain\n"
                                                    "device = v100-sxm2-16gb\n"
                                                    "devices_per_node = 4\nlayout = pcie-tree\n"
                                                    "intra = nvlink2\nnvlink_pairs = 0-4:1\n"
                                                    "inter = ib-edr\npcie = pcie3-x16\n");
  comm_cluster_spec spec = {.system = bad, .nodes = 1};
  g_autofree char *m = build_error(&spec);
  assert_contains(m, "nvlink_pairs");
  assert_contains(m, "0-4:1");
}

static void test_routes_inter(void **state)
{
  /* DGX-1V on one switch: GPU - PCIe switch - NIC (2), NIC - switch - NIC (2), then NIC - PCIe
   * switch - GPU (2): 6 links. */
  g_autoptr(comm_topology) sw = build("dgx1-v100", 2, "switch", NULL);
  assert_int_equal(hops_dev(sw, 0, 8), 6);
  assert_int_equal(hops_dev(sw, 5, 13), 6);

  /* workstation-1gpu: GPU - socket - NIC (2 local links each side). */
  g_autofree char *one = tmp("one.ini");
  /* Fat tree of radix-8 switches, 1:1: 4 NICs per leaf. Nodes 0 and 3 share a leaf:
   * 2 + 2 + 2 = 6; nodes 0 and 4 do not: 2 + 4 + 2 = 8. */
  g_autoptr(comm_topology) ft = build(one, 8, "fat-tree", NULL);
  assert_int_equal(hops_dev(ft, 0, 3), 6);
  assert_int_equal(hops_dev(ft, 0, 4), 8);

  /* Ring of 8 routers: node 0 to 4 is 4 router links, 0 to 7 is 1 (the short way), plus
   * 2 NIC links and 2 + 2 local links. */
  g_autoptr(comm_topology) ring = build(one, 8, "ring", NULL);
  assert_int_equal(hops_dev(ring, 0, 4), 4 + 2 + 4);
  assert_int_equal(hops_dev(ring, 0, 7), 1 + 2 + 4);
  assert_int_equal(hops_dev(ring, 6, 1), 3 + 2 + 4);

  /* 4x4 torus: node 10 is (2, 2): 2 + 2 router links; node 15 is (3, 3): 1 + 1. */
  g_autoptr(comm_topology) t2 = build(one, 16, "torus2d", NULL);
  assert_int_equal(hops_dev(t2, 0, 10), 4 + 6);
  assert_int_equal(hops_dev(t2, 0, 15), 2 + 6);
  assert_int_equal(hops_dev(t2, 0, 1), 1 + 6);
  /* An explicit 2x8 torus: node 9 is (1, 4): 1 + 4. */
  g_autoptr(comm_topology) t28 = build(one, 16, "torus2d:2x8", NULL);
  assert_int_equal(hops_dev(t28, 0, 9), 5 + 6);

  /* 4x4x4 torus: node 42 is (2, 2, 2): 6 router links; node 63 is (3, 3, 3): 3. */
  g_autoptr(comm_topology) t3 = build(one, 64, "torus3d", NULL);
  assert_int_equal(hops_dev(t3, 0, 42), 6 + 6);
  assert_int_equal(hops_dev(t3, 0, 63), 3 + 6);

  /* Dragonfly of 72 nodes: p = 2 nodes per router, a = 4 routers per group, h = 2 global
   * links per router, g = 9 groups (72 / 8). Node 0 (router 0, group 0) to node 71 (router 35,
   * group 8): group 0 reaches group 8 from its router 3 (slot 7 / h), group 8 reaches group 0
   * from router 32 (slot 0): local + global + local = 3. Node 0 to node 8 (router 4,
   * group 1): router 0 holds the link to group 1 (slot 0), router 7 of group 1 holds the
   * link back (slot 7), so global + local = 2. Nodes 0 and 1 share router 0: 0. */
  g_autoptr(comm_topology) df = build(one, 72, "dragonfly", NULL);
  assert_int_equal(hops_dev(df, 0, 71), 3 + 6);
  assert_int_equal(hops_dev(df, 0, 8), 2 + 6);
  assert_int_equal(hops_dev(df, 0, 1), 0 + 6);
  assert_int_equal(hops_dev(df, 0, 2), 1 + 6);

  /* Extra nodes (dedicated parameter servers) sit after the workers: host 0 of extra node 0
   * is node 8 of the switch; socket - NIC is 1 local link. */
  comm_cluster_spec spec = {.system = one, .nodes = 8, .topology = "switch", .extra_nodes = 1};
  g_autoptr(GError) error = NULL;
  g_autoptr(comm_topology) ps = comm_topology_build(&spec, &error);
  assert_non_null(ps);
  assert_int_equal(comm_topology_devices(ps), 8);
  comm_ep server = comm_topology_host(ps, 8, 0);
  assert_int_equal(comm_topology_hops(ps, comm_topology_device(ps, 0), server), 2 + 2 + 1);
  assert_string_equal(comm_topology_endpoint_name(ps, server), "extra0/cpu0");
}

static void test_p2p_time_by_hand(void **state)
{
  /* workstation-1gpu x 2 on ib-edr through one switch. Latency: PCIe 150 ns x 4 links +
   * EDR 300 ns x 2 links = 1200 ns. Bottleneck: min(PCIe 15.75 * 0.8 = 12.6 GB/s,
   * EDR 12.5 * 0.97 = 12.125 GB/s) = 12.125e9 B/s. 1 MiB: ceil(1048576e12 / 12.125e9) =
   * 86480495 ps. */
  g_autoptr(comm_topology) t = build("workstation-1gpu", 2, "switch", "ib-edr");
  sim_time_ps got = comm_topology_p2p_time(t, comm_topology_device(t, 0),
                                           comm_topology_device(t, 1), 1048576);
  assert_true(llabs(got - (1200000 + 86480495)) <= 1);
}

/* ---- Network models ------------------------------------------------------------------------ */

static void test_two_flows_share_one_link(void **state)
{
  /* Node 0 sends 1e9 bytes to node 1 and 1e9 bytes to node 2 at once. Both cross node 0's
   * NIC uplink (1 GB/s); every other link is faster. Max-min: 0.5 GB/s each, so both finish
   * at 2B/C = 2 s. Analytic: the first takes its idle time, B/C = 1 s, the second waits for
   * the uplink the first reserved and ends when the busiest link has carried both, 2 s. */
  g_autofree char *one = tmp("one.ini");
  g_autoptr(comm_topology) t = build(one, 3, "switch", NULL);
  for (int model = 0; model < 2; model++) {
    g_autoptr(sim_engine) e = sim_engine_new();
    g_autoptr(comm_net) net = comm_net_new(e, t, model == 0 ? COMM_NET_FLOW : COMM_NET_ANALYTIC);
    done_log log = {0};
    done_arg a0 = {&log, 0}, a1 = {&log, 1};
    comm_ep s = comm_topology_device(t, 0);
    comm_net_send(net, s, comm_topology_device(t, 1), 1000000000, on_done, &a0);
    comm_net_send(net, s, comm_topology_device(t, 2), 1000000000, on_done, &a1);
    assert_int_equal(comm_net_active_flows(net), 2);
    sim_engine_run(e);
    assert_int_equal(log.count, 2);
    assert_int_equal(comm_net_active_flows(net), 0);
    assert_int_equal(comm_net_peak_flows(net), 2);
    assert_true(llabs(log.at[0] - (model == 0 ? SIM_S(2) : SIM_S(1))) <= 1);
    assert_true(llabs(log.at[1] - SIM_S(2)) <= 1);
  }
}

/* Incast on the analytic model: nodes 1, 2 and 3 each send 1e9 bytes to node 0 at once (as
 * workers push to a parameter server). All three cross node 0's 1 GB/s NIC downlink: with fair
 * sharing all end at 3 s; the analytic model reserves the downlink in turn, 1, 2 and 3 s, so
 * the last push ends when the busiest link has carried all three, as with the flows. Before,
 * every push took its idle 1 s. */
static void test_incast_busiest_link(void **state)
{
  g_autofree char *one = tmp("one.ini");
  g_autoptr(comm_topology) t = build(one, 4, "switch", NULL);
  for (int model = 0; model < 2; model++) {
    g_autoptr(sim_engine) e = sim_engine_new();
    g_autoptr(comm_net) net = comm_net_new(e, t, model == 0 ? COMM_NET_FLOW : COMM_NET_ANALYTIC);
    done_log log = {0};
    done_arg a[3] = {{&log, 0}, {&log, 1}, {&log, 2}};
    for (uint32_t i = 0; i < 3; i++)
      comm_net_send(net, comm_topology_device(t, i + 1), comm_topology_device(t, 0), 1000000000,
                    on_done, &a[i]);
    sim_engine_run(e);
    assert_int_equal(log.count, 3);
    sim_time_ps last = MAX(MAX(log.at[0], log.at[1]), log.at[2]);
    assert_true(llabs(last - SIM_S(3)) <= 2);
  }
}

static void test_flow_ends_and_other_speeds_up(void **state)
{
  /* The same link, 0.5e9 and 1e9 bytes. Both run at 0.5 GB/s until the small one ends at
   * 0.5e9 / 0.5e9 = 1 s; the big one has 0.5e9 bytes left, now at 1 GB/s: 0.5 s more,
   * ending at 1.5 s. */
  g_autofree char *one = tmp("one.ini");
  g_autoptr(comm_topology) t = build(one, 3, "switch", NULL);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  done_log log = {0};
  done_arg a0 = {&log, 0}, a1 = {&log, 1};
  comm_ep s = comm_topology_device(t, 0);
  comm_net_send(net, s, comm_topology_device(t, 1), 500000000, on_done, &a0);
  comm_net_send(net, s, comm_topology_device(t, 2), 1000000000, on_done, &a1);
  sim_engine_run(e);
  assert_true(llabs(log.at[0] - SIM_S(1)) <= 1);
  assert_true(llabs(log.at[1] - SIM_MS(1500)) <= 2);
}

static void test_three_flows_maxmin(void **state)
{
  /* two.ini: devices 0 and 1 of a node hang on socket 0 through 2 GB/s PCIe; NIC on the
   * socket through 2 GB/s PCIe; 1 GB/s network. Flows, 1e9 bytes each, from node 0 dev 0:
   *   A: to dev 1 of node 0   links: dev0->sock (L), sock->dev1
   *   B: to node 1 dev 0      links: L, sock->NIC (P), NIC up (U), ...
   *   C: to node 2 dev 0      links: L, P, U, ...
   * Fair shares: L 2/3 (A, B, C), P 1 (B, C), U 0.5 (B, C). U is the smallest: B = C = 0.5.
   * Then L has 2 - 1 = 1 left for A alone: A = 1 GB/s, limited by a link it shares, not by
   * its own PCIe capacity. A ends at 1 s; B and C, still held by U, at 2 s. */
  g_autofree char *two = tmp("two.ini");
  g_autoptr(comm_topology) t = build(two, 3, "switch", NULL);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  done_log log = {0};
  done_arg a = {&log, 0}, b = {&log, 1}, c = {&log, 2};
  comm_ep s = comm_topology_device(t, 0);
  comm_net_send(net, s, comm_topology_device(t, 1), 1000000000, on_done, &a);
  comm_net_send(net, s, comm_topology_device(t, 2), 1000000000, on_done, &b);
  comm_net_send(net, s, comm_topology_device(t, 4), 1000000000, on_done, &c);
  sim_engine_run(e);
  assert_true(llabs(log.at[0] - SIM_S(1)) <= 1);
  assert_true(llabs(log.at[1] - SIM_S(2)) <= 1);
  assert_true(llabs(log.at[2] - SIM_S(2)) <= 1);
}

/* Sends 1e9 bytes per (src, dst) pair of devices of node 0, all at once, and returns the
 * completion times in log order. */
static void run_pairs(const comm_topology *t, comm_net_model model, const int (*pairs)[2], int n,
                      done_log *log)
{
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, model);
  done_arg args[16];
  for (int i = 0; i < n; i++) {
    args[i] = (done_arg){log, i};
    comm_net_send(net, comm_topology_device(t, (uint32_t)pairs[i][0]),
                  comm_topology_device(t, (uint32_t)pairs[i][1]), 1000000000, on_done, &args[i]);
  }
  sim_engine_run(e);
  assert_int_equal(log->count, n);
}

static void test_switch_bandwidth_shared(void **state)
{
  /* Four devices on an NVSwitch with 4 GB/s links (latency 0) and a switch that carries
   * 6 GB/s in total. Every flow of 1e9 bytes crosses its two device links and the switch:
   *   one flow 0 -> 1: min(4, 6) = 4 GB/s, 0.25 s;
   *   exchange 0 <-> 1: the two directions use different directed device links but share
   *     the switch: 3 GB/s each, 1/3 s;
   *   0 -> 1, 2 -> 3, 1 -> 0: three flows on the switch, 2 GB/s each, 0.5 s;
   *   0 -> 1 and 0 -> 2: device 0's uplink (4 GB/s) is the tighter link: 2 GB/s each, 0.5 s.
   * The analytic model prices a transfer on its idle route (0.25 s) unless the links it
   * crosses are still reserved: in the exchange the second transfer's switch share comes after
   * the first's 1e9 / 6e9 s, so it ends at 2e9 / 6e9 = 1/3 s, as the last flow does. Without
   * the key the switch is non-blocking: the exchange takes 0.25 s. */
  g_autofree char *sw = write_file("sw4.ini", "[system]\ndescription = shared switch\n"
                                              "device = k80\ndevices_per_node = 4\n"
                                              "layout = nvswitch\nswitch_bandwidth_GBps = 6\n"
                                              "pcie = pcie3-x16\ninter = ib-edr\n"
                                              "[intra]\nbandwidth_GBps = 4\nlatency_ns = 0\n");
  g_autoptr(comm_topology) t = build(sw, 1, NULL, NULL);
  /* device - switch - (switch capacity) - device */
  assert_int_equal(hops_dev(t, 0, 1), 3);
  assert_float_equal(comm_topology_route_Bps(t, comm_topology_device(t, 0),
                                             comm_topology_device(t, 1)), 4e9, 1);
  static const int one[][2] = {{0, 1}};
  static const int exchange[][2] = {{0, 1}, {1, 0}};
  static const int three[][2] = {{0, 1}, {2, 3}, {1, 0}};
  static const int fan[][2] = {{0, 1}, {0, 2}};
  done_log log = {0};
  run_pairs(t, COMM_NET_FLOW, one, 1, &log);
  assert_true(llabs(log.at[0] - SIM_MS(250)) <= 1);
  log = (done_log){0};
  run_pairs(t, COMM_NET_FLOW, exchange, 2, &log);
  for (int i = 0; i < 2; i++)
    assert_true(llabs(log.at[i] - SIM_S(1) / 3) <= 2);
  log = (done_log){0};
  run_pairs(t, COMM_NET_FLOW, three, 3, &log);
  for (int i = 0; i < 3; i++)
    assert_true(llabs(log.at[i] - SIM_MS(500)) <= 2);
  log = (done_log){0};
  run_pairs(t, COMM_NET_FLOW, fan, 2, &log);
  for (int i = 0; i < 2; i++)
    assert_true(llabs(log.at[i] - SIM_MS(500)) <= 2);
  log = (done_log){0};
  run_pairs(t, COMM_NET_ANALYTIC, exchange, 2, &log);
  assert_true(llabs(log.at[0] - SIM_MS(250)) <= 1);
  assert_true(llabs(log.at[1] - SIM_S(1) / 3) <= 2);

  g_autofree char *free_sw = write_file("sw4free.ini", "[system]\ndescription = switch\n"
                                                       "device = k80\ndevices_per_node = 4\n"
                                                       "layout = nvswitch\n"
                                                       "pcie = pcie3-x16\ninter = ib-edr\n"
                                                       "[intra]\nbandwidth_GBps = 4\n"
                                                       "latency_ns = 0\n");
  g_autoptr(comm_topology) nb = build(free_sw, 1, NULL, NULL);
  assert_int_equal(hops_dev(nb, 0, 1), 2);
  log = (done_log){0};
  run_pairs(nb, COMM_NET_FLOW, exchange, 2, &log);
  for (int i = 0; i < 2; i++)
    assert_true(llabs(log.at[i] - SIM_MS(250)) <= 1);

  /* Only the nvswitch layout has a switch to give a bandwidth. */
  g_autofree char *bad = write_file("swbad.ini", "[system]\ndescription = x\ndevice = k80\n"
                                                 "devices_per_node = 2\nlayout = pcie-tree\n"
                                                 "switch_bandwidth_GBps = 6\n"
                                                 "pcie = pcie3-x16\ninter = ib-edr\n");
  comm_cluster_spec spec = {.system = bad, .nodes = 1};
  g_autofree char *m = build_error(&spec);
  assert_contains(m, "switch_bandwidth_GBps");
  assert_contains(m, "nvswitch");
}

static void test_small_message_latency(void **state)
{
  /* Two devices on an NVSwitch, links of 1 GB/s with 1000 ns each, 100 ns for messages below
   * 4 KiB. A route is two links:
   *   1000 B: 2 x 100 ns + 1000 B / 1e9 B/s = 200 + 1000 ns = 1200 ns;
   *   4096 B (not below 4 KiB): 2 x 1000 + 4096 = 6096 ns;
   *   0 B (the route's latency): 2000 ns, as comm_topology_route_latency gives.
   * The flow model charges the same for a transfer alone. */
  g_autofree char *sm = write_file("small.ini", "[system]\ndescription = eager\ndevice = k80\n"
                                                "devices_per_node = 2\nlayout = nvswitch\n"
                                                "pcie = pcie3-x16\ninter = ib-edr\n"
                                                "[intra]\nbandwidth_GBps = 1\nlatency_ns = 1000\n"
                                                "small_message_bytes = 4K\n"
                                                "small_message_latency_ns = 100\n");
  g_autoptr(comm_topology) t = build(sm, 1, NULL, NULL);
  comm_ep a = comm_topology_device(t, 0), b = comm_topology_device(t, 1);
  assert_true(comm_topology_p2p_time(t, a, b, 1000) == SIM_NS(1200));
  assert_true(comm_topology_p2p_time(t, a, b, 4096) == SIM_NS(6096));
  assert_true(comm_topology_p2p_time(t, a, b, 0) == SIM_NS(2000));
  assert_true(comm_topology_route_latency(t, a, b) == SIM_NS(2000));
  const uint64_t sizes[] = {1000, 4096};
  const sim_time_ps want[] = {SIM_NS(1200), SIM_NS(6096)};
  for (int i = 0; i < 2; i++) {
    g_autoptr(sim_engine) e = sim_engine_new();
    g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
    done_log log = {0};
    done_arg arg = {&log, 0};
    comm_net_send(net, a, b, sizes[i], on_done, &arg);
    sim_engine_run(e);
    assert_true(llabs(log.at[0] - want[i]) <= 1);
  }

  /* Both keys or neither; a small message never starts later than a large one. */
  g_autofree char *half = write_file("smallhalf.ini", "[fabric]\ndescription = x\nscope = intra\n"
                                                      "bandwidth_GBps = 1\nlatency_ns = 1000\n"
                                                      "small_message_bytes = 4K\n");
  g_autoptr(GError) e1 = NULL;
  assert_null(comm_fabric_load(half, "test", &e1));
  assert_contains(e1->message, "small_message_latency_ns together");
  g_autofree char *slow = write_file("smallslow.ini", "[fabric]\ndescription = x\nscope = intra\n"
                                                      "bandwidth_GBps = 1\nlatency_ns = 1000\n"
                                                      "small_message_bytes = 4K\n"
                                                      "small_message_latency_ns = 2000\n");
  g_autoptr(GError) e2 = NULL;
  assert_null(comm_fabric_load(slow, "test", &e2));
  assert_contains(e2->message, "small_message_latency_ns");
}

static void test_flow_joins_during_latency(void **state)
{
  /* Network links of 1 GB/s and 1000 ns; PCIe fast and without latency. From node 0, X goes
   * to node 4 on the other leaf (NIC, leaf-spine, spine-leaf, NIC: 4 us of latency) and Y to
   * node 1 on the same leaf (2 us); both leave through node 0's NIC uplink. Sent together at
   * t = 0 (X first), Y starts moving at 2 us alone at 1 GB/s; X joins at 4 us, when Y has sent
   * 2000 bytes. Then 0.5 GB/s each: Y's other 998000 bytes end at 4 + 1996 = 2000 us; X has
   * sent 998000 bytes by then and sends its last 2000 at 1 GB/s: 2002 us. */
  g_autofree char *netlat = write_file("netlat.ini", "[fabric]\ndescription = 1 GB/s, 1 us\n"
                                                     "scope = inter\nbandwidth_GBps = 1\n"
                                                     "latency_ns = 1000\nswitch_radix = 8\n");
  g_autofree char *one = tmp("one.ini");
  g_autoptr(comm_topology) t = build(one, 8, "fat-tree", netlat);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  done_log log = {0};
  done_arg x = {&log, 0}, y = {&log, 1};
  comm_ep s = comm_topology_device(t, 0);
  comm_net_send(net, s, comm_topology_device(t, 4), 1000000, on_done, &x);
  comm_net_send(net, s, comm_topology_device(t, 1), 1000000, on_done, &y);
  sim_engine_run(e);
  assert_true(llabs(log.at[1] - SIM_US(2000)) <= 2);
  assert_true(llabs(log.at[0] - SIM_US(2002)) <= 2);
}

static void test_reserved_flow_through_global_fills(void **state)
{
  /* one.ini nodes on one switch, 1 GB/s links, no latency. Incast: node k (1..70) sends
   * k x 1e6 bytes to node 0, all at t = 0, sharing node 0's downlink max-min: 70 flows at 1/70
   * GB/s until the smallest ends at 70 ms, then 69 until the next, whose 1e6 bytes left take
   * 69 ms more, ...: flow k ends at sum_{j=1..k} (71 - j) ms. Beside them node 71 sends 1e9
   * bytes to node 72 on links nobody else uses: alone, 1 s at 1 GB/s. It is sent first, when
   * its route is free, so it waits off its links' class lists (reserved) while the incast
   * flows join each other; the first incast flow is also sent on a free route and goes on its
   * links when the second joins. Over 64 live classes, recomputes fill every live class at
   * once (global fills), which takes the waiting flow in too: its time must not move. */
  g_autofree char *one = tmp("one.ini");
  g_autoptr(comm_topology) t = build(one, 73, "switch", NULL);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  enum { N = 70 };
  sim_time_ps at[N + 1] = {0};
  done_log log = {0};
  done_arg lone = {&log, 0};
  comm_net_send(net, comm_topology_device(t, 71), comm_topology_device(t, 72), 1000000000,
                on_done, &lone);
  incast_arg args[N + 1];
  for (int k = 1; k <= N; k++) {
    args[k] = (incast_arg){at, k};
    comm_net_send(net, comm_topology_device(t, k), comm_topology_device(t, 0),
                  (uint64_t)k * 1000000, on_incast_done, &args[k]);
  }
  sim_engine_run(e);
  assert_int_equal(log.count, 1);
  assert_int_equal(log.at[0], SIM_S(1));
  assert_true(comm__net_full_fills(net) > 0);
  sim_time_ps want = 0;
  for (int k = 1; k <= N; k++) {
    want += SIM_MS(N + 1 - k);
    if (llabs(at[k] - want) > 100)
      fail_msg("incast flow %d ends at %" G_GINT64_FORMAT " ps, not %" G_GINT64_FORMAT, k,
               at[k], want);
  }
}

static void test_flow_equals_analytic_uncontended(void **state)
{
  /* One transfer at a time, on several routes of a real preset: the flow model must give the
   * idle-network closed form to the picosecond. */
  g_autoptr(comm_topology) t = build("dgx1-v100", 4, "fat-tree", NULL);
  static const uint32_t pairs[][2] = {{0, 1}, {0, 5}, {0, 8}, {3, 30}, {31, 0}, {12, 13}};
  static const uint64_t sizes[] = {1, 1000, 1048576, 123456789};
  for (gsize p = 0; p < G_N_ELEMENTS(pairs); p++)
    for (gsize z = 0; z < G_N_ELEMENTS(sizes); z++) {
      comm_ep s = comm_topology_device(t, pairs[p][0]), d = comm_topology_device(t, pairs[p][1]);
      sim_time_ps want = comm_topology_p2p_time(t, s, d, sizes[z]);
      for (int model = 0; model < 2; model++) {
        g_autoptr(sim_engine) e = sim_engine_new();
        g_autoptr(comm_net) net =
            comm_net_new(e, t, model == 0 ? COMM_NET_FLOW : COMM_NET_ANALYTIC);
        done_log log = {0};
        done_arg a = {&log, 0};
        comm_net_send(net, s, d, sizes[z], on_done, &a);
        sim_engine_run(e);
        assert_int_equal(log.count, 1);
        assert_int_equal(log.at[0], want);
      }
    }
}

static void test_zero_and_self(void **state)
{
  g_autoptr(comm_topology) t = build("dgx1-v100", 2, NULL, NULL);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  done_log log = {0};
  done_arg a = {&log, 0}, b = {&log, 1};
  comm_ep d0 = comm_topology_device(t, 0);
  comm_net_send(net, d0, d0, 1 << 20, on_done, &a);
  comm_net_send(net, d0, comm_topology_device(t, 9), 0, on_done, &b);
  assert_int_equal(log.count, 0); /* through an event, not at once */
  sim_engine_run(e);
  assert_int_equal(log.count, 2);
  assert_int_equal(log.at[0], 0);
  assert_int_equal(log.at[1], 0);
}

static void oversub_case(const char *inter, const char *topology, sim_time_ps want)
{
  /* 8 single-NIC nodes, 4 per leaf. Nodes 0..3 each send 1e9 bytes to node 4 + i. */
  g_autofree char *one = tmp("one.ini");
  g_autofree char *net_path = tmp(inter);
  g_autoptr(comm_topology) t = build(one, 8, topology, net_path);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  done_log log = {0};
  done_arg a[4];
  for (int i = 0; i < 4; i++) {
    a[i] = (done_arg){&log, i};
    comm_net_send(net, comm_topology_device(t, (uint32_t)i), comm_topology_device(t, 4u + i),
                  1000000000, on_done, &a[i]);
  }
  sim_engine_run(e);
  assert_int_equal(log.count, 4);
  for (int i = 0; i < 4; i++)
    assert_true(llabs(log.at[i] - want) <= 1);
}

static void test_fat_tree_oversubscription(void **state)
{
  /* Radix 8 at 1:1: 4 down, 4 up ports per leaf; destination-mod-4 puts the four flows
   * (to NICs 4, 5, 6, 7) on four different uplinks: each alone at 1 GB/s, 1 s.
   * Radix 6 at 2:1: 4 down, 2 up; destination-mod-2 puts two flows on each uplink: 0.5 GB/s
   * each, 2 s. The oversubscribed tree halves the cross-pod bandwidth. */
  oversub_case("net1.ini", "fat-tree", SIM_S(1));
  oversub_case("net1r6.ini", "fat-tree:2", SIM_S(2));
}


/* ---- A from-scratch reference for the flow model ---------------------------------------- */

/* The flow model recomputes rates incrementally, per component, once per instant. This
 * reference recomputes the global max-min allocation from scratch at every change, in double
 * seconds, with the textbook progressive filling; both must give the same completion times
 * (to rounding) on a random pattern with staggered starts and heavy sharing. */
typedef struct {
  comm_ep src, dst;
  uint64_t bytes;
  double start_s;        /* when comm_net_send is called */
  uint32_t route[64];
  uint32_t nhops;
  double lat_s;
  double rem;
  double rate;
  double done_s;
  int state;             /* 0 waiting, 1 active, 2 done */
} ref_flow;

static void ref_rates(const comm_topology *t, ref_flow *f, int n, GHashTable *cap_left,
                      GHashTable *count)
{
  g_hash_table_remove_all(cap_left);
  g_hash_table_remove_all(count);
  static double caps[1 << 16];
  for (int i = 0; i < n; i++) {
    f[i].rate = -1;
    if (f[i].state != 1)
      continue;
    for (uint32_t h = 0; h < f[i].nhops; h++) {
      gpointer k = GUINT_TO_POINTER(f[i].route[h] + 1);
      int c = GPOINTER_TO_INT(g_hash_table_lookup(count, k));
      g_hash_table_replace(count, k, GINT_TO_POINTER(c + 1));
      uint32_t slot = f[i].route[h] & 0xffff;
      (void)slot;
    }
  }
  /* Remaining capacity per link, kept in a side table indexed by hash-table order. */
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, count);
  GArray *links = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  while (g_hash_table_iter_next(&it, &k, &v)) {
    uint32_t l = GPOINTER_TO_UINT(k) - 1;
    g_array_append_val(links, l);
  }
  assert_true(links->len < G_N_ELEMENTS(caps));
  int *unfixed = g_new0(int, links->len);
  for (guint j = 0; j < links->len; j++) {
    uint32_t l = g_array_index(links, uint32_t, j);
    caps[j] = comm__link_class_of(t, l)->Bps;
    unfixed[j] = GPOINTER_TO_INT(g_hash_table_lookup(count, GUINT_TO_POINTER(l + 1)));
    g_hash_table_replace(cap_left, GUINT_TO_POINTER(l + 1), GUINT_TO_POINTER(j + 1));
  }
  for (;;) {
    int best = -1;
    double share = INFINITY;
    for (guint j = 0; j < links->len; j++)
      if (unfixed[j] > 0 && MAX(caps[j], 0.0) / unfixed[j] < share) {
        share = MAX(caps[j], 0.0) / unfixed[j];
        best = (int)j;
      }
    if (best < 0)
      break;
    uint32_t bl = g_array_index(links, uint32_t, best);
    for (int i = 0; i < n; i++) {
      if (f[i].state != 1 || f[i].rate >= 0)
        continue;
      gboolean on = FALSE;
      for (uint32_t h = 0; h < f[i].nhops && !on; h++)
        on = f[i].route[h] == bl;
      if (!on)
        continue;
      f[i].rate = share;
      for (uint32_t h = 0; h < f[i].nhops; h++) {
        guint j = GPOINTER_TO_UINT(g_hash_table_lookup(cap_left,
                                                       GUINT_TO_POINTER(f[i].route[h] + 1))) - 1;
        caps[j] -= share;
        unfixed[j]--;
      }
    }
  }
  g_free(unfixed);
  g_array_free(links, TRUE);
}

static void ref_simulate(const comm_topology *t, ref_flow *f, int n)
{
  g_autoptr(GHashTable) a = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_autoptr(GHashTable) b = g_hash_table_new(g_direct_hash, g_direct_equal);
  double now = 0;
  int left = n;
  while (left > 0) {
    ref_rates(t, f, n, a, b);
    double next = INFINITY;
    for (int i = 0; i < n; i++) {
      if (f[i].state == 0)
        next = MIN(next, f[i].start_s + f[i].lat_s);
      else if (f[i].state == 1)
        next = MIN(next, now + f[i].rem / f[i].rate);
    }
    for (int i = 0; i < n; i++)
      if (f[i].state == 1)
        f[i].rem -= f[i].rate * (next - now);
    now = next;
    for (int i = 0; i < n; i++) {
      if (f[i].state == 1 && f[i].rem <= f[i].bytes * 1e-12 + 1e-6) {
        f[i].state = 2;
        f[i].done_s = now;
        left--;
      } else if (f[i].state == 0 && f[i].start_s + f[i].lat_s <= now) {
        f[i].state = 1;
        f[i].rem = (double)f[i].bytes;
      }
    }
  }
}

typedef struct {
  comm_net *net;
  ref_flow *f;
  sim_time_ps *done_ps;
  int i;
} ref_send;

static void ref_done(sim_engine *e, void *user)
{
  ref_send *r = user;
  r->done_ps[r->i] = sim_engine_now(e);
}

static void ref_start(sim_engine *e, void *data, uint64_t arg)
{
  ref_send *r = data;
  comm_net_send(r->net, r->f[r->i].src, r->f[r->i].dst, r->f[r->i].bytes, ref_done, r);
}

/* start_ns: sends are spread over [0, start_ns) in whole nanoseconds. N flows; with
 * `routes` > 0 they use only that many (source, destination) pairs, so that many flows share
 * a route at once. Returns the number of recomputes that filled every live flow without a
 * component search. */
static uint64_t check_against_reference(int64_t start_ns, guint32 seed, int N, int routes)
{
  g_autoptr(comm_topology) t = build("dgx1-v100", 4, "fat-tree:2", "ib-edr");
  ref_flow *f = g_new0(ref_flow, N);
  g_autoptr(GRand) rng = g_rand_new_with_seed(seed);
  uint32_t ranks = comm_topology_devices(t);
  for (int i = 0; i < N; i++) {
    uint32_t a = (uint32_t)g_rand_int_range(rng, 0, (gint32)ranks);
    uint32_t b = (uint32_t)g_rand_int_range(rng, 0, (gint32)ranks - 1);
    if (b >= a)
      b++;
    if (routes > 0 && i >= routes) {
      /* Drawn anew each time to keep the random stream the same; then a route from the
       * pool. */
      int k = g_rand_int_range(rng, 0, routes);
      f[i].src = f[k].src;
      f[i].dst = f[k].dst;
    } else {
      f[i].src = comm_topology_device(t, a);
      /* A third of the flows go to one host socket: a hot spot, as a parameter server is. */
      f[i].dst = i % 3 == 0 ? comm_topology_host(t, 1, 0) : comm_topology_device(t, b);
      if (f[i].src == f[i].dst)
        f[i].dst = comm_topology_device(t, (a + 9) % ranks);
    }
    f[i].bytes = (uint64_t)g_rand_int_range(rng, 1000, 4000000);
    f[i].start_s = (double)g_rand_int_range(rng, 0, (gint32)start_ns) * 1e-9;
    f[i].nhops = comm__route(t, f[i].src, f[i].dst, f[i].route);
    assert_true(f[i].nhops <= 64);
    f[i].lat_s = sim_time_to_s(comm_topology_route_latency(t, f[i].src, f[i].dst));
  }
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  sim_time_ps *done_ps = g_new(sim_time_ps, N);
  ref_send *rs = g_new(ref_send, N);
  for (int i = 0; i < N; i++) {
    rs[i] = (ref_send){net, f, done_ps, i};
    done_ps[i] = -1;
    sim_engine_schedule_at(e, SIM_NS(llround(f[i].start_s * 1e9)), ref_start, &rs[i], 0);
  }
  sim_engine_run(e);
  assert_int_equal(comm_net_peak_flows(net) > 20, 1); /* the pattern really overlaps */
  ref_simulate(t, f, N);
  for (int i = 0; i < N; i++) {
    double got = sim_time_to_s(done_ps[i]);
    /* Rounding: one picosecond per rate change, a few hundred changes at most. */
    if (fabs(got - f[i].done_s) > 1e-9 + 1e-9 * f[i].done_s)
      fail_msg("flow %d: flow model %.12f s, reference %.12f s", i, got, f[i].done_s);
  }
  uint64_t full = comm__net_full_fills(net);
  g_free(done_ps);
  g_free(rs);
  g_free(f);
  return full;
}

static void test_flow_matches_reference(void **state)
{
  /* Starts spread over 200 us (most flows meet active flows), and over 3 us, within the
   * latency of a route (flows join links of flows still waiting out their latency). */
  check_against_reference(200000, 12345, 120, 0);
  check_against_reference(3000, 777, 120, 0);
  check_against_reference(3000, 4242, 120, 0);
  /* Many flows on few routes (route classes of up to tens of flows, joining and leaving at
   * different times, with different sizes). */
  check_against_reference(100000, 99, 240, 12);
  check_against_reference(3000, 5, 240, 30);
  /* Enough routes at once, all connected through the host hot spot and the network, that
   * recomputes fill every live route without searching for components: they must still
   * agree, and the pattern must really take that path. */
  assert_true(check_against_reference(3000, 31337, 400, 0) > 0);
}

/* Flows on one route share one rate and are served alike, but each ends on its own bytes.
 * one.ini, 1 GB/s network, no latency, fast PCIe: node 0's NIC uplink is the bottleneck of
 * every flow below. A (1e9 bytes, node 0 -> 1) starts at 0 alone at 1 GB/s. At 0.5 s, when
 * A has 0.5e9 bytes left, B and C (0.25e9 each) join A's route and D (0.125e9, node 0 -> 2)
 * starts: four flows on the uplink at 0.25 GB/s. D ends at 0.5 + 0.125 / 0.25 = 1.0 s. Then
 * A, B, C at 1/3 GB/s: B and C have 0.125e9 left each, ending at 1.0 + 0.375 = 1.375 s, when
 * A has 0.375e9 - 0.125e9 = 0.25e9 left, alone at 1 GB/s: 1.625 s (the uplink was busy from
 * 0 on with 1.625e9 bytes at 1 GB/s). */
typedef struct {
  comm_net *net;
  comm_ep src, dst;
  uint64_t bytes;
  done_arg *arg;
} later_send;

static void on_later_send(sim_engine *engine, void *data, uint64_t arg)
{
  later_send *l = data;
  comm_net_send(l->net, l->src, l->dst, l->bytes, on_done, l->arg);
}

static void test_flows_of_one_route(void **state)
{
  g_autofree char *one = tmp("one.ini");
  g_autoptr(comm_topology) t = build(one, 3, "switch", NULL);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  done_log log = {0};
  done_arg a = {&log, 0}, b = {&log, 1}, c = {&log, 2}, d = {&log, 3};
  comm_ep n0 = comm_topology_device(t, 0), n1 = comm_topology_device(t, 1),
          n2 = comm_topology_device(t, 2);
  later_send lb = {net, n0, n1, 250000000, &b}, lc = {net, n0, n1, 250000000, &c},
             ld = {net, n0, n2, 125000000, &d};
  comm_net_send(net, n0, n1, 1000000000, on_done, &a);
  sim_engine_schedule_at(e, SIM_MS(500), on_later_send, &lb, 0);
  sim_engine_schedule_at(e, SIM_MS(500), on_later_send, &lc, 0);
  sim_engine_schedule_at(e, SIM_MS(500), on_later_send, &ld, 0);
  sim_engine_run(e);
  assert_int_equal(log.count, 4);
  assert_int_equal(comm_net_peak_flows(net), 4);
  assert_true(llabs(log.at[3] - SIM_S(1)) <= 2);
  assert_true(llabs(log.at[1] - SIM_MS(1375)) <= 3);
  assert_true(llabs(log.at[2] - SIM_MS(1375)) <= 3);
  assert_true(llabs(log.at[0] - SIM_MS(1625)) <= 4);
}

/* Rounds of traffic over the same routes with other flow counts, filled globally one after the
 * other: each round gets its own rates, not those of the fill before. one.ini, 40 nodes on one
 * switch, 1 GB/s NICs, no latency. In round A every node i sends S = 1e8 bytes to node i + 2
 * and then one flow of S bytes to node i + 1 (mod 40); in round B, three flows to i + 1. A
 * round starts when the last flow of the one before is done. Every NIC uplink and downlink
 * carries the same number of flows, PCIe is far faster, and the 80 routes form one component
 * (i -> i + 1 and i -> i + 2 share i's uplink, i -> i + 2 and i + 1 -> i + 2 share the downlink
 * of i + 2):
 *   A: 2 flows per NIC link, 0.5 GB/s each: every flow done 2 S / 1 GB/s = 0.2 s after the
 *      round's start;
 *   B: 4 flows per NIC link, 0.25 GB/s each: 0.4 s.
 * Rounds A B A B A end at 0.2, 0.6, 0.8, 1.2 and 1.4 s. The first recompute searches the
 * components and finds one holding every class; the ones after fill globally. A and B have the
 * same routes and differ only in the flow count of i -> i + 1: the rates of the other round's
 * fill would end round 4 at 1.0 s or round 5 at 1.6 s. */
#define ROUNDS 5
typedef struct {
  comm_net *net;
  const comm_topology *t;
  uint32_t nodes;
  int round, left;
  sim_time_ps first[ROUNDS], last[ROUNDS];
} rounds_run;

static void round_start(sim_engine *e, void *data, uint64_t arg);

static void round_flow_done(sim_engine *e, void *user)
{
  rounds_run *r = user;
  sim_time_ps now = sim_engine_now(e);
  if (r->first[r->round] < 0)
    r->first[r->round] = now;
  r->last[r->round] = now;
  if (--r->left == 0 && ++r->round < ROUNDS)
    sim_engine_schedule_in(e, 0, round_start, r, 0);
}

static void round_start(sim_engine *e, void *data, uint64_t arg)
{
  rounds_run *r = data;
  int to_next = r->round % 2 ? 3 : 1;
  r->left = (int)r->nodes * (1 + to_next);
  for (uint32_t i = 0; i < r->nodes; i++) {
    comm_ep src = comm_topology_device(r->t, i);
    comm_net_send(r->net, src, comm_topology_device(r->t, (i + 2) % r->nodes), 100000000,
                  round_flow_done, r);
    for (int k = 0; k < to_next; k++)
      comm_net_send(r->net, src, comm_topology_device(r->t, (i + 1) % r->nodes), 100000000,
                    round_flow_done, r);
  }
}

static void test_global_fill_rounds(void **state)
{
  g_autofree char *one = tmp("one.ini");
  g_autoptr(comm_topology) t = build(one, 40, "switch", NULL);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  rounds_run r = {net, t, 40, 0, 0, {0}, {0}};
  for (int k = 0; k < ROUNDS; k++)
    r.first[k] = -1;
  sim_engine_schedule_at(e, 0, round_start, &r, 0);
  sim_engine_run(e);
  assert_int_equal(r.round, ROUNDS);
  static const sim_time_ps end_ms[ROUNDS] = {200, 600, 800, 1200, 1400};
  for (int k = 0; k < ROUNDS; k++) {
    if (r.first[k] != SIM_MS(end_ms[k]) || r.last[k] != SIM_MS(end_ms[k]))
      fail_msg("round %d: flows done from %lld to %lld ps, want %lld", k + 1,
               (long long)r.first[k], (long long)r.last[k], (long long)SIM_MS(end_ms[k]));
  }
  assert_true(comm__net_full_fills(net) > 0);
}
#undef ROUNDS

/* A global fill's step whose subtractions depend on the order of the fixing link's class list
 * gives each round the same rates whichever order its flows came in. two.ini, 40 nodes on one
 * switch: devices 2n and 2n + 1 of node n on one socket through 2 GB/s PCIe, the NIC through
 * 2 GB/s PCIe, 1 GB/s network, no latency. In every round each
 * node n sends S = 1e8 bytes from device 2n to device 2n + 1 (A), then from device 2n one
 * flow to node n + 1's device 0 (X) and three to node n + 2's (Y), mod 40; A first, so that X
 * and Y wait for their activation (no lone flow on a free route). Per link:
 *   node n's uplink U: X and Y, 4 flows, 0.25 GB/s; the downlink of node n + 1: X of n and Y of
 *   n - 1, also 0.25; PCIe socket -> NIC and NIC -> socket, 4 flows of 2 GB/s, 0.5;
 *   device 2n -> socket (L): A, X, Y, 5 flows; once X and Y have 0.25 each, A has
 *   2 - 4 x 0.25 = 1 GB/s, under socket -> device 2n + 1 (2 GB/s, A alone).
 * So A is done 0.1 s after the round's start and X and Y 0.4 s after; rounds end at 0.4, 0.8,
 * 1.2, 1.6 and 2.0 s. U(n) comes before the downlinks in link order and fixes X and Y of node
 * n together, taking 0.25 and 3 x 0.25 from L, whose A is still unfixed: a step whose
 * subtractions depend on the order of U(n)'s list. Rounds 1-3 send X before Y, rounds 4 and 5
 * Y before X, which reverses the lists and leaves the set of classes the same. Every round has
 * three recomputes: at its start (A, X, Y), when A is done (X, Y) and at its end (nothing);
 * the first is a component search, the rest global fills. */
#define ROUNDS 5
typedef struct order_run order_run;
typedef struct {
  order_run *r;
  gboolean is_a;
} order_flow;

struct order_run {
  comm_net *net;
  const comm_topology *t;
  uint32_t nodes;
  int round, left;
  sim_time_ps a_done[ROUNDS], xy_first[ROUNDS], xy_last[ROUNDS];
  order_flow a, xy;      /* the done arguments of A and of X and Y */
};

static void order_round(sim_engine *e, void *data, uint64_t arg);

static void order_flow_done(sim_engine *e, void *user)
{
  order_flow *f = user;
  order_run *r = f->r;
  sim_time_ps now = sim_engine_now(e);
  if (f->is_a)
    r->a_done[r->round] = MAX(r->a_done[r->round], now);
  else {
    if (r->xy_first[r->round] < 0)
      r->xy_first[r->round] = now;
    r->xy_last[r->round] = now;
  }
  if (--r->left == 0 && ++r->round < ROUNDS)
    sim_engine_schedule_in(e, 0, order_round, r, 0);
}

static void order_round(sim_engine *e, void *data, uint64_t arg)
{
  order_run *r = data;
  r->left = (int)r->nodes * 5;
  for (uint32_t n = 0; n < r->nodes; n++) {
    comm_ep src = comm_topology_device(r->t, 2 * n);
    comm_ep x = comm_topology_device(r->t, 2 * ((n + 1) % r->nodes));
    comm_ep y = comm_topology_device(r->t, 2 * ((n + 2) % r->nodes));
    comm_net_send(r->net, src, comm_topology_device(r->t, 2 * n + 1), 100000000, order_flow_done,
                  &r->a);
    if (r->round < 3)
      comm_net_send(r->net, src, x, 100000000, order_flow_done, &r->xy);
    for (int k = 0; k < 3; k++)
      comm_net_send(r->net, src, y, 100000000, order_flow_done, &r->xy);
    if (r->round >= 3)
      comm_net_send(r->net, src, x, 100000000, order_flow_done, &r->xy);
  }
}

static void test_global_fill_list_order(void **state)
{
  g_autofree char *two = tmp("two.ini");
  g_autoptr(comm_topology) t = build(two, 40, "switch", NULL);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  order_run r = {.net = net, .t = t, .nodes = 40};
  r.a = (order_flow){&r, TRUE};
  r.xy = (order_flow){&r, FALSE};
  for (int k = 0; k < ROUNDS; k++)
    r.xy_first[k] = -1;
  sim_engine_schedule_at(e, 0, order_round, &r, 0);
  sim_engine_run(e);
  assert_int_equal(r.round, ROUNDS);
  for (int k = 0; k < ROUNDS; k++) {
    sim_time_ps start = SIM_MS(400) * k;
    if (r.a_done[k] != start + SIM_MS(100) || r.xy_first[k] != start + SIM_MS(400) ||
        r.xy_last[k] != start + SIM_MS(400))
      fail_msg("round %d: A done at %lld ps, X and Y from %lld to %lld ps", k + 1,
               (long long)r.a_done[k], (long long)r.xy_first[k], (long long)r.xy_last[k]);
  }
  assert_true(comm__net_full_fills(net) > 0);
}
#undef ROUNDS

/* A global fill ranks the links by the order it kept from the fill before, brought up to date
 * for the links whose flows changed. one.ini (1 GB/s NICs, fast PCIe, no latency), 122 nodes on
 * one switch: 40 cells of three nodes p, q, r, and a ticker x -> y.
 *   t = 0: in every cell C (p -> q, 1e9 bytes) and E (r -> q, 1e9 bytes), which share q's
 *     downlink: 0.5 GB/s each. The ticker sends G1 (0.1e9 bytes) and G2 (1e9 bytes) from x
 *     to y: 0.5 GB/s each. The recompute searches components: all 82 classes are reached, so
 *     the recomputes after fill globally.
 *   t = 0.2 s: G1 is done (G2 then alone at 1 GB/s, done at 0.2 + 0.9 = 1.1 s); this recompute
 *     fills globally and ranks the links: p's uplink U at 1 GB/s (C alone), q's downlink at
 *     0.5.
 *   t = 0.4 s: C and E have sent 0.2e9 bytes. Every p sends F, four flows of 0.2e9 bytes, to
 *     r: U now carries 5 flows, a share of 0.2, below q's downlink (0.5) and r's (0.25). C and
 *     F get 0.2 each, and E the 0.8 that C leaves on q's downlink.
 *   t = 1.4 s: F is done (0.2e9 / 0.2 GB/s = 1 s) and so is E (0.2e9 + 0.8 x 1 = 1e9 bytes);
 *     C has sent 0.4e9 bytes and sends the rest alone at 1 GB/s: done at 2.0 s.
 * Ranked by U's old share (1), U would come after r's downlink (0.25), which would give F
 * 0.25 and leave C nothing. */
typedef struct {
  sim_time_ps c[40], e[40], f_first[40], f_last[40], g1, g2;
  int f_count[40];
} cells_log;

typedef struct {
  cells_log *log;
  char kind;
  int cell;
} cells_arg;

static void cells_done(sim_engine *e, void *user)
{
  cells_arg *a = user;
  sim_time_ps now = sim_engine_now(e);
  cells_log *log = a->log;
  switch (a->kind) {
  case 'C': log->c[a->cell] = now; break;
  case 'E': log->e[a->cell] = now; break;
  case '1': log->g1 = now; break;
  case '2': log->g2 = now; break;
  default:
    if (log->f_count[a->cell]++ == 0)
      log->f_first[a->cell] = now;
    log->f_last[a->cell] = now;
  }
}

typedef struct {
  comm_net *net;
  const comm_topology *t;
  cells_arg *f;
} cells_run;

static void cells_start_f(sim_engine *e, void *data, uint64_t arg)
{
  cells_run *r = data;
  for (uint32_t k = 0; k < 40; k++)
    for (int i = 0; i < 4; i++)
      comm_net_send(r->net, comm_topology_device(r->t, 3 * k),
                    comm_topology_device(r->t, 3 * k + 2), 200000000, cells_done, &r->f[k]);
}

static void test_global_fill_ranks_changed_links(void **state)
{
  g_autofree char *one = tmp("one.ini");
  g_autoptr(comm_topology) t = build(one, 122, "switch", NULL);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  cells_log log = {0};
  cells_arg c[40], ea[40], f[40], g1 = {&log, '1', 0}, g2 = {&log, '2', 0};
  for (uint32_t k = 0; k < 40; k++) {
    c[k] = (cells_arg){&log, 'C', (int)k};
    ea[k] = (cells_arg){&log, 'E', (int)k};
    f[k] = (cells_arg){&log, 'F', (int)k};
    comm_net_send(net, comm_topology_device(t, 3 * k), comm_topology_device(t, 3 * k + 1),
                  1000000000, cells_done, &c[k]);
    comm_net_send(net, comm_topology_device(t, 3 * k + 2), comm_topology_device(t, 3 * k + 1),
                  1000000000, cells_done, &ea[k]);
  }
  comm_net_send(net, comm_topology_device(t, 120), comm_topology_device(t, 121), 100000000,
                cells_done, &g1);
  comm_net_send(net, comm_topology_device(t, 120), comm_topology_device(t, 121), 1000000000,
                cells_done, &g2);
  cells_run run = {net, t, f};
  sim_engine_schedule_at(e, SIM_MS(400), cells_start_f, &run, 0);
  sim_engine_run(e);
  assert_true(llabs(log.g1 - SIM_MS(200)) <= 2);
  assert_true(llabs(log.g2 - SIM_MS(1100)) <= 4);
  for (int k = 0; k < 40; k++) {
    assert_int_equal(log.f_count[k], 4);
    if (llabs(log.f_first[k] - SIM_MS(1400)) > 4 || llabs(log.f_last[k] - SIM_MS(1400)) > 4 ||
        llabs(log.e[k] - SIM_MS(1400)) > 4 || llabs(log.c[k] - SIM_MS(2000)) > 6)
      fail_msg("cell %d: C done at %lld ps, E at %lld, F from %lld to %lld", k,
               (long long)log.c[k], (long long)log.e[k], (long long)log.f_first[k],
               (long long)log.f_last[k]);
  }
  assert_true(comm__net_full_fills(net) >= 3);
}

/* A global fill after flows ended starts from the last one's steps that it would repeat.
 * one.ini (1 GB/s NICs, fast PCIe, no latency), 120 nodes on one switch: 40 cells k of three
 * nodes p, q, r. In cell k, C (p -> q, 1e9 bytes) and D (p -> r, 0.01e9 (40 - k) bytes) share
 * p's uplink: 0.5 GB/s each. The first recompute searches components and finds all 80
 * classes, so the recomputes after fill globally. D of cell k is done at t_k = 0.02 (40 - k) s,
 * alone in its recompute, which changes only cell k: C there has its uplink alone, 1 GB/s, and
 * the other cells keep 0.5. C of cell k has sent 0.5e9 t_k bytes by t_k, and is done at
 * t_k + (1 - 0.5 t_k) = 1 + 0.01 (40 - k) s. The uplinks at 0.5 are fixed in the order of
 * their ids, which is that of the cells, so each of those fills takes the steps of the last one
 * that fixed the cells before k; taking the one of cell k too would leave C there at 0.5 GB/s
 * (done at 2 s). After GLOBAL_RUNS global fills a recompute searches the components again and
 * finds only cell k's: the fills after are per component. */
typedef struct {
  sim_time_ps c[40], d[40];
} ended_log;

typedef struct {
  ended_log *log;
  gboolean is_c;
  int cell;
} ended_arg;

static void ended_done(sim_engine *e, void *user)
{
  ended_arg *a = user;
  (a->is_c ? a->log->c : a->log->d)[a->cell] = sim_engine_now(e);
}

static void test_global_fill_after_flows_end(void **state)
{
  g_autofree char *one = tmp("one.ini");
  g_autoptr(comm_topology) t = build(one, 120, "switch", NULL);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  ended_log log = {0};
  ended_arg c[40], d[40];
  for (uint32_t k = 0; k < 40; k++) {
    c[k] = (ended_arg){&log, TRUE, (int)k};
    d[k] = (ended_arg){&log, FALSE, (int)k};
    comm_ep p = comm_topology_device(t, 3 * k);
    comm_net_send(net, p, comm_topology_device(t, 3 * k + 1), 1000000000, ended_done, &c[k]);
    comm_net_send(net, p, comm_topology_device(t, 3 * k + 2), 10000000 * (uint64_t)(40 - k),
                  ended_done, &d[k]);
  }
  sim_engine_run(e);
  for (int k = 0; k < 40; k++) {
    sim_time_ps d_want = SIM_MS(20) * (40 - k), c_want = SIM_S(1) + SIM_MS(10) * (40 - k);
    if (llabs(log.d[k] - d_want) > 2 || llabs(log.c[k] - c_want) > 4)
      fail_msg("cell %d: D done at %lld ps (want %lld), C at %lld (want %lld)", k,
               (long long)log.d[k], (long long)d_want, (long long)log.c[k], (long long)c_want);
  }
  assert_int_equal(comm__net_full_fills(net), 31);
  assert_true(comm__net_steps_reused(net) > 0);
}

/* The plain solver (comm_net_set_plain) against the flow model with its speed-ups: the same
 * mixed load, 1500 transfers between random devices and hosts of 16 dgx1-v100 nodes (a
 * pseudo-random sequence fixed by its seed), of 1 KB to 16 MB each, started in bursts of 1 to
 * 64 at instants 0 to 2 ms apart, must end at the same picosecond under both, flow by flow.
 * The load is made to reach the speed-ups: the run with them fills globally and resumes from
 * its log, the plain run never does. */
typedef struct {
  comm_net *net;
  const comm_topology *topo;
  sim_time_ps *done;
  uint64_t rng;
  uint32_t sent, total;
} mixed_load;

typedef struct {
  mixed_load *m;
  uint32_t id;
} mixed_flow;

static uint32_t mixed_next(mixed_load *m, uint32_t n)
{
  m->rng = m->rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)((m->rng >> 33) % n);
}

static void mixed_done(sim_engine *e, void *user)
{
  mixed_flow *f = user;
  f->m->done[f->id] = sim_engine_now(e);
  g_free(f);
}

static void mixed_burst(sim_engine *e, void *data, uint64_t arg)
{
  mixed_load *m = data;
  uint32_t devices = comm_topology_devices(m->topo), nodes = comm_topology_nodes(m->topo);
  uint32_t burst = 1 + mixed_next(m, 64);
  for (uint32_t i = 0; i < burst && m->sent < m->total; i++) {
    comm_ep src = comm_topology_device(m->topo, mixed_next(m, devices));
    comm_ep dst = mixed_next(m, 8) == 0
                      ? comm_topology_host(m->topo, mixed_next(m, nodes), 0)
                      : comm_topology_device(m->topo, mixed_next(m, devices));
    uint64_t bytes = 1000 + (uint64_t)mixed_next(m, 16000) * 1000;
    mixed_flow *f = g_new(mixed_flow, 1);
    *f = (mixed_flow){m, m->sent++};
    comm_net_send(m->net, src, dst, bytes, mixed_done, f);
  }
  if (m->sent < m->total)
    sim_engine_schedule_in(e, SIM_US(mixed_next(m, 2000)), mixed_burst, m, 0);
}

static void run_mixed(const comm_topology *t, gboolean plain, sim_time_ps *done, uint32_t total,
                      uint64_t *full_fills, uint64_t *steps_reused)
{
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  comm_net_set_plain(net, plain);
  assert_int_equal(comm_net_get_plain(net), plain);
  mixed_load m = {net, t, done, 12345, 0, total};
  sim_engine_schedule_at(e, 0, mixed_burst, &m, 0);
  sim_engine_run(e);
  assert_int_equal(comm_net_active_flows(net), 0);
  *full_fills = comm__net_full_fills(net);
  *steps_reused = comm__net_steps_reused(net);
}

static void test_plain_solver_same_times(void **state)
{
  g_autoptr(comm_topology) t = build("dgx1-v100", 16, "fat-tree", NULL);
  enum { TOTAL = 1500 };
  sim_time_ps *fast = g_new0(sim_time_ps, TOTAL), *plain = g_new0(sim_time_ps, TOTAL);
  uint64_t fast_fills, fast_reused, plain_fills, plain_reused;
  run_mixed(t, FALSE, fast, TOTAL, &fast_fills, &fast_reused);
  run_mixed(t, TRUE, plain, TOTAL, &plain_fills, &plain_reused);
  assert_true(fast_fills > 0);
  assert_true(fast_reused > 0);
  assert_int_equal(plain_fills, 0);
  assert_int_equal(plain_reused, 0);
  for (uint32_t i = 0; i < TOTAL; i++) {
    assert_true(fast[i] > 0);
    if (fast[i] != plain[i])
      fail_msg("transfer %u: done at %lld ps with the speed-ups, %lld without", i,
               (long long)fast[i], (long long)plain[i]);
  }
  g_free(fast);
  g_free(plain);
}

/* The invariant checker. one.ini (1 GB/s NICs, fast PCIe, no latency), 5 nodes on one switch:
 * A (node 0 -> 1) and B (node 0 -> 2), 1e9 bytes each, share node 0's uplink, 0.5 GB/s each;
 * C (node 3 -> 4) is alone, 1 GB/s. At 0.1 s (no flow starts or ends then) the network checks
 * out; then each record is broken in turn and the checker must name the breach: A at 0.75 GB/s
 * puts 1.25 GB/s on the uplink; A at 0.7 and B at 0.3 GB/s fill it but leave B without a
 * bottleneck (on the uplink A has more, its other links are not full); B's first link (out of
 * device 0, which A shares) counting one flow too many, 3 for the 2 its classes hold. Restored,
 * the run ends as max-min says: A and B at 2 s, C at 1 s. */
typedef struct {
  comm_net *net;
  int checked;
} check_run;

static fclass *class_of(comm_net *net, comm_ep src, comm_ep dst)
{
  for (uint32_t i = 0; i < net->live_classes.n; i++)
    if (net->live_classes.v[i]->key == ((uint64_t)src << 32 | dst))
      return net->live_classes.v[i];
  fail_msg("no class %u -> %u", src, dst);
  return NULL;
}

static void expect_breach(comm_net *net, const char *what)
{
  g_autoptr(GError) error = NULL;
  assert_false(comm_net_check(net, &error));
  assert_non_null(error);
  assert_int_equal(error->code, DT_ERROR_INTERNAL);
  if (!strstr(error->message, what))
    fail_msg("expected '%s' in: %s", what, error->message);
}

static void check_at(sim_engine *e, void *data, uint64_t arg)
{
  check_run *r = data;
  comm_net *net = r->net;
  const comm_topology *t = comm_net_topology(net);
  g_autoptr(GError) error = NULL;
  if (!comm_net_check(net, &error))
    fail_msg("%s", error->message);
  fclass *a = class_of(net, comm_topology_device(t, 0), comm_topology_device(t, 1));
  fclass *b = class_of(net, comm_topology_device(t, 0), comm_topology_device(t, 2));
  assert_true(fabs(a->rate - 0.5e9) < 1.0 && fabs(b->rate - 0.5e9) < 1.0);
  double ra = a->rate, rb = b->rate;
  a->rate = 0.75e9;
  expect_breach(net, "over its capacity");
  a->rate = 0.7e9;
  b->rate = 0.3e9;
  expect_breach(net, "not max-min fair");
  a->rate = ra;
  b->rate = rb;
  link_state *L = &net->links[b->hops[0].link];
  L->flows++;
  expect_breach(net, "counts 3 flows, its classes hold 2");
  L->flows--;
  /* C (device 3 -> 4) is alone on its links: a lone flow, with no class of its own, marked on
   * each link of its route. */
  assert_int_equal(net->live_classes.n, 2);
  assert_int_equal(net->rec.lone.n, 1);
  flow *c = net->rec.lone.v[0];
  assert_int_equal(c->src, comm_topology_device(t, 3));
  assert_null(c->cls);
  assert_true(c->nlinks >= 1);
  net->link_busy[c->links[0]] = LINK_FREE;
  expect_breach(net, "lone flow");
  net->link_busy[c->links[0]] = LINK_LONE;
  if (!comm_net_check(net, &error))
    fail_msg("%s", error->message);
  r->checked++;
}

static void test_net_check(void **state)
{
  g_autofree char *one = tmp("one.ini");
  g_autoptr(comm_topology) t = build(one, 5, "switch", NULL);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  done_log log = {0};
  done_arg da[3] = {{&log, 0}, {&log, 1}, {&log, 2}};
  comm_net_send(net, comm_topology_device(t, 0), comm_topology_device(t, 1), 1000000000,
                on_done, &da[0]);
  comm_net_send(net, comm_topology_device(t, 0), comm_topology_device(t, 2), 1000000000,
                on_done, &da[1]);
  comm_net_send(net, comm_topology_device(t, 3), comm_topology_device(t, 4), 1000000000,
                on_done, &da[2]);
  check_run r = {net, 0};
  sim_engine_schedule_at(e, SIM_MS(100), check_at, &r, 0);
  sim_engine_run(e);
  assert_int_equal(r.checked, 1);
  assert_int_equal(log.count, 3);
  assert_true(llabs(log.at[0] - SIM_S(2)) <= 2 && llabs(log.at[1] - SIM_S(2)) <= 2);
  assert_true(llabs(log.at[2] - SIM_S(1)) <= 1);
  g_autoptr(GError) error = NULL;
  assert_true(comm_net_check(net, &error));
}

/* Every rank sends to rank r^1 (an NVLink pair, each direction its own link) at once: no two
 * flows share a link, so every one must take its closed-form time. */
static void test_flow_disjoint_pattern_equals_analytic(void **state)
{
  g_autoptr(comm_topology) t = build("dgx1-v100", 8, "fat-tree", NULL);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  uint32_t n = comm_topology_devices(t);
  sim_time_ps *done = g_new(sim_time_ps, n);
  ref_send *rs = g_new(ref_send, n);
  for (uint32_t r = 0; r < n; r++) {
    rs[r] = (ref_send){net, NULL, done, (int)r};
    comm_net_send(net, comm_topology_device(t, r), comm_topology_device(t, r ^ 1u), 1 << 20,
                  ref_done, &rs[r]);
  }
  sim_engine_run(e);
  for (uint32_t r = 0; r < n; r++)
    assert_int_equal(done[r], comm_topology_p2p_time(t, comm_topology_device(t, r),
                                                     comm_topology_device(t, r ^ 1u), 1 << 20));
  g_free(done);
  g_free(rs);
}

static uint64_t run_pattern_hash(void)
{
  g_autoptr(comm_topology) t = build("dgx1-v100", 4, "fat-tree", NULL);
  g_autoptr(sim_engine) e = sim_engine_new();
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  uint32_t n = comm_topology_devices(t);
  for (uint32_t r = 0; r < n; r++) {
    comm_net_send(net, comm_topology_device(t, r), comm_topology_device(t, (r + 8) % n),
                  1 << 20, NULL, NULL);
    comm_net_send(net, comm_topology_device(t, r), comm_topology_device(t, (r * 7 + 3) % n),
                  (r + 1) * 4096, NULL, NULL);
  }
  sim_engine_run(e);
  assert_int_equal(comm_net_active_flows(net), 0);
  return sim_engine_trace_hash(e);
}

static void test_deterministic(void **state)
{
  assert_true(run_pattern_hash() == run_pattern_hash());
}

/* Counts observer reports. */
typedef struct {
  int procs, spans_begun, spans_ended, counters;
} obs_count;

static void o_proc(void *u, const sim_proc_info *p)
{
  if (p->kind == SIM_PROC_LINK)
    ((obs_count *)u)->procs++;
}
static void o_begin(void *u, const sim_span *s) { ((obs_count *)u)->spans_begun++; }
static void o_end(void *u, const sim_span *s) { ((obs_count *)u)->spans_ended++; }
static void o_counter(void *u, sim_proc_id p, const char *n, sim_time_ps at, double v)
{
  ((obs_count *)u)->counters++;
}

static void test_observers(void **state)
{
  static const sim_observer_ops ops = {.proc_added = o_proc, .span_begin = o_begin,
                                       .span_end = o_end, .counter = o_counter};
  g_autoptr(comm_topology) t = build("dgx1-v100", 2, NULL, NULL);
  g_autoptr(sim_engine) e = sim_engine_new();
  obs_count c = {0};
  sim_engine_add_observer(e, &ops, &c);
  g_autoptr(comm_net) net = comm_net_new(e, t, COMM_NET_FLOW);
  comm_net_send(net, comm_topology_device(t, 0), comm_topology_device(t, 8), 1 << 20, NULL, NULL);
  comm_net_send(net, comm_topology_device(t, 0), comm_topology_device(t, 1), 1 << 20, NULL, NULL);
  sim_engine_run(e);
  assert_int_equal(c.procs, 2);          /* one link process per node */
  assert_int_equal(c.spans_begun, 2);
  assert_int_equal(c.spans_ended, 2);
  assert_true(c.counters >= 1);          /* node 0's NIC transmit rate */
}

static void test_list_catalogs(void **state)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  assert_int_equal(dtsim_list_networks(out, FALSE), 0);
  assert_int_equal(dtsim_list_systems(out, TRUE), 0);
  fclose(out);
  assert_contains(buf, "ib-edr");
  assert_contains(buf, "nvswitch-h100");
  assert_contains(buf, "\"name\":\"dgx1-v100\"");
  assert_contains(buf, "\"name\":\"stampede2-knl\"");
  free(buf);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_catalog_presets_load),
      cmocka_unit_test(test_catalog_values),
      cmocka_unit_test(test_catalog_errors),
      cmocka_unit_test(test_topology_errors),
      cmocka_unit_test(test_routes_intra),
      cmocka_unit_test(test_path_classes),
      cmocka_unit_test(test_gpudirect_staging),
      cmocka_unit_test(test_server_uses_rails),
      cmocka_unit_test(test_rails_and_pxn),
      cmocka_unit_test(test_nvlink_pairs),
      cmocka_unit_test(test_routes_inter),
      cmocka_unit_test(test_p2p_time_by_hand),
      cmocka_unit_test(test_two_flows_share_one_link),
      cmocka_unit_test(test_incast_busiest_link),
      cmocka_unit_test(test_flow_ends_and_other_speeds_up),
      cmocka_unit_test(test_three_flows_maxmin),
      cmocka_unit_test(test_switch_bandwidth_shared),
      cmocka_unit_test(test_small_message_latency),
      cmocka_unit_test(test_flow_joins_during_latency),
      cmocka_unit_test(test_reserved_flow_through_global_fills),
      cmocka_unit_test(test_flow_equals_analytic_uncontended),
      cmocka_unit_test(test_zero_and_self),
      cmocka_unit_test(test_fat_tree_oversubscription),
      cmocka_unit_test(test_flow_matches_reference),
      cmocka_unit_test(test_flows_of_one_route),
      cmocka_unit_test(test_global_fill_rounds),
      cmocka_unit_test(test_global_fill_list_order),
      cmocka_unit_test(test_global_fill_ranks_changed_links),
      cmocka_unit_test(test_global_fill_after_flows_end),
      cmocka_unit_test(test_plain_solver_same_times),
      cmocka_unit_test(test_net_check),
      cmocka_unit_test(test_flow_disjoint_pattern_equals_analytic),
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_observers),
      cmocka_unit_test(test_list_catalogs),
      cmocka_unit_test(test_nvlink_domain),
  };
  return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
