/* Checked picosecond arithmetic and rate conversions (see sim_time.h). */
#include "sim_time.h"

#include <math.h>

bool sim_time_add(sim_time_ps a, sim_time_ps b, sim_time_ps *out)
{
  sim_time_ps r;
  if (__builtin_add_overflow(a, b, &r))
    return false;
  *out = r;
  return true;
}

bool sim_time_mul(sim_time_ps a, int64_t k, sim_time_ps *out)
{
  sim_time_ps r;
  if (__builtin_mul_overflow(a, k, &r))
    return false;
  *out = r;
  return true;
}

sim_time_ps sim_time_add_sat(sim_time_ps a, sim_time_ps b)
{
  sim_time_ps r;
  return sim_time_add(a, b, &r) ? r : SIM_TIME_MAX;
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
  long double ps = (long double)work * 1e12L / (long double)per_s;
  if (!(ps < (long double)SIM_TIME_MAX))
    return SIM_TIME_MAX;
  /* ceill(ps), without the library call: the conversion truncates a positive value. */
  sim_time_ps t = (sim_time_ps)ps;
  return (long double)t < ps ? t + 1 : t;
}
