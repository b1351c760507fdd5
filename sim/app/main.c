/* dtsim: entry point and subcommand dispatch. */
#include "cli.h"
#include "util.h"

#include <locale.h>
#include <string.h>

typedef struct {
  const char *name;
  const char *summary;
  dtsim_command_fn fn;
} command;

static const command commands[] = {
    {"run", "simulate training iterations and print a breakdown", dtsim_cmd_run},
    {"sweep", "run the same over a list of device counts and other axes", dtsim_cmd_sweep},
    {"collective", "one collective on a modeled cluster", dtsim_cmd_collective},
    {"describe", "per-layer table of a model: shapes, params, FLOPs, bytes, memory",
     dtsim_cmd_describe},
    {"list", "list models, devices, networks, systems or algorithms", dtsim_cmd_list},
    {"calibrate", "fit model parameters to measurements", dtsim_cmd_calibrate},
    {"search", "rank every parallel configuration of a job on a cluster", dtsim_cmd_search},
};

static void usage(FILE *out)
{
  fprintf(out, "Usage: dtsim COMMAND [OPTIONS]\n\n"
               "Discrete-event simulator of distributed deep-learning training.\n\nCommands:\n");
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
    fprintf(out, "  %-11s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\nRun 'dtsim COMMAND --help' for the options of a command.\n");
}

int main(int argc, char **argv)
{
  /* The user's locale, for GLib's messages and character set. Option values are taken as bytes
   * (dt_option_entries_as_bytes), so a file name need not be text in that set. */
  setlocale(LC_ALL, "");
  /* Numbers are written and read the C way whatever the locale: CSV columns, SVG coordinates,
   * INI overlays and JSON are read by programs, and a decimal comma (de_DE) broke CSV rows
   * into extra columns and SVG attributes into nonsense. */
  setlocale(LC_NUMERIC, "C");
  if (argc < 2) {
    fprintf(stderr, "dtsim: missing command (run 'dtsim --help')\n");
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("dtsim %s\n", DTSIM_VERSION);
    return 0;
  }
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
    if (strcmp(argv[1], commands[i].name) == 0) {
      /* "dtsim run": in --help's usage line and in messages printed outside a command's own
       * error path (dt_memory_fail). */
      g_autofree char *prg = g_strdup_printf("dtsim %s", commands[i].name);
      g_set_prgname(prg);
      /* The outputs of a command replace their old versions together, once it succeeded. */
      dt_outfile_hold();
      int status = commands[i].fn(argc - 1, argv + 1);
      g_autoptr(GError) error = NULL;
      if (!dt_outfile_release(status == 0, &error))
        status = dtsim_cli_fail(commands[i].name, error);
      return status;
    }
  fprintf(stderr, "dtsim: unknown command '%s' (run 'dtsim --help')\n", argv[1]);
  return 2;
}
