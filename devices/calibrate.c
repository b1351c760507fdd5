/* Calibration: fits a few efficiency parameters of the device models to measured step times,
 * as Kavarakuntla et al. fit the constants of their generic model: differential evolution
 * (DE/rand/1/bin, Storn and Price 1997) minimizing a regularized relative error
 *
 *   J(theta) = mean_i ((pred_i(theta) - meas_i) / meas_i)^2 + lambda sum_j ln(theta_j/theta0_j)^2
 *
 * where theta0 are the catalog values: the penalty keeps parameters that the rows do not
 * determine at their datasheet-derived values. The fit error is the mean absolute percentage
 * error (MAPE) on the rows; the leave-one-out error refits without each row in turn and
 * predicts it, which shows whether the fit generalizes. The result is an overlay INI that
 * --calibration FILE (or --device FILE) loads on top of a catalog entry.
 *
 * Rows are read from CSV files in the formats of reference/training.csv (whole training steps
 * of zoo models) and reference/kernels.csv (single convolution layers). Everything is
 * deterministic: a fixed seed and fixed iteration counts. */
#include "dev_internal.h"
#include "workloads.h"

#include <math.h>
#include <string.h>

typedef struct {
  char *label;
  guint dev;            /* index into calib->devs */
  GArray *ops;          /* wl_op_cost */
  unsigned threads;
  gboolean host;        /* add the per-iteration host overhead */
  uint64_t input_bytes; /* copied over the host link each step */
  uint64_t link_bytes;  /* parameters/gradients moved over the host link each step */
  double measured_s;
  double pred_default_s, pred_fit_s, pred_loo_s;
} row;

struct dev_calib {
  GPtrArray *devs;      /* dev_device copies the fit mutates */
  GPtrArray *defaults;  /* the devices as loaded */
  GArray *rows;         /* row */
  const dev_param_info *params[DEV_CALIB_MAX_PARAMS];
  double theta0[DEV_CALIB_MAX_PARAMS];
  double theta[DEV_CALIB_MAX_PARAMS];
  double lo[DEV_CALIB_MAX_PARAMS], hi[DEV_CALIB_MAX_PARAMS];
  unsigned n_params;
  double lambda;
  unsigned generations;
  double fit_mape, loo_mape, default_mape;
  char *calibration_path;
  gboolean overlay_failed;      /* the last error was the overlay's, not a row's */
};

static void row_clear(gpointer p)
{
  row *r = p;
  g_free(r->label);
  if (r->ops)
    g_array_unref(r->ops);
}

dev_calib *dev_calib_new(void)
{
  dev_calib *c = g_new0(dev_calib, 1);
  c->devs = g_ptr_array_new_with_free_func((GDestroyNotify)dev_device_free);
  c->defaults = g_ptr_array_new_with_free_func((GDestroyNotify)dev_device_free);
  c->rows = g_array_new(FALSE, TRUE, sizeof(row));
  g_array_set_clear_func(c->rows, row_clear);
  c->lambda = 1e-3;
  c->generations = 200;
  return c;
}

void dev_calib_free(dev_calib *c)
{
  if (c == NULL)
    return;
  g_ptr_array_unref(c->devs);
  g_ptr_array_unref(c->defaults);
  g_array_unref(c->rows);
  g_free(c->calibration_path);
  g_free(c);
}

void dev_calib_set_lambda(dev_calib *c, double lambda) { c->lambda = lambda; }
void dev_calib_set_generations(dev_calib *c, unsigned g) { c->generations = g ? g : 1; }

gboolean dev_calib_set_overlay(dev_calib *c, const char *path, GError **error)
{
  if (c->devs->len > 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "set the calibration before adding rows");
    return FALSE;
  }
  g_free(c->calibration_path);
  c->calibration_path = g_strdup(path);
  return TRUE;
}

