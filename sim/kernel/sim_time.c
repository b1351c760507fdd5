/* Checked picosecond arithmetic and rate conversions (see sim_time.h). */
#include "sim_time.h"

#include <math.h>

bool sim_time_mul(sim_time_ps a, int64_t k, sim_time_ps *out)
{
  sim_time_ps r;
  if (__builtin_mul_overflow(a, k, &r))
    return false;
  *out = r;
  return true;
}

sim_time_ps sim_time_from_s(double seconds)
{
  if (!(seconds > 0.0))     /* also catches NaN */
    return 0;
  long double ps = (long double)seconds * 1e12L;
  if (ps >= (long double)SIM_TIME_MAX)
    return SIM_TIME_MAX;
  return (sim_time_ps)llroundl(ps);
}

double sim_time_to_s(sim_time_ps t) { return (double)t * 1e-12; }
double sim_time_to_us(sim_time_ps t) { return (double)t * 1e-6; }

sim_time_ps sim_time_for_work(double work, double per_s)
{
  if (!(work > 0.0))
    return 0;
  if (!(per_s > 0.0) || isinf(work))
    return SIM_TIME_MAX;
  /* Fast path in double, exact: the double quotient d is within d * 2^-51.9 of the long double
   * one below (two roundings of 2^-53 each against two of 2^-64), so when no integer lies in
   * [d - d * 2^-49, d + d * 2^-49] (both ends rounded outwards by at most d * 2^-53), both round
   * up to the same integer. Otherwise (a quotient that is an integer or very close to one, or
   * out of the range where the bounds hold) the long double computation decides. */
  double p = work * 1e12;
  double d = p / per_s;
  if (p >= 0x1p-900 && d >= 0x1p-900 && d < 0x1p52) {
    double m = d * 0x1p-49;
    double lo = d - m, hi = d + m;
    int64_t below = (int64_t)lo;   /* floor: lo >= 0 */
    if (lo > (double)below && hi <= (double)(below + 1))
      return below + 1;
  }
  long double ps = (long double)work * 1e12L / (long double)per_s;
  if (!(ps < (long double)SIM_TIME_MAX))
    return SIM_TIME_MAX;
  /* ceill(ps), without the library call: the conversion truncates a positive value. */
  sim_time_ps t = (sim_time_ps)ps;
  return (long double)t < ps ? t + 1 : t;
}
