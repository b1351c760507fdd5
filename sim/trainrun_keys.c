/* The options of the whole training run (--train-tokens, --gpu-hour-cost, --mtbf-hours...):
 * their keys, their checks, and the step from a simulated iteration to the run's time, cost
 * and goodput (the formulas are in trainrun.c). */
#include "trainrun_keys.h"

#include "util.h"

static const sim_key trainrun_keys[] = {
    {"train-tokens", SIM_KEY_INT, SIM_KEY_OFF(train_tokens), NULL, 1, INT64_C(1000000000000000),
     .commands = SIM_OPTS_RUN, .arg = "N",
     .help = "the whole run: tokens to train on (sequence models); adds train_time_s"},
    {"train-samples", SIM_KEY_INT, SIM_KEY_OFF(train_samples), NULL, 1,
     INT64_C(1000000000000000), .commands = SIM_OPTS_RUN, .arg = "N",
     .help = "the whole run: samples to train on; adds train_time_s"},
    {"gpu-hour-cost", SIM_KEY_DOUBLE, SIM_KEY_OFF(gpu_hour_cost), NULL, 0, 1000000,
     .commands = SIM_OPTS_RUN, .arg = "USD", .help = "price of one device-hour: train_cost_usd"},
    {"mtbf-hours", SIM_KEY_DOUBLE, SIM_KEY_OFF(mtbf_hours), NULL, 0, 1000000000,
     .commands = SIM_OPTS_RUN, .arg = "H",
     .help = "mean time between failures of one device (the job fails when any does), hours"},
    {"checkpoint-interval-min", SIM_KEY_DOUBLE, SIM_KEY_OFF(checkpoint_interval_min), NULL, 0,
     100000000, .commands = SIM_OPTS_RUN, .arg = "M",
     .help = "minutes of training between checkpoints (default: Daly's optimum)"},
    {"checkpoint-write-s", SIM_KEY_DOUBLE, SIM_KEY_OFF(checkpoint_write_s), NULL, 0, 100000000,
     .commands = SIM_OPTS_RUN, .arg = "S", .help = "seconds to write one checkpoint (default 0)"},
    {"restart-s", SIM_KEY_DOUBLE, SIM_KEY_OFF(restart_s), NULL, 0, 100000000,
     .commands = SIM_OPTS_RUN, .arg = "R",
     .help = "seconds from a failure to training again from the last checkpoint (default 0)"},
};
const sim_key_group sim_keys_trainrun = SIM_KEY_GROUP("train", 0, trainrun_keys);

gboolean sim_trainrun_asked(const sim_scenario *s)
{
  return s->train_tokens > 0 || s->train_samples > 0;
}

gboolean sim_trainrun_check(const sim_scenario *s, GError **error)
{
  if (s->train_tokens > 0 && s->train_samples > 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: give --train-tokens or --train-samples, "
                "not both", sim_scenario_where(s, "train-samples"));
    return FALSE;
  }
  static const char *const needs_target[] = {"gpu-hour-cost", "mtbf-hours",
                                             "checkpoint-interval-min", "checkpoint-write-s",
                                             "restart-s"};
  for (gsize i = 0; i < G_N_ELEMENTS(needs_target); i++) {
    if (sim_scenario_given(s, needs_target[i]) && !sim_trainrun_asked(s)) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: applies to a whole run: give "
                  "--train-tokens or --train-samples", sim_scenario_where(s, needs_target[i]));
      return FALSE;
    }
  }
  if (sim_scenario_given(s, "mtbf-hours") && !(s->mtbf_hours > 0)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: a mean time between failures must be "
                "more than 0 hours", sim_scenario_where(s, "mtbf-hours"));
    return FALSE;
  }
  if (sim_scenario_given(s, "checkpoint-interval-min") && !(s->checkpoint_interval_min > 0)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: checkpoints must be more than 0 minutes "
                "apart", sim_scenario_where(s, "checkpoint-interval-min"));
    return FALSE;
  }
  return TRUE;
}

void sim_trainrun_opts_from_scenario(const sim_scenario *s, sim_trainrun_opts *o)
{
  *o = (sim_trainrun_opts){
      .train_tokens = (uint64_t)s->train_tokens,
      .train_samples = (uint64_t)s->train_samples,
      .gpu_hour_cost_usd = sim_scenario_given(s, "gpu-hour-cost") ? s->gpu_hour_cost : -1,
      .mtbf_hours = s->mtbf_hours,
      .checkpoint_interval_s = s->checkpoint_interval_min * 60,
      .checkpoint_write_s = s->checkpoint_write_s,
      .restart_s = s->restart_s,
      .target_where = sim_scenario_where(s, s->train_tokens > 0 ? "train-tokens" : "train-samples"),
      .mtbf_where = sim_scenario_where(s, "mtbf-hours"),
  };
}

gboolean sim_trainrun_report(const sim_scenario *s, sim_report *r, GError **error)
{
  if (!sim_trainrun_asked(s))
    return TRUE;
  sim_trainrun_opts o;
  sim_trainrun_opts_from_scenario(s, &o);
  sim_trainrun_step step = {
      .iteration_time_s = r->iteration_time_s,
      .samples_per_iteration = r->samples_per_iteration,
      .tokens_per_iteration = r->tokens_per_iteration,
      .devices = r->devices,
  };
  if (!sim_trainrun_compute(&o, &step, &r->train, error))
    return FALSE;
  r->has_train = TRUE;
  return TRUE;
}
