/* Parameter servers, synchronous: every worker (device) runs the whole model on its own
 * mini-batch; as backward produces each layer's gradient the worker pushes it to the server
 * shard holding that tensor; once every worker's push of a tensor has arrived the shard
 * aggregates and updates it, and every worker pulls the new parameters. A layer's forward in
 * the next iteration waits for its own parameters only, so pulls overlap the next forward, as
 * in distributed TensorFlow. The servers (placement, shards, aggregation) are comm/coll's; this
 * file only says when pushes start and what waits for pulls.
 *
 * --ps-workers node (TensorFlow's distributed_replicated): each node is one worker whose
 * devices keep replicas; comm/coll sums a tensor's gradients within the node and moves one copy
 * per node. The replicas are refreshed inside the step (the worker's training op assigns the
 * pulled values to every device's copy), so a device's next forward waits for all of its
 * pulls, not only its layer's.
 *
 * --ps-sharding round-robin (TensorFlow 1.x's replica_device_setter with its default
 * ps_strategy): a tensor per variable (a layer's weight, then its bias or a batch norm's second
 * vector), in the order the model creates them, dealt out to the servers in turn after
 * global_step, which tf_cnn_benchmarks creates first on server 0. The default, bytes, keeps one
 * tensor per layer and lets comm/coll balance the servers by bytes. */
#include "plan.h"
#include "strategy.h"

#include "util.h"

