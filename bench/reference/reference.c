/* dtsim-reference: accuracy of the device models on published measurements.
 *
 * For each table (training steps, single convolution kernels) it prints every single-device
 * row with the measured time, the time predicted with the default catalog, and the error, then
 * the mean absolute percentage error (MAPE). It then fits a few efficiency parameters of each
 * device to that device's rows with `dtsim calibrate`'s machinery (as `dtsim calibrate
 * --device NAME` does) and prints the fitted and leave-one-out predictions, so one can see how
 * much a fit helps and whether it generalizes. No row has parameters of its own.
 *
 * Last, the thread-scaling curves of the two Xeon Phi models for the CHAOS networks as a batch
 * of one image per thread whose ops the threads share (60,000 images per epoch): the op-level
 * model, not CHAOS's own scheme, whose speedups bench/phi/chaos.sh compares with Viebke et al.
 *
 * Usage: dtsim-reference [REFERENCE_DIR] [--no-calibration] */
#include "devices.h"
#include "util.h"
#include "workloads.h"

#include <glib/gstdio.h>
#include <unistd.h>

#include <math.h>
#include <string.h>

static const char *const training_params[] = {"efficiency.conv", "efficiency.memory",
                                              "software.kernel_launch_us", NULL};
static const char *const kernel_params[] = {"efficiency.conv", "efficiency.memory", NULL};

typedef struct {
  char *label, *device;
  double measured, predicted, fit, loo;
} result;

static void result_clear(gpointer p)
{
  result *r = p;
  g_free(r->label);
  g_free(r->device);
}

static double mape(const GArray *res, gsize field)
{
  double sum = 0;
  for (guint i = 0; i < res->len; i++) {
    const result *r = &g_array_index(res, result, i);
    double v = *(const double *)((const char *)r + field);
    sum += fabs(v - r->measured) / r->measured;
  }
  return res->len ? 100 * sum / res->len : 0;
}

/* Runs the rows of `path` for one device (or all when device is NULL), fitting `params` on that
 * device's rows when `calibrate`; appends to `res`. */
static gboolean run_rows(const char *path, const char *device, const char *const *params,
                         gboolean calibrate, GArray *res, GPtrArray *fits, GError **error)
{
  g_autoptr(dev_calib) c = dev_calib_new();
  if (!dev_calib_load_csv(c, path, device, error))
    return FALSE;
  for (const char *const *p = params; *p; p++)
    if (!dev_calib_add_param(c, *p, error))
      return FALSE;
  if (calibrate) {
    if (!dev_calib_fit(c, TRUE, error))
      return FALSE;
    GString *line = g_string_new(NULL);
    g_string_printf(line, "%s (%u rows): fit %.1f%%, leave-one-out %.1f%%;", device,
                    dev_calib_n_rows(c), dev_calib_fit_mape(c), dev_calib_loo_mape(c));
    for (unsigned j = 0; j < dev_calib_n_params(c); j++) {
      const char *g, *k;
      double a, b;
      dev_calib_param(c, j, &g, &k, &a, &b);
      g_string_append_printf(line, " %s.%s %.4g -> %.4g", g, k, a, b);
    }
    g_ptr_array_add(fits, g_string_free(line, FALSE));
  } else {
    dev_calib_predict_defaults(c);
  }
  for (guint i = 0; i < dev_calib_n_rows(c); i++) {
    const char *label, *dev;
    result r;
    dev_calib_row(c, i, &label, &dev, &r.measured, &r.predicted, &r.fit, &r.loo);
    r.label = g_strdup(label);
    r.device = g_strdup(dev);
    g_array_append_val(res, r);
  }
  return TRUE;
}

