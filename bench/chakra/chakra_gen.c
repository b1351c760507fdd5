/* Writes small Chakra execution traces for the tests and the benchmark (through dtsim's own
 * writer, traces/chakra_out.c):
 *
 *   chakra_gen 3d DIR TP PP DP LAYERS MICROBATCHES   a 3-D job (below)
 *   chakra_gen ring DIR RANKS BYTES                  one all-reduce per rank, as Chakra's
 *                                                    generator writes its microbenchmarks
 *   chakra_gen flops DIR FLOPS                       one rank, one compute node of FLOPS
 *                                                    operations and no recorded time
 *   chakra_gen missing-dep|cycle|bad-group|unmatched DIR   two ranks with one defect
 *
 * The 3-D job: TP x PP x DP ranks, ranked tensor-parallel rank fastest, then data-parallel, then
 * pipeline stage (as Megatron ranks them). Each rank runs MICROBATCHES micro-batches through
 * LAYERS layers in GPipe order: per layer and pass a compute node (100 us forward, 200 us
 * backward) and an all-reduce of its tensor-parallel group (1 MiB); activations (2 MiB) go to
 * the next stage after a micro-batch's forward and gradients back after its backward; then one
 * all-reduce of 64 MiB of gradients per layer over the data-parallel group. */
#include "chakra_out.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(GError *e)
{
  fprintf(stderr, "chakra_gen: %s\n", e->message);
  exit(1);
}

typedef struct {
  trace_chakra_out *w;
  uint64_t next_id;
  uint64_t last;          /* the previous node of the rank's chain, or UINT64_MAX */
} gen;

/* Adds n after the previous node of the chain (a data dependency) and makes it the last. */
static void chain(gen *g, trace_chakra_node *n)
{
  GError *e = NULL;
  n->id = g->next_id++;
  n->data_deps = g->last == UINT64_MAX ? NULL : &g->last;
  n->n_data_deps = g->last == UINT64_MAX ? 0 : 1;
  if (n->stream == 0)
    n->stream = -1;
  if (!trace_chakra_out_node(g->w, n, &e))
    die(e);
  g->last = n->id;
}

static void begin(gen *g, uint32_t rank)
{
  GError *e = NULL;
  if (!trace_chakra_out_begin(g->w, rank, &e))
    die(e);
  g->next_id = 0;
  g->last = UINT64_MAX;
}

static void end(gen *g)
{
  GError *e = NULL;
  if (!trace_chakra_out_end(g->w, &e))
    die(e);
}

static void comp(gen *g, const char *name, uint64_t us)
{
  trace_chakra_node n = {.name = name, .type = WL_CHAKRA_COMP, .duration_micros = us};
  chain(g, &n);
}

static void coll(gen *g, const char *name, int type, uint64_t bytes, const char *pg)
{
  trace_chakra_node n = {.name = name, .type = WL_CHAKRA_COLL, .comm_type = type,
                         .comm_size = bytes, .pg_name = pg};
  chain(g, &n);
}

static void p2p(gen *g, int type, uint32_t src, uint32_t dst, int tag, uint64_t bytes)
{
  trace_chakra_node n = {.name = type == WL_CHAKRA_SEND ? "send" : "recv", .type = type,
                         .comm_src = (int32_t)src, .comm_dst = (int32_t)dst, .comm_tag = tag,
                         .comm_size = bytes};
  chain(g, &n);
}

static void gen_3d(gen *g, uint32_t T, uint32_t P, uint32_t D, uint32_t L, uint32_t M)
{
  char tp[32], dp[32];
  /* Groups: "tp S.D" of the T ranks of a stage and replica, "dp S.R" of the D ranks of a stage
   * and tensor rank. */
  g_autofree uint32_t *ranks = g_new(uint32_t, MAX(T, D));
  for (uint32_t s = 0; s < P; s++) {
    for (uint32_t d = 0; d < D; d++) {
      for (uint32_t t = 0; t < T; t++)
        ranks[t] = s * T * D + d * T + t;
      g_snprintf(tp, sizeof tp, "tp %u.%u", s, d);
      trace_chakra_out_group(g->w, tp, ranks, T);
    }
    for (uint32_t t = 0; t < T; t++) {
      for (uint32_t d = 0; d < D; d++)
        ranks[d] = s * T * D + d * T + t;
      g_snprintf(dp, sizeof dp, "dp %u.%u", s, t);
      trace_chakra_out_group(g->w, dp, ranks, D);
    }
  }
  for (uint32_t r = 0; r < T * P * D; r++) {
    uint32_t t = r % T, d = r / T % D, s = r / (T * D);
    g_snprintf(tp, sizeof tp, "tp %u.%u", s, d);
    g_snprintf(dp, sizeof dp, "dp %u.%u", s, t);
    begin(g, r);
    for (uint32_t mb = 0; mb < M; mb++) {
      if (s > 0)
        p2p(g, WL_CHAKRA_RECV, r - T * D, r, 0, 2u << 20);
      for (uint32_t l = 0; l < L; l++) {
        comp(g, "forward", 100);
        if (T > 1)
          coll(g, "tp all-reduce", WL_CHAKRA_ALL_REDUCE, 1u << 20, tp);
      }
      if (s + 1 < P)
        p2p(g, WL_CHAKRA_SEND, r, r + T * D, 0, 2u << 20);
    }
    for (uint32_t mb = 0; mb < M; mb++) {
      if (s + 1 < P)
        p2p(g, WL_CHAKRA_RECV, r + T * D, r, 1, 2u << 20);
      for (uint32_t l = 0; l < L; l++) {
        comp(g, "backward", 200);
        if (T > 1)
          coll(g, "tp all-reduce", WL_CHAKRA_ALL_REDUCE, 1u << 20, tp);
      }
      if (s > 0)
        p2p(g, WL_CHAKRA_SEND, r, r - T * D, 1, 2u << 20);
    }
    if (D > 1)
      for (uint32_t l = 0; l < L; l++)
        coll(g, "dp all-reduce", WL_CHAKRA_ALL_REDUCE, 64u << 20, dp);
    comp(g, "optimizer", 500);
    end(g);
  }
}

