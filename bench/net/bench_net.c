/* Speed and memory of the network models on the hot path of the simulator: N ranks each start
 * a flow at the same instant, and when all have arrived they all start again, for many rounds.
 * Prints flows per second (and flow starts + ends per second), events, and peak RSS.
 *
 *   bench_net [--system dgx1-v100] [--nodes 256] [--topology fat-tree] [--rounds 1000]
 *             [--bytes 65536] [--pattern pairs|ring|shift|ps|all] [--model flow|analytic|both]
 *             [--workers W] [--servers S] [--tensors T]
 *
 * Patterns: `pairs` (rank r to r^1: NVLink pairs, no two flows share a link), `ring` (r to
 * r+1: NVLink inside nodes, one flow per node through the NICs), `shift` (r to r+G: every
 * flow crosses the network, two GPUs share each NIC), `ps` (parameter-server incast and
 * broadcast: W workers, the first W GPUs, each push T tensors at once, tensor t to the host
 * of node t mod S; when all W pushes of a tensor have arrived its server sends it back to
 * every worker; a round ends when every worker has every tensor back. Tensor t is
 * (1 + t mod 16) / 8 times --bytes. Thousands of flows share the NICs at once, all in one
 * connected component: the load that makes max-min sharing expensive). `all` runs the first
 * three; `ps` runs only when asked for. */
#include "comm_net.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

typedef struct {
  comm_net *net;
  const comm_topology *topo;
  comm_ep *src, *dst;
  uint32_t n;
  uint32_t left;       /* flows of this round still in flight */
  uint32_t rounds_left;
  uint64_t bytes;
  uint64_t flows;
} bench;

static void start_round(bench *b);

static void on_done(sim_engine *engine, void *user)
{
  bench *b = user;
  b->flows++;
  if (--b->left == 0 && b->rounds_left > 0)
    start_round(b);
}

static void start_round(bench *b)
{
  b->rounds_left--;
  b->left = b->n;
  for (uint32_t r = 0; r < b->n; r++)
    comm_net_send(b->net, b->src[r], b->dst[r], b->bytes, on_done, b);
}

/* ---- The parameter-server pattern --------------------------------------------------------- */

typedef struct ps_bench ps_bench;

typedef struct {
  ps_bench *b;
  uint32_t worker, tensor;
} ps_msg;

struct ps_bench {
  comm_net *net;
  const comm_topology *topo;
  uint32_t W, S, T;
  uint64_t bytes;
  uint32_t rounds_left;
  uint32_t *pushes;          /* per tensor: pushes arrived this round */
  uint64_t pulls_left;
  ps_msg *msgs;              /* W x T */
  uint64_t flows;
};

static uint64_t ps_tensor_bytes(const ps_bench *b, uint32_t t)
{
  return b->bytes * (1 + t % 16) / 8;
}

static comm_ep ps_server(const ps_bench *b, uint32_t t)
{
  return comm_topology_host(b->topo, t % b->S, 0);
}

static void ps_round(ps_bench *b);

static void ps_pull_done(sim_engine *engine, void *user)
{
  ps_bench *b = ((ps_msg *)user)->b;
  b->flows++;
  if (--b->pulls_left == 0 && b->rounds_left > 0)
    ps_round(b);
}

static void ps_push_done(sim_engine *engine, void *user)
{
  ps_msg *m = user;
  ps_bench *b = m->b;
  b->flows++;
  if (++b->pushes[m->tensor] < b->W)
    return;
  for (uint32_t w = 0; w < b->W; w++)
    comm_net_send(b->net, ps_server(b, m->tensor), comm_topology_device(b->topo, w),
                  ps_tensor_bytes(b, m->tensor), ps_pull_done,
                  &b->msgs[(size_t)w * b->T + m->tensor]);
}

static void ps_round(ps_bench *b)
{
  b->rounds_left--;
  b->pulls_left = (uint64_t)b->W * b->T;
  memset(b->pushes, 0, b->T * sizeof *b->pushes);
  for (uint32_t t = 0; t < b->T; t++)
    for (uint32_t w = 0; w < b->W; w++)
      comm_net_send(b->net, comm_topology_device(b->topo, w), ps_server(b, t),
                    ps_tensor_bytes(b, t), ps_push_done, &b->msgs[(size_t)w * b->T + t]);
}

