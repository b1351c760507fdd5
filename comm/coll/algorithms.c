/* The algorithm registry: for each algorithm and operation, the plan (list of phases) that
 * implements it, and the decision rule behind "auto". docs/collectives.md describes each. */
#include "coll_internal.h"
#include "util.h"

#include <math.h>
#include <string.h>

/* ---- Plan helpers ------------------------------------------------------------------------- */

static coll__phase *add_phase(coll__plan *plan, const coll__phase_kind *kind,
                              const comm_coll_group *g, uint64_t bytes)
{
  g_assert(plan->nphases < COLL__MAX_PHASES);
  coll__phase *ph = &plan->phases[plan->nphases++];
  *ph = (coll__phase){.kind = kind, .group = g, .m = g->n, .stride = 1, .bytes = bytes,
                      .chunks = 1};
  return ph;
}

static uint32_t chunks_for(uint64_t bytes, const comm_coll_args *args)
{
  uint64_t chunk = args->chunk_bytes;
  uint64_t c = bytes == 0 ? 1 : (bytes + chunk - 1) / chunk;
  return (uint32_t)MIN(MAX(c, 1), (uint64_t)1 << 20);
}

/* The default pipeline depth of chains and trees. With D steps to fill the pipeline, the
 * closed form is (D + C - 1)(alpha + B/C beta), smallest at C = sqrt((D - 1) B beta / alpha)
 * (the segment-size choice of pipelined MPI broadcasts); alpha includes the per-step software
 * cost. Bounded to [1, 1024] chunks of at least 4 KiB. `slowest_ps` and `latency_ps` are the
 * slowest edge's time for the whole buffer and its latency. */
static uint32_t best_chunks(uint64_t bytes, uint32_t depth, sim_time_ps slowest_ps,
                            sim_time_ps latency_ps, const comm_coll_args *args)
{
  double alpha = (double)latency_ps + (double)args->step_ps;
  double bw_term = (double)(slowest_ps - latency_ps);
  if (depth <= 1 || alpha <= 0 || bw_term <= 0)
    return 1;
  double c = sqrt((depth - 1) * bw_term / alpha);
  uint64_t max_c = MAX(bytes / 4096, 1);
  return (uint32_t)MIN(MAX(llround(c), 1), (long long)MIN(max_c, 1024));
}

static gboolean is_pow2(uint32_t n)
{
  return n > 0 && (n & (n - 1)) == 0;
}

static gboolean need_pow2(const comm_coll_group *g, const char *what, GError **error)
{
  if (is_pow2(g->n))
    return TRUE;
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
              "%s needs a power-of-two group, not %u ranks", what, g->n);
  return FALSE;
}

/* ---- Plans -------------------------------------------------------------------------------- */

static gboolean ring_allreduce(coll__plan *plan, const comm_coll_group *g,
                               const comm_coll_args *a, GError **error)
{
  gboolean pipe = a->form == COMM_COLL_FORM_PIPELINED;
  add_phase(plan, &coll__ring_rs, g, a->bytes)->pipelined = pipe;
  coll__phase *ag = add_phase(plan, &coll__ring_ag, g, a->bytes);
  ag->pipelined = pipe;
  ag->offset = 1;
  return TRUE;
}

static gboolean ring_allgather(coll__plan *plan, const comm_coll_group *g,
                               const comm_coll_args *a, GError **error)
{
  add_phase(plan, &coll__ring_ag, g, a->bytes)->pipelined = a->form == COMM_COLL_FORM_PIPELINED;
  return TRUE;
}

static gboolean ring_reduce_scatter(coll__plan *plan, const comm_coll_group *g,
                                    const comm_coll_args *a, GError **error)
{
  add_phase(plan, &coll__ring_rs, g, a->bytes)->pipelined = a->form == COMM_COLL_FORM_PIPELINED;
  return TRUE;
}

