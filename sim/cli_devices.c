/* `dtsim list devices`: every catalog device with its headline numbers, then the registry of
 * device models. A catalog file that does not load is reported as an error (exit 2) naming the
 * file, line and key, and nothing else is printed. */
#include "cli.h"
#include "devices.h"
#include "util.h"

#include <json-glib/json-glib.h>

int dtsim_list_devices(FILE *out, gboolean json)
{
  g_auto(GStrv) names = dt_catalog_names("devices/catalog");
  g_autoptr(GPtrArray) devs = g_ptr_array_new_with_free_func((GDestroyNotify)dev_device_free);
  for (char **n = names; *n; n++) {
    g_autoptr(GError) error = NULL;
    dev_device *dev = dev_device_load(*n, NULL, &error);
    if (dev == NULL)
      return dtsim_cli_fail("list devices", error);
    g_ptr_array_add(devs, dev);
  }
  if (json) {
    for (guint i = 0; i < devs->len; i++) {
      const dev_device *d = devs->pdata[i];
      g_autoptr(JsonBuilder) b = json_builder_new();
      json_builder_begin_object(b);
      json_builder_set_member_name(b, "kind");
      json_builder_add_string_value(b, "device");
      json_builder_set_member_name(b, "name");
      json_builder_add_string_value(b, dev_device_name(d));
      json_builder_set_member_name(b, "title");
      json_builder_add_string_value(b, dev_device_title(d));
      json_builder_set_member_name(b, "model");
      json_builder_add_string_value(b, dev_model_name(dev_device_model(d)));
      json_builder_set_member_name(b, "peak_flops_fp32");
      json_builder_add_double_value(b, dev_peak_flops(d, WL_PREC_FP32));
      json_builder_set_member_name(b, "peak_flops_fp16");
      json_builder_add_double_value(b, dev_peak_flops(d, WL_PREC_FP16));
      json_builder_set_member_name(b, "memory_Bps");
      json_builder_add_double_value(b, dev_memory_Bps(d));
      json_builder_set_member_name(b, "memory_bytes");
      json_builder_add_int_value(b, (gint64)dev_memory_bytes(d));
      json_builder_set_member_name(b, "compute_units");
      json_builder_add_int_value(b, dev_compute_units(d));
      json_builder_set_member_name(b, "hw_threads");
      json_builder_add_int_value(b, dev_hw_threads(d));
      json_builder_set_member_name(b, "host_link");
      json_builder_add_string_value(b, dev_host_link_text(d));
      json_builder_end_object(b);
      g_autoptr(JsonGenerator) gen = json_generator_new();
      g_autoptr(JsonNode) root = json_builder_get_root(b);
      json_generator_set_root(gen, root);
      g_autofree char *text = json_generator_to_data(gen, NULL);
      fprintf(out, "%s\n", text);
    }
    return 0;
  }
  fprintf(out, "%-24s %-18s %9s %9s %9s %8s %6s %-13s\n", "NAME", "MODEL", "FP32_TF", "FP16_TF",
          "MEM_GBps", "MEM_GiB", "UNITS", "HOST_LINK");
  for (guint i = 0; i < devs->len; i++) {
    const dev_device *d = devs->pdata[i];
    fprintf(out, "%-24s %-18s %9.2f %9.2f %9.1f %8.1f %6u %-13s\n", dev_device_name(d),
            dev_model_name(dev_device_model(d)), dev_peak_flops(d, WL_PREC_FP32) / 1e12,
            dev_peak_flops(d, WL_PREC_FP16) / 1e12, dev_memory_Bps(d) / 1e9,
            (double)dev_memory_bytes(d) / (1024.0 * 1024.0 * 1024.0), dev_compute_units(d),
            dev_host_link_text(d));
  }
  gsize n = 0;
  const dev_model *const *models = dev_models(&n);
  fprintf(out, "\nDevice models:\n");
  for (gsize i = 0; i < n; i++)
    fprintf(out, "  %-18s %s\n", dev_model_name(models[i]), dev_model_description(models[i]));
  return 0;
}
