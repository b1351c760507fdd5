/* Sweeps (see sweep.h). */
#include "sweep.h"
#include "strategy.h"
#include "svg.h"

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

void sim_sweep_print_table(FILE *out, GPtrArray *points, const sim_report *r)
{
  fputs("# speedup and eff_%: against the same strategy on one device (mp, pp and hybrid: "
        "plain training of the same batch on one device)\n", out);
  /* The whole run's columns when one is asked (every point then has it). */
  gboolean train = points->len > 0 && r[0].has_train, cost = train && r[0].train.has_cost;
  fprintf(out, "%-24s %7s %5s %6s %12s %14s %8s %7s %9s %9s", "variant", "devices", "nodes",
          "batch", "iteration_ms", "samples_per_s", "speedup", "eff_%", "exposed_%", "mem_GiB");
  if (train)
    fprintf(out, " %10s %8s", "train_days", "goodput");
  if (cost)
    fprintf(out, " %14s", "train_cost_usd");
  fputc('\n', out);
  for (guint i = 0; i < points->len; i++) {
    const sim_sweep_point *pt = points->pdata[i];
    double it = r[i].iteration_time_s;
    if (train)
      fprintf(out, "%-24s %7" G_GUINT64_FORMAT " %5" G_GINT64_FORMAT " %6" G_GINT64_FORMAT
                   " %12.3f %14.1f %8.2f %7.1f %9.1f %9.2f %10.3f %8.4f",
              pt->variant, pt->devices, pt->scenario.nodes, pt->scenario.batch, it * 1e3,
              r[i].throughput_samples_per_s, r[i].speedup, 100 * r[i].scaling_efficiency,
              it > 0 ? 100 * r[i].exposed_comm_time_s / it : 0,
              (double)r[i].memory_per_device_bytes / (1 << 30), r[i].train.train_time_s / 86400,
              r[i].train.goodput);
    if (cost)
      fprintf(out, " %14.2f", r[i].train.train_cost_usd);
    if (train) {
      fprintf(out, "%s\n", r[i].memory_capacity_bytes &&
                                   r[i].memory_per_device_bytes > r[i].memory_capacity_bytes
                               ? "  does not fit" : "");
      continue;
    }
    fprintf(out, "%-24s %7" G_GUINT64_FORMAT " %5" G_GINT64_FORMAT " %6" G_GINT64_FORMAT
                 " %12.3f %14.1f %8.2f %7.1f %9.1f %9.2f%s\n",
            pt->variant, pt->devices, pt->scenario.nodes, pt->scenario.batch, it * 1e3,
            r[i].throughput_samples_per_s, r[i].speedup, 100 * r[i].scaling_efficiency,
            it > 0 ? 100 * r[i].exposed_comm_time_s / it : 0,
            (double)r[i].memory_per_device_bytes / (1 << 30),
            r[i].memory_capacity_bytes && r[i].memory_per_device_bytes > r[i].memory_capacity_bytes
                ? "  does not fit" : "");
  }
}

static char *point_extra_json(const sim_sweep_point *pt)
{
  const sim_scenario *s = &pt->scenario;
  g_autoptr(GString) o = g_string_new(NULL);
  g_string_append(o, "\"variant\":");
  dt_json_string(o, pt->variant);
  g_string_append(o, ",\"model\":");
  dt_json_string(o, s->model);
  g_string_append(o, ",\"strategy\":");
  dt_json_string(o, s->strategy->name);
  g_string_append(o, ",\"allreduce\":");
  dt_json_string(o, comm_coll_algorithm_name(s->allreduce));
  g_string_append_printf(o, ",\"nodes\":%" G_GINT64_FORMAT ",\"devices_per_node\":%" G_GINT64_FORMAT
                            ",\"batch\":%" G_GINT64_FORMAT, s->nodes, s->devices_per_node, s->batch);
  return g_string_free(g_steal_pointer(&o), FALSE);
}

void sim_sweep_print_json(FILE *out, GPtrArray *points, const sim_report *r)
{
  for (guint i = 0; i < points->len; i++) {
    g_autofree char *extra = point_extra_json(points->pdata[i]);
    sim_report_print_json(out, &r[i], extra);
  }
}

gboolean sim_sweep_write_csv(const char *path, GPtrArray *points, const sim_report *r,
                             GError **error)
{
  g_autoptr(dt_outfile) out = dt_outfile_open(path, error);
  if (!out)
    return FALSE;
  FILE *f = dt_outfile_stream(out);
  fputs("variant,model,strategy,allreduce,nodes,devices_per_node,devices,batch,iteration_time_s,"
        "throughput_samples_per_s,compute_time_s,comm_time_s,exposed_comm_time_s,idle_time_s,"
        "speedup,scaling_efficiency,memory_per_device_bytes,events,sim_wall_s\n", f);
  for (guint i = 0; i < points->len; i++) {
    const sim_sweep_point *pt = points->pdata[i];
    const sim_scenario *s = &pt->scenario;
    g_autoptr(GString) row = g_string_new(NULL);
    dt_csv_field(row, pt->variant);
    g_string_append_c(row, ',');
    dt_csv_field(row, s->model);
    fprintf(f, "%s,%s,%s,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GUINT64_FORMAT
               ",%" G_GINT64_FORMAT ",%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.6g,%.6g,%" G_GUINT64_FORMAT
               ",%" G_GUINT64_FORMAT ",%.6g\n",
            row->str, s->strategy->name, comm_coll_algorithm_name(s->allreduce),
            s->nodes, s->devices_per_node,
            pt->devices, s->batch, r[i].iteration_time_s, r[i].throughput_samples_per_s,
            r[i].compute_time_s, r[i].comm_time_s, r[i].exposed_comm_time_s, r[i].idle_time_s,
            r[i].speedup, r[i].scaling_efficiency, r[i].memory_per_device_bytes, r[i].events,
            r[i].sim_wall_s);
  }
  return dt_outfile_commit(out, error);
}