/* Chunks of a chain: the given chunk size, or the best count for its slowest hop. */
static uint32_t chain_chunks(const comm_coll_group *g, const comm_coll_args *a)
{
  if (a->chunk_bytes)
    return chunks_for(a->bytes, a);
  sim_time_ps slowest = 0, lat = 0;
  for (uint32_t r = 0; r + 1 < g->n; r++) {
    sim_time_ps t = coll__p2p(g, r, r + 1, a->bytes);
    if (t > slowest) {
      slowest = t;
      lat = coll__latency(g, r, r + 1);
    }
  }
  return best_chunks(a->bytes, g->n - 1, slowest, lat, a);
}

static gboolean chain_broadcast(coll__plan *plan, const comm_coll_group *g,
                                const comm_coll_args *a, GError **error)
{
  coll__phase *ph = add_phase(plan, &coll__chain_bcast, g, a->bytes);
  ph->root = a->root;
  ph->chunks = chain_chunks(g, a);
  return TRUE;
}

static gboolean chain_reduce(coll__plan *plan, const comm_coll_group *g, const comm_coll_args *a,
                             GError **error)
{
  coll__phase *ph = add_phase(plan, &coll__chain_reduce, g, a->bytes);
  ph->root = a->root;
  ph->chunks = chain_chunks(g, a);
  return TRUE;
}

static gboolean tree_allreduce(coll__plan *plan, const comm_coll_group *g,
                               const comm_coll_args *a, GError **error)
{
  add_phase(plan, &coll__binomial_reduce, g, a->bytes);
  add_phase(plan, &coll__binomial_bcast, g, a->bytes);
  return TRUE;
}

static gboolean tree_broadcast(coll__plan *plan, const comm_coll_group *g,
                               const comm_coll_args *a, GError **error)
{
  add_phase(plan, &coll__binomial_bcast, g, a->bytes)->root = a->root;
  return TRUE;
}

static gboolean tree_reduce(coll__plan *plan, const comm_coll_group *g, const comm_coll_args *a,
                            GError **error)
{
  add_phase(plan, &coll__binomial_reduce, g, a->bytes)->root = a->root;
  return TRUE;
}

static gboolean dtree_allreduce(coll__plan *plan, const comm_coll_group *g,
                                const comm_coll_args *a, GError **error)
{
  coll__phase *ph = add_phase(plan, &coll__double_tree, g, a->bytes);
  uint64_t half = coll__seg(a->bytes, 2, 0);
  ph->trees[0] = coll__tree_build(g, 0);
  ph->trees[1] = coll__tree_build(g, 1);
  if (a->chunk_bytes) {
    ph->chunks = chunks_for(half, a);
    return TRUE;
  }
  sim_time_ps slowest = 0, lat = 0;
  for (int k = 0; k < 2; k++) {
    for (uint32_t r = 0; r < g->n; r++) {
      uint32_t p = ph->trees[k]->parent[r];
      if (p == COLL__NONE)
        continue;
      sim_time_ps t = MAX(coll__p2p(g, r, p, half), coll__p2p(g, p, r, half));
      if (t > slowest) {
        slowest = t;
        lat = MAX(coll__latency(g, r, p), coll__latency(g, p, r));
      }
    }
  }
  uint32_t height = MAX(ph->trees[0]->root_height, ph->trees[1]->root_height);
  ph->chunks = best_chunks(half, 2 * height, slowest, lat, a);
  return TRUE;
}

static gboolean rd_allreduce(coll__plan *plan, const comm_coll_group *g, const comm_coll_args *a,
                             GError **error)
{
  add_phase(plan, &coll__rd_fold, g, a->bytes);
  add_phase(plan, &coll__rd_exchange, g, a->bytes);
  add_phase(plan, &coll__rd_unfold, g, a->bytes);
  return TRUE;
}

