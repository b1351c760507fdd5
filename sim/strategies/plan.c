/* Cost tables, plans and the strategy registry. */
#include "plan.h"
#include "strategy.h"

#include "coll.h"

#include "util.h"

#include <string.h>

static void layer_clear(gpointer p) { g_free(((sim_layer_cost *)p)->name); }

sim_costs *sim_costs_new(void)
{
  sim_costs *c = g_new0(sim_costs, 1);
  c->layers = g_array_new(FALSE, TRUE, sizeof(sim_layer_cost));
  g_array_set_clear_func(c->layers, layer_clear);
  return c;
}

void sim_costs_free(sim_costs *c)
{
  if (!c)
    return;
  g_array_free(c->layers, TRUE);
  g_free(c);
}

void sim_costs_add_layer(sim_costs *c, const sim_layer_cost *layer)
{
  sim_layer_cost copy = *layer;
  copy.name = g_strdup(layer->name);
  g_array_append_val(c->layers, copy);
}

const sim_layer_cost *sim_costs_layer(const sim_costs *c, guint i)
{
  return &g_array_index(c->layers, sim_layer_cost, i);
}

guint sim_costs_n_layers(const sim_costs *c) { return c->layers->len; }

uint64_t sim_costs_param_bytes(const sim_costs *c)
{
  uint64_t sum = 0;
  for (guint i = 0; i < c->layers->len; i++)
    sum += sim_costs_layer(c, i)->param_bytes;
  return sum;
}

sim_costs *sim_costs_demo(uint64_t batch)
{
  /* Round numbers, scaled by batch / 32, so results can be checked by hand. */
  static const struct {
    const char *name;
    double fwd_ms, bwd_data_ms, bwd_weights_ms;
    uint64_t param_bytes, output_bytes_per_sample;
  } demo[] = {
      {"conv1", 2.0, 0.0, 2.0, 4u << 20, 256u << 10},
      {"conv2", 3.0, 3.0, 3.0, 16u << 20, 128u << 10},
      {"fc", 1.0, 1.0, 1.0, 64u << 20, 4u << 10},
      {"loss", 0.1, 0.1, 0.0, 0, 4},
  };
  sim_costs *c = sim_costs_new();
  double scale = (double)batch / 32.0;
  for (gsize i = 0; i < G_N_ELEMENTS(demo); i++) {
    sim_layer_cost l = {
        .name = (char *)demo[i].name,
        .forward_ps = sim_time_from_s(demo[i].fwd_ms * 1e-3 * scale),
        .backward_data_ps = sim_time_from_s(demo[i].bwd_data_ms * 1e-3 * scale),
        .backward_weights_ps = sim_time_from_s(demo[i].bwd_weights_ms * 1e-3 * scale),
        .update_ps = sim_time_from_s((double)demo[i].param_bytes / 300e9 * 4),
        .param_bytes = demo[i].param_bytes,
        .output_bytes = demo[i].output_bytes_per_sample * batch,
    };
    sim_costs_add_layer(c, &l);
  }
  c->batch = batch;
  c->input_bytes = batch * 3 * 224 * 224 * 4;
  c->memory_bytes = 4 * sim_costs_param_bytes(c) + batch * (512u << 10);
  c->reduce_Bps = 300000000000ULL;
  return c;
}

sim_plan *sim__plan_new(void)
{
  sim_plan *p = g_new0(sim_plan, 1);
  p->graph = sim_graph_new();
  p->units = g_array_new(FALSE, FALSE, sizeof(sim_unit_info));
  p->iteration_end = g_array_new(FALSE, FALSE, sizeof(sim_task_id));
  p->host_units = g_array_new(FALSE, FALSE, sizeof(sim_unit_id));
  p->ps_tensor_bytes = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  p->ps_shard_of = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  p->ps_tasks = g_array_new(FALSE, FALSE, sizeof(sim_ps_task));
  return p;
}

void sim_plan_free(sim_plan *p)
{
  if (!p)
    return;
  sim_graph_free(p->graph);
  g_array_free(p->units, TRUE);
  g_array_free(p->iteration_end, TRUE);
  g_array_free(p->host_units, TRUE);
  g_array_free(p->ps_tensor_bytes, TRUE);
  g_array_free(p->ps_shard_of, TRUE);
  g_array_free(p->ps_tasks, TRUE);
  if (p->extra_free)
    p->extra_free(p->extra);
  g_free(p);
}

sim_unit_id sim__plan_add_unit(sim_plan *p, sim_proc_kind kind, sim_unit_role role,
                               uint32_t index, const char *name)
{
  sim_unit_info info = {role, index};
  g_array_append_val(p->units, info);
  return sim_graph_add_unit(p->graph, kind, name);
}

