/* The "nccl" algorithm: what NCCL would run for a collective on this topology.
 *
 * NCCL splits a collective over channels. Each channel is a ring (or a tree) laid over its own
 * links: on an NVLink mesh each ring follows NVLinks only (a Hamiltonian cycle of the wiring, in
 * both directions), on an NVSwitch or PCIe node every ring crosses the same switch, and across
 * nodes every ring leaves a node through the NIC of the GPU where it leaves (rail alignment), the
 * channels spread over the NICs. A protocol moves the bytes: LL (8-byte lines of 4 data bytes
 * and a flag), LL128 (128-byte lines with 8 flag bytes) or Simple (bulk copies behind a memory
 * fence). Each (algorithm, protocol) has a base latency, a latency per hop by the kind of hop
 * (NVLink, PCIe, network) and a bandwidth efficiency, with per-architecture caps; NCCL picks the
 * pair whose cost latency + bytes / bandwidth is least. On an NVSwitch with in-switch reduction
 * and multicast (NVLink SHARP, third-generation NVSwitch) NVLS is one more algorithm: every GPU
 * sends its buffer up once and receives the result down once.
 *
 * Here every candidate's cost is the closed form of its channels on an idle network: each
 * channel's transfers are the flows the executor would start, each sharing every link of its
 * route equally with the other channels' flows on that link (the first level of max-min
 * sharing, exact for the bottleneck flows of symmetric channels). The choice runs the cheapest
 * as flows: one sub-collective per channel (ring, double tree, chain or all-to-all from the
 * registry, on the channel's rank order), or NVLS's flows to and from the switch. Protocol
 * efficiency shows as wire bytes (payload / efficiency); per-hop latencies as the step cost.
 * "nccl:ALGO[/PROTO[/CHANNELS]]" restricts the choice as NCCL_ALGO, NCCL_PROTO and
 * NCCL_MIN_NCHANNELS do (coll__nccl_plan_forced), and refuses an algorithm the system cannot
 * run in one line. docs/nccl.md gives the source of every constant. */
#include "coll_internal.h"
#include "comm_internal.h"
#include "util.h"

#include <math.h>
#include <string.h>

/* ---- NCCL's published tuning constants (src/graph/tuning.cc, src/tuning/nvls.cc) --------- */

enum { HW_NVLINK, HW_PCI, HW_NET, HW_N };
enum { A_TREE, A_RING, A_N };
enum { ARCH_VOLTA, ARCH_AMPERE, ARCH_HOPPER, ARCH_BLACKWELL, ARCH_N };

const char *const coll__nccl_proto_names[COLL__NPROTO] = {"LL", "LL128", "Simple"};
const char *const coll__nccl_algo_names[COLL__NCCL_NALGO] = {
    "ring", "tree", "nvls", "p2p", "collnet-direct", "nvlstree", "collnet-chain", "pat"};

/* Base latency of a collective, microseconds: [algorithm][protocol]. */
static const double base_lat_us[A_N][COLL__NPROTO] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
/* Latency per hop, microseconds: [hop kind][algorithm][protocol]. */
static const double hw_lat_us[HW_N][A_N][COLL__NPROTO] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},
    {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}},
};
/* NVLS (Simple only): latency of one NVLink SHARP pass, microseconds. */
#define NVLS_LAT_US 25.0
/* NVLS channels on one Hopper node (NCCL_NVLS_NCHANNELS, 16 by default) and the data movements
 * of each chunk in turn (copy in, reduce through the switch, multicast store, copy out). */
#define NVLS_CHANNELS 16
#define NVLS_STAGES 4
/* CollNet Direct (Simple only): latency per intra-node hop (NVLink) and of the network
 * reduction, microseconds; the arity's serialization per extra local rank; the bandwidth
 * factor from Hopper on. */
#define COLLNET_INTRA_LAT_US 3.7
#define COLLNET_NET_LAT_US 31.0
#define COLLNET_ARITY_US 0.4
#define COLLNET_HOPPER_EFF 0.85
/* CollNet Chain (Simple only): latency per hop of the chain inside a node and of the network
 * reduction, microseconds. */
#define COLLNET_CHAIN_INTRA_LAT_US 2.8
#define COLLNET_CHAIN_NET_LAT_US 30.0
/* NVLS Tree (Simple only): NVLS inside each node, a tree of nodes across: latency of the NVLS
 * pass and of a network hop, microseconds. */
#define NVLS_TREE_INTRA_LAT_US 25.0
#define NVLS_TREE_NET_LAT_US 20.9
/* NVLS Tree's chunk, bytes, as NCCL 2.18-2.19 cut it (src/enqueue.cc, computeColl): one step
 * of the Simple buffer (NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8), 64 KiB from four nodes on (2.19),
 * halved to 256, 128, 64 and 32 KiB while the message is smaller than 32, 16, 4 and 1 times
 * `concurrent` (channels x NVLS heads) chunks of the current size. */
static double nvls_tree_chunk_bytes(uint64_t bytes, uint32_t concurrent, uint32_t nodes)
{
  static const struct { double times, to; } cut[] = {
      {32, 262144}, {16, 131072}, {4, 65536}, {1, 32768}};
  double chunk = nodes >= 4 ? 65536 : 4194304.0 / 8;
  for (size_t i = 0; i < G_N_ELEMENTS(cut); i++)
    if ((double)bytes < cut[i].times * concurrent * chunk && chunk > cut[i].to)
      chunk = cut[i].to;
  return chunk;
}
/* PAT (allgather and reduce-scatter with one GPU per node, Simple only): base latency, the
 * network hop (divided by 3.5 per level of its log2 tree) and the linear part per rank,
 * microseconds; it keeps 0.75 of the ring graph's bus bandwidth. */
#define PAT_BASE_LAT_US 8.0
#define PAT_NET_LAT_US 14.0
#define PAT_PER_RANK_US 2.8
#define PAT_EFF 0.75
/* LL's bus bandwidth cap, 1e9 bytes/s: [architecture][1 node, 2 nodes, more]. */
static const double ll_max_GBps[ARCH_N][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {141.0, 45.0, 35.0}};
/* LL128 per-channel bus bandwidth caps, 1e9 bytes/s: rings and trees. */
static const double ll128_ring_ch_GBps[ARCH_N] = {20.0, 20.0, 36.7, 40.0};
/* With one rank per node every ring step sends and receives at the same GPU through its NIC,
 * "apply some bw discount" (tuning.cc, on its ppn < 2 test): NCCL's model keeps 0.7 of the ring
 * graph's bandwidth for LL128 there instead of 0.92. The discount, 0.7 / 0.92, is the GPU's and
 * its NIC's, not the protocol's, so Simple's rings take it too (docs/nccl.md, "One GPU per
 * node"); LL keeps its own quarter. */
#define ONE_PER_NODE_DISCOUNT (0.7 / 0.92)
static const double tree_ch_GBps[ARCH_N][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {38.7, 41.4, 36.0}};

/* The GPU generation behind the per-architecture caps, from the device's catalog name. Kepler,
 * Maxwell and Pascal parts take Volta's (the oldest NCCL still tunes for). */
static int arch_of(const comm_topology *topo)
{
  const char *d = comm_topology_device_kind(topo);
  if (g_str_has_prefix(d, "a100") || g_str_has_prefix(d, "a10") || g_str_has_prefix(d, "a30"))
    return ARCH_AMPERE;
  if (g_str_has_prefix(d, "h100") || g_str_has_prefix(d, "h200") || g_str_has_prefix(d, "h800"))
    return ARCH_HOPPER;
  if (g_str_has_prefix(d, "b200") || g_str_has_prefix(d, "b100") || g_str_has_prefix(d, "gb200"))
    return ARCH_BLACKWELL;
  return ARCH_VOLTA;
}

/* The slice a stage of the pipeline forwards whole: a rank's share of a channel, `share_bytes`,
 * goes in 1 + share / slice_max slices, so the slice is share x max / (share + max): the whole
 * share where it is much smaller than the bound, the bound where it is much larger, half of
 * either where they are equal (docs/nccl.md, "Pipeline fill"; the continuous form of cutting
 * the share into pieces of at most slice_max). NVLS keeps the hard bound: NCCL cuts its work in
 * chunks of a fixed size. */
static double fill_slice(double share_bytes, double slice_max)
{
  if (share_bytes <= 0 || slice_max <= 0)
    return 0;
  return share_bytes * slice_max / (share_bytes + slice_max);
}

/* Fill of a pipeline of `stages` store-and-forward stages: each forwards a slice only once it
 * has it whole, so the first slice crosses every stage before the last stage streams. The slice
 * is fill_slice() of the data of one rank on one channel; `Bps` the channel's share of its
 * links. */
static double fill_s(uint32_t stages, double per_rank_channel_bytes, double slice_max, double Bps)
{
  if (stages == 0 || Bps <= 0)
    return 0;
  return stages * fill_slice(per_rank_channel_bytes, slice_max) / Bps;
}

/* The bound, bytes, on the slice a channel forwards whole before the next stage may start
 * (fill_slice): far below it every stage waits for the whole of a rank's share of the channel,
 * far above it slices of this size pipeline. The model's one fitted parameter
 * (bench/collective/fit.sh, over every row of reference/collectives.csv and
 * collectives-systems.csv; docs/nccl.md "Pipeline fill"); DTSIM_NCCL_SLICE_BYTES overrides it
 * for that fit. */
#define NCCL_SLICE_BYTES 262144.0

