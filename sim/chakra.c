/* Chakra execution traces in and out of task graphs (see chakra.h and docs/chakra.md). */
#include "chakra.h"

#include "chakra_out.h"
#include "devices.h"
#include "net_adapter.h"
#include "simulate.h"
#include "util.h"
#include "wl_chakra.h"

#include <math.h>
#include <string.h>

static const sim_key chakra_keys[] = {
    {"chakra", SIM_KEY_STRING, SIM_KEY_OFF(chakra), .commands = SIM_OPTS_RUN, .arg = "DIR",
     .help = "the workload is a folder of Chakra execution traces (PREFIX.RANK.et)"},
    {"chakra-out", SIM_KEY_STRING, SIM_KEY_OFF(chakra_out), .commands = SIM_OPTS_RUN,
     .arg = "DIR", .help = "write the simulated job as Chakra execution traces, one per rank (one "
                          "iteration unless --iterations is given; every device simulated unless "
                          "--symmetry is given, so that collectives are collective nodes; "
                          "parameter servers as ranks or streams of their own)"},
};
const sim_key_group sim_keys_chakra = SIM_KEY_GROUP("chakra", 0, chakra_keys);

/* ---- In ------------------------------------------------------------------------------------ */

/* Streams of a rank, made on first use: a key says what runs there. */
enum { STREAM_GPU, STREAM_CPU, STREAM_COLL, STREAM_SEND, STREAM_RECV };

/* kind in bits 61-63, a (a stream number, a group + 1 or 0 for all ranks, a peer: below 2^30)
 * in bits 31-60, b (a tag, below 2^31) in bits 0-30. */
static inline uint64_t stream_key(unsigned kind, uint64_t a, uint64_t b)
{
  g_assert(a < (UINT64_C(1) << 30) && b < (UINT64_C(1) << 31));
  return (uint64_t)kind << 61 | a << 31 | b;
}

typedef struct {
  sim_unit_id unit;
  GHashTable *streams;       /* stream_key -> sim_stream_id + 1 */
  GHashTable *colls;         /* group index -> GArray of node indices */
  GHashTable *sends, *recvs; /* (peer << 31 | tag) -> GArray of node indices */
  sim_task_id *task;         /* per node */
} rank_build;

typedef struct {
  const wl_chakra_trace *t;
  sim_plan *p;
  rank_build *rb;
  const sim_scenario *s;
  dev_device *dev;           /* times compute nodes without a recorded duration */
  const comm_coll_algorithm *algo;   /* --allreduce, or the one the trace names */
} build;

static sim_stream_id stream_of(build *b, uint32_t rank, unsigned kind, uint64_t x, uint64_t y)
{
  rank_build *rb = &b->rb[rank];
  uint64_t key = stream_key(kind, kind == STREAM_COLL ? (x == WL_CHAKRA_WORLD ? 0 : x + 1) : x, y);
  gpointer v = g_hash_table_lookup(rb->streams, &key);
  if (v)
    return GPOINTER_TO_UINT(v) - 1;
  g_autofree char *name = NULL;
  switch (kind) {
  case STREAM_GPU: name = g_strdup_printf("stream %" G_GUINT64_FORMAT, x); break;
  case STREAM_CPU: name = g_strdup("cpu"); break;
  case STREAM_COLL:
    name = x == WL_CHAKRA_WORLD
               ? g_strdup("comm")
               : g_strdup_printf("comm %s",
                                 ((wl_chakra_group *)g_ptr_array_index(b->t->groups, x))->name);
    break;
  case STREAM_SEND: name = g_strdup_printf("send to %" G_GUINT64_FORMAT " tag %" G_GUINT64_FORMAT, x, y); break;
  default: name = g_strdup_printf("receive from %" G_GUINT64_FORMAT " tag %" G_GUINT64_FORMAT, x, y); break;
  }
  sim_stream_id s = sim_graph_add_stream(b->p->graph, rb->unit, name);
  uint64_t *k = g_new(uint64_t, 1);
  *k = key;
  g_hash_table_insert(rb->streams, k, GUINT_TO_POINTER(s + 1));
  return s;
}

static void list_add(GHashTable *h, uint64_t key, uint32_t node)
{
  GArray *a = g_hash_table_lookup(h, &key);
  if (!a) {
    a = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint64_t *k = g_new(uint64_t, 1);
    *k = key;
    g_hash_table_insert(h, k, a);
  }
  g_array_append_val(a, node);
}

static void array_free(gpointer a) { g_array_free(a, TRUE); }

static gboolean node_error(GError **error, const wl_chakra_rank *r, uint32_t node, const char *fmt,
                           ...) G_GNUC_PRINTF(4, 5);
static gboolean node_error(GError **error, const wl_chakra_rank *r, uint32_t node, const char *fmt,
                           ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_autofree char *where = wl_chakra_node_where(r, node);
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s", where, what);
  return FALSE;
}

/* A compute node's time: its recorded duration, or its FLOPs and bytes on the device. */
static sim_time_ps compute_ps(const build *b, const wl_chakra_node *n)
{
  if (n->duration_ps || (!n->flops && !n->bytes))
    return (sim_time_ps)MIN(n->duration_ps, (uint64_t)SIM_TIME_MAX);
  /* Without a shape, FLOPs are taken as a square matrix product (m = n = k, 2 m n k FLOPs), the
   * bulk of what a training step computes; bytes alone as a streaming kernel. */
  uint64_t side = n->flops ? MAX((uint64_t)llround(cbrt((double)n->flops / 2)), 1) : 0;
  wl_op_cost op = {.kind = n->flops ? WL_OP_GEMM : WL_OP_ELEMENTWISE, .pass = WL_PASS_FORWARD,
                   .precision = b->s->precision, .flops = n->flops, .bytes_read = n->bytes,
                   .gemm_m = side, .gemm_n = side, .gemm_k = side, .gemm_batch = side ? 1 : 0,
                   .out_elems = side ? side * side : MAX(n->bytes / 4, 1)};
  return dev_op_time_ps(b->dev, &op, 0);
}

