/* Sweeps (see sweep.h). */
#include "sweep.h"
#include "strategy.h"

#include "comm_net.h"
#include "simulate.h"
#include "chrome.h"
#include "util.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

static const sim_key sweep_keys[] = {
    {"devices", SIM_KEY_INT_LIST, SIM_KEY_OFF(devices_list), NULL, 1, SIM_MAX_DEVICES,
     .commands = SIM_OPTS_SWEEP, .arg = "LIST", .help = "device counts, e.g. 1,2,4,8 or 1..64"},
    {"nodes-list", SIM_KEY_INT_LIST, SIM_KEY_OFF(nodes_list), NULL, 1, SIM_MAX_DEVICES,
     .commands = SIM_OPTS_SWEEP, .arg = "LIST",
     .help = "node counts to sweep (also: --nodes with a list)"},
    {"strategies", SIM_KEY_REF_LIST, SIM_KEY_OFF(strategy_list), .resolve = sim_strategy_resolve,
     .commands = SIM_OPTS_SWEEP, .arg = "LIST", .help = "strategies to sweep"},
    {"allreduces", SIM_KEY_REF_LIST, SIM_KEY_OFF(allreduce_list),
     .resolve = sim_algorithm_resolve, .commands = SIM_OPTS_SWEEP, .arg = "LIST",
     .help = "allreduce algorithms to sweep"},
    {"batches", SIM_KEY_INT_LIST, SIM_KEY_OFF(batch_list), NULL, 1, 1 << 24,
     .commands = SIM_OPTS_SWEEP, .arg = "LIST", .help = "per-device batches to sweep"},
    {"scaling", SIM_KEY_CHOICE, SIM_KEY_OFF(scaling), "weak", .choices = "weak|strong",
     .commands = SIM_OPTS_SWEEP,
     .help = "weak: fixed per-device batch; strong: --batch is the global batch"},
    {"plot", SIM_KEY_STRING, SIM_KEY_OFF(plot), .commands = SIM_OPTS_SWEEP | SIM_OPTS_SEARCH,
     .arg = "FILE.svg", .help = "plot the points"},
};
const sim_key_group sim_keys_sweep = SIM_KEY_GROUP("sweep", 0, sweep_keys);

static void point_free(gpointer p)
{
  sim_sweep_point *pt = p;
  sim_scenario_clear(&pt->scenario);
  g_free(pt->variant);
  g_free(pt);
}

/* Devices per node when the scenario does not say: the system preset's. */
static gboolean preset_devices_per_node(const sim_scenario *s, uint32_t *out, GError **error)
{
  if (s->devices_per_node) {
    *out = (uint32_t)s->devices_per_node;
    return TRUE;
  }
  g_autoptr(comm_system) sys = comm_system_load(s->system, "--system", error);
  if (!sys)
    return FALSE;
  *out = sys->devices_per_node;
  return TRUE;
}

