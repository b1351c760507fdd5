/* `dtsim list KIND`: the catalogs and registries. */
#include "cli.h"
#include "util.h"

#include <string.h>

typedef struct {
  const char *kind;
  int (*fn)(FILE *out, gboolean json);
} lister;

static const lister listers[] = {
    {"models", dtsim_list_models},   {"devices", dtsim_list_devices},
    {"networks", dtsim_list_networks}, {"systems", dtsim_list_systems},
    {"algorithms", dtsim_list_algorithms}, {"frameworks", dtsim_list_frameworks},
};

int dtsim_cmd_list(int argc, char **argv)
{
  gboolean json = FALSE;
  GOptionEntry entries[] = {
      {"json", 0, 0, G_OPTION_ARG_NONE, &json, "one JSON object per line", NULL},
      {NULL, 0, 0, 0, NULL, NULL, NULL}};
  g_autoptr(GOptionContext) ctx = g_option_context_new("models|devices|networks|systems|algorithms|frameworks");
  g_option_context_set_summary(ctx, "List the catalogs and registries.");
  dt_option_entries_as_bytes(entries);
  dt_option_add_main_entries(ctx, entries);
  int status = 0;
  if (!dtsim_cli_parse(ctx, "list", &argc, &argv, &status))
    return status;
  g_autoptr(GError) error = NULL;
  if (argc != 2) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                "expected one of: models, devices, networks, systems, algorithms, frameworks");
    return dtsim_cli_fail("list", error);
  }
  for (gsize i = 0; i < G_N_ELEMENTS(listers); i++)
    if (strcmp(argv[1], listers[i].kind) == 0)
      return listers[i].fn(stdout, json);
  g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
              "unknown kind '%s' (one of: models, devices, networks, systems, algorithms, "
              "frameworks)", argv[1]);
  return dtsim_cli_fail("list", error);
}
