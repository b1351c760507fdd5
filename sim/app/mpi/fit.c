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

/* Sum of squared relative residuals of a fit over points. */
static double sq_residuals(const comm_mpi_fit *fit, const comm_mpi_point *points, size_t n)
{
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    double r = (fit->latency_s + points[i].bytes / fit->bandwidth_Bps - points[i].time_s) /
               points[i].time_s;
    sum += r * r;
  }
  return sum;
}

static int cmp_point(const void *a, const void *b)
{
  const comm_mpi_point *x = a, *y = b;
  return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

gboolean comm_mpi_fit_regimes(const comm_mpi_point *points, size_t n, comm_mpi_regimes *out,
                              GError **error)
{
  g_return_val_if_fail(out != NULL, FALSE);
  comm_mpi_fit single;
  if (!comm_mpi_fit_points(points, n, &single, error))
    return FALSE;
  *out = (comm_mpi_regimes){.small = single, .large = single, .break_bytes = 0,
                            .piecewise = FALSE, .single_max_rel_residual = single.max_rel_residual};
  /* Sorted by size (a stable order for equal sizes is not needed: a break never falls
   * between two points of one size). */
  g_autofree comm_mpi_point *sorted = g_memdup2(points, n * sizeof *points);
  qsort(sorted, n, sizeof *sorted, cmp_point);
  double best_ssr = INFINITY;
  size_t sizes_below = 0;
  for (size_t k = 1; k < n; k++) {
    if (sorted[k].bytes == sorted[k - 1].bytes)
      continue;
    sizes_below++; /* distinct sizes in sorted[0 .. k) */
    size_t sizes_above = 1;
    for (size_t j = k + 1; j < n; j++)
      sizes_above += sorted[j].bytes != sorted[j - 1].bytes;
    /* Two sizes always lie on a line, so a side needs three to be judged by its residuals. */
    if (sizes_below < 3 || sizes_above < 3)
      continue;
    comm_mpi_fit lo, hi;
    /* A side whose times do not grow with size has no line: that break is not a candidate. */
    if (!comm_mpi_fit_points(sorted, k, &lo, NULL) ||
        !comm_mpi_fit_points(sorted + k, n - k, &hi, NULL))
      continue;
    double ssr = sq_residuals(&lo, sorted, k) + sq_residuals(&hi, sorted + k, n - k);
    if (ssr < best_ssr) {
      best_ssr = ssr;
      out->small = lo;
      out->large = hi;
      out->break_bytes = sorted[k].bytes;
    }
  }
  /* One line within 5% of every point is kept: repeated measurements on a shared machine
   * scatter by about that much, so a break would only fit noise. A break must also at least
   * halve the sum of squared residuals to be worth its two more parameters. (Its largest
   * residual may stay high: above the last-level cache the large regime bends again, which
   * one line per regime cannot follow.) */
  if (isfinite(best_ssr) && single.max_rel_residual > 0.05 &&
      best_ssr <= 0.5 * sq_residuals(&single, points, n)) {
    out->piecewise = TRUE;
    double sw = 0, swl = 0;
    for (size_t i = 0; i < n && sorted[i].bytes < out->break_bytes; i++) {
      double t = sorted[i].time_s, w = 1.0 / (t * t);
      sw += w;
      swl += w * (t - sorted[i].bytes / out->large.bandwidth_Bps);
    }
    out->small_latency_s = fmin(fmax(swl / sw, 0.0), out->large.latency_s);
  } else {
    out->small = out->large = single;
    out->break_bytes = 0;
    out->small_latency_s = single.latency_s;
  }
  return TRUE;
}

gboolean comm_mpi_fit_switch(const comm_mpi_point *points, size_t n, double from_bytes,
                             double pingpong_Bps, uint32_t ranks, double *per_rank_Bps,
                             double *link_Bps, double *switch_Bps, GError **error)
{
  g_return_val_if_fail(pingpong_Bps > 0 && ranks >= 2, FALSE);
  g_autofree comm_mpi_point *used = g_new(comm_mpi_point, MAX(n, 1));
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (points[i].bytes >= from_bytes)
      used[k++] = points[i];
  comm_mpi_fit fit;
  if (!comm_mpi_fit_points(used, k, &fit, error)) {
    g_prefix_error(error, "exchanges: ");
    return FALSE;
  }
  double r = fit.bandwidth_Bps, link = fmax(pingpong_Bps, r);
  *per_rank_Bps = r;
  *link_Bps = link;
  *switch_Bps = r >= 0.95 * link ? 0 : fmax(ranks * r, link);
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
