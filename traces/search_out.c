/* The outputs of a search (see search_out.h; sim/app/search.c computes the search). */
#include "search_out.h"
#include "svg.h"

#include "util.h"

#include <string.h>

void trace_search_table_free(trace_search_table *t)
{
  if (!t)
    return;
  g_free(t->candidates);
  g_free(t->rows);
  g_free(t);
}

/* Model FLOP utilization of a result, or a negative number when unknown. */
static double mfu(const trace_search_table *t, const sim_report *r)
{
  if (!(t->flops_per_sample > 0) || !(t->peak_flops > 0) || r->devices == 0)
    return -1;
  return r->throughput_samples_per_s * t->flops_per_sample / (t->peak_flops * r->devices);
}

static const char *network(const trace_search_table *t)
{
  return t->flow ? "flow" : "analytic";
}

/* A row's result on the network that ranks the rows. */
static const sim_search_result *ranking_result(const trace_search_table *t,
                                               const trace_search_candidate *c)
{
  return t->flow ? c->flow : c->analytic;
}

static void print_summary(const trace_search_table *t, FILE *f)
{
  guint n = t->n_candidates, fit = 0, refused = 0;
  for (guint i = 0; i < n; i++) {
    fit += t->candidates[i].analytic->status == SIM_SEARCH_NO_FIT;
    refused += t->candidates[i].analytic->status == SIM_SEARCH_REFUSED;
  }
  guint dropped = (guint)(t->combinations - n) + fit + refused;
  fprintf(f, "search: %s\n", t->title);
  fprintf(f, "  %" G_GUINT64_FORMAT " configurations: %u ranked, %u dropped\n", t->combinations,
          t->n_ranked, dropped);
  for (guint k = 0; k < t->n_drops; k++)
    fprintf(f, "    %6u  %s\n", t->drop_counts[k], t->drops[k]);
  if (fit)
    fprintf(f, "    %6u  does not fit in device memory\n", fit);
  /* Refusals grouped by the option their message names. */
  g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GArray) counts = g_array_new(FALSE, TRUE, sizeof(guint));
  for (guint i = 0; i < n; i++) {
    if (t->candidates[i].analytic->status != SIM_SEARCH_REFUSED)
      continue;
    const char *m = t->candidates[i].analytic->reason;
    const char *colon = strchr(m, ':');
    g_autofree char *key = colon ? g_strndup(m, (gsize)(colon - m)) : g_strdup(m);
    guint k = 0;
    while (k < keys->len && strcmp(keys->pdata[k], key) != 0)
      k++;
    if (k == keys->len) {
      g_ptr_array_add(keys, g_steal_pointer(&key));
      g_array_set_size(counts, k + 1);
    }
    g_array_index(counts, guint, k)++;
  }
  for (guint k = 0; k < keys->len; k++)
    fprintf(f, "    %6u  refused by the strategy (%s)\n", g_array_index(counts, guint, k),
            (const char *)keys->pdata[k]);
  guint K = t->n_finalists;
  if (t->flow_skipped) {
    fprintf(f, "  %s\n", t->flow_skipped);
  } else if (K) {
    fprintf(f, "  best %u simulated again on the flow network: Kendall tau %.3f against the "
               "analytic order; %s; top-1 %s\n", K, t->tau, t->tau >= 1 - 1e-12 ? "same order" : "order differs",
            t->top1_same ? "same" : "differs");
  }
}