static double slice_max_bytes(void)
{
  const char *v = g_getenv("DTSIM_NCCL_SLICE_BYTES");
  double b = v ? g_ascii_strtod(v, NULL) : 0;
  return b > 0 ? b : NCCL_SLICE_BYTES;
}

/* Kepler, Maxwell and Pascal GPUs (compute capability below 7.0): NCCL enables LL128 only from
 * Volta on. */
static gboolean before_volta(const comm_topology *topo)
{
  static const char *const old[] = {"k20", "k40", "k80", "m40", "m60", "p100", "p40", "p4",
                                    "gtx", "titanx"};
  const char *d = comm_topology_device_kind(topo);
  for (gsize i = 0; i < G_N_ELEMENTS(old); i++)
    if (g_str_has_prefix(d, old[i]))
      return TRUE;
  return FALSE;
}

static sim_time_ps us_ps(double us)
{
  return (sim_time_ps)llround(us * 1e6);
}

/* ---- Channels: ring orders ---------------------------------------------------------------- */

static uint32_t member_local(const comm_coll_group *g, uint32_t i)
{
  return g->rank[i] % comm_topology_devices_per_node(g->topo);
}

/* Every Hamiltonian cycle of positions 0..m-1 over edges with NVLink ports (cap, m x m,
 * symmetric), each once (path[1] < path[m-1]), appended to `all`; at most `limit`. */
static uint32_t min_degree(uint32_t m, const uint32_t *cap)
{
  uint32_t best = UINT32_MAX;
  for (uint32_t a = 0; a < m; a++) {
    uint32_t d = 0;
    for (uint32_t b = 0; b < m; b++)
      d += cap[a * m + b];
    best = MIN(best, d);
  }
  return best;
}

static void ham_all(uint32_t m, const uint32_t *cap, uint32_t *path, uint32_t depth,
                    gboolean *used, GArray *all, uint32_t limit)
{
  if (all->len / m >= limit)
    return;
  uint32_t u = path[depth - 1];
  if (depth == m) {
    if (cap[u * m + path[0]] > 0 && path[1] < path[m - 1])
      g_array_append_vals(all, path, m);
    return;
  }
  for (uint32_t v = 0; v < m; v++) {
    if (used[v] || cap[u * m + v] == 0)
      continue;
    used[v] = TRUE;
    path[depth] = v;
    ham_all(m, cap, path, depth + 1, used, all, limit);
    used[v] = FALSE;
  }
}

/* The largest set of cycles (indices into `all`, non-decreasing, repeats allowed) whose edges
 * fit the ports in `cap` (consumed and restored); at most 8 cycles. */
static void decompose(uint32_t m, uint32_t *cap, const uint32_t *all, uint32_t ncand,
                      uint32_t from, uint32_t *pick, uint32_t npick, uint32_t *best,
                      uint32_t *nbest)
{
  if (npick > *nbest) {
    *nbest = npick;
    memcpy(best, pick, npick * sizeof *pick);
  }
  if (npick == 8)
    return;
  for (uint32_t k = from; k < ncand; k++) {
    const uint32_t *cy = all + (gsize)k * m;
    gboolean fits = TRUE;
    for (uint32_t i = 0; i < m && fits; i++)
      fits = cap[cy[i] * m + cy[(i + 1) % m]] > 0;
    if (!fits)
      continue;
    for (uint32_t i = 0; i < m; i++) {
      uint32_t a = cy[i], b = cy[(i + 1) % m];
      cap[a * m + b]--;
      cap[b * m + a]--;
    }
    pick[npick] = k;
    decompose(m, cap, all, ncand, k, pick, npick + 1, best, nbest);
    for (uint32_t i = 0; i < m; i++) {
      uint32_t a = cy[i], b = cy[(i + 1) % m];
      cap[a * m + b]++;
      cap[b * m + a]++;
    }
    /* Enough: every port of the device with the fewest is in use. */
    if (*nbest * 2 >= min_degree(m, cap))
      return;
  }
}

/* Rings inside one node over the positions 0..per-1 of node 0's members. On point-to-point
 * NVLink wiring: edge-disjoint Hamiltonian cycles (each takes one port of every pair it
 * crosses), each used in both directions, as NCCL's ring search finds them; otherwise (switch,
 * PCIe, or no NVLink cycle) one ring in position order. Returns the cycles (count x per). */
static GArray *intra_cycles(const comm_coll_group *g, uint32_t per, gboolean *nvlink_mesh)
{
  GArray *cyc = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  *nvlink_mesh = FALSE;
  g_autofree uint32_t *cap = g_new0(uint32_t, (gsize)per * per);
  uint32_t ports = 0;
  for (uint32_t a = 0; a < per; a++)
    for (uint32_t b = 0; b < per; b++)
      if (a != b) {
        cap[a * per + b] = comm_topology_nvlinks(g->topo, member_local(g, a), member_local(g, b));
        ports += cap[a * per + b];
      }
  if (per == 2 && cap[1] > 0) {
    /* Two devices: every port is a ring of its own (there and back over the same pair). */
    for (uint32_t k = 0; k < cap[1]; k++) {
      uint32_t pair[2] = {0, 1};
      g_array_append_vals(cyc, pair, 2);
    }
  } else if (per >= 3 && per <= 12 && ports > 0) {
    /* Every Hamiltonian cycle (starting at position 0, second position below the last), then
     * the largest set of them that the ports can carry at once, searched exhaustively. */
    g_autoptr(GArray) all = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    g_autofree uint32_t *path = g_new(uint32_t, per);
    g_autofree gboolean *used = g_new0(gboolean, per);
    path[0] = 0;
    used[0] = TRUE;
    ham_all(per, cap, path, 1, used, all, 4096);
    uint32_t ncand = all->len / per;
    g_autofree uint32_t *pick = g_new(uint32_t, 16), *best = g_new(uint32_t, 16);
    uint32_t nbest = 0;
    decompose(per, cap, (const uint32_t *)all->data, ncand, 0, pick, 0, best, &nbest);
    for (uint32_t k = 0; k < nbest; k++) {
      const uint32_t *cy = (const uint32_t *)all->data + (gsize)best[k] * per;
      g_array_append_vals(cyc, cy, per);
      /* The reverse direction of the same cycle uses the other direction of the same ports. */
      for (uint32_t i = 0; i < per; i++)
        g_array_append_val(cyc, cy[(per - i) % per]);
    }
  }
  if (cyc->len > 0) {
    *nvlink_mesh = TRUE;
    return cyc;
  }
  for (uint32_t i = 0; i < per; i++)
    g_array_append_val(cyc, i);
  return cyc;
}

/* The channels of rings that cross nodes, as NCCL's graph search lays them: each channel of
 * its search takes `speed` of the bandwidth of every link it crosses, the speed the largest
 * of NCCL's inter-node speeds (GB/s, src/graph/search.cc speedArrayInter, sm90SpeedArrayInter
 * from Hopper on) that the NIC carries, so one channel per NIC (the next speed down is always
 * above half the one before); ncclTopoDupChannels doubles them where the speed is 25 GB/s or
 * more, except from Hopper on below 50 GB/s with more than 4 channels; ncclTopoPostset
 * (src/graph/connect.cc) doubles them again. So: 2 channels per NIC on HDR (24 GB/s: DGX
 * A100, NDm A100 v4), EDR and EFA (12 GB/s: DGX-1, p4d) and Ethernet (3 GB/s at 25 Gb/s:
 * p3.16xlarge); 4 per NIC on one NDR NIC of a Hopper node, 2 on eight. */
