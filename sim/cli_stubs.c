/* Subcommands whose modules have not landed yet: each says so and exits 1. This file shrinks
 * as the modules arrive. */
#include "cli.h"
#include "util.h"

static int not_yet(const char *cmd)
{
  g_autoptr(GError) e = g_error_new(DT_ERROR, DT_ERROR_INTERNAL, "not available in this build");
  return dtsim_cli_fail(cmd, e);
}

int dtsim_cmd_collective(int argc, char **argv) { return not_yet("collective"); }
int dtsim_cmd_describe(int argc, char **argv) { return not_yet("describe"); }
int dtsim_cmd_calibrate(int argc, char **argv) { return not_yet("calibrate"); }
int dtsim_cmd_sweep(int argc, char **argv) { return not_yet("sweep"); }
int dtsim_list_devices(FILE *out, gboolean json) { return not_yet("list devices"); }
int dtsim_cmd_describe(int argc, char **argv) { return not_yet("describe"); }
int dtsim_cmd_sweep(int argc, char **argv) { return not_yet("sweep"); }
int dtsim_list_models(FILE *out, gboolean json) { return not_yet("list models"); }
int dtsim_list_networks(FILE *out, gboolean json) { return not_yet("list networks"); }
int dtsim_list_systems(FILE *out, gboolean json) { return not_yet("list systems"); }
int dtsim_list_algorithms(FILE *out, gboolean json) { return not_yet("list algorithms"); }
int dtsim_cmd_run(int argc, char **argv) { return not_yet("run"); }
int dtsim_cmd_list(int argc, char **argv) { return not_yet("list"); }
