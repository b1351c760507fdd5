/* Measuring and printing the breakdown of an iteration (see report.h). */
#include "report.h"

#include "util.h"

#include <string.h>

/* Appends to `iv` the time in [lo, hi) during which a stream's tasks are running, as pairs
 * (start, end). A stream runs its tasks one after the other, so they come sorted and disjoint. */
static void busy_append(GArray *iv, const sim_graph *g, const sim_exec *x, sim_stream_id s,
                        sim_time_ps lo, sim_time_ps hi)
{
  uint32_t n;
  const sim_task_id *tasks = sim_graph_stream_tasks(g, s, &n);
  guint at = iv->len;
  g_array_set_size(iv, at + 2 * n);
  sim_time_ps *v = &g_array_index(iv, sim_time_ps, at);
  guint k = 0;
  for (uint32_t i = 0; i < n; i++) {
    sim_time_ps a = MAX(sim_exec_task_start(x, tasks[i]), lo);
    sim_time_ps b = MIN(sim_exec_task_end(x, tasks[i]), hi);
    if (b > a) {
      v[k++] = a;
      v[k++] = b;
    }
  }
  g_array_set_size(iv, at + k);
}

static GArray *busy_intervals(const sim_graph *g, const sim_exec *x, sim_stream_id s,
                              sim_time_ps lo, sim_time_ps hi)
{
  GArray *iv = g_array_new(FALSE, FALSE, sizeof(sim_time_ps));
  busy_append(iv, g, x, s, lo, hi);
  return iv;
}

typedef struct {
  sim_time_ps start, end;
} span;

/* Sorts spans by start, stably: a merge of the runs already in order (each stream's spans are
 * one run, so a probe device's few streams make a few runs), O(n log runs). */
static void sort_spans(span *v, guint n)
{
  if (n < 2)
    return;
  g_autofree guint *bound = g_new(guint, n + 1);   /* run r is [bound[r], bound[r + 1]) */
  guint runs = 0;
  bound[runs++] = 0;
  for (guint i = 1; i < n; i++)
    if (v[i].start < v[i - 1].start)
      bound[runs++] = i;
  bound[runs] = n;
  if (runs == 1)
    return;
  g_autofree span *tmp = g_new(span, n);
  span *from = v, *to = tmp;
  while (runs > 1) {
    guint out = 0;
    for (guint r = 0; r < runs; r += 2) {
      guint a = bound[r], am = bound[r + 1], b = am, bm = r + 2 <= runs ? bound[r + 2] : am;
      guint k = a;
      while (a < am && b < bm)
        to[k++] = from[b].start < from[a].start ? from[b++] : from[a++];
      while (a < am)
        to[k++] = from[a++];
      while (b < bm)
        to[k++] = from[b++];
      bound[out++] = bound[r];
    }
    bound[out] = n;
    runs = out;
    span *t = from;
    from = to;
    to = t;
  }
  if (from != v)
    memcpy(v, from, n * sizeof *v);
}

/* The union of the busy intervals of the probe device's communication streams (all but its
 * compute and host-copy streams), sorted and disjoint. */
static GArray *comm_intervals(const sim_graph *g, const sim_exec *x, const sim_plan *p,
                              sim_time_ps lo, sim_time_ps hi)
{
  g_autoptr(GArray) all = g_array_new(FALSE, FALSE, sizeof(sim_time_ps));
  for (sim_stream_id s = 0; s < sim_graph_n_streams(g); s++) {
    if (sim_graph_stream_unit(g, s) != p->probe_unit || s == p->probe_compute ||
        strcmp(sim_graph_stream_name(g, s), "h2d") == 0)
      continue;
    busy_append(all, g, x, s, lo, hi);
  }
  /* Parameter-server pushes of the probe device run on no stream: from gradient ready to the
   * pull of the new parameters. */
  uint32_t probe_rank = g_array_index(p->units, sim_unit_info, p->probe_unit).index;
  for (guint k = 0; k < p->ps_tasks->len; k++) {
    const sim_ps_task *pt = &g_array_index(p->ps_tasks, sim_ps_task, k);
    if (pt->worker != probe_rank)
      continue;
    sim_time_ps v[2] = {MAX(sim_exec_task_start(x, pt->task), lo),
                        MIN(sim_exec_task_end(x, pt->task), hi)};
    if (v[1] > v[0])
      g_array_append_vals(all, v, 2);
  }
  span *v = (span *)all->data;
  guint n = all->len / 2, k = 0;
  sort_spans(v, n);
  /* Overlapping or touching spans become one, in place (k <= i). */
  for (guint i = 0; i < n; i++) {
    if (k > 0 && v[i].start <= v[k - 1].end)
      v[k - 1].end = MAX(v[k - 1].end, v[i].end);
    else
      v[k++] = v[i];
  }
  g_array_set_size(all, 2 * k);
  return g_steal_pointer(&all);
}