static uint32_t inter_channels(const comm_topology *topo, uint32_t nics_used)
{
  static const double speeds[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                  7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
  static const double speeds_sm90[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                       15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
  const comm_system *sys = comm_topology_system(topo);
  gboolean hopper = arch_of(topo) >= ARCH_HOPPER;
  double nic = 0;
  if (sys && sys->inter)
    nic = sys->inter->nic_bandwidth_GBps > 0 ? sys->inter->nic_bandwidth_GBps
                                             : sys->inter->bandwidth_GBps;
  const double *sp = hopper ? speeds_sm90 : speeds;
  gsize ns = hopper ? G_N_ELEMENTS(speeds_sm90) : G_N_ELEMENTS(speeds);
  double speed = sp[ns - 1];
  for (gsize i = 0; i < ns; i++)
    if (sp[i] <= nic) {
      speed = sp[i];
      break;
    }
  uint32_t C = nics_used;
  if (speed >= 25.0 && !(hopper && speed < 50.0 && C > 4))
    C *= 2;
  return MIN(2 * C, 64u);
}

uint32_t coll__nccl_rings(const comm_coll_group *g, uint32_t **orders_out)
{
  const comm_topology *topo = g->topo;
  uint32_t n = g->n, per = g->per_node, nodes = g->nodes;
  if (per == 0 || n < 2) {
    /* Ranks spread unevenly over nodes: one ring in group order, two channels. */
    uint32_t *o = g_new(uint32_t, 2 * (gsize)n);
    for (uint32_t c = 0; c < 2; c++)
      for (uint32_t i = 0; i < n; i++)
        o[c * n + i] = i;
    *orders_out = o;
    return 2;
  }
  gboolean mesh;
  g_autoptr(GArray) cyc = intra_cycles(g, per, &mesh);
  uint32_t ncyc = cyc->len / per;
  const uint32_t *cy = (const uint32_t *)cyc->data;
  /* Channels: one per ring of an NVLink mesh; two per GPU of a switch node (NCCL's NVSwitch
   * search duplicates its rings); across nodes at least two per NIC, so that every NIC carries
   * as many channels. */
  uint32_t nics = MAX(comm__nics_per_node(topo), 1);
  /* The NICs the members of one node reach (one GPU per node uses its own NIC only). */
  uint32_t nics_used = 0;
  {
    g_autofree gboolean *seen = g_new0(gboolean, nics);
    for (uint32_t i = 0; i < per; i++) {
      uint32_t k = comm__ep_nic(topo, g->eps[i]) % nics;
      nics_used += !seen[k];
      seen[k] = TRUE;
    }
  }
  gboolean sw = comm_topology_nvswitch(topo, 0) != UINT32_MAX;
  uint32_t C = mesh ? ncyc : sw ? 2 * per : 2;
  if (nodes > 1)
    C = inter_channels(topo, nics_used);
  uint32_t *o = g_new(uint32_t, (gsize)C * n);
  g_autofree uint32_t *exit_load = g_new0(uint32_t, nics);
  g_autofree uint32_t *entry_load = g_new0(uint32_t, nics);
  for (uint32_t c = 0; c < C; c++) {
    const uint32_t *cycle = cy + (c % ncyc) * per;
    /* Across nodes the ring leaves at position cycle[k-1] and enters the next node at
     * cycle[k]: pick the cut whose exit and entry NICs carry the fewest channels so far. */
    uint32_t cut = 0;
    if (nodes > 1) {
      uint32_t best = UINT32_MAX;
      for (uint32_t k0 = 0; k0 < per; k0++) {
        uint32_t k = (k0 + c / ncyc) % per;
        uint32_t e = cycle[(k + per - 1) % per], a = cycle[k];
        uint32_t ne = comm__ep_nic(topo, g->eps[e]) % nics, na = comm__ep_nic(topo, g->eps[a]) % nics;
        uint32_t load = exit_load[ne] + entry_load[na];
        if (load < best) {
          best = load;
          cut = k;
        }
      }
      uint32_t e = cycle[(cut + per - 1) % per], a = cycle[cut];
      exit_load[comm__ep_nic(topo, g->eps[e]) % nics]++;
      entry_load[comm__ep_nic(topo, g->eps[a]) % nics]++;
    }
    for (uint32_t j = 0; j < nodes; j++)
      for (uint32_t i = 0; i < per; i++)
        o[(gsize)c * n + j * per + i] = j * per + cycle[(cut + i) % per];
  }
  *orders_out = o;
  return C;
}

/* ---- Closed forms with shared links ------------------------------------------------------- */

/* The kind of hop from member a to member b: network, NVLink (every link NVLink or NVSwitch)
 * or PCIe (anything else inside a node). */
static int hop_kind(const comm_coll_group *g, uint32_t a, uint32_t b)
{
  if (g->node[a] != g->node[b])
    return HW_NET;
  const comm_topology *topo = g->topo;
  g_autofree uint32_t *buf = g_new(uint32_t, comm__route_max(topo));
  uint32_t len = comm__route(topo, g->eps[a], g->eps[b], buf);
  for (uint32_t k = 0; k < len; k++)
    if (comm__link_class_of(topo, buf[k])->kind[0] != 'n')
      return HW_PCI;
  return HW_NVLINK;
}

/* ---- Candidates --------------------------------------------------------------------------- */

struct coll__nccl {
  const comm_coll_group *g;
  comm_coll_args args;          /* the caller's */
  coll__nccl_choice choice;
  uint32_t C;                   /* rings built */
  uint32_t *orders;             /* C x n group indices */
  comm_coll_args child;         /* what each channel runs (bytes: the whole wire buffer) */
  const comm_coll_algorithm *child_algo;
  char label[64];
  gboolean forced;              /* nccl:ALGO... (cand_ctx.forced) */
  /* Running. */
  comm_net *net;
  GPtrArray *groups, *colls;
  uint32_t left;
  uint64_t flows;
  void (*finished)(void *user);
  void *user;
};

typedef struct {
  coll__nccl *x;
  int algo, proto;
  int arch, nb;            /* architecture, node bucket of the caps */
  gboolean nvlink_intra;   /* every intra-node ring hop is NVLink */
  double ring_busbw;       /* Simple ring bus bandwidth of the channels, bytes/s */
  double ring_share;       /* slowest channel share, bytes/s */
  gboolean forced;         /* the algorithm is forced (nccl:ALGO): NCCL_ALGO and NCCL_PROTO
                            * lift its default limits (LL128 off NVLink, trees on one node) */
} cand_ctx;

/* The choice times the rings and the trees at several sizes and protocols, and every
 * collective of a group chooses again: the routes and link shares of the group's rings (C
 * channels) and trees are made once and kept with the group. */
struct coll__nccl_routes {
  coll__flow_routes *ring, *tree;
  uint32_t ring_C, tree_C;
  sim_time_ps *ring_lat;        /* ring flow -> its route's latency */
};

void coll__nccl_routes_free(struct coll__nccl_routes *r)
{
  if (!r)
    return;
  coll__flow_routes_free(r->ring);
  coll__flow_routes_free(r->tree);
  g_free(r->ring_lat);
  g_free(r);
}

static struct coll__nccl_routes *routes_of(const comm_coll_group *g)
{
  comm_coll_group *memo = (comm_coll_group *)g;
  if (!memo->nccl_routes)
    memo->nccl_routes = g_new0(struct coll__nccl_routes, 1);
  return memo->nccl_routes;
}

/* sim_time_for_work of the flow before again when its size and share are the same (the flows
 * of a closed form mostly are: one size per channel, few distinct shares). */
typedef struct {
  uint64_t bytes;
  double share;
  sim_time_ps t;
  gboolean valid;
} work_memo;

static sim_time_ps work_time(work_memo *m, uint64_t bytes, double share)
{
  if (!m->valid || m->bytes != bytes || m->share != share) {
    m->t = sim_time_for_work((double)bytes, share);
    m->bytes = bytes;
    m->share = share;
    m->valid = TRUE;
  }
  return m->t;
}

/* Ring channels' closed form: per phase, each rank's pipelined flow (share of its route) plus
 * the folded latency and per-step cost, as the ring executor runs it. With `fill_stages`, the
 * pipeline's fill comes first (added to `launch`, returned in `fill_out`): a slice crosses
 * `fill_stages` hops of its ring in turn, each hop at the channel's share of that hop's links
 * (a ring of n hops visits each hop fill_stages / n times), so the network hops of a ring that
 * crosses nodes cost what their NIC share gives and its NVLink hops what theirs gives; the
 * slowest channel's fill counts. */
static sim_time_ps rings_time(const coll__nccl *x, uint32_t C, uint64_t wire_bytes,
                              uint32_t phases, sim_time_ps launch, sim_time_ps step,
                              uint32_t fill_stages, sim_time_ps *fill_out, double *min_share)
{
  const comm_coll_group *g = x->g;
  uint32_t n = g->n, nf = C * n;
  g_autofree coll__flow *f = g_new(coll__flow, nf);
  for (uint32_t c = 0; c < C; c++) {
    uint64_t b = coll__seg(wire_bytes, C, c);
    const uint32_t *o = x->orders + (gsize)c * n;
    for (uint32_t i = 0; i < n; i++)
      f[c * n + i] = (coll__flow){o[i], o[(i + 1) % n], b - coll__seg(b, n, 0)};
  }
  struct coll__nccl_routes *rt = routes_of(g);
  if (!rt->ring || rt->ring_C != C) {
    coll__flow_routes_free(rt->ring);
    rt->ring = coll__flow_routes_new(g, f, nf);
    rt->ring_C = C;
    rt->ring_lat = g_renew(sim_time_ps, rt->ring_lat, nf);
    for (uint32_t i = 0; i < nf; i++)
      rt->ring_lat[i] = comm_topology_route_latency(g->topo, g->eps[f[i].src], g->eps[f[i].dst]);
  }
  g_autofree double *share = g_new(double, nf);
  g_autofree sim_time_ps *lat = g_new(sim_time_ps, nf);
  coll__flow_routes_shares(rt->ring, f, share, lat);
  /* Per flow once: its time alone at its share, and its route's latency. */
  if (fill_stages > 0) {
    double slice = fill_slice((double)wire_bytes / ((double)C * n), slice_max_bytes()), worst = 0;
    for (uint32_t c = 0; c < C; c++) {
      double per_loop = 0;
      for (uint32_t i = 0; i < n; i++)
        per_loop += share[c * n + i] > 0 ? slice / share[c * n + i] : 0;
      worst = MAX(worst, per_loop * fill_stages / n);
    }
    sim_time_ps fill = sim_time_from_s(worst);
    launch = sim_time_add_sat(launch, fill);
    if (fill_out)
      *fill_out = fill;
  }
  g_autofree sim_time_ps *t_flow = g_new(sim_time_ps, nf);
  const sim_time_ps *l_route = rt->ring_lat;
  work_memo memo = {0};
  for (uint32_t i = 0; i < nf; i++)
    t_flow[i] = sim_time_add_sat(lat[i], work_time(&memo, f[i].bytes, share[i]));
  sim_time_ps phase = 0;
  double ms = INFINITY;
  for (uint32_t c = 0; c < C; c++)
    for (uint32_t i = 0; i < n; i++) {
      uint32_t me = c * n + i, prev = c * n + (i + n - 1) % n;
      ms = MIN(ms, share[me]);
      /* Saturating: a huge buffer must report a clock overflow, not wrap. */
      sim_time_ps hops, steps, t = MAX(t_flow[me], t_flow[prev]);
      if (!sim_time_mul(MAX(l_route[me], l_route[prev]), (int64_t)n - 2, &hops))
        hops = SIM_TIME_MAX;
      if (!sim_time_mul(step, (int64_t)n - 1, &steps))
        steps = SIM_TIME_MAX;
      t = sim_time_add_sat(sim_time_add_sat(t, hops), steps);
      phase = MAX(phase, t);
    }
  if (min_share)
    *min_share = ms;
  sim_time_ps all;
  if (!sim_time_mul(phase, (int64_t)phases, &all))
    all = SIM_TIME_MAX;
  return sim_time_add_sat(launch, all);
}

/* Closed form of the channels' chains (broadcast, reduce; candidate()). */
static sim_time_ps chains_time(const coll__nccl *x, uint32_t C, uint64_t wire, sim_time_ps launch,
                               sim_time_ps step, gboolean reduce)
{
  const comm_coll_group *g = x->g;
  uint32_t n = g->n, nf = C * (n - 1), root = x->args.root;
  g_autofree coll__flow *f = g_new(coll__flow, nf);
  for (uint32_t c = 0; c < C; c++) {
    const uint32_t *o = x->orders + (gsize)c * n;
    uint32_t pr = 0;
    for (uint32_t i = 0; i < n; i++)
      if (o[i] == root)
        pr = i;
    uint64_t b = coll__seg(wire, C, c);
    for (uint32_t i = 0; i + 1 < n; i++) {
      uint32_t a = o[(pr + i) % n], z = o[(pr + i + 1) % n];
      f[c * (n - 1) + i] = reduce ? (coll__flow){z, a, b} : (coll__flow){a, z, b};
    }
  }
  g_autofree double *share = g_new(double, nf);
  g_autofree sim_time_ps *lat = g_new(sim_time_ps, nf);
  coll__flow_shares(g, f, nf, share, lat);
  sim_time_ps worst = 0;
  for (uint32_t c = 0; c < C; c++) {
    /* The slowest hop picks the chunk count; the first chunk crosses every hop, the others
     * follow at the slowest hop's pace. */
    double sh = INFINITY, alpha_s = 0;
    for (uint32_t i = 0; i + 1 < n; i++)
      if (share[c * (n - 1) + i] < sh) {
        sh = share[c * (n - 1) + i];
        alpha_s = (double)sim_time_add_sat(lat[c * (n - 1) + i], step) * 1e-12;
      }
    uint64_t b = coll__seg(wire, C, c);
    double bytes_s = (double)b / sh;
    double k = n > 2 && alpha_s > 0 ? sqrt((n - 2) * bytes_s / alpha_s) : 1;
    k = MIN(MAX(round(k), 1.0), MIN(1024.0, MAX(1.0, floor((double)b / 4096))));
    double first_s = 0, slowest_s = 0;
    for (uint32_t i = 0; i + 1 < n; i++) {
      double hop_s = (double)sim_time_add_sat(lat[c * (n - 1) + i], step) * 1e-12 +
                     (double)b / k / share[c * (n - 1) + i];
      first_s += hop_s;
      slowest_s = MAX(slowest_s, hop_s);
    }
    worst = MAX(worst, sim_time_from_s(first_s + (k - 1) * slowest_s));
  }
  return sim_time_add_sat(launch, worst);
}

/* Closed form of every flow at once (alltoall, NVLS, trees, CollNet): the slowest flow. With
 * `min_share` the least share of a flow (bytes/s), with `max_lat` the longest route latency. */
static sim_time_ps flows_time_ex(const comm_coll_group *g, const coll__flow_routes *routes,
                                 const coll__flow *f, uint32_t nf, double *min_share,
                                 sim_time_ps *max_lat)
{
  g_autofree double *share = g_new(double, nf);
  g_autofree sim_time_ps *lat = g_new(sim_time_ps, nf);
  if (routes)
    coll__flow_routes_shares(routes, f, share, lat);
  else
    coll__flow_shares(g, f, nf, share, lat);
  sim_time_ps t = 0, ml = 0;
  double ms = INFINITY;
  work_memo memo = {0};
  for (uint32_t i = 0; i < nf; i++) {
    t = MAX(t, sim_time_add_sat(lat[i], work_time(&memo, f[i].bytes, share[i])));
    ms = MIN(ms, share[i]);
    ml = MAX(ml, lat[i]);
  }
  if (min_share)
    *min_share = ms;
  if (max_lat)
    *max_lat = ml;
  return t;
}

static sim_time_ps flows_time(const comm_coll_group *g, const coll__flow *f, uint32_t nf)
{
  return flows_time_ex(g, NULL, f, nf, NULL, NULL);
}

/* NCCL's latency of one hop of this kind for an algorithm and protocol, microseconds. */
static double hop_us(const comm_coll_group *g, int hw, int a, int p)
{
  double l = hw_lat_us[hw][a][p];
  if (hw != HW_NET && g->nodes > 1 && p == COLL__LL)
    l *= 1.8;   /* NCCL: LL's intra-node hops cost more once a network is involved */
  return l;
}

/* The network's own latency NCCL adds to a network hop, microseconds: its inter-node latency
 * (tuning.cc: interLat += graphs[a]->latencyInter), twice for Simple ("Also add the flush
 * extra latency"). NCCL reads it from the network plugin; here it is the route's latency
 * between the two GPUs (PCIe, NIC, switches), `route_ps`. */
static double net_latency_us(double route_ps, int p)
{
  return (p == COLL__SIMPLE ? 2 : 1) * route_ps * 1e-6;
}

/* Average per-step cost of a ring or tree over its hops, less the links' own latency (which
 * the network model already charges), so that the total latency is NCCL's. */
static sim_time_ps step_cost(const coll__nccl *x, int a, int p)
{
  const comm_coll_group *g = x->g;
  uint32_t n = g->n;
  const uint32_t *o = x->orders;
  double sum_us = 0, link_ps = 0;
  uint32_t hops = 0;
  for (uint32_t i = 0; i < n; i++) {
    int hw = hop_kind(g, o[i], o[(i + 1) % n]);
    /* NCCL: with one rank per node nothing hides a ring's network hops behind intra-node ones,
     * so they take the tree's (longer) network latency. */
    int la = hw == HW_NET && g->per_node == 1 ? A_TREE : a;
    double route_ps =
        (double)comm_topology_route_latency(g->topo, g->eps[o[i]], g->eps[o[(i + 1) % n]]);
    sum_us += hop_us(g, hw, la, p) + (hw == HW_NET ? net_latency_us(route_ps, p) : 0);
    link_ps += route_ps;
    hops++;
  }
  double s = us_ps(sum_us / hops) - link_ps / hops;
  return s > 0 ? (sim_time_ps)llround(s) : 0;
}

/* An NVSwitch that reduces and multicasts (NVLink SHARP) in every node. */
static gboolean has_nvls(const comm_coll_group *g)
{
  const comm_system *sys = comm_topology_system(g->topo);
  return sys && sys->intra && sys->intra->nvls_efficiency > 0 &&
         comm_topology_nvswitch(g->topo, 0) != UINT32_MAX;
}

/* Switches between nodes that reduce (SHARP, CollNet). */
static gboolean has_sharp(const comm_coll_group *g)
{
  const comm_system *sys = comm_topology_system(g->topo);
  return sys && sys->inter && sys->inter->collnet_sharp;
}

/* Whether NCCL may run LL and LL128 between the nodes of `g`. Both protocols write a flag in
 * every 8-byte (LL) or 128-byte (LL128) line and let the receiver poll it, so the network must
 * land a message's writes in order. Where the fabric cannot (`in_order_writes = no`: the first
 * EFA devices, p3dn to p4de), its network plugin sets NCCL_PROTO=simple unless the user set
 * it (aws-ofi-nccl, src/platform-aws.cpp: without in-order delivery "the LL/LL128 protocols can
 * lead to data corruption"); within one node no network endpoint is opened. */
static gboolean ll_across_nodes(const comm_coll_group *g)
{
  const comm_system *sys = comm_topology_system(g->topo);
  return g->nodes <= 1 || !sys || !sys->inter || sys->inter->in_order_writes;
}

static gboolean nvls_ok(const coll__nccl *x)
{
  return x->g->nodes == 1 && x->args.op == COMM_COLL_ALLREDUCE && has_nvls(x->g);
}

/* NVLS closed form: every GPU sends its buffer up (and its share of the stores, 1/n) and gets
 * as much back, at the switch's NVLS efficiency, after one NVLS latency. */
static sim_time_ps nvls_time(const coll__nccl *x, uint64_t wire)
{
  const comm_coll_group *g = x->g;
  comm_ep sw = comm_topology_nvswitch(g->topo, 0);
  const comm_topology *topo = g->topo;
  /* Every member's up and down link carries one flow: no sharing between members. */
  sim_time_ps t = 0;
  for (uint32_t i = 0; i < g->n; i++) {
    t = MAX(t, comm_topology_p2p_time(topo, g->eps[i], sw, wire));
    t = MAX(t, comm_topology_p2p_time(topo, sw, g->eps[i], wire));
  }
  return us_ps(NVLS_LAT_US) + t;
}

static uint64_t scale_bytes(uint64_t bytes, double factor)
{
  double w = ceil((double)bytes * factor);
  return w < 1.8e19 ? (uint64_t)w : UINT64_MAX;
}

/* CollNet Direct (in-network reduction, SHARP): the node's GPUs reduce-scatter and all-gather
 * through the NVSwitch, each moving 2 S (per - 1) / per through its port each way, while each
 * GPU's share S / per goes up its rail's NIC to the switches, which reduce it across nodes and
 * send the result down once. Flows: per member, one through the NVSwitch to the next member of
 * its node (the intra-node traffic) and one to the member of the same position on the next
 * node (its NIC's load up and down). FALSE when NCCL would not run it here. */
static gboolean collnet_ok(const coll__nccl *x)
{
  const comm_coll_group *g = x->g;
  return x->args.op == COMM_COLL_ALLREDUCE && g->nodes >= 2 && g->per_node >= 1 &&
         has_sharp(g) && comm_topology_nvswitch(g->topo, 0) != UINT32_MAX;
}

/* The flows of CollNet Direct (above), CollNet Chain and NVLS Tree between members. Inside a
 * node: Direct sends each member's reduce-scatter and all-gather traffic, 2 S (per - 1) / per,
 * to the next member through the switch; Chain reduces up a chain of the node's members and
 * broadcasts back down, S on each chain link each way; NVLS Tree's traffic to and from the
 * NVSwitch is not a member-to-member flow (nvls_tree_time). Across nodes each member's share
 * S / per goes to the member of its position on the next node (its rail's NIC), `net_factor`
 * times (1 for the in-network reduction and for a tree of two nodes, 2 for the busiest node of
 * a larger binary tree: up to its parent and down to two children). */
typedef enum { NET_DIRECT, NET_CHAIN, NET_NVLS_TREE } net_shape;

static coll__flow *collnet_flows(const coll__nccl *x, uint64_t wire, net_shape shape,
                                 double net_factor, uint32_t *nf)
{
  const comm_coll_group *g = x->g;
  uint32_t n = g->n, per = g->per_node;
  coll__flow *f = g_new(coll__flow, 3 * (gsize)n);
  *nf = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t node = i / per, pos = i % per;
    if (per > 1 && shape == NET_DIRECT)
      f[(*nf)++] = (coll__flow){i, node * per + (pos + 1) % per,
                                scale_bytes(wire, 2.0 * (per - 1) / per)};
    if (shape == NET_CHAIN && pos + 1 < per) {
      f[(*nf)++] = (coll__flow){i, i + 1, wire};
      f[(*nf)++] = (coll__flow){i + 1, i, wire};
    }
    f[(*nf)++] = (coll__flow){i, ((node + 1) % g->nodes) * per + pos,
                              scale_bytes(coll__seg(wire, per, pos), net_factor)};
  }
  return f;
}

/* NCCL's double binary tree on every channel (allreduce). Channel c lays the two trees of
 * coll__tree_build over its ring order, which is node-major: inside each node the chain runs
 * from the ring's entry GPU (tree 0's head) to its exit GPU (tree 1's head, the chain
 * reversed), so the trees leave every node through the NICs the rings' cuts spread evenly, one
 * channel's traffic on its own NICs (NCCL's tree graphs: one NIC per channel, parent and
 * children split between two GPUs, NCCL_TOPO_PATTERN_BALANCED_TREE). Each tree carries half of
 * the channel's bytes; in steady state every edge streams at once, up (reduce) and down
 * (broadcast): one flow per edge and direction carrying all its chunks, as a ring rank's flow
 * carries all its steps. The last chunk's climb and descent, and the fill, are paid apart
 * (tree_costs). Returns the flows (4 x C x (n - 1)) and the trees' height. */
static coll__flow *tree_flows(const coll__nccl *x, uint64_t wire, uint32_t *nf, uint32_t *height)
{
  const comm_coll_group *g = x->g;
  uint32_t n = g->n, C = x->C;
  coll__tree *t[2] = {coll__tree_build(g, 0), coll__tree_build(g, 1)};
  coll__flow *f = g_new(coll__flow, 4 * (gsize)C * (n - 1));
  *nf = 0;
  for (uint32_t c = 0; c < C; c++) {
    const uint32_t *o = x->orders + (gsize)c * n;
    uint64_t cb = coll__seg(wire, C, c);
    for (int k = 0; k < 2; k++) {
      uint64_t b = coll__seg(cb, 2, (uint64_t)k);
      for (uint32_t p = 0; p < n; p++) {
        uint32_t q = t[k]->parent[p];
        if (q == COLL__NONE)
          continue;
        f[(*nf)++] = (coll__flow){o[p], o[q], b};
        f[(*nf)++] = (coll__flow){o[q], o[p], b};
      }
    }
  }
  if (height)
    *height = MAX(t[0]->root_height, t[1]->root_height);
  coll__tree_free(t[0]);
  coll__tree_free(t[1]);
  return f;
}

/* NCCL's latency of the trees' critical path, microseconds: the last chunk climbs from the
 * rank farthest from the root and comes back down, each hop at NCCL's tree latency for its kind
 * (chains inside nodes, log2 of the nodes across): 2 ((per - 1) intra + log2 nodes x network)
 * on a full tree, as tuning.cc has it. On channel 0 (every channel's hops are of the same
 * kinds). */
static double tree_path_us(const coll__nccl *x, int p)
{
  const comm_coll_group *g = x->g;
  uint32_t n = g->n;
  const uint32_t *o = x->orders;
  double worst = 0;
  g_autofree double *up = g_new(double, n);
  for (int k = 0; k < 2; k++) {
    coll__tree *t = coll__tree_build(g, k);
    /* Positions in order of depth, so a parent's path is known before its children's. */
    g_autofree uint32_t *order = g_new(uint32_t, n);
    uint32_t head = 0, tail = 0;
    order[tail++] = t->root;
    up[t->root] = 0;
    while (head < tail) {
      uint32_t r = order[head++];
      for (uint32_t i = t->child_first[r]; i < t->child_first[r + 1]; i++) {
        uint32_t ch = t->child[i];
        int hw = hop_kind(g, o[ch], o[r]);
        up[ch] = up[r] + hop_us(g, hw, A_TREE, p);
        if (hw == HW_NET)
          up[ch] += net_latency_us(
              (double)comm_topology_route_latency(g->topo, g->eps[o[ch]], g->eps[o[r]]), p);
        worst = MAX(worst, 2 * up[ch]);
        order[tail++] = ch;
      }
    }
    coll__tree_free(t);
  }
  return worst;
}

/* Evaluates one candidate: fills choice (time, wire factor, costs). FALSE when NCCL would not
 * run it here. */
static gboolean candidate(cand_ctx *cx, coll__nccl_choice *out)
{
  coll__nccl *x = cx->x;
  const comm_coll_group *g = x->g;
  comm_coll_op op = x->args.op;
  int a = cx->algo, p = cx->proto;
  uint32_t n = g->n, C = x->C;
  *out = (coll__nccl_choice){.algo = a, .proto = p, .channels = C};
  gboolean allreduce = op == COMM_COLL_ALLREDUCE;
  if (a == COLL__NCCL_NVLS) {
    if (p != COLL__SIMPLE || !nvls_ok(x))
      return FALSE;
    double eff = comm_topology_system(g->topo)->intra->nvls_efficiency;
    out->wire = (1.0 + 1.0 / n) / eff;
    out->launch_ps = 0;
    out->step_ps = us_ps(NVLS_LAT_US);
    /* Fill: a chunk of each channel's share moves four times in turn (copied into the NVLS
     * buffer, read and reduced through the switch, stored by multicast, copied out). */
    comm_ep sw = comm_topology_nvswitch(g->topo, 0);
    double slice = MIN((double)x->args.bytes / ((double)n * NVLS_CHANNELS),
                       slice_max_bytes()) * out->wire;
    sim_time_ps one = comm_topology_p2p_time(g->topo, g->eps[0], sw,
                                             scale_bytes((uint64_t)ceil(slice), NVLS_CHANNELS));
    sim_time_ps none = comm_topology_p2p_time(g->topo, g->eps[0], sw, 0);
    out->fill_ps = NVLS_STAGES * (one - none);
    out->launch_ps = out->fill_ps;
    out->time_ps = out->fill_ps + nvls_time(x, scale_bytes(x->args.bytes, out->wire));
    out->channels = NVLS_CHANNELS;
    return TRUE;
  }
  if (a == COLL__NCCL_COLLNET) {
    if (p != COLL__SIMPLE || !collnet_ok(x))
      return FALSE;
    uint32_t per = g->per_node;
    out->wire = cx->arch >= ARCH_HOPPER ? 1.0 / COLLNET_HOPPER_EFF : 1.0;
    out->launch_ps = us_ps(2 * (MIN(1u, per - 1) * COLLNET_INTRA_LAT_US +
                                (per - 1) * COLLNET_ARITY_US) + COLLNET_NET_LAT_US);
    out->step_ps = 0;
    out->channels = MAX(comm__nics_per_node(g->topo), 1);
    uint32_t nf;
    uint64_t wire = scale_bytes(x->args.bytes, out->wire);
    g_autofree coll__flow *f = collnet_flows(x, wire, NET_DIRECT, 1.0, &nf);
    double share;
    sim_time_ps flows = flows_time_ex(g, NULL, f, nf, &share, NULL);
    /* Fill: a slice (the ring's) is scattered inside the node, sent up to the switches,
     * comes down reduced and is gathered inside the node, each stage forwarding it whole:
     * 4 stages (2 with one GPU per node), at the slowest flow's share. */
    out->fill_ps = sim_time_from_s(fill_s(per > 1 ? 4 : 2,
                                          (double)wire / ((double)out->channels * n),
                                          slice_max_bytes(), share));
    out->launch_ps = sim_time_add_sat(out->launch_ps, out->fill_ps);
    out->time_ps = sim_time_add_sat(out->launch_ps, flows);
    return TRUE;
  }
  if (a == COLL__NCCL_COLLNET_CHAIN) {
    /* CollNet Chain: the node's members reduce up a chain, the chain's head sends to the
     * switches, which reduce across nodes; the result comes down and is broadcast down the
     * chain. NCCL's latency: 2 (per - 1) chain hops + the network reduction. */
    if (p != COLL__SIMPLE || !allreduce || g->nodes < 2 || g->per_node == 0 || !has_sharp(g))
      return FALSE;
    uint32_t per = g->per_node;
    out->wire = 1.0;
    out->channels = MAX(comm__nics_per_node(g->topo), 1);
    out->step_ps = 0;
    uint32_t nf;
    uint64_t wire = x->args.bytes;
    g_autofree coll__flow *f = collnet_flows(x, wire, NET_CHAIN, 1.0, &nf);
    double share;
    sim_time_ps flows = flows_time_ex(g, NULL, f, nf, &share, NULL);
    /* Fill: a slice climbs the chain, goes up and down the network and back down the chain. */
    out->fill_ps = sim_time_from_s(fill_s(2 * per, (double)wire / ((double)out->channels * n),
                                          slice_max_bytes(), share));
    out->launch_ps = sim_time_add_sat(
        us_ps(2.0 * (per - 1) * COLLNET_CHAIN_INTRA_LAT_US + COLLNET_CHAIN_NET_LAT_US),
        out->fill_ps);
    out->time_ps = sim_time_add_sat(out->launch_ps, flows);
    return TRUE;
  }
  if (a == COLL__NCCL_NVLS_TREE) {
    /* NVLS Tree: NVLS inside every node (each member's buffer up to the NVSwitch, its share
     * of the stores back), a tree of nodes across them, each member carrying its share
     * S / per over its rail. NCCL's latency: one NVLS pass + 2 log2(nodes) network hops. */
    if (p != COLL__SIMPLE || !allreduce || g->nodes < 2 || g->per_node == 0 || !has_nvls(g))
      return FALSE;
    uint32_t per = g->per_node;
    double eff = comm_topology_system(g->topo)->intra->nvls_efficiency;
    out->wire = 1.0;
    out->channels = NVLS_CHANNELS;
    out->step_ps = 0;
    uint64_t up = scale_bytes(x->args.bytes, (1.0 + 1.0 / per) / eff);
    sim_time_ps intra = 0;
    for (uint32_t i = 0; i < n; i++) {
      comm_ep sw = comm_topology_nvswitch(g->topo, g->node[i]);
      intra = MAX(intra, comm_topology_p2p_time(g->topo, g->eps[i], sw, up));
      intra = MAX(intra, comm_topology_p2p_time(g->topo, sw, g->eps[i], up));
    }
    uint32_t nf;
    g_autofree coll__flow *f = collnet_flows(x, x->args.bytes, NET_NVLS_TREE,
                                             g->nodes == 2 ? 1.0 : 2.0, &nf);
    double share;
    sim_time_ps net = flows_time_ex(g, NULL, f, nf, &share, NULL);
    uint32_t levels = 0;
    while ((1u << (levels + 1)) <= g->nodes)
      levels++;
    /* Fill: NCCL runs NVLS Tree in loops of channels x heads chunks of the buffer (one chunk
     * per channel for each GPU of a node that owns a NIC), each loop through every stage in
     * turn: the NVLS_STAGES moves through each GPU's NVSwitch port (scatter into the heads'
     * buffers, the switch's reduction, its multicast store, the gather) and 2 x levels
     * network hops, each head's share of the loop on its NIC, up the tree and down
     * (src/device/all_reduce.h, the NVLS_TREE RunWorkElement). The first loop crosses them
     * all before the slowest stage streams; the steady state, `MAX(intra, net)`, already
     * holds one loop of the slowest. */
    uint32_t heads = MIN(per, MAX(comm__nics_per_node(g->topo), 1u));
    double S = (double)x->args.bytes;
    double loop = MIN(S, NVLS_CHANNELS * heads *
                             nvls_tree_chunk_bytes(x->args.bytes, NVLS_CHANNELS * heads,
                                                   g->nodes));
    comm_ep sw0 = comm_topology_nvswitch(g->topo, g->node[0]);
    sim_time_ps port = comm_topology_p2p_time(g->topo, g->eps[0], sw0, (uint64_t)ceil(loop)) -
                       comm_topology_p2p_time(g->topo, g->eps[0], sw0, 0);
    double hop_s = share > 0 ? loop / heads * (g->nodes == 2 ? 1.0 : 2.0) / share : 0;
    double fill_sec = NVLS_STAGES * sim_time_to_s(port) + 2.0 * levels * hop_s -
                     loop / S * sim_time_to_s(MAX(intra, net));
    out->fill_ps = sim_time_from_s(MAX(fill_sec, 0.0));
    out->launch_ps = sim_time_add_sat(
        us_ps(NVLS_TREE_INTRA_LAT_US + 2.0 * levels * NVLS_TREE_NET_LAT_US), out->fill_ps);
    out->time_ps = sim_time_add_sat(out->launch_ps, MAX(intra, net));
    return TRUE;
  }
  if (a == COLL__NCCL_PAT) {
    /* PAT (allgather, reduce-scatter; one GPU per node): the ring's bytes at 0.75 of its bus
     * bandwidth, a logarithmic latency and a linear part per rank (NCCL's model). */
    if (p != COLL__SIMPLE || (op != COMM_COLL_ALLGATHER && op != COMM_COLL_REDUCE_SCATTER) ||
        g->per_node != 1 || before_volta(g->topo))
      return FALSE;
    uint32_t levels = 0;
    while ((1u << (levels + 1)) <= n)
      levels++;
    out->wire = 1.0 / PAT_EFF;
    out->step_ps = 0;
    out->launch_ps = us_ps(PAT_BASE_LAT_US + levels * PAT_NET_LAT_US / 3.5 +
                           n * PAT_PER_RANK_US);
    out->time_ps = rings_time(x, C, scale_bytes(x->args.bytes, out->wire), 1, out->launch_ps,
                              0, 0, NULL, NULL);
    return TRUE;
  }
  if (a == COLL__NCCL_P2P) {
    if (op != COMM_COLL_ALLTOALL || p != COLL__SIMPLE)
      return FALSE;
    int hw = g->nodes > 1 ? HW_NET : hop_kind(g, 0, 1);
    out->wire = 1.0;
    out->launch_ps = us_ps(base_lat_us[A_RING][p]);
    out->step_ps = us_ps(hw_lat_us[hw][A_RING][p]);
    g_autofree coll__flow *f = g_new(coll__flow, (gsize)n * (n - 1));
    uint32_t nf = 0;
    for (uint32_t i = 0; i < n; i++)
      for (uint32_t j = 0; j < n; j++)
        if (i != j)
          f[nf++] = (coll__flow){i, j, coll__seg(x->args.bytes, n, j)};
    out->time_ps = out->launch_ps + out->step_ps + flows_time(g, f, nf);
    out->channels = 1;
    return TRUE;
  }
  if (op == COMM_COLL_ALLTOALL)
    return FALSE;
  if (a != COLL__NCCL_RING && a != COLL__NCCL_TREE)
    return FALSE;
  if (a == COLL__NCCL_TREE &&
      (!allreduce || g->per_node == 0 || (g->nodes < 2 && !cx->forced)))
    return FALSE;
  if (p == COLL__LL128 && !cx->forced &&
      (!cx->nvlink_intra || cx->arch > ARCH_HOPPER || before_volta(g->topo)))
    return FALSE;   /* NCCL enables LL128 by default only over NVLink on Volta to Hopper */
  int aa = a == COLL__NCCL_TREE ? A_TREE : A_RING;
  /* Protocol efficiency and caps on the bus bandwidth (NCCL's refinements of its model). */
  double bw = cx->ring_busbw, eff;
  double ppn = (double)n / g->nodes;
  if (aa == A_RING) {
    if (p == COLL__LL)
      eff = MIN(bw * ((g->nodes > 1 || allreduce || op == COMM_COLL_REDUCE) ? 0.25 : 1.0 / 3.0),
                ll_max_GBps[cx->arch][cx->nb] * 1e9) / bw;
    else if (p == COLL__LL128)
      eff = MIN(bw * (ppn < 2 ? 0.7 : 0.92), ll128_ring_ch_GBps[cx->arch] * 1e9 * C) / bw;
    else
      eff = ppn < 2 ? ONE_PER_NODE_DISCOUNT : 1.0;
  } else {
    double tbw = MIN(bw * 0.92, tree_ch_GBps[cx->arch][cx->nb] * 1e9 * C);
    if (p == COLL__LL)
      tbw = MIN(tbw / 3.8, ll_max_GBps[cx->arch][cx->nb] * 1e9);
    else if (p == COLL__LL128)
      tbw = MIN(tbw * 0.915, ll128_ring_ch_GBps[cx->arch] * 1e9 * C * 7.0 / 9.0);
    eff = tbw / bw;
  }
  out->wire = 1.0 / eff;
  out->launch_ps = us_ps(base_lat_us[aa][p]);
  uint64_t wire = scale_bytes(x->args.bytes, out->wire);
  if (aa == A_TREE) {
    /* Every edge's flow at its share; before them the base latency, the fill (2H stages, H
     * the trees' height: a slice climbs to the root and comes down, each rank forwarding it
     * only once it holds it whole; the slice as the ring's) and the critical path's hop
     * latencies beyond the route latency the flows pay themselves. */
    uint32_t nf, H;
    g_autofree coll__flow *f = tree_flows(x, wire, &nf, &H);
    struct coll__nccl_routes *rt = routes_of(g);
    if (!rt->tree || rt->tree_C != C) {
      coll__flow_routes_free(rt->tree);
      rt->tree = coll__flow_routes_new(g, f, nf);
      rt->tree_C = C;
    }
    double share;
    sim_time_ps lat;
    sim_time_ps flows = flows_time_ex(g, rt->tree, f, nf, &share, &lat);
    out->fill_ps = sim_time_from_s(
        fill_s(2 * H, (double)wire / ((double)C * n), slice_max_bytes(), share));
    sim_time_ps path = us_ps(tree_path_us(x, p));
    out->step_ps = 0;
    out->launch_ps = sim_time_add_sat(sim_time_add_sat(out->launch_ps, out->fill_ps),
                                      path > lat ? path - lat : 0);
    out->time_ps = sim_time_add_sat(out->launch_ps, flows);
    /* NCCL rates a tree by its own estimate: the channels' bus bandwidth (the ring graph's
     * speed with the tree's refinements above) converted to algorithm bandwidth with its tree
     * ratio, 0.5, where a ring's is n / (2 (n - 1)): the tree's bytes count twice, up and
     * down, through the same channel bandwidth as the ring's. A tree is chosen only where
     * both that estimate and its closed form (which sees the links it crowds) make it the
     * cheapest: the larger of the two is its cost in the choice. */
    out->cost_ps = MAX(out->time_ps,
                       sim_time_add_sat(out->launch_ps,
                                        sim_time_for_work(2.0 * (double)x->args.bytes, bw * eff)));
    return TRUE;
  }
  out->step_ps = step_cost(x, aa, p);
  if (aa == A_RING && p == COLL__SIMPLE && allreduce && g->nodes > 1 &&
      x->args.bytes / ((uint64_t)C * n) >= 64) {
    /* NCCL's "plateau effect of ring" (tuning.cc 2.18 and later, ncclTopoGetAlgoTime): a
     * Simple ring allreduce across nodes of at least 64 bytes per rank and channel takes 1.9
     * times its latency before Ampere, 1.4 times from Ampere on. Its software latency, that
     * is: the links' own latency, which the flows pay, once. */
    double f = cx->arch >= ARCH_AMPERE ? 1.4 : 1.9;
    out->launch_ps = (sim_time_ps)llround((double)out->launch_ps * f);
    out->step_ps = (sim_time_ps)llround((double)out->step_ps * f);
  }
  if (aa == A_RING && (op == COMM_COLL_ALLREDUCE || op == COMM_COLL_ALLGATHER ||
                       op == COMM_COLL_REDUCE_SCATTER)) {
    uint32_t stages = (allreduce ? 2 : 1) * (n - 1);
    out->time_ps = rings_time(x, C, wire, allreduce ? 2 : 1, out->launch_ps, out->step_ps,
                              stages, &out->fill_ps, NULL);
    out->launch_ps = sim_time_add_sat(out->launch_ps, out->fill_ps);
    return TRUE;
  }
  /* Chains (broadcast, reduce): every channel's chain from the root along its ring order,
   * pipelined in chunks, all at once: each chain's hops at their share of the links the
   * channels' chains cross together (a chain on one node's switch shares its ports; chains of
   * a mesh or across nodes take different links), (n - 2 + K) chunk steps of the slowest hop,
   * K chunks as the chain executor picks them (sqrt((n - 2) B beta / alpha), docs/collectives.md). */
  out->time_ps = chains_time(x, C, wire, out->launch_ps, out->step_ps, op == COMM_COLL_REDUCE);
  return TRUE;
}

static gboolean choose(coll__nccl *x, int force_algo, int force_proto, GError **error)
{
  const comm_coll_group *g = x->g;
  cand_ctx cx = {.x = x, .arch = arch_of(g->topo),
                 .nb = g->nodes <= 1 ? 0 : g->nodes == 2 ? 1 : 2, .forced = x->forced};
  cx.nvlink_intra = TRUE;
  for (uint32_t i = 0; i + 1 < MIN(g->n, 64); i++)
    if (g->node[i] == g->node[i + 1] && hop_kind(g, x->orders[i], x->orders[i + 1]) != HW_NVLINK)
      cx.nvlink_intra = FALSE;
  if (g->n >= 2) {
    double ms;
    rings_time(x, x->C, (uint64_t)x->C * g->n * 1024, 1, 0, 0, 0, NULL, &ms);
    cx.ring_share = ms;
    cx.ring_busbw = ms * x->C;
  }
  gboolean found = FALSE;
  for (int a = 0; a < COLL__NCCL_NALGO; a++)
    for (int p = 0; p < COLL__NPROTO; p++) {
      if ((force_algo >= 0 && a != force_algo) || (force_proto >= 0 && p != force_proto))
        continue;
      if (force_proto < 0 && p != COLL__SIMPLE && !ll_across_nodes(g))
        continue;   /* NCCL_PROTO=simple, as the network plugin sets it */
      cx.algo = a;
      cx.proto = p;
      coll__nccl_choice c;
      if (!candidate(&cx, &c))
        continue;
      if (c.cost_ps == 0)
        c.cost_ps = c.time_ps;
      if (!found || c.cost_ps < x->choice.cost_ps)
        x->choice = c;
      found = TRUE;
    }
  if (!found) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "nccl: no algorithm and protocol for %s here",
                comm_coll_op_name(x->args.op));
    return FALSE;
  }
  return TRUE;
}