static long peak_rss_kb(void);

static int run_ps(const comm_topology *topo, comm_net_model model, uint32_t rounds, uint64_t bytes,
                  uint32_t W, uint32_t S, uint32_t T)
{
  ps_bench b = {.topo = topo, .W = W, .S = S, .T = T, .bytes = bytes, .rounds_left = rounds};
  b.pushes = g_new0(uint32_t, T);
  b.msgs = g_new(ps_msg, (size_t)W * T);
  for (uint32_t w = 0; w < W; w++)
    for (uint32_t t = 0; t < T; t++)
      b.msgs[(size_t)w * T + t] = (ps_msg){&b, w, t};
  g_autoptr(sim_engine) e = sim_engine_new();
  b.net = comm_net_new(e, topo, model);
  gint64 t0 = g_get_monotonic_time();
  ps_round(&b);
  sim_engine_run(e);
  double wall = (double)(g_get_monotonic_time() - t0) * 1e-6;
  printf("%-7s %-8s workers=%u servers=%u tensors=%u rounds=%u flows=%" G_GUINT64_FORMAT
         " peak_flows=%" G_GUINT64_FORMAT " wall=%.3f s flows/s=%.3g starts+ends/s=%.3g events=%"
         G_GUINT64_FORMAT " sim_time=%.6f s peak_rss=%.1f MB\n",
         "ps", comm_net_model_name(model), W, S, T, rounds, b.flows, comm_net_peak_flows(b.net),
         wall, b.flows / wall, 2.0 * b.flows / wall, sim_engine_events(e),
         sim_time_to_s(sim_engine_now(e)), peak_rss_kb() / 1024.0);
  comm_net_free(b.net);
  g_free(b.pushes);
  g_free(b.msgs);
  return 0;
}

