/* The whole training run from one steady iteration (see trainrun.h and docs/trainrun.md). */
#include "trainrun.h"

#include "util.h"

#include <math.h>

double sim_trainrun_young_interval_s(double write_s, double mtbf_s)
{
  return sqrt(2 * write_s * mtbf_s);
}

double sim_trainrun_daly_interval_s(double write_s, double mtbf_s)
{
  if (write_s <= 0 || mtbf_s <= 0)
    return 0;
  if (write_s >= 2 * mtbf_s)
    return mtbf_s;
  double x = write_s / (2 * mtbf_s);
  return sqrt(2 * write_s * mtbf_s) * (1 + sqrt(x) / 3 + x / 9) - write_s;
}

double sim_trainrun_wall_s(double solve_s, double interval_s, double write_s, double restart_s,
                           double mtbf_s)
{
  if (mtbf_s <= 0)
    return interval_s > 0 ? solve_s * (interval_s + write_s) / interval_s : solve_s;
  /* M (e^((t+d)/M) - 1) / t tends to 1 as t and d go to 0 together. */
  double per_work = interval_s > 0 ? mtbf_s * expm1((interval_s + write_s) / mtbf_s) / interval_s
                                   : (write_s > 0 ? INFINITY : 1);
  return solve_s * exp(restart_s / mtbf_s) * per_work;
}

gboolean sim_trainrun_compute(const sim_trainrun_opts *o, const sim_trainrun_step *step,
                              sim_trainrun *out, GError **error)
{
  *out = (sim_trainrun){0};
  gboolean tokens = o->train_tokens > 0;
  uint64_t target = tokens ? o->train_tokens : o->train_samples;
  uint64_t per_iteration = tokens ? step->tokens_per_iteration : step->samples_per_iteration;
  const char *where = o->target_where ? o->target_where
                                      : tokens ? "--train-tokens" : "--train-samples";
  if (tokens && per_iteration == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: the model trains on samples without a "
                "sequence length; use --train-samples", where);
    return FALSE;
  }
  if (per_iteration == 0 || !(step->iteration_time_s > 0)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: an iteration of this job trains nothing",
                where);
    return FALSE;
  }
  out->iterations = target / per_iteration + (target % per_iteration != 0);
  out->solve_time_s = (double)out->iterations * step->iteration_time_s;
  out->job_mtbf_s = o->mtbf_hours > 0 ? o->mtbf_hours * 3600 / step->devices : 0;
  out->checkpoint_interval_s = o->checkpoint_interval_s > 0
                                   ? o->checkpoint_interval_s
                                   : sim_trainrun_daly_interval_s(o->checkpoint_write_s,
                                                                  out->job_mtbf_s);
  out->train_time_s = sim_trainrun_wall_s(out->solve_time_s, out->checkpoint_interval_s,
                                          o->checkpoint_write_s, o->restart_s, out->job_mtbf_s);
  if (!isfinite(out->train_time_s)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: with %u devices the job fails every %.3g s "
                "on average; with checkpoints every %.3g s and restarts of %.3g s the run never "
                "ends", o->mtbf_where ? o->mtbf_where : "--mtbf-hours", step->devices,
                out->job_mtbf_s, out->checkpoint_interval_s, o->restart_s);
    return FALSE;
  }
  out->expected_failures = out->job_mtbf_s > 0 ? out->train_time_s / out->job_mtbf_s : 0;
  out->goodput = out->train_time_s > 0 ? out->solve_time_s / out->train_time_s : 1;
  out->has_cost = o->gpu_hour_cost_usd >= 0;
  if (out->has_cost)
    out->train_cost_usd = (double)step->devices * out->train_time_s / 3600 * o->gpu_hour_cost_usd;
  return TRUE;
}