/* Compute, memory and metadata nodes, in each rank's dependency order; communication nodes are
 * listed for matching. */
static gboolean add_local(build *b, uint32_t r, GError **error)
{
  const wl_chakra_rank *rk = &b->t->ranks[r];
  rank_build *rb = &b->rb[r];
  sim_graph *g = b->p->graph;
  for (uint32_t k = 0; k < rk->n_nodes; k++) {
    uint32_t i = rk->order[k];
    const wl_chakra_node *n = &rk->nodes[i];
    switch (n->type) {
    case WL_CHAKRA_METADATA:
      rb->task[i] = sim_graph_add_delay(g, n->name, (sim_time_ps)MIN(n->duration_ps,
                                                                     (uint64_t)SIM_TIME_MAX));
      break;
    case WL_CHAKRA_COMP:
    case WL_CHAKRA_MEM_LOAD:
    case WL_CHAKRA_MEM_STORE: {
      sim_time_ps d = compute_ps(b, n);
      sim_stream_id s = n->cpu ? stream_of(b, r, STREAM_CPU, 0, 0)
                               : stream_of(b, r, STREAM_GPU, n->stream, 0);
      rb->task[i] = sim_graph_add_compute(g, s, n->name, n->cpu ? "cpu" : "compute", d, n->flops,
                                          n->bytes);
      break;
    }
    case WL_CHAKRA_COLL:
      if (n->group != WL_CHAKRA_WORLD) {
        const wl_chakra_group *grp = g_ptr_array_index(b->t->groups, n->group);
        gboolean member = FALSE;
        for (uint32_t m = 0; m < grp->n && !member; m++)
          member = grp->ranks[m] == r;
        if (!member)
          return node_error(error, rk, i, "rank %u is not in its process group \"%s\" (%s)", r,
                            grp->name, b->t->groups_path);
      }
      list_add(rb->colls, n->group, i);
      break;
    case WL_CHAKRA_SEND:
    case WL_CHAKRA_RECV:
      /* A rank may send to itself (a device's parameter server and its worker): a transfer
       * between two of its streams. */
      if (n->peer < 0 || (uint32_t)n->peer >= b->t->n_ranks)
        return node_error(error, rk, i, "%s rank %d, which is not a rank of the trace "
                          "(0 to %u)", n->type == WL_CHAKRA_SEND ? "sends to" : "receives from",
                          n->peer, b->t->n_ranks - 1);
      list_add(n->type == WL_CHAKRA_SEND ? rb->sends : rb->recvs,
               (uint64_t)n->peer << 31 | (uint64_t)n->tag, i);
      break;
    }
  }
  return TRUE;
}

static const int coll_op[WL_CHAKRA_COMM_TYPES] = {
    [WL_CHAKRA_ALL_REDUCE] = SIM_OP_ALLREDUCE,         [WL_CHAKRA_REDUCE] = SIM_OP_REDUCE,
    [WL_CHAKRA_ALL_GATHER] = SIM_OP_ALLGATHER,         [WL_CHAKRA_GATHER] = SIM_OP_REDUCE,
    [WL_CHAKRA_SCATTER] = SIM_OP_BROADCAST,            [WL_CHAKRA_BROADCAST] = SIM_OP_BROADCAST,
    [WL_CHAKRA_ALL_TO_ALL] = SIM_OP_ALLTOALL,          [WL_CHAKRA_REDUCE_SCATTER] = SIM_OP_REDUCE_SCATTER,
    [WL_CHAKRA_REDUCE_SCATTER_BLOCK] = SIM_OP_REDUCE_SCATTER, [WL_CHAKRA_BARRIER] = SIM_OP_ALLREDUCE,
};

/* The collectives of one group: the k-th of the group on each member is one collective. */
static gboolean add_group(build *b, uint32_t group, const uint32_t *ranks, uint32_t n,
                          GError **error)
{
  uint64_t key = group;
  const GArray *first = g_hash_table_lookup(b->rb[ranks[0]].colls, &key);
  uint32_t count = first ? first->len : 0;
  const char *gname = group == WL_CHAKRA_WORLD
                          ? "of all ranks"
                          : ((wl_chakra_group *)g_ptr_array_index(b->t->groups, group))->name;
  g_autofree const GArray **lists = g_new(const GArray *, n);
  for (uint32_t m = 0; m < n; m++) {
    lists[m] = g_hash_table_lookup(b->rb[ranks[m]].colls, &key);
    uint32_t c = lists[m] ? lists[m]->len : 0;
    if (c != count) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: %u collectives of process group %s, but %s has %u: the ranks of a group "
                  "must run the same collectives%s", b->t->ranks[ranks[m]].path, c, gname,
                  b->t->ranks[ranks[0]].path, count,
                  group == WL_CHAKRA_WORLD && !b->t->groups_path
                      ? " (the folder has no comm_group.json: every collective spans all ranks)"
                      : "");
      return FALSE;
    }
  }
  if (count == 0)
    return TRUE;
  g_autofree sim_stream_id *members = g_new(sim_stream_id, n);
  for (uint32_t m = 0; m < n; m++)
    members[m] = stream_of(b, ranks[m], STREAM_COLL, group, 0);
  for (uint32_t k = 0; k < count; k++) {
    uint32_t i0 = g_array_index(lists[0], uint32_t, k);
    const wl_chakra_node *x = &b->t->ranks[ranks[0]].nodes[i0];
    for (uint32_t m = 1; m < n; m++) {
      uint32_t im = g_array_index(lists[m], uint32_t, k);
      const wl_chakra_node *y = &b->t->ranks[ranks[m]].nodes[im];
      if (y->comm != x->comm || y->bytes != x->bytes)
        return node_error(error, &b->t->ranks[ranks[m]], im,
                          "collective %u of process group %s is a %s of %" G_GUINT64_FORMAT
                          " bytes here, a %s of %" G_GUINT64_FORMAT " bytes on rank %u", k, gname,
                          wl_chakra_comm_name(y->comm), y->bytes, wl_chakra_comm_name(x->comm),
                          x->bytes, ranks[0]);
    }
    /* A barrier is an all-reduce of one element (PyTorch's barrier on NCCL). */
    uint64_t bytes = x->comm == WL_CHAKRA_BARRIER ? 4 : x->bytes;
    /* An algorithm without all-to-all (the ring a 3-D trace names) leaves those to the direct
     * exchange, as the plan that wrote the trace timed them (sim/strategies/colltime.c). */
    const comm_coll_algorithm *algo = b->algo;
    if (x->comm == WL_CHAKRA_ALL_TO_ALL && !comm_coll_algorithm_supports(algo, COMM_COLL_ALLTOALL))
      algo = comm_coll_algorithm_find("direct", "direct", NULL);
    sim_task_id t = sim_graph_add_collective(b->p->graph, members, n, x->name, coll_op[x->comm],
                                             algo, bytes);
    for (uint32_t m = 0; m < n; m++)
      b->rb[ranks[m]].task[g_array_index(lists[m], uint32_t, k)] = t;
  }
  return TRUE;
}

