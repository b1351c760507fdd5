/* dtsim-mpi replay, the part that needs no MPI: reading device 0's timeline from the plan and
 * timeline of a simulation (the tasks, their dependencies and iterations), and where parameter
 * servers are played. Kept apart so that the unit tests reach it without a launch. */
#include "replay_internal.h"
#include "strategy.h"
#include "util.h"

#include <string.h>
#include <time.h>

uint32_t comm_mpi_ps_server_rank(comm_ps_placement placement, uint32_t shard, uint32_t servers,
                                 uint32_t nodes, uint32_t per_node)
{
  g_return_val_if_fail(servers > 0 && nodes > 0 && per_node > 0, 0);
  if (placement == COMM_PS_DEDICATED)
    return nodes * per_node + shard % servers;
  return (shard % nodes) * per_node + (shard / nodes) % per_node;
}

static void task_clear(gpointer p)
{
  replay_task *t = p;
  g_free(t->name);
  g_free(t->category);
}

void replay__timeline_init(replay_timeline *tl)
{
  tl->compute = g_array_new(FALSE, TRUE, sizeof(replay_task));
  tl->comms = g_array_new(FALSE, TRUE, sizeof(replay_task));
  g_array_set_clear_func(tl->compute, task_clear);
  g_array_set_clear_func(tl->comms, task_clear);
  tl->sim_ends = g_array_new(FALSE, FALSE, sizeof(double));
  tl->tensor_names = g_ptr_array_new_with_free_func(g_free);
  tl->tensor_bytes = g_array_new(FALSE, FALSE, sizeof(uint64_t));
}

void replay__timeline_clear(replay_timeline *tl)
{
  g_array_free(tl->compute, TRUE);
  g_array_free(tl->comms, TRUE);
  g_array_free(tl->sim_ends, TRUE);
  g_ptr_array_free(tl->tensor_names, TRUE);
  g_array_free(tl->tensor_bytes, TRUE);
}

GArray *replay__rows_from_plan(const sim_plan *plan, const sim_exec *x)
{
  static const char *const kinds[] = {"compute", "delay", "transfer", "collective", "custom"};
  const sim_graph *g = plan->graph;
  GArray *rows = g_array_sized_new(FALSE, FALSE, sizeof(replay_row), sim_graph_n_tasks(g));
  for (sim_task_id t = 0; t < sim_graph_n_tasks(g); t++) {
    const sim_stream_id *m;
    uint32_t nm = sim_graph_task_members(g, t, &m);
    sim_time_ps a = sim_exec_task_start(x, t), b = sim_exec_task_end(x, t);
    replay_row r = {
        .id = t,
        .name = sim_graph_task_name(g, t),
        .kind = kinds[sim_graph_task_kind(g, t)],
        .category = sim_graph_task_category(g, t),
        .unit = nm ? sim_graph_unit_name(g, sim_graph_stream_unit(g, m[0])) : "",
        .stream = nm ? sim_graph_stream_name(g, m[0]) : "",
        .start_s = sim_time_to_s(a),
        .end_s = sim_time_to_s(b),
        .bytes = sim_graph_task_bytes(g, t),
    };
    g_array_append_val(rows, r);
  }
  return rows;
}

/* Simulated start, then the graph's order: a chain's zero-length tasks keep their order. */
static int by_start(gconstpointer a, gconstpointer b)
{
  const replay_task *x = a, *y = b;
  if (x->sim_start_s != y->sim_start_s)
    return (x->sim_start_s > y->sim_start_s) - (x->sim_start_s < y->sim_start_s);
  return (x->id > y->id) - (x->id < y->id);
}

#define PS_PREFIX "push/pull "

/* Finds the tensors of a ps timeline: the layers with a push, numbered in layer order (the
 * order of their forward tasks in the first iteration) as sim/strategies/strategy_ps.c numbers them. */
