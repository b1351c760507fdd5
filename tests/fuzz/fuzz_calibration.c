/* Fuzz harness for the measurement tables of `dtsim calibrate`: dev_calib_load_csv() on a
 * temporary `.csv` (the formats of reference/training.csv and reference/kernels.csv), then
 * predicting every row with the catalog parameters.
 *
 * Invariants on a table that loads: every row has a label, a device and a measured step time
 * that is finite and positive, and its prediction with the catalog parameters is finite and
 * positive too (a row whose ops sum to nothing, or to infinity, would make the calibration's
 * relative error meaningless). A refusal is a DT_ERROR naming the file. */
#include "fuzz.h"

#include "devices.h"
#include "util.h"

#include <math.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  fuzz_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = fuzz_temp_file(".csv", data, size);
  g_autoptr(dev_calib) c = dev_calib_new();
  g_autoptr(GError) error = NULL;
  if (!dev_calib_load_csv(c, path, NULL, &error)) {
    fuzz_check_error(error, path);
    return 0;
  }
  dev_calib_predict_defaults(c);
  for (guint i = 0; i < dev_calib_n_rows(c); i++) {
    const char *label = NULL, *device = NULL;
    double measured_s, default_s, fit_s, loo_s;
    dev_calib_row(c, i, &label, &device, &measured_s, &default_s, &fit_s, &loo_s);
    FUZZ_CHECK(label && *label && device && *device, "row %u has no label or device", i);
    FUZZ_CHECK(isfinite(measured_s) && measured_s > 0, "row %u (%s): measured %g s", i, label,
               measured_s);
    FUZZ_CHECK(isfinite(default_s) && default_s > 0, "row %u (%s): predicted %g s", i, label,
               default_s);
  }
  fuzz_accepted();
  return 0;
}