static int cmp_u64(gconstpointer a, gconstpointer b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Sorted keys of a table of lists, for a deterministic order. */
static GArray *sorted_keys(GHashTable *h)
{
  GArray *keys = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  GHashTableIter it;
  gpointer k;
  g_hash_table_iter_init(&it, h);
  while (g_hash_table_iter_next(&it, &k, NULL))
    g_array_append_val(keys, *(uint64_t *)k);
  g_array_sort(keys, cmp_u64);
  return keys;
}

/* The k-th send from a to b with a tag is the k-th receive of b from a with that tag. */
static gboolean add_p2p(build *b, uint32_t a, GError **error)
{
  const wl_chakra_rank *ra = &b->t->ranks[a];
  g_autoptr(GArray) keys = sorted_keys(b->rb[a].sends);
  for (guint q = 0; q < keys->len; q++) {
    uint64_t key = g_array_index(keys, uint64_t, q);
    uint32_t peer = (uint32_t)(key >> 31), tag = (uint32_t)(key & INT32_MAX);
    const GArray *sends = g_hash_table_lookup(b->rb[a].sends, &key);
    uint64_t back = (uint64_t)a << 31 | tag;
    const GArray *recvs = g_hash_table_lookup(b->rb[peer].recvs, &back);
    uint32_t nr = recvs ? recvs->len : 0;
    if (nr < sends->len)
      return node_error(error, ra, g_array_index(sends, uint32_t, nr),
                        "a send to rank %u (tag %u) that %s never receives", peer, tag,
                        b->t->ranks[peer].path);
    sim_stream_id src = stream_of(b, a, STREAM_SEND, peer, tag);
    sim_stream_id dst = stream_of(b, peer, STREAM_RECV, a, tag);
    for (guint k = 0; k < sends->len; k++) {
      uint32_t i = g_array_index(sends, uint32_t, k), j = g_array_index(recvs, uint32_t, k);
      const wl_chakra_node *x = &ra->nodes[i];
      sim_task_id t = sim_graph_add_transfer(b->p->graph, src, dst, x->name, x->bytes);
      b->rb[a].task[i] = t;
      b->rb[peer].task[j] = t;
    }
  }
  /* Receives without their send. */
  g_autoptr(GArray) rkeys = sorted_keys(b->rb[a].recvs);
  for (guint q = 0; q < rkeys->len; q++) {
    uint64_t key = g_array_index(rkeys, uint64_t, q);
    uint32_t peer = (uint32_t)(key >> 31), tag = (uint32_t)(key & INT32_MAX);
    const GArray *recvs = g_hash_table_lookup(b->rb[a].recvs, &key);
    uint64_t back = (uint64_t)a << 31 | tag;
    const GArray *sends = g_hash_table_lookup(b->rb[peer].sends, &back);
    uint32_t ns = sends ? sends->len : 0;
    if (ns < recvs->len)
      return node_error(error, ra, g_array_index(recvs, uint32_t, ns),
                        "a receive from rank %u (tag %u) that %s never sends", peer, tag,
                        b->t->ranks[peer].path);
  }
  return TRUE;
}

static void build_clear(build *b)
{
  for (uint32_t r = 0; b->rb && r < b->t->n_ranks; r++) {
    rank_build *rb = &b->rb[r];
    if (rb->streams)
      g_hash_table_destroy(rb->streams);
    if (rb->colls)
      g_hash_table_destroy(rb->colls);
    if (rb->sends)
      g_hash_table_destroy(rb->sends);
    if (rb->recvs)
      g_hash_table_destroy(rb->recvs);
    g_free(rb->task);
  }
  g_free(b->rb);
  dev_device_free(b->dev);
}

/* Whether every node of the rank is a CPU op (a host process, such as a parameter server). */
static gboolean rank_on_host(const wl_chakra_rank *rk)
{
  for (uint32_t i = 0; i < rk->n_nodes; i++)
    if (!rk->nodes[i].cpu)
      return FALSE;
  return rk->n_nodes > 0;
}

sim_plan *sim_chakra_plan(const sim_scenario *s, const char *device, uint64_t devices,
                          double *reduce_Bps, GError **error)
{
  const char *where = sim_scenario_where(s, "chakra");
  static const char *const replaced[] = {"model", "strategy"};
  for (guint i = 0; i < G_N_ELEMENTS(replaced); i++)
    if (sim_scenario_given(s, replaced[i])) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: the trace is the workload and its parallelism; %s does not apply", where,
                  sim_scenario_where(s, replaced[i]));
      return NULL;
    }
  g_autoptr(wl_chakra_trace) t = wl_chakra_load(s->chakra, where, error);
  if (!t)
    return NULL;
  /* Ranks past the cluster's devices whose nodes are all CPU ops are host processes (the
   * parameter servers --chakra-out writes): server k of them where comm_ps_host puts it. */
  uint32_t on_devices = t->n_ranks;
  while (on_devices > devices && rank_on_host(&t->ranks[on_devices - 1]))
    on_devices--;
  for (uint32_t r = on_devices; r < t->n_ranks; r++)
    if (!rank_on_host(&t->ranks[r]))
      on_devices = t->n_ranks;
  if (on_devices > devices) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s %s: the trace has %u ranks, the cluster %" G_GUINT64_FORMAT " devices "
                "(--nodes, --devices-per-node)", where, s->chakra, t->n_ranks, devices);
    return NULL;
  }
  g_autoptr(sim_plan) p = sim__plan_new();
  p->devices = on_devices;
  sim_graph_reserve(p->graph, t->n_nodes, t->n_nodes * 2);
  dev_device *dev = sim_scenario_device(s, device, s->calibration, error);
  if (!dev)
    return NULL;
  /* A reduction reads two operands and writes one: a third of the streaming bandwidth (as in
   * sim_costs_build). */
  *reduce_Bps = dev_stream_Bps(dev) / 3.0;
  build b = {t, p, g_new0(rank_build, t->n_ranks), s, dev, s->allreduce};
  /* A trace dtsim wrote names the algorithm it was simulated with (3-D jobs use the ring):
   * the default unless --allreduce is given. */
  if (t->ranks[0].algorithm && !sim_scenario_given(s, "allreduce")) {
    g_autofree char *what = g_strdup_printf("%s: the global metadata's comm_algorithm",
                                            t->ranks[0].path);
    b.algo = comm_coll_algorithm_find(t->ranks[0].algorithm, what, error);
    if (!b.algo) {
      build_clear(&b);
      return NULL;
    }
  }
  gboolean ok = TRUE;
  for (uint32_t r = 0; r < t->n_ranks; r++) {
    rank_build *rb = &b.rb[r];
    if (r < on_devices) {
      g_autofree char *name = g_strdup_printf("rank %u", r);
      rb->unit = sim__plan_add_unit(p, SIM_PROC_DEVICE, SIM_UNIT_DEVICE, r, name);
    } else {
      g_autofree char *name = g_strdup_printf("rank %u (a host process)", r);
      rb->unit = sim__plan_add_unit(p, SIM_PROC_PARAM_SERVER, SIM_UNIT_SERVER, r - on_devices,
                                    name);
    }
    rb->streams = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    rb->colls = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, array_free);
    rb->sends = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, array_free);
    rb->recvs = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, array_free);
    rb->task = g_new(sim_task_id, MAX(t->ranks[r].n_nodes, 1));
  }
  for (uint32_t r = 0; ok && r < t->n_ranks; r++)
    ok = add_local(&b, r, error);
  for (guint gi = 0; ok && gi < t->groups->len; gi++) {
    const wl_chakra_group *grp = g_ptr_array_index(t->groups, gi);
    ok = add_group(&b, gi, grp->ranks, grp->n, error);
  }
  if (ok) {
    g_autofree uint32_t *world = g_new(uint32_t, t->n_ranks);
    for (uint32_t r = 0; r < t->n_ranks; r++)
      world[r] = r;
    ok = add_group(&b, WL_CHAKRA_WORLD, world, t->n_ranks, error);
  }
  for (uint32_t r = 0; ok && r < t->n_ranks; r++)
    ok = add_p2p(&b, r, error);
  for (uint32_t r = 0; ok && r < t->n_ranks; r++) {
    const wl_chakra_rank *rk = &t->ranks[r];
    const sim_task_id *task = b.rb[r].task;
    for (uint32_t i = 0; i < rk->n_nodes; i++) {
      const wl_chakra_node *n = &rk->nodes[i];
      for (uint32_t k = 0; k < n->n_deps; k++) {
        sim_task_id before = task[rk->deps[n->first_dep + k]];
        if (before != task[i])
          sim_graph_depend(p->graph, task[i], before);
      }
    }
  }
  /* The breakdown is measured on rank 0, on its busiest GPU stream. */
  if (ok) {
    sim_unit_id u0 = b.rb[0].unit;
    p->probe_unit = u0;
    p->probe_compute = stream_of(&b, 0, STREAM_GPU, 0, 0);
    uint32_t most = 0;
    for (sim_stream_id st = 0; st < sim_graph_n_streams(p->graph); st++) {
      uint32_t n = 0;
      if (sim_graph_stream_unit(p->graph, st) != u0 ||
          strncmp(sim_graph_stream_name(p->graph, st), "stream ", 7) != 0)
        continue;
      sim_graph_stream_tasks(p->graph, st, &n);
      if (n > most) {
        most = n;
        p->probe_compute = st;
      }
    }
  }
  build_clear(&b);
  return ok ? g_steal_pointer(&p) : NULL;
}

