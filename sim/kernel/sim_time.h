/* Simulated time: signed 64-bit integer picoseconds (about 106 days of range).
 *
 * Every duration inside the engine is an integer number of picoseconds, so event order never
 * depends on floating-point rounding. Conversions from rates (bytes per second, FLOP/s) go
 * through one wide intermediate and one rounding (up: a transfer never finishes early). Time
 * becomes microseconds only in the Chrome trace writer and seconds only in reports. */
#ifndef DTSIM_SIM_TIME_H
#define DTSIM_SIM_TIME_H

#include <stdbool.h>
#include <stdint.h>

typedef int64_t sim_time_ps;

#define SIM_TIME_MAX INT64_MAX
#define SIM_PS(x) ((sim_time_ps)(x))
#define SIM_NS(x) ((sim_time_ps)(x) * INT64_C(1000))
#define SIM_US(x) ((sim_time_ps)(x) * INT64_C(1000000))
#define SIM_MS(x) ((sim_time_ps)(x) * INT64_C(1000000000))
#define SIM_S(x)  ((sim_time_ps)(x) * INT64_C(1000000000000))

/* Checked arithmetic: false (and *out untouched) when the exact result does not fit. Inline:
 * every transfer adds the latencies of its route. */
static inline bool sim_time_add(sim_time_ps a, sim_time_ps b, sim_time_ps *out)
{
  sim_time_ps r;
  if (__builtin_add_overflow(a, b, &r))
    return false;
  *out = r;
  return true;
}
bool sim_time_mul(sim_time_ps a, int64_t k, sim_time_ps *out);
/* Saturating addition: SIM_TIME_MAX on overflow (both operands must be non-negative). */
static inline sim_time_ps sim_time_add_sat(sim_time_ps a, sim_time_ps b)
{
  sim_time_ps r;
  return sim_time_add(a, b, &r) ? r : SIM_TIME_MAX;
}

/* Seconds (finite, >= 0) to picoseconds, rounded to nearest; saturates at SIM_TIME_MAX. */
sim_time_ps sim_time_from_s(double seconds);
double sim_time_to_s(sim_time_ps t);
double sim_time_to_us(sim_time_ps t);

/* The one conversion of an amount of work (bytes, FLOPs) at a rate (bytes/s, FLOP/s) into
 * time: ceil(work * 1e12 / per_s) picoseconds, one rounding up in long double (exact for
 * integers below 2^64 / 1e12 and rates that divide them). Every model uses it, so the flow and
 * analytic networks agree to the picosecond on idle links. Saturates at SIM_TIME_MAX; a rate
 * <= 0 or NaN gives SIM_TIME_MAX; no work gives 0. */
sim_time_ps sim_time_for_work(double work, double per_s);

#endif
