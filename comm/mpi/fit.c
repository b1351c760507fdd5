/* Statistics of repeated measurements and the latency/bandwidth fit (see comm_mpi.h). */
#include "comm_mpi.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double comm_mpi_median(const double *values, size_t n)
{
  g_return_val_if_fail(values != NULL && n > 0, NAN);
  double *copy = g_new(double, n);
  memcpy(copy, values, n * sizeof *copy);
  qsort(copy, n, sizeof *copy, cmp_double);
  double m = n % 2 ? copy[n / 2] : 0.5 * (copy[n / 2 - 1] + copy[n / 2]);
  g_free(copy);
  return m;
}

gboolean comm_mpi_fit_points(const comm_mpi_point *points, size_t n, comm_mpi_fit *out,
                             GError **error)
{
  g_return_val_if_fail(out != NULL, FALSE);
  /* Weighted least squares with w = 1/t^2: minimizes the sum of squared relative errors, so
   * the latency (read from small messages) and the bandwidth (read from large ones) are both
   * fitted rather than the largest sizes drowning the smallest. */
  double s = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  double xmin = INFINITY, xmax = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    double x = points[i].bytes, y = points[i].time_s;
    if (!(y > 0) || !isfinite(y) || !(x >= 0)) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "measured point %zu (%.0f bytes, %g s) is not a positive time", i, x, y);
      return FALSE;
    }
    double w = 1.0 / (y * y);
    s += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
    xmin = fmin(xmin, x);
    xmax = fmax(xmax, x);
  }
  if (n < 2 || !(xmax > xmin)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "a latency/bandwidth fit needs at least two different message sizes");
    return FALSE;
  }
  double det = s * sxx - sx * sx;
  double slope = (s * sxy - sx * sy) / det;
  double intercept = (sy - slope * sx) / s;
  out->negative_latency = intercept < 0;
  if (intercept < 0) {
    /* A negative latency has no meaning: refit the line through the origin. */
    intercept = 0;
    slope = sxy / sxx;
  }
  if (!(slope > 0) || !isfinite(slope)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "transfer time does not grow with message size (slope %g s/byte): no bandwidth "
                "can be fitted; use larger sizes", slope);
    return FALSE;
  }
  out->latency_s = intercept;
  out->bandwidth_Bps = 1.0 / slope;
  out->max_rel_residual = 0;
  for (size_t i = 0; i < n; i++) {
    double fit = intercept + slope * points[i].bytes;
    out->max_rel_residual =
        fmax(out->max_rel_residual, fabs(fit - points[i].time_s) / points[i].time_s);
  }
  return TRUE;
}

double comm_mpi_rel_error(double predicted_s, double measured_s)
{
  return (predicted_s - measured_s) / measured_s;
}

double comm_mpi_geomean_error(const double *predicted_s, const double *measured_s, size_t n)
{
  double sum = 0;
  size_t used = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(predicted_s[i] > 0) || !(measured_s[i] > 0))
      continue;
    sum += fabs(log(predicted_s[i] / measured_s[i]));
    used++;
  }
  return used ? expm1(sum / (double)used) : NAN;
}
