/* Link load over a run and its views (see linkload.h). */
#include "linkload.h"
#include "svg.h"

#include "util.h"

#include <math.h>
#include <string.h>

typedef struct {
  uint32_t link;
  sim_time_ps start_ps, end_ps;
  double bytes;
} record;

struct trace_linkload {
  uint32_t n_links;
  double *bytes;              /* per link, total */
  GArray *records;            /* record */
  uint64_t max_records;
  gboolean truncated;
  /* Records by link, made on first use after the run: order[first[l] .. first[l + 1]). */
  uint64_t *first;
  uint32_t *order;
};

trace_linkload *trace_linkload_new(uint32_t n_links, uint64_t max_records)
{
  trace_linkload *ll = g_new0(trace_linkload, 1);
  ll->n_links = n_links;
  ll->bytes = g_new0(double, MAX(n_links, 1));
  ll->records = g_array_new(FALSE, FALSE, sizeof(record));
  ll->max_records = MIN(max_records, (uint64_t)UINT32_MAX);
  return ll;
}

void trace_linkload_free(trace_linkload *ll)
{
  if (!ll)
    return;
  g_free(ll->bytes);
  g_array_free(ll->records, TRUE);
  g_free(ll->first);
  g_free(ll->order);
  g_free(ll);
}

void trace_linkload_flow(void *user, const uint32_t *links, uint32_t n, sim_time_ps start_ps,
                         sim_time_ps end_ps, uint64_t bytes)
{
  trace_linkload *ll = user;
  g_return_if_fail(ll->first == NULL);   /* no flows after the views were made */
  for (uint32_t i = 0; i < n; i++) {
    if (links[i] >= ll->n_links)
      continue;
    ll->bytes[links[i]] += (double)bytes;
    if (ll->records->len >= ll->max_records) {
      ll->truncated = TRUE;
      continue;
    }
    record r = {links[i], MIN(start_ps, end_ps), end_ps, (double)bytes};
    g_array_append_val(ll->records, r);
  }
}

double trace_linkload_bytes(const trace_linkload *ll, uint32_t link)
{
  return link < ll->n_links ? ll->bytes[link] : 0;
}

gboolean trace_linkload_truncated(const trace_linkload *ll) { return ll->truncated; }

/* Counting sort of the records by link (stable: in the order they ended). */
static void index_records(trace_linkload *ll)
{
  if (ll->first)
    return;
  ll->first = g_new0(uint64_t, (gsize)ll->n_links + 1);
  ll->order = g_new(uint32_t, MAX(ll->records->len, 1));
  const record *r = (const record *)(gconstpointer)ll->records->data;
  for (guint i = 0; i < ll->records->len; i++)
    ll->first[r[i].link + 1]++;
  for (uint32_t l = 0; l < ll->n_links; l++)
    ll->first[l + 1] += ll->first[l];
  g_autofree uint64_t *fill = g_memdup2(ll->first, sizeof(uint64_t) * ll->n_links);
  for (guint i = 0; i < ll->records->len; i++)
    ll->order[fill[r[i].link]++] = i;
}

double trace_linkload_bytes_between(const trace_linkload *ll, uint32_t link, sim_time_ps a,
                                    sim_time_ps b)
{
  if (link >= ll->n_links || b <= a)
    return 0;
  index_records((trace_linkload *)ll);
  const record *rs = (const record *)(gconstpointer)ll->records->data;
  double sum = 0;
  for (uint64_t k = ll->first[link]; k < ll->first[link + 1]; k++) {
    const record *r = &rs[ll->order[k]];
    if (r->end_ps == r->start_ps) {
      sum += r->start_ps >= a && r->start_ps < b ? r->bytes : 0;
      continue;
    }
    sim_time_ps lo = MAX(a, r->start_ps), hi = MIN(b, r->end_ps);
    if (hi > lo)
      sum += r->bytes * (double)(hi - lo) / (double)(r->end_ps - r->start_ps);
  }
  return sum;
}

typedef struct {
  uint32_t link;
  double bytes;
} ranked;

static gint by_bytes(gconstpointer a, gconstpointer b)
{
  const ranked *x = a, *y = b;
  if (x->bytes != y->bytes)
    return x->bytes > y->bytes ? -1 : 1;
  return (x->link > y->link) - (x->link < y->link);
}

