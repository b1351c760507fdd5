/* Parameter servers: tensors sharded over K servers, a synchronous push / aggregate / pull step.
 *
 * Every push and pull is one transfer on the network model, so with the flow model the
 * server's NIC and PCIe links are where contention shows. A server aggregates one tensor at a
 * time (W gradients of `bytes` each, read at the server's rate), in the order the tensors
 * become complete; servers that share a host socket or a device share its aggregation (the
 * host's memory reads every gradient that arrives there). Any number of servers: several per
 * socket or device where there are more servers than places (comm_ps_check).
 *
 * With node workers (TensorFlow's distributed_replicated, tf_cnn_benchmarks' variable_mgr.py
 * VariableMgrDistributedReplicated) a node is one worker: the gradients of a tensor from the
 * node's members are copied to one member (tensor t to the node's member t mod G, as
 * aggregate_gradients_using_copy_with_device_selection places them) and summed there, that
 * member sends the one sum to the tensor's server, the server aggregates one copy per node and
 * sends one copy back to the node's host (the worker reads the variable on its CPU), and the host
 * copies it to every member's replica. A node's link to the network carries one push and one
 * pull per tensor, not one per member. */
#include "coll_internal.h"
#include "util.h"

#include <string.h>

typedef struct {
  comm_ps *ps;
  uint32_t worker, tensor;
} ps_msg;

struct comm_ps {
  comm_net *net;
  sim_engine *engine;
  const comm_coll_group *g;
  comm_ps_config cfg;
  uint64_t *tensor_bytes;     /* copy of cfg.tensor_bytes */
  uint32_t servers;
  uint32_t *shard_of;         /* per tensor */
  uint64_t *shard_bytes;      /* per shard */
  comm_ep *server_ep;         /* per shard */
  uint32_t *unit_of;          /* per shard: its host's aggregation unit (the first shard on the
                               * same endpoint): servers on one socket or device share it */
  sim_time_ps *server_free;   /* per unit (indexed by its first shard): when it is next idle */

  sim_time_ps *agg_end;       /* per tensor: when its aggregation ends */
  uint64_t *agg_span;         /* per tensor: the aggregation's span, 0 if unobserved */
  sim_track_id *server_track; /* per shard, when observed */
  ps_msg *msgs;               /* W x T contexts, one per (worker, tensor) */
  uint32_t *pushes;           /* per tensor: pushes arrived this step */
  /* Node workers (cfg.node_workers; else workers = members and these are unused). */
  uint32_t workers;           /* pushes a tensor's aggregation waits for: members or nodes */
  uint32_t *slot_of;          /* per member: its node's slot (nodes in order of appearance) */
  uint32_t *slot_first;       /* per slot: its first member (members of a node are a run) */
  uint32_t *slot_members;     /* per slot: how many */
  comm_ep *slot_host;         /* per slot: the node's host (socket 0), where pulls arrive */
  uint32_t *local_pushes;     /* per slot x tensor: members' gradients summed so far */
  ps_msg *slot_msgs;          /* per slot x tensor: context of the node's push and pull */
  uint64_t pulls_left;
  gboolean in_step;
  comm_ps_tensor_fn pulled;
  comm_done_fn done;
  void *user;
};

static const char *const placement_names[] = {"cpu", "gpu", "colocated", "dedicated"};

const char *comm_ps_placement_name(comm_ps_placement p)
{
  return (guint)p < G_N_ELEMENTS(placement_names) ? placement_names[p] : "?";
}

const char *comm_ps_workers_name(comm_ps_workers w)
{
  return w == COMM_PS_WORKER_DEVICE ? "device" : w == COMM_PS_WORKER_NODE ? "node" : "?";
}

const char *comm_ps_sharding_name(comm_ps_sharding s)
{
  return s == COMM_PS_SHARD_BYTES ? "bytes" : s == COMM_PS_SHARD_ROUND_ROBIN ? "round-robin" : "?";
}

/* Largest tensor first (equal sizes: lower tensor index first). */
static int cmp_tensor_desc(const void *a, const void *b, void *data)
{
  const uint64_t *sort_bytes = data;
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  if (sort_bytes[x] != sort_bytes[y])
    return sort_bytes[x] > sort_bytes[y] ? -1 : 1;
  return x < y ? -1 : (x > y);
}

