/* Cost tables, plans and the strategy registry. */
#include "plan.h"

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
  return p;
}

void sim_plan_free(sim_plan *p)
{
  if (!p)
    return;
  sim_graph_free(p->graph);
  g_array_free(p->units, TRUE);
  g_array_free(p->iteration_end, TRUE);
  g_free(p);
}

sim_unit_id sim__plan_add_unit(sim_plan *p, sim_proc_kind kind, sim_unit_role role,
                               uint32_t index, const char *name)
{
  sim_unit_info info = {role, index};
  g_array_append_val(p->units, info);
  return sim_graph_add_unit(p->graph, kind, name);
}

extern const sim_strategy sim__strategy_dp;

static const sim_strategy *const registry[] = {&sim__strategy_dp, NULL};

const sim_strategy *const *sim_strategies(void) { return registry; }

const sim_strategy *sim_strategy_find(const char *name)
{
  for (const sim_strategy *const *s = registry; *s; s++)
    if (strcmp((*s)->name, name) == 0)
      return *s;
  return NULL;
}