static gboolean rd_allgather(coll__plan *plan, const comm_coll_group *g, const comm_coll_args *a,
                             GError **error)
{
  if (!need_pow2(g, "recursive-doubling allgather", error))
    return FALSE;
  add_phase(plan, &coll__rd_allgather, g, a->bytes);
  return TRUE;
}

static gboolean hd_allreduce(coll__plan *plan, const comm_coll_group *g, const comm_coll_args *a,
                             GError **error)
{
  add_phase(plan, &coll__rd_fold, g, a->bytes);
  add_phase(plan, &coll__halving, g, a->bytes);
  add_phase(plan, &coll__doubling, g, a->bytes);
  add_phase(plan, &coll__rd_unfold, g, a->bytes);
  return TRUE;
}

static gboolean hd_reduce_scatter(coll__plan *plan, const comm_coll_group *g,
                                  const comm_coll_args *a, GError **error)
{
  if (!need_pow2(g, "halving-doubling reduce-scatter", error))
    return FALSE;
  add_phase(plan, &coll__halving, g, a->bytes);
  return TRUE;
}

static gboolean onetoall_allreduce(coll__plan *plan, const comm_coll_group *g,
                                   const comm_coll_args *a, GError **error)
{
  add_phase(plan, &coll__gather_root, g, a->bytes);
  add_phase(plan, &coll__scatter_root, g, a->bytes);
  return TRUE;
}

static gboolean onetoall_broadcast(coll__plan *plan, const comm_coll_group *g,
                                   const comm_coll_args *a, GError **error)
{
  add_phase(plan, &coll__scatter_root, g, a->bytes)->root = a->root;
  return TRUE;
}

static gboolean onetoall_reduce(coll__plan *plan, const comm_coll_group *g,
                                const comm_coll_args *a, GError **error)
{
  add_phase(plan, &coll__gather_root, g, a->bytes)->root = a->root;
  return TRUE;
}

static gboolean direct_alltoall(coll__plan *plan, const comm_coll_group *g,
                                const comm_coll_args *a, GError **error)
{
  add_phase(plan, &coll__alltoall, g, a->bytes);
  return TRUE;
}

/* Intra-node ring reduce-scatter, one inter-node ring allreduce per local index on the
 * segment that index owns, intra-node ring allgather. */
static gboolean hier_allreduce(coll__plan *plan, const comm_coll_group *g,
                               const comm_coll_args *a, GError **error)
{
  if (g->per_node == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "hierarchical needs the same number of consecutive ranks on every node");
    return FALSE;
  }
  gboolean pipe = a->form == COMM_COLL_FORM_PIPELINED;
  uint32_t per = g->per_node, nodes = g->nodes;
  if (per > 1) {
    coll__phase *ph = add_phase(plan, &coll__ring_rs, g, a->bytes);
    ph->m = per;
    ph->pipelined = pipe;
  }
  if (nodes > 1) {
    const coll__phase_kind *kinds[2] = {&coll__ring_rs, &coll__ring_ag};
    for (int i = 0; i < 2; i++) {
      coll__phase *ph = add_phase(plan, kinds[i], g, a->bytes);
      ph->m = nodes;
      ph->stride = per;
      ph->seg_of = per;
      ph->offset = 1;
      ph->pipelined = pipe;
    }
  }
  if (per > 1) {
    coll__phase *ph = add_phase(plan, &coll__ring_ag, g, a->bytes);
    ph->m = per;
    ph->offset = 1;
    ph->pipelined = pipe;
  }
  return TRUE;
}

/* ---- "auto" ------------------------------------------------------------------------------ */

extern const comm_coll_algorithm coll__algorithms[];
enum { ALG_RING, ALG_DTREE, ALG_TREE, ALG_RD, ALG_HD, ALG_ONETOALL, ALG_HIER, ALG_DIRECT, ALG_AUTO,
       ALG_NCCL, ALG_N };