static gint device_index(dev_calib *c, const char *name, GError **error)
{
  for (guint i = 0; i < c->defaults->len; i++)
    if (strcmp(dev_device_name(c->defaults->pdata[i]), name) == 0)
      return (gint)i;
  dev_device *d = dev_device_load(name, NULL, error);
  if (d && c->calibration_path) {
    /* The device loads alone: what fails now is the overlay's (--calibration), not the row's. */
    dev_device_free(d);
    d = dev_device_load(name, c->calibration_path, error);
    c->overlay_failed = d == NULL;
  }
  if (d == NULL)
    return -1;
  g_ptr_array_add(c->defaults, d);
  g_ptr_array_add(c->devs, dev__device_copy(d));
  return (gint)c->defaults->len - 1;
}

/* Adds a row whose ops are `ops` (a reference is taken: rows of the same model, batch and
 * precision share one list). */
static gboolean add_row_ops(dev_calib *c, const char *label, const char *device, GArray *ops,
                            unsigned threads, gboolean host_overhead, uint64_t input_bytes,
                            uint64_t link_bytes, double measured_s, GError **error)
{
  /* 1 ns is below any kernel launch and 1e6 s (11.6 days) above any training step or kernel
   * measured; outside them the relative errors would overflow to infinity. */
  if (!(measured_s >= 1e-9 && measured_s <= 1e6)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: measured time %g s is outside 1 ns to 1e6 s", label, measured_s);
    return FALSE;
  }
  gint d = device_index(c, device, error);
  if (d < 0)
    return FALSE;
  row r = {0};
  r.label = g_strdup(label);
  r.dev = (guint)d;
  r.ops = g_array_ref(ops);
  r.threads = threads;
  r.host = host_overhead;
  r.input_bytes = input_bytes;
  r.link_bytes = link_bytes;
  r.measured_s = measured_s;
  g_array_append_val(c->rows, r);
  return TRUE;
}

gboolean dev_calib_add_row(dev_calib *c, const char *label, const char *device,
                           const wl_op_cost *ops, gsize n_ops, unsigned threads,
                           gboolean host_overhead, uint64_t input_bytes, uint64_t link_bytes,
                           double measured_s, GError **error)
{
  g_autoptr(GArray) list = g_array_sized_new(FALSE, FALSE, sizeof(wl_op_cost), (guint)n_ops);
  g_array_append_vals(list, ops, (guint)n_ops);
  return add_row_ops(c, label, device, list, threads, host_overhead, input_bytes, link_bytes,
                     measured_s, error);
}

gboolean dev_calib_add_param(dev_calib *c, const char *group_dot_key, GError **error)
{
  const dev_param_info *p = dev__param_find(group_dot_key);
  if (p == NULL || !p->fittable) {
    GString *list = g_string_new(NULL);
    for (const dev_param_info *q = dev__params; q->key; q++)
      if (q->fittable)
        g_string_append_printf(list, "%s%s.%s", list->len ? ", " : "", q->group, q->key);
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "'%s' is not a parameter that can be fitted (%s)",
                group_dot_key, list->str);
    g_string_free(list, TRUE);
    return FALSE;
  }
  for (unsigned i = 0; i < c->n_params; i++)
    if (c->params[i] == p)
      return TRUE;
  if (c->n_params == DEV_CALIB_MAX_PARAMS) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "at most %d parameters can be fitted at once",
                DEV_CALIB_MAX_PARAMS);
    return FALSE;
  }
  c->params[c->n_params++] = p;
  return TRUE;
}

/* Seconds of one row with the devices' current parameters. */
static double predict(const dev_calib *c, const row *r)
{
  const dev_device *d = c->devs->pdata[r->dev];
  unsigned threads = r->threads == 0 || r->threads > d->hw_threads ? d->hw_threads : r->threads;
  double s = 0;
  for (guint i = 0; i < r->ops->len; i++)
    s += d->model->op_seconds(d, &g_array_index(r->ops, wl_op_cost, i), threads);
  if (r->host)
    s += (double)dev_host_overhead_ps(d, r->input_bytes) * 1e-12;
  if (r->link_bytes > 0 && d->link.bandwidth_Bps > 0)
    s += (double)r->link_bytes / d->link.bandwidth_Bps;
  return s;
}

