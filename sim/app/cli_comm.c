/* `dtsim list networks` and `dtsim list systems`: the fabric, network and node-preset catalogs
 * of comm/, one row per file. Every file is loaded (and so validated) before anything is
 * printed, so a broken catalog gives one error line and no partial table. */
#include "cli.h"
#include "comm_net.h"
#include "util.h"

int dtsim_list_networks(FILE *out, gboolean json)
{
  g_auto(GStrv) names = dt_catalog_names("comm/catalog/fabrics");
  g_autoptr(GPtrArray) fabrics = g_ptr_array_new_with_free_func((GDestroyNotify)comm_fabric_free);
  for (char **n = names; *n; n++) {
    g_autoptr(GError) error = NULL;
    comm_fabric *f = comm_fabric_load(*n, "list networks", &error);
    if (!f)
      return dtsim_cli_fail("list networks", error);
    g_ptr_array_add(fabrics, f);
  }
  if (!json)
    fprintf(out, "%-16s %-6s %10s %5s %10s  %s\n", "NAME", "SCOPE", "GB/s/link", "links",
            "latency_ns", "DESCRIPTION");
  for (guint i = 0; i < fabrics->len; i++) {
    const comm_fabric *f = g_ptr_array_index(fabrics, i);
    if (!json) {
      fprintf(out, "%-16s %-6s %10.4g %5u %10.0f  %s\n", f->name, f->inter ? "inter" : "intra",
              f->bandwidth_GBps, f->links_per_device, f->latency_ns, f->description);
      continue;
    }
    g_autoptr(GString) o = g_string_new("{");
    dt_json_key(o, "name");
    dt_json_string(o, f->name);
    dt_json_key(o, "scope");
    dt_json_string(o, f->inter ? "inter" : "intra");
    dt_json_key(o, "bandwidth_GBps");
    dt_json_double(o, f->bandwidth_GBps);
    dt_json_key(o, "efficiency");
    dt_json_double(o, f->efficiency);
    dt_json_key(o, "latency_ns");
    dt_json_double(o, f->latency_ns);
    dt_json_key(o, "links_per_device");
    dt_json_int(o, f->links_per_device);
    dt_json_key(o, "description");
    dt_json_string(o, f->description);
    g_string_append_c(o, '}');
    fprintf(out, "%s\n", o->str);
  }
  return 0;
}

int dtsim_list_systems(FILE *out, gboolean json)
{
  g_auto(GStrv) names = dt_catalog_names("comm/catalog/systems");
  g_autoptr(GPtrArray) systems = g_ptr_array_new_with_free_func((GDestroyNotify)comm_system_free);
  for (char **n = names; *n; n++) {
    g_autoptr(GError) error = NULL;
    comm_system *s = comm_system_load(*n, "list systems", &error);
    if (!s)
      return dtsim_cli_fail("list systems", error);
    g_ptr_array_add(systems, s);
  }
  if (!json)
    fprintf(out, "%-18s %-16s %4s %-19s %-14s %-16s %4s  %s\n", "NAME", "DEVICE", "DEVS",
            "LAYOUT", "INTRA", "INTER", "NICS", "DESCRIPTION");
  for (guint i = 0; i < systems->len; i++) {
    const comm_system *s = g_ptr_array_index(systems, i);
    const char *intra = s->intra ? s->intra->name : "-";
    if (!json) {
      fprintf(out, "%-18s %-16s %4u %-19s %-14s %-16s %4u  %s\n", s->name, s->device,
              s->devices_per_node, s->layout, intra, s->inter->name, s->nics_per_node,
              s->description);
      continue;
    }
    g_autoptr(GString) o = g_string_new("{");
    dt_json_key(o, "name");
    dt_json_string(o, s->name);
    dt_json_key(o, "device");
    dt_json_string(o, s->device);
    dt_json_key(o, "devices_per_node");
    dt_json_int(o, s->devices_per_node);
    dt_json_key(o, "layout");
    dt_json_string(o, s->layout);
    dt_json_key(o, "intra");
    if (s->intra)
      dt_json_string(o, s->intra->name);
    else
      g_string_append(o, "null");
    dt_json_key(o, "inter");
    dt_json_string(o, s->inter->name);
    dt_json_key(o, "pcie");
    dt_json_string(o, s->pcie->name);
    dt_json_key(o, "nics_per_node");
    dt_json_int(o, s->nics_per_node);
    dt_json_key(o, "sockets");
    dt_json_int(o, s->sockets);
    dt_json_key(o, "topology");
    dt_json_string(o, s->topology);
    dt_json_key(o, "description");
    dt_json_string(o, s->description);
    g_string_append_c(o, '}');
    fprintf(out, "%s\n", o->str);
  }
  return 0;
}