void trace_search_print(const trace_search_table *t, gboolean json, FILE *out, FILE *summary)
{
  if (json) {
    for (guint k = 0; k < t->n_rows; k++) {
      const trace_search_candidate *c = &t->candidates[t->rows[k]];
      const sim_search_result *res = ranking_result(t, c);
      g_autoptr(GString) extra = g_string_new(NULL);
      g_string_append_printf(extra, "\"rank\":%u,\"configuration\":", k + 1);
      dt_json_string(extra, c->label);
      g_string_append_printf(extra, ",%s,\"model\":", c->settings_json);
      dt_json_string(extra, c->model);
      /* A per-device batch for the CNN families; a transformer's is the global batch. */
      if (!t->seq)
        g_string_append_printf(extra, ",\"batch\":%" G_GINT64_FORMAT, c->batch);
      g_string_append_printf(extra, ",\"global_batch\":%" G_GUINT64_FORMAT ",\"net_model\":\"%s\"",
                             t->global_batch, network(t));
      double u = mfu(t, &res->report);
      if (u >= 0 && !t->seq) {
        g_string_append(extra, ",\"mfu\":");
        dt_json_double(extra, u);
      }
      g_string_append_printf(extra, ",\"analytic_rank\":%u,\"analytic_iteration_time_s\":",
                             c->analytic_rank);
      dt_json_double(extra, c->analytic->report.iteration_time_s);
      if (res->status == SIM_SEARCH_REFUSED) {
        g_string_append(extra, ",\"refused\":");
        dt_json_string(extra, res->reason);
      }
      sim_report_print_json(out, &res->report, extra->str);
    }
    print_summary(t, summary);
    return;
  }
  int w = (int)strlen("configuration");
  for (guint k = 0; k < t->n_rows; k++)
    w = MAX(w, (int)strlen(t->candidates[t->rows[k]].label));
  gboolean train = t->train, cost = t->cost;
  fprintf(out, "%4s  %-*s %12s %14s %6s %8s %9s %8s %12s", "rank", w, "configuration",
          "iteration_ms", t->seq ? "tokens_per_s" : "samples_per_s", "mfu_%", "mem_GiB",
          "exposed_%", "analytic", "analytic_ms");
  if (train)
    fprintf(out, " %10s %8s", "train_days", "goodput");
  if (cost)
    fprintf(out, " %14s", "train_cost_usd");
  fputc('\n', out);
  for (guint k = 0; k < t->n_rows; k++) {
    const trace_search_candidate *c = &t->candidates[t->rows[k]];
    const sim_search_result *res = ranking_result(t, c);
    const sim_report *m = &res->report;
    double it = m->iteration_time_s, u = mfu(t, m);
    char mfu_text[16] = "-";
    if (u >= 0)
      g_snprintf(mfu_text, sizeof mfu_text, "%.1f", 100 * u);
    if (res->status == SIM_SEARCH_REFUSED) {
      fprintf(out, "%4u  %-*s refused on the flow network: %s\n", k + 1, w, c->label,
              res->reason);
      continue;
    }
    fprintf(out, "%4u  %-*s %12.3f %14.1f %6s %8.2f %9.1f %8u %12.3f", k + 1, w, c->label,
            it * 1e3, m->throughput_samples_per_s * (double)(t->seq ? t->seq : 1), mfu_text,
            (double)m->memory_per_device_bytes / (1 << 30),
            it > 0 ? 100 * m->exposed_comm_time_s / it : 0, c->analytic_rank,
            c->analytic->report.iteration_time_s * 1e3);
    if (train)
      fprintf(out, " %10.3f %8.4f", m->train.train_time_s / 86400, m->train.goodput);
    if (cost)
      fprintf(out, " %14.2f", m->train.train_cost_usd);
    fputc('\n', out);
  }
  print_summary(t, summary);
}

static const char *status_name(int32_t status)
{
  static const char *const names[] = {"ok", "does not fit", "refused", "not run"};
  return names[status];
}

gboolean trace_search_write_csv(const trace_search_table *t, const char *path, GError **error)
{
  g_autoptr(dt_outfile) out = dt_outfile_open(path, error);
  if (!out)
    return FALSE;
  FILE *f = dt_outfile_stream(out);
  /* Rank columns are empty where a candidate was not ranked. */
  fputs("configuration,strategy,global_batch,status,reason,analytic_rank,iteration_time_s,"
        "throughput_samples_per_s,memory_per_device_bytes,exposed_comm_time_s,flow_rank,"
        "flow_iteration_time_s,flow_throughput_samples_per_s,flow_exposed_comm_time_s\n", f);
  for (guint i = 0; i < t->n_candidates; i++) {
    const trace_search_candidate *c = &t->candidates[i];
    const sim_search_result *a = c->analytic;
    g_autoptr(GString) label = g_string_new(NULL), reason = g_string_new(NULL);
    dt_csv_field(label, c->label);
    dt_csv_field(reason, a->reason);
    fprintf(f, "%s,%s,%" G_GUINT64_FORMAT ",%s,%s,", label->str, c->strategy, t->global_batch,
            status_name(a->status), reason->str);
    if (c->analytic_rank)
      fprintf(f, "%u", c->analytic_rank);
    if (a->status == SIM_SEARCH_REFUSED)
      fputs(",,,,", f);
    else
      fprintf(f, ",%.9g,%.9g,%" G_GUINT64_FORMAT ",%.9g", a->report.iteration_time_s,
              a->report.throughput_samples_per_s, a->report.memory_per_device_bytes,
              a->report.exposed_comm_time_s);
    if (c->flow && c->flow->status != SIM_SEARCH_REFUSED) {
      const sim_report *r = &c->flow->report;
      fprintf(f, ",%u,%.9g,%.9g,%.9g\n", c->flow_rank, r->iteration_time_s,
              r->throughput_samples_per_s, r->exposed_comm_time_s);
    } else {
      fputs(",,,,\n", f);
    }
  }
  return dt_outfile_commit(out, error);
}