/* ---- SVG ------------------------------------------------------------------------------------ */

/* One panel: x = log2(devices) from xmin to xmax, y from 0 to ymax. */
static void svg_panel(GString *o, double ox, double oy, double w, double h, const char *ylabel,
                      double xmin, double xmax, double ymax, int yticks, GPtrArray *points,
                      const sim_report *r, GPtrArray *variants, gboolean efficiency)
{
  g_string_append_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                            "fill=\"none\" stroke=\"#444\"/>\n", ox, oy, w, h);
  double lx0 = log2(xmin), lx1 = log2(xmax);
  if (lx1 <= lx0)
    lx1 = lx0 + 1;
#define X(d) (ox + (log2(d) - lx0) / (lx1 - lx0) * w)
#define Y(v) (oy + h - (v) / ymax * h)
  for (double d = xmin; d <= xmax * 1.0001; d *= 2) {
    g_string_append_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                           X(d), oy, X(d), oy + h);
    g_string_append_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">%g</text>\n",
                           X(d), oy + h + 14, d);
  }
  for (int k = 0; k <= yticks; k++) {
    double v = ymax * k / yticks;
    g_string_append_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
                           ox, Y(v), ox + w, Y(v));
    g_string_append_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%g</text>\n",
                           ox - 4, Y(v) + 4, v);
  }
  g_string_append_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\">devices (log scale)</text>\n",
                         ox + w / 2, oy + h + 32);
  g_string_append_printf(o, "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">%s</text>\n",
                         ox - 52, oy + h / 2, ylabel);
  for (guint v = 0; v < variants->len; v++) {
    const char *name = variants->pdata[v];
    const char *color = trace_svg_color(v);
    g_string_append_printf(o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", color);
    for (guint i = 0; i < points->len; i++) {
      const sim_sweep_point *pt = points->pdata[i];
      if (strcmp(pt->variant, name) != 0)
        continue;
      double y = efficiency ? 100 * r[i].scaling_efficiency : r[i].throughput_samples_per_s;
      g_string_append_printf(o, "%.1f,%.1f ", X((double)pt->devices), Y(y));
    }
    g_string_append(o, "\"/>\n");
    for (guint i = 0; i < points->len; i++) {
      const sim_sweep_point *pt = points->pdata[i];
      if (strcmp(pt->variant, name) != 0)
        continue;
      double y = efficiency ? 100 * r[i].scaling_efficiency : r[i].throughput_samples_per_s;
      g_string_append_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>",
                             X((double)pt->devices), Y(y), color);
      trace_svg_escape(o, name);
      g_string_append_printf(o, ": %" G_GUINT64_FORMAT " devices, %.4g</title></circle>\n",
                             pt->devices, y);
    }
  }
#undef X
#undef Y
}

gboolean sim_sweep_write_svg(const char *path, const char *title, GPtrArray *points,
                             const sim_report *r, GError **error)
{
  g_autoptr(GPtrArray) variants = g_ptr_array_new();
  double xmin = 1e300, xmax = 0, ymax = 0, emax = 100;
  for (guint i = 0; i < points->len; i++) {
    const sim_sweep_point *pt = points->pdata[i];
    gboolean seen = FALSE;
    for (guint v = 0; v < variants->len && !seen; v++)
      seen = strcmp(variants->pdata[v], pt->variant) == 0;
    if (!seen)
      g_ptr_array_add(variants, pt->variant);
    xmin = MIN(xmin, (double)pt->devices);
    xmax = MAX(xmax, (double)pt->devices);
    ymax = MAX(ymax, r[i].throughput_samples_per_s);
    emax = MAX(emax, 100 * r[i].scaling_efficiency);
  }
  /* Efficiency in steps of 20 %, at least to 100 % (superlinear points stay on the plot). */
  int eticks = (int)ceil(emax / 20);
  /* Powers of two around the data so the log axis has whole ticks. */
  xmin = pow(2, floor(log2(MAX(xmin, 1))));
  xmax = pow(2, ceil(log2(MAX(xmax, 2))));
  const double W = 900, H = 420, pw = 340, ph = 260;
  g_autoptr(GString) o = g_string_new(NULL);
  trace_svg_begin(o, W, H);
  g_string_append(o, "<text x=\"450\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">");
  trace_svg_escape(o, title);
  g_string_append(o, "</text>\n");
  svg_panel(o, 80, 50, pw, ph, "throughput (samples/s)", xmin, xmax,
            trace_svg_nice_ceiling(ymax * 1.05), 5,
            points, r, variants, FALSE);
  svg_panel(o, 520, 50, pw, ph, "scaling efficiency (%)", xmin, xmax, 20.0 * eticks, eticks, points,
            r, variants, TRUE);
  for (guint v = 0; v < variants->len; v++) {
    double y = 370 + 16 * (v % 3), x = 80 + 280 * (v / 3);
    g_string_append_printf(o, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"3\"/>\n",
                           x, y - 4, x + 24, y - 4, trace_svg_color(v));
    g_string_append_printf(o, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\">", x + 30, y);
    trace_svg_escape(o, variants->pdata[v]);
    g_string_append(o, "</text>\n");
  }
  return trace_svg_write(o, path, error);
}
