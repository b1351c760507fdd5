/* Layer-wise model parallelism and pipelines.
 *
 * The model's layers are cut into P contiguous stages (balanced by forward + backward time, or
 * at the user's --split), one device per stage. A mini-batch is cut into M micro-batches; each
 * stage runs forward on a micro-batch, sends its output activations point to point to the next
 * stage, and in backward sends the activation gradients back. The schedule decides the order of
 * each stage's forward and backward passes (schedule.h):
 *   GPipe: all M forwards, then all M backwards (bubble (P-1)/(M+P-1) of the iteration);
 *   1F1B:  P-1-s warm-up forwards on stage s, then one forward and one backward alternately,
 *          which keeps at most P-s micro-batches of activations alive.
 * `mp` is the same with one micro-batch. With R replicas of the pipeline (hybrid dp-pp, or pp
 * with --stages smaller than the device count), each stage's gradients are all-reduced over the
 * replicas before the update. Cost tables passed in are per micro-batch. */
#include "plan.h"
#include "schedule.h"
#include "strategy.h"

#include "util.h"

#include <string.h>

typedef struct {
  sim_stream_id compute, copy, fwd_send, fwd_recv, bwd_send, bwd_recv, comm, host;
  sim_task_id step, last;    /* this iteration's framework step; the previous iteration's end */
} stage_streams;

static sim_time_ps sum_range(const sim_costs *c, uint32_t a, uint32_t b, int which)
{
  sim_time_ps t = 0;
  for (uint32_t i = a; i < b; i++) {
    const sim_layer_cost *l = sim_costs_layer(c, i);
    switch (which) {
    case 0: t += l->forward_ps; break;
    case 1: /* The first layer computes no data gradient (as in strategy_dp.c). */
      t += (i > 0 ? l->backward_data_ps : 0) + l->backward_weights_ps;
      break;
    default: t += l->update_ps; break;
    }
  }
  return t;
}

static uint64_t bytes_range(const sim_costs *c, uint32_t a, uint32_t b)
{
  uint64_t sum = 0;
  for (uint32_t i = a; i < b; i++)
    sum += sim_costs_layer(c, i)->param_bytes;
  return sum;
}

sim_plan *sim__pipeline_build(const sim_costs *c, const sim_plan_opts *o, uint32_t P, uint32_t R,
                              uint32_t M, GError **error);

/* The schedules these pipelines run: GPipe and 1F1B with one model chunk per device; the
 * interleaved schedule is --strategy 3d's. */
static gboolean check_schedule(const sim_plan_opts *o, GError **error)
{
  const sim_scenario *s = o->scenario;
  if (s && s->schedule == WL_SCHED_INTERLEAVED) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: interleaved needs --strategy 3d (%s runs gpipe or 1f1b)",
                sim_scenario_where(s, "schedule"), sim_scenario_strategy_name(s));
    return FALSE;
  }
  return TRUE;
}

