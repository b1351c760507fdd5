/* Measuring the breakdown of an iteration on the simulated timeline (see measure.h). */
#include "measure.h"

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
