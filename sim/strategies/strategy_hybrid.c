/* Hybrid parallelism.
 *
 * dp-pp: R replicas of a P-stage pipeline (P = --stages, default the devices of a node), each
 *   stage's gradients all-reduced over the replicas (see strategy_pp.c).
 * owt: Krizhevsky's "one weird trick" (2014): the convolutional layers run data parallel (each
 *   device its own mini-batch, gradients all-reduced in buckets), the fully connected tail runs
 *   model parallel: every device holds 1/N of each dense layer's weights and computes its slice
 *   of the outputs for all N mini-batches. The activations entering the tail are all-gathered
 *   (N x the boundary activations), each dense layer's output slices are all-gathered for the
 *   next, and in backward the partial input gradients are reduce-scattered. The dense layers'
 *   compute per device equals their cost at one mini-batch (N x the samples, 1/N the outputs). */
#include "plan.h"
#include "strategy.h"

#include "coll.h"

#include "util.h"

#include <string.h>

sim_plan *sim__pipeline_build(const sim_costs *c, const sim_plan_opts *o, uint32_t P, uint32_t R,
                              uint32_t M, GError **error);

static sim_plan *owt_build(const sim_costs *c, const sim_plan_opts *o, GError **error)
{
  uint64_t devices = (uint64_t)o->nodes * o->devices_per_node;
  if (!sim__check_devices(devices, "hybrid owt", error))
    return NULL;
  /* The allreduce algorithm of the scenario is for the gradients; the dense layers'
   * allgathers and reduce-scatters take what suits their sizes. */
  const comm_coll_algorithm *any = comm_coll_algorithm_find("auto", "auto", NULL);
  guint n = sim_costs_n_layers(c), tail = n;
  for (guint i = 0; i < n; i++)
    if (sim_costs_layer(c, i)->dense) {
      tail = i;
      break;
    }
  if (tail == 0 || tail == n) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "--hybrid owt: the model needs convolutional layers followed by fully connected "
                "ones");
    return NULL;
  }
  uint32_t N = (uint32_t)devices;
  g_autoptr(sim_plan) p = sim__plan_new();
  sim_graph *g = p->graph;
  p->devices = N;
  p->samples_per_iteration = devices * c->batch;
  uint64_t dense_params = 0;
  for (guint i = tail; i < n; i++)
    dense_params += sim_costs_layer(c, i)->params;
  /* Dense state is split N ways; dense activations are kept for N mini-batches' worth of
   * samples but only 1/N of the features: the same bytes. */
  p->memory_per_device_bytes =
      c->memory_bytes - (uint64_t)((double)dense_params * c->state_bytes_per_param * (N - 1) / N);

  g_autofree sim_device_streams *ds = g_new(sim_device_streams, N);
  g_autofree sim_stream_id *comm = g_new(sim_stream_id, N);   /* collective members */
  g_autofree sim_task_id *prev_end = g_new0(sim_task_id, N);
  g_autofree sim_task_id *step = g_new0(sim_task_id, N);
  for (uint32_t d = 0; d < N; d++) {
    sim__add_device(p, d, o->devices_per_node, TRUE, &ds[d]);
    comm[d] = ds[d].comm;
  }
  p->probe_unit = 0;
  p->probe_compute = ds[0].compute;

  /* tasks[d * n + i]: forward of layer i; grad[d * n + i]: after layer i's dW. */
  g_autofree sim_task_id *fwd = g_new(sim_task_id, (gsize)N * n);
  g_autofree sim_task_id *grad = g_new(sim_task_id, (gsize)N * n);
  g_autofree sim_task_id *last = g_new(sim_task_id, N);
  g_autofree sim_task_id *first_fwd = g_new0(sim_task_id, N);
  uint32_t iterations = o->iterations ? o->iterations : 1;
  for (uint32_t it = 0; it < iterations; it++) {
    /* Forward: conv part per device, then the dense tail with an allgather before each layer. */
    for (uint32_t d = 0; d < N; d++) {
      step[d] = sim__host_step(p, c, ds[d].host, it > 0, prev_end[d]);
      sim_task_id copy = sim_graph_add_compute(g, ds[d].copy, "input copy", "copy",
                                               c->input_copy_ps, 0, c->input_bytes);
      if (it > 0)
        sim_graph_depend(g, copy, first_fwd[d]);
      for (guint i = 0; i < tail; i++) {
        const sim_layer_cost *l = sim_costs_layer(c, i);
        fwd[(gsize)d * n + i] = sim_graph_add_compute(g, ds[d].compute, l->name, "forward",
                                                      l->forward_ps, l->forward_flops, 0);
      }
      first_fwd[d] = fwd[(gsize)d * n];
      sim_graph_depend(g, first_fwd[d], copy);
      sim_graph_depend(g, first_fwd[d], step[d]);
    }
    for (guint i = tail; i < n; i++) {
      const sim_layer_cost *in = sim_costs_layer(c, i - 1);
      g_autofree char *name = g_strdup_printf("allgather into %s", sim_costs_layer(c, i)->name);
      sim_task_id ag = sim_graph_add_collective(g, comm, N, name, SIM_OP_ALLGATHER, any,
                                                in->output_bytes * N);
      for (uint32_t d = 0; d < N; d++)
        sim_graph_depend(g, ag, fwd[(gsize)d * n + i - 1]);
      for (uint32_t d = 0; d < N; d++) {
        const sim_layer_cost *l = sim_costs_layer(c, i);
        fwd[(gsize)d * n + i] = sim_graph_add_compute(g, ds[d].compute, l->name, "forward",
                                                      l->forward_ps, l->forward_flops, 0);
        sim_graph_depend(g, fwd[(gsize)d * n + i], ag);
      }
    }
    /* Backward of the tail: after each dense layer's dX, reduce-scatter its input gradients. */
    g_autoptr(GArray) buckets = g_array_new(FALSE, FALSE, sizeof(sim_task_id));
    sim_task_id rs_prev = 0;
    for (guint k = n; k-- > tail;) {
      const sim_layer_cost *l = sim_costs_layer(c, k);
      for (uint32_t d = 0; d < N; d++) {
        g_autofree char *wn = g_strconcat(l->name, " dW", NULL);
        grad[(gsize)d * n + k] = sim_graph_add_compute(g, ds[d].compute, wn, "backward",
                                                       l->backward_weights_ps, 0, 0);
        if (rs_prev)
          sim_graph_depend(g, grad[(gsize)d * n + k], rs_prev);
        g_autofree char *dn = g_strconcat(l->name, " dX", NULL);
        last[d] = sim_graph_add_compute(g, ds[d].compute, dn, "backward", l->backward_data_ps, 0, 0);
      }
      g_autofree char *name = g_strdup_printf("reduce-scatter from %s", l->name);
      rs_prev = sim_graph_add_collective(g, comm, N, name, SIM_OP_REDUCE_SCATTER, any,
                                         sim_costs_layer(c, k - 1)->output_bytes * N);
      for (uint32_t d = 0; d < N; d++)
        sim_graph_depend(g, rs_prev, last[d]);
    }
    /* Backward of the convolutional part, data parallel with bucketed allreduce. */
    uint64_t acc = 0;
    for (guint k = tail; k-- > 0;) {
      const sim_layer_cost *l = sim_costs_layer(c, k);
      for (uint32_t d = 0; d < N; d++) {
        g_autofree char *wn = g_strconcat(l->name, " dW", NULL);
        grad[(gsize)d * n + k] = sim_graph_add_compute(g, ds[d].compute, wn, "backward",
                                                       l->backward_weights_ps, 0, 0);
        if (k == tail - 1)
          sim_graph_depend(g, grad[(gsize)d * n + k], rs_prev);
        if (k > 0) {
          g_autofree char *dn = g_strconcat(l->name, " dX", NULL);
          last[d] = sim_graph_add_compute(g, ds[d].compute, dn, "backward", l->backward_data_ps, 0, 0);
        } else {
          last[d] = grad[(gsize)d * n + k];
        }
      }
      acc += l->param_bytes;
      if (acc > 0 && (acc >= o->bucket_bytes || k == 0)) {
        g_autofree char *name = g_strdup_printf("allreduce bucket %u (%.1f MiB)", buckets->len,
                                                (double)acc / (1 << 20));
        sim_task_id ar = sim_graph_add_collective(g, comm, N, name, SIM_OP_ALLREDUCE,
                                                  o->allreduce, acc);
        for (uint32_t d = 0; d < N; d++)
          sim_graph_depend(g, ar, o->overlap ? grad[(gsize)d * n + k] : grad[(gsize)d * n]);
        g_array_append_val(buckets, ar);
        acc = 0;
      }
    }
    sim_time_ps update_ps = 0;
    for (guint i = 0; i < n; i++)
      update_ps += sim_costs_layer(c, i)->update_ps / (i >= tail ? N : 1);
    for (uint32_t d = 0; d < N; d++) {
      sim_task_id u = sim_graph_add_compute(g, ds[d].compute, "update", "update", update_ps, 0, 0);
      for (guint b = 0; b < buckets->len; b++)
        sim_graph_depend(g, u, g_array_index(buckets, sim_task_id, b));
      prev_end[d] = u;
      if (d == 0)
        g_array_append_val(p->iteration_end, u);
    }
  }
  return g_steal_pointer(&p);
}