/* ---- Out ----------------------------------------------------------------------------------- */

void sim_chakra_export_scenario(sim_scenario *s)
{
  if (!sim_scenario_given(s, "iterations"))
    s->iterations = 1;
  if (!sim_scenario_given(s, "symmetry") && s->zero < 3)
    s->symmetry = FALSE;
}

/* The device units of a plan in rank order; unit k stands for ranks [first[k], first[k+1]). */
typedef struct {
  const sim_plan *p;
  const sim_graph *g;
  uint32_t n_units;
  sim_unit_id *units;        /* device units by rank */
  uint32_t *first;           /* n_units + 1 */
  uint32_t *pos;             /* per graph unit: its place in `units`, or UINT32_MAX */
  uint32_t *owner;           /* per task: the place of the unit it runs for, or UINT32_MAX */
  uint32_t *in_start, *in;   /* per task: the tasks it waits for (compressed) */
  uint32_t *prev_start;      /* per task: the tasks before it on its streams (compressed) */
  sim_task_id *prev;
  GHashTable *groups;        /* rank list text -> group name */
  trace_chakra_out *w;
  /* Parameter servers (NULL without): per task, its place in plan->ps_tasks or UINT32_MAX;
   * per tensor, its shard (the server whose rank server_rank gives). */
  const sim_chakra_servers *ps;
  uint32_t *ps_index, *shard_of;
  uint32_t n_tasks;
} export;

