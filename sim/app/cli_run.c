/* `dtsim run`: simulate training iterations of one scenario and print the breakdown. */
#include "cli.h"
#include "jobs.h"
#include "simulate.h"
#include "strategy.h"
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
  g_autoptr(GError) error = NULL;
  if (s.jobs_file) {
    /* Several jobs on one cluster (sim/jobs.h). */
    g_autoptr(sim_jobs) jobs = sim_jobs_load(&s, &error);
    if (!jobs || !sim_jobs_simulate(&s, jobs, cmdline, &error))
      return dtsim_cli_fail("run", error);
    sim_jobs_print(stdout, &s, jobs);
    return 0;
  }
  sim_run_opts o = {.with_speedup = TRUE, .command_line = cmdline};
  sim_report r;
  if (!sim_simulate(&s, &o, &r, &error))
    return dtsim_cli_fail("run", error);
  const char *strategy = sim_scenario_strategy_name(&s);
  if (s.json) {
    g_autoptr(GString) extra = g_string_new("\"model\":");
    g_autofree char *trace = s.chakra ? g_strconcat("chakra:", s.chakra, NULL) : NULL;
    dt_json_string(extra, trace ? trace : s.model);
    g_string_append(extra, ",\"strategy\":");
    dt_json_string(extra, s.chakra ? "trace" : strategy);
    /* Transformer jobs train a global batch (--batch is not theirs): say that one. */
    if (r.transformer)
      g_string_append_printf(extra, ",\"global_batch\":%" G_GUINT64_FORMAT,
                             r.samples_per_iteration);
    else
      g_string_append_printf(extra, ",\"batch\":%" G_GINT64_FORMAT, s.batch);
    sim_report_print_json(stdout, &r, extra->str);
  } else {
    const sim_strategy *st = sim_strategy_for_scenario(&s, NULL);
    unsigned flags = st ? sim_strategy_flags_for(st, &s) : 0;
    gboolean pipeline = (flags & SIM_STRATEGY_STAGED) != 0;
    g_autofree char *title = g_strdup_printf(
        "%s, %s, batch %" G_GINT64_FORMAT " per %s, %s, %u devices (%" G_GINT64_FORMAT
        " node%s of %s)", s.model, strategy, s.batch, pipeline ? "pipeline" : "device",
        wl_precision_name(s.precision), r.devices, s.nodes, s.nodes == 1 ? "" : "s", s.system);
    if ((s.strategy->flags & SIM_STRATEGY_TRANSFORMER) != 0) {
      g_free(title);
      title = g_strdup_printf("%s, 3d (tp %" G_GINT64_FORMAT ", pp %" G_GINT64_FORMAT
                              "), %" G_GUINT64_FORMAT " samples per iteration, %s, %u devices (%"
                              G_GINT64_FORMAT " node%s of %s)", s.model, s.tp, s.pp,
                              r.samples_per_iteration, wl_precision_name(s.precision), r.devices,
                              s.nodes, s.nodes == 1 ? "" : "s", s.system);
    }
    if (s.chakra) {
      g_free(title);
      title = g_strdup_printf("Chakra trace %s, %u ranks on %u devices (%" G_GINT64_FORMAT
                              " node%s of %s)", s.chakra, r.devices, r.devices, s.nodes,
                              s.nodes == 1 ? "" : "s", s.system);
    }
    if (r.threads > 0) {
      g_free(title);
      title = g_strdup_printf("%s, chaos, one sample per thread, %s, %u threads of %s, one "
                              "iteration = one epoch", s.model, wl_precision_name(s.precision),
                              r.threads, r.device);
    }
    sim_report_print_table(stdout, &r, title);
  }
  return 0;
}