/* "auto" on accelerators (a system whose layout is not "host": GPUs on NVLink, NVSwitch or
 * PCIe) is "nccl", which picks among its own rings, trees and protocols by their closed forms.
 * Elsewhere it is the candidate of this registry with the least closed form for the operation,
 * the size and the group (an MPI library's tuned choice at its best); "onetoall" is no MPI
 * library's algorithm and is left out. */
static gboolean on_accelerators(const comm_coll_group *g)
{
  const comm_system *sys = comm_topology_system(g->topo);
  return sys != NULL && sys->layout != NULL && strcmp(sys->layout, "host") != 0;
}

/* Off accelerators, beyond this many ranks evaluating every candidate's closed form (every
 * algorithm's plan) costs over a second per size, and auto is the ring, the bandwidth-optimal
 * algorithm of large groups, whose latency then grows with the ranks. */
#define AUTO_MAX_RANKS 65536u
/* On accelerators auto is nccl up to this many ranks: nccl's model plans 25 MiB on 131072 GPUs
 * in 4.6 s of CPU and on 262144 in 8.8 s (sanitizer build), about a minute at 10^6. Beyond, auto
 * is the ring too; dtsim run says so. (Up to 131072 GPUs it was the ring above 65536, 9.4x slower
 * than nccl's trees: a ResNet-50 step with --nodes 16384 took 1984 ms against 212 ms.) */
#define AUTO_NCCL_MAX_RANKS 262144u

/* On accelerators auto is nccl unless the registry's plain ring, which auto could as well
 * run, has the smaller closed form. nccl charges what NCCL's implementation adds to a ring
 * (its per-hop software latency, the pipeline fill of its slices, docs/nccl.md) and lays its
 * channels as NCCL's search does; where that search leaves few channels on a slow NIC (one
 * 25 GbE port per p3.16xlarge: 2 channels, 25 MB in 20.9 ms) the plain ring over the same NIC
 * (18.7 ms) is the faster of the two. Up to AUTO_MAX_RANKS ranks: beyond, planning both costs
 * seconds per size. */
static const comm_coll_algorithm *nccl_or_ring(const comm_coll_group *g,
                                               const comm_coll_args *a)
{
  const comm_coll_algorithm *nccl = &coll__algorithms[ALG_NCCL];
  const comm_coll_algorithm *ring = &coll__algorithms[ALG_RING];
  sim_time_ps t_nccl, t_ring;
  if (g->n > AUTO_MAX_RANKS || ring->plan[a->op] == NULL ||
      !comm_coll_analytic_time(g->topo, g, nccl, a, &t_nccl, NULL) ||
      !comm_coll_analytic_time(g->topo, g, ring, a, &t_ring, NULL))
    return nccl;
  return t_ring < t_nccl ? ring : nccl;
}

static const comm_coll_algorithm *auto_choose(const comm_coll_group *g, const comm_coll_args *a)
{
  gboolean accelerators = on_accelerators(g);
  if (g->n > (accelerators ? AUTO_NCCL_MAX_RANKS : AUTO_MAX_RANKS))
    return &coll__algorithms[a->op == COMM_COLL_ALLTOALL ? ALG_DIRECT : ALG_RING];
  if (accelerators)
    return nccl_or_ring(g, a);
  const comm_coll_algorithm *best = NULL;
  sim_time_ps best_ps = 0;
  for (int i = 0; i < ALG_N; i++) {
    const comm_coll_algorithm *c = &coll__algorithms[i];
    if (i == ALG_AUTO || i == ALG_NCCL || i == ALG_ONETOALL || c->plan[a->op] == NULL)
      continue;
    sim_time_ps t;
    if (!comm_coll_analytic_time(g->topo, g, c, a, &t, NULL))
      continue;   /* not for this group (hierarchical on uneven nodes) */
    if (best == NULL || t < best_ps) {
      best = c;
      best_ps = t;
    }
  }
  return best != NULL ? best : &coll__algorithms[ALG_RING];
}

