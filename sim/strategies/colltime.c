/* Collective times on an idle network (see colltime.h). */
#include "colltime.h"

#include "util.h"

/* ---- The memo -------------------------------------------------------------------------------- */

void sim_coll_memo_init(sim_coll_memo *m)
{
  m->entries = g_array_new(FALSE, FALSE, sizeof(sim_coll_memo_entry));
}

void sim_coll_memo_clear(sim_coll_memo *m) { g_clear_pointer(&m->entries, g_array_unref); }

int64_t sim_coll_memo_find(const sim_coll_memo *m, const comm_coll_algorithm *algo,
                           const void *where, int op, uint64_t bytes)
{
  for (guint i = 0; i < m->entries->len; i++) {
    const sim_coll_memo_entry *e = &g_array_index(m->entries, sim_coll_memo_entry, i);
    if (e->algo == algo && e->where == where && e->op == op && e->bytes == bytes)
      return i;
  }
  return -1;
}

int64_t sim_coll_memo_add(sim_coll_memo *m, const comm_coll_algorithm *algo, const void *where,
                          int op, uint64_t bytes, gboolean timed, sim_time_ps duration_ps)
{
  sim_coll_memo_entry e = {algo, where, op, bytes, timed, duration_ps};
  g_array_append_val(m->entries, e);
  return m->entries->len - 1;
}

sim_coll_memo_entry *sim_coll_memo_at(sim_coll_memo *m, int64_t i)
{
  return &g_array_index(m->entries, sim_coll_memo_entry, (guint)i);
}

/* ---- The idle-network timer ------------------------------------------------------------------
 *
 * One engine and network serve every size, one after the other: each run ends with the network
 * idle again, and a time is the end of the last collective less the start. The groups of a
 * layout are made once and serve every operation and size on it (a group keeps its route
 * latencies, comm_coll_group). */

typedef struct {
  uint32_t first, n, stride, groups, group_stride;
  comm_coll_group **group;   /* groups of them */
} coll_layout;

struct sim_coll_timer {
  const comm_topology *topo;
  comm_net_model model;
  const comm_coll_algorithm *algo, *ring, *a2a;
  double reduce_Bps;
  sim_coll_memo memo;  /* keyed by layout (its index + 1 as the address) */
  GArray *layouts;     /* coll_layout */
  sim_engine *engine;  /* NULL until the first collective is timed */
  comm_net *net;
};

sim_coll_timer *sim_coll_timer_new(const comm_topology *topo, comm_net_model model,
                                   const char *algo, double reduce_Bps, GError **error)
{
  const comm_coll_algorithm *a = comm_coll_algorithm_find(algo ? algo : "ring", "--allreduce",
                                                          error);
  if (!a)
    return NULL;
  sim_coll_timer *ct = g_new0(sim_coll_timer, 1);
  ct->topo = topo;
  ct->model = model;
  ct->algo = a;
  ct->ring = comm_coll_algorithm_find("ring", "--allreduce", NULL);
  ct->a2a = comm_coll_algorithm_find("direct", "--allreduce", NULL);
  ct->reduce_Bps = reduce_Bps;
  sim_coll_memo_init(&ct->memo);
  ct->layouts = g_array_new(FALSE, FALSE, sizeof(coll_layout));
  return ct;
}

void sim_coll_timer_free(sim_coll_timer *ct)
{
  if (!ct)
    return;
  g_clear_pointer(&ct->net, comm_net_free);
  g_clear_pointer(&ct->engine, sim_engine_free);
  sim_coll_memo_clear(&ct->memo);
  for (guint i = 0; i < ct->layouts->len; i++) {
    coll_layout *l = &g_array_index(ct->layouts, coll_layout, i);
    for (uint32_t g = 0; g < l->groups; g++)
      comm_coll_group_free(l->group[g]);
    g_free(l->group);
  }
  g_array_unref(ct->layouts);
  g_free(ct);
}

const comm_coll_algorithm *sim_coll_timer_algorithm(const sim_coll_timer *ct) { return ct->algo; }

const comm_coll_algorithm *sim_coll_timer_algorithm_for(const sim_coll_timer *ct, comm_coll_op op)
{
  return comm_coll_algorithm_supports(ct->algo, op) ? ct->algo
         : op == COMM_COLL_ALLTOALL                 ? ct->a2a
                                                    : ct->ring;
}

static void free_coll(gpointer p) { comm_coll_free(p); }

static void coll_done(sim_engine *engine, void *user)
{
  (void)engine;
  (*(uint32_t *)user)++;
}

/* The layout whose group g has the ranks first + g * group_stride + i * stride, made with its
 * groups when first asked: its place in ct->layouts. */