/* The strategy's own options (its key group's typed struct). */
typedef enum { HYBRID_DP_PP, HYBRID_OWT } hybrid_kind;
typedef struct {
  int kind;                     /* hybrid_kind, a CHOICE key */
} hybrid_opts;

static sim_plan *hybrid_build(const sim_costs *c, const sim_plan_opts *o, GError **error)
{
  const hybrid_opts *own = o->own;
  if (own && own->kind == HYBRID_OWT)
    return owt_build(c, o, error);
  uint64_t devices = (uint64_t)o->nodes * o->devices_per_node;
  uint32_t P = o->stages ? o->stages : o->devices_per_node;
  if (P == 0 || devices % P != 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "--stages: %u stages do not divide %" G_GUINT64_FORMAT " devices", P, devices);
    return NULL;
  }
  return sim__pipeline_build(c, o, P, (uint32_t)(devices / P), o->micro_batches, error);
}

static const sim_key hybrid_keys[] = {
    {"hybrid", SIM_KEY_CHOICE, SIM_KEY_OWN_OFF(hybrid_opts, kind), "dp-pp", .choices = "dp-pp|owt",
     .commands = SIM_OPTS_RUN,
     .help = "data parallel over pipelines, or one weird trick (conv dp, dense mp)"},
};
static const sim_key_group sim_keys_hybrid =
    SIM_KEY_OWN_GROUP("hybrid", SIM_STRATEGY_KINDS, hybrid_keys, hybrid_opts);