static gboolean number_tensors(replay_timeline *tl, GError **error)
{
  g_autoptr(GHashTable) tensor_of = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GHashTable) pushed = g_hash_table_new(g_str_hash, g_str_equal);
  guint first_pushes = 0;
  for (guint c = 0; c < tl->comms->len; c++) {
    const replay_task *t = &g_array_index(tl->comms, replay_task, c);
    if (t->iteration == 0) {
      g_hash_table_add(pushed, t->name + strlen(PS_PREFIX));
      first_pushes++;
    }
  }
  for (guint k = 0; k < tl->compute->len; k++) {
    const replay_task *t = &g_array_index(tl->compute, replay_task, k);
    if (t->iteration == 0 && strcmp(t->category, "forward") == 0 &&
        g_hash_table_contains(pushed, t->name) && !g_hash_table_contains(tensor_of, t->name)) {
      g_hash_table_insert(tensor_of, t->name, GUINT_TO_POINTER(tl->tensor_names->len + 1));
      g_ptr_array_add(tl->tensor_names, g_strdup(t->name));
    }
  }
  g_array_set_size(tl->tensor_bytes, tl->tensor_names->len);
  for (guint c = 0; c < tl->comms->len; c++) {
    replay_task *t = &g_array_index(tl->comms, replay_task, c);
    guint v = GPOINTER_TO_UINT(g_hash_table_lookup(tensor_of, t->name + strlen(PS_PREFIX)));
    if (v == 0 || first_pushes != tl->tensor_names->len) {
      g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL,
                  "task '%s' matches no forward task of the first iteration (or layer "
                  "names repeat)", t->name);
      return FALSE;
    }
    t->tensor = v - 1;
    g_array_index(tl->tensor_bytes, uint64_t, t->tensor) = t->bytes;
  }
  return TRUE;
}