/* The rank of server k: its own past the workers' where it runs on a host, else the rank of
 * the device it shares (as comm_ps places gpu servers: round-robin over the nodes, then over
 * each node's devices). */
static uint32_t server_rank(const export *e, uint32_t k)
{
  const sim_chakra_servers *ps = e->ps;
  if (ps->on_host)
    return e->p->devices + k;
  uint32_t nodes = MAX(ps->nodes, 1), per = MAX(ps->devices_per_node, 1);
  return (k % nodes) * per + (k / nodes) % per;
}

/* A push's receive of its pull on the worker: a node id past the graph's tasks. */
static uint64_t pull_id(const export *e, sim_task_id t)
{
  return (uint64_t)e->n_tasks + e->ps_index[t];
}

/* A dependency on task t as the node that ends it (a push ends with its pull's receive). */
static uint64_t dep_id(const export *e, sim_task_id t)
{
  return e->ps_index && e->ps_index[t] != UINT32_MAX ? pull_id(e, t) : t;
}

static int cmp_rank(gconstpointer a, gconstpointer b, gpointer user)
{
  const sim_plan *p = user;
  uint32_t x = g_array_index(p->units, sim_unit_info, *(const sim_unit_id *)a).index;
  uint32_t y = g_array_index(p->units, sim_unit_info, *(const sim_unit_id *)b).index;
  return x < y ? -1 : x > y;
}

static uint32_t unit_pos(const export *e, sim_stream_id s)
{
  return e->pos[sim_graph_stream_unit(e->g, s)];
}

/* Whether task t shows on device place u (a node of that rank's file). */
static gboolean touches(const export *e, sim_task_id t, uint32_t u)
{
  sim_task_kind kind = sim_graph_task_kind(e->g, t);
  if (kind == SIM_TASK_TRANSFER || kind == SIM_TASK_COLLECTIVE) {
    const sim_stream_id *m;
    uint32_t n = sim_graph_task_members(e->g, t, &m);
    for (uint32_t i = 0; i < n; i++)
      if (unit_pos(e, m[i]) == u)
        return TRUE;
    return FALSE;
  }
  return e->owner[t] == u;
}

/* The name of the process group of ranks `ranks` (made and recorded on first use). */
static const char *group_name(export *e, const uint32_t *ranks, uint32_t n)
{
  g_autoptr(GString) text = g_string_new(NULL);
  for (uint32_t i = 0; i < n; i++)
    g_string_append_printf(text, "%u,", ranks[i]);
  const char *name = g_hash_table_lookup(e->groups, text->str);
  if (name)
    return name;
  char *made = g_strdup_printf("%u", g_hash_table_size(e->groups));
  trace_chakra_out_group(e->w, made, ranks, n);
  g_hash_table_insert(e->groups, g_string_free(g_steal_pointer(&text), FALSE), made);
  return made;
}

static const int chakra_of_op[] = {
    [SIM_OP_ALLREDUCE] = WL_CHAKRA_ALL_REDUCE, [SIM_OP_ALLGATHER] = WL_CHAKRA_ALL_GATHER,
    [SIM_OP_REDUCE_SCATTER] = WL_CHAKRA_REDUCE_SCATTER,
    [SIM_OP_BROADCAST] = WL_CHAKRA_BROADCAST, [SIM_OP_REDUCE] = WL_CHAKRA_REDUCE,
    [SIM_OP_ALLTOALL] = WL_CHAKRA_ALL_TO_ALL,
};

static gboolean write_server(export *e, uint32_t k, uint64_t *next_id, GError **error);