GPtrArray *sim_sweep_expand(const sim_scenario *base, GError **error)
{
  g_autoptr(GPtrArray) points = g_ptr_array_new_with_free_func(point_free);
  uint32_t dpn = 0;
  if (!preset_devices_per_node(base, &dpn, error))
    return NULL;
  /* The device-count axis: (nodes, devices per node) pairs. */
  g_autoptr(GArray) shapes = g_array_new(FALSE, FALSE, 2 * sizeof(int64_t));
  if (base->devices_list && base->nodes_list) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--devices and --nodes-list: give one of them");
    return NULL;
  }
  if (base->devices_list) {
    const GArray *d = base->devices_list;
    for (guint i = 0; i < d->len; i++) {
      int64_t D = g_array_index(d, int64_t, i), shape[2];
      if (D <= dpn) {
        shape[0] = 1;
        shape[1] = D;
      } else if (D % dpn == 0) {
        shape[0] = D / dpn;
        shape[1] = dpn;
      } else {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "--devices: %" G_GINT64_FORMAT " is more than one node and not a multiple of "
                    "the %u devices per node", D, dpn);
        return NULL;
      }
      g_array_append_vals(shapes, shape, 1);
    }
  } else if (base->nodes_list) {
    const GArray *nl = base->nodes_list;
    for (guint i = 0; i < nl->len; i++) {
      int64_t shape[2] = {g_array_index(nl, int64_t, i), dpn};
      g_array_append_vals(shapes, shape, 1);
    }
  } else {
    int64_t shape[2] = {base->nodes, dpn};
    g_array_append_vals(shapes, shape, 1);
  }
  g_autoptr(GPtrArray) strategies = g_ptr_array_new();
  if (base->strategy_list)
    g_ptr_array_extend(strategies, base->strategy_list, NULL, NULL);
  else
    g_ptr_array_add(strategies, (gpointer)base->strategy);
  g_autoptr(GPtrArray) algorithms = g_ptr_array_new();
  if (base->allreduce_list)
    g_ptr_array_extend(algorithms, base->allreduce_list, NULL, NULL);
  else
    g_ptr_array_add(algorithms, (gpointer)base->allreduce);
  g_autoptr(GArray) batches = g_array_new(FALSE, FALSE, sizeof(int64_t));
  if (base->batch_list)
    g_array_append_vals(batches, base->batch_list->data, base->batch_list->len);
  else
    g_array_append_val(batches, base->batch);
  gboolean strong = base->scaling == SIM_SCALING_STRONG;
  guint n_st = strategies->len, n_al = algorithms->len;
  for (guint si = 0; si < n_st; si++)
    for (guint ai = 0; ai < n_al; ai++)
      for (guint b = 0; b < batches->len; b++)
        for (guint k = 0; k < shapes->len; k++) {
          const sim_strategy *st = strategies->pdata[si];
          const comm_coll_algorithm *al = algorithms->pdata[ai];
          const int64_t *shape = &g_array_index(shapes, int64_t, 2 * k);
          int64_t batch = g_array_index(batches, int64_t, b);
          uint64_t devices = (uint64_t)(shape[0] * shape[1]);
          sim_sweep_point *pt = g_new0(sim_sweep_point, 1);
          sim_scenario_copy(&pt->scenario, base);
          sim_scenario *s = &pt->scenario;
          s->nodes = shape[0];
          s->devices_per_node = shape[1];
          s->strategy = st;
          s->allreduce = al;
          /* A point writes no per-task rows and no trace: the sweep's --csv is one row per
           * point, written once by the caller. */
          g_clear_pointer(&s->csv, g_free);
          g_clear_pointer(&s->trace, g_free);
          s->batch = strong ? batch / (int64_t)devices : batch;
          if (s->batch < 1) {
            point_free(pt);
            g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                        "--scaling strong: a global batch of %" G_GINT64_FORMAT
                        " leaves no sample for each of %" G_GUINT64_FORMAT " devices", batch, devices);
            return NULL;
          }
          pt->devices = devices;
          g_autoptr(GString) v = g_string_new(NULL);
          if (n_st > 1)
            g_string_append_printf(v, "%s%s", v->len ? ", " : "", st->name);
          if (n_al > 1)
            g_string_append_printf(v, "%s%s", v->len ? ", " : "", comm_coll_algorithm_name(al));
          if (batches->len > 1)
            g_string_append_printf(v, "%s%s batch %" G_GINT64_FORMAT, v->len ? ", " : "",
                                   strong ? "global" : "", batch);
          if (v->len == 0)
            g_string_append_printf(v, "%s %s", base->model, st->name);
          pt->variant = g_string_free(g_steal_pointer(&v), FALSE);
          g_ptr_array_add(points, pt);
        }
  /* Refuse a point the network model cannot simulate before simulating any. */
  for (guint i = 0; i < points->len; i++)
    if (!sim_check_net_scale(((sim_sweep_point *)points->pdata[i])->devices,
                             base->net_model == COMM_NET_FLOW, error))
      return NULL;
  return g_steal_pointer(&points);
}

gboolean sim_sweep_run_point(const sim_sweep_point *point, sim_report *out, GError **error)
{
  sim_run_opts o = {.with_speedup = FALSE};
  return sim_simulate(&point->scenario, &o, out, error);
}

gboolean sim_sweep_add_speedups(GPtrArray *points, sim_report *reports, GError **error)
{
  g_autoptr(GHashTable) base = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
  gboolean strong = points->len &&
                    ((sim_sweep_point *)points->pdata[0])->scenario.scaling == SIM_SCALING_STRONG;
  for (guint i = 0; i < points->len; i++) {
    sim_sweep_point *pt = points->pdata[i];
    if (pt->scenario.chakra)
      continue;   /* a trace has no one-device form: no speedup */
    double *one = g_hash_table_lookup(base, pt->variant);
    if (!one) {
      sim_scenario s;
      sim_scenario_single_device(&s, &pt->scenario);
      if (strong)
        s.batch = pt->scenario.batch * (int64_t)pt->devices;
      sim_report r;
      sim_run_opts o = {.with_speedup = FALSE};
      gboolean ok = sim_simulate(&s, &o, &r, error);
      sim_scenario_clear(&s);
      if (!ok)
        return FALSE;
      one = g_new(double, 1);
      *one = r.throughput_samples_per_s;
      g_hash_table_insert(base, pt->variant, one);
    }
    reports[i].speedup = *one > 0 ? reports[i].throughput_samples_per_s / *one : 0;
    reports[i].scaling_efficiency = reports[i].speedup / (double)pt->devices;
  }
  return TRUE;
}

GArray *sim_sweep_rows(GPtrArray *points)
{
  GArray *rows = g_array_sized_new(FALSE, TRUE, sizeof(trace_sweep_row), points->len);
  for (guint i = 0; i < points->len; i++) {
    const sim_sweep_point *pt = points->pdata[i];
    const sim_scenario *s = &pt->scenario;
    trace_sweep_row row = {pt->variant,     s->model,  s->strategy->name,
                           comm_coll_algorithm_name(s->allreduce), s->nodes,
                           s->devices_per_node, s->batch, pt->devices};
    g_array_append_val(rows, row);
  }
  return rows;
}