/* Why NCCL cannot run `algo` (with protocol `proto`, -1 any) for this operation here, in one
 * line; NULL when nothing rules it out before its cost is asked. */
static const char *why_not(const coll__nccl *x, int algo, int proto)
{
  const comm_coll_group *g = x->g;
  comm_coll_op op = x->args.op;
  gboolean simple_only = algo == COLL__NCCL_NVLS || algo == COLL__NCCL_NVLS_TREE ||
                         algo == COLL__NCCL_COLLNET || algo == COLL__NCCL_COLLNET_CHAIN ||
                         algo == COLL__NCCL_PAT;
  if (simple_only && proto >= 0 && proto != COLL__SIMPLE)
    return "NCCL runs this algorithm with the Simple protocol only";
  if (op == COMM_COLL_ALLTOALL && algo != COLL__NCCL_P2P)
    return "alltoall is point-to-point in NCCL, not one of its collective algorithms";
  switch (algo) {
  case COLL__NCCL_NVLS:
  case COLL__NCCL_NVLS_TREE:
    if (!has_nvls(g))
      return "NVLS needs an NVSwitch that reduces in the switch (NVLink SHARP, third-generation "
             "NVSwitch: H100, H200, B200), which this system lacks";
    if (op != COMM_COLL_ALLREDUCE)
      return "NVLS is modelled for allreduce only";
    if (algo == COLL__NCCL_NVLS && g->nodes > 1)
      return "NVLS across nodes needs CollNet (SHARP) switches; nvlstree runs NVLS inside nodes "
             "and a tree across them";
    if (algo == COLL__NCCL_NVLS_TREE && (g->nodes < 2 || g->per_node == 0))
      return "nvlstree needs two or more nodes with as many GPUs each";
    return NULL;
  case COLL__NCCL_COLLNET:
  case COLL__NCCL_COLLNET_CHAIN:
    if (!has_sharp(g))
      return "CollNet needs switches that reduce in the network (SHARP: an inter-node fabric "
             "with collnet_sharp = yes, e.g. --inter ib-hdr-sharp), which this system lacks";
    if (algo == COLL__NCCL_COLLNET && comm_topology_nvswitch(g->topo, 0) == UINT32_MAX)
      return "NCCL disables CollNet Direct without an NVSwitch in the node";
    if (op != COMM_COLL_ALLREDUCE || g->nodes < 2 || g->per_node == 0)
      return "CollNet runs allreduce on two or more nodes with as many GPUs each";
    return NULL;
  case COLL__NCCL_PAT:
    if (op != COMM_COLL_ALLGATHER && op != COMM_COLL_REDUCE_SCATTER)
      return "PAT runs allgather and reduce-scatter only";
    if (g->per_node != 1)
      return "PAT runs with one GPU per node only";
    return NULL;
  case COLL__NCCL_TREE:
    if (op != COMM_COLL_ALLREDUCE || g->per_node == 0)
      return "NCCL's tree runs allreduce only, on nodes with as many GPUs each";
    return NULL;
  default:
    return NULL;
  }
}