/* Writes rank first[u] + offset, from place u's tasks. */
static gboolean write_rank(export *e, uint32_t u, uint32_t offset, const GArray *tasks,
                           GError **error)
{
  const sim_graph *g = e->g;
  uint32_t rank = e->first[u] + offset;
  if (!trace_chakra_out_begin(e->w, rank, error))
    return FALSE;
  g_autoptr(GArray) deps = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  g_autoptr(GArray) ctrl = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  g_autofree uint32_t *ranks = g_new(uint32_t, MAX(e->p->devices, 1));
  for (guint k = 0; k < tasks->len; k++) {
    sim_task_id t = g_array_index(tasks, sim_task_id, k);
    sim_task_view v = sim_graph_task_view(g, t);
    g_array_set_size(deps, 0);
    for (uint32_t j = e->in_start[t]; j < e->in_start[t + 1]; j++)
      if (touches(e, e->in[j], u)) {
        uint64_t id = dep_id(e, e->in[j]);
        g_array_append_val(deps, id);
      }
    /* The order of the streams, which the graph keeps implicitly, as control dependencies. */
    g_array_set_size(ctrl, 0);
    for (uint32_t j = e->prev_start[t]; j < e->prev_start[t + 1]; j++)
      if (touches(e, e->prev[j], u)) {
        uint64_t id = dep_id(e, e->prev[j]);
        g_array_append_val(ctrl, id);
      }
    uint64_t push;             /* a pull's receive waits for its push */
    trace_chakra_node n = {.id = t, .name = sim_graph_task_name(g, t), .stream = -1,
                           .data_deps = (const uint64_t *)deps->data, .n_data_deps = deps->len,
                           .ctrl_deps = (const uint64_t *)ctrl->data, .n_ctrl_deps = ctrl->len};
    switch (v.kind) {
    case SIM_TASK_COMPUTE: {
      const sim_unit_info *ui = &g_array_index(e->p->units, sim_unit_info,
                                               sim_graph_stream_unit(g, v.members[0]));
      n.type = WL_CHAKRA_COMP;
      n.is_cpu_op = ui->role != SIM_UNIT_DEVICE;
      n.stream = v.members[0];
      n.num_ops = sim_graph_task_flops(g, t);
      /* Microseconds, the schema's unit, to the nearest. */
      n.duration_micros = (uint64_t)(sim_graph_task_duration(g, t) + 500000) / 1000000;
      n.tensor_size = v.bytes;
      break;
    }
    case SIM_TASK_DELAY:
      n.type = WL_CHAKRA_METADATA;
      n.duration_micros = (uint64_t)(sim_graph_task_duration(g, t) + 500000) / 1000000;
      break;
    case SIM_TASK_TRANSFER: {
      uint32_t a = unit_pos(e, v.members[0]), bb = unit_pos(e, v.members[1]);
      n.type = a == u ? WL_CHAKRA_SEND : WL_CHAKRA_RECV;
      n.comm_src = (int32_t)(e->first[a] + offset);
      n.comm_dst = (int32_t)(e->first[bb] + offset);
      n.comm_tag = (int32_t)v.members[0];
      n.comm_size = v.bytes;
      break;
    }
    case SIM_TASK_COLLECTIVE: {
      n.type = WL_CHAKRA_COLL;
      n.comm_type = chakra_of_op[v.op];
      n.comm_size = v.bytes;
      uint32_t nr = 0;
      if (e->p->symmetric && v.n_members == 1) {
        for (uint32_t r = 0; r < e->p->devices; r++)
          ranks[nr++] = r;
      } else {
        for (uint32_t i = 0; i < v.n_members; i++)
          ranks[nr++] = e->first[unit_pos(e, v.members[i])] + offset;
      }
      n.pg_name = group_name(e, ranks, nr);
      break;
    }
    case SIM_TASK_CUSTOM: {
      /* A push (sim_chakra_write refused any other): the send to its server here; its pull's
       * receive follows. Tag: the tensor, so that each tensor has its own streams. */
      const sim_ps_task *pt = &g_array_index(e->p->ps_tasks, sim_ps_task, e->ps_index[t]);
      n.type = WL_CHAKRA_SEND;
      n.comm_src = (int32_t)rank;
      n.comm_dst = (int32_t)server_rank(e, e->shard_of[pt->tensor]);
      n.comm_tag = (int32_t)pt->tensor;
      n.comm_size = g_array_index(e->p->ps_tensor_bytes, uint64_t, pt->tensor);
      if (!trace_chakra_out_node(e->w, &n, error))
        return FALSE;
      push = t;
      n = (trace_chakra_node){.id = pull_id(e, t), .name = n.name, .type = WL_CHAKRA_RECV,
                              .stream = -1, .comm_src = n.comm_dst, .comm_dst = n.comm_src,
                              .comm_tag = n.comm_tag + (int32_t)e->p->ps_tensor_bytes->len,
                              .comm_size = n.comm_size,
                              .data_deps = &push, .n_data_deps = 1};
      break;
    }
    default:
      break;
    }
    if (!trace_chakra_out_node(e->w, &n, error))
      return FALSE;
  }
  /* The servers this device runs, their node ids past the pulls'. */
  uint64_t id = (uint64_t)e->n_tasks + (e->ps ? e->p->ps_tasks->len : 0);
  for (uint32_t k = 0; e->ps && !e->ps->on_host && k < e->ps->servers; k++)
    if (server_rank(e, k) == rank && !write_server(e, k, &id, error))
      return FALSE;
  return trace_chakra_out_end(e->w, error);
}

typedef struct {
  uint32_t iteration;
  sim_time_ps aggregated;    /* in the run's last step */
  guint index;               /* worker 0's entry in plan->ps_tasks */
} agg_order;