/* Length of the parts of `a` not covered by `b` (both sorted, disjoint). */
static sim_time_ps uncovered(const GArray *a, const GArray *b)
{
  const sim_time_ps *x = (const sim_time_ps *)a->data, *y = (const sim_time_ps *)b->data;
  guint na = a->len / 2, nb = b->len / 2, j = 0;
  sim_time_ps total = 0;
  for (guint i = 0; i < na; i++) {
    sim_time_ps s = x[2 * i], e = x[2 * i + 1], covered = 0;
    while (j < nb && y[2 * j + 1] <= s)
      j++;
    for (guint k = j; k < nb && y[2 * k] < e; k++)
      covered += MIN(e, y[2 * k + 1]) - MAX(s, y[2 * k]);
    total += (e - s) - covered;
  }
  return total;
}

static sim_time_ps length(const GArray *a)
{
  const sim_time_ps *x = (const sim_time_ps *)a->data;
  sim_time_ps t = 0;
  for (guint i = 0; i < a->len / 2; i++)
    t += x[2 * i + 1] - x[2 * i];
  return t;
}

void sim_report_measure(sim_report *r, const sim_plan *p, const sim_exec *x)
{
  memset(r, 0, sizeof *r);
  const sim_graph *g = p->graph;
  /* The measured window: the last iteration. */
  sim_time_ps lo = 0, hi = sim_exec_makespan(x);
  guint ni = p->iteration_end->len;
  if (ni >= 2) {
    lo = sim_exec_task_end(x, g_array_index(p->iteration_end, sim_task_id, ni - 2));
    hi = sim_exec_task_end(x, g_array_index(p->iteration_end, sim_task_id, ni - 1));
  }
  sim_time_ps window = hi - lo;
  r->iteration_time_s = sim_time_to_s(window);
  r->samples_per_iteration = p->samples_per_iteration;
  r->throughput_samples_per_s = window > 0 ? (double)p->samples_per_iteration / r->iteration_time_s : 0;
  r->devices = p->devices;
  r->memory_per_device_bytes = p->memory_per_device_bytes;

  g_autoptr(GArray) comp = busy_intervals(g, x, p->probe_compute, lo, hi);
  g_autoptr(GArray) comm = comm_intervals(g, x, p, lo, hi);
  sim_time_ps comp_ps = length(comp), comm_total_ps = length(comm);
  sim_time_ps exposed_ps = uncovered(comm, comp);
  r->compute_time_s = sim_time_to_s(comp_ps);
  r->comm_time_s = sim_time_to_s(comm_total_ps);
  r->exposed_comm_time_s = sim_time_to_s(exposed_ps);
  r->idle_time_s = sim_time_to_s(window - comp_ps - exposed_ps);

  uint32_t n;
  const sim_task_id *tasks = sim_graph_stream_tasks(g, p->probe_compute, &n);
  sim_time_ps fwd = 0, bwd = 0, upd = 0;
  for (uint32_t i = 0; i < n; i++) {
    /* Whole tasks of the measured iteration only. */
    sim_time_ps ts = sim_exec_task_start(x, tasks[i]), te = sim_exec_task_end(x, tasks[i]);
    if (ts < lo || te > hi)
      continue;
    sim_time_ps d = te - ts;
    const char *cat = sim_graph_task_category(g, tasks[i]);
    if (strcmp(cat, "forward") == 0)
      fwd += d;
    else if (strcmp(cat, "backward") == 0)
      bwd += d;
    else if (strcmp(cat, "update") == 0)
      upd += d;
  }
  r->forward_time_s = sim_time_to_s(fwd);
  r->backward_time_s = sim_time_to_s(bwd);
  r->update_time_s = sim_time_to_s(upd);
}

static void json_double(GString *o, const char *key, double v)
{
  g_string_append_printf(o, "\"%s\":", key);
  dt_json_double(o, v);
  g_string_append_c(o, ',');
}

