/* Measuring and printing the breakdown of an iteration (see report.h). */
#include "report.h"

#include "util.h"

#include <string.h>

typedef struct {
  sim_time_ps start, end;
} span;

/* The part of task t's run inside [lo, hi): FALSE when empty. */
static gboolean clip(const sim_exec *x, sim_task_id t, sim_time_ps lo, sim_time_ps hi, span *out)
{
  out->start = MAX(sim_exec_task_start(x, t), lo);
  out->end = MIN(sim_exec_task_end(x, t), hi);
  return out->end > out->start;
}

/* Busy spans in start order: the tasks of a stream (run one after the other, so in order and
 * disjoint) clipped to the window, or spans already clipped and sorted. */
typedef struct {
  const sim_task_id *tasks;  /* a stream's tasks, or NULL: */
  const span *spans;         /* these */
  uint32_t n, next;          /* how many; the index after `cur` */
  span cur;                  /* its next span, while `live` */
  gboolean live;
} span_run;

static void run_advance(span_run *r, const sim_exec *x, sim_time_ps lo, sim_time_ps hi)
{
  r->live = FALSE;
  for (; !r->live && r->next < r->n; r->next++) {
    if (r->tasks) {
      r->live = clip(x, r->tasks[r->next], lo, hi, &r->cur);
    } else {
      r->cur = r->spans[r->next];
      r->live = TRUE;
    }
  }
}

static gint span_cmp(gconstpointer a, gconstpointer b)
{
  const span *u = a, *v = b;
  return (u->start > v->start) - (u->start < v->start);
}

/* Communication of the probe device in [lo, hi): the length of the union of the busy spans of
 * its communication streams (all but its compute and host-copy streams) and of its
 * parameter-server pushes, and the part of that union its compute stream does not cover. The
 * union is walked in order, merging the streams' runs as it goes, so that their spans are not
 * stored (the report used to gather and sort them all, about 100 KB for a 3-D run). */