sim_stream_id sim__host_stream(sim_plan *p, uint32_t node, uint32_t rank)
{
  while (p->host_units->len <= node) {
    sim_unit_id none = G_MAXUINT32;
    g_array_append_val(p->host_units, none);
  }
  sim_unit_id *u = &g_array_index(p->host_units, sim_unit_id, node);
  if (*u == G_MAXUINT32) {
    g_autofree char *name = g_strdup_printf("host (node %u)", node);
    *u = sim__plan_add_unit(p, SIM_PROC_HOST, SIM_UNIT_HOST, node, name);
  }
  g_autofree char *thread = g_strdup_printf("framework for gpu%u", rank);
  return sim_graph_add_stream(p->graph, *u, thread);
}

void sim__add_device(sim_plan *p, uint32_t rank, uint32_t devices_per_node, gboolean with_comm,
                     sim_device_streams *out)
{
  uint32_t node = rank / devices_per_node;
  g_autofree char *name = g_strdup_printf("gpu%u (node %u)", rank, node);
  out->unit = sim__plan_add_unit(p, SIM_PROC_DEVICE, SIM_UNIT_DEVICE, rank, name);
  out->compute = sim_graph_add_stream(p->graph, out->unit, "compute");
  out->comm = with_comm ? sim_graph_add_stream(p->graph, out->unit, "comm") : 0;
  out->copy = sim_graph_add_stream(p->graph, out->unit, "h2d");
  out->host = sim__host_stream(p, node, rank);
}

sim_task_id sim__host_step(sim_plan *p, const sim_costs *c, sim_stream_id host, gboolean has_prev,
                           sim_task_id prev_end)
{
  sim_task_id step = sim_graph_add_compute(p->graph, host, "step", "host", c->host_step_ps, 0, 0);
  if (has_prev)
    sim_graph_depend(p->graph, step, prev_end);
  return step;
}

gboolean sim__check_devices(uint64_t devices, const char *strategy, GError **error)
{
  if (devices == 0 || devices > 1000000) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: %" G_GUINT64_FORMAT " devices is outside 1 to 1000000", strategy, devices);
    return FALSE;
  }
  return TRUE;
}

static sim_time_ps layer_work(const sim_costs *c, uint32_t i)
{
  const sim_layer_cost *l = sim_costs_layer(c, i);
  return l->forward_ps + l->backward_data_ps + l->backward_weights_ps;
}

/* Greedy fill: cuts a new stage whenever the next layer would take the current one past
 * `limit`. Returns the number of stages used, or max_stages + 1 when more would be needed. */
static uint32_t greedy(const sim_costs *c, sim_time_ps limit, uint32_t max_stages, uint32_t *first)
{
  uint32_t n = sim_costs_n_layers(c), k = 1;
  sim_time_ps acc = 0;
  first[0] = 0;
  for (uint32_t i = 0; i < n; i++) {
    sim_time_ps w = layer_work(c, i);
    if (w > limit)
      return max_stages + 1;
    if (acc + w > limit && acc > 0) {
      if (k == max_stages)
        return max_stages + 1;
      first[k++] = i;
      acc = 0;
    }
    acc += w;
  }
  first[k] = n;
  return k;
}

gboolean sim__partition(const sim_costs *c, uint32_t stages, const GArray *split,
                        uint32_t *first, GError **error)
{
  uint32_t n = sim_costs_n_layers(c);
  if (stages > n) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "--stages: %u stages but the model has only %u layers", stages, n);
    return FALSE;
  }
  if (split && split->len) {
    const GArray *cuts = split;
    if (cuts->len != stages - 1) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "--split: %u boundaries given for %u stages (need %u)", cuts->len, stages,
                  stages - 1);
      return FALSE;
    }
    first[0] = 0;
    for (uint32_t s = 1; s < stages; s++) {
      int64_t cut = g_array_index(cuts, int64_t, s - 1);
      if (cut >= (int64_t)n) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "--split: layer %" G_GINT64_FORMAT " is past the model's last layer (%u)", cut,
                    n - 1);
        return FALSE;
      }
      first[s] = (uint32_t)cut;
      if (first[s] <= first[s - 1]) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "--split: boundaries must increase (layer %u after %u)", first[s], first[s - 1]);
        return FALSE;
      }
    }
    first[stages] = n;
    return TRUE;
  }
  /* Binary search on the slowest stage's work; the greedy fill decides feasibility. */
  sim_time_ps lo = 0, hi = 0;
  for (uint32_t i = 0; i < n; i++) {
    lo = MAX(lo, layer_work(c, i));
    hi = sim_time_add_sat(hi, layer_work(c, i));
  }
  while (lo < hi) {
    sim_time_ps mid = lo + (hi - lo) / 2;
    if (greedy(c, mid, stages, first) <= stages)
      hi = mid;
    else
      lo = mid + 1;
  }
  uint32_t k = greedy(c, hi, stages, first);
  /* Fewer stages than asked (few heavy layers): split the stage with the most layers in two,
   * which never makes the slowest stage slower, until there are `stages`. */
  while (k < stages) {
    uint32_t widest = 0;
    for (uint32_t s = 1; s < k; s++)
      if (first[s + 1] - first[s] > first[widest + 1] - first[widest])
        widest = s;
    memmove(&first[widest + 2], &first[widest + 1], (k - widest) * sizeof *first);
    first[widest + 1] = first[widest] + (first[widest + 2] - first[widest]) / 2;
    k++;
  }
  return TRUE;
}