static void apply(dev_calib *c, const double *theta)
{
  for (guint d = 0; d < c->devs->len; d++) {
    dev_device *dev = c->devs->pdata[d];
    for (unsigned j = 0; j < c->n_params; j++)
      dev__param_set(dev, c->params[j], theta[j]);
    GError *ignored = NULL;
    if (!dev__prepare(dev, &ignored))
      g_clear_error(&ignored);
  }
}

/* J(theta) over the rows whose index is not `skip` (G_MAXUINT: none). */
static double objective(dev_calib *c, const double *theta, guint skip)
{
  apply(c, theta);
  double sum = 0;
  guint n = 0;
  for (guint i = 0; i < c->rows->len; i++) {
    if (i == skip)
      continue;
    const row *r = &g_array_index(c->rows, row, i);
    double e = (predict(c, r) - r->measured_s) / r->measured_s;
    sum += e * e;
    n++;
  }
  double reg = 0;
  for (unsigned j = 0; j < c->n_params; j++) {
    double l = log(theta[j] / c->theta0[j]);
    reg += l * l;
  }
  return (n ? sum / n : 0) + c->lambda * reg;
}

/* DE/rand/1/bin with a fixed seed over `generations`; `start` is one member of the initial
 * population. Parameters are searched in log space between lo and hi. */
static void de_minimize(dev_calib *c, guint skip, const double *start, unsigned generations,
                        double *best_out)
{
  unsigned D = c->n_params;
  unsigned NP = 10 * D < 16 ? 16 : 10 * D;
  const double F = 0.7, CR = 0.9;
  g_autoptr(GRand) rng = g_rand_new_with_seed(20190624u + skip);
  g_autofree double *pop = g_new(double, (gsize)NP * D);
  g_autofree double *cost = g_new(double, NP);
  double trial[DEV_CALIB_MAX_PARAMS];
  double llo[DEV_CALIB_MAX_PARAMS], lhi[DEV_CALIB_MAX_PARAMS];
  for (unsigned j = 0; j < D; j++) {
    llo[j] = log(c->lo[j]);
    lhi[j] = log(c->hi[j]);
  }
  for (unsigned i = 0; i < NP; i++) {
    for (unsigned j = 0; j < D; j++)
      pop[i * D + j] = i == 0 ? start[j] : exp(g_rand_double_range(rng, llo[j], lhi[j]));
    cost[i] = objective(c, &pop[i * D], skip);
  }
  for (unsigned g = 0; g < generations; g++) {
    for (unsigned i = 0; i < NP; i++) {
      unsigned a, b, e;
      do a = (unsigned)g_rand_int_range(rng, 0, (gint32)NP); while (a == i);
      do b = (unsigned)g_rand_int_range(rng, 0, (gint32)NP); while (b == i || b == a);
      do e = (unsigned)g_rand_int_range(rng, 0, (gint32)NP); while (e == i || e == a || e == b);
      unsigned jr = (unsigned)g_rand_int_range(rng, 0, (gint32)D);
      for (unsigned j = 0; j < D; j++) {
        double x = log(pop[i * D + j]);
        if (j == jr || g_rand_double(rng) < CR) {
          x = log(pop[a * D + j]) + F * (log(pop[b * D + j]) - log(pop[e * D + j]));
          /* Reflect into the bounds. */
          if (x < llo[j])
            x = llo[j] + fmin(llo[j] - x, lhi[j] - llo[j]);
          if (x > lhi[j])
            x = lhi[j] - fmin(x - lhi[j], lhi[j] - llo[j]);
        }
        trial[j] = exp(x);
      }
      double ct = objective(c, trial, skip);
      if (ct <= cost[i]) {
        memcpy(&pop[i * D], trial, D * sizeof trial[0]);
        cost[i] = ct;
      }
    }
  }
  unsigned best = 0;
  for (unsigned i = 1; i < NP; i++)
    if (cost[i] < cost[best])
      best = i;
  memcpy(best_out, &pop[best * D], D * sizeof best_out[0]);
}

