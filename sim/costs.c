/* Building the cost table of a scenario from workloads/ (what each layer's passes compute) and
 * devices/ (how long that takes on the chosen device). */
#include "simulate.h"

#include "comm_net.h"
#include "devices.h"
#include "framework_keys.h"
#include "util.h"
#include "wl_framework.h"
#include "workloads.h"

#include <math.h>
#include <string.h>

/* What is trained, and how its passes are costed. */
SIM_CHOICES_OF(wl_precision_name, wl_precision)
SIM_CHOICES_OF(wl_optimizer_name, wl_optimizer)
static const sim_key model_keys[] = {
    {"model", SIM_KEY_STRING, SIM_KEY_OFF(model), "resnet50", .commands = SIM_OPTS_RUN,
     .arg = "NAME|FILE|SPEC", .help = "zoo model, workload file or transformer: spec"},
    {"batch", SIM_KEY_INT, SIM_KEY_OFF(batch), "64", 1, 1 << 24,
     .commands = SIM_OPTS_RUN | SIM_OPTS_DESCRIBE,
     .arg = "N", .help = "per-device mini-batch, samples"},
    {"precision", SIM_KEY_CHOICE, SIM_KEY_OFF(precision), "fp32",
     .choice_name = wl_precision_name_choice, .n_choices = WL_PREC_COUNT,
     .commands = SIM_OPTS_RUN | SIM_OPTS_CLUSTER | SIM_OPTS_DESCRIBE,
     .help = "arithmetic precision of compute (the device must have it)"},
    {"optimizer", SIM_KEY_CHOICE, SIM_KEY_OFF(optimizer), "momentum",
     .choice_name = wl_optimizer_name_choice, .n_choices = WL_OPT_COUNT,
     .commands = SIM_OPTS_RUN | SIM_OPTS_DESCRIBE,
     .help = "plain SGD, SGD with momentum, or Adam"},
    {"calibration", SIM_KEY_STRING, SIM_KEY_OFF(calibration),
     .commands = SIM_OPTS_RUN | SIM_OPTS_CALIBRATE,
     .arg = "FILE", .help = "overlay of fitted model parameters (from dtsim calibrate)"},
    {"threads", SIM_KEY_INT, SIM_KEY_OFF(threads), NULL, 1, 1 << 20, .commands = SIM_OPTS_RUN,
     .arg = "N", .help = "hardware threads used on a Xeon Phi or CPU device (default: all)"},
    {"synthetic", SIM_KEY_FLAG, SIM_KEY_OFF(synthetic), .commands = SIM_OPTS_RUN,
     .help = "synthetic input data: no host-to-device copy of batches"},
    {"seq-len", SIM_KEY_INT, SIM_KEY_OFF(seq_len), NULL, 1, 1 << 24,
     .commands = SIM_OPTS_RUN | SIM_OPTS_DESCRIBE,
     .arg = "S", .help = "sequence length of a transformer, tokens (default: the model's)"},
};
const sim_key_group sim_keys_model = SIM_KEY_GROUP("model", 0, model_keys);

/* Dies of one board (two GK210 on a Tesla K80) share its heat sink and power: the devices of a
 * node fill its boards in order, and a synchronous step runs at the pace of a full board once
 * a node holds as many devices as a board has dies. */
static gboolean board_busy(const sim_scenario *s, dev_device *dev, GError **error)
{
  unsigned dies = dev_board_dies(dev);
  if (dies < 2)
    return TRUE;
  uint64_t per_node = (uint64_t)s->devices_per_node;
  if (per_node == 0 && s->system) {
    g_autoptr(comm_system) sys = comm_system_load(s->system, sim_scenario_where(s, "system"),
                                                  error);
    if (!sys)
      return FALSE;
    per_node = sys->devices_per_node;
  }
  dev_device_set_busy_dies(dev, (unsigned)MIN(MAX(per_node, 1), (uint64_t)dies));
  return TRUE;
}

