/* Synchronous data parallelism: every device runs the whole model on its own mini-batch;
 * gradients are grouped into buckets in backward order (PyTorch DDP's default 25 MiB) and
 * each bucket is all-reduced over all devices. With overlap on, a bucket's allreduce waits
 * only for the backward pass of the layers in it, so it runs while earlier layers are still
 * computing their gradients; with overlap off every allreduce waits for the whole backward
 * pass. The optimizer update follows the last allreduce. */
#include "plan.h"
#include "strategy.h"

#include "util.h"

typedef struct {
  sim_device_streams s;
  sim_task_id last;          /* the device's last task of the previous iteration */
} device_streams;

/* Adds one device's host step, input copy, forward and backward tasks for one iteration.
 * The copy of this batch waits for `*first_forward` of the previous iteration (the input buffer
 * is free once the first layer has read it) when has_prev; on return *first_forward is this
 * iteration's first forward task. grad_ready[k] is the task after which layer k's gradient
 * exists; *last_backward the last backward task. */
/* The names of a layer's tasks, in the graph (the same on every device). */
typedef struct {
  const char *forward, *dw, *dx;
} layer_names;

static void add_device_passes(sim_plan *p, const sim_costs *c, const layer_names *names,
                              const device_streams *ds, gboolean has_prev,
                              sim_task_id *first_forward, sim_task_id *grad_ready,
                              sim_task_id *last_backward)
{
  sim_graph *g = p->graph;
  guint n = sim_costs_n_layers(c);
  sim_task_id step = sim__host_step(p, c, ds->s.host, has_prev, ds->last);
  sim_task_id copy = sim_graph_add_compute(g, ds->s.copy, "input copy", "copy", c->input_copy_ps, 0,
                                           c->input_bytes);
  if (has_prev)
    sim_graph_depend(g, copy, *first_forward);
  sim_task_id prev = step;
  for (guint i = 0; i < n; i++) {
    const sim_layer_cost *l = sim_costs_layer(c, i);
    sim_task_id t = sim_graph_add_compute(g, ds->s.compute, names[i].forward, "forward", l->forward_ps,
                                          l->forward_flops, 0);
    sim_graph_add_memory_delta(g, t, (int64_t)l->saved_bytes);
    if (i == 0) {
      sim_graph_depend(g, t, copy);
      sim_graph_depend(g, t, step);
      *first_forward = t;
    }
    prev = t;
  }
  for (guint k = n; k-- > 0;) {
    const sim_layer_cost *l = sim_costs_layer(c, k);
    grad_ready[k] = prev;
    if (l->param_bytes > 0 || l->backward_weights_ps > 0) {
      prev = sim_graph_add_compute(g, ds->s.compute, names[k].dw, "backward", l->backward_weights_ps,
                                   l->backward_weights_flops, 0);
      grad_ready[k] = prev;
    }
    if (k > 0) {
      prev = sim_graph_add_compute(g, ds->s.compute, names[k].dx, "backward", l->backward_data_ps,
                                   l->backward_data_flops, 0);
    }
    /* The layer's saved activations are free once its last backward pass is done (or, for a
     * first layer with no backward pass, once the pass before it is). */
    sim_graph_add_memory_delta(g, prev, -(int64_t)l->saved_bytes);
  }
  *last_backward = prev;
}

