/* `dtsim list devices`: every catalog device with its headline numbers, then the registry of
 * device models. A catalog file that does not load is reported as an error (exit 2) naming the
 * file, line and key, and nothing else is printed. */
#include "cli.h"
#include "devices.h"
#include "util.h"


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
      g_autoptr(GString) o = g_string_new("{");
      dt_json_key(o, "kind");
      dt_json_string(o, "device");
      dt_json_key(o, "name");
      dt_json_string(o, dev_device_name(d));
      dt_json_key(o, "title");
      dt_json_string(o, dev_device_title(d));
      dt_json_key(o, "model");
      dt_json_string(o, dev_model_name(dev_device_model(d)));
      dt_json_key(o, "peak_flops_fp32");
      dt_json_double(o, dev_peak_flops(d, WL_PREC_FP32));
      dt_json_key(o, "peak_flops_fp16");
      dt_json_double(o, dev_peak_flops(d, WL_PREC_FP16));
      dt_json_key(o, "memory_Bps");
      dt_json_double(o, dev_memory_Bps(d));
      dt_json_key(o, "memory_bytes");
      dt_json_int(o, (int64_t)dev_memory_bytes(d));
      dt_json_key(o, "compute_units");
      dt_json_int(o, dev_compute_units(d));
      dt_json_key(o, "hw_threads");
      dt_json_int(o, dev_hw_threads(d));
      dt_json_key(o, "host_link");
      dt_json_string(o, dev_host_link_text(d));
      g_string_append_c(o, '}');
      fprintf(out, "%s\n", o->str);
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