static coll__nccl *plan(const comm_coll_group *g, const comm_coll_args *args,
                        const coll__nccl_force *force, gboolean lift, GError **error);

coll__nccl *coll__nccl_plan(const comm_coll_group *g, const comm_coll_args *args, int algo,
                            int proto, GError **error)
{
  coll__nccl_force f = {.algo = algo, .proto = proto, .channels = 0};
  return plan(g, args, &f, FALSE, error);
}

coll__nccl *coll__nccl_plan_forced(const comm_coll_group *g, const comm_coll_args *args,
                                   const coll__nccl_force *force, GError **error)
{
  coll__nccl_force none = {.algo = -1, .proto = -1, .channels = 0};
  return plan(g, args, force ? force : &none, force != NULL, error);
}

/* Plans the choice within `force`; `lift`: as NCCL_ALGO and NCCL_PROTO do, a forced algorithm
 * and protocol run where NCCL would not pick them by default. */
static coll__nccl *plan(const comm_coll_group *g, const comm_coll_args *args,
                        const coll__nccl_force *force, gboolean lift, GError **error)
{
  int algo = force->algo, proto = force->proto;
  g_autoptr(coll__nccl) x = g_new0(coll__nccl, 1);
  x->g = g;
  x->args = *args;
  x->forced = lift && algo >= 0;
  if ((args->op == COMM_COLL_BROADCAST || args->op == COMM_COLL_REDUCE) && args->root >= g->n) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "root %u is not in a group of %u ranks",
                args->root, g->n);
    return NULL;
  }
  const char *why = g->n >= 2 && algo >= 0 ? why_not(x, algo, proto) : NULL;
  if (why) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "nccl:%s: %s", coll__nccl_algo_names[algo], why);
    return NULL;
  }
  x->C = coll__nccl_rings(g, &x->orders);
  if (force->channels > 0 && force->channels != x->C) {
    /* NCCL_MIN_NCHANNELS: the channels' rings repeat the ones found, in order. */
    uint32_t n = g->n, C = force->channels;
    uint32_t *o = g_new(uint32_t, (gsize)C * n);
    for (uint32_t c = 0; c < C; c++)
      memcpy(o + (gsize)c * n, x->orders + (gsize)(c % x->C) * n, n * sizeof *o);
    g_free(x->orders);
    x->orders = o;
    x->C = C;
  }
  if (g->n < 2) {

    x->choice = (coll__nccl_choice){.algo = COLL__NCCL_RING, .proto = COLL__SIMPLE,
                                    .channels = 0, .wire = 1.0};
  } else if (!choose(x, algo, proto, error)) {
    return NULL;
  }
  g_snprintf(x->label, sizeof x->label, "nccl:%s/%s/%u", coll__nccl_algo_names[x->choice.algo],
             coll__nccl_proto_names[x->choice.proto], x->choice.channels);
  return g_steal_pointer(&x);
}