dev_device *sim_scenario_device(const sim_scenario *s, const char *device_name,
                                const char *calibration, GError **error)
{
  /* Messages name the key that chose the device (--device, or the system preset); messages
   * from inside the device file add its own FILE:LINE. */
  const char *where = sim_scenario_where(s, s->device ? "device" : "system");
  g_autofree char *path = dt_catalog_path("devices/catalog", device_name, where, error);
  if (!path)
    return NULL;
  dev_device *dev = dev_device_load(path, NULL, error);
  if (!dev) {
    g_prefix_error(error, "%s: ", where);
    return NULL;
  }
  if (calibration) {
    /* The device loads alone: what fails now is the overlay's, and --calibration is named. */
    dev_device_free(dev);
    dev = dev_device_load(path, calibration, error);
    if (!dev) {
      g_prefix_error(error, "%s: ", sim_scenario_where(s, "calibration"));
      return NULL;
    }
  }
  if (!board_busy(s, dev, error)) {
    dev_device_free(dev);
    return NULL;
  }
  return dev;
}

void sim__costs_add_layers(sim_costs *c, const wl_net *net, wl_optimizer opt,
                           sim__pass_time_fn time, void *user)
{
  unsigned elem_bytes = wl_precision_bytes(wl_net_precision(net));
  gboolean dense = FALSE;
  for (size_t i = 0; i < wl_net_n_layers(net); i++) {
    const wl_layer *l = wl_net_layer(net, i);
    dense |= l->kind == WL_LAYER_FC;
    sim_layer_cost lc = {.name = (char *)l->name, .params = l->params,
                         .saved_bytes = l->saved_bytes, .dense = dense};
    if (l->has_pass[WL_PASS_FORWARD])
      lc.forward_ps = time(user, l, &l->cost[WL_PASS_FORWARD], FALSE);
    if (l->has_pass[WL_PASS_BACKWARD_DATA])
      lc.backward_data_ps = time(user, l, &l->cost[WL_PASS_BACKWARD_DATA], FALSE);
    if (l->has_pass[WL_PASS_BACKWARD_WEIGHTS])
      lc.backward_weights_ps = time(user, l, &l->cost[WL_PASS_BACKWARD_WEIGHTS], FALSE);
    if (l->has_pass[WL_PASS_UPDATE]) {
      wl_op_cost upd;
      wl_net_update_cost(net, i, opt, &upd);
      lc.update_ps = time(user, l, &upd, TRUE);
    }
    lc.forward_flops = l->cost[WL_PASS_FORWARD].flops;
    lc.backward_data_flops = l->cost[WL_PASS_BACKWARD_DATA].flops;
    lc.backward_weights_flops = l->cost[WL_PASS_BACKWARD_WEIGHTS].flops;
    lc.param_bytes = l->grad_bytes;
    /* The second variable's share of the gradient bytes (every parameter has the same size). */
    if (l->params > 0)
      lc.second_bytes = l->grad_bytes / l->params * wl_layer_second_params(l);
    lc.output_bytes = l->out_elems * elem_bytes;
    sim_costs_add_layer(c, &lc);
  }
}

/* The pass times of `dev_op_time_ps` on one device with `threads` hardware threads, at the
 * framework's share of that rate (1 but for a CPU-era framework on a CPU or Xeon Phi). */
typedef struct {
  const dev_device *dev;
  unsigned threads;
  double efficiency;
} device_pass;

static sim_time_ps device_pass_time(void *user, const wl_layer *layer, const wl_op_cost *op,
                                    gboolean update)
{
  (void)layer;
  (void)update;
  const device_pass *d = user;
  sim_time_ps t = dev_op_time_ps(d->dev, op, d->threads);
  return d->efficiency == 1 ? t : (sim_time_ps)llround((double)t / d->efficiency);
}

/* The share of the device model's rate that the --framework the user gave reaches on a CNN:
 * its [cpu] efficiency on CPU and Xeon Phi devices (docs/workloads.md, "CPU-era frameworks").
 * Without --framework, 1: the device model as it is. A framework that states no CPU efficiency,
 * or a GPU, is refused: nothing of the framework would apply. */
