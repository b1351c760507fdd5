/* The dtsim command line: one function per subcommand, each reading its options through the
 * one front end (sim_scenario_parse_args(), scenario.h; `list` alone has no shared key) and
 * returning the process exit status (0 success, 2 bad input, 1 internal error). Every failure
 * prints exactly one line on stderr through dtsim_cli_fail(). */
#ifndef DTSIM_CLI_H
#define DTSIM_CLI_H

#include <glib.h>
#include <stdio.h>

typedef int (*dtsim_command_fn)(int argc, char **argv);

/* Subcommands (argv[0] is the subcommand name). */
int dtsim_cmd_run(int argc, char **argv);
int dtsim_cmd_sweep(int argc, char **argv);
int dtsim_cmd_collective(int argc, char **argv);
int dtsim_cmd_describe(int argc, char **argv);
int dtsim_cmd_list(int argc, char **argv);
int dtsim_cmd_calibrate(int argc, char **argv);
int dtsim_cmd_search(int argc, char **argv);

/* Listers behind `dtsim list KIND`: print a table (or JSON lines with json) to out; 0 on
 * success or an exit status. */
int dtsim_list_models(FILE *out, gboolean json);
int dtsim_list_devices(FILE *out, gboolean json);
int dtsim_list_networks(FILE *out, gboolean json);
int dtsim_list_systems(FILE *out, gboolean json);
int dtsim_list_frameworks(FILE *out, gboolean json);
int dtsim_list_algorithms(FILE *out, gboolean json);

/* Prints "dtsim COMMAND: MESSAGE" on stderr and returns the exit status for the error:
 * 2 for DT_ERROR_INPUT and option-parsing errors, 1 otherwise. Frees nothing. */
int dtsim_cli_fail(const char *command, const GError *error);

/* Parses argv with `ctx`; on failure prints one line and returns FALSE with *status set. */
gboolean dtsim_cli_parse(GOptionContext *ctx, const char *command, int *argc, char ***argv,
                         int *status);

/* The command-line parsing every scenario command does: positional SCENARIO.ini first (if
 * any), then options. On failure prints one line and sets *status. */
#include "scenario.h"
gboolean sim_scenario_from_args(sim_scenario *s, const char *command, const char *summary,
                                unsigned set, int argc, char **argv, int *status);

#endif