sim_plan *sim__pipeline_build(const sim_costs *c, const sim_plan_opts *o, uint32_t P, uint32_t R,
                              uint32_t M, GError **error)
{
  if (!sim__check_devices((uint64_t)P * R, "pipeline", error) || !check_schedule(o, error))
    return NULL;
  if (M == 0 || M > 100000) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--micro-batches: %u is outside 1 to 100000", M);
    return NULL;
  }
  uint32_t devices = P * R;
  uint32_t iterations = o->iterations ? o->iterations : 1;
  /* Per iteration and device: a host step, 2M computes and an update; per replica, the input
   * copy; per link between stages, 2M transfers; per stage, an allreduce. The dependencies:
   * one per backward, two per transfer, M + 1 per device around the allreduce, and at most
   * three more per device (step, copy, update). */
  uint64_t links = (uint64_t)R * (P - 1);
  uint64_t tasks = (uint64_t)devices * (2 * (uint64_t)M + 2) + R + 2 * links * M + P;
  uint64_t deps = (uint64_t)devices * (2 * (uint64_t)M + 4) + 4 * links * M;
  if (!sim_graph_check_size(iterations * tasks, error))
    return NULL;
  g_autofree uint32_t *first = g_new(uint32_t, P + 1);
  if (!sim__partition(c, P, o->split, first, error))
    return NULL;
  g_autoptr(sim_plan) p = sim__plan_new();
  sim_graph *g = p->graph;
  p->devices = devices;
  p->samples_per_iteration = (uint64_t)R * M * c->batch;
  wl_schedule schedule = o->gpipe ? WL_SCHED_GPIPE : WL_SCHED_1F1B;
  for (uint32_t s = 0; s < P; s++) {
    uint64_t in_flight = wl_tf_inflight_chunks(schedule, P, 1, M, s);
    uint64_t mem = sim__stage_memory(c, first[s], first[s + 1], in_flight);
    if (s == 0)
      mem += c->input_bytes * M;
    p->memory_per_device_bytes = MAX(p->memory_per_device_bytes, mem);
  }

  /* Activations a stage keeps per micro-batch, for the trace's memory counter. */
  g_autofree uint64_t *saved = g_new0(uint64_t, P);
  for (uint32_t s = 0; s < P; s++)
    for (uint32_t i = first[s]; i < first[s + 1]; i++)
      saved[s] += sim_costs_layer(c, i)->saved_bytes;
  g_autofree stage_streams *ss = g_new(stage_streams, devices);
  for (uint32_t r = 0; r < R; r++)
    for (uint32_t s = 0; s < P; s++) {
      uint32_t d = r * P + s;
      g_autofree char *name = R > 1 ? g_strdup_printf("gpu%u (replica %u, stage %u)", d, r, s)
                                    : g_strdup_printf("gpu%u (stage %u)", d, s);
      sim_unit_id u = sim__plan_add_unit(p, SIM_PROC_DEVICE, SIM_UNIT_DEVICE, d, name);
      ss[d].compute = sim_graph_add_stream(g, u, "compute");
      ss[d].copy = sim_graph_add_stream(g, u, "h2d");
      ss[d].fwd_send = sim_graph_add_stream(g, u, "send activations");
      ss[d].fwd_recv = sim_graph_add_stream(g, u, "receive activations");
      ss[d].bwd_send = sim_graph_add_stream(g, u, "send gradients");
      ss[d].bwd_recv = sim_graph_add_stream(g, u, "receive gradients");
      ss[d].comm = sim_graph_add_stream(g, u, "comm");
      ss[d].host = sim__host_stream(p, d / o->devices_per_node, d);
      sim_graph_set_unit_memory(g, u, sim__stage_memory(c, first[s], first[s + 1], 0));
    }
  p->probe_unit = 0;
  p->probe_compute = ss[0].compute;

  /* Task names by micro-batch, formatted once (the same on every stage and replica). */
  g_autofree const char **fwd_name = g_new(const char *, 4 * (gsize)M);
  const char **bwd_name = fwd_name + M, **act_name = fwd_name + 2 * M,
             **grad_name = fwd_name + 3 * M;
  for (uint32_t m = 0; m < M; m++) {
    char text[64];
    g_snprintf(text, sizeof text, "forward mb%u", m);
    fwd_name[m] = sim_graph_intern(g, text);
    g_snprintf(text, sizeof text, "backward mb%u", m);
    bwd_name[m] = sim_graph_intern(g, text);
    g_snprintf(text, sizeof text, "activations mb%u", m);
    act_name[m] = sim_graph_intern(g, text);
    g_snprintf(text, sizeof text, "gradients mb%u", m);
    grad_name[m] = sim_graph_intern(g, text);
  }
  g_autofree sim_schedule_unit *order = g_new(sim_schedule_unit, 2 * M);
  g_autofree sim_task_id *F = g_new(sim_task_id, (gsize)devices * M);
  g_autofree sim_task_id *B = g_new(sim_task_id, (gsize)devices * M);
  g_autofree sim_task_id *first_task = g_new0(sim_task_id, devices);
  g_autofree sim_stream_id *members = g_new(sim_stream_id, R);
  sim_graph_reserve(g, iterations * tasks, iterations * deps);
  for (uint32_t it = 0; it < iterations; it++) {
    for (uint32_t r = 0; r < R; r++)
      for (uint32_t s = 0; s < P; s++) {
        uint32_t d = r * P + s;
        sim_time_ps tf = sum_range(c, first[s], first[s + 1], 0);
        sim_time_ps tb = sum_range(c, first[s], first[s + 1], 1);
        ss[d].step = sim__host_step(p, c, ss[d].host, it > 0, ss[d].last);
        sim_task_id copy = 0;
        if (s == 0) {
          copy = sim_graph_add_compute(g, ss[d].copy, "input copy", "copy",
                                       c->input_copy_ps * M, 0, c->input_bytes * M);
          if (it > 0)
            sim_graph_depend(g, copy, first_task[d]);
        }
        sim_schedule_order(schedule, P, s, M, 1, order);
        for (uint32_t k = 0; k < 2 * M; k++) {
          uint32_t m = order[k].mb;
          if (order[k].fwd) {
            F[(gsize)d * M + m] = sim_graph_add_compute(g, ss[d].compute, fwd_name[m], "forward", tf,
                                                        0, 0);
            if (k == 0)
              sim_graph_depend(g, F[(gsize)d * M + m], ss[d].step);
            sim_graph_add_memory_delta(g, F[(gsize)d * M + m], (int64_t)saved[s]);
            if (s == 0 && m == 0) {
              sim_graph_depend(g, F[(gsize)d * M], copy);
              first_task[d] = F[(gsize)d * M];
            }
          } else {
            B[(gsize)d * M + m] = sim_graph_add_compute(g, ss[d].compute, bwd_name[m], "backward",
                                                        tb, 0, 0);
            sim_graph_add_memory_delta(g, B[(gsize)d * M + m], -(int64_t)saved[s]);
            sim_graph_depend(g, B[(gsize)d * M + m], F[(gsize)d * M + m]);
          }
        }
      }
    /* Point-to-point activations and gradients. Streams run in order, so each stream gets its
     * transfers in the order they are produced: forwards in micro-batch order on every stage,
     * backwards in the schedule's backward order (GPipe: last micro-batch first), which is
     * also the same on every stage. */
    sim_schedule_order(schedule, P, 0, M, 1, order);
    g_autofree uint32_t *bwd_order = g_new(uint32_t, M);
    for (uint32_t k = 0, j = 0; k < 2 * M; k++)
      if (!order[k].fwd)
        bwd_order[j++] = order[k].mb;
    for (uint32_t r = 0; r < R; r++)
      for (uint32_t s = 0; s + 1 < P; s++) {
        uint32_t d = r * P + s;
        uint64_t bytes = sim_costs_layer(c, first[s + 1] - 1)->output_bytes;
        for (uint32_t m = 0; m < M; m++) {
          sim_task_id a = sim_graph_add_transfer(g, ss[d].fwd_send, ss[d + 1].fwd_recv,
                                                 act_name[m], bytes);
          sim_graph_depend(g, a, F[(gsize)d * M + m]);
          sim_graph_depend(g, F[(gsize)(d + 1) * M + m], a);
        }
        for (uint32_t j = 0; j < M; j++) {
          uint32_t m = bwd_order[j];
          sim_task_id gr = sim_graph_add_transfer(g, ss[d + 1].bwd_send, ss[d].bwd_recv,
                                                  grad_name[m], bytes);
          sim_graph_depend(g, gr, B[(gsize)(d + 1) * M + m]);
          sim_graph_depend(g, B[(gsize)d * M + m], gr);
        }
      }
    /* Gradient allreduce over replicas, stage by stage, then the update. */
    for (uint32_t s = 0; s < P; s++) {
      sim_task_id ar = 0;
      uint64_t bytes = bytes_range(c, first[s], first[s + 1]);
      gboolean sync = R > 1 && bytes > 0;
      if (sync) {
        for (uint32_t r = 0; r < R; r++)
          members[r] = ss[r * P + s].comm;
        g_autofree char *name = g_strdup_printf("allreduce stage %u (%.1f MiB)", s,
                                                (double)bytes / (1 << 20));
        ar = sim_graph_add_collective(g, members, R, name, SIM_OP_ALLREDUCE, o->allreduce, bytes);
        for (uint32_t r = 0; r < R; r++)
          for (uint32_t m = 0; m < M; m++)
            sim_graph_depend(g, ar, B[(gsize)(r * P + s) * M + m]);
      }
      for (uint32_t r = 0; r < R; r++) {
        uint32_t d = r * P + s;
        sim_task_id u = sim_graph_add_compute(g, ss[d].compute, "update", "update",
                                              sum_range(c, first[s], first[s + 1], 2), 0, bytes);
        if (sync)
          sim_graph_depend(g, u, ar);
        ss[d].last = u;
        if (d == 0)
          g_array_append_val(p->iteration_end, u);
      }
    }
  }
  return g_steal_pointer(&p);
}

