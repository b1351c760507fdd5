/* The timeline of a run as CSV (see timeline.h). */
#include "timeline.h"

#include "util.h"

gboolean trace_timeline_write_csv(const char *path, const sim_graph *g, const sim_exec *x,
                                  GError **error)
{
  g_autoptr(dt_outfile) out = dt_outfile_open(path, error);
  if (!out)
    return FALSE;
  FILE *f = dt_outfile_stream(out);
  fputs("task,name,kind,category,unit,stream,start_s,end_s,duration_s,bytes,flops\n", f);
  static const char *const kinds[] = {"compute", "delay", "transfer", "collective", "custom"};
  for (sim_task_id t = 0; t < sim_graph_n_tasks(g); t++) {
    const sim_stream_id *m;
    uint32_t nm = sim_graph_task_members(g, t, &m);
    const char *unit = nm ? sim_graph_unit_name(g, sim_graph_stream_unit(g, m[0])) : "";
    const char *stream = nm ? sim_graph_stream_name(g, m[0]) : "";
    sim_time_ps a = sim_exec_task_start(x, t), b = sim_exec_task_end(x, t);
    /* Names may hold commas ("gpu2 (replica 1, stage 0)") or quotes: RFC 4180 fields. */
    g_autoptr(GString) row = g_string_new(NULL);
    g_string_append_printf(row, "%u,", t);
    dt_csv_field(row, sim_graph_task_name(g, t));
    g_string_append_printf(row, ",%s,", kinds[sim_graph_task_kind(g, t)]);
    dt_csv_field(row, sim_graph_task_category(g, t));
    g_string_append_c(row, ',');
    dt_csv_field(row, unit);
    g_string_append_c(row, ',');
    dt_csv_field(row, stream);
    fprintf(f, "%s,%.12f,%.12f,%.12f,%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT "\n", row->str,
            sim_time_to_s(a), sim_time_to_s(b), sim_time_to_s(b - a), sim_graph_task_bytes(g, t),
            sim_graph_task_flops(g, t));
  }
  return dt_outfile_commit(out, error);
}