static sim_plan *ps_build(const sim_costs *c, const sim_plan_opts *o, GError **error)
{
  uint64_t devices = (uint64_t)o->nodes * o->devices_per_node;
  if (!sim__check_devices(devices, "ps", error))
    return NULL;
  guint n = sim_costs_n_layers(c);
  /* At least, per iteration and device: the input copy, a forward and a backward pass per
   * layer, and the iteration's end (the weight gradients and their pushes come on top). */
  if (!sim_graph_check_size((uint64_t)(o->iterations ? o->iterations : 1) * devices *
                                (2 * (uint64_t)n + 2), error))
    return NULL;
  g_autoptr(sim_plan) p = sim__plan_new();
  sim_graph *g = p->graph;
  p->devices = (uint32_t)devices;
  p->ps_workers = (uint32_t)devices;
  p->samples_per_iteration = devices * c->batch;
  /* Workers hold weights and gradients but no optimizer state (the servers update). */
  p->memory_per_device_bytes = c->memory_bytes;

  /* One tensor per layer with parameters, or per variable when dealt out as TensorFlow does:
   * tensor_of[i] is layer i's first, n_of[i] how many it has. */
  comm_ps_sharding sharding = o->scenario ? o->scenario->ps_sharding : COMM_PS_SHARD_BYTES;
  g_autofree int32_t *tensor_of = g_new(int32_t, n);
  g_autofree uint32_t *n_of = g_new0(uint32_t, n);
  for (guint i = 0; i < n; i++) {
    const sim_layer_cost *l = sim_costs_layer(c, i);
    uint64_t second = sharding == COMM_PS_SHARD_ROUND_ROBIN && l->second_bytes < l->param_bytes
                          ? l->second_bytes
                          : 0;
    uint64_t b[2] = {l->param_bytes - second, second};
    tensor_of[i] = -1;
    if (l->param_bytes == 0)
      continue;
    tensor_of[i] = (int32_t)p->ps_tensor_bytes->len;
    for (guint v = 0; v < 2; v++)
      if (b[v] > 0) {
        g_array_append_val(p->ps_tensor_bytes, b[v]);
        n_of[i]++;
      }
  }
  uint32_t T = p->ps_tensor_bytes->len;
  if (o->ps_count > 0 && T > 0) {
    uint32_t servers = o->ps_count;
    g_array_set_size(p->ps_shard_of, T);
    uint32_t *shard_of = (uint32_t *)(void *)p->ps_shard_of->data;
    if (sharding == COMM_PS_SHARD_ROUND_ROBIN)
      comm_ps_deal_tensors(T, servers, 1, shard_of);
    else
      comm_ps_place_tensors((const uint64_t *)(void *)p->ps_tensor_bytes->data, T, servers,
                            shard_of);
    /* The report names the busiest of several servers (one holds everything). */
    if (servers > 1) {
      double *share = g_new(double, 1);
      *share = comm_ps_busiest_share((const uint64_t *)(void *)p->ps_tensor_bytes->data, T,
                                     servers, shard_of);
      p->extra = share;
      p->extra_free = g_free;
    }
  }
  g_autofree sim_device_streams *ds = g_new(sim_device_streams, devices);
  g_autofree sim_stream_id *shown = g_new(sim_stream_id, devices);
  g_autofree sim_task_id *prev_end = g_new0(sim_task_id, devices);
  for (uint32_t d = 0; d < devices; d++) {
    /* Pushes run on no stream (each ends when its pull is back, and several are in flight at
     * once); the report counts them, and the trace shows them on a track of their own. */
    sim__add_device(p, d, o->devices_per_node, FALSE, &ds[d]);
    shown[d] = sim_graph_add_stream(g, ds[d].unit, "push/pull");
  }
  p->probe_unit = 0;
  p->probe_compute = ds[0].compute;

  /* prev[d * T + t]: the push task of the previous iteration (ends with the pull). */
  g_autofree sim_task_id *prev = g_new(sim_task_id, (gsize)devices * (T ? T : 1));
  g_autofree sim_task_id *first_fwd = g_new0(sim_task_id, devices);
  gboolean replicas = o->scenario && o->scenario->ps_workers == COMM_PS_WORKER_NODE;
  uint32_t iterations = o->iterations ? o->iterations : 1;
  for (uint32_t it = 0; it < iterations; it++) {
    for (uint32_t d = 0; d < devices; d++) {
      sim_task_id step = sim__host_step(p, c, ds[d].host, it > 0, prev_end[d]), last = step;
      sim_task_id copy = sim_graph_add_compute(g, ds[d].copy, "input copy", "copy",
                                               c->input_copy_ps, 0, c->input_bytes);
      if (it > 0)
        sim_graph_depend(g, copy, first_fwd[d]);
      for (guint i = 0; i < n; i++) {
        const sim_layer_cost *l = sim_costs_layer(c, i);
        last = sim_graph_add_compute(g, ds[d].compute, l->name, "forward", l->forward_ps,
                                     l->forward_flops, 0);
        if (i == 0) {
          sim_graph_depend(g, last, copy);
          sim_graph_depend(g, last, step);
          first_fwd[d] = last;
        }
        for (uint32_t v = 0; it > 0 && !replicas && v < n_of[i]; v++)
          sim_graph_depend(g, last, prev[(gsize)d * T + (guint)tensor_of[i] + v]);
        if (it > 0 && i == 0 && replicas)
          for (uint32_t t = 0; t < T; t++)
            sim_graph_depend(g, last, prev[(gsize)d * T + t]);
      }
      for (guint k = n; k-- > 0;) {
        const sim_layer_cost *l = sim_costs_layer(c, k);
        if (l->param_bytes > 0 || l->backward_weights_ps > 0) {
          g_autofree char *name = g_strconcat(l->name, " dW", NULL);
          last = sim_graph_add_compute(g, ds[d].compute, name, "backward", l->backward_weights_ps,
                                       l->backward_weights_flops, 0);
          for (uint32_t v = 0; v < n_of[k]; v++) {
            uint32_t t = (uint32_t)tensor_of[k] + v;
            g_autofree char *pname =
                g_strconcat("push/pull ", l->name, v ? " (second variable)" : "", NULL);
            sim_task_id push = sim_graph_add_custom(g, NULL, 0, pname, "ps", SIM_OP_PS_PUSH,
                                                    g_array_index(p->ps_tensor_bytes, uint64_t,
                                                                  t));
            sim_graph_depend(g, push, last);
            sim_graph_show_on(g, push, shown[d]);
            prev[(gsize)d * T + t] = push;
            sim_ps_task pt = {push, it, d, t};
            g_array_append_val(p->ps_tasks, pt);
          }
        }
        if (k > 0) {
          g_autofree char *name = g_strconcat(l->name, " dX", NULL);
          last = sim_graph_add_compute(g, ds[d].compute, name, "backward", l->backward_data_ps,
                                       l->backward_data_flops, 0);
        }
      }
      prev_end[d] = last;
      if (d == 0) {
        /* Device 0's iteration ends when its backward is done and its last pull has arrived;
         * a zero-length task on no stream marks it without holding anything back. */
        sim_task_id end = sim_graph_add_delay(g, "iteration end", 0);
        sim_graph_depend(g, end, last);
        for (uint32_t t = 0; t < T; t++)
          sim_graph_depend(g, end, prev[t]);
        g_array_append_val(p->iteration_end, end);
      }
    }
  }
  return g_steal_pointer(&p);
}

/* The busiest server's bytes over the mean (ps_build's share of the plan's sharding). */
static void ps_report(const sim_plan *plan, sim_report *r)
{
  if (plan->extra)
    r->ps_busiest_share = *(const double *)plan->extra;
}

/* --chakra-out writes a worker per device (sim/chakra.c): node workers have no such form. */
static const char *ps_check(const sim_scenario *s, const sim_shape *shape, GError **error)
{
  (void)shape;
  if (s->ps_workers == COMM_PS_WORKER_NODE && s->chakra_out) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "--ps-workers node: --chakra-out writes a worker per device; use --ps-workers "
                "device");
    return "chakra";
  }
  return NULL;
}

