/* `dtsim list networks` and `dtsim list systems`: the fabric, network and node-preset catalogs
 * of comm/, one row per file. Every file is loaded (and so validated) before anything is
 * printed, so a broken catalog gives one error line and no partial table. */
#include "cli.h"
#include "comm_net.h"
#include "util.h"

#include <json-glib/json-glib.h>

static void print_json(FILE *out, JsonBuilder *b)
{
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  g_autofree char *text = json_to_string(root, FALSE);
  fprintf(out, "%s\n", text);
}

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
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, f->name);
    json_builder_set_member_name(b, "scope");
    json_builder_add_string_value(b, f->inter ? "inter" : "intra");
    json_builder_set_member_name(b, "bandwidth_GBps");
    json_builder_add_double_value(b, f->bandwidth_GBps);
    json_builder_set_member_name(b, "efficiency");
    json_builder_add_double_value(b, f->efficiency);
    json_builder_set_member_name(b, "latency_ns");
    json_builder_add_double_value(b, f->latency_ns);
    json_builder_set_member_name(b, "links_per_device");
    json_builder_add_int_value(b, f->links_per_device);
    json_builder_set_member_name(b, "description");
    json_builder_add_string_value(b, f->description);
    json_builder_end_object(b);
    print_json(out, b);
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
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, s->name);
    json_builder_set_member_name(b, "device");
    json_builder_add_string_value(b, s->device);
    json_builder_set_member_name(b, "devices_per_node");
    json_builder_add_int_value(b, s->devices_per_node);
    json_builder_set_member_name(b, "layout");
    json_builder_add_string_value(b, s->layout);
    json_builder_set_member_name(b, "intra");
    if (s->intra)
      json_builder_add_string_value(b, s->intra->name);
    else
      json_builder_add_null_value(b);
    json_builder_set_member_name(b, "inter");
    json_builder_add_string_value(b, s->inter->name);
    json_builder_set_member_name(b, "pcie");
    json_builder_add_string_value(b, s->pcie->name);
    json_builder_set_member_name(b, "nics_per_node");
    json_builder_add_int_value(b, s->nics_per_node);
    json_builder_set_member_name(b, "sockets");
    json_builder_add_int_value(b, s->sockets);
    json_builder_set_member_name(b, "topology");
    json_builder_add_string_value(b, s->topology);
    json_builder_set_member_name(b, "description");
    json_builder_add_string_value(b, s->description);
    json_builder_end_object(b);
    print_json(out, b);
  }
  return 0;
}