static int run_table(const char *dir, const char *file, const char *title,
                     const char *const *params, double target, gboolean calibrate)
{
  g_autofree char *path = g_build_filename(dir, file, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) all = g_array_new(FALSE, TRUE, sizeof(result));
  g_array_set_clear_func(all, result_clear);
  g_autoptr(GPtrArray) fits = g_ptr_array_new_with_free_func(g_free);
  /* The default catalog on every row, then a fit per device (as `dtsim calibrate --device`). */
  if (!run_rows(path, NULL, params, FALSE, all, fits, &error)) {
    fprintf(stderr, "dtsim-reference: %s\n", error->message);
    return 2;
  }
  g_autoptr(GArray) fitted = g_array_new(FALSE, TRUE, sizeof(result));
  g_array_set_clear_func(fitted, result_clear);
  if (calibrate) {
    g_autoptr(GPtrArray) devices = g_ptr_array_new();
    for (guint i = 0; i < all->len; i++) {
      const char *d = g_array_index(all, result, i).device;
      gboolean seen = FALSE;
      for (guint j = 0; j < devices->len; j++)
        seen = seen || strcmp(devices->pdata[j], d) == 0;
      if (!seen)
        g_ptr_array_add(devices, (gpointer)d);
    }
    for (guint j = 0; j < devices->len; j++)
      if (!run_rows(path, devices->pdata[j], params, TRUE, fitted, fits, &error)) {
        fprintf(stderr, "dtsim-reference: %s\n", error->message);
        return 1;
      }
  }
  printf("== %s (%s): %u single-device rows\n", title, file, all->len);
  printf("%-36s %-16s %11s %11s %7s", "row", "device", "measured_ms", "default_ms", "err%");
  if (calibrate)
    printf(" %11s %7s %11s %7s", "fit_ms", "err%", "loo_ms", "err%");
  printf("\n");
  for (guint i = 0; i < all->len; i++) {
    const result *r = &g_array_index(all, result, i);
    double m = r->measured, d = r->predicted;
    printf("%-36s %-16s %11.3f %11.3f %+7.1f", r->label, r->device, m * 1e3, d * 1e3,
           100 * (d - m) / m);
    if (calibrate) {
      /* The per-device fits keep the rows of each device in file order. */
      for (guint j = 0; j < fitted->len; j++) {
        result *f = &g_array_index(fitted, result, j);
        if (f->label && strcmp(f->label, r->label) == 0 && strcmp(f->device, r->device) == 0) {
          printf(" %11.3f %+7.1f %11.3f %+7.1f", f->fit * 1e3, 100 * (f->fit - m) / m,
                 f->loo * 1e3, 100 * (f->loo - m) / m);
          g_clear_pointer(&f->label, g_free);
          break;
        }
      }
    }
    printf("\n");
  }
  printf("MAPE default catalog: %.1f%% (target <= %.0f%%)\n", mape(all, G_STRUCT_OFFSET(result,
         predicted)), target);
  if (calibrate) {
    printf("MAPE after calibrating each device on its own rows: fit %.1f%%, leave-one-out "
           "%.1f%%\n", mape(fitted, G_STRUCT_OFFSET(result, fit)),
           mape(fitted, G_STRUCT_OFFSET(result, loo)));
    for (guint j = 0; j < fits->len; j++)
      printf("  %s\n", (const char *)fits->pdata[j]);
  }
  printf("\n");
  return 0;
}

/* Seconds of one CHAOS epoch on `threads` threads: each step trains one image per thread. */
static double chaos_epoch_s(const dev_device *dev, const wl_model *m, unsigned threads)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(wl_net) net = wl_net_new(m, threads, WL_PREC_FP32, &error);
  g_assert(net != NULL);
  double step = 0;
  for (size_t i = 0; i < wl_net_n_layers(net); i++) {
    const wl_layer *L = wl_net_layer(net, i);
    for (int p = 0; p < WL_PASS_COUNT; p++)
      if (L->has_pass[p])
        step += (double)dev_op_time_ps(dev, &L->cost[p], threads) * 1e-12;
  }
  unsigned steps = (60000 + threads - 1) / threads;
  return step * steps;
}

static int chaos_curves(void)
{
  static const char *const nets[] = {"chaos-small", "chaos-medium", "chaos-large"};
  static const char *const phis[] = {"xeon-phi-7120p", "xeon-phi-7250"};
  static const unsigned counts[] = {1, 15, 30, 60, 61, 68, 120, 122, 136, 180, 183, 240, 244, 272};
  g_autoptr(GError) error = NULL;
  g_autofree char *overlay = NULL;
  int fd = g_file_open_tmp("dtsim-measured-XXXXXX.ini", &overlay, &error);
  if (fd < 0) {
    fprintf(stderr, "dtsim-reference: %s\n", error->message);
    return 1;
  }
  close(fd);
  g_file_set_contents(overlay, "[device]\nmodel = xeon-phi-measured\n", -1, NULL);
  printf("== CHAOS networks, a batch of one image per thread shared by the threads (op-level "
         "scaling; CHAOS's own scheme: bench/phi/chaos.sh)\n");
  for (gsize d = 0; d < G_N_ELEMENTS(phis); d++)
    for (int measured = 0; measured < 2; measured++) {
      g_autoptr(dev_device) dev = dev_device_load(phis[d], measured ? overlay : NULL, &error);
      if (dev == NULL) {
        fprintf(stderr, "dtsim-reference: %s\n", error->message);
        g_unlink(overlay);
        return 1;
      }
      printf("%s, model %s: speedup over one thread (epoch seconds at 1 thread)\n", phis[d],
             dev_model_name(dev_device_model(dev)));
      printf("%-14s %9s", "network", "t1_s");
      for (gsize i = 0; i < G_N_ELEMENTS(counts); i++)
        if (counts[i] <= dev_hw_threads(dev))
          printf(" %6u", counts[i]);
      printf("\n");
      for (gsize n = 0; n < G_N_ELEMENTS(nets); n++) {
        g_autoptr(wl_model) m = wl_model_load(nets[n], &error);
        g_assert(m != NULL);
        double t1 = chaos_epoch_s(dev, m, 1);
        printf("%-14s %9.1f", nets[n], t1);
        for (gsize i = 0; i < G_N_ELEMENTS(counts); i++)
          if (counts[i] <= dev_hw_threads(dev))
            printf(" %6.1f", t1 / chaos_epoch_s(dev, m, counts[i]));
        printf("\n");
      }
    }
  g_unlink(overlay);
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
  if (st == 0)
    st = chaos_curves();
  return st;
}