/* The links that carried something, most bytes first (ties: lower id). */
static GArray *ranked_links(const trace_linkload *ll)
{
  GArray *a = g_array_new(FALSE, FALSE, sizeof(ranked));
  for (uint32_t l = 0; l < ll->n_links; l++)
    if (ll->bytes[l] > 0) {
      ranked r = {l, ll->bytes[l]};
      g_array_append_val(a, r);
    }
  g_array_sort(a, by_bytes);
  return a;
}

uint32_t trace_linkload_busiest(const trace_linkload *ll, uint32_t k, uint32_t *out)
{
  g_autoptr(GArray) a = ranked_links(ll);
  uint32_t n = MIN(k, a->len);
  for (uint32_t i = 0; i < n; i++)
    out[i] = g_array_index(a, ranked, i).link;
  return n;
}

typedef struct {
  sim_time_ps at;
  double delta_Bps;
  int delta_flows;
} step;

static gint by_time(gconstpointer a, gconstpointer b)
{
  const step *x = a, *y = b;
  return (x->at > y->at) - (x->at < y->at);
}

void trace_linkload_counters(const trace_linkload *ll, trace_chrome *t, sim_engine *engine,
                             const char *proc_name, const uint32_t *links, uint32_t n,
                             const trace_link_info *info)
{
  if (n == 0)
    return;
  index_records((trace_linkload *)ll);
  sim_proc_id proc = sim_engine_add_proc(engine, SIM_PROC_OTHER, proc_name, -1);
  const record *rs = (const record *)(gconstpointer)ll->records->data;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t l = links[i];
    g_autofree char *lname = info->name(info->user, l);
    g_autofree char *counter = g_strdup_printf("%s GB/s", lname);
    g_autoptr(GArray) steps = g_array_new(FALSE, FALSE, sizeof(step));
    for (uint64_t k = ll->first[l]; k < ll->first[l + 1]; k++) {
      const record *r = &rs[ll->order[k]];
      if (r->end_ps <= r->start_ps)
        continue;
      double Bps = r->bytes / ((double)(r->end_ps - r->start_ps) * 1e-12);
      step up = {r->start_ps, Bps, 1}, down = {r->end_ps, -Bps, -1};
      g_array_append_val(steps, up);
      g_array_append_val(steps, down);
    }
    g_array_sort(steps, by_time);
    double rate = 0;
    int flows = 0;
    for (guint k = 0; k < steps->len;) {
      sim_time_ps at = g_array_index(steps, step, k).at;
      for (; k < steps->len && g_array_index(steps, step, k).at == at; k++) {
        rate += g_array_index(steps, step, k).delta_Bps;
        flows += g_array_index(steps, step, k).delta_flows;
      }
      /* Sums of doubles leave crumbs when the last flow leaves. */
      if (flows == 0 || rate < 0)
        rate = 0;
      trace_chrome_counter_at(t, proc, counter, at, rate / 1e9);
    }
  }
}

/* White at 0, yellow at half the capacity, red at all of it, dark red past it. */
static void heat_colour(double u, char out[8])
{
  double r, g, b;
  if (u <= 0) {
    r = g = b = 255;
  } else if (u <= 0.5) {
    double x = u / 0.5;
    r = 255;
    g = 255 - 35 * x;
    b = 255 * (1 - x);
  } else if (u <= 1.0) {
    double x = (u - 0.5) / 0.5;
    r = 255 - 55 * x;
    g = 220 * (1 - x);
    b = 0;
  } else {
    r = 120;
    g = b = 0;
  }
  g_snprintf(out, 8, "#%02x%02x%02x", (unsigned)lround(r), (unsigned)lround(g),
             (unsigned)lround(b));
}

static const char *const tiers[] = {"nvlink", "pcie", "host", "nic", "rail", "leaf", "spine",
                                    "network"};

