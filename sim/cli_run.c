/* `dtsim run`: simulate training iterations of one scenario and print the breakdown. */
#include "cli.h"
#include "simulate.h"
#include "util.h"

#include <string.h>

int dtsim_cmd_run(int argc, char **argv)
{
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  int status = 0;
  g_autofree char *cmdline = g_strjoinv(" ", argv);
  if (!sim_scenario_from_args(&s, "run", "Simulate training iterations and print a breakdown.",
                              SIM_CMD_RUN, argc, argv, &status))
    return status;
  sim_run_opts o = {.with_speedup = TRUE, .command_line = cmdline};
  sim_report r;
  g_autoptr(GError) error = NULL;
  if (!sim_simulate(&s, &o, &r, &error))
    return dtsim_cli_fail("run", error);
  const char *strategy = sim_scenario_strategy_name(&s);
  if (s.json) {
    g_autoptr(GString) extra = g_string_new("\"model\":");
    dt_json_string(extra, s.model);
    g_string_append(extra, ",\"strategy\":");
    dt_json_string(extra, strategy);
    /* Transformer jobs train a global batch (--batch is not theirs): say that one. */
    if (r.transformer)
      g_string_append_printf(extra, ",\"global_batch\":%" G_GUINT64_FORMAT,
                             r.samples_per_iteration);
    else
      g_string_append_printf(extra, ",\"batch\":%" G_GINT64_FORMAT, s.batch);
    sim_report_print_json(stdout, &r, extra->str);
  } else {
    gboolean pipeline = g_str_equal(strategy, "mp") || g_str_equal(strategy, "pp") ||
                        (g_str_equal(strategy, "hybrid") && s.hybrid == SIM_HYBRID_DP_PP);
    g_autofree char *title = g_strdup_printf(
        "%s, %s, batch %" G_GINT64_FORMAT " per %s, %s, %u devices (%" G_GINT64_FORMAT
        " node%s of %s)", s.model, strategy, s.batch, pipeline ? "pipeline" : "device",
        wl_precision_name(s.precision), r.devices, s.nodes, s.nodes == 1 ? "" : "s", s.system);
    if (strcmp(strategy, "3d") == 0) {
      g_free(title);
      title = g_strdup_printf("%s, 3d (tp %" G_GINT64_FORMAT ", pp %" G_GINT64_FORMAT
                              "), %" G_GUINT64_FORMAT " samples per iteration, %s, %u devices (%"
                              G_GINT64_FORMAT " node%s of %s)", s.model, s.tp, s.pp,
                              r.samples_per_iteration, wl_precision_name(s.precision), r.devices,
                              s.nodes, s.nodes == 1 ? "" : "s", s.system);
    }
    if (r.threads > 0) {
      g_free(title);
      title = g_strdup_printf("%s, chaos, one sample per thread, %s, %u threads of %s, one "
                              "iteration = one epoch", s.model, wl_precision_name(s.precision),
                              r.threads, s.device);
    }
    sim_report_print_table(stdout, &r, title);
  }
  return 0;
}