static sim_plan *dp_build(const sim_costs *c, const sim_plan_opts *o, GError **error)
{
  uint64_t devices = (uint64_t)o->nodes * o->devices_per_node;
  if (!sim__check_devices(devices, "dp", error))
    return NULL;
  guint n = sim_costs_n_layers(c);
  if (n == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "dp: the model has no layers");
    return NULL;
  }
  g_autoptr(sim_plan) p = sim__plan_new();
  sim_graph *g = p->graph;
  p->devices = (uint32_t)devices;
  p->samples_per_iteration = devices * c->batch;
  p->memory_per_device_bytes = c->memory_bytes;

  /* Symmetric runs build device 0 only: every device's timeline is the same, and the
   * communication model sizes each collective for all ranks (exact with the analytic network,
   * where a collective's time does not depend on the flows of the other ranks). */
  p->symmetric = o->symmetric && devices > 1;
  uint32_t built = p->symmetric ? 1 : (uint32_t)devices;
  /* Per iteration and device built: a forward and a backward-data pass per layer, a
   * backward-weights pass per layer with weights, the host step and the update (and the
   * buckets' allreduces). */
  uint64_t per_device = 2 * (uint64_t)n + 2;
  for (guint i = 0; i < n; i++) {
    const sim_layer_cost *l = sim_costs_layer(c, i);
    per_device += l->param_bytes > 0 || l->backward_weights_ps > 0;
  }
  if (!sim_graph_check_size((uint64_t)(o->iterations ? o->iterations : 1) * built * per_device,
                            error))
    return NULL;
  uint64_t saved = 0;    /* activations kept for backward, bytes */
  for (guint i = 0; i < n; i++)
    saved += sim_costs_layer(c, i)->saved_bytes;
  g_autofree device_streams *ds = g_new0(device_streams, built);
  for (uint32_t d = 0; d < built; d++) {
    sim__add_device(p, d, o->devices_per_node, TRUE, &ds[d].s);
    sim_graph_set_unit_memory(g, ds[d].s.unit, c->memory_bytes > saved ? c->memory_bytes - saved : 0);
  }
  p->probe_unit = 0;
  p->probe_compute = ds[0].s.compute;

  /* Buckets in backward order: the layer index where each bucket closes (it reaches the bucket
   * size, or the first layer is reached) and its bytes. */
  g_autoptr(GArray) bucket_last = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GArray) bucket_bytes = g_array_new(FALSE, FALSE, sizeof(uint64_t));
  uint64_t acc = 0;
  for (guint k = n; k-- > 0;) {
    acc += sim_costs_layer(c, k)->param_bytes;
    if (acc > 0 && (acc >= o->bucket_bytes || k == 0)) {
      g_array_append_val(bucket_last, k);
      g_array_append_val(bucket_bytes, acc);
      acc = 0;
    }
  }

  g_autofree layer_names *names = g_new(layer_names, n);
  for (guint i = 0; i < n; i++) {
    const char *layer = sim_costs_layer(c, i)->name;
    g_autofree char *dw = g_strconcat(layer, " dW", NULL);
    g_autofree char *dx = g_strconcat(layer, " dX", NULL);
    names[i] = (layer_names){sim_graph_intern(g, layer), sim_graph_intern(g, dw),
                             sim_graph_intern(g, dx)};
  }
  g_autofree sim_stream_id *comm_members = g_new(sim_stream_id, built);
  for (uint32_t d = 0; d < built; d++)
    comm_members[d] = ds[d].s.comm;
  g_autofree sim_task_id *grad_ready = g_new(sim_task_id, (gsize)built * n);
  g_autofree sim_task_id *last_bwd = g_new(sim_task_id, built);
  g_autofree sim_task_id *first_fwd = g_new0(sim_task_id, built);
  uint32_t iterations = o->iterations ? o->iterations : 1;
  for (uint32_t it = 0; it < iterations; it++) {
    for (uint32_t d = 0; d < built; d++)
      add_device_passes(p, c, names, &ds[d], it > 0, &first_fwd[d], &grad_ready[(gsize)d * n],
                        &last_bwd[d]);
    g_autoptr(GArray) collectives = g_array_new(FALSE, FALSE, sizeof(sim_task_id));
    if (devices > 1) {
      for (guint b = 0; b < bucket_last->len; b++) {
        uint64_t bytes = g_array_index(bucket_bytes, uint64_t, b);
        g_autofree char *name = g_strdup_printf("allreduce bucket %u (%.1f MiB)", b,
                                                (double)bytes / (1 << 20));
        sim_task_id ar = sim_graph_add_collective(g, comm_members, built, name,
                                                  SIM_OP_ALLREDUCE, o->allreduce, bytes);
        guint k = g_array_index(bucket_last, guint, b);
        for (uint32_t d = 0; d < built; d++)
          sim_graph_depend(g, ar, o->overlap ? grad_ready[(gsize)d * n + k] : last_bwd[d]);
        g_array_append_val(collectives, ar);
      }
    }
    sim_time_ps update_ps = 0;
    for (guint i = 0; i < n; i++)
      update_ps += sim_costs_layer(c, i)->update_ps;
    for (uint32_t d = 0; d < built; d++) {
      sim_task_id u = sim_graph_add_compute(g, ds[d].s.compute, "update", "update", update_ps, 0,
                                            sim_costs_param_bytes(c));
      for (guint b = 0; b < collectives->len; b++)
        sim_graph_depend(g, u, g_array_index(collectives, sim_task_id, b));
      ds[d].last = u;
      if (d == 0)
        g_array_append_val(p->iteration_end, u);
    }
  }
  return g_steal_pointer(&p);
}