/* auto_choose, remembered with the group (see comm_coll_group: pick_memo). */
static const comm_coll_algorithm *auto_pick(const comm_coll_group *g, const comm_coll_args *a)
{
  comm_coll_group *memo = (comm_coll_group *)g;
  for (uint32_t i = 0; i < memo->pick_memos; i++)
    if (coll__same_args(&memo->pick_memo[i].args, a))
      return memo->pick_memo[i].algo;
  const comm_coll_algorithm *algo = auto_choose(g, a);
  uint32_t k = memo->pick_next;
  memo->pick_memo[k].args = *a;
  memo->pick_memo[k].algo = algo;
  memo->pick_next = (k + 1) % COLL_PICK_MEMOS;
  memo->pick_memos = MAX(memo->pick_memos, k + 1);
  return algo;
}

/* ---- The registry ------------------------------------------------------------------------ */

#define OPS(ar, ag, rs, bc, rd) {[COMM_COLL_ALLREDUCE] = ar, [COMM_COLL_ALLGATHER] = ag, \
    [COMM_COLL_REDUCE_SCATTER] = rs, [COMM_COLL_BROADCAST] = bc, [COMM_COLL_REDUCE] = rd}

const comm_coll_algorithm coll__algorithms[ALG_N] = {
    [ALG_RING] = {"ring", "pipelined ring: reduce-scatter then allgather, 2(n-1) steps of B/n "
                          "(broadcast/reduce: pipelined chain in chunks)",
                  OPS(ring_allreduce, ring_allgather, ring_reduce_scatter, chain_broadcast,
                      chain_reduce), NULL},
    [ALG_DTREE] = {"double-tree", "NCCL's two complementary binary trees over nodes (chains "
                                  "inside), half the buffer each, pipelined in chunks",
                   OPS(dtree_allreduce, NULL, NULL, NULL, NULL), NULL},
    [ALG_TREE] = {"tree", "binomial tree: reduce to rank 0 then broadcast, log2(n) steps each of "
                          "the whole buffer",
                  OPS(tree_allreduce, NULL, NULL, tree_broadcast, tree_reduce), NULL},
    [ALG_RD] = {"recursive-doubling", "log2(n) pairwise exchanges of the whole buffer at "
                                      "doubling distance (allgather: doubling blocks)",
                OPS(rd_allreduce, rd_allgather, NULL, NULL, NULL), NULL},
    [ALG_HD] = {"halving-doubling", "Rabenseifner: reduce-scatter by recursive halving, "
                                    "allgather by recursive doubling",
                OPS(hd_allreduce, NULL, hd_reduce_scatter, NULL, NULL), NULL},
    [ALG_ONETOALL] = {"onetoall", "Paleo's: every rank sends to rank 0, which reduces and sends "
                                  "the result back to each",
                      OPS(onetoall_allreduce, NULL, NULL, onetoall_broadcast, onetoall_reduce),
                      NULL},
    [ALG_HIER] = {"hierarchical", "intra-node ring reduce-scatter, inter-node ring allreduce "
                                  "per local rank, intra-node ring allgather",
                  OPS(hier_allreduce, NULL, NULL, NULL, NULL), NULL},
    [ALG_DIRECT] = {"direct", "alltoall: every rank sends each other rank its block at once",
                    {[COMM_COLL_ALLTOALL] = direct_alltoall}, NULL},
    [ALG_AUTO] = {"auto", "nccl on accelerators (the ring where its closed form is less); "
                          "elsewhere the algorithm with the least closed form for the size and "
                          "group (see docs/collectives.md)",
                  OPS(NULL, NULL, NULL, NULL, NULL), auto_pick},
    [ALG_NCCL] = {"nccl", "what NCCL would run: rings, trees or NVLink SHARP over its channels, "
                          "protocol LL, LL128 or Simple, by its cost model (docs/nccl.md); "
                          "nccl:ALGO[/PROTO[/CHANNELS]] forces them as NCCL_ALGO, NCCL_PROTO "
                          "and NCCL_MIN_NCHANNELS do",
                  OPS(NULL, NULL, NULL, NULL, NULL), NULL, TRUE},
};

