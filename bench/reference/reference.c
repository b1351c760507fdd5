/* dtsim-reference: accuracy of the device models on published measurements.
 *
 * For each table (training steps, single convolution kernels) it prints every single-device
 * row with the measured time, the time predicted with the default catalog, and the error, then
 * the mean absolute percentage error (MAPE). It then fits a few shared parameters of the
 * software stack to the table with `dtsim calibrate`'s machinery and prints the fitted and
 * leave-one-out predictions, so one can see how much a fit helps and whether it generalizes.
 * No row has parameters of its own.
 *
 * Usage: dtsim-reference [REFERENCE_DIR] [--no-calibration] */
#include "devices.h"
#include "util.h"

#include <math.h>
#include <string.h>

static const char *const training_params[] = {"efficiency.conv", "efficiency.gemm",
                                              "efficiency.memory", "software.kernel_launch_us",
                                              NULL};
static const char *const kernel_params[] = {"efficiency.conv", "efficiency.memory",
                                            "software.winograd_traffic", NULL};

static int run_table(const char *dir, const char *file, const char *title,
                     const char *const *params, double target, gboolean calibrate)
{
  g_autofree char *path = g_build_filename(dir, file, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(dev_calib) c = dev_calib_new();
  if (!dev_calib_load_csv(c, path, NULL, &error)) {
    fprintf(stderr, "dtsim-reference: %s\n", error->message);
    return 2;
  }
  for (const char *const *p = params; *p; p++)
    if (!dev_calib_add_param(c, *p, &error)) {
      fprintf(stderr, "dtsim-reference: %s\n", error->message);
      return 1;
    }
  if (calibrate) {
    if (!dev_calib_fit(c, TRUE, &error)) {
      fprintf(stderr, "dtsim-reference: %s\n", error->message);
      return 1;
    }
  } else {
    dev_calib_predict_defaults(c);
  }
  printf("== %s (%s): %u single-device rows\n", title, file, dev_calib_n_rows(c));
  printf("%-40s %-16s %11s %11s %7s", "row", "device", "measured_ms", "default_ms", "err%");
  if (calibrate)
    printf(" %11s %7s %11s %7s", "fit_ms", "err%", "loo_ms", "err%");
  printf("\n");
  for (guint i = 0; i < dev_calib_n_rows(c); i++) {
    const char *label, *device;
    double m, d, f, l;
    dev_calib_row(c, i, &label, &device, &m, &d, &f, &l);
    printf("%-40s %-16s %11.3f %11.3f %+7.1f", label, device, m * 1e3, d * 1e3,
           100 * (d - m) / m);
    if (calibrate)
      printf(" %11.3f %+7.1f %11.3f %+7.1f", f * 1e3, 100 * (f - m) / m, l * 1e3,
             100 * (l - m) / m);
    printf("\n");
  }
  printf("MAPE default catalog: %.1f%% (target <= %.0f%%)\n", dev_calib_default_mape(c), target);
  if (calibrate) {
    printf("MAPE after calibration: fit %.1f%%, leave-one-out %.1f%%\n", dev_calib_fit_mape(c),
           dev_calib_loo_mape(c));
    printf("fitted:");
    for (unsigned j = 0; j < dev_calib_n_params(c); j++) {
      const char *g, *k;
      double a, b;
      dev_calib_param(c, j, &g, &k, &a, &b);
      printf(" %s.%s %.4g -> %.4g;", g, k, a, b);
    }
    printf("\n");
  }
  printf("\n");
  return 0;
}

int main(int argc, char **argv)
{
  const char *dir = DTSIM_REFERENCE_DIR;
  gboolean calibrate = TRUE;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--no-calibration") == 0)
      calibrate = FALSE;
    else
      dir = argv[i];
  }
  int st = run_table(dir, "training.csv", "training steps", training_params, 15, calibrate);
  if (st == 0)
    st = run_table(dir, "kernels.csv", "convolution kernels", kernel_params, 25, calibrate);
  return st;
}