uint64_t sim__stage_memory(const sim_costs *c, uint32_t a, uint32_t b, uint64_t in_flight)
{
  uint64_t params = 0, saved = 0;
  for (uint32_t i = a; i < b; i++) {
    params += sim_costs_layer(c, i)->params;
    saved += sim_costs_layer(c, i)->saved_bytes;
  }
  return (uint64_t)((double)params * c->state_bytes_per_param) + in_flight * saved +
         c->workspace_bytes;
}

extern const sim_strategy sim__strategy_dp, sim__strategy_ps, sim__strategy_mp, sim__strategy_pp,
    sim__strategy_hybrid, sim__strategy_chaos, sim__strategy_3d;

static const sim_strategy *const registry[] = {&sim__strategy_dp,     &sim__strategy_ps,
                                               &sim__strategy_mp,     &sim__strategy_pp,
                                               &sim__strategy_hybrid, &sim__strategy_chaos,
                                               &sim__strategy_3d,     NULL};

const sim_strategy *const *sim_strategies(void) { return registry; }

const sim_strategy *sim_strategy_default(void) { return registry[0]; }

unsigned sim_strategy_flags_for(const sim_strategy *st, const sim_scenario *s)
{
  return st->flags | (st->scenario_flags && s ? st->scenario_flags(s) : 0);
}

char *sim_strategy_names_with(unsigned flags, const char *sep)
{
  GString *names = g_string_new(NULL);
  for (const sim_strategy *const *s = registry; *s; s++)
    if (((*s)->flags & flags) == flags)
      g_string_append_printf(names, "%s%s", names->len ? sep : "", (*s)->name);
  return g_string_free(names, FALSE);
}

const sim_strategy *sim_strategy_transformer(void)
{
  for (const sim_strategy *const *s = registry; *s; s++)
    if ((*s)->flags & SIM_STRATEGY_TRANSFORMER)
      return *s;
  return NULL;
}

const sim_strategy *sim_strategy_for_scenario(const sim_scenario *s, GError **error)
{
  const sim_strategy *st = s->strategy;
  if ((st->flags & SIM_STRATEGY_TRANSFORMER) || !wl_tf_is_transformer(s->model))
    return st;
  if (st->flags & SIM_STRATEGY_TRANSFORMER_FORM)
    return sim_strategy_transformer();
  g_autofree char *tf = sim_strategy_names_with(SIM_STRATEGY_TRANSFORMER, ", ");
  g_autofree char *forms = sim_strategy_names_with(SIM_STRATEGY_TRANSFORMER_FORM, ", ");
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
              "%s: %s trains transformers with --strategy %s (or %s, its special case)",
              sim_scenario_where(s, "strategy"), st->name, tf, forms);
  return NULL;
}


const sim_strategy *sim_strategy_find(const char *name)
{
  for (const sim_strategy *const *s = registry; *s; s++)
    if (strcmp((*s)->name, name) == 0)
      return *s;
  return NULL;
}

const void *sim_algorithm_resolve(const char *name, const char *where, GError **error)
{
  return comm_coll_algorithm_find(name, where, error);
}

const void *sim_strategy_resolve(const char *name, const char *where, GError **error)
{
  const sim_strategy *s = sim_strategy_find(name);
  if (!s) {
    g_autoptr(GString) known = g_string_new(NULL);
    for (const sim_strategy *const *r = registry; *r; r++)
      g_string_append_printf(known, "%s%s", known->len ? ", " : "", (*r)->name);
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: unknown strategy '%s' (one of: %s)", where,
                name, known->str);
  }
  return s;
}