const coll__nccl_choice *coll__nccl_chosen(const coll__nccl *x)
{
  return &x->choice;
}

const char *coll__nccl_label(const coll__nccl *x)
{
  return x->label;
}

void coll__nccl_free(coll__nccl *x)
{
  if (!x)
    return;
  if (x->colls)
    g_ptr_array_free(x->colls, TRUE);
  if (x->groups)
    g_ptr_array_free(x->groups, TRUE);
  g_free(x->orders);
  g_free(x);
}

/* ---- Running ------------------------------------------------------------------------------ */

static void part_done(sim_engine *engine, void *user)
{
  coll__nccl *x = user;
  g_assert(x->left > 0);
  if (--x->left == 0)
    x->finished(x->user);
}

static void on_nvls_tail(sim_engine *engine, void *data, uint64_t arg)
{
  coll__nccl *x = data;
  x->finished(x->user);
}

static void nvls_flow_done(sim_engine *engine, void *user)
{
  coll__nccl *x = user;
  if (--x->left == 0)
    sim_engine_schedule_in(engine, x->choice.step_ps, on_nvls_tail, x, 0);
}

static void collnet_flow_done(sim_engine *engine, void *user)
{
  coll__nccl *x = user;
  if (--x->left == 0)
    x->finished(x->user);
}

