/* Tests of the topologies people build and of their failures (comm/topology.c): the
 * rail-optimized fat tree (--topology rail[:OVERSUB]) and its oversubscription, and routes
 * around failed links. Every route and hop count is worked out by hand in the comments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <glib/gstdio.h>

#include "comm_internal.h"
#include "route_shape.h"

static comm_topology *build(const char *system, uint32_t nodes, const char *topology)
{
  comm_cluster_spec spec = {.system = system, .nodes = nodes, .topology = topology};
  g_autoptr(GError) error = NULL;
  comm_topology *t = comm_topology_build(&spec, &error);
  if (!t)
    fail_msg("%s", error->message);
  return t;
}

/* Azure's ND H100 v5 is an NVSwitch node with 8 GPUs, 8 NDR NICs, 2 GPUs and 2 NICs per PCIe
 * switch, and no rail wiring in its preset: under `fat-tree` (64-port switches, 32 down) the 16
 * NICs of two nodes fill one leaf, and GPU i of node 0 reaches GPU j of node 1 by its own NIC i:
 * GPU - PCIe switch - NIC - leaf - NIC - PCIe switch - GPU, 6 links, none between switches.
 * Under `rail` NIC k of both nodes is on rail k's leaf; with PXN (the preset's default) GPU i
 * hands the data over the NVSwitch to GPU j, beside NIC j: 2 + 6 = 8 links, still no spine, and
 * it enters the network at node 0's NIC j. For i == j no hand-over: 6 links. */
static void test_rail_routes(void **state)
{
  (void)state;
  g_autoptr(comm_topology) tree = build("nd-h100-v5", 2, "fat-tree");
  g_autoptr(comm_topology) rail = build("nd-h100-v5", 2, "rail");
  assert_false(comm_topology_system(rail)->rail_optimized);
  for (uint32_t i = 0; i < 8; i++)
    for (uint32_t j = 0; j < 8; j++) {
      route_shape r = shape_of(tree, i, 8 + j);
      assert_int_equal(r.links, 6);
      assert_int_equal(r.spine_links, 0);
      assert_int_equal(r.nic, i);
      r = shape_of(rail, i, 8 + j);
      assert_int_equal(r.links, i == j ? 6 : 8);
      assert_int_equal(r.spine_links, 0);
      assert_int_equal(r.node, 0);
      assert_int_equal(r.nic, j);
    }
  /* Inside a node the rails change nothing: GPU - NVSwitch - GPU. */
  assert_int_equal(shape_of(rail, 0, 5).links, 2);
}

/* Without PXN (a copy of the preset with pxn = no) GPU i keeps its NIC i and crossing to rail j
 * costs the spine: GPU - switch - NIC - leaf i - spine - leaf j - NIC - switch - GPU, 8 links,
 * 2 of them between switches; on its own rail (i == j) 6 links and none. */