size_t comm_coll_algorithm_count(void)
{
  return ALG_N;
}

const comm_coll_algorithm *comm_coll_algorithm_at(size_t index)
{
  g_return_val_if_fail(index < ALG_N, NULL);
  return &coll__algorithms[index];
}

/* "nccl:ALGO[/PROTO[/CHANNELS]]": NCCL with its algorithm (and protocol, and channel count)
 * forced, as NCCL_ALGO, NCCL_PROTO and NCCL_MIN_NCHANNELS force them. Each spelling is made
 * once and kept for the life of the program (the registry hands out const pointers that
 * outlive any caller), so the same name gives the same entry. Whether this system can run the
 * algorithm is known only with the group: coll__nccl_plan_forced says so. */
#define NCCL_MAX_CHANNELS 64   /* NCCL's MAXCHANNELS (src/include/device.h) */

static gboolean parse_nccl_force(const char *spec, const char *what, coll__nccl_force *f,
                                 GError **error)
{
  g_auto(GStrv) part = g_strsplit(spec, "/", -1);
  guint np = g_strv_length(part);
  *f = (coll__nccl_force){.algo = -1, .proto = -1, .channels = 0};
  if (np < 1 || np > 3 || part[0][0] == '\0') {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: '%s' is not nccl:ALGO[/PROTO[/CHANNELS]]", what, spec);
    return FALSE;
  }
  for (int a = 0; a < COLL__NCCL_NALGO; a++)
    if (a != COLL__NCCL_P2P && g_ascii_strcasecmp(part[0], coll__nccl_algo_names[a]) == 0)
      f->algo = a;
  if (f->algo < 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: unknown NCCL algorithm '%s' (known: ring, tree, nvls, nvlstree, "
                "collnet-direct, collnet-chain, pat)", what, part[0]);
    return FALSE;
  }
  if (np >= 2) {
    for (int p = 0; p < COLL__NPROTO; p++)
      if (g_ascii_strcasecmp(part[1], coll__nccl_proto_names[p]) == 0)
        f->proto = p;
    if (f->proto < 0) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: unknown NCCL protocol '%s' (known: ll, ll128, simple)", what, part[1]);
      return FALSE;
    }
  }
  if (np == 3) {
    guint64 c;
    if (!g_ascii_string_to_unsigned(part[2], 10, 1, NCCL_MAX_CHANNELS, &c, NULL)) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: NCCL channels '%s' is not a whole number from 1 to %d", what, part[2],
                  NCCL_MAX_CHANNELS);
      return FALSE;
    }
    f->channels = (uint32_t)c;
  }
  return TRUE;
}

static GHashTable *nccl_forced;   /* canonical name -> comm_coll_algorithm (never freed) */
G_LOCK_DEFINE_STATIC(nccl_forced);

static const comm_coll_algorithm *nccl_forced_find(const char *name, const char *what,
                                                   GError **error)
{
  coll__nccl_force f;
  if (!parse_nccl_force(name + strlen("nccl:"), what, &f, error))
    return NULL;
  g_autoptr(GString) canon = g_string_new("nccl:");
  g_string_append(canon, coll__nccl_algo_names[f.algo]);
  if (f.proto >= 0)
    g_string_append_printf(canon, "/%s", coll__nccl_proto_names[f.proto]);
  if (f.channels > 0)
    g_string_append_printf(canon, "/%u", f.channels);
  G_LOCK(nccl_forced);
  if (!nccl_forced)
    nccl_forced = g_hash_table_new(g_str_hash, g_str_equal);
  comm_coll_algorithm *a = g_hash_table_lookup(nccl_forced, canon->str);
  if (!a) {
    a = g_new0(comm_coll_algorithm, 1);
    a->name = g_strdup(canon->str);
    a->description = "NCCL with its algorithm (protocol, channels) forced";
    a->nccl = TRUE;
    a->forced = TRUE;
    a->force = f;
    g_hash_table_insert(nccl_forced, (char *)a->name, a);
  }
  G_UNLOCK(nccl_forced);
  return a;
}