static sim_plan *pp_build(const sim_costs *c, const sim_plan_opts *o, GError **error)
{
  uint64_t devices = (uint64_t)o->nodes * o->devices_per_node;
  uint32_t P = o->stages ? o->stages : (uint32_t)MIN(devices, 1000000);
  if (devices % P != 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "--stages: %u stages do not divide %" G_GUINT64_FORMAT " devices", P, devices);
    return NULL;
  }
  return sim__pipeline_build(c, o, P, (uint32_t)(devices / P), o->micro_batches, error);
}

static sim_plan *mp_build(const sim_costs *c, const sim_plan_opts *o, GError **error)
{
  uint64_t devices = (uint64_t)o->nodes * o->devices_per_node;
  if (!sim__check_devices(devices, "mp", error))
    return NULL;
  return sim__pipeline_build(c, o, (uint32_t)devices, 1, 1, error);
}

SIM_CHOICES_OF(wl_schedule_name, wl_schedule)
static const sim_key pp_keys[] = {
    {"micro-batches", SIM_KEY_INT, SIM_KEY_OFF(micro_batches), "4", 1, 1 << 20,
     .commands = SIM_OPTS_RUN, .needs = SIM_STRATEGY_MICRO_BATCHES, .arg = "M",
     .help = "micro-batches per iteration; they must divide --batch"},
    {"schedule", SIM_KEY_CHOICE, SIM_KEY_OFF(schedule), "1f1b",
     .choice_name = wl_schedule_name_choice, .n_choices = WL_SCHED_INTERLEAVED + 1, .commands = SIM_OPTS_RUN, .needs = SIM_STRATEGY_SCHEDULE,
     .help = "pipeline schedule (interleaved: 3d only)"},
    {"stages", SIM_KEY_INT, SIM_KEY_OFF(stages), NULL, 1, 1000000, .commands = SIM_OPTS_RUN,
     .needs = SIM_STRATEGY_MICRO_BATCHES, .arg = "P",
     .help = "pipeline stages per replica (default: pp all devices, hybrid a node's)"},
    {"split", SIM_KEY_INT_LIST, SIM_KEY_OFF(split), NULL, 1, 1 << 24, .commands = SIM_OPTS_RUN,
     .needs = SIM_STRATEGY_SPLIT, .arg = "L1,L2,...",
     .help = "first layer (3d: transformer block) of each stage after the first, of each "
             "virtual stage with --interleave (default: balanced; 3d: spread, fewer on the "
             "first and last stages)"},
};
static const sim_key_group sim_keys_pp = SIM_KEY_GROUP("pp", SIM_STRATEGY_MICRO_BATCHES, pp_keys);