void sim_report_print_json(FILE *out, const sim_report *r, const char *extra_json)
{
  g_autoptr(GString) o = g_string_new("{");
  json_double(o, "iteration_time_s", r->iteration_time_s);
  json_double(o, "throughput_samples_per_s", r->throughput_samples_per_s);
  json_double(o, "compute_time_s", r->compute_time_s);
  json_double(o, "comm_time_s", r->comm_time_s);
  json_double(o, "exposed_comm_time_s", r->exposed_comm_time_s);
  json_double(o, "forward_time_s", r->forward_time_s);
  json_double(o, "backward_time_s", r->backward_time_s);
  json_double(o, "update_time_s", r->update_time_s);
  g_string_append_printf(o, "\"memory_per_device_bytes\":%" G_GUINT64_FORMAT ",",
                         r->memory_per_device_bytes);
  g_string_append_printf(o, "\"devices\":%u,", r->devices);
  g_string_append_printf(o, "\"events\":%" G_GUINT64_FORMAT ",", r->events);
  json_double(o, "sim_wall_s", r->sim_wall_s);
  json_double(o, "idle_time_s", r->idle_time_s);
  g_string_append_printf(o, "\"samples_per_iteration\":%" G_GUINT64_FORMAT ",",
                         r->samples_per_iteration);
  g_string_append_printf(o, "\"memory_capacity_bytes\":%" G_GUINT64_FORMAT ",",
                         r->memory_capacity_bytes);
  json_double(o, "speedup", r->speedup);
  json_double(o, "scaling_efficiency", r->scaling_efficiency);
  if (r->threads > 0)
    g_string_append_printf(o, "\"threads\":%u,", r->threads);
  if (r->transformer) {
    json_double(o, "tokens_per_s", r->tokens_per_s);
    json_double(o, "model_tflops_per_device", r->model_tflops_per_device);
    json_double(o, "mfu", r->mfu);
    g_string_append_printf(o, "\"memory_breakdown_bytes\":{\"weights\":%" G_GUINT64_FORMAT
                           ",\"gradients\":%" G_GUINT64_FORMAT ",\"optimizer\":%" G_GUINT64_FORMAT
                           ",\"activations\":%" G_GUINT64_FORMAT ",\"other\":%" G_GUINT64_FORMAT "},",
                           r->memory_weights_bytes, r->memory_gradients_bytes,
                           r->memory_optimizer_bytes, r->memory_activations_bytes,
                           r->memory_other_bytes);
  }
  if (extra_json && *extra_json)
    g_string_append_printf(o, "%s,", extra_json);
  g_string_truncate(o, o->len - 1);
  g_string_append(o, "}\n");
  fputs(o->str, out);
}

static void row_ms(FILE *out, const char *label, double s, double total)
{
  fprintf(out, "  %-28s %12.3f ms %6.1f%%\n", label, s * 1e3, total > 0 ? 100.0 * s / total : 0);
}

void sim_report_print_table(FILE *out, const sim_report *r, const char *title)
{
  double it = r->iteration_time_s;
  fprintf(out, "%s\n", title);
  fprintf(out, "  %-28s %12.3f ms\n", "iteration time", it * 1e3);
  row_ms(out, "  compute", r->compute_time_s, it);
  row_ms(out, "  exposed communication", r->exposed_comm_time_s, it);
  row_ms(out, "  idle (bubbles, waits)", r->idle_time_s, it);
  fprintf(out, "  %-28s %12.3f ms\n", "communication (total)", r->comm_time_s * 1e3);
  fprintf(out, "  %-28s %12.3f ms\n", "forward", r->forward_time_s * 1e3);
  fprintf(out, "  %-28s %12.3f ms\n", "backward", r->backward_time_s * 1e3);
  fprintf(out, "  %-28s %12.3f ms\n", "optimizer update", r->update_time_s * 1e3);
  fprintf(out, "  %-28s %12.1f samples/s (%" G_GUINT64_FORMAT " samples per iteration)\n",
          "throughput", r->throughput_samples_per_s, r->samples_per_iteration);
  fprintf(out, "  %-28s %12.2f GiB", "memory per device",
          (double)r->memory_per_device_bytes / (1 << 30));
  if (r->memory_capacity_bytes) {
    fprintf(out, " of %.2f GiB%s", (double)r->memory_capacity_bytes / (1 << 30),
            r->memory_per_device_bytes > r->memory_capacity_bytes ? "  ** DOES NOT FIT **" : "");
  }
  fputc('\n', out);
  if (r->transformer) {
    fprintf(out, "  %-28s %12.4g tokens/s, %.1f model TFLOP/s per device, MFU %.1f%%\n",
            "throughput (tokens)", r->tokens_per_s, r->model_tflops_per_device, 100.0 * r->mfu);
    fprintf(out, "  %-28s weights %.2f, gradients %.2f, optimizer %.2f, activations %.2f, "
            "other %.2f GiB\n", "memory breakdown", (double)r->memory_weights_bytes / (1 << 30),
            (double)r->memory_gradients_bytes / (1 << 30),
            (double)r->memory_optimizer_bytes / (1 << 30),
            (double)r->memory_activations_bytes / (1 << 30),
            (double)r->memory_other_bytes / (1 << 30));
  }
  if (r->speedup > 0 && r->threads > 0)
    fprintf(out, "  %-28s %12.2fx on %u threads (efficiency %.1f%%)\n",
            "speedup over one thread", r->speedup, r->threads, 100.0 * r->scaling_efficiency);
  else if (r->speedup > 0)
    fprintf(out, "  %-28s %12.2fx on %u devices (scaling efficiency %.1f%%)\n",
            "speedup over one device", r->speedup, r->devices, 100.0 * r->scaling_efficiency);
  fprintf(out, "  %-28s %12" G_GUINT64_FORMAT " in %.3f s (%.3g events/s)\n", "simulated events",
          r->events, r->sim_wall_s, r->sim_wall_s > 0 ? (double)r->events / r->sim_wall_s : 0.0);
}