void comm_ps_place_tensors(const uint64_t *tensor_bytes, uint32_t tensors, uint32_t servers,
                           uint32_t *shard_of)
{
  g_return_if_fail(servers > 0 && (tensors == 0 || (tensor_bytes != NULL && shard_of != NULL)));
  g_autofree uint32_t *order = g_new(uint32_t, MAX(tensors, 1));
  g_autofree uint64_t *load = g_new0(uint64_t, servers);
  for (uint32_t i = 0; i < tensors; i++)
    order[i] = i;
  /* The comparison only reads the sizes; GLib's signature wants a non-const pointer. */
  g_qsort_with_data(order, (gint)tensors, sizeof *order, cmp_tensor_desc, (gpointer)tensor_bytes);
  for (uint32_t i = 0; i < tensors; i++) {
    uint32_t best = 0;
    for (uint32_t k = 1; k < servers; k++)
      if (load[k] < load[best])
        best = k;
    shard_of[order[i]] = best;
    load[best] += tensor_bytes[order[i]];
  }
}

void comm_ps_deal_tensors(uint32_t tensors, uint32_t servers, uint32_t first, uint32_t *shard_of)
{
  g_return_if_fail(servers > 0 && (tensors == 0 || shard_of != NULL));
  for (uint32_t i = 0; i < tensors; i++)
    shard_of[i] = (uint32_t)(((uint64_t)first + i) % servers);
}

double comm_ps_busiest_share(const uint64_t *tensor_bytes, uint32_t tensors, uint32_t servers,
                             const uint32_t *shard_of)
{
  g_return_val_if_fail(servers > 0 && (tensors == 0 || (tensor_bytes && shard_of)), 0);
  g_autofree uint64_t *load = g_new0(uint64_t, servers);
  uint64_t total = 0, busiest = 0;
  for (uint32_t i = 0; i < tensors; i++) {
    g_return_val_if_fail(shard_of[i] < servers, 0);
    load[shard_of[i]] += tensor_bytes[i];
    total += tensor_bytes[i];
    busiest = MAX(busiest, load[shard_of[i]]);
  }
  return total ? (double)busiest * servers / (double)total : 0;
}

static void balance(comm_ps *ps, gboolean placed)
{
  if (!placed)
    comm_ps_place_tensors(ps->tensor_bytes, ps->cfg.tensors, ps->servers, ps->shard_of);
  for (uint32_t i = 0; i < ps->cfg.tensors; i++)
    ps->shard_bytes[ps->shard_of[i]] += ps->tensor_bytes[i];
}

comm_ep comm_ps_host(const comm_topology *topo, gboolean dedicated, uint32_t k)
{
  uint32_t nodes = MAX(comm_topology_nodes(topo), 1);
  uint32_t sockets = MAX(comm_topology_sockets(topo), 1);
  uint32_t extra = MAX(comm_topology_extra_nodes(topo), 1);
  if (dedicated)
    return comm_topology_host(topo, nodes + k % extra, (k / extra) % sockets);
  return comm_topology_host(topo, k % nodes, (k / nodes) % sockets);
}

static gboolean place(comm_ps *ps, GError **error)
{
  const comm_topology *topo = ps->g->topo;
  uint32_t nodes = comm_topology_nodes(topo), per = comm_topology_devices_per_node(topo);
  for (uint32_t k = 0; k < ps->servers; k++) {
    switch (ps->cfg.placement) {
    case COMM_PS_CPU:
      ps->server_ep[k] = comm_ps_host(topo, FALSE, k);
      break;
    case COMM_PS_GPU:
      ps->server_ep[k] = comm_topology_device(topo, (k % nodes) * per + (k / nodes) % per);
      break;
    case COMM_PS_COLOCATED:
      /* The first K worker nodes' hosts, as TensorFlow jobs with K < N servers run them. */
      ps->server_ep[k] = comm_ps_host(topo, FALSE, k);
      break;
    case COMM_PS_DEDICATED:
      ps->server_ep[k] = comm_ps_host(topo, TRUE, k);
      break;
    default:
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--ps-placement: unknown placement");
      return FALSE;
    }
  }
  return TRUE;
}

gboolean comm_ps_check(const comm_topology *topo, comm_ps_placement placement, uint32_t servers,
                       GError **error)
{
  if (servers == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--ps-count: needs at least one server");
    return FALSE;
  }
  /* Any count: TensorFlow ran as many server tasks per host as it was given. cpu and
   * colocated servers go round-robin over the worker nodes' host sockets, gpu servers over the
   * devices, several on one socket or device beyond their number; dedicated servers take an
   * extra node each. */
  if (placement == COMM_PS_DEDICATED && comm_topology_extra_nodes(topo) == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "--ps-placement dedicated: the cluster has no extra nodes for the servers");
    return FALSE;
  }
  return TRUE;
}

