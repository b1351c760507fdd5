/* The whole training run: from one steady iteration to the wall time, cost, failures and
 * goodput of training on a given number of tokens or samples, with periodic checkpoints,
 * device failures and restarts.
 *
 * Pure functions of typed inputs (no scenario, no simulation), so that every formula can be
 * checked by hand; docs/trainrun.md derives them:
 *
 *   iterations  n   = ceil(train tokens (samples) / tokens (samples) per iteration)
 *   solve time  Ts  = n x iteration time                        (failure-free work, s)
 *   job MTBF    M   = device MTBF / devices          (the job fails when any device does)
 *   interval    t   = given, or Daly's higher-order optimum for checkpoint write time d:
 *                     t = sqrt(2 d M) [1 + sqrt(d / 2M) / 3 + (d / 2M) / 9] - d  (d < 2M),
 *                     t = M                                                       (d >= 2M)
 *   wall time   Tw  = M e^(R/M) (e^((t + d)/M) - 1) Ts / t      (Daly 2006, restart time R)
 *                     and without failures (no MTBF): Tw = Ts (t + d) / t, or Ts without
 *                     checkpoints
 *   failures        = Tw / M;  goodput = Ts / Tw;  cost = devices x Tw / 3600 x price. */
#ifndef DTSIM_TRAINRUN_H
#define DTSIM_TRAINRUN_H

#include <glib.h>
#include <stdint.h>

/* What the user asked of the run. Zero means "not given" for the targets, the MTBF and the
 * interval; a zero write or restart time is a free checkpoint or restart. */
typedef struct {
  uint64_t train_tokens;          /* tokens to train on (sequence models), or 0 */
  uint64_t train_samples;         /* samples to train on, or 0 (exactly one of the two is set) */
  double gpu_hour_cost_usd;       /* price of one device for one hour, USD; < 0: not given */
  double mtbf_hours;              /* mean time between failures of one device, hours; 0: none */
  double checkpoint_interval_s;   /* work between checkpoints, s; 0: Daly's optimum */
  double checkpoint_write_s;      /* time to write one checkpoint, s */
  double restart_s;               /* time from a failure to work resuming from the last
                                   * checkpoint (rescheduling, loading), s */
  const char *target_where;       /* how errors name the target ("--train-tokens"), or NULL */
  const char *mtbf_where;         /* ... and the MTBF, or NULL */
} sim_trainrun_opts;

/* What one steady iteration of the job does, from the simulation. */
typedef struct {
  double iteration_time_s;
  uint64_t samples_per_iteration;
  uint64_t tokens_per_iteration;  /* 0: not a sequence model */
  uint32_t devices;
} sim_trainrun_step;

typedef struct {
  uint64_t iterations;            /* whole iterations to reach the target */
  double solve_time_s;            /* iterations x iteration time: the useful work, s */
  double job_mtbf_s;              /* mean time between failures of the job, s (0: none) */
  double checkpoint_interval_s;   /* work between checkpoints, s (0: no checkpoints) */
  double train_time_s;            /* expected wall time, s */
  double expected_failures;       /* expected failures during the run */
  double goodput;                 /* solve time over wall time, in (0, 1] */
  double train_cost_usd;          /* devices x wall hours x price (0 without a price) */
  gboolean has_cost;              /* a price was given */
} sim_trainrun;

/* Young's first-order optimum checkpoint interval sqrt(2 d M), s. */
double sim_trainrun_young_interval_s(double write_s, double mtbf_s);
/* Daly's higher-order optimum checkpoint interval (see above), s; 0 when write_s is 0. */
double sim_trainrun_daly_interval_s(double write_s, double mtbf_s);
/* Daly's expected wall time of solve_s of work in intervals of interval_s (> 0) with checkpoints
 * of write_s, restarts of restart_s and exponentially distributed failures of mean mtbf_s
 * (0: no failures), s. An interval of 0 stands for its limit, free continuous checkpoints
 * (write_s 0): Ts e^(R/M). Infinite when it overflows a double. */
double sim_trainrun_wall_s(double solve_s, double interval_s, double write_s, double restart_s,
                           double mtbf_s);

/* The whole run. Errors (DT_ERROR_INPUT) name the option (the `*_where` of o): tokens asked
 * of a model without sequences, an iteration that trains nothing, a run whose expected time
 * overflows (failures far more frequent than checkpoints). */
gboolean sim_trainrun_compute(const sim_trainrun_opts *o, const sim_trainrun_step *step,
                              sim_trainrun *out, GError **error);

#endif