static void on_analytic(sim_engine *engine, void *data, uint64_t arg)
{
  coll__nccl *x = data;
  x->finished(x->user);
}

static void on_launched(sim_engine *engine, void *data, uint64_t arg)
{
  coll__nccl *x = data;
  const comm_coll_group *g = x->g;
  const coll__nccl_choice *ch = &x->choice;
  uint64_t wire = scale_bytes(x->args.bytes, ch->wire);
  if (ch->algo == COLL__NCCL_COLLNET || ch->algo == COLL__NCCL_TREE ||
      ch->algo == COLL__NCCL_COLLNET_CHAIN || ch->algo == COLL__NCCL_NVLS_TREE) {
    uint32_t nf;
    gboolean nvls_tree = ch->algo == COLL__NCCL_NVLS_TREE;
    g_autofree coll__flow *f =
        ch->algo == COLL__NCCL_TREE ? tree_flows(x, wire, &nf, NULL)
        : ch->algo == COLL__NCCL_COLLNET ? collnet_flows(x, wire, NET_DIRECT, 1.0, &nf)
        : ch->algo == COLL__NCCL_COLLNET_CHAIN ? collnet_flows(x, wire, NET_CHAIN, 1.0, &nf)
        : collnet_flows(x, wire, NET_NVLS_TREE, g->nodes == 2 ? 1.0 : 2.0, &nf);
    x->left = nf + (nvls_tree ? 2 * g->n : 0);
    for (uint32_t i = 0; i < nf; i++)
      comm_net_send(x->net, g->eps[f[i].src], g->eps[f[i].dst], f[i].bytes, collnet_flow_done, x);
    x->flows += nf;
    if (nvls_tree) {
      /* Each member's buffer up to its node's NVSwitch and its share of the stores back. */
      double eff = comm_topology_system(g->topo)->intra->nvls_efficiency;
      uint64_t up = scale_bytes(x->args.bytes, (1.0 + 1.0 / g->per_node) / eff);
      for (uint32_t i = 0; i < g->n; i++) {
        comm_ep sw = comm_topology_nvswitch(g->topo, g->node[i]);
        comm_net_send(x->net, g->eps[i], sw, up, collnet_flow_done, x);
        comm_net_send(x->net, sw, g->eps[i], up, collnet_flow_done, x);
      }
      x->flows += 2 * g->n;
    }
    return;
  }
  if (ch->algo == COLL__NCCL_NVLS) {
    comm_ep sw = comm_topology_nvswitch(g->topo, 0);
    x->left = 2 * g->n;
    for (uint32_t i = 0; i < g->n; i++) {
      comm_net_send(x->net, g->eps[i], sw, wire, nvls_flow_done, x);
      comm_net_send(x->net, sw, g->eps[i], wire, nvls_flow_done, x);
    }
    x->flows += 2 * g->n;
    return;
  }
  x->left = x->colls->len;
  for (guint i = 0; i < x->colls->len; i++)
    comm_coll_start(g_ptr_array_index(x->colls, i), part_done, x);
}