static int cmp_agg(gconstpointer a, gconstpointer b)
{
  const agg_order *x = a, *y = b;
  if (x->iteration != y->iteration)
    return x->iteration < y->iteration ? -1 : 1;
  if (x->aggregated != y->aggregated)
    return x->aggregated < y->aggregated ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* Writes server `k`'s nodes, ids from *next_id on: for each tensor of its shard, in the order
 * the run aggregated them (a server aggregates a tensor when its last push has arrived: small
 * tensors pushed after a large one may be summed first; every iteration in the last one's
 * order), a receive of every worker's push (tag: the tensor), the aggregation of the W
 * gradients (their bytes at the server's rate, one at a time as comm_ps aggregates), and a
 * send of the sum back to every worker (tag: the tensor count plus the tensor). */
static gboolean write_server(export *e, uint32_t k, uint64_t *next_id, GError **error)
{
  const sim_plan *p = e->p;
  uint32_t W = p->ps_workers, server = server_rank(e, k), T = p->ps_tensor_bytes->len;
  g_autofree uint64_t *recvs = g_new(uint64_t, MAX(W, 1));
  uint64_t id = *next_id, agg = 0;
  /* On a device: a stream of its own beside the worker's (the graph's streams are numbered
   * below sim_graph_n_streams). */
  int64_t stream = e->ps->on_host ? -1 : (int64_t)sim_graph_n_streams(e->g) + k;
  gboolean has_agg = FALSE;
  g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(agg_order));
  for (guint i = 0; i < p->ps_tasks->len; i++) {
    const sim_ps_task *pt = &g_array_index(p->ps_tasks, sim_ps_task, i);
    if (pt->worker == 0 && e->shard_of[pt->tensor] == k) {
      agg_order o = {pt->iteration,
                     e->ps->adapter ? sim_net_adapter_ps_aggregated(e->ps->adapter, pt->tensor)
                                    : 0, i};
      g_array_append_val(order, o);
    }
  }
  g_array_sort(order, cmp_agg);
  for (guint j = 0; j < order->len; j++) {
    const sim_ps_task *pt =
        &g_array_index(p->ps_tasks, sim_ps_task, g_array_index(order, agg_order, j).index);
    uint64_t bytes = g_array_index(p->ps_tensor_bytes, uint64_t, pt->tensor);
    const char *name = sim_graph_task_name(e->g, pt->task);
    for (uint32_t w = 0; w < W; w++) {
      recvs[w] = id;
      trace_chakra_node n = {.id = id++, .name = name, .type = WL_CHAKRA_RECV, .stream = -1,
                             .is_cpu_op = e->ps->on_host, .comm_src = (int32_t)w,
                             .comm_dst = (int32_t)server,
                             .comm_tag = (int32_t)pt->tensor, .comm_size = bytes};
      if (!trace_chakra_out_node(e->w, &n, error))
        return FALSE;
    }
    sim_time_ps agg_ps = sim_time_for_work((double)bytes * W, e->ps->reduce_Bps);
    trace_chakra_node a = {.id = id, .name = "aggregate", .type = WL_CHAKRA_COMP,
                           .is_cpu_op = e->ps->on_host, .stream = stream,
                           .duration_micros = (agg_ps + 500000) / 1000000,
                           .tensor_size = bytes * W, .data_deps = recvs, .n_data_deps = W,
                           .ctrl_deps = &agg, .n_ctrl_deps = has_agg};
    if (!trace_chakra_out_node(e->w, &a, error))
      return FALSE;
    agg = id++;
    has_agg = TRUE;
    for (uint32_t w = 0; w < W; w++) {
      trace_chakra_node n = {.id = id++, .name = name, .type = WL_CHAKRA_SEND, .stream = -1,
                             .is_cpu_op = e->ps->on_host, .comm_src = (int32_t)server,
                             .comm_dst = (int32_t)w,
                             .comm_tag = (int32_t)(T + pt->tensor), .comm_size = bytes,
                             .data_deps = &agg, .n_data_deps = 1};
      if (!trace_chakra_out_node(e->w, &n, error))
        return FALSE;
    }
  }
  *next_id = id;
  return TRUE;
}

/* Writes the rank of host server k. */
static gboolean write_host_server(export *e, uint32_t k, GError **error)
{
  uint64_t id = 0;
  return trace_chakra_out_begin(e->w, server_rank(e, k), error) &&
         write_server(e, k, &id, error) && trace_chakra_out_end(e->w, error);
}

static void export_clear(export *e)
{
  g_free(e->units);
  g_free(e->first);
  g_free(e->pos);
  g_free(e->owner);
  g_free(e->in_start);
  g_free(e->in);
  g_free(e->prev_start);
  g_free(e->prev);
  g_free(e->ps_index);
  g_free(e->shard_of);
  if (e->groups)
    g_hash_table_destroy(e->groups);
  trace_chakra_out_free(e->w);
}

/* Places each task with the device it runs for: a stream's device, or for tasks of hosts and
 * tasks on no stream the device of a task they depend on or that depends on them. */
static void place_tasks(export *e)
{
  const sim_graph *g = e->g;
  uint32_t nt = sim_graph_n_tasks(g), ne = sim_graph_n_edges(g);
  for (sim_task_id t = 0; t < nt; t++) {
    sim_task_view v = sim_graph_task_view(g, t);
    e->owner[t] = v.n_members ? unit_pos(e, v.members[0]) : UINT32_MAX;
  }
  for (gboolean changed = TRUE; changed;) {
    changed = FALSE;
    for (uint32_t i = 0; i < ne; i++) {
      sim_task_id a, b;
      sim_graph_edge(g, i, &a, &b);
      if (e->owner[b] == UINT32_MAX && e->owner[a] != UINT32_MAX) {
        e->owner[b] = e->owner[a];
        changed = TRUE;
      } else if (e->owner[a] == UINT32_MAX && e->owner[b] != UINT32_MAX) {
        e->owner[a] = e->owner[b];
        changed = TRUE;
      }
    }
  }
}

gboolean sim_chakra_write(const sim_plan *plan, const char *dir, const sim_chakra_servers *servers,
                          GError **error)
{
  const sim_graph *g = plan->graph;
  export e = {.p = plan, .g = g, .n_tasks = sim_graph_n_tasks(g)};
  gboolean ok = FALSE;
  g_autoptr(GPtrArray) lists = NULL;
  uint32_t nu = sim_graph_n_units(g), nt = sim_graph_n_tasks(g), ne = sim_graph_n_edges(g);
  e.units = g_new(sim_unit_id, MAX(nu, 1));
  e.pos = g_new(uint32_t, MAX(nu, 1));
  for (sim_unit_id u = 0; u < nu; u++) {
    e.pos[u] = UINT32_MAX;
    if (g_array_index(plan->units, sim_unit_info, u).role == SIM_UNIT_DEVICE)
      e.units[e.n_units++] = u;
  }
  if (servers && servers->servers > 0) {
    e.ps = servers;
    e.ps_index = g_new(uint32_t, MAX(nt, 1));
    memset(e.ps_index, 0xff, MAX(nt, 1) * sizeof *e.ps_index);
    for (guint i = 0; i < plan->ps_tasks->len; i++)
      e.ps_index[g_array_index(plan->ps_tasks, sim_ps_task, i).task] = i;
    uint32_t T = plan->ps_tensor_bytes->len;
    e.shard_of = g_new0(uint32_t, MAX(T, 1));
    if (plan->ps_shard_of->len == T)
      memcpy(e.shard_of, plan->ps_shard_of->data, T * sizeof(uint32_t));
    else
      comm_ps_place_tensors((const uint64_t *)plan->ps_tensor_bytes->data, T, servers->servers,
                            e.shard_of);
  }
  for (sim_task_id t = 0; t < nt; t++)
    if (sim_graph_task_kind(g, t) == SIM_TASK_CUSTOM &&
        (!e.ps_index || e.ps_index[t] == UINT32_MAX)) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "--chakra-out: task '%s' has no form in Chakra execution traces, which hold "
                  "compute, collectives, sends and receives", sim_graph_task_name(g, t));
      goto out;
    }
  g_qsort_with_data(e.units, (gint)e.n_units, sizeof *e.units, cmp_rank, (gpointer)plan);
  /* Units of one device (CHAOS's threads) are one rank, each its own stream there. */
  e.first = g_new(uint32_t, e.n_units + 1);
  uint32_t places = 0;
  for (uint32_t k = 0; k < e.n_units; k++) {
    uint32_t index = g_array_index(plan->units, sim_unit_info, e.units[k]).index;
    if (places == 0 || e.first[places - 1] != index) {
      e.units[places] = e.units[k];
      e.first[places++] = index;
    }
    e.pos[e.units[k]] = places - 1;
  }
  e.n_units = places;
  e.first[e.n_units] = plan->devices;
  e.owner = g_new(uint32_t, MAX(nt, 1));
  place_tasks(&e);
  /* Dependencies by task, compressed. */
  e.in_start = g_new0(uint32_t, (gsize)nt + 1);
  e.in = g_new(uint32_t, MAX(ne, 1));
  for (uint32_t i = 0; i < ne; i++) {
    sim_task_id a, b;
    sim_graph_edge(g, i, &a, &b);
    e.in_start[b + 1]++;
  }
  for (sim_task_id t = 0; t < nt; t++)
    e.in_start[t + 1] += e.in_start[t];
  {
    g_autofree uint32_t *fill = g_memdup2(e.in_start, (gsize)nt * sizeof *fill);
    for (uint32_t i = 0; i < ne; i++) {
      sim_task_id a, b;
      sim_graph_edge(g, i, &a, &b);
      e.in[fill[b]++] = a;
    }
  }
  /* The task before each task on each of its streams, compressed. */
  e.prev_start = g_new0(uint32_t, (gsize)nt + 1);
  uint32_t ns = sim_graph_n_streams(g);
  for (sim_stream_id st = 0; st < ns; st++) {
    uint32_t n;
    const sim_task_id *ts = sim_graph_stream_tasks(g, st, &n);
    for (uint32_t i = 1; i < n; i++)
      e.prev_start[ts[i] + 1]++;
  }
  for (sim_task_id t = 0; t < nt; t++)
    e.prev_start[t + 1] += e.prev_start[t];
  e.prev = g_new(sim_task_id, MAX(e.prev_start[nt], 1));
  {
    g_autofree uint32_t *fill = g_memdup2(e.prev_start, (gsize)nt * sizeof *fill);
    for (sim_stream_id st = 0; st < ns; st++) {
      uint32_t n;
      const sim_task_id *ts = sim_graph_stream_tasks(g, st, &n);
      for (uint32_t i = 1; i < n; i++)
        e.prev[fill[ts[i]]++] = ts[i - 1];
    }
  }
  /* Each place's nodes, in task order. */
  lists = g_ptr_array_new_with_free_func(array_free);
  for (uint32_t k = 0; k < e.n_units; k++)
    g_ptr_array_add(lists, g_array_new(FALSE, FALSE, sizeof(sim_task_id)));
  for (sim_task_id t = 0; t < nt; t++) {
    sim_task_view v = sim_graph_task_view(g, t);
    if (v.kind == SIM_TASK_TRANSFER || v.kind == SIM_TASK_COLLECTIVE) {
      for (uint32_t i = 0; i < v.n_members; i++) {
        uint32_t u = unit_pos(&e, v.members[i]);
        if (u == UINT32_MAX)
          continue;
        GArray *l = g_ptr_array_index(lists, u);
        if (l->len == 0 || g_array_index(l, sim_task_id, l->len - 1) != t)
          g_array_append_val(l, t);
      }
    } else if (e.owner[t] != UINT32_MAX) {
      g_array_append_val(g_ptr_array_index(lists, e.owner[t]), t);
    }
  }
  e.groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  e.w = trace_chakra_out_new(dir, "dtsim", "--chakra-out", error);
  if (!e.w)
    goto out;
  /* The algorithm of the plan's collectives (all-to-alls aside, which the reader runs with the
   * same), when they share one: a reader of dtsim's takes it as its default. */
  {
    const comm_coll_algorithm *algo = NULL;
    gboolean one = TRUE;
    for (sim_task_id t = 0; t < nt && one; t++) {
      sim_task_view v = sim_graph_task_view(g, t);
      if (v.kind != SIM_TASK_COLLECTIVE || v.op == SIM_OP_ALLTOALL)
        continue;
      const comm_coll_algorithm *a = sim_graph_task_algorithm(g, t);
      one = !algo || a == algo;
      algo = a;
    }
    if (algo && one)
      trace_chakra_out_set_algorithm(e.w, comm_coll_algorithm_name(algo));
  }
  for (uint32_t k = 0; k < e.n_units; k++)
    for (uint32_t o = 0; o < e.first[k + 1] - e.first[k]; o++)
      if (!write_rank(&e, k, o, g_ptr_array_index(lists, k), error))
        goto out;
  for (uint32_t k = 0; e.ps && e.ps->on_host && k < e.ps->servers; k++)
    if (!write_host_server(&e, k, error))
      goto out;
  ok = trace_chakra_out_close(e.w, error);
out:
  export_clear(&e);
  return ok;
}
