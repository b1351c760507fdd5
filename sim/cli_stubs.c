/* Subcommands whose modules have not landed yet: each says so and exits 1. This file shrinks
 * as the modules arrive. */
#include "cli.h"
#include "util.h"

static int not_yet(const char *cmd)
{
  g_autoptr(GError) e = g_error_new(DT_ERROR, DT_ERROR_INTERNAL, "not available in this build");
  return dtsim_cli_fail(cmd, e);
}

int dtsim_cmd_sweep(int argc, char **argv) { return not_yet("sweep"); }