static double mape_of(const dev_calib *c, gsize field)
{
  double sum = 0;
  for (guint i = 0; i < c->rows->len; i++) {
    const row *r = &g_array_index(c->rows, row, i);
    double p = *(const double *)((const char *)r + field);
    sum += fabs(p - r->measured_s) / r->measured_s;
  }
  return c->rows->len ? 100.0 * sum / c->rows->len : 0;
}

gboolean dev_calib_predict_defaults(dev_calib *c)
{
  /* The mutable copies equal the loaded devices until a fit runs. */
  for (guint i = 0; i < c->rows->len; i++) {
    row *r = &g_array_index(c->rows, row, i);
    r->pred_default_s = predict(c, r);
  }
  c->default_mape = mape_of(c, G_STRUCT_OFFSET(row, pred_default_s));
  return TRUE;
}

gboolean dev_calib_fit(dev_calib *c, gboolean leave_one_out, GError **error)
{
  if (c->rows->len == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "no measured rows to fit");
    return FALSE;
  }
  dev_calib_predict_defaults(c);
  if (c->n_params == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "no parameters to fit");
    return FALSE;
  }
  const dev_device *first = c->defaults->pdata[0];
  for (unsigned j = 0; j < c->n_params; j++) {
    const dev_param_info *p = c->params[j];
    double v = dev__param_get(first, p);
    if (!(v > 0))
      v = p->min > 0 ? p->min : 1e-3;
    c->theta0[j] = v;
    /* Search a factor of 4 either way of the catalog value, inside the parameter's range. */
    c->lo[j] = fmax(v / 4, p->min > 0 ? p->min : v / 4);
    c->hi[j] = fmin(v * 4, p->max);
    if (c->hi[j] <= c->lo[j])
      c->hi[j] = c->lo[j] * 1.0001;
    if (c->theta0[j] < c->lo[j] || c->theta0[j] > c->hi[j])
      c->theta0[j] = c->lo[j];
  }
  de_minimize(c, G_MAXUINT, c->theta0, c->generations, c->theta);
  apply(c, c->theta);
  for (guint i = 0; i < c->rows->len; i++) {
    row *r = &g_array_index(c->rows, row, i);
    r->pred_fit_s = predict(c, r);
  }
  c->fit_mape = mape_of(c, G_STRUCT_OFFSET(row, pred_fit_s));
  c->loo_mape = NAN;
  if (leave_one_out && c->rows->len > 1) {
    double theta[DEV_CALIB_MAX_PARAMS];
    /* Each refit starts from the full fit (one member of its population), which dropping one
     * row moves little, so half the generations suffice. */
    unsigned gens = c->generations / 2 > 0 ? c->generations / 2 : 1;
    for (guint i = 0; i < c->rows->len; i++) {
      de_minimize(c, i, c->theta, gens, theta);
      apply(c, theta);
      row *r = &g_array_index(c->rows, row, i);
      r->pred_loo_s = predict(c, r);
    }
    c->loo_mape = mape_of(c, G_STRUCT_OFFSET(row, pred_loo_s));
    apply(c, c->theta);
  }
  /* No infinity or NaN reaches a table, JSON or an overlay. */
  if (!isfinite(c->default_mape) || !isfinite(c->fit_mape) ||
      (leave_one_out && c->rows->len > 1 && !isfinite(c->loo_mape))) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "the fit's error is not a finite number: a "
                "measured time is out of scale with every prediction");
    return FALSE;
  }
  return TRUE;
}

guint dev_calib_n_rows(const dev_calib *c) { return c->rows->len; }
unsigned dev_calib_n_params(const dev_calib *c) { return c->n_params; }
double dev_calib_fit_mape(const dev_calib *c) { return c->fit_mape; }
double dev_calib_loo_mape(const dev_calib *c) { return c->loo_mape; }
double dev_calib_default_mape(const dev_calib *c) { return c->default_mape; }