/* The parameter servers themselves are comm/coll's (comm_ps); these say how many and where. */
SIM_CHOICES_OF(comm_ps_placement_name, comm_ps_placement)
SIM_CHOICES_OF(comm_ps_workers_name, comm_ps_workers)
SIM_CHOICES_OF(comm_ps_sharding_name, comm_ps_sharding)
static const sim_key ps_keys[] = {
    {"ps-count", SIM_KEY_INT, SIM_KEY_OFF(ps_count), "1", 1, 1000000, .commands = SIM_OPTS_RUN,
     .arg = "K", .help = "parameter servers (shards), any count from 1: several share a socket "
                         "or device when K exceeds them"},
    {"ps-placement", SIM_KEY_CHOICE, SIM_KEY_OFF(ps_placement), "cpu",
     .choice_name = comm_ps_placement_name_choice,
     .n_choices = COMM_PS_DEDICATED + 1, .commands = SIM_OPTS_RUN,
     .help = "where servers run: cpu and colocated: the worker nodes' host sockets, round-robin "
             "(server k on node k mod N); gpu: the devices, round-robin; dedicated: K extra "
             "nodes, one server each. Servers on one socket or device share its aggregation"},
    {"ps-workers", SIM_KEY_CHOICE, SIM_KEY_OFF(ps_workers), "device",
     .choice_name = comm_ps_workers_name_choice, .n_choices = COMM_PS_WORKER_NODE + 1,
     .commands = SIM_OPTS_RUN,
     .help = "device: every device pushes its gradients and pulls the parameters (TensorFlow's "
             "parameter_server); node: one worker per node whose devices keep replicas "
             "(distributed_replicated): gradients summed on one device of the node, one copy "
             "per node to the server and back to the node's host, copied to every device "
             "before the next step"},
    {"ps-sharding", SIM_KEY_CHOICE, SIM_KEY_OFF(ps_sharding), "bytes",
     .choice_name = comm_ps_sharding_name_choice, .n_choices = COMM_PS_SHARD_ROUND_ROBIN + 1,
     .commands = SIM_OPTS_RUN,
     .help = "bytes: one tensor per layer, the servers balanced by bytes (largest first onto "
             "the least loaded); round-robin: a tensor per variable (weight, bias) dealt out to "
             "the servers in turn in creation order after global_step, as TensorFlow 1.x's "
             "replica_device_setter places them: one server may hold far more than its share"},
};
static const sim_key_group sim_keys_ps = SIM_KEY_GROUP("ps", SIM_STRATEGY_SERVERS, ps_keys);

/* ---- Search ---------------------------------------------------------------------------------- */

/* Servers: one, two, one per node, one per device (each count once, ascending). */
static void ps_count_values(const sim_search_ctx *c, GPtrArray *out)
{
  const uint64_t k[] = {1, 2, c->nodes, c->devices};
  /* Ascending, each once: count up through the distinct values. */
  uint64_t last = 0;
  for (;;) {
    uint64_t next = UINT64_MAX;
    for (size_t i = 0; i < G_N_ELEMENTS(k); i++)
      if (k[i] > last && k[i] <= c->devices)
        next = MIN(next, k[i]);
    if (next == UINT64_MAX)
      return;
    sim_search_add_value(out, "ps-count=%" G_GUINT64_FORMAT, next);
    last = next;
  }
}

static void ps_placement_values(const sim_search_ctx *c, GPtrArray *out)
{
  (void)c;
  for (comm_ps_placement p = COMM_PS_CPU; p <= COMM_PS_DEDICATED; p++)
    sim_search_add_value(out, "ps-placement=%s", comm_ps_placement_name(p));
}

static const sim_search_axis ps_axes[] = {{"ps-count", ps_count_values},
                                          {"ps-placement", ps_placement_values}};
static const sim_search_family ps_search[] = {
    SIM_SEARCH_FAMILY(NULL, ps_axes, sim_search_per_device)};

const sim_strategy sim__strategy_ps = {
    .name = "ps",
    .description = "parameter servers: pushes as gradients appear, aggregation on the servers, "
                   "pulls before each layer's next forward",
    .flags = SIM_STRATEGY_SERVERS | SIM_STRATEGY_REPLAYABLE | SIM_STRATEGY_ONE_DEVICE,
    .keys = &sim_keys_ps,
    .check = ps_check,
    .build = ps_build,
    .report = ps_report,
    .search = ps_search,
    .n_search = G_N_ELEMENTS(ps_search),
};