static void test_rail_without_pxn(void **state)
{
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("dtsim-wire-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "nopxn.ini", NULL);
  assert_true(g_file_set_contents(path, "[system]\ndescription = x\ndevice = h100-sxm5-80gb\n"
                                        "devices_per_node = 8\nlayout = nvswitch\n"
                                        "intra = nvswitch-h100\ninter = ib-ndr\npcie = pcie5-x16\n"
                                        "nics_per_node = 8\nsockets = 2\n"
                                        "pcie_switches_per_socket = 2\npxn = no\n", -1, NULL));
  g_autoptr(comm_topology) rail = build(path, 2, "rail");
  for (uint32_t i = 0; i < 8; i++)
    for (uint32_t j = 0; j < 8; j++) {
      route_shape r = shape_of(rail, i, 8 + j);
      assert_int_equal(r.links, i == j ? 6 : 8);
      assert_int_equal(r.spine_links, i == j ? 0 : 2);
      assert_int_equal(r.nic, i);
    }
  g_unlink(path);
  g_rmdir(dir);
}

/* Oversubscription: a 64-port NDR leaf at rail:3 has floor(64 x 3 / 4) = 48 ports down and 16
 * up; at rail (1:1) 32 and 32. With 49 nodes, node 0 and node 47 share rail 0's leaf at 3:1
 * (6 links, no spine) but not at 1:1 (nodes 0-31 per leaf: 8 links, 2 through a spine); node
 * 48 is in the second leaf group either way. Leaves: ceil(49 / 48) = 2 groups x 8 rails = 16
 * leaves x 16 up links = 256 at 3:1; ceil(49 / 32) = 2 groups, 16 leaves x 32 = 512 at 1:1:
 * the 1:1 tree has 2 x 256 = 512 more directed links. */
static void test_rail_oversubscription(void **state)
{
  (void)state;
  g_autoptr(comm_topology) over = build("nd-h100-v5", 49, "rail:3");
  g_autoptr(comm_topology) full = build("nd-h100-v5", 49, "rail");
  assert_int_equal(shape_of(over, 0, 47 * 8).links, 6);
  assert_int_equal(shape_of(over, 0, 47 * 8).spine_links, 0);
  assert_int_equal(shape_of(full, 0, 47 * 8).links, 8);
  assert_int_equal(shape_of(full, 0, 47 * 8).spine_links, 2);
  assert_int_equal(shape_of(over, 0, 48 * 8).spine_links, 2);
  assert_int_equal(shape_of(full, 0, 48 * 8).spine_links, 2);
  assert_int_equal(comm_topology_links(full) - comm_topology_links(over), 512);
  /* Oversubscription that leaves no up port, or is not a number, is refused. */
  comm_cluster_spec bad = {.system = "nd-h100-v5", .nodes = 2, .topology = "rail:0.5"};
  g_autoptr(GError) error = NULL;
  assert_null(comm_topology_build(&bad, &error));
  assert_non_null(strstr(error->message, "--topology: 'rail:0.5'"));
  g_clear_error(&error);
  bad.topology = "rail:many";
  assert_null(comm_topology_build(&bad, &error));
  assert_non_null(strstr(error->message, "is not a number >= 1"));
}

/* The first link between switches of a route (leaf -> spine), or UINT32_MAX. */
static uint32_t up_link(const comm_topology *t, uint32_t a, uint32_t b)
{
  g_autofree uint32_t *buf = g_new(uint32_t, comm__route_max(t));
  uint32_t n = comm__route(t, comm_topology_device(t, a), comm_topology_device(t, b), buf);
  for (uint32_t i = 0; i < n; i++)
    if (strcmp(comm__link_class_of(t, buf[i])->kind, "net") == 0)
      return buf[i];
  return UINT32_MAX;
}

/* Destination-mod-k in rails: 64 nodes under `rail` (32 down, 32 up per leaf) make two leaf
 * groups. GPU 0 of node 0 sending to GPU 0 of nodes 32..63 goes up from rail 0's leaf of group
 * 0 to the spine of the receiver's port on its leaf, (node mod 32) mod 32 = 0..31: 32
 * different up-links, one per receiver. (Taking the NIC's global index 8 node mod 32 would
 * give 0, 8, 16, 24: four up-links for the 32 receivers.) */
static void test_rail_spines_spread(void **state)
{
  (void)state;
  g_autoptr(comm_topology) rail = build("nd-h100-v5", 64, "rail");
  g_autoptr(GHashTable) ups = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (uint32_t n = 32; n < 64; n++) {
    uint32_t l = up_link(rail, 0, n * 8);
    assert_true(l != UINT32_MAX);
    g_hash_table_add(ups, GUINT_TO_POINTER(l + 1));
  }
  assert_int_equal(g_hash_table_size(ups), 32);
}

static comm_topology *build_down(const char *system, uint32_t nodes, const char *topology,
                                 const char *inter, const comm_link_name *down, uint32_t n,
                                 GError **error)
{
  comm_cluster_spec spec = {.system = system, .nodes = nodes, .topology = topology,
                            .inter = inter, .links_down = down, .n_links_down = n};
  return comm_topology_build(&spec, error);
}

static char *link_name_of(const comm_topology *t, uint32_t a, uint32_t b, uint32_t i)
{
  g_autofree uint32_t *buf = g_new(uint32_t, comm__route_max(t));
  uint32_t n = comm__route(t, comm_topology_device(t, a), comm_topology_device(t, b), buf);
  return i < n ? comm_topology_link_name(t, buf[i]) : g_strdup("");
}

/* A failed NIC link: on two ND H100 v5 nodes under `fat-tree` all 16 NICs share leaf 0. With
 * node0/nic0-leaf0 down, GPU 0 of node 0 leaves by the nearest NIC left, NIC 1 on its own PCIe
 * switch (GPUs and NICs 0 and 1 share switch 0): GPU - PCIe switch - NIC 1 - leaf 0 - NIC 0 of
 * node 1 - switch - GPU 0, 6 links as before, entering the network at NIC 1. GPU 2 (NIC 2's)
 * keeps its own NIC. */
static void test_link_down_nic(void **state)
{
  (void)state;
  comm_link_name down[] = {{"node0/nic0", "leaf0"}};
  g_autoptr(GError) error = NULL;
  g_autoptr(comm_topology) t = build_down("nd-h100-v5", 2, "fat-tree", NULL, down, 1, &error);
  assert_non_null(t);
  assert_int_equal(comm_topology_links_down(t), 1);
  route_shape r = shape_of(t, 0, 8);
  assert_int_equal(r.links, 6);
  assert_int_equal(r.node, 0);
  assert_int_equal(r.nic, 1);
  assert_int_equal(shape_of(t, 2, 8 + 2).nic, 2);
  g_autofree char *second = link_name_of(t, 0, 8, 1);
  assert_string_equal(second, "node0/pcie0-node0/nic1");
  /* The other direction: node 1's GPU 0 reaches node 0's GPU 0 through node 0's NIC 1 too. */
  g_autofree char *fourth = link_name_of(t, 8, 0, 3);
  assert_string_equal(fourth, "leaf0-node0/nic1");
}

/* A failed spine link: 64 ND H100 v5 nodes under `rail` (32 down, 32 up) make two leaf groups.
 * GPU 0 of node 0 sends to GPU 0 of node 35 through spine (35 mod 32) mod 32 = 3; with
 * leaf0-spine3 down it takes the next spine, 4: still 8 links, two between switches. */
static void test_link_down_spine(void **state)
{
  (void)state;
  comm_link_name down[] = {{"spine3", "leaf0"}};
  g_autoptr(GError) error = NULL;
  g_autoptr(comm_topology) up = build("nd-h100-v5", 64, "rail");
  g_autoptr(comm_topology) t = build_down("nd-h100-v5", 64, "rail", NULL, down, 1, &error);
  assert_non_null(t);
  g_autofree char *before = comm_topology_link_name(up, up_link(up, 0, 35 * 8));
  g_autofree char *after = comm_topology_link_name(t, up_link(t, 0, 35 * 8));
  assert_string_equal(before, "leaf0-spine3");
  assert_string_equal(after, "leaf0-spine4");
  assert_int_equal(shape_of(t, 0, 35 * 8).links, 8);
  assert_int_equal(shape_of(t, 0, 35 * 8).spine_links, 2);
  /* Node 36 (spine 4) is not affected. */
  g_autofree char *other = comm_topology_link_name(t, up_link(t, 0, 36 * 8));
  assert_string_equal(other, "leaf0-spine4");
}

/* A failed NVLink: the DGX-1's hybrid cube mesh joins GPUs 0 and 1 by one NVLink. With it
 * down, breadth-first search over NVLink (in the mesh's link order: 0-1 gone, 0-2, 0-3, 0-4)
 * reaches GPU 2 first and from it GPU 1 (link 1-2): two NVLink hops, GPU 0 - GPU 2 - GPU 1. */
static void test_link_down_nvlink(void **state)
{
  (void)state;
  comm_link_name down[] = {{"node0/dev0", "node0/dev1"}};
  g_autoptr(GError) error = NULL;
  g_autoptr(comm_topology) up = build("dgx1-v100", 1, NULL);
  g_autoptr(comm_topology) t = build_down("dgx1-v100", 1, NULL, NULL, down, 1, &error);
  assert_non_null(t);
  assert_int_equal(shape_of(up, 0, 1).links, 1);
  assert_int_equal(shape_of(t, 0, 1).links, 2);
  g_autofree char *first = link_name_of(t, 0, 1, 0);
  g_autofree char *second = link_name_of(t, 0, 1, 1);
  assert_string_equal(first, "node0/dev0-node0/dev2");
  assert_string_equal(second, "node0/dev2-node0/dev1");
  assert_string_equal(comm_topology_link_tier(t, 0), "nvlink");
  /* The reverse direction avoids it too. */
  assert_int_equal(shape_of(t, 1, 0).links, 2);
}

/* Refusals: a name that is no vertex, two vertices no link joins, a node cut off from the
 * network, and leaves no spine joins any more (radix-4 switches: 2 down, 2 up; leaf 0 loses
 * both of its up links). */
static void test_link_down_refused(void **state)
{
  (void)state;
  g_autoptr(GError) error = NULL;
  comm_link_name nowhere[] = {{"node9/dev0", "node0/dev1"}};
  assert_null(build_down("dgx1-v100", 2, NULL, NULL, nowhere, 1, &error));
  assert_non_null(strstr(error->message, "--link-down: 'node9/dev0' is not a vertex"));
  g_clear_error(&error);
  comm_link_name no_link[] = {{"node0/dev0", "node0/dev5"}};
  assert_null(build_down("nd-h100-v5", 1, NULL, NULL, no_link, 1, &error));
  assert_non_null(strstr(error->message, "no link joins node0/dev0 and node0/dev5"));
  g_clear_error(&error);
  comm_link_name all_nics[8];
  for (int k = 0; k < 8; k++) {
    g_snprintf(all_nics[k].a, sizeof all_nics[k].a, "node0/nic%d", k);
    g_snprintf(all_nics[k].b, sizeof all_nics[k].b, "leaf0");
  }
  assert_null(build_down("nd-h100-v5", 2, "fat-tree", NULL, all_nics, 8, &error));
  assert_non_null(strstr(error->message, "reaches no NIC to the network"));
  g_clear_error(&error);
  g_autofree char *dir = g_dir_make_tmp("dtsim-wire-XXXXXX", NULL);
  g_autofree char *net = g_build_filename(dir, "net4.ini", NULL);
  assert_true(g_file_set_contents(net, "[fabric]\ndescription = radix 4\nscope = inter\n"
                                       "bandwidth_GBps = 1\nlatency_ns = 0\nswitch_radix = 4\n",
                                  -1, NULL));
  comm_link_name cut[] = {{"leaf0", "spine0"}, {"leaf0", "spine1"}};
  assert_null(build_down("nd-h100-v5", 2, "fat-tree", net, cut, 2, &error));
  assert_non_null(strstr(error->message, "no route is left between leaf0 and leaf1"));
  g_clear_error(&error);
  /* One of the two is not enough to cut it. */
  g_autoptr(comm_topology) one = build_down("nd-h100-v5", 2, "fat-tree", net, cut, 1, &error);
  assert_non_null(one);
  g_unlink(net);
  g_rmdir(dir);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rail_routes),
      cmocka_unit_test(test_rail_without_pxn),
      cmocka_unit_test(test_rail_oversubscription),
      cmocka_unit_test(test_rail_spines_spread),
      cmocka_unit_test(test_link_down_nic),
      cmocka_unit_test(test_link_down_spine),
      cmocka_unit_test(test_link_down_nvlink),
      cmocka_unit_test(test_link_down_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