const comm_coll_algorithm *comm_coll_algorithm_find(const char *name, const char *what,
                                                    GError **error)
{
  for (size_t i = 0; i < ALG_N; i++)
    if (name != NULL && strcmp(name, coll__algorithms[i].name) == 0)
      return &coll__algorithms[i];
  if (name != NULL && g_str_has_prefix(name, "nccl:"))
    return nccl_forced_find(name, what, error);
  g_autoptr(GString) known = g_string_new(NULL);
  for (size_t i = 0; i < ALG_N; i++)
    g_string_append_printf(known, "%s%s", i ? ", " : "", coll__algorithms[i].name);
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
              "%s: unknown algorithm '%s' (known: %s, nccl:ALGO[/PROTO[/CHANNELS]])", what,
              name ? name : "", known->str);
  return NULL;
}

const char *comm_coll_algorithm_name(const comm_coll_algorithm *algo)
{
  return algo->name;
}

const char *comm_coll_algorithm_description(const comm_coll_algorithm *algo)
{
  return algo->description;
}

gboolean comm_coll_algorithm_is_rule(const comm_coll_algorithm *algo)
{
  return algo->pick != NULL;
}

gboolean comm_coll_algorithm_own_costs(const comm_coll_algorithm *algo)
{
  return algo->nccl;
}

gboolean comm_coll_algorithm_supports(const comm_coll_algorithm *algo, comm_coll_op op)
{
  g_return_val_if_fail(op < COMM_COLL_N_OPS, FALSE);
  return algo->pick != NULL || algo->nccl || algo->plan[op] != NULL;
}

const comm_coll_algorithm *comm_coll_resolve(const comm_coll_algorithm *algo,
                                             const comm_coll_group *group,
                                             const comm_coll_args *args)
{
  return algo->pick != NULL ? algo->pick(group, args) : algo;
}

gboolean coll__plan_build(coll__plan *plan, const comm_coll_group *group,
                          const comm_coll_algorithm *algo, const comm_coll_args *args,
                          GError **error)
{
  *plan = (coll__plan){0};
  algo = comm_coll_resolve(algo, group, args);
  if (args->op >= COMM_COLL_N_OPS || algo->nccl || algo->plan[args->op] == NULL) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "algorithm '%s' does not implement %s",
                algo->name, comm_coll_op_name(args->op));
    return FALSE;
  }
  if ((args->op == COMM_COLL_BROADCAST || args->op == COMM_COLL_REDUCE) &&
      args->root >= group->n) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "root %u is not in a group of %u ranks",
                args->root, group->n);
    return FALSE;
  }
  if (group->n <= 1)
    return TRUE;   /* nothing moves */
  if (!algo->plan[args->op](plan, group, args, error)) {
    coll__plan_clear(plan);
    return FALSE;
  }
  return TRUE;
}

void coll__plan_clear(coll__plan *plan)
{
  for (uint32_t i = 0; i < plan->nphases; i++)
    for (int k = 0; k < 2; k++)
      g_clear_pointer(&plan->phases[i].trees[k], coll__tree_free);
  plan->nphases = 0;
}

uint32_t coll__plan_steps(const coll__plan *plan)
{
  uint32_t steps = 0;
  for (uint32_t i = 0; i < plan->nphases; i++)
    steps += plan->phases[i].kind->steps(&plan->phases[i]);
  return steps;
}

const comm_coll_algorithm *coll__algorithm_builtin(const char *name)
{
  for (size_t i = 0; i < ALG_N; i++)
    if (strcmp(name, coll__algorithms[i].name) == 0)
      return &coll__algorithms[i];
  g_assert_not_reached();
}
