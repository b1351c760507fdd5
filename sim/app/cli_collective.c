/* `dtsim collective`: one collective (or a sweep over sizes) on a modeled cluster, reported as
 * nccl-tests does (time, algbw = bytes / time, busbw = algbw x the operation's bus factor), and
 * `dtsim list algorithms`: the registry of comm/coll. */
#include "cli.h"
#include "collective.h"
#include "simulate.h"
#include "coll.h"
#include "chrome.h"
#include "devices.h"
#include "util.h"

#include <math.h>
#include <string.h>

/* ---- dtsim list algorithms ---------------------------------------------------------------- */

int dtsim_list_algorithms(FILE *out, gboolean json)
{
  if (!json)
    fprintf(out, "%-19s %-52s  %s\n", "NAME", "OPERATIONS", "DESCRIPTION");
  for (size_t i = 0; i < comm_coll_algorithm_count(); i++) {
    const comm_coll_algorithm *a = comm_coll_algorithm_at(i);
    g_autoptr(GString) ops = g_string_new(NULL);
    for (int op = 0; op < COMM_COLL_N_OPS; op++)
      if (comm_coll_algorithm_supports(a, (comm_coll_op)op))
        g_string_append_printf(ops, "%s%s", ops->len ? "," : "", comm_coll_op_name(op));
    if (!json) {
      fprintf(out, "%-19s %-52s  %s\n", comm_coll_algorithm_name(a), ops->str,
              comm_coll_algorithm_description(a));
      continue;
    }
    g_autoptr(GString) o = g_string_new("{");
    dt_json_key(o, "name");
    dt_json_string(o, comm_coll_algorithm_name(a));
    dt_json_key(o, "operations");
    g_string_append_c(o, '[');
    for (int op = 0; op < COMM_COLL_N_OPS; op++)
      if (comm_coll_algorithm_supports(a, (comm_coll_op)op)) {
        dt_json_next(o);
        dt_json_string(o, comm_coll_op_name(op));
      }
    g_string_append_c(o, ']');
    dt_json_key(o, "description");
    dt_json_string(o, comm_coll_algorithm_description(a));
    g_string_append_c(o, '}');
    fprintf(out, "%s\n", o->str);
  }
  return 0;
}

/* ---- dtsim collective ---------------------------------------------------------------------- */

/* One row per size, the JSON keys as columns; numbers in the C locale's form. */
static gboolean write_csv(const char *path, const sim_scenario *s, const sim_collective *c,
                          const sim_collective_result *res, guint n_sizes, GError **error)
{
  g_autoptr(dt_outfile) out = dt_outfile_open(path, error);
  if (!out)
    return FALSE;
  uint32_t n = comm_coll_group_size(c->group);
  double factor = comm_coll_busbw_factor(s->coll_op, n);
  g_autoptr(GString) csv = g_string_new("op,algorithm,bytes,ranks,nodes,system,topology,"
                                        "net_model,time_s,algbw_Bps,busbw_Bps,flows\n");
  for (guint i = 0; i < n_sizes; i++) {
    double t_s = sim_time_to_s(res[i].time_ps);
    double algbw = t_s > 0 ? (double)res[i].bytes / t_s : 0;
    char num[3][G_ASCII_DTOSTR_BUF_SIZE];
    g_ascii_formatd(num[0], sizeof num[0], "%.9g", t_s);
    g_ascii_formatd(num[1], sizeof num[1], "%.9g", algbw);
    g_ascii_formatd(num[2], sizeof num[2], "%.9g", algbw * factor);
    g_string_append_printf(csv, "%s,", comm_coll_op_name(s->coll_op));
    dt_csv_field(csv, res[i].algorithm);
    g_string_append_printf(csv, ",%" G_GUINT64_FORMAT ",%u,%u,", res[i].bytes, n,
                           comm_topology_nodes(c->topology));
    dt_csv_field(csv, s->system);
    g_string_append_printf(csv, ",%s,%s,%s,%s,%s,%" G_GUINT64_FORMAT "\n",
                           comm_topology_kind(c->topology), comm_net_model_name(s->net_model),
                           num[0], num[1], num[2], res[i].flows);
  }
  fputs(csv->str, dt_outfile_stream(out));
  return dt_outfile_commit(out, error);
}