void dev_calib_param(const dev_calib *c, unsigned j, const char **group, const char **key,
                     double *initial, double *fitted)
{
  g_return_if_fail(j < c->n_params);
  *group = c->params[j]->group;
  *key = c->params[j]->key;
  *initial = c->theta0[j];
  *fitted = c->theta[j];
}

void dev_calib_row(const dev_calib *c, guint i, const char **label, const char **device,
                   double *measured_s, double *default_s, double *fit_s, double *loo_s)
{
  g_return_if_fail(i < c->rows->len);
  const row *r = &g_array_index(c->rows, row, i);
  *label = r->label;
  *device = dev_device_name(c->defaults->pdata[r->dev]);
  *measured_s = r->measured_s;
  *default_s = r->pred_default_s;
  *fit_s = r->pred_fit_s;
  *loo_s = r->pred_loo_s;
}

gboolean dev_calib_write_overlay(const dev_calib *c, const char *path, const char *stack,
                                 GError **error)
{
  /* Every text value is one line: a newline would add keys or groups to the overlay. */
  if (stack && !dt_check_line(stack, "--stack", error))
    return FALSE;
  for (guint i = 0; i < c->defaults->len; i++)
    if (!dt_check_line(dev_device_name(c->defaults->pdata[i]), "device name", error))
      return FALSE;
  g_autoptr(dt_outfile) out = dt_outfile_open(path, error);
  if (out == NULL)
    return FALSE;
  FILE *f = dt_outfile_stream(out);
  fprintf(f, "# Calibration overlay written by `dtsim calibrate`: load it with --calibration FILE\n"
             "# on top of a catalog device. Fitted by differential evolution on %u measured rows\n"
             "# (regularized relative error, lambda %g).\n",
          c->rows->len, c->lambda);
  fprintf(f, "[calibration]\n");
  if (stack)
    fprintf(f, "stack = %s\n", stack);
  GString *devs = g_string_new(NULL);
  for (guint i = 0; i < c->defaults->len; i++)
    g_string_append_printf(devs, "%s%s", i ? ";" : "", dev_device_name(c->defaults->pdata[i]));
  fprintf(f, "device = %s\n", devs->str);
  g_string_free(devs, TRUE);
  fprintf(f, "samples = %u\n", c->rows->len);
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  fprintf(f, "# Mean absolute percentage error of the fit and of leave-one-out refits.\n");
  fprintf(f, "fit_mape = %s\n", g_ascii_formatd(buf, sizeof buf, "%.3f", c->fit_mape));
  if (!isnan(c->loo_mape))
    fprintf(f, "loo_mape = %s\n", g_ascii_formatd(buf, sizeof buf, "%.3f", c->loo_mape));
  const char *groups[] = {"efficiency", "software"};
  for (gsize g = 0; g < G_N_ELEMENTS(groups); g++) {
    gboolean header = FALSE;
    for (unsigned j = 0; j < c->n_params; j++) {
      if (strcmp(c->params[j]->group, groups[g]) != 0)
        continue;
      if (!header)
        fprintf(f, "\n[%s]\n", groups[g]);
      header = TRUE;
      fprintf(f, "# %s; catalog value %s\n", c->params[j]->unit,
              g_ascii_formatd(buf, sizeof buf, "%.6g", c->theta0[j]));
      fprintf(f, "%s = %s\n", c->params[j]->key,
              g_ascii_formatd(buf, sizeof buf, "%.6g", c->theta[j]));
    }
  }
  return dt_outfile_commit(out, error);
}

/* ---- Reading measured rows ---------------------------------------------------------------- */

static gboolean parse_dims(const char *text, unsigned *v, unsigned n)
{
  g_auto(GStrv) parts = g_strsplit(text, "x", -1);
  if (g_strv_length(parts) != n)
    return FALSE;
  for (unsigned i = 0; i < n; i++) {
    char *end = NULL;
    guint64 x = g_ascii_strtoull(parts[i], &end, 10);
    if (end == parts[i] || *end != '\0' || x == 0 || x > 1000000)
      return FALSE;
    v[i] = (unsigned)x;
  }
  return TRUE;
}