/* Gradient synchronisation, shared by every strategy with data-parallel replicas. */
static const sim_key dp_keys[] = {
    {"allreduce", SIM_KEY_REF, SIM_KEY_OFF(allreduce), "auto", .resolve = sim_algorithm_resolve,
     .commands = SIM_OPTS_RUN, .needs = SIM_STRATEGY_ALLREDUCE, .arg = "NAME",
     .help = "gradient allreduce algorithm (dtsim list algorithms)"},
    {"overlap", SIM_KEY_ONOFF, SIM_KEY_OFF(overlap), "on", .commands = SIM_OPTS_RUN,
     .needs = SIM_STRATEGY_OVERLAP, .arg = "on|off",
     .help = "gradient buckets overlap backward compute"},
    {"bucket-mib", SIM_KEY_MIB, SIM_KEY_OFF(bucket_bytes), "25", 0, 1 << 20,
     .commands = SIM_OPTS_RUN, .needs = SIM_STRATEGY_OVERLAP, .arg = "MIB",
     .help = "gradient bucket size, MiB"},
    {"symmetry", SIM_KEY_ONOFF, SIM_KEY_OFF(symmetry), "on", .commands = SIM_OPTS_RUN,
     .needs = SIM_STRATEGY_FOLDABLE, .arg = "on|off",
     .help = "on: one device stands for all where that is exact; off: every device simulated"},
};
static const sim_key_group sim_keys_dp = SIM_KEY_GROUP("dp", SIM_STRATEGY_FOLDABLE, dp_keys);

/* ---- Search ---------------------------------------------------------------------------------- */

/* Gradient bucket sizes tried, MiB: PyTorch DDP's default bucket_cap_mb is 25 (docs of
 * torch.nn.parallel.DistributedDataParallel); Horovod fuses up to 64 MiB by default
 * (HOROVOD_FUSION_THRESHOLD); 1 and 5 stand for fine-grained overlap. */
static const int bucket_mib[] = {1, 5, 25, 64};
/* Every allreduce algorithm; not "auto", which stands for one of them (on GPUs "nccl": the two
 * were the same candidate twice). */
static void allreduce_values(const sim_search_ctx *c, GPtrArray *out)
{
  (void)c;
  for (size_t i = 0; i < comm_coll_algorithm_count(); i++) {
    const comm_coll_algorithm *a = comm_coll_algorithm_at(i);
    if (comm_coll_algorithm_supports(a, COMM_COLL_ALLREDUCE) && !comm_coll_algorithm_is_rule(a))
      sim_search_add_value(out, "allreduce=%s", comm_coll_algorithm_name(a));
  }
}

static void bucket_values(const sim_search_ctx *c, GPtrArray *out)
{
  (void)c;
  for (size_t i = 0; i < G_N_ELEMENTS(bucket_mib); i++)
    sim_search_add_value(out, "bucket-mib=%d", bucket_mib[i]);
}

static const sim_search_axis dp_axes[] = {{"allreduce", allreduce_values},
                                          {"bucket-mib", bucket_values}};
static const sim_search_family dp_search[] = {
    SIM_SEARCH_FAMILY(NULL, dp_axes, sim_search_per_device)};

const sim_strategy sim__strategy_dp = {
    .name = "dp",
    .description = "synchronous data parallel: bucketed gradient allreduce, optional overlap",
    .flags = SIM_STRATEGY_TRANSFORMER_FORM | SIM_STRATEGY_FOLDABLE | SIM_STRATEGY_REPLAYABLE |
             SIM_STRATEGY_ONE_DEVICE | SIM_STRATEGY_ALLREDUCE | SIM_STRATEGY_OVERLAP,
    .keys = &sim_keys_dp,
    .build = dp_build,
    .search = dp_search,
    .n_search = G_N_ELEMENTS(dp_search),
};