/* ---- Search ---------------------------------------------------------------------------------- */

/* Pipeline micro-batches per iteration tried (CNN pipelines): powers of two up to 64. */
#define SEARCH_MAX_MICRO_BATCHES 64

void sim__pp_micro_batches_values(const sim_search_ctx *c, GPtrArray *out)
{
  (void)c;
  for (int m = 1; m <= SEARCH_MAX_MICRO_BATCHES; m *= 2)
    sim_search_add_value(out, "micro-batches=%d", m);
}

void sim__pp_schedule_values(const sim_search_ctx *c, GPtrArray *out)
{
  (void)c;
  sim_search_add_value(out, "schedule=gpipe");
  sim_search_add_value(out, "schedule=1f1b");
}

/* pp: one pipeline over all devices trains the global batch in micro-batches. */
static const char *check_pp(sim_scenario *s, const sim_search_ctx *c, GString *derived,
                            GError **error)
{
  if (c->global_batch % (uint64_t)s->micro_batches != 0)
    return SIM_DROP_MICRO_BATCHES;
  return sim_search_derive(s, derived, "batch", c->global_batch, error) ? NULL : "";
}

static const sim_search_axis pp_axes[] = {{"micro-batches", sim__pp_micro_batches_values},
                                          {"schedule", sim__pp_schedule_values}};
static const sim_search_family pp_search[] = {SIM_SEARCH_FAMILY(NULL, pp_axes, check_pp)};

const sim_strategy sim__strategy_pp = {
    .name = "pp",
    .description = "pipeline: stages over devices, M micro-batches, GPipe or 1F1B schedule",
    .flags = SIM_STRATEGY_STAGED | SIM_STRATEGY_PIPELINED | SIM_STRATEGY_ALLREDUCE |
             SIM_STRATEGY_MICRO_BATCHES | SIM_STRATEGY_SCHEDULE | SIM_STRATEGY_SPLIT,
    .keys = &sim_keys_pp,
    .build = pp_build,
    .search = pp_search,
    .n_search = G_N_ELEMENTS(pp_search),
};
const sim_strategy sim__strategy_mp = {
    .name = "mp",
    .description = "model parallel: layers split over devices (balanced or --split), "
                   "activations sent point to point",
    .flags = SIM_STRATEGY_STAGED | SIM_STRATEGY_SPLIT,
    .build = mp_build,
};
