/* CHAOS (Controlled Hogwild with Arbitrary Order of Synchronization; Viebke, Memeti, Pllana,
 * Abraham, J. Supercomputing 2017): T hardware threads of one Xeon Phi or CPU each train their
 * own sample, forward then backward, and write each layer's update to the one shared copy of
 * the weights without locks; a thread takes the next sample when it is done.
 *
 * One iteration is one epoch: the training samples shared out over the threads (the first
 * N mod T threads take one more), then a forward-only validation pass and a forward-only test
 * pass over their samples, each phase after every thread has finished the previous one (the
 * error rates are those of the epoch's final weights). The first epoch starts with the
 * sequential preparation of the data set on one thread. Layer times are one sample's on one of
 * the T concurrent threads (devices/: issue share of its core), and each layer's "update" is
 * the thread's cost of the shared weights under contention (forward reads and update writes of
 * lines other cores have modified). Threads do not wait for one another inside a phase, so the
 * only coupling between them is in those per-sample costs. */
#include "plan.h"
#include "strategy.h"

#include "devices.h"
#include "util.h"
#include "workloads.h"

#include <string.h>

/* MNIST: 60,000 training and 10,000 test images of 28x28 bytes (LeCun et al.); CHAOS validates
 * on 10,000 images after every epoch and tests on the 10,000 test images. */
#define CHAOS_TRAIN_SAMPLES 60000
#define CHAOS_VALIDATION_SAMPLES 10000
#define CHAOS_TEST_SAMPLES 10000
#define CHAOS_RAW_BYTES_PER_SAMPLE 784

/* One thread's pass among `threads` on the device; an update also writes the layer's shared
 * weights under contention. */
typedef struct {
  const dev_device *dev;
  unsigned threads;
} chaos_pass;

static sim_time_ps chaos_pass_time(void *user, const wl_layer *layer, const wl_op_cost *op,
                                   gboolean update)
{
  const chaos_pass *p = user;
  double s = dev_thread_op_s(p->dev, op, p->threads);
  if (update)
    s += dev_shared_weights_s(p->dev, layer->param_bytes, p->threads);
  return sim_time_from_s(s);
}

sim_costs *sim_chaos_costs_build(const sim_scenario *s, const char *device_name, GError **error)
{
  /* One device, one sample per thread: a batch or a cluster would be ignored, so refuse them. */
  const char *refused = sim_scenario_given(s, "batch") ? "batch"
                        : s->nodes != 1                ? "nodes"
                        : s->devices_per_node > 1      ? "devices-per-node"
                                                       : NULL;
  if (refused) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: does not apply to --strategy chaos (the threads of one device, one sample "
                "per thread)", sim_scenario_where(s, refused));
    return NULL;
  }
  /* CHAOS is its own code (Viebke et al.), not a framework's: its costs are the device model's
   * with the shared-weight traffic, so a framework's CPU efficiency has nothing to apply to. */
  if (sim_scenario_given(s, "framework")) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: does not apply to --strategy chaos (CHAOS is its own code, not a framework's)",
                sim_scenario_where(s, "framework"));
    return NULL;
  }
  g_autoptr(wl_model) model = wl_model_load(s->model, error);
  if (!model)
    return NULL;
  g_autoptr(wl_net) net = wl_net_new(model, 1, s->precision, error);
  if (!net)
    return NULL;
  g_autoptr(dev_device) dev = sim_scenario_device(s, device_name, s->calibration, error);
  if (!dev)
    return NULL;
  if (!dev_check_precision(dev, s->precision, sim_scenario_where(s, "precision"), error))
    return NULL;
  if (dev_device_is_gpu(dev)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: chaos runs on the threads of a Xeon Phi or CPU, and %s is a GPU (--device "
                "xeon-phi-7120p, xeon-phi-7250, xeon-gold-6148-2s, ...)",
                sim_scenario_where(s, "strategy"), dev_device_name(dev));
    return NULL;
  }
  if ((uint64_t)s->threads > dev_hw_threads(dev)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s has %u hardware threads, not %"
                G_GINT64_FORMAT, sim_scenario_where(s, "threads"), dev_device_name(dev),
                dev_hw_threads(dev), s->threads);
    return NULL;
  }
  unsigned threads = s->threads ? (unsigned)s->threads : dev_hw_threads(dev);
  wl_optimizer opt = s->optimizer;
  unsigned elem_bytes = wl_precision_bytes(s->precision);

  g_autoptr(sim_costs) c = sim_costs_new();
  chaos_pass cp = {dev, threads};
  sim__costs_add_layers(c, net, opt, chaos_pass_time, &cp);
  c->batch = 1;
  c->threads = threads;
  c->train_samples = CHAOS_TRAIN_SAMPLES;
  c->validation_samples = CHAOS_VALIDATION_SAMPLES;
  c->test_samples = CHAOS_TEST_SAMPLES;
  c->input_bytes = wl_net_input_bytes_per_sample(net);
  /* Preparation, once and on one thread: every image of the three sets is read as bytes and
   * written as the network's input (padded and scaled: a multiply and an add per element). */
  uint64_t input_elems = c->input_bytes / elem_bytes;
  wl_op_cost prepare = {.kind = WL_OP_ELEMENTWISE, .flops = 2 * input_elems,
                        .bytes_read = CHAOS_RAW_BYTES_PER_SAMPLE, .bytes_written = c->input_bytes};
  uint64_t all = c->train_samples + c->validation_samples + c->test_samples;
  c->prepare_ps = sim_time_from_s((double)all * dev_thread_op_s(dev, &prepare, 1));
  /* One shared copy of the weights (and optimizer state); every thread holds one sample's
   * activations, gradients and workspace. */
  wl_memory mem;
  wl_net_memory(net, opt, &mem);
  uint64_t shared = mem.weights_bytes + mem.optimizer_bytes;
  c->memory_bytes = shared + (uint64_t)threads * (mem.total_bytes - shared);
  c->workspace_bytes = mem.workspace_bytes;
  c->memory_capacity_bytes = dev_memory_bytes(dev);
  c->reduce_Bps = (uint64_t)(dev_stream_Bps(dev) / 3.0);
  return g_steal_pointer(&c);
}