/* ---- Search ---------------------------------------------------------------------------------- */

/* Stages of each pipeline replica of hybrid dp-pp: the divisors of the devices strictly between
 * 1 (that is dp) and all of them (that is pp). */
static void stages_values(const sim_search_ctx *c, GPtrArray *out)
{
  for (uint64_t p = 2; p < c->devices; p++)
    if (c->devices % p == 0)
      sim_search_add_value(out, "stages=%" G_GUINT64_FORMAT, p);
}

/* hybrid dp-pp: devices / stages replicas of a pipeline, each global batch / replicas samples. */
static const char *derive_dp_pp(sim_scenario *s, const sim_search_ctx *c, GString *derived,
                               GError **error)
{
  uint64_t replicas = c->devices / (uint64_t)s->stages;
  if (c->global_batch % replicas != 0)
    return SIM_DROP_NOT_MULTIPLE_REPLICAS;
  uint64_t batch = c->global_batch / replicas;
  if (batch % (uint64_t)s->micro_batches != 0)
    return SIM_DROP_MICRO_BATCHES;
  return sim_search_derive(s, derived, "batch", batch, error) ? NULL : "";
}

static const sim_search_axis dp_pp_axes[] = {{"stages", stages_values},
                                             {"micro-batches", sim__pp_micro_batches_values},
                                             {"schedule", sim__pp_schedule_values}};
static const sim_search_family hybrid_search[] = {
    SIM_SEARCH_FAMILY("hybrid=dp-pp", dp_pp_axes, derive_dp_pp),
    {"hybrid=owt", NULL, 0, sim_search_per_device, NULL, NULL},
};

/* dp-pp replicas are pipelines: costed per micro-batch, --batch a pipeline's. */
static unsigned hybrid_flags(const sim_scenario *s)
{
  const hybrid_opts *own = sim_scenario_own(s, &sim_keys_hybrid);
  return own->kind == HYBRID_DP_PP ? SIM_STRATEGY_STAGED | SIM_STRATEGY_PIPELINED : 0;
}

const sim_strategy sim__strategy_hybrid = {
    .name = "hybrid",
    .description = "dp-pp: data parallel over pipeline replicas; owt: conv layers data "
                   "parallel, fully connected layers model parallel (one weird trick)",
    .flags = SIM_STRATEGY_ALLREDUCE | SIM_STRATEGY_OVERLAP | SIM_STRATEGY_MICRO_BATCHES |
             SIM_STRATEGY_SCHEDULE | SIM_STRATEGY_SPLIT | SIM_STRATEGY_KINDS,
    .scenario_flags = hybrid_flags,
    .keys = &sim_keys_hybrid,
    .build = hybrid_build,
    .search = hybrid_search,
    .n_search = G_N_ELEMENTS(hybrid_search),
};
