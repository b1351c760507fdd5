/* `dtsim list frameworks`: the framework catalog (workloads/catalog/frameworks). */
#include "cli.h"
#include "util.h"
#include "wl_framework.h"

int dtsim_list_frameworks(FILE *out, gboolean json)
{
  g_auto(GStrv) names = dt_catalog_names("workloads/catalog/frameworks");
  g_autoptr(GPtrArray) fws = g_ptr_array_new_with_free_func((GDestroyNotify)wl_framework_free);
  for (char **n = names; *n; n++) {
    g_autoptr(GError) error = NULL;
    wl_framework *fw = wl_framework_load(*n, "list frameworks", &error);
    if (!fw)
      return dtsim_cli_fail("list frameworks", error);
    g_ptr_array_add(fws, fw);
  }
  if (!json)
    fprintf(out, "%-14s %-10s %-10s %8s  %s\n", "NAME", "GATHER", "REDUCE", "PREFETCH",
            "DESCRIPTION");
  for (guint i = 0; i < fws->len; i++) {
    const wl_framework *fw = g_ptr_array_index(fws, i);
    const char *gather = fw->gather_per_block ? "per-block" : "per-chunk";
    const char *reduce = fw->reduce_per_block ? "per-block" : "per-bucket";
    if (!json && !fw->transformers) {
      /* A CPU-era CNN framework gathers and reduces nothing of a transformer's. */
      fprintf(out, "%-14s %-10s %-10s %8s  %s\n", fw->name, "-", "-", "-", fw->description);
      continue;
    }
    if (!json) {
      fprintf(out, "%-14s %-10s %-10s %8u  %s\n", fw->name, gather, reduce, fw->prefetch_blocks,
              fw->description);
      continue;
    }
    g_autoptr(GString) o = g_string_new("{");
    dt_json_key(o, "kind");
    dt_json_string(o, "framework");
    dt_json_key(o, "name");
    dt_json_string(o, fw->name);
    dt_json_key(o, "gather");
    dt_json_string(o, gather);
    dt_json_key(o, "reduce");
    dt_json_string(o, reduce);
    dt_json_key(o, "prefetch_blocks");
    dt_json_int(o, fw->prefetch_blocks);
    /* What it trains: transformers (strategy 3d) or CNNs on CPUs and Xeon Phi ([cpu]). */
    dt_json_key(o, "transformers");
    g_string_append(o, fw->transformers ? "true" : "false");
    dt_json_key(o, "cpu_efficiency");
    dt_json_double(o, fw->cpu_efficiency);
    dt_json_key(o, "description");
    dt_json_string(o, fw->description);
    g_string_append(o, "}\n");
    fputs(o->str, out);
  }
  return 0;
}