/* The nodes of the members, in order of appearance: each a worker of its own. */
static void node_slots(comm_ps *ps)
{
  const comm_coll_group *g = ps->g;
  uint32_t T = MAX(ps->cfg.tensors, 1), slots = 0;
  ps->slot_of = g_new(uint32_t, g->n);
  ps->slot_first = g_new0(uint32_t, g->n);
  ps->slot_members = g_new0(uint32_t, g->n);
  ps->slot_host = g_new0(comm_ep, g->n);
  for (uint32_t w = 0; w < g->n; w++) {
    if (w == 0 || g->node[w] != g->node[w - 1]) {
      ps->slot_first[slots] = w;
      ps->slot_host[slots] = comm_topology_host(g->topo, g->node[w], 0);
      slots++;
    }
    ps->slot_of[w] = slots - 1;
    ps->slot_members[slots - 1]++;
  }
  ps->workers = slots;
  ps->local_pushes = g_new0(uint32_t, (gsize)slots * T);
  ps->slot_msgs = g_new(ps_msg, (gsize)slots * T);
  for (uint32_t s = 0; s < slots; s++)
    for (uint32_t t = 0; t < T; t++)
      ps->slot_msgs[(gsize)s * T + t] = (ps_msg){ps, s, t};
}

comm_ps *comm_ps_new(comm_net *net, const comm_coll_group *group, const comm_ps_config *config,
                     GError **error)
{
  g_return_val_if_fail(net != NULL && group != NULL && config != NULL, NULL);
  const comm_topology *topo = group->topo;
  uint32_t servers = config->servers;
  if (!comm_ps_check(topo, config->placement, servers, error))
    return NULL;
  if (config->tensors > 0 && config->tensor_bytes == NULL) {
    g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "parameter server: no tensor sizes");
    return NULL;
  }
  for (uint32_t t = 0; config->shard_of && t < config->tensors; t++)
    if (config->shard_of[t] >= servers) {
      g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL,
                  "parameter server: tensor %u on shard %u of %u", t, config->shard_of[t],
                  servers);
      return NULL;
    }
  g_autoptr(comm_ps) ps = g_new0(comm_ps, 1);
  ps->net = net;
  ps->engine = comm_net_engine(net);
  ps->g = group;
  ps->cfg = *config;
  ps->servers = servers;
  ps->tensor_bytes = g_new0(uint64_t, MAX(config->tensors, 1));
  if (config->tensors > 0)
    memcpy(ps->tensor_bytes, config->tensor_bytes, config->tensors * sizeof(uint64_t));
  ps->cfg.tensor_bytes = ps->tensor_bytes;
  ps->shard_of = g_new0(uint32_t, MAX(config->tensors, 1));
  if (config->shard_of && config->tensors > 0)
    memcpy(ps->shard_of, config->shard_of, config->tensors * sizeof(uint32_t));
  ps->cfg.shard_of = NULL;  /* the caller's array need not outlive this call */
  ps->shard_bytes = g_new0(uint64_t, servers);
  ps->server_ep = g_new0(comm_ep, servers);
  ps->unit_of = g_new0(uint32_t, servers);
  ps->server_free = g_new0(sim_time_ps, servers);
  ps->pushes = g_new0(uint32_t, MAX(config->tensors, 1));
  ps->msgs = g_new(ps_msg, (gsize)group->n * MAX(config->tensors, 1));
  for (uint32_t w = 0; w < group->n; w++)
    for (uint32_t t = 0; t < config->tensors; t++)
      ps->msgs[(gsize)w * config->tensors + t] = (ps_msg){NULL, w, t};
  for (gsize i = 0; i < (gsize)group->n * config->tensors; i++)
    ps->msgs[i].ps = ps;
  ps->agg_end = g_new0(sim_time_ps, MAX(config->tensors, 1));
  ps->agg_span = g_new0(uint64_t, MAX(config->tensors, 1));
  balance(ps, config->shard_of != NULL);
  if (!place(ps, error))
    return NULL;
  ps->workers = group->n;
  if (config->node_workers)
    node_slots(ps);
  /* Servers on one endpoint share its aggregation: the socket's memory (or the device's) reads
   * every gradient that arrives there, whichever server it is for. */
  g_autoptr(GHashTable) first = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (uint32_t k = 0; k < servers; k++) {
    gpointer key = GUINT_TO_POINTER(ps->server_ep[k] + 1), v;
    if (g_hash_table_lookup_extended(first, key, NULL, &v)) {
      ps->unit_of[k] = GPOINTER_TO_UINT(v);
    } else {
      ps->unit_of[k] = k;
      g_hash_table_insert(first, key, GUINT_TO_POINTER(k));
    }
  }
  /* Each server is a process of the trace, its aggregations a thread. */
  if (sim_engine_has_observers(ps->engine)) {
    ps->server_track = g_new0(sim_track_id, servers);
    for (uint32_t k = 0; k < servers; k++) {
      g_autofree char *name = g_strdup_printf("parameter server %u (%s)", k,
                                              comm_topology_endpoint_name(topo, ps->server_ep[k]));
      sim_proc_id proc = sim_engine_add_proc(ps->engine, SIM_PROC_PARAM_SERVER, name, (int)k);
      ps->server_track[k] = sim_engine_add_track(ps->engine, proc, "aggregate and update", 0);
    }
  }
  return g_steal_pointer(&ps);
}