static guint coll_layout_of(sim_coll_timer *ct, uint32_t first, uint32_t n, uint32_t stride,
                            uint32_t groups, uint32_t group_stride)
{
  for (guint i = 0; i < ct->layouts->len; i++) {
    coll_layout *l = &g_array_index(ct->layouts, coll_layout, i);
    if (l->first == first && l->n == n && l->stride == stride && l->groups == groups &&
        l->group_stride == group_stride)
      return i;
  }
  coll_layout l = {first, n, stride, groups, group_stride, g_new(comm_coll_group *, groups)};
  g_autofree uint32_t *ranks = g_new(uint32_t, n);
  for (uint32_t g = 0; g < groups; g++) {
    for (uint32_t i = 0; i < n; i++)
      ranks[i] = first + g * group_stride + i * stride;
    l.group[g] = comm_coll_group_new(ct->topo, ranks, n);
  }
  g_array_append_val(ct->layouts, l);
  return ct->layouts->len - 1;
}

/* Time of `groups` concurrent collectives `op` of `bytes` (nccl-tests size), group g having the
 * ranks first + g * group_stride + i * stride for i < n. */
static gboolean time_with(sim_coll_timer *ct, const comm_coll_algorithm *algo, comm_coll_op op,
                          uint32_t first, uint32_t n, uint32_t stride, uint32_t groups,
                          uint32_t group_stride, uint64_t bytes, sim_time_ps *out, GError **error)
{
  if (n < 2 || bytes == 0) {
    *out = 0;
    return TRUE;
  }
  guint layout = coll_layout_of(ct, first, n, stride, groups, group_stride);
  const void *where = GUINT_TO_POINTER(layout + 1);
  int64_t k = sim_coll_memo_find(&ct->memo, algo, where, op, bytes);
  if (k >= 0) {
    *out = sim_coll_memo_at(&ct->memo, k)->duration_ps;
    return TRUE;
  }
  if (!ct->engine) {
    ct->engine = sim_engine_new();
    ct->net = comm_net_new(ct->engine, ct->topo, ct->model);
  }
  sim_engine *engine = ct->engine;
  comm_net *net = ct->net;
  sim_time_ps start_ps = sim_engine_now(engine);
  comm_coll_group **grps = g_array_index(ct->layouts, coll_layout, layout).group;
  g_autoptr(GPtrArray) colls = g_ptr_array_new_full(groups, free_coll);
  uint32_t done = 0;
  comm_coll_args args = {.op = op, .bytes = bytes, .reduce_Bps = ct->reduce_Bps,
                         .form = COMM_COLL_FORM_PIPELINED};
  for (uint32_t g = 0; g < groups; g++) {
    comm_coll *c = comm_coll_new(net, grps[g], algo, &args, error);
    if (!c) {
      /* The groups started before it are still pending: this engine and network are not
       * idle any more, so they go (after the collectives that use them). */
      g_clear_pointer(&colls, g_ptr_array_unref);
      g_clear_pointer(&ct->net, comm_net_free);
      g_clear_pointer(&ct->engine, sim_engine_free);
      return FALSE;
    }
    g_ptr_array_add(colls, c);
    comm_coll_start(c, coll_done, &done);
  }
  sim_engine_run(engine);
  if (sim_engine_error(engine)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "%s", sim_engine_error(engine));
    g_clear_pointer(&colls, g_ptr_array_unref);
    g_clear_pointer(&ct->net, comm_net_free);
    g_clear_pointer(&ct->engine, sim_engine_free);
    return FALSE;
  }
  sim_time_ps t = 0;
  for (guint i = 0; i < colls->len; i++)
    t = MAX(t, comm_coll_end_time(g_ptr_array_index(colls, i)) - start_ps);
  sim_coll_memo_add(&ct->memo, algo, where, op, bytes, TRUE, t);
  *out = t;
  return TRUE;
}

gboolean sim_coll_timer_time(sim_coll_timer *ct, comm_coll_op op, uint32_t first, uint32_t n,
                             uint32_t stride, uint32_t groups, uint32_t group_stride,
                             uint64_t bytes, sim_time_ps *out, GError **error)
{
  return time_with(ct, sim_coll_timer_algorithm_for(ct, op), op, first, n, stride, groups,
                   group_stride, bytes, out, error);
}

gboolean sim_coll_timer_ring_time(sim_coll_timer *ct, comm_coll_op op, uint32_t first,
                                  uint32_t n, uint32_t stride, uint32_t groups,
                                  uint32_t group_stride, uint64_t bytes, sim_time_ps *out,
                                  GError **error)
{
  return time_with(ct, ct->ring, op, first, n, stride, groups, group_stride, bytes, out, error);
}