/* Adds `samples` samples' worth of one thread's passes over every layer to `stream`: forward,
 * and when training the backward passes in reverse order each followed by the layer's update
 * of the shared weights. Returns the last task. */
static sim_task_id add_passes(sim_graph *g, const sim_costs *c, sim_stream_id stream,
                              uint64_t samples, gboolean training, sim_task_id after)
{
  guint n = sim_costs_n_layers(c);
  sim_task_id last = after;
  gboolean first = TRUE;
  const char *fwd_cat = training ? "forward" : "evaluate";
  for (guint i = 0; i < n; i++) {
    const sim_layer_cost *l = sim_costs_layer(c, i);
    last = sim_graph_add_compute(g, stream, l->name, fwd_cat, (sim_time_ps)samples * l->forward_ps,
                                 samples * l->forward_flops, 0);
    if (first)
      sim_graph_depend(g, last, after);
    first = FALSE;
  }
  if (!training)
    return last;
  for (guint k = n; k-- > 0;) {
    const sim_layer_cost *l = sim_costs_layer(c, k);
    if (l->backward_weights_ps > 0) {
      g_autofree char *name = g_strconcat(l->name, " dW", NULL);
      last = sim_graph_add_compute(g, stream, name, "backward",
                                   (sim_time_ps)samples * l->backward_weights_ps,
                                   samples * l->backward_weights_flops, 0);
    }
    if (l->update_ps > 0) {
      g_autofree char *name = g_strconcat(l->name, " shared update", NULL);
      last = sim_graph_add_compute(g, stream, name, "update", (sim_time_ps)samples * l->update_ps,
                                   0, samples * l->param_bytes);
    }
    if (k > 0 && l->backward_data_ps > 0) {
      g_autofree char *name = g_strconcat(l->name, " dX", NULL);
      last = sim_graph_add_compute(g, stream, name, "backward",
                                   (sim_time_ps)samples * l->backward_data_ps,
                                   samples * l->backward_data_flops, 0);
    }
  }
  return last;
}

/* Samples of `total` that thread `t` of `threads` takes. */
static uint64_t share(uint64_t total, uint32_t threads, uint32_t t)
{
  return total / threads + (t < total % threads ? 1 : 0);
}

static sim_plan *chaos_build(const sim_costs *c, const sim_plan_opts *o, GError **error)
{
  if (c->threads == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "--strategy chaos: the cost table was not built for CHAOS threads");
    return NULL;
  }
  uint32_t T = c->threads;
  g_autoptr(sim_plan) p = sim__plan_new();
  sim_graph *g = p->graph;
  p->devices = 1;
  p->samples_per_iteration = c->train_samples;
  p->memory_per_device_bytes = c->memory_bytes;
  /* One unit per thread, so a report measured on thread 0 sees no other stream of its unit. */
  g_autofree sim_stream_id *thread = g_new(sim_stream_id, T);
  sim_unit_id unit0 = 0;
  for (uint32_t t = 0; t < T; t++) {
    g_autofree char *name = g_strdup_printf("thread %u", t);
    sim_unit_id unit = sim__plan_add_unit(p, SIM_PROC_DEVICE, SIM_UNIT_DEVICE, 0, name);
    if (t == 0)
      unit0 = unit;
    thread[t] = sim_graph_add_stream(g, unit, "compute");
  }
  p->probe_unit = unit0;
  p->probe_compute = thread[0];

  sim_task_id start = sim_graph_add_compute(g, thread[0], "prepare data set", "prepare",
                                            c->prepare_ps, 0, 0);
  uint32_t epochs = o->iterations ? o->iterations : 1;
  const uint64_t phase_samples[3] = {c->train_samples, c->validation_samples, c->test_samples};
  static const char *const phase_end[3] = {"training done", "validation done", "epoch end"};
  for (uint32_t e = 0; e < epochs; e++) {
    for (int ph = 0; ph < 3; ph++) {
      /* A phase ends when every thread has finished its samples. */
      sim_task_id end = sim_graph_add_delay(g, phase_end[ph], 0);
      for (uint32_t t = 0; t < T; t++) {
        uint64_t n = share(phase_samples[ph], T, t);
        if (n == 0)
          continue;
        sim_task_id last = add_passes(g, c, thread[t], n, ph == 0, start);
        sim_graph_depend(g, end, last);
      }
      sim_graph_depend(g, end, start);
      start = end;
    }
    g_array_append_val(p->iteration_end, start);
  }
  return g_steal_pointer(&p);
}

/* The registry's form of the cost table: one sample per thread, whatever the batch. */
static sim_costs *chaos_costs(const sim_scenario *s, const char *device, uint64_t batch,
                              GError **error)
{
  (void)batch;
  return sim_chaos_costs_build(s, device, error);
}

const sim_strategy sim__strategy_chaos = {
    .name = "chaos",
    .description = "CHAOS: the threads of one Xeon Phi or CPU each train their own samples and "
                   "update shared weights without locks; one iteration is one epoch",
    .flags = SIM_STRATEGY_THREADS | SIM_STRATEGY_ONE_DEVICE,
    .costs = chaos_costs,
    .build = chaos_build,
};