void comm_ps_free(comm_ps *ps)
{
  if (ps == NULL)
    return;
  g_free(ps->tensor_bytes);
  g_free(ps->shard_of);
  g_free(ps->shard_bytes);
  g_free(ps->server_ep);
  g_free(ps->unit_of);
  g_free(ps->server_free);
  g_free(ps->pushes);
  g_free(ps->agg_end);
  g_free(ps->agg_span);
  g_free(ps->server_track);
  g_free(ps->msgs);
  g_free(ps->slot_of);
  g_free(ps->slot_first);
  g_free(ps->slot_members);
  g_free(ps->slot_host);
  g_free(ps->local_pushes);
  g_free(ps->slot_msgs);
  g_free(ps);
}

uint32_t comm_ps_servers(const comm_ps *ps)
{
  return ps->servers;
}

uint32_t comm_ps_shard_of(const comm_ps *ps, uint32_t tensor)
{
  g_return_val_if_fail(tensor < ps->cfg.tensors, 0);
  return ps->shard_of[tensor];
}

uint64_t comm_ps_shard_bytes(const comm_ps *ps, uint32_t shard)
{
  g_return_val_if_fail(shard < ps->servers, 0);
  return ps->shard_bytes[shard];
}

comm_ep comm_ps_server_endpoint(const comm_ps *ps, uint32_t shard)
{
  g_return_val_if_fail(shard < ps->servers, 0);
  return ps->server_ep[shard];
}

sim_time_ps comm_ps_aggregation_end(const comm_ps *ps, uint32_t tensor)
{
  g_return_val_if_fail(tensor < ps->cfg.tensors, 0);
  return ps->agg_end[tensor];
}

void comm_ps_step_begin(comm_ps *ps, comm_ps_tensor_fn pulled, comm_done_fn done, void *user)
{
  g_return_if_fail(!ps->in_step);
  ps->in_step = TRUE;
  ps->pulled = pulled;
  ps->done = done;
  ps->user = user;
  memset(ps->pushes, 0, MAX(ps->cfg.tensors, 1) * sizeof(uint32_t));
  if (ps->local_pushes)
    memset(ps->local_pushes, 0, (gsize)ps->workers * MAX(ps->cfg.tensors, 1) * sizeof(uint32_t));
  ps->pulls_left = (uint64_t)ps->g->n * ps->cfg.tensors;
}

static void on_pull_done(sim_engine *engine, void *user)
{
  ps_msg *msg = user;
  comm_ps *ps = msg->ps;
  if (ps->pulled)
    ps->pulled(engine, msg->worker, msg->tensor, ps->user);
  if (--ps->pulls_left == 0) {
    ps->in_step = FALSE;
    if (ps->done)
      ps->done(engine, ps->user);
  }
}

/* A node's copy of a tensor is on its host: the host copies it to every member. */
static void on_node_pulled(sim_engine *engine, void *user)
{
  (void)engine;
  ps_msg *msg = user;
  comm_ps *ps = msg->ps;
  uint32_t s = msg->worker, t = msg->tensor;
  for (uint32_t w = ps->slot_first[s]; w < ps->slot_first[s] + ps->slot_members[s]; w++)
    comm_net_send(ps->net, ps->slot_host[s], ps->g->eps[w], ps->tensor_bytes[t], on_pull_done,
                  &ps->msgs[(gsize)w * ps->cfg.tensors + t]);
}