static gint column(char **header, const char *name)
{
  for (gint i = 0; header[i]; i++)
    if (strcmp(g_strstrip(header[i]), name) == 0)
      return i;
  return -1;
}

static gboolean bad_row(const char *path, guint line, const char *what, GError **error)
{
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s:%u: %s", path, line, what);
  return FALSE;
}

static gboolean number(const char *path, guint line, const char *col, const char *text,
                       double *out, GError **error)
{
  char *end = NULL;
  double v = g_ascii_strtod(text, &end);
  if (end == text || *end != '\0' || !isfinite(v) || v <= 0) {
    g_autofree char *msg = g_strdup_printf("%s: '%s' is not a positive number", col, text);
    return bad_row(path, line, msg, error);
  }
  *out = v;
  return TRUE;
}

/* A whole number in [min, max] (batch sizes, filters, padding, strides). */
static gboolean whole(const char *path, guint line, const char *col, const char *text,
                      int64_t min, int64_t max, unsigned *out, GError **error)
{
  int64_t v;
  g_autoptr(GError) local = NULL;
  if (!dt_parse_int64(text, col, min, max, &v, &local))
    return bad_row(path, line, local->message, error);
  *out = (unsigned)v;
  return TRUE;
}

/* Adds a row; a device that does not load is the row's fault, so the message names it. */
static gboolean add_row(dev_calib *c, const char *path, guint line, const char *label,
                        const char *device, GArray *ops, gboolean host_overhead,
                        uint64_t link_bytes, double measured_s, GError **error)
{
  g_autoptr(GError) local = NULL;
  if (!add_row_ops(c, label, device, ops, 0, host_overhead, 0, link_bytes, measured_s, &local)) {
    if (c->overlay_failed) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--calibration: %s", local->message);
      return FALSE;
    }
    return bad_row(path, line, local->message, error);
  }
  return TRUE;
}

static gboolean kernel_row(dev_calib *c, const char *path, guint line, char **f, char **hdr,
                           const char *only_device, GError **error)
{
  gint ci[8];
  const char *cols[] = {"layer", "input_hwc", "batch", "filters", "kernel", "pad", "stride",
                        "device"};
  for (int i = 0; i < 8; i++)
    if ((ci[i] = column(hdr, cols[i])) < 0)
      return bad_row(path, 1, "missing column in a kernels table", error);
  gint tot = column(hdr, "total_ms");
  guint nf = g_strv_length(f);
  for (int i = 0; i < 8; i++)
    if ((guint)ci[i] >= nf)
      return bad_row(path, line, "too few fields", error);
  if (tot < 0 || (guint)tot >= nf)
    return bad_row(path, line, "missing total_ms", error);
  const char *device = f[ci[7]];
  if (only_device && strcmp(device, only_device) != 0)
    return TRUE;
  unsigned hwc[3], rs[2], batch, filters, pad, stride;
  double ms;
  if (!parse_dims(f[ci[1]], hwc, 3))
    return bad_row(path, line, "input_hwc: expected HxWxC", error);
  if (!parse_dims(f[ci[4]], rs, 2))
    return bad_row(path, line, "kernel: expected RxS", error);
  /* The bounds of a layer that the workload reader accepts (docs/workloads.md). */
  if (!whole(path, line, "batch", f[ci[2]], 1, 1 << 24, &batch, error) ||
      !whole(path, line, "filters", f[ci[3]], 1, 1 << 24, &filters, error) ||
      !whole(path, line, "pad", f[ci[5]], 0, 1 << 16, &pad, error) ||
      !whole(path, line, "stride", f[ci[6]], 1, 1 << 16, &stride, error) ||
      !number(path, line, "total_ms", f[tot], &ms, error))
    return FALSE;
  if (rs[0] > hwc[0] + 2 * pad || rs[1] > hwc[1] + 2 * pad)
    return bad_row(path, line, "kernel: larger than the padded input", error);
  /* Counted in floating point so that no product can wrap: at most 10^18 FLOPs and 2^56
   * elements per tensor, as for a layer of a workload file. */
  double p = (hwc[0] + 2 * pad - rs[0]) / stride + 1, q = (hwc[1] + 2 * pad - rs[1]) / stride + 1;
  double macs = (double)batch * filters * hwc[2] * rs[0] * rs[1] * p * q;
  double elems = MAX(MAX((double)batch * hwc[0] * hwc[1] * hwc[2], (double)batch * p * q * filters),
                     (double)filters * hwc[2] * rs[0] * rs[1]);
  if (2 * macs > 1e18 || elems > 0x1p56)
    return bad_row(path, line, "the layer is too large (over 10^18 FLOPs or 2^56 elements)",
                   error);
  g_autoptr(GArray) ops = g_array_sized_new(FALSE, FALSE, sizeof(wl_op_cost), 3);
  g_array_set_size(ops, 3);
  dev__conv_ops(batch, hwc[0], hwc[1], hwc[2], filters, rs[0], rs[1], pad, stride,
                WL_PREC_FP32, (wl_op_cost *)(void *)ops->data);
  g_autofree char *label = g_strdup_printf("%s n=%u", f[ci[0]], batch);
  return add_row(c, path, line, label, device, ops, FALSE, 0, ms * 1e-3, error);
}