static gboolean cnn_framework_efficiency(const sim_scenario *s, const dev_device *dev,
                                         double *efficiency, GError **error)
{
  *efficiency = 1;
  if (!sim_scenario_given(s, "framework"))
    return TRUE;
  const char *where = sim_scenario_where(s, "framework");
  sim_framework_opts fo = sim_framework_opts_of(s);
  g_autoptr(wl_framework) fw = wl_framework_load(fo.framework, where, error);
  if (!fw)
    return FALSE;
  if (fw->cpu_efficiency <= 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: %s states no [cpu] efficiency: it trains transformers, not %s", where,
                fo.framework, s->model);
    return FALSE;
  }
  if (dev_device_is_gpu(dev)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: %s applies to CPU and Xeon Phi devices, not the GPU %s", where,
                fo.framework, dev_device_name(dev));
    return FALSE;
  }
  *efficiency = fw->cpu_efficiency;
  return TRUE;
}

sim_costs *sim_costs_build(const sim_scenario *s, const char *device_name, uint64_t batch,
                           GError **error)
{
  if (strcmp(s->model, "demo") == 0)
    return sim_costs_demo(batch);
  g_autoptr(wl_model) model = wl_model_load(s->model, error);
  if (!model)
    return NULL;
  if (sim_scenario_given(s, "seq-len")) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: applies to transformers, not %s",
                sim_scenario_where(s, "seq-len"), s->model);
    return NULL;
  }
  wl_precision prec = s->precision;
  g_autoptr(wl_net) net = wl_net_new(model, (uint32_t)batch, prec, error);
  if (!net)
    return NULL;
  g_autoptr(dev_device) dev = sim_scenario_device(s, device_name, s->calibration, error);
  if (!dev)
    return NULL;
  if (!dev_check_precision(dev, prec, sim_scenario_where(s, "precision"), error))
    return NULL;
  if (s->threads) {
    gboolean gpu = dev_device_is_gpu(dev);
    if (gpu || (unsigned)s->threads > dev_hw_threads(dev)) {
      const char *where = sim_scenario_where(s, "threads");
      if (gpu)
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "%s: %s is a GPU; hardware threads apply to Xeon Phi and CPU devices", where,
                    dev_device_name(dev));
      else
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "%s: %s has %u hardware threads, not %" G_GINT64_FORMAT, where,
                    dev_device_name(dev), dev_hw_threads(dev), s->threads);
      return NULL;
    }
  }
  wl_optimizer opt = s->optimizer;
  unsigned threads = (unsigned)s->threads;
  double efficiency;
  if (!cnn_framework_efficiency(s, dev, &efficiency, error))
    return NULL;

  sim_costs *c = sim_costs_new();
  device_pass dp = {dev, threads, efficiency};
  sim__costs_add_layers(c, net, opt, device_pass_time, &dp);
  c->batch = batch;
  c->input_bytes = wl_net_input_bytes_per_sample(net) * batch;
  /* The device model's host overhead includes the input copy; split it so the copy can run on
   * its own stream, ahead of the iteration that needs it. */
  int64_t step_ps = dev_host_overhead_ps(dev, 0);
  int64_t with_copy_ps = dev_host_overhead_ps(dev, s->synthetic ? 0 : c->input_bytes);
  c->host_step_ps = step_ps;
  c->input_copy_ps = with_copy_ps - step_ps;
  wl_memory mem;
  wl_net_memory(net, opt, &mem);
  c->memory_bytes = mem.total_bytes;
  c->workspace_bytes = mem.workspace_bytes;
  uint64_t params = 0;
  for (size_t i = 0; i < wl_net_n_layers(net); i++)
    params += wl_net_layer(net, i)->params;
  c->state_bytes_per_param =
      params ? (double)(mem.weights_bytes + mem.gradients_bytes + mem.optimizer_bytes) / params : 0;
  c->memory_capacity_bytes = dev_memory_bytes(dev);
  /* A reduction reads two operands and writes one: a third of the streaming bandwidth. */
  c->reduce_Bps = (uint64_t)(dev_stream_Bps(dev) / 3.0);
  return c;
}