static void gen_ring(gen *g, uint32_t n, uint64_t bytes)
{
  for (uint32_t r = 0; r < n; r++) {
    begin(g, r);
    coll(g, "ALL_REDUCE", WL_CHAKRA_ALL_REDUCE, bytes, NULL);
    end(g);
  }
}

/* Two ranks, each a compute node then an all-reduce, with one defect. */
static void gen_bad(gen *g, const char *kind)
{
  uint32_t all[2] = {0, 1};
  uint32_t beyond[2] = {0, 5};
  gboolean bad_group = strcmp(kind, "bad-group") == 0;
  trace_chakra_out_group(g->w, "0", bad_group ? beyond : all, 2);
  for (uint32_t r = 0; r < 2; r++) {
    begin(g, r);
    comp(g, "gemm", 10);
    if (r == 1 && strcmp(kind, "missing-dep") == 0) {
      uint64_t missing = 42;
      trace_chakra_node n = {.id = g->next_id++, .name = "lost", .type = WL_CHAKRA_COMP,
                             .duration_micros = 5, .data_deps = &missing, .n_data_deps = 1,
                             .stream = -1};
      GError *e = NULL;
      if (!trace_chakra_out_node(g->w, &n, &e))
        die(e);
    }
    if (r == 1 && strcmp(kind, "cycle") == 0) {
      /* Nodes 1 and 2 wait for each other. */
      uint64_t two = 2, one = 1;
      trace_chakra_node a = {.id = 1, .name = "a", .type = WL_CHAKRA_COMP,
                             .duration_micros = 5, .data_deps = &two, .n_data_deps = 1,
                             .stream = -1};
      trace_chakra_node b = {.id = 2, .name = "b", .type = WL_CHAKRA_COMP,
                             .duration_micros = 5, .data_deps = &one, .n_data_deps = 1,
                             .stream = -1};
      GError *e = NULL;
      if (!trace_chakra_out_node(g->w, &a, &e) || !trace_chakra_out_node(g->w, &b, &e))
        die(e);
      g->next_id = 3;
    }
    if (!(r == 1 && strcmp(kind, "unmatched") == 0))
      coll(g, "ALL_REDUCE", WL_CHAKRA_ALL_REDUCE, 1 << 20, "0");
    end(g);
  }
}

int main(int argc, char **argv)
{
  if (argc < 3) {
    fprintf(stderr, "usage: chakra_gen 3d|ring|missing-dep|cycle|bad-group|unmatched DIR ...\n");
    return 2;
  }
  GError *e = NULL;
  gen g = {0};
  g.w = trace_chakra_out_new(argv[2], "gen", "chakra_gen", &e);
  if (!g.w)
    die(e);
  if (strcmp(argv[1], "3d") == 0 && argc == 8)
    gen_3d(&g, (uint32_t)atoi(argv[3]), (uint32_t)atoi(argv[4]), (uint32_t)atoi(argv[5]),
           (uint32_t)atoi(argv[6]), (uint32_t)atoi(argv[7]));
  else if (strcmp(argv[1], "flops") == 0 && argc == 4) {
    begin(&g, 0);
    trace_chakra_node n = {.name = "gemm", .type = WL_CHAKRA_COMP,
                           .num_ops = g_ascii_strtoull(argv[3], NULL, 10)};
    chain(&g, &n);
    end(&g);
  } else if (strcmp(argv[1], "ring") == 0 && argc == 5)
    gen_ring(&g, (uint32_t)atoi(argv[3]), g_ascii_strtoull(argv[4], NULL, 10));
  else if (argc == 3)
    gen_bad(&g, argv[1]);
  else {
    fprintf(stderr, "chakra_gen: bad arguments\n");
    return 2;
  }
  if (!trace_chakra_out_close(g.w, &e))
    die(e);
  trace_chakra_out_free(g.w);
  return 0;
}
