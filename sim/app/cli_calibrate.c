/* `dtsim calibrate MEASURED.csv`: fits a few efficiency parameters of the device models to
 * measured rows (the formats of reference/training.csv and reference/kernels.csv) by
 * differential evolution on a regularized relative error, prints the per-row predictions
 * before and after the fit with the fit and leave-one-out errors, and writes an overlay INI
 * that --calibration FILE loads. */
#include "cli.h"
#include "devices.h"
#include "scenario.h"
#include "util.h"

#include <math.h>

static const char default_params[] =
    "efficiency.conv,efficiency.gemm,efficiency.memory,software.kernel_launch_us";

static void print_table(const dev_calib *c, gboolean loo)
{
  printf("%-40s %-18s %11s %11s %7s %11s %7s", "row", "device", "measured_ms", "default_ms",
         "err%", "fit_ms", "err%");
  if (loo)
    printf(" %11s %7s", "loo_ms", "err%");
  printf("\n");
  for (guint i = 0; i < dev_calib_n_rows(c); i++) {
    const char *label, *device;
    double m, d, f, l;
    dev_calib_row(c, i, &label, &device, &m, &d, &f, &l);
    printf("%-40s %-18s %11.3f %11.3f %+7.1f %11.3f %+7.1f", label, device, m * 1e3, d * 1e3,
           100 * (d - m) / m, f * 1e3, 100 * (f - m) / m);
    if (loo)
      printf(" %11.3f %+7.1f", l * 1e3, 100 * (l - m) / m);
    printf("\n");
  }
  printf("\nMAPE: default %.2f%%, fit %.2f%%", dev_calib_default_mape(c), dev_calib_fit_mape(c));
  if (loo)
    printf(", leave-one-out %.2f%%", dev_calib_loo_mape(c));
  printf("\n\n%-32s %12s %12s\n", "parameter", "catalog", "fitted");
  for (unsigned j = 0; j < dev_calib_n_params(c); j++) {
    const char *g, *k;
    double a, b;
    dev_calib_param(c, j, &g, &k, &a, &b);
    g_autofree char *name = g_strdup_printf("%s.%s", g, k);
    printf("%-32s %12.6g %12.6g\n", name, a, b);
  }
}

static void print_json(const dev_calib *c, gboolean loo)
{
  g_autoptr(GString) o = g_string_new("{");
  dt_json_key(o, "rows");
  g_string_append_c(o, '[');
  for (guint i = 0; i < dev_calib_n_rows(c); i++) {
    const char *label, *device;
    double m, d, f, l;
    dev_calib_row(c, i, &label, &device, &m, &d, &f, &l);
    dt_json_next(o);
    g_string_append_c(o, '{');
    dt_json_key(o, "row");
    dt_json_string(o, label);
    dt_json_key(o, "device");
    dt_json_string(o, device);
    dt_json_key(o, "measured_s");
    dt_json_double(o, m);
    dt_json_key(o, "default_s");
    dt_json_double(o, d);
    dt_json_key(o, "fit_s");
    dt_json_double(o, f);
    if (loo) {
      dt_json_key(o, "loo_s");
      dt_json_double(o, l);
    }
    g_string_append_c(o, '}');
  }
  g_string_append_c(o, ']');
  dt_json_key(o, "default_mape_percent");
  dt_json_double(o, dev_calib_default_mape(c));
  dt_json_key(o, "fit_mape_percent");
  dt_json_double(o, dev_calib_fit_mape(c));
  if (loo) {
    dt_json_key(o, "loo_mape_percent");
    dt_json_double(o, dev_calib_loo_mape(c));
  }
  dt_json_key(o, "params");
  g_string_append_c(o, '{');
  for (unsigned j = 0; j < dev_calib_n_params(c); j++) {
    const char *g, *k;
    double a, v;
    dev_calib_param(c, j, &g, &k, &a, &v);
    g_autofree char *name = g_strdup_printf("%s.%s", g, k);
    dt_json_key(o, name);
    dt_json_double(o, v);
  }
  g_string_append_c(o, '}');
  g_string_append_c(o, '}');
  printf("%s\n", o->str);
}