static long peak_rss_kb(void)
{
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

static int run(const comm_topology *topo, const char *pattern, comm_net_model model,
               uint32_t rounds, uint64_t bytes)
{
  uint32_t n = comm_topology_devices(topo), G = comm_topology_devices_per_node(topo);
  bench b = {.topo = topo, .n = n, .rounds_left = rounds, .bytes = bytes};
  b.src = g_new(comm_ep, n);
  b.dst = g_new(comm_ep, n);
  for (uint32_t r = 0; r < n; r++) {
    uint32_t to;
    if (strcmp(pattern, "pairs") == 0)
      to = r ^ 1u;
    else if (strcmp(pattern, "ring") == 0)
      to = (r + 1) % n;
    else
      to = (r + G) % n;
    b.src[r] = comm_topology_device(topo, r);
    b.dst[r] = comm_topology_device(topo, to < n ? to : r);
  }
  g_autoptr(sim_engine) e = sim_engine_new();
  b.net = comm_net_new(e, topo, model);
  gint64 t0 = g_get_monotonic_time();
  start_round(&b);
  sim_engine_run(e);
  double wall = (double)(g_get_monotonic_time() - t0) * 1e-6;
  printf("%-7s %-8s ranks=%u rounds=%u flows=%" G_GUINT64_FORMAT " wall=%.3f s "
         "flows/s=%.3g starts+ends/s=%.3g events=%" G_GUINT64_FORMAT " sim_time=%.6f s "
         "peak_rss=%.1f MB\n",
         pattern, comm_net_model_name(model), n, rounds, b.flows, wall, b.flows / wall,
         2.0 * b.flows / wall, sim_engine_events(e), sim_time_to_s(sim_engine_now(e)),
         peak_rss_kb() / 1024.0);
  comm_net_free(b.net);
  g_free(b.src);
  g_free(b.dst);
  return 0;
}

int main(int argc, char **argv)
{
  /* GOption allocates the strings it parses; the defaults are filled in afterwards. */
  g_autofree char *system = NULL, *topology = NULL, *pattern = NULL, *model = NULL;
  g_autofree char *bytes_text = NULL;
  int nodes = 256, rounds = 1000, workers = 0, servers = 0, tensors = 190;
  GOptionEntry entries[] = {
      {"system", 0, 0, G_OPTION_ARG_STRING, &system, "system preset", "NAME"},
      {"nodes", 0, 0, G_OPTION_ARG_INT, &nodes, "nodes", "N"},
      {"topology", 0, 0, G_OPTION_ARG_STRING, &topology, "inter-node topology", "NAME"},
      {"rounds", 0, 0, G_OPTION_ARG_INT, &rounds, "rounds of flows", "N"},
      {"bytes", 0, 0, G_OPTION_ARG_STRING, &bytes_text, "bytes per flow", "SIZE"},
      {"pattern", 0, 0, G_OPTION_ARG_STRING, &pattern, "pairs, ring, shift or all", "NAME"},
      {"model", 0, 0, G_OPTION_ARG_STRING, &model, "flow, analytic or both", "NAME"},
      {"workers", 0, 0, G_OPTION_ARG_INT, &workers, "ps: workers (default: every GPU)", "W"},
      {"servers", 0, 0, G_OPTION_ARG_INT, &servers, "ps: servers (default: every node)", "S"},
      {"tensors", 0, 0, G_OPTION_ARG_INT, &tensors, "ps: tensors per worker (190)", "T"},
      {NULL}};
  g_autoptr(GOptionContext) ctx = g_option_context_new("- network model benchmark");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  uint64_t bytes = 65536;
  if (!g_option_context_parse(ctx, &argc, &argv, &error) ||
      (bytes_text && !dt_parse_size(bytes_text, "--bytes", &bytes, &error))) {
    fprintf(stderr, "bench_net: %s\n", error->message);
    return 2;
  }
  if (!system)
    system = g_strdup("dgx1-v100");
  if (!topology)
    topology = g_strdup("fat-tree");
  if (!pattern)
    pattern = g_strdup("all");
  if (!model)
    model = g_strdup("both");
  if (nodes < 1 || rounds < 1 || workers < 0 || servers < 0 || tensors < 1) {
    fprintf(stderr, "bench_net: --nodes, --rounds and --tensors must be at least 1, --workers "
                    "and --servers at least 0\n");
    return 2;
  }
  comm_cluster_spec spec = {.system = system, .nodes = (uint32_t)nodes, .topology = topology};
  g_autoptr(comm_topology) topo = comm_topology_build(&spec, &error);
  if (!topo) {
    fprintf(stderr, "bench_net: %s\n", error->message);
    return 2;
  }
  printf("system=%s nodes=%d topology=%s links=%" G_GUINT64_FORMAT " peak_rss_after_build=%.1f MB\n",
         system, nodes, comm_topology_kind(topo), comm_topology_links(topo),
         peak_rss_kb() / 1024.0);
  if (strcmp(pattern, "ps") == 0) {
    uint32_t W = workers ? (uint32_t)workers : comm_topology_devices(topo);
    uint32_t S = servers ? (uint32_t)servers : comm_topology_nodes(topo);
    if (W > comm_topology_devices(topo) || S > comm_topology_nodes(topo)) {
      fprintf(stderr, "bench_net: --workers is at most the GPUs (%u), --servers at most the "
                      "nodes (%u)\n", comm_topology_devices(topo), comm_topology_nodes(topo));
      return 2;
    }
    if (strcmp(model, "analytic") != 0)
      run_ps(topo, COMM_NET_FLOW, (uint32_t)rounds, bytes, W, S, (uint32_t)tensors);
    if (strcmp(model, "flow") != 0)
      run_ps(topo, COMM_NET_ANALYTIC, (uint32_t)rounds, bytes, W, S, (uint32_t)tensors);
    return 0;
  }
  static const char *patterns[] = {"pairs", "ring", "shift"};
  for (gsize p = 0; p < G_N_ELEMENTS(patterns); p++) {
    if (strcmp(pattern, "all") != 0 && strcmp(pattern, patterns[p]) != 0)
      continue;
    if (strcmp(model, "analytic") != 0)
      run(topo, patterns[p], COMM_NET_FLOW, (uint32_t)rounds, bytes);
    if (strcmp(model, "flow") != 0)
      run(topo, patterns[p], COMM_NET_ANALYTIC, (uint32_t)rounds, bytes);
  }
  return 0;
}