gboolean trace_search_write_svg(const trace_search_table *t, const char *path, GError **error)
{
  /* Throughput in tokens for transformers, samples otherwise. */
  double per = t->seq ? (double)t->seq : 1;
  double xmax = 0, ymax = 0;
  for (guint k = 0; k < t->n_ranked; k++) {
    const sim_report *r = &t->candidates[t->ranked[k]].analytic->report;
    xmax = MAX(xmax, (double)r->memory_per_device_bytes / (1 << 30));
    ymax = MAX(ymax, r->throughput_samples_per_s * per);
  }
  for (guint k = 0; k < t->n_rows; k++) {
    const sim_report *r = &ranking_result(t, &t->candidates[t->rows[k]])->report;
    xmax = MAX(xmax, (double)r->memory_per_device_bytes / (1 << 30));
    ymax = MAX(ymax, r->throughput_samples_per_s * per);
  }
  xmax = trace_svg_nice_ceiling(xmax * 1.05);
  ymax = trace_svg_nice_ceiling(ymax * 1.05);
  const double W = 760, H = 520, ox = 90, oy = 50, w = 620, h = 380;
  g_autoptr(GString) o = g_string_new(NULL);
  trace_svg_begin(o, W, H);
  g_autofree char *title = trace_svg_escaped(t->title);
  g_string_append_printf(o, "<text x=\"%.0f\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">%s</text>\n",
                         W / 2, title);
  g_string_append_printf(o, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#444\"/>\n",
                         ox, oy, w, h);
#define X(v) (ox + (v) / xmax * w)
#define Y(v) (oy + h - (v) / ymax * h)
  for (int k = 0; k <= 5; k++) {
    double xv = xmax * k / 5, yv = ymax * k / 5;
    g_string_append_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n"
                              "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">%g</text>\n",
                           X(xv), oy, X(xv), oy + h, X(xv), oy + h + 14, xv);
    g_string_append_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>\n"
                              "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%g</text>\n",
                           ox, Y(yv), ox + w, Y(yv), ox - 4, Y(yv) + 4, yv);
  }
  g_string_append_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\">memory per device (GiB)</text>\n",
                         ox + w / 2, oy + h + 34);
  g_string_append_printf(o, "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">throughput (%s/s)</text>\n",
                         ox - 60, oy + h / 2, t->seq ? "tokens" : "samples");
  /* Every ranked configuration on the analytic network, grey; the finalists on the ranking
   * network, blue; the best, red and labelled. */
  for (guint k = 0; k < t->n_ranked; k++) {
    const trace_search_candidate *c = &t->candidates[t->ranked[k]];
    const sim_report *r = &c->analytic->report;
    g_autofree char *label = trace_svg_escaped(c->label);
    g_string_append_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#999\"><title>%s</title></circle>\n",
                           X((double)r->memory_per_device_bytes / (1 << 30)),
                           Y(r->throughput_samples_per_s * per), label);
  }
  for (guint k = 0; k < t->n_rows; k++) {
    const trace_search_candidate *c = &t->candidates[t->rows[k]];
    const sim_search_result *res = ranking_result(t, c);
    if (res->status == SIM_SEARCH_REFUSED)
      continue;
    const sim_report *m = &res->report;
    g_autofree char *label = trace_svg_escaped(c->label);
    double x = X((double)m->memory_per_device_bytes / (1 << 30)),
           y = Y(m->throughput_samples_per_s * per);
    g_string_append_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\"><title>%u. %s</title></circle>\n",
                           x, y, k == 0 ? "6" : "4", k == 0 ? "#d62728" : "#1f77b4", k + 1, label);
    if (k == 0)
      g_string_append_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#d62728\">best: %s</text>\n",
                             MIN(x + 8, ox + w - 300), MAX(y - 8, oy + 12), label);
  }
#undef X
#undef Y
  g_string_append_printf(o, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\"><tspan fill=\"#999\">&#9679; %u configurations "
                            "(analytic network)</tspan>  <tspan fill=\"#1f77b4\">&#9679; best %u (%s network)</tspan>  "
                            "<tspan fill=\"#d62728\">&#9679; best</tspan></text>\n",
                         ox, H - 20, t->n_ranked, t->n_rows, network(t));
  return trace_svg_write(o, path, error);
}
