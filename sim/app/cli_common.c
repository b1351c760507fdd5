/* What every subcommand shares: one-line failures with the right exit status, option parsing,
 * and reading a scenario from its file and options. */
#include "cli.h"
#include "scenario.h"
#include "util.h"

int dtsim_cli_fail(const char *cmd, const GError *error)
{
  g_autofree char *msg = dt_message(error ? error->message : "failed");
  fprintf(stderr, "dtsim %s: %s\n", cmd, msg);
  return dt_error_exit_status(error);
}

gboolean dtsim_cli_parse(GOptionContext *ctx, const char *cmd, int *argc, char ***argv,
                         int *status)
{
  g_autoptr(GError) error = NULL;
  if (!dt_args_check_repeats(*argc, *argv, NULL, &error) ||
      !g_option_context_parse(ctx, argc, argv, &error)) {
    *status = dtsim_cli_fail(cmd, error);
    return FALSE;
  }
  return TRUE;
}

gboolean sim_scenario_from_args(sim_scenario *s, const char *command, const char *summary,
                                unsigned set, int argc, char **argv, int *status)
{
  g_autoptr(GError) error = NULL;
  sim_command_line cl = {.set = set, .summary = summary};
  if (!sim_scenario_parse_args(s, &cl, argc, argv, &error)) {
    *status = dtsim_cli_fail(command, error);
    return FALSE;
  }
  return TRUE;
}