gboolean trace_linkload_write_svg(const trace_linkload *ll, const char *path, const char *title,
                                  sim_time_ps end_ps, uint32_t bins, uint32_t rows_per_tier,
                                  const trace_link_info *info, GError **error)
{
  g_return_val_if_fail(bins > 0 && end_ps > 0, FALSE);
  g_autoptr(GArray) all = ranked_links(ll);
  /* Rows: each tier's busiest links, tiers in order. */
  typedef struct {
    uint32_t link;
    int tier;                 /* index in tiers, or -1 for a tier header */
  } row;
  g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(row));
  for (int k = 0; k < (int)G_N_ELEMENTS(tiers); k++) {
    uint32_t taken = 0;
    for (guint i = 0; i < all->len && taken < rows_per_tier; i++) {
      uint32_t l = g_array_index(all, ranked, i).link;
      if (strcmp(info->tier(info->user, l), tiers[k]) != 0)
        continue;
      if (taken++ == 0) {
        row h = {0, -1 - k};
        g_array_append_val(rows, h);
      }
      row r = {l, k};
      g_array_append_val(rows, r);
    }
  }
  const double label_w = 260, cell_w = 720.0 / bins, row_h = 12, top = 56;
  double W = label_w + 720 + 40, H = top + rows->len * row_h + 80;
  g_autoptr(GString) o = g_string_new(NULL);
  trace_svg_begin(o, W, H);
  g_autofree char *etitle = trace_svg_escaped(title);
  g_string_append_printf(o, "<text x=\"%.0f\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">%s"
                            "</text>\n", W / 2, etitle);
  g_string_append_printf(o, "<text x=\"%.0f\" y=\"40\" text-anchor=\"middle\" font-size=\"11\">"
                            "link utilization over time (bytes carried over capacity x interval); "
                            "the busiest %u links of each tier</text>\n", W / 2, rows_per_tier);
  double ms = (double)end_ps * 1e-9;
  for (guint i = 0; i < rows->len; i++) {
    const row *r = &g_array_index(rows, row, i);
    double y = top + i * row_h;
    if (r->tier < 0) {
      g_string_append_printf(o, "<text x=\"4\" y=\"%.1f\" font-size=\"11\" font-weight=\"bold\">"
                                "%s</text>\n", y + row_h - 2, tiers[-1 - r->tier]);
      continue;
    }
    g_autofree char *name = info->name(info->user, r->link);
    g_autofree char *ename = trace_svg_escaped(name);
    g_string_append_printf(o, "<text x=\"%.0f\" y=\"%.1f\" font-size=\"9\" text-anchor=\"end\">%s"
                              "</text>\n", label_w - 4, y + row_h - 3, ename);
    double cap = info->Bps(info->user, r->link);
    for (uint32_t b = 0; b < bins; b++) {
      sim_time_ps a = (sim_time_ps)((double)end_ps * b / bins);
      sim_time_ps z = (sim_time_ps)((double)end_ps * (b + 1) / bins);
      double bytes = trace_linkload_bytes_between(ll, r->link, a, z);
      double u = cap > 0 && z > a ? bytes / (cap * (double)(z - a) * 1e-12) : 0;
      if (u <= 0)
        continue;
      char colour[8];
      heat_colour(u, colour);
      g_string_append_printf(o, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.0f\" "
                                "fill=\"%s\"><title>%s, %.3f-%.3f ms: %.0f%%</title></rect>\n",
                             label_w + b * cell_w, y, cell_w + 0.05, row_h - 1, colour, ename,
                             ms * b / bins, ms * (b + 1) / bins, 100 * u);
    }
  }
  double yb = top + rows->len * row_h;
  g_string_append_printf(o, "<rect x=\"%.0f\" y=\"%.0f\" width=\"720\" height=\"%.0f\" fill=\"none\" "
                            "stroke=\"#444\"/>\n", label_w, top, rows->len * row_h);
  for (int k = 0; k <= 5; k++)
    g_string_append_printf(o, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">"
                              "%.3g</text>\n", label_w + 720.0 * k / 5, yb + 14, ms * k / 5);
  g_string_append_printf(o, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\">"
                            "time (ms)</text>\n", label_w + 360, yb + 30);
  /* Legend: 0, 50, 100, over 100%. */
  static const double marks[] = {0.0001, 0.25, 0.5, 0.75, 1.0, 1.5};
  for (guint k = 0; k < G_N_ELEMENTS(marks); k++) {
    char colour[8];
    heat_colour(marks[k], colour);
    g_string_append_printf(o, "<rect x=\"%.0f\" y=\"%.0f\" width=\"40\" height=\"10\" fill=\"%s\" "
                              "stroke=\"#999\"/><text x=\"%.0f\" y=\"%.0f\" font-size=\"9\" "
                              "text-anchor=\"middle\">%s</text>\n", label_w + k * 60.0,
                           yb + 42, colour, label_w + k * 60.0 + 20, yb + 64,
                           k == 0 ? "&gt;0%" : k == 5 ? "&gt;100%"
                                             : k == 1 ? "25%" : k == 2 ? "50%" : k == 3 ? "75%"
                                                                                   : "100%");
  }
  if (ll->truncated)
    g_string_append_printf(o, "<text x=\"4\" y=\"%.0f\" font-size=\"10\" fill=\"#d62728\">"
                              "partial: too many flows were recorded</text>\n", H - 6);
  return trace_svg_write(o, path, error);
}