gboolean replay__read_timeline(const GArray *rows, const sim_strategy *st, replay_timeline *tl,
                               GError **error)
{
  /* Replayable strategies: data parallel (gradient collectives) or with parameter servers
   * (pushes and pulls). */
  gboolean replayable = (st->flags & SIM_STRATEGY_REPLAYABLE) != 0;
  gboolean ps = replayable && (st->flags & SIM_STRATEGY_SERVERS);
  gboolean dp = replayable && !ps;
  const char *strategy = st->name;
  g_autofree char *unit0 = NULL, *host0 = NULL;
  for (guint i = 0; i < rows->len && unit0 == NULL; i++) {
    const replay_row *r = &g_array_index(rows, replay_row, i);
    if (strcmp(r->stream, "compute") == 0)
      unit0 = g_strdup(r->unit);
  }
  if (unit0 == NULL) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "the simulated iteration has no compute task");
    return FALSE;
  }
  g_auto(GStrv) words = g_strsplit(unit0, " ", 2);
  host0 = g_strdup_printf("framework for %s", words[0]);

  /* Layer name -> index + 1 of its latest push/pull task. */
  g_autoptr(GHashTable) last_push = g_hash_table_new(g_str_hash, g_str_equal);
  uint32_t it = 0, prev_id = 0;
  gboolean prev_dev0 = FALSE;
  for (guint i = 0; i < rows->len; i++) {
    const replay_row *r = &g_array_index(rows, replay_row, i);
    const char *name = r->name, *kind = r->kind, *cat = r->category, *unit = r->unit;
    const char *stream = r->stream;
    gboolean on_stream = stream[0] != '\0';
    gboolean host = strcmp(stream, host0) == 0;
    gboolean dev0 = on_stream ? strcmp(unit, unit0) == 0 || host : prev_dev0;
    prev_dev0 = dev0;
    if (!dev0)
      continue;
    replay_task t = {.id = r->id,
                     .iteration = it,
                     .sim_start_s = r->start_s,
                     .sim_end_s = r->end_s,
                     .bytes = r->bytes,
                     .after = -1, .wait_for = -1};
    uint32_t before = prev_id;
    prev_id = t.id;
    gboolean end_of_iteration = FALSE;
    if (on_stream && (strcmp(stream, "compute") == 0 || host)) {
      t.kind = REPLAY_COMPUTE;
      /* ps: a layer's forward waits for its parameters of the iteration before. */
      if (ps && it > 0 && strcmp(cat, "forward") == 0) {
        guint c = GPOINTER_TO_UINT(g_hash_table_lookup(last_push, name));
        if (c > 0 && g_array_index(tl->comms, replay_task, c - 1).iteration == it - 1)
          t.wait_for = (int)c - 1;
      }
      end_of_iteration = dp && strcmp(cat, "update") == 0;
    } else if (on_stream && strcmp(stream, "h2d") == 0) {
      continue; /* input copies overlap the framework step; their time is not replayed */
    } else if (dp && strcmp(kind, "collective") == 0) {
      t.kind = REPLAY_COLLECTIVE;
      /* The collective is named after its operation ("allreduce bucket 3 (25.0 MiB)"). */
      g_auto(GStrv) op = g_strsplit(name, " ", 2);
      if (!comm_mpi_op_parse(op[0], &t.op, NULL)) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "communication task '%s' is not a collective dtsim-mpi can replay", name);
        return FALSE;
      }
    } else if (ps && strcmp(kind, "custom") == 0 && strcmp(cat, "ps") == 0 &&
               g_str_has_prefix(name, PS_PREFIX)) {
      t.kind = REPLAY_PS;
      t.after_id = before;  /* the layer's dW task */
    } else if (ps && strcmp(kind, "delay") == 0 && strcmp(name, "iteration end") == 0) {
      g_array_append_val(tl->sim_ends, t.sim_end_s);
      it++;
      continue;
    } else {
      g_autofree char *where = on_stream ? g_strdup_printf(", stream '%s' of %s", stream, unit)
                                         : g_strdup("");
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "--strategy %s: task '%s' (%s%s) cannot be replayed: dtsim-mpi replays dp's "
                  "gradient collectives and ps's pushes and pulls only", strategy, name, kind,
                  where);
      return FALSE;
    }
    t.name = g_strdup(name);
    t.category = g_strdup(cat);
    GArray *into = t.kind == REPLAY_COMPUTE ? tl->compute : tl->comms;
    g_array_append_val(into, t);
    if (t.kind == REPLAY_PS)
      g_hash_table_insert(last_push,
                          g_array_index(tl->comms, replay_task, tl->comms->len - 1).name +
                              strlen(PS_PREFIX),
                          GUINT_TO_POINTER(tl->comms->len));
    if (end_of_iteration) {
      g_array_append_val(tl->sim_ends, t.sim_end_s);
      it++;
    }
  }
  if (!dp && !ps) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "--strategy %s cannot be replayed: dtsim-mpi replays dp's gradient collectives "
                "and ps's pushes and pulls only", strategy);
    return FALSE;
  }
  if (tl->sim_ends->len == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "device 0 has no end of iteration: no iteration to replay");
    return FALSE;
  }
  g_array_sort(tl->compute, by_start);
  if (dp) {
    /* A collective follows the last compute task that ended by its simulated start. */
    g_array_sort(tl->comms, by_start);
    for (guint c = 0, k = 0; c < tl->comms->len; c++) {
      replay_task *ct = &g_array_index(tl->comms, replay_task, c);
      while (k < tl->compute->len &&
             g_array_index(tl->compute, replay_task, k).sim_end_s <= ct->sim_start_s + 1e-12)
        k++;
      ct->after = (int)k - 1;
    }
    return TRUE;
  }
  /* ps: a push follows its dW task; pushes stay in graph order, which is the order of their
   * dW tasks on the chain. */
  g_autoptr(GHashTable) index_of = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (guint k = 0; k < tl->compute->len; k++)
    g_hash_table_insert(index_of, GUINT_TO_POINTER(g_array_index(tl->compute, replay_task, k).id),
                        GUINT_TO_POINTER(k + 1));
  for (guint c = 0; c < tl->comms->len; c++) {
    replay_task *ct = &g_array_index(tl->comms, replay_task, c);
    guint k = GPOINTER_TO_UINT(g_hash_table_lookup(index_of, GUINT_TO_POINTER(ct->after_id)));
    if (k == 0 || (c > 0 && (int)k - 1 < g_array_index(tl->comms, replay_task, c - 1).after)) {
      g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL,
                  "task '%s' does not follow a compute task of device 0", ct->name);
      return FALSE;
    }
    ct->after = (int)k - 1;
  }
  return number_tensors(tl, error);
}

double replay__now_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

