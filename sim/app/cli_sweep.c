/* `dtsim sweep`: a scenario over lists of device counts, strategies, algorithms and batches. */
#include "cli.h"
#include "sweep.h"
#include "util.h"

#include <string.h>
#include <unistd.h>

static void progress(guint done, guint total)
{
  const int width = 30;
  int filled = total ? (int)((uint64_t)done * width / total) : width;
  fprintf(stderr, "\r[%.*s%*s] %u/%u", filled, "##############################", width - filled, "",
          done, total);
  if (done == total)
    fputs("\r\033[K", stderr);
  fflush(stderr);
}

int dtsim_cmd_sweep(int argc, char **argv)
{
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  int status = 0;
  if (!sim_scenario_from_args(&s, "sweep",
                              "Simulate a scenario over lists of device counts (--devices), "
                              "strategies, allreduce algorithms and batches.",
                              SIM_CMD_SWEEP, argc, argv, &status))
    return status;
  g_autoptr(GError) error = NULL;
  if (s.trace) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                "--trace: a sweep writes no trace; run the point you want with 'dtsim run'");
    return dtsim_cli_fail("sweep", error);
  }
  if (s.chakra_out) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                "--chakra-out: a sweep writes no Chakra traces; run the point you want with "
                "'dtsim run'");
    return dtsim_cli_fail("sweep", error);
  }
  if (s.link_heatmap) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT, "%s: a sweep draws no heat map; run the point "
                "you want with 'dtsim run'", sim_scenario_where(&s, "link-heatmap"));
    return dtsim_cli_fail("sweep", error);
  }
  g_autoptr(GPtrArray) points = sim_sweep_expand(&s, &error);
  if (!points || (s.csv && !dt_outfile_check(s.csv, "--csv", &error)) ||
      (s.plot && !dt_outfile_check(s.plot, "--plot", &error)))
    return dtsim_cli_fail("sweep", error);
  g_autofree sim_report *reports = g_new0(sim_report, points->len);
  gboolean tty = isatty(STDERR_FILENO);
  for (guint i = 0; i < points->len; i++) {
    if (tty)
      progress(i, points->len);
    if (!sim_sweep_run_point(points->pdata[i], &reports[i], &error)) {
      if (tty)
        fputs("\r\033[K", stderr);
      g_prefix_error(&error, "%s, %" G_GUINT64_FORMAT " devices: ",
                     ((sim_sweep_point *)points->pdata[i])->variant,
                     ((sim_sweep_point *)points->pdata[i])->devices);
      return dtsim_cli_fail("sweep", error);
    }
  }
  if (!sim_sweep_add_speedups(points, reports, &error))
    return dtsim_cli_fail("sweep", error);
  if (tty)
    progress(points->len, points->len);
  g_autoptr(GArray) rows = sim_sweep_rows(points);
  const trace_sweep_row *row = (const trace_sweep_row *)(gpointer)rows->data;
  if (s.csv && !trace_sweep_write_csv(s.csv, row, rows->len, reports, &error))
    return dtsim_cli_fail("sweep", error);
  if (s.plot) {
    g_autofree char *title = g_strdup_printf("%s, %s, %s scaling", s.model, s.system,
                                             s.scaling == SIM_SCALING_STRONG ? "strong" : "weak");
    if (!trace_sweep_write_svg(s.plot, title, row, rows->len, reports, &error))
      return dtsim_cli_fail("sweep", error);
  }
  if (s.json)
    trace_sweep_print_json(stdout, row, rows->len, reports);
  else
    trace_sweep_print_table(stdout, row, rows->len, reports);
  return 0;
}