int dtsim_cmd_collective(int argc, char **argv)
{
  const char *cmd = "collective";
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  int status = 0;
  if (!sim_scenario_from_args(&s, cmd,
                              "One collective (or one per size) on a modeled cluster, reported "
                              "as nccl-tests does.", SIM_CMD_COLLECTIVE, argc, argv, &status))
    return status;
  g_autoptr(GError) error = NULL;
  g_auto(sim_collective) c;
  if (!sim_collective_prepare(&s, &c, &error) ||
      (s.csv && !dt_outfile_check(s.csv, sim_scenario_where(&s, "csv"), &error)))
    return dtsim_cli_fail(cmd, error);
  g_autofree char *cmdline = g_strjoinv(" ", argv);
  c.command_line = cmdline;
  /* Everything is computed before anything is printed, so an error leaves no partial table. */
  guint n_sizes = s.coll_bytes->len;
  g_autofree sim_collective_result *res = g_new0(sim_collective_result, n_sizes);
  for (guint i = 0; i < n_sizes; i++)
    if (!sim_collective_run(&s, &c, g_array_index(s.coll_bytes, uint64_t, i), &res[i], &error))
      return dtsim_cli_fail(cmd, error);
  if (s.csv && !write_csv(s.csv, &s, &c, res, n_sizes, &error))
    return dtsim_cli_fail(cmd, error);

  uint32_t n = comm_coll_group_size(c.group);
  const comm_topology *topo = c.topology;
  double factor = comm_coll_busbw_factor(s.coll_op, n);
  const char *model_name = comm_net_model_name(s.net_model);
  const char *op = comm_coll_op_name(s.coll_op);
  if (!s.json) {
    printf("# %s on %u ranks (%u nodes x %u), %s, %s network, %s model\n", op, n,
           comm_topology_nodes(topo), comm_topology_devices_per_node(topo), s.system,
           comm_topology_kind(topo), model_name);
    printf("%14s  %-19s %14s %12s %12s %10s\n", "bytes", "algorithm", "time_us", "algbw_GBps",
           "busbw_GBps", "flows");
  }
  for (guint i = 0; i < n_sizes; i++) {
    uint64_t bytes = res[i].bytes;
    double t_s = sim_time_to_s(res[i].time_ps);
    double algbw = t_s > 0 ? (double)bytes / t_s : 0;
    double busbw = algbw * factor;
    if (!s.json) {
      printf("%14" G_GUINT64_FORMAT "  %-19s %14.3f %12.3f %12.3f %10" G_GUINT64_FORMAT "\n",
             bytes, res[i].algorithm, t_s * 1e6, algbw / 1e9, busbw / 1e9, res[i].flows);
      continue;
    }
    g_autoptr(GString) o = g_string_new("{\"op\":");
    dt_json_string(o, op);
    g_string_append(o, ",\"algorithm\":");
    dt_json_string(o, res[i].algorithm);
    g_string_append_printf(o, ",\"bytes\":%" G_GUINT64_FORMAT ",\"ranks\":%u,\"nodes\":%u",
                           bytes, n, comm_topology_nodes(topo));
    g_string_append(o, ",\"system\":");
    dt_json_string(o, s.system);
    g_string_append(o, ",\"topology\":");
    dt_json_string(o, comm_topology_kind(topo));
    g_string_append(o, ",\"net_model\":");
    dt_json_string(o, model_name);
    g_string_append(o, ",\"time_s\":");
    dt_json_double(o, t_s);
    g_string_append(o, ",\"algbw_Bps\":");
    dt_json_double(o, algbw);
    g_string_append(o, ",\"busbw_Bps\":");
    dt_json_double(o, busbw);
    g_string_append_printf(o, ",\"flows\":%" G_GUINT64_FORMAT ",\"peak_flows\":%"
                           G_GUINT64_FORMAT ",\"events\":%" G_GUINT64_FORMAT ",\"sim_wall_s\":",
                           res[i].flows, res[i].peak_flows, res[i].events);
    dt_json_double(o, res[i].wall_s);
    g_string_append(o, "}\n");
    fputs(o->str, stdout);
  }
  return 0;
}