/* The models, nets and op lists of one training table, built once each: name -> wl_model,
 * "name/batch/precision" -> wl_net (a net points into its model, so nets go first), and
 * "name/batch/precision/strategy kind" -> GArray of wl_op_cost, shared by the rows. */
typedef struct {
  GHashTable *models, *nets, *ops;
} training_cache;

static void training_cache_clear(training_cache *tc)
{
  g_clear_pointer(&tc->ops, g_hash_table_unref);
  g_clear_pointer(&tc->nets, g_hash_table_unref);
  g_clear_pointer(&tc->models, g_hash_table_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(training_cache, training_cache_clear)

static gboolean training_row(dev_calib *c, training_cache *tc, const char *path, guint line,
                             char **f, char **hdr, const char *only_device, GError **error)
{
  const char *cols[] = {"model", "precision", "device", "nodes", "devices_per_node",
                        "batch_per_device", "strategy", "ps_placement", "measured", "unit"};
  gint ci[10];
  guint nf = g_strv_length(f);
  for (int i = 0; i < 10; i++) {
    if ((ci[i] = column(hdr, cols[i])) < 0)
      return bad_row(path, 1, "missing column in a training table", error);
    if ((guint)ci[i] >= nf)
      return bad_row(path, line, "too few fields", error);
  }
  /* Only single-device rows: more devices need the communication model. */
  if (strcmp(f[ci[3]], "1") != 0 || strcmp(f[ci[4]], "1") != 0)
    return TRUE;
  const char *device = f[ci[2]];
  if (only_device && strcmp(device, only_device) != 0)
    return TRUE;
  int prec = wl_precision_parse(f[ci[1]]);
  if (prec < 0)
    return bad_row(path, line, "precision: unknown (fp32, tf32, fp16, bf16, amp)", error);
  unsigned batch;
  double measured;
  if (!whole(path, line, "batch_per_device", f[ci[5]], 1, 1 << 24, &batch, error) ||
      !number(path, line, "measured", f[ci[8]], &measured, error))
    return FALSE;
  g_autoptr(GError) local = NULL;
  wl_model *model = g_hash_table_lookup(tc->models, f[ci[0]]);
  if (model == NULL) {
    model = wl_model_load(f[ci[0]], &local);
    if (model == NULL) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s:%u: model: %s", path, line,
                  local->message);
      return FALSE;
    }
    g_hash_table_insert(tc->models, g_strdup(f[ci[0]]), model);
  }
  g_autofree char *net_key = g_strdup_printf("%s/%u/%d", f[ci[0]], batch, prec);
  wl_net *net = g_hash_table_lookup(tc->nets, net_key);
  if (net == NULL) {
    net = wl_net_new(model, batch, (wl_precision)prec, &local);
    if (net == NULL) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s:%u: %s", path, line, local->message);
      return FALSE;
    }
    g_hash_table_insert(tc->nets, g_steal_pointer(&net_key), net);
  }
  const char *strategy = f[ci[6]], *unit = f[ci[9]];
  gboolean fwd_bwd_only = strcmp(strategy, "fwd+bwd") == 0;
  double step_s;
  if (strcmp(unit, "ms") == 0)
    step_s = measured * 1e-3;
  else if (strcmp(unit, "images_per_s") == 0)
    step_s = (double)batch / measured;
  else
    return bad_row(path, line, "unit: expected ms or images_per_s", error);
  wl_totals tot;
  wl_net_totals(net, &tot);
  g_autofree char *ops_key =
      g_strdup_printf("%s/%u/%d/%d", f[ci[0]], batch, prec, fwd_bwd_only);
  GArray *ops = g_hash_table_lookup(tc->ops, ops_key);
  if (ops == NULL) {
    size_t n_layers = wl_net_n_layers(net);
    ops = g_array_sized_new(FALSE, FALSE, sizeof(wl_op_cost), (guint)(4 * n_layers));
    for (size_t i = 0; i < n_layers; i++) {
      const wl_layer *L = wl_net_layer(net, i);
      for (int p = WL_PASS_FORWARD; p <= WL_PASS_BACKWARD_WEIGHTS; p++)
        if (L->has_pass[p])
          g_array_append_val(ops, L->cost[p]);
      if (!fwd_bwd_only && L->has_pass[WL_PASS_UPDATE]) {
        wl_op_cost u;
        /* tf_cnn_benchmarks trains with plain SGD by default. */
        wl_net_update_cost(net, i, WL_OPT_SGD, &u);
        g_array_append_val(ops, u);
      }
    }
    g_hash_table_insert(tc->ops, g_steal_pointer(&ops_key), ops);
  }
  /* A parameter server on the host CPU: every step pulls the parameters and pushes the
   * gradients over the host link. Synthetic data lives on the device (no input copy). */
  uint64_t link = 0;
  if (strcmp(strategy, "ps") == 0 && strcmp(f[ci[7]], "cpu") == 0)
    link = tot.param_bytes + tot.grad_bytes;
  g_autofree char *label =
      g_strdup_printf("%s %s b=%u %s", f[ci[0]], f[ci[1]], batch, strategy);
  return add_row(c, path, line, label, device, ops, !fwd_bwd_only, link, step_s, error);
}

