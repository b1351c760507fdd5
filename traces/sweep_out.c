/* The outputs of a sweep (sim/app/sweep.c computes it): the table, JSON lines, the CSV of every point
 * and the SVG of throughput and scaling efficiency against devices. */
#include "sweep_out.h"
#include "svg.h"

#include "util.h"

#include <math.h>
#include <string.h>

void trace_sweep_print_table(FILE *out, const trace_sweep_row *rows, guint n, const sim_report *r)
{
  fputs("# speedup and eff_%: against the same strategy on one device (mp, pp and hybrid: "
        "plain training of the same batch on one device)\n", out);
  /* The whole run's columns when one is asked (every point then has it). */
  gboolean train = n > 0 && r[0].has_train, cost = train && r[0].train.has_cost;
  fprintf(out, "%-24s %7s %5s %6s %12s %14s %8s %7s %9s %9s", "variant", "devices", "nodes",
          "batch", "iteration_ms", "samples_per_s", "speedup", "eff_%", "exposed_%", "mem_GiB");
  if (train)
    fprintf(out, " %10s %8s", "train_days", "goodput");
  if (cost)
    fprintf(out, " %14s", "train_cost_usd");
  fputc('\n', out);
  for (guint i = 0; i < n; i++) {
    const trace_sweep_row *pt = &rows[i];
    double it = r[i].iteration_time_s;
    if (train)
      fprintf(out, "%-24s %7" G_GUINT64_FORMAT " %5" G_GINT64_FORMAT " %6" G_GINT64_FORMAT
                   " %12.3f %14.1f %8.2f %7.1f %9.1f %9.2f %10.3f %8.4f",
              pt->variant, pt->devices, pt->nodes, pt->batch, it * 1e3,
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
            pt->variant, pt->devices, pt->nodes, pt->batch, it * 1e3,
            r[i].throughput_samples_per_s, r[i].speedup, 100 * r[i].scaling_efficiency,
            it > 0 ? 100 * r[i].exposed_comm_time_s / it : 0,
            (double)r[i].memory_per_device_bytes / (1 << 30),
            r[i].memory_capacity_bytes && r[i].memory_per_device_bytes > r[i].memory_capacity_bytes
                ? "  does not fit" : "");
  }
}

static char *point_extra_json(const trace_sweep_row *pt)
{
  g_autoptr(GString) o = g_string_new(NULL);
  g_string_append(o, "\"variant\":");
  dt_json_string(o, pt->variant);
  g_string_append(o, ",\"model\":");
  dt_json_string(o, pt->model);
  g_string_append(o, ",\"strategy\":");
  dt_json_string(o, pt->strategy);
  g_string_append(o, ",\"allreduce\":");
  dt_json_string(o, pt->allreduce);
  g_string_append_printf(o, ",\"nodes\":%" G_GINT64_FORMAT ",\"devices_per_node\":%" G_GINT64_FORMAT
                            ",\"batch\":%" G_GINT64_FORMAT, pt->nodes, pt->devices_per_node, pt->batch);
  return g_string_free(g_steal_pointer(&o), FALSE);
}

void trace_sweep_print_json(FILE *out, const trace_sweep_row *rows, guint n, const sim_report *r)
{
  for (guint i = 0; i < n; i++) {
    g_autofree char *extra = point_extra_json(&rows[i]);
    sim_report_print_json(out, &r[i], extra);
  }
}

gboolean trace_sweep_write_csv(const char *path, const trace_sweep_row *rows, guint n,
                               const sim_report *r, GError **error)
{
  g_autoptr(dt_outfile) out = dt_outfile_open(path, error);
  if (!out)
    return FALSE;
  FILE *f = dt_outfile_stream(out);
  fputs("variant,model,strategy,allreduce,nodes,devices_per_node,devices,batch,iteration_time_s,"
        "throughput_samples_per_s,compute_time_s,comm_time_s,exposed_comm_time_s,idle_time_s,"
        "speedup,scaling_efficiency,memory_per_device_bytes,events,sim_wall_s\n", f);
  for (guint i = 0; i < n; i++) {
    const trace_sweep_row *pt = &rows[i];
    g_autoptr(GString) row = g_string_new(NULL);
    dt_csv_field(row, pt->variant);
    g_string_append_c(row, ',');
    dt_csv_field(row, pt->model);
    fprintf(f, "%s,%s,%s,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GUINT64_FORMAT
               ",%" G_GINT64_FORMAT ",%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.6g,%.6g,%" G_GUINT64_FORMAT
               ",%" G_GUINT64_FORMAT ",%.6g\n",
            row->str, pt->strategy, pt->allreduce, pt->nodes, pt->devices_per_node,
            pt->devices, pt->batch, r[i].iteration_time_s, r[i].throughput_samples_per_s,
            r[i].compute_time_s, r[i].comm_time_s, r[i].exposed_comm_time_s, r[i].idle_time_s,
            r[i].speedup, r[i].scaling_efficiency, r[i].memory_per_device_bytes, r[i].events,
            r[i].sim_wall_s);
  }
  return dt_outfile_commit(out, error);
}

/* ---- SVG ------------------------------------------------------------------------------------ */

/* One panel: x = log2(devices) from xmin to xmax, y from 0 to ymax. */
static void svg_panel(GString *o, double ox, double oy, double w, double h, const char *ylabel,
                      double xmin, double xmax, double ymax, int yticks,
                      const trace_sweep_row *rows, guint n, const sim_report *r, GPtrArray *variants,
                      gboolean efficiency)
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
    for (guint i = 0; i < n; i++) {
      const trace_sweep_row *pt = &rows[i];
      if (strcmp(pt->variant, name) != 0)
        continue;
      double y = efficiency ? 100 * r[i].scaling_efficiency : r[i].throughput_samples_per_s;
      g_string_append_printf(o, "%.1f,%.1f ", X((double)pt->devices), Y(y));
    }
    g_string_append(o, "\"/>\n");
    for (guint i = 0; i < n; i++) {
      const trace_sweep_row *pt = &rows[i];
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

gboolean trace_sweep_write_svg(const char *path, const char *title, const trace_sweep_row *rows,
                               guint n, const sim_report *r, GError **error)
{
  g_autoptr(GPtrArray) variants = g_ptr_array_new();
  double xmin = 1e300, xmax = 0, ymax = 0, emax = 100;
  for (guint i = 0; i < n; i++) {
    const trace_sweep_row *pt = &rows[i];
    gboolean seen = FALSE;
    for (guint v = 0; v < variants->len && !seen; v++)
      seen = strcmp(variants->pdata[v], pt->variant) == 0;
    if (!seen)
      g_ptr_array_add(variants, (gpointer)pt->variant);
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
            trace_svg_nice_ceiling(ymax * 1.05), 5, rows, n, r, variants, FALSE);
  svg_panel(o, 520, 50, pw, ph, "scaling efficiency (%)", xmin, xmax, 20.0 * eticks, eticks, rows,
            n, r, variants, TRUE);
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
