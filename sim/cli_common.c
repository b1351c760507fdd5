/* What every subcommand shares: one-line failures with the right exit status, option parsing,
 * and reading a scenario from its file and options. */
#include "cli.h"
#include "scenario.h"
#include "util.h"

int dtsim_cli_fail(const char *cmd, const GError *error)
{
  g_autofree char *msg = dt_escape(error ? error->message : "failed");
  fprintf(stderr, "dtsim %s: %s\n", cmd, msg);
  return dt_error_exit_status(error);
}

gboolean dtsim_cli_parse(GOptionContext *ctx, const char *cmd, int *argc, char ***argv,
                         int *status)
{
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, argc, argv, &error)) {
    *status = dtsim_cli_fail(cmd, error);
    return FALSE;
  }
  return TRUE;
}

gboolean sim_scenario_from_args(sim_scenario *s, const char *command, const char *summary,
                                sim_opts_set set, int argc, char **argv, int *status)
{
  g_autofree char *param = g_strdup(set & SIM_OPTS_COLLECTIVE ? "" : "[SCENARIO.ini]");
  g_autoptr(GOptionContext) ctx = g_option_context_new(param);
  g_option_context_set_summary(ctx, summary);
  g_autoptr(sim_scenario_opts) o = sim_scenario_opts_new(ctx, set);
  if (!dtsim_cli_parse(ctx, command, &argc, &argv, status))
    return FALSE;
  g_autoptr(GError) error = NULL;
  int positional = argc - 1;
  if (positional > 1 || (positional == 1 && (set & SIM_OPTS_COLLECTIVE))) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT, "unexpected argument '%s'",
                argv[(set & SIM_OPTS_COLLECTIVE) ? 1 : 2]);
    *status = dtsim_cli_fail(command, error);
    return FALSE;
  }
  if (positional == 1 && !sim_scenario_load(s, argv[1], set, &error)) {
    *status = dtsim_cli_fail(command, error);
    return FALSE;
  }
  if (!sim_scenario_apply_options(s, o, &error)) {
    *status = dtsim_cli_fail(command, error);
    return FALSE;
  }
  return TRUE;
}