int dtsim_cmd_calibrate(int argc, char **argv)
{
  /* --device (the rows of one catalog device), --calibration (the overlay to start from) and
   * --json come from the shared groups; the fit's own options are calibrate's. */
  g_autofree char *params = NULL, *stack = NULL, *output = NULL, *lambda_s = NULL;
  int64_t generations = 200;
  g_autofree char *generations_text = NULL;   /* read in decimal (GOption reads 010 as 8) */
  gboolean no_loo = FALSE;
  GOptionEntry entries[] = {
      {"params", 0, 0, G_OPTION_ARG_STRING, &params,
       "comma-separated parameters to fit (default efficiency.conv, efficiency.gemm, "
       "efficiency.memory, software.kernel_launch_us)", "LIST"},
      {"stack", 0, 0, G_OPTION_ARG_STRING, &stack,
       "name of the software stack the overlay describes, e.g. tensorflow-2017", "NAME"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "write the overlay INI here", "FILE"},
      {"lambda", 0, 0, G_OPTION_ARG_STRING, &lambda_s,
       "weight of the penalty keeping parameters near the catalog (default 0.001)", "X"},
      {"generations", 0, 0, G_OPTION_ARG_STRING, &generations_text,
       "differential-evolution generations (default 200)", "N"},
      {"no-loo", 0, 0, G_OPTION_ARG_NONE, &no_loo, "skip the leave-one-out refits", NULL},
      {NULL, 0, 0, 0, NULL, NULL, NULL},
  };
  static const sim_key_use uses[] = {
      {"device", NULL, 0, "fit only the rows of this device (catalog name as in the CSV)"},
      {"calibration", NULL, 0, "start from this overlay instead of the catalog values"},
      {NULL, NULL, 0, NULL}};
  g_auto(GStrv) args = NULL;
  sim_command_line cl = {.set = SIM_CMD_CALIBRATE,
                         .summary = "Fit device-model efficiencies to measured step times.",
                         .parameter = "MEASURED.csv",
                         .entries = entries,
                         .uses = uses,
                         .args = &args};
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  g_autoptr(GError) error = NULL;
  if (!sim_scenario_parse_args(&s, &cl, argc, argv, &error))
    return dtsim_cli_fail("calibrate", error);
  if (g_strv_length(args) != 1) {
    error = g_error_new(DT_ERROR, DT_ERROR_INPUT, "expected one MEASURED.csv argument");
    return dtsim_cli_fail("calibrate", error);
  }
  const char *measured = args[0], *device = s.device, *calibration = s.calibration;
  /* The overlay can be written, and replaces neither the measurements nor the overlay it
   * starts from: checked before the fit, which takes minutes. */
  const dt_file_role files[] = {{measured, "the measurements", FALSE},
                                {calibration, "--calibration", FALSE},
                                {output, "--output", TRUE}};
  if (stack && !dt_check_line(stack, "--stack", &error))
    return dtsim_cli_fail("calibrate", error);
  if (output && (!dt_outfile_check(output, "--output", &error) ||
                 !dt_files_distinct(files, G_N_ELEMENTS(files), &error)))
    return dtsim_cli_fail("calibrate", error);
  if (generations_text &&
      !dt_parse_int64(generations_text, "--generations", 1, 100000, &generations, &error))
    return dtsim_cli_fail("calibrate", error);
  g_autoptr(dev_calib) c = dev_calib_new();
  if (lambda_s) {
    double lambda;
    if (!dt_parse_double(lambda_s, "--lambda", 0, 1e6, &lambda, &error))
      return dtsim_cli_fail("calibrate", error);
    dev_calib_set_lambda(c, lambda);
  }
  dev_calib_set_generations(c, (unsigned)generations);
  g_auto(GStrv) names = dt_parse_name_list(params ? params : default_params, "--params", &error);
  if (names == NULL)
    return dtsim_cli_fail("calibrate", error);
  for (char **n = names; *n; n++)
    if (!dev_calib_add_param(c, *n, &error)) {
      g_prefix_error(&error, "--params: ");
      return dtsim_cli_fail("calibrate", error);
    }
  if (calibration && !dev_calib_set_overlay(c, calibration, &error))
    return dtsim_cli_fail("calibrate", error);
  if (!dev_calib_load_csv(c, measured, device, &error))
    return dtsim_cli_fail("calibrate", error);
  if (dev_calib_n_rows(c) == 0) {
    error = g_error_new(DT_ERROR, DT_ERROR_INPUT, "%s: no single-device rows%s%s", measured,
                        device ? " for device " : "", device ? device : "");
    return dtsim_cli_fail("calibrate", error);
  }
  if (!dev_calib_fit(c, !no_loo, &error))
    return dtsim_cli_fail("calibrate", error);
  if (output && !dev_calib_write_overlay(c, output, stack, &error))
    return dtsim_cli_fail("calibrate", error);
  if (s.json)
    print_json(c, !no_loo);
  else
    print_table(c, !no_loo);
  return 0;
}