static void comm_spans(const sim_graph *g, const sim_exec *x, const sim_plan *p, sim_time_ps lo,
                       sim_time_ps hi, sim_time_ps *union_ps, sim_time_ps *exposed_ps)
{
  g_autoptr(GArray) runs = g_array_new(FALSE, TRUE, sizeof(span_run));
  for (sim_stream_id s = 0; s < sim_graph_n_streams(g); s++) {
    if (sim_graph_stream_unit(g, s) != p->probe_unit || s == p->probe_compute ||
        strcmp(sim_graph_stream_name(g, s), "h2d") == 0)
      continue;
    span_run r = {0};
    r.tasks = sim_graph_stream_tasks(g, s, &r.n);
    g_array_append_val(runs, r);
  }
  /* Parameter-server pushes of the probe device run on no stream: from gradient ready to the
   * pull of the new parameters. */
  g_autoptr(GArray) pushes = g_array_new(FALSE, FALSE, sizeof(span));
  uint32_t probe_rank = g_array_index(p->units, sim_unit_info, p->probe_unit).index;
  for (guint k = 0; k < p->ps_tasks->len; k++) {
    const sim_ps_task *pt = &g_array_index(p->ps_tasks, sim_ps_task, k);
    span v;
    if (pt->worker == probe_rank && clip(x, pt->task, lo, hi, &v))
      g_array_append_val(pushes, v);
  }
  if (pushes->len) {
    g_array_sort(pushes, span_cmp);
    span_run r = {.spans = (const span *)pushes->data, .n = pushes->len};
    g_array_append_val(runs, r);
  }
  span_run *rs = (span_run *)runs->data;
  for (guint i = 0; i < runs->len; i++)
    run_advance(&rs[i], x, lo, hi);

  uint32_t nc;
  const sim_task_id *comp = sim_graph_stream_tasks(g, p->probe_compute, &nc);
  uint32_t j = 0;   /* the first compute task that may overlap the union's current span */
  *union_ps = *exposed_ps = 0;
  span u = {0, 0};
  gboolean open = FALSE;
  for (;;) {
    span_run *first = NULL;
    for (guint i = 0; i < runs->len; i++)
      if (rs[i].live && (!first || rs[i].cur.start < first->cur.start))
        first = &rs[i];
    /* Overlapping or touching spans join the union's current span. */
    if (first && open && first->cur.start <= u.end) {
      u.end = MAX(u.end, first->cur.end);
      run_advance(first, x, lo, hi);
      continue;
    }
    if (open) {
      /* u is whole: its length, less the compute inside it. */
      sim_time_ps covered = 0;
      span c;
      while (j < nc && (!clip(x, comp[j], lo, hi, &c) || c.end <= u.start))
        j++;
      for (uint32_t k = j; k < nc; k++) {
        if (!clip(x, comp[k], lo, hi, &c))
          continue;
        if (c.start >= u.end)
          break;
        covered += MIN(u.end, c.end) - MAX(u.start, c.start);
      }
      *union_ps += u.end - u.start;
      *exposed_ps += (u.end - u.start) - covered;
    }
    if (!first)
      break;
    u = first->cur;
    open = TRUE;
    run_advance(first, x, lo, hi);
  }
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

  uint32_t n;
  const sim_task_id *tasks = sim_graph_stream_tasks(g, p->probe_compute, &n);
  sim_time_ps fwd = 0, bwd = 0, upd = 0, comp_ps = 0;
  for (uint32_t i = 0; i < n; i++) {
    span c;
    if (clip(x, tasks[i], lo, hi, &c))
      comp_ps += c.end - c.start;
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
  sim_time_ps comm_total_ps, exposed_ps;
  comm_spans(g, x, p, lo, hi, &comm_total_ps, &exposed_ps);
  r->compute_time_s = sim_time_to_s(comp_ps);
  r->comm_time_s = sim_time_to_s(comm_total_ps);
  r->exposed_comm_time_s = sim_time_to_s(exposed_ps);
  r->idle_time_s = sim_time_to_s(window - comp_ps - exposed_ps);
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
  /* Only where it was measured (against one device): never a speedup of 0. */
  if (r->speedup > 0) {
    json_double(o, "speedup", r->speedup);
    json_double(o, "scaling_efficiency", r->scaling_efficiency);
  }
  if (r->threads > 0)
    g_string_append_printf(o, "\"threads\":%u,", r->threads);
  if (r->transformer) {
    json_double(o, "tokens_per_s", r->tokens_per_s);
    json_double(o, "model_tflops_per_device", r->model_tflops_per_device);
    json_double(o, "mfu", r->mfu);
    g_string_append_printf(o, "\"memory_breakdown_bytes\":{\"weights\":%" G_GUINT64_FORMAT
                           ",\"gradients\":%" G_GUINT64_FORMAT ",\"optimizer\":%" G_GUINT64_FORMAT
                           ",\"activations\":%" G_GUINT64_FORMAT ",\"other\":%" G_GUINT64_FORMAT
                           ",\"framework_reserved\":%" G_GUINT64_FORMAT "},",
                           r->memory_weights_bytes, r->memory_gradients_bytes,
                           r->memory_optimizer_bytes, r->memory_activations_bytes,
                           r->memory_other_bytes, r->memory_framework_reserved_bytes);
  }
  if (r->symmetry_note[0]) {
    g_string_append(o, "\"symmetry\":");
    dt_json_string(o, r->symmetry_note);
    g_string_append_c(o, ',');
  }
  if (r->has_train) {
    const sim_trainrun *t = &r->train;
    g_string_append_printf(o, "\"train_iterations\":%" G_GUINT64_FORMAT ",", t->iterations);
    json_double(o, "train_time_s", t->train_time_s);
    if (t->has_cost)
      json_double(o, "train_cost_usd", t->train_cost_usd);
    json_double(o, "expected_failures", t->expected_failures);
    json_double(o, "goodput", t->goodput);
    json_double(o, "checkpoint_interval_s", t->checkpoint_interval_s);
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

/* A duration in the unit that reads best: "12.3 s", "4.56 min", "7.89 h", "10.1 days". */
static const char *duration(char buf[32], double s)
{
  if (s < 60)
    g_snprintf(buf, 32, "%.3g s", s);
  else if (s < 3600)
    g_snprintf(buf, 32, "%.3g min", s / 60);
  else if (s < 86400)
    g_snprintf(buf, 32, "%.3g h", s / 3600);
  else
    g_snprintf(buf, 32, "%.4g days", s / 86400);
  return buf;
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
            "other %.2f, framework reserved %.2f GiB\n", "memory breakdown",
            (double)r->memory_weights_bytes / (1 << 30),
            (double)r->memory_gradients_bytes / (1 << 30),
            (double)r->memory_optimizer_bytes / (1 << 30),
            (double)r->memory_activations_bytes / (1 << 30),
            (double)r->memory_other_bytes / (1 << 30),
            (double)r->memory_framework_reserved_bytes / (1 << 30));
  }
  if (r->speedup > 0 && r->threads > 0)
    fprintf(out, "  %-28s %12.2fx on %u threads (efficiency %.1f%%)\n",
            "speedup over one thread", r->speedup, r->threads, 100.0 * r->scaling_efficiency);
  else if (r->speedup > 0)
    fprintf(out, "  %-28s %12.2fx on %u devices (scaling efficiency %.1f%%)\n",
            "speedup over one device", r->speedup, r->devices, 100.0 * r->scaling_efficiency);
  if (r->symmetry_note[0])
    fprintf(out, "  %-28s %s\n", "symmetry", r->symmetry_note);
  if (r->has_train) {
    const sim_trainrun *t = &r->train;
    char wall[32], work[32], every[32];
    fprintf(out, "  %-28s %15s (%" G_GUINT64_FORMAT " iterations, %s of work)\n", "training run",
            duration(wall, t->train_time_s), t->iterations, duration(work, t->solve_time_s));
    if (t->has_cost)
      fprintf(out, "  %-28s %15.2f USD (%u devices for %.4g hours)\n", "training cost",
              t->train_cost_usd, r->devices, t->train_time_s / 3600);
    if (t->job_mtbf_s > 0)
      fprintf(out, "  %-28s %15.2f (the job fails every %s on average)\n", "expected failures",
              t->expected_failures, duration(every, t->job_mtbf_s));
    if (t->checkpoint_interval_s > 0)
      fprintf(out, "  %-28s %15s of training between checkpoints%s\n", "checkpoint interval",
              duration(every, t->checkpoint_interval_s),
              t->job_mtbf_s > 0 ? "" : " (no failures)");
    fprintf(out, "  %-28s %14.2f%% of the wall time trains\n", "goodput", 100 * t->goodput);
  }
  fprintf(out, "  %-28s %12" G_GUINT64_FORMAT " in %.3f s (%.3g events/s)\n", "simulated events",
          r->events, r->sim_wall_s, r->sim_wall_s > 0 ? (double)r->events / r->sim_wall_s : 0.0);
}