gboolean coll__nccl_prepare(coll__nccl *x, comm_net *net, GError **error)
{
  x->net = net;
  const coll__nccl_choice *ch = &x->choice;
  x->groups = g_ptr_array_new_with_free_func((GDestroyNotify)comm_coll_group_free);
  x->colls = g_ptr_array_new_with_free_func((GDestroyNotify)comm_coll_free);
  if (x->g->n < 2 || ch->algo == COLL__NCCL_NVLS || ch->algo == COLL__NCCL_COLLNET ||
      ch->algo == COLL__NCCL_TREE || ch->algo == COLL__NCCL_COLLNET_CHAIN ||
      ch->algo == COLL__NCCL_NVLS_TREE)
    return TRUE;
  const comm_coll_group *g = x->g;
  uint32_t n = g->n;
  uint32_t C = ch->algo == COLL__NCCL_P2P ? 1 : x->C;
  const char *name = ch->algo == COLL__NCCL_P2P ? "direct" : "ring";
  const comm_coll_algorithm *algo = coll__algorithm_builtin(name);
  uint64_t wire = scale_bytes(x->args.bytes, ch->wire);
  g_autofree uint32_t *ranks = g_new(uint32_t, n);
  for (uint32_t c = 0; c < C; c++) {
    const uint32_t *o = x->orders + (gsize)c * n;
    comm_coll_args a = x->args;
    a.bytes = coll__seg(wire, C, c);
    a.launch_ps = 0;
    a.step_ps = ch->step_ps;
    a.reduce_Bps = 0;
    a.chunk_bytes = 0;
    gboolean ordered = ch->algo == COLL__NCCL_RING || ch->algo == COLL__NCCL_PAT;
    for (uint32_t i = 0; i < n; i++) {
      uint32_t m = ordered ? o[i] : i;
      ranks[i] = g->rank[m];
      if (m == x->args.root)
        a.root = i;
    }
    comm_coll_group *cg = comm_coll_group_new(g->topo, ranks, n);
    g_ptr_array_add(x->groups, cg);
    comm_coll *cc = comm_coll_new(net, cg, algo, &a, error);
    if (!cc)
      return FALSE;
    g_ptr_array_add(x->colls, cc);
  }
  return TRUE;
}

void coll__nccl_start(coll__nccl *x, void (*finished)(void *user), void *user)
{
  x->finished = finished;
  x->user = user;
  sim_engine *engine = comm_net_engine(x->net);
  if (comm_net_get_model(x->net) == COMM_NET_ANALYTIC || x->g->n < 2) {
    sim_engine_schedule_in(engine, x->g->n < 2 ? 0 : x->choice.time_ps, on_analytic, x, 0);
    return;
  }
  sim_engine_schedule_in(engine, x->choice.launch_ps, on_launched, x, 0);
}

uint64_t coll__nccl_flows(const coll__nccl *x)
{
  uint64_t f = x->flows;
  for (guint i = 0; x->colls && i < x->colls->len; i++)
    f += comm_coll_flows(g_ptr_array_index(x->colls, i));
  return f;
}