/* The shard has aggregated `tensor`: every worker pulls it. */
static void on_aggregated(sim_engine *engine, void *data, uint64_t tensor)
{
  comm_ps *ps = data;
  uint32_t t = (uint32_t)tensor, k = ps->shard_of[t];
  if (ps->agg_span[t])
    sim_engine_span_end(engine, ps->agg_span[t]);
  ps->agg_span[t] = 0;
  if (ps->cfg.node_workers) {
    for (uint32_t s = 0; s < ps->workers; s++)
      comm_net_send(ps->net, ps->server_ep[k], ps->slot_host[s], ps->tensor_bytes[t],
                    on_node_pulled, &ps->slot_msgs[(gsize)s * ps->cfg.tensors + t]);
    return;
  }
  for (uint32_t w = 0; w < ps->g->n; w++)
    comm_net_send(ps->net, ps->server_ep[k], ps->g->eps[w], ps->tensor_bytes[t], on_pull_done,
                  &ps->msgs[(gsize)w * ps->cfg.tensors + t]);
}

/* The shard's aggregation unit takes `tensor` (it may have been busy when the last push came). */
static void on_aggregation_start(sim_engine *engine, void *data, uint64_t tensor)
{
  comm_ps *ps = data;
  uint32_t t = (uint32_t)tensor;
  if (ps->server_track)
    ps->agg_span[t] = sim_engine_span_begin(engine, ps->server_track[ps->shard_of[t]], "aggregate",
                                            "ps", ps->tensor_bytes[t] * ps->workers, 0);
  sim_engine_schedule_at(engine, ps->agg_end[t], on_aggregated, ps, t);
}

static void on_push_done(sim_engine *engine, void *user)
{
  ps_msg *msg = user;
  comm_ps *ps = msg->ps;
  uint32_t t = msg->tensor, k = ps->unit_of[ps->shard_of[t]];
  if (++ps->pushes[t] < ps->workers)
    return;
  sim_time_ps now = sim_engine_now(engine);
  sim_time_ps start = MAX(now, ps->server_free[k]);
  uint64_t work = ps->tensor_bytes[t] * ps->workers;
  sim_time_ps end = sim_time_add_sat(start, coll__reduce_time(work, ps->cfg.server_reduce_Bps));
  ps->server_free[k] = end;
  ps->agg_end[t] = end;
  sim_engine_schedule_at(engine, start, on_aggregation_start, ps, t);
}

/* The member of slot s that sums tensor t. */
static uint32_t summing_member(const comm_ps *ps, uint32_t s, uint32_t t)
{
  return ps->slot_first[s] + t % ps->slot_members[s];
}

/* A node's sum of a tensor is done: its summing member pushes it to the server. */
static void on_node_summed(sim_engine *engine, void *data, uint64_t slot_tensor)
{
  (void)engine;
  comm_ps *ps = data;
  ps_msg *msg = &ps->slot_msgs[slot_tensor];
  uint32_t t = msg->tensor;
  comm_net_send(ps->net, ps->g->eps[summing_member(ps, msg->worker, t)],
                ps->server_ep[ps->shard_of[t]], ps->tensor_bytes[t], on_push_done, msg);
}

/* A member's gradient has reached its node's summing member; the last one starts the sum (the
 * node's G gradients read at the member's rate). */
static void on_local_push_done(sim_engine *engine, void *user)
{
  ps_msg *msg = user;
  comm_ps *ps = msg->ps;
  uint32_t s = ps->slot_of[msg->worker], t = msg->tensor;
  gsize st = (gsize)s * ps->cfg.tensors + t;
  if (++ps->local_pushes[st] < ps->slot_members[s])
    return;
  uint64_t work = ps->tensor_bytes[t] * ps->slot_members[s];
  sim_engine_schedule_at(engine,
                         sim_time_add_sat(sim_engine_now(engine),
                                          coll__reduce_time(work, ps->cfg.local_reduce_Bps)),
                         on_node_summed, ps, st);
}

void comm_ps_push(comm_ps *ps, uint32_t worker, uint32_t tensor)
{
  g_return_if_fail(ps->in_step && worker < ps->g->n && tensor < ps->cfg.tensors);
  if (ps->cfg.node_workers) {
    uint32_t s = ps->slot_of[worker];
    comm_net_send(ps->net, ps->g->eps[worker], ps->g->eps[summing_member(ps, s, tensor)],
                  ps->tensor_bytes[tensor], on_local_push_done,
                  &ps->msgs[(gsize)worker * ps->cfg.tensors + tensor]);
    return;
  }
  comm_net_send(ps->net, ps->g->eps[worker], ps->server_ep[ps->shard_of[tensor]],
                ps->tensor_bytes[tensor], on_push_done,
                &ps->msgs[(gsize)worker * ps->cfg.tensors + tensor]);
}

void comm_ps_push_all(comm_ps *ps)
{
  for (uint32_t t = 0; t < ps->cfg.tensors; t++)
    for (uint32_t w = 0; w < ps->g->n; w++)
      comm_ps_push(ps, w, t);
}