gboolean dev_calib_load_csv(dev_calib *c, const char *path, const char *only_device,
                            GError **error)
{
  g_autofree char *data = NULL;
  gsize len = 0;
  if (!dt_read_file(path, NULL, DT_INPUT_MAX_BYTES, &data, &len, error))
    return FALSE;
  g_auto(GStrv) lines = g_strsplit(data, "\n", -1);
  if (lines[0] == NULL || *g_strstrip(lines[0]) == '\0') {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: empty file", path);
    return FALSE;
  }
  g_auto(GStrv) hdr = g_strsplit(lines[0], ",", -1);
  gboolean kernels = column(hdr, "input_hwc") >= 0;
  gboolean training = column(hdr, "model") >= 0 && column(hdr, "measured") >= 0;
  if (!kernels && !training) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s:1: not a measurement table (expected the columns of training.csv or "
                "kernels.csv)", path);
    return FALSE;
  }
  g_auto(training_cache) tc = {
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)wl_model_free),
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)wl_net_free),
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_array_unref)};
  for (guint i = 1; lines[i]; i++) {
    char *l = g_strstrip(lines[i]);
    if (*l == '\0' || *l == '#')
      continue;
    g_auto(GStrv) f = g_strsplit(l, ",", -1);
    gboolean ok = kernels ? kernel_row(c, path, i + 1, f, hdr, only_device, error)
                          : training_row(c, &tc, path, i + 1, f, hdr, only_device, error);
    if (!ok)
      return FALSE;
  }
  return TRUE;
}
