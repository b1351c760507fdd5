/* Strategy `3d` (see strategy_3d.h): validation of the degrees, the time of one block's kernels
 * and collectives, the pipeline schedules (GPipe, 1F1B, interleaved 1F1B as Megatron-LM orders
 * them), data-parallel gradient reduction and ZeRO, and the memory of each stage; and `describe`
 * of a transformer. */
#include "strategy_3d.h"

#include "simulate.h"

#include "coll.h"
#include "devices.h"
#include "util.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void sim_3d_opts_init(sim_3d_opts *o)
{
  memset(o, 0, sizeof *o);
  o->precision = WL_PREC_BF16;
  o->tp = 1;
  o->pp = 1;
  o->schedule = WL_SCHED_1F1B;
  o->interleave = 1;
  o->recompute = WL_RECOMPUTE_NONE;
  o->overlap = TRUE;
  o->allreduce = "ring";
  o->iterations = 1;
}

static gboolean bad(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static gboolean bad(GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error_literal(error, DT_ERROR, DT_ERROR_INPUT, msg);
  return FALSE;
}

/* ---- Collective times on the network model ------------------------------------------------- */

/* Runs collectives alone on an idle engine and network of the job's topology and remembers
 * their times: every group of `groups` that run at the same moment in the job (the tensor-
 * parallel groups of a node, the data-parallel groups of a stage) shares the links as it would.
 * One engine and network serve every size, one after the other: each run ends with the network
 * idle again, and a time is the end of the last collective less the start. The groups of a
 * layout are made once and serve every operation and size on it (a group keeps its route
 * latencies, comm_coll_group). */
typedef struct {
  comm_coll_op op;
  guint layout;        /* in coll_timer.layouts */
  uint64_t bytes;
  sim_time_ps time_ps;
} coll_memo;

typedef struct {
  uint32_t first, n, stride, groups, group_stride;
  comm_coll_group **group;   /* groups of them */
} coll_layout;

typedef struct {
  const comm_topology *topo;
  comm_net_model model;
  const comm_coll_algorithm *algo, *ring;
  double reduce_Bps;
  GArray *memo;        /* coll_memo: the collectives timed so far (a few: one per layout,
                        * operation and size) */
  GArray *layouts;     /* coll_layout */
  sim_engine *engine;  /* NULL until the first collective is timed */
  comm_net *net;
} coll_timer;

static void coll_timer_clear(coll_timer *ct)
{
  g_clear_pointer(&ct->net, comm_net_free);
  g_clear_pointer(&ct->engine, sim_engine_free);
  g_clear_pointer(&ct->memo, g_array_unref);
  for (guint i = 0; ct->layouts && i < ct->layouts->len; i++) {
    coll_layout *l = &g_array_index(ct->layouts, coll_layout, i);
    for (uint32_t g = 0; g < l->groups; g++)
      comm_coll_group_free(l->group[g]);
    g_free(l->group);
  }
  g_clear_pointer(&ct->layouts, g_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(coll_timer, coll_timer_clear)

static void free_coll(gpointer p) { comm_coll_free(p); }
static void free_array(gpointer p) { g_array_unref(p); }

static void coll_done(sim_engine *engine, void *user)
{
  (void)engine;
  (*(uint32_t *)user)++;
}

/* The layout whose group g has the ranks first + g * group_stride + i * stride, made with its
 * groups when first asked: its place in ct->layouts. */
static guint coll_layout_of(coll_timer *ct, uint32_t first, uint32_t n, uint32_t stride,
                            uint32_t groups, uint32_t group_stride)
{
  for (guint i = 0; i < ct->layouts->len; i++) {
    coll_layout *l = &g_array_index(ct->layouts, coll_layout, i);
    if (l->first == first && l->n == n && l->stride == stride && l->groups == groups &&
        l->group_stride == group_stride)
      return i;
  }
  coll_layout l = {first, n, stride, groups, group_stride, g_new(comm_coll_group *, groups)};
  g_autofree uint32_t *ranks = g_new(uint32_t, n);
  for (uint32_t g = 0; g < groups; g++) {
    for (uint32_t i = 0; i < n; i++)
      ranks[i] = first + g * group_stride + i * stride;
    l.group[g] = comm_coll_group_new(ct->topo, ranks, n);
  }
  g_array_append_val(ct->layouts, l);
  return ct->layouts->len - 1;
}

/* Time of `groups` concurrent collectives `op` of `bytes` (nccl-tests size), group g having the
 * ranks first + g * group_stride + i * stride for i < n. */
static gboolean coll_time(coll_timer *ct, comm_coll_op op, uint32_t first, uint32_t n,
                          uint32_t stride, uint32_t groups, uint32_t group_stride,
                          uint64_t bytes, sim_time_ps *out, GError **error)
{
  if (n < 2 || bytes == 0) {
    *out = 0;
    return TRUE;
  }
  guint layout = coll_layout_of(ct, first, n, stride, groups, group_stride);
  coll_memo key = {op, layout, bytes, 0};
  for (guint i = 0; i < ct->memo->len; i++) {
    const coll_memo *m = &g_array_index(ct->memo, coll_memo, i);
    if (m->op == op && m->layout == layout && m->bytes == bytes) {
      *out = m->time_ps;
      return TRUE;
    }
  }
  const comm_coll_algorithm *algo =
      comm_coll_algorithm_supports(ct->algo, op) ? ct->algo : ct->ring;
  if (!ct->engine) {
    ct->engine = sim_engine_new();
    ct->net = comm_net_new(ct->engine, ct->topo, ct->model);
  }
  sim_engine *engine = ct->engine;
  comm_net *net = ct->net;
  sim_time_ps start_ps = sim_engine_now(engine);
  comm_coll_group **grps = g_array_index(ct->layouts, coll_layout, layout).group;
  g_autoptr(GPtrArray) colls = g_ptr_array_new_full(groups, free_coll);
  uint32_t done = 0;
  comm_coll_args args = {.op = op, .bytes = bytes, .reduce_Bps = ct->reduce_Bps,
                         .form = COMM_COLL_FORM_PIPELINED};
  for (uint32_t g = 0; g < groups; g++) {
    comm_coll *c = comm_coll_new(net, grps[g], algo, &args, error);
    if (!c) {
      /* The groups started before it are still pending: this engine and network are not
       * idle any more, so they go (after the collectives that use them). */
      g_clear_pointer(&colls, g_ptr_array_unref);
      g_clear_pointer(&ct->net, comm_net_free);
      g_clear_pointer(&ct->engine, sim_engine_free);
      return FALSE;
    }
    g_ptr_array_add(colls, c);
    comm_coll_start(c, coll_done, &done);
  }
  sim_engine_run(engine);
  sim_time_ps t = 0;
  for (guint i = 0; i < colls->len; i++)
    t = MAX(t, comm_coll_end_time(g_ptr_array_index(colls, i)) - start_ps);
  key.time_ps = t;
  g_array_append_val(ct->memo, key);
  *out = t;
  return TRUE;
}

/* ---- Per-chunk costs ------------------------------------------------------------------------- */

typedef struct {
  sim_time_ps fwd_ps, bwd_ps;         /* compute of one micro-batch through the chunk */
  sim_time_ps tp_fwd_ps, tp_bwd_ps;   /* tensor-parallel collectives on the critical path */
  uint64_t fwd_flops, bwd_flops;
} chunk_cost;

static sim_time_ps kernels_time(const dev_device *dev, const wl_tf_kernel *k, size_t n, int pass,
                                gboolean only_core, uint64_t *flops)
{
  sim_time_ps t = 0;
  for (size_t i = 0; i < n; i++) {
    if (only_core && !k[i].attention_core)
      continue;
    for (int p = pass; p <= (pass ? 2 : 0); p++)
      if (k[i].has[p]) {
        t += dev_op_time_ps(dev, &k[i].pass[p], 0);
        if (flops)
          *flops += k[i].pass[p].flops;
      }
  }
  return t;
}

typedef struct {
  wl_tf tf;
  sim_3d_opts o;
  uint32_t T, P, D, V;
  uint64_t m;                         /* micro-batches per replica and iteration */
  uint64_t mb;                        /* micro-batch, sequences */
  uint32_t layers_per_chunk;
  uint32_t devices, per_node;
  chunk_cost first, middle, last, only;   /* only: a chunk that is both first and last */
  uint64_t act_elem_bytes;
} plan3d;

/* The time of the tensor-parallel collectives of `count` activations of b s h elements:
 * allreduces, or with sequence parallelism as many all-gathers and reduce-scatters (half
 * each). */
static gboolean tp_time(coll_timer *ct, const plan3d *p, unsigned count, sim_time_ps *out,
                        GError **error)
{
  *out = 0;
  if (p->T < 2 || count == 0)
    return TRUE;
  uint64_t bytes = p->mb * p->tf.seq * (uint64_t)p->tf.hidden * p->act_elem_bytes;
  uint32_t groups = p->per_node >= p->T && p->per_node % p->T == 0 ? p->per_node / p->T : 1;
  if (!p->o.seq_parallel) {
    sim_time_ps t;
    if (!coll_time(ct, COMM_COLL_ALLREDUCE, 0, p->T, 1, groups, p->T, bytes, &t, error))
      return FALSE;
    *out = t * count;
    return TRUE;
  }
  sim_time_ps ag, rs;
  if (!coll_time(ct, COMM_COLL_ALLGATHER, 0, p->T, 1, groups, p->T, bytes, &ag, error) ||
      !coll_time(ct, COMM_COLL_REDUCE_SCATTER, 0, p->T, 1, groups, p->T, bytes, &rs, error))
    return FALSE;
  *out = (ag + rs) * count / 2;
  return TRUE;
}

static gboolean chunk_costs(const dev_device *dev, coll_timer *ct, plan3d *p, GError **error)
{
  wl_tf_shard sh = {.micro_batch = (uint32_t)p->mb, .seq = p->tf.seq, .tp = p->T,
                    .seq_parallel = p->o.seq_parallel, .precision = p->o.precision,
                    .attention = p->o.attention};
  wl_tf_kernel k[WL_TF_MAX_KERNELS];
  size_t n = wl_tf_layer_kernels(&p->tf, &sh, k);
  uint64_t lf = 0, lb = 0, rf = 0;
  sim_time_ps layer_f = kernels_time(dev, k, n, 0, FALSE, &lf);
  sim_time_ps layer_b = kernels_time(dev, k, n, 1, FALSE, &lb);
  /* Recomputation before the backward pass: the whole block's forward (full) or its attention
   * core (selective). */
  sim_time_ps layer_r = p->o.recompute == WL_RECOMPUTE_FULL ? kernels_time(dev, k, n, 0, FALSE, &rf)
                        : p->o.recompute == WL_RECOMPUTE_SELECTIVE
                            ? kernels_time(dev, k, n, 0, TRUE, &rf) : 0;
  /* Megatron's block: one allreduce after attention and one after the MLP in forward, their
   * conjugates in backward (f and g of Shoeybi et al.); the recomputed forward repeats them. */
  sim_time_ps tp_f, tp_b;
  if (!tp_time(ct, p, 2, &tp_f, error) ||
      !tp_time(ct, p, p->o.recompute == WL_RECOMPUTE_FULL ? 4 : 2, &tp_b, error))
    return FALSE;
  uint32_t L = p->layers_per_chunk;
  chunk_cost mid = {.fwd_ps = layer_f * L, .bwd_ps = (layer_b + layer_r) * L,
                    .tp_fwd_ps = tp_f * L, .tp_bwd_ps = tp_b * L,
                    .fwd_flops = lf * L, .bwd_flops = (lb + rf) * L};
  /* Embedding (vocabulary-parallel: an allreduce of its output) on the first chunk; final norm,
   * LM head and cross-entropy (an allreduce of the input gradient) on the last. */
  wl_tf_kernel e[4], h[4];
  size_t ne = wl_tf_embedding_kernels(&p->tf, &sh, e);
  size_t nh = wl_tf_head_kernels(&p->tf, &sh, h);
  uint64_t ef = 0, eb = 0, hf = 0, hb = 0;
  sim_time_ps e_f = kernels_time(dev, e, ne, 0, FALSE, &ef), e_b = kernels_time(dev, e, ne, 1, FALSE, &eb);
  sim_time_ps h_f = kernels_time(dev, h, nh, 0, FALSE, &hf), h_b = kernels_time(dev, h, nh, 1, FALSE, &hb);
  sim_time_ps tp1;
  if (!tp_time(ct, p, 1, &tp1, error))
    return FALSE;
  p->middle = mid;
  p->first = mid;
  p->first.fwd_ps += e_f, p->first.bwd_ps += e_b, p->first.tp_fwd_ps += tp1;
  p->first.fwd_flops += ef, p->first.bwd_flops += eb;
  p->last = mid;
  p->last.fwd_ps += h_f, p->last.bwd_ps += h_b, p->last.tp_bwd_ps += tp1;
  p->last.fwd_flops += hf, p->last.bwd_flops += hb;
  p->only = p->first;
  p->only.fwd_ps += h_f, p->only.bwd_ps += h_b, p->only.tp_bwd_ps += tp1;
  p->only.fwd_flops += hf, p->only.bwd_flops += hb;
  return TRUE;
}

static const chunk_cost *cost_of(const plan3d *p, uint32_t vs)
{
  uint32_t nv = p->P * p->V;
  if (nv == 1)
    return &p->only;
  return vs == 0 ? &p->first : vs == nv - 1 ? &p->last : &p->middle;
}

/* Parameters one device of virtual stage vs holds (its tensor-parallel share). */
static uint64_t chunk_params(const plan3d *p, uint32_t vs)
{
  uint64_t n = (uint64_t)p->layers_per_chunk * wl_tf_layer_params(&p->tf);
  uint32_t nv = p->P * p->V;
  if (vs == 0)
    n += wl_tf_embedding_params(&p->tf);
  /* The last stage holds the LM head: its own matrix, or a copy of the tied embedding
   * (Megatron keeps one on each end of the pipeline). */
  if (vs == nv - 1) {
    n += wl_tf_head_params(&p->tf);
    if (p->tf.tied_head && nv > 1)
      n += (uint64_t)p->tf.vocab * p->tf.hidden;
  }
  return (n + p->T - 1) / p->T;
}

/* ---- Validation ------------------------------------------------------------------------------ */

/* Combinations that would run as something else than asked, refused naming the option. */

/* Sequence parallelism splits the tensor-parallel group's activations: none without one. */
static gboolean check_sequence_parallel(const sim_3d_opts *o, uint32_t T, GError **error)
{
  if (o->seq_parallel && T < 2)
    return bad(error, "--sequence-parallel on: needs --tp 2 or more (--tp %u has no "
               "tensor-parallel group to split the sequence over)", T);
  return TRUE;
}

/* ZeRO shards over the data-parallel group: with one replica there is nothing to shard. */
static gboolean check_zero(const sim_3d_opts *o, uint32_t D, GError **error)
{
  if (o->zero > 0 && D < 2)
    return bad(error, "--zero %u: shards over the data-parallel group, and --dp %u has none "
               "(use --zero 0 or --dp 2 or more)", o->zero, D);
  return TRUE;
}

/* The interleaved schedule splits each device's layers into V chunks of a pipeline of P
 * stages: it needs both, given (without --interleave it would silently be 1F1B). */
static gboolean check_interleaved(const sim_3d_opts *o, uint32_t P, uint32_t V, GError **error)
{
  if (o->schedule != WL_SCHED_INTERLEAVED)
    return TRUE;
  if (P < 2)
    return bad(error, "--schedule interleaved: needs --pp 2 or more (--pp %u is no pipeline)", P);
  if (V < 2)
    return bad(error, "--schedule interleaved: give --interleave V, 2 or more model chunks per "
               "device (with 1 it is 1f1b)");
  return TRUE;
}

/* Tensor parallelism runs within the NVLink domain: one node's devices. */
static gboolean check_tp_domain(uint32_t T, uint32_t per_node, GError **error)
{
  if (T > per_node)
    return bad(error, "--tp %u: a tensor-parallel group stays within the NVLink domain, the %u "
               "devices of one node", T, per_node);
  return TRUE;
}

static gboolean validate(plan3d *p, const sim_3d_opts *o, const comm_topology *topo,
                         const dev_device *dev, GError **error)
{
  if (!wl_tf_parse(o->model, &p->tf, error))
    return FALSE;
  if (o->seq_len)
    wl_tf_set_seq(&p->tf, o->seq_len);
  p->o = *o;
  p->devices = comm_topology_devices(topo);
  p->per_node = comm_topology_devices_per_node(topo);
  p->T = o->tp ? o->tp : 1;
  p->P = o->pp ? o->pp : 1;
  p->V = o->interleave ? o->interleave : 1;
  if (o->dp == 0) {
    if (p->devices % (p->T * p->P))
      return bad(error, "--tp %u x --pp %u does not divide the %u devices of the cluster", p->T,
                 p->P, p->devices);
    p->D = p->devices / (p->T * p->P);
  } else {
    p->D = o->dp;
  }
  if ((uint64_t)p->T * p->P * p->D != p->devices)
    return bad(error, "--tp %u x --pp %u x --dp %u = %" PRIu64 " is not the %u devices of the "
               "cluster (--nodes x --devices-per-node)", p->T, p->P, p->D,
               (uint64_t)p->T * p->P * p->D, p->devices);
  if (p->tf.heads % p->T || p->tf.kv_heads % p->T)
    return bad(error, "--tp %u does not divide the %u attention heads (%u key/value heads) of %s",
               p->T, p->tf.heads, p->tf.kv_heads, o->model);
  if (p->tf.ffn % p->T)
    return bad(error, "--tp %u does not divide the MLP size %u of %s", p->T, p->tf.ffn, o->model);
  if (!check_tp_domain(p->T, p->per_node, error) || !check_sequence_parallel(o, p->T, error) ||
      !check_zero(o, p->D, error) || !check_interleaved(o, p->P, p->V, error))
    return FALSE;
  if (p->V > 1 && o->schedule != WL_SCHED_INTERLEAVED)
    return bad(error, "--interleave %u needs --schedule interleaved", p->V);
  if (p->tf.layers % (p->P * p->V))
    return bad(error, "--pp %u x --interleave %u does not divide the %u layers of %s", p->P, p->V,
               p->tf.layers, o->model);
  p->layers_per_chunk = p->tf.layers / (p->P * p->V);
  if (o->zero > 3)
    return bad(error, "--zero %u: expected 0, 1, 2 or 3", o->zero);
  if (o->global_batch == 0)
    p->o.global_batch = (o->batch ? o->batch : 1) * p->D;
  o = &p->o;
  if (o->micro_batch && o->global_batch % (p->D * o->micro_batch))
    return bad(error, "--global-batch %" PRIu64 " is not divisible by --dp %u x --micro-batch %"
               PRIu64, o->global_batch, p->D, o->micro_batch);
  if (o->global_batch % p->D)
    return bad(error, "--global-batch %" PRIu64 " is not divisible by --dp %u", o->global_batch,
               p->D);
  uint64_t per_replica = o->global_batch / p->D;
  p->mb = o->micro_batch;
  if (p->mb == 0) {
    /* The rule when the micro-batch is not given (docs/workloads.md): 1 with a pipeline, as
     * Megatron-LM's large-model scripts run; without one the largest power of two up to 8
     * that divides the replica's batch (larger micro-batches fill the GEMMs no better at
     * s >= 512 and only take memory). */
    p->mb = 1;
    if (p->P == 1)
      for (uint64_t c = 8; c >= 1; c /= 2)
        if (per_replica % c == 0) {
          p->mb = c;
          break;
        }
  }
  if (per_replica % p->mb)
    return bad(error, "--global-batch %" PRIu64 " is not divisible by --dp %u x --micro-batch %"
               PRIu64, o->global_batch, p->D, p->mb);
  p->m = per_replica / p->mb;
  if (o->schedule == WL_SCHED_INTERLEAVED && p->V > 1 && p->m % p->P)
    return bad(error, "--schedule interleaved: the %" PRIu64 " micro-batches per replica "
               "(--global-batch / (--dp x --micro-batch)) are not a multiple of --pp %u",
               p->m, p->P);
  if (o->schedule == WL_SCHED_GPIPE && p->V > 1)
    return bad(error, "--schedule gpipe runs one model chunk per device (--interleave 1)");
  if (!dev_check_precision(dev, o->precision, "--precision", error))
    return FALSE;
  p->act_elem_bytes = wl_precision_bytes(o->precision);
  return TRUE;
}

/* ---- Memory ---------------------------------------------------------------------------------- */

static void stage_memory(const plan3d *p, uint32_t s, sim_3d_metrics *m)
{
  uint64_t params = 0;
  for (uint32_t c = 0; c < p->V; c++)
    params += chunk_params(p, c * p->P + s);
  wl_tf_state_bytes st;
  wl_tf_state_memory(params, p->D, p->o.zero, p->o.precision, &st);
  /* Flash attention keeps no s x s matrix: without recomputation it stores what selective
   * recomputation stores. */
  wl_recompute rc = p->o.recompute == WL_RECOMPUTE_NONE && p->o.attention == WL_ATTN_FLASH
                        ? WL_RECOMPUTE_SELECTIVE : p->o.recompute;
  uint64_t per_layer = wl_tf_layer_activation_bytes(&p->tf, p->tf.seq, p->mb, p->T,
                                                    p->o.seq_parallel, rc, p->o.precision);
  uint64_t chunks = wl_tf_inflight_chunks(p->o.schedule, p->P, p->V, p->m, s);
  uint64_t act = per_layer * p->layers_per_chunk * chunks;
  /* With full recomputation one block's whole activations exist during its backward. */
  if (p->o.recompute == WL_RECOMPUTE_FULL)
    act += wl_tf_layer_activation_bytes(&p->tf, p->tf.seq, p->mb, p->T, p->o.seq_parallel,
                                        p->o.attention == WL_ATTN_FLASH ? WL_RECOMPUTE_SELECTIVE
                                                                        : WL_RECOMPUTE_NONE,
                                        p->o.precision);
  /* Other: the last stage's fp32 logits of one micro-batch (vocabulary-parallel), and with
   * ZeRO-3 two gathered blocks of parameters (the one in use and the one prefetched, as FSDP
   * wraps each block). */
  uint64_t other = 0;
  if (s == p->P - 1)
    other += p->mb * p->tf.seq * ((p->tf.vocab + p->T - 1) / p->T) * 4;
  if (p->o.zero >= 3)
    other += 2 * ((wl_tf_layer_params(&p->tf) + p->T - 1) / p->T) * p->act_elem_bytes;
  m->weights_bytes = st.weights;
  m->gradients_bytes = st.gradients;
  m->optimizer_bytes = st.optimizer;
  m->activations_bytes = act;
  m->other_bytes = other;
}

static uint64_t mem_total(const sim_3d_metrics *m)
{
  return m->weights_bytes + m->gradients_bytes + m->optimizer_bytes + m->activations_bytes +
         m->other_bytes;
}

/* ---- Schedules ---------------------------------------------------------------------------------- */

typedef struct {
  gboolean fwd;
  uint32_t mb;
  uint32_t chunk;
} unit;

/* The order in which pipeline rank s runs its forward and backward units. */
static GArray *schedule_units(const plan3d *p, uint32_t s)
{
  uint64_t m = p->m, V = p->V, P = p->P;
  uint64_t total = m * V;
  /* A forward and a backward unit per micro-batch and chunk: made at that size and filled in
   * place. */
  GArray *u = g_array_sized_new(FALSE, FALSE, sizeof(unit), (guint)(2 * total));
  g_array_set_size(u, (guint)(2 * total));
  unit *next = (unit *)u->data;
  uint64_t warm;
  switch (p->o.schedule) {
  case WL_SCHED_GPIPE:
    warm = total;
    break;
  case WL_SCHED_INTERLEAVED:
    warm = V > 1 ? (P - s - 1) * 2 + (V - 1) * P : P - s - 1;
    break;
  default:
    warm = P - s - 1;
    break;
  }
  if (warm > total)
    warm = total;
  /* Megatron's interleaved order: groups of P micro-batches through chunk 0, then chunk 1...;
   * backward visits the chunks in reverse. */
  uint64_t kf = 0, kb = 0;
#define NEXT(isf, k)                                                                              \
  do {                                                                                            \
    uint64_t grp = (k) / P, c = V > 1 ? grp % V : 0;                                              \
    uint64_t mbv = V > 1 ? ((k) / (P * V)) * P + (k) % P : (k);                                   \
    *next++ = (unit){isf, (uint32_t)mbv, (uint32_t)((isf) ? c : V - 1 - c)};                      \
  } while (0)
  for (; kf < warm; kf++)
    NEXT(TRUE, kf);
  while (kf < total) {
    NEXT(TRUE, kf);
    kf++;
    NEXT(FALSE, kb);
    kb++;
  }
  if (p->o.schedule == WL_SCHED_GPIPE) {
    /* GPipe: all forwards, then the backwards in reverse order. */
    for (uint64_t k = total; k-- > 0;)
      NEXT(FALSE, k);
  } else {
    for (; kb < total; kb++)
      NEXT(FALSE, kb);
  }
#undef NEXT
  g_assert(next == (unit *)u->data + u->len);
  return u;
}

/* ---- Building the graph ----------------------------------------------------------------------- */

typedef struct {
  sim_unit_id unit;
  sim_stream_id compute, tp, dp, send_f, recv_f, send_b, recv_b, emb;
} stage_streams;

/* Task names by (kind, micro-batch, chunk), formatted once and handed out as the graph's copy
 * (sim_graph_intern): the same names recur on every stage and in every iteration. */
enum { NAME_PASS, NAME_TP, NAME_END, NAME_SEND, NAME_KINDS };

typedef struct {
  sim_graph *g;
  uint32_t m, V;
  size_t per_kind;      /* 2 m V: the names of one kind */
  const char **names;   /* [NAME_KINDS][2 (backward, forward)][m][V], NULL until first asked */
} unit_names;

/* Where a unit's names are in each kind's table: (fwd, mb, chunk) -> (fwd m + mb) V + chunk. */
static inline size_t unit_at(const unit_names *n, const unit *x)
{
  return ((size_t)(x->fwd ? 1 : 0) * n->m + x->mb) * n->V + x->chunk;
}

/* Appends the decimal digits of v at p; returns the end. */
static char *put_uint(char *p, uint32_t v)
{
  char digits[10];
  int n = 0;
  do
    digits[n++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  while (n > 0)
    *p++ = digits[--n];
  return p;
}

static G_GNUC_NO_INLINE const char *unit_name_make(unit_names *n, int kind, size_t at)
{
  uint32_t chunk = (uint32_t)(at % n->V), mb = (uint32_t)(at / n->V % n->m);
  gboolean fwd = at >= (size_t)n->m * n->V;
  /* "F mb3 c1", "B mb3 c1 tp", "F mb3 c1 end", "act mb3 c1", "grad mb3 c1": assembled, not
   * printed (a one-iteration build formats thousands). */
  static const char *const suffix[NAME_KINDS] = {"", " tp", " end", ""};
  char text[64], *p = text;
  p = stpcpy(p, kind == NAME_SEND ? (fwd ? "act" : "grad") : (fwd ? "F" : "B"));
  p = put_uint(stpcpy(p, " mb"), mb);
  p = put_uint(stpcpy(p, " c"), chunk);
  stpcpy(p, suffix[kind]);
  return n->names[kind * n->per_kind + at] = sim_graph_intern(n->g, text);
}

/* The name of kind `kind` of the unit at `at` (unit_at): made once, then looked up. */
static inline const char *unit_name(unit_names *n, int kind, size_t at)
{
  const char *name = n->names[kind * n->per_kind + at];
  return name ? name : unit_name_make(n, kind, at);
}

static sim_task_id add_tp(sim_graph *g, sim_stream_id tp, sim_task_id after, sim_time_ps d,
                          const char *name)
{
  sim_task_id t = sim_graph_add_compute(g, tp, name, "tp", d, 0, 0);
  sim_graph_depend(g, t, after);
  return t;
}

sim_plan *sim_3d_build(const sim_3d_opts *o, const comm_topology *topo,
                       comm_net_model net_model, const char *device, const char *calibration,
                       double *reduce_Bps, sim_3d_metrics *metrics, GError **error)
{
  g_autoptr(dev_device) dev = dev_device_load(device, calibration, error);
  if (!dev)
    return NULL;
  plan3d *p = g_new0(plan3d, 1);
  g_autofree plan3d *p_owner = p;
  if (!validate(p, o, topo, dev, error))
    return NULL;
  o = &p->o;   /* with the defaults filled in */
  *reduce_Bps = dev_stream_Bps(dev) / 3.0;
  g_auto(coll_timer) ct = {
      .topo = topo, .model = net_model, .reduce_Bps = *reduce_Bps,
      .memo = g_array_new(FALSE, FALSE, sizeof(coll_memo)),
      .layouts = g_array_new(FALSE, FALSE, sizeof(coll_layout))};
  ct.algo = comm_coll_algorithm_find(o->allreduce ? o->allreduce : "ring", "--allreduce", error);
  ct.ring = comm_coll_algorithm_find("ring", "--allreduce", NULL);
  if (!ct.algo)
    return NULL;
  if (!chunk_costs(dev, &ct, p, error))
    return NULL;

  /* Memory: the stage with the largest footprint. */
  memset(metrics, 0, sizeof *metrics);
  for (uint32_t s = 0; s < p->P; s++) {
    sim_3d_metrics ms = {0};
    stage_memory(p, s, &ms);
    if (s == 0 || mem_total(&ms) > mem_total(metrics))
      *metrics = ms;
  }
  metrics->micro_batch = p->mb;
  metrics->global_batch = o->global_batch;
  metrics->seq = p->tf.seq;
  metrics->peak_flops = dev_peak_flops(dev, o->precision);
  metrics->capacity_bytes = dev_memory_bytes(dev);
  metrics->model_flops = wl_tf_iteration_flops(&p->tf, o->global_batch, p->tf.seq,
                                               WL_RECOMPUTE_NONE);

  /* Data-parallel collectives of one chunk's gradients (or parameters): the T groups of a
   * stage, ranks s T D + d T + r, run at once. */
  uint64_t grad_elem = o->precision == WL_PREC_FP32 || o->precision == WL_PREC_TF32 ? 4 : 2;
  uint32_t nv = p->P * p->V;
  g_autofree sim_time_ps *dp_reduce = g_new0(sim_time_ps, nv);
  g_autofree sim_time_ps *dp_gather = g_new0(sim_time_ps, nv);
  for (uint32_t vs = 0; vs < nv; vs++) {
    uint64_t bytes = chunk_params(p, vs) * grad_elem;
    if (o->zero == 0) {
      if (!coll_time(&ct, COMM_COLL_ALLREDUCE, 0, p->D, p->T, p->T, 1, bytes, &dp_reduce[vs],
                     error))
        return NULL;
    } else if (!coll_time(&ct, COMM_COLL_REDUCE_SCATTER, 0, p->D, p->T, p->T, 1, bytes,
                          &dp_reduce[vs], error) ||
               !coll_time(&ct, COMM_COLL_ALLGATHER, 0, p->D, p->T, p->T, 1, bytes,
                          &dp_gather[vs], error)) {
      return NULL;
    }
  }

  sim_plan *plan = sim__plan_new();
  sim_graph *g = plan->graph;
  plan->devices = p->devices;
  plan->samples_per_iteration = o->global_batch;
  plan->memory_per_device_bytes = mem_total(metrics);
  g_autofree stage_streams *st = g_new0(stage_streams, p->P);
  /* A tied LM head is a copy of the embedding on the last stage: Megatron allreduces the two
   * copies' gradients between the first and the last stage before the step. */
  gboolean tied = p->tf.tied_head && p->P > 1;
  g_autofree sim_task_id *upd_task = g_new0(sim_task_id, p->P);
  g_autofree sim_task_id *lastb_task = g_new0(sim_task_id, p->P);
  for (uint32_t s = 0; s < p->P; s++) {
    uint32_t rank = s * p->T * p->D;
    g_autofree char *name = g_strdup_printf("gpu%u (stage %u, node %u)", rank, s,
                                            rank / p->per_node);
    st[s].unit = sim__plan_add_unit(plan, SIM_PROC_DEVICE, SIM_UNIT_DEVICE, rank, name);
    st[s].compute = sim_graph_add_stream(g, st[s].unit, "compute");
    st[s].tp = sim_graph_add_stream(g, st[s].unit, "tp");
    st[s].dp = sim_graph_add_stream(g, st[s].unit, "dp");
    if (p->P > 1) {
      st[s].send_f = sim_graph_add_stream(g, st[s].unit, "pp send activations");
      st[s].recv_f = sim_graph_add_stream(g, st[s].unit, "pp receive activations");
      st[s].send_b = sim_graph_add_stream(g, st[s].unit, "pp send gradients");
      st[s].recv_b = sim_graph_add_stream(g, st[s].unit, "pp receive gradients");
      if (tied && (s == 0 || s == p->P - 1))
        st[s].emb = sim_graph_add_stream(g, st[s].unit, "pp embedding gradients");
    }
  }
  plan->probe_unit = st[0].unit;
  plan->probe_compute = st[0].compute;

  uint64_t slots = (uint64_t)p->m * nv;
  /* Per (micro-batch, virtual stage): the unit's last task, and the transfer it sends. */
  g_autofree sim_task_id *f_end = g_new(sim_task_id, slots);
  g_autofree sim_task_id *b_end = g_new(sim_task_id, slots);
  g_autofree sim_task_id *f_send = g_new(sim_task_id, slots);
  g_autofree sim_task_id *b_send = g_new(sim_task_id, slots);
  g_autofree sim_task_id *f_start = g_new(sim_task_id, slots);
  g_autofree sim_task_id *b_start = g_new(sim_task_id, slots);
  g_autofree sim_task_id *last_task = g_new(sim_task_id, p->P);
  g_autofree gboolean *has_last = g_new0(gboolean, p->P);
  uint64_t xfer_bytes = p->mb * p->tf.seq * (uint64_t)p->tf.hidden * p->act_elem_bytes / p->T;
  g_autoptr(GPtrArray) orders = g_ptr_array_new_with_free_func(free_array);
  for (uint32_t s = 0; s < p->P; s++)
    g_ptr_array_add(orders, schedule_units(p, s));
  g_autofree const char **name_table = g_new0(const char *, (size_t)NAME_KINDS * 2 * p->m * p->V);
  unit_names names = {g, p->m, p->V, (size_t)2 * p->m * p->V, name_table};
  /* Room for the whole graph at once. Per unit (a pass of a micro-batch over a chunk): its
   * compute, a parameter gather (ZeRO-3), its tensor-parallel part (two tasks and an end when
   * it overlaps) and its send; the dependencies of these and the unit's two pipeline ones. Per
   * chunk and stage: up to three data-parallel tasks and nine dependencies; per stage the
   * update, and the embedding allreduce. */
  uint64_t units = 2 * (uint64_t)p->m * p->V * p->P;
  uint64_t z3 = o->zero >= 3, ov = o->tp_overlap ? 2 : 0;
  uint64_t chunks = (uint64_t)p->V * p->P;
  sim_graph_reserve(g, o->iterations * (units * (2 + z3 + 1 + ov) + 3 * chunks + p->P + 1),
                    o->iterations * (units * (5 + z3 + ov) + 9 * chunks + 2 * p->P + 4));

  for (uint32_t it = 0; it < o->iterations; it++) {
    for (uint32_t s = 0; s < p->P; s++) {
      GArray *order = g_ptr_array_index(orders, s);
      sim_task_id prev = 0;
      gboolean has_prev = has_last[s];
      if (has_prev)
        prev = last_task[s];
      /* Index of the last backward unit of each chunk (for the data-parallel reduction). */
      g_autofree uint32_t *last_b = g_new0(uint32_t, p->V);
      for (guint i = 0; i < order->len; i++) {
        const unit *x = &g_array_index(order, unit, i);
        if (!x->fwd)
          last_b[x->chunk] = i;
      }
      g_autofree sim_task_id *dp_tasks = g_new(sim_task_id, p->V);
      for (guint i = 0; i < order->len; i++) {
        const unit *x = &g_array_index(order, unit, i);
        uint32_t vs = x->chunk * p->P + s;
        uint64_t slot = (uint64_t)x->mb * nv + vs;
        const chunk_cost *cc = cost_of(p, vs);
        size_t at = unit_at(&names, x);
        char name[64];
        sim_task_id gather = 0;
        gboolean has_gather = FALSE;
        if (o->zero >= 3) {
          /* FSDP: gather the chunk's parameters before each pass, prefetched on the dp
           * stream (it runs as soon as the previous gather is done). */
          g_snprintf(name, sizeof name, "allgather params c%u", x->chunk);
          sim_time_ps d = dp_gather[vs];
          gather = sim_graph_add_compute(g, st[s].dp, name, "dp", d, 0, 0);
          has_gather = TRUE;
        }
        sim_task_id c = sim_graph_add_compute(g, st[s].compute,
                                              unit_name(&names, NAME_PASS, at),
                                              x->fwd ? "forward" : "backward",
                                              x->fwd ? cc->fwd_ps : cc->bwd_ps,
                                              x->fwd ? cc->fwd_flops : cc->bwd_flops, 0);
        if (has_prev)
          sim_graph_depend(g, c, prev);
        if (has_gather)
          sim_graph_depend(g, c, gather);
        (x->fwd ? f_start : b_start)[slot] = c;
        sim_task_id end = c;
        sim_time_ps tpd = x->fwd ? cc->tp_fwd_ps : cc->tp_bwd_ps;
        if (tpd > 0) {
          const char *tp_name = unit_name(&names, NAME_TP, at);
          if (o->tp_overlap) {
            /* Beside the compute: the unit ends when both have. */
            sim_task_id tpt = sim_graph_add_compute(g, st[s].tp, tp_name, "tp", tpd, 0, 0);
            if (has_prev)
              sim_graph_depend(g, tpt, prev);
            end = sim_graph_add_delay(g, unit_name(&names, NAME_END, at), 0);
            sim_graph_depend(g, end, c);
            sim_graph_depend(g, end, tpt);
          } else {
            end = add_tp(g, st[s].tp, c, tpd, tp_name);
          }
        }
        if (x->fwd) {
          f_end[slot] = end;
          if (vs + 1 < nv) {
            uint32_t ns = (vs + 1) % p->P;
            f_send[slot] = sim_graph_add_transfer(g, st[s].send_f, st[ns].recv_f,
                                                  unit_name(&names, NAME_SEND, at),
                                                  xfer_bytes);
            sim_graph_depend(g, f_send[slot], end);
          }
        } else {
          b_end[slot] = end;
          if (vs > 0) {
            uint32_t ps = (vs - 1) % p->P;
            b_send[slot] = sim_graph_add_transfer(g, st[s].send_b, st[ps].recv_b,
                                                  unit_name(&names, NAME_SEND, at),
                                                  xfer_bytes);
            sim_graph_depend(g, b_send[slot], end);
          }
          if (i == last_b[x->chunk] && p->D > 1) {
            /* Gradients are reduced in buckets as the last micro-batch's backward produces
             * them (one bucket per block): the reduction starts with that backward and its
             * last bucket follows its end. Without overlap it all waits for the backward. */
            g_snprintf(name, sizeof name, "%s grads c%u",
                       o->zero ? "reduce-scatter" : "allreduce", x->chunk);
            sim_time_ps whole = dp_reduce[vs];
            sim_time_ps tail = o->overlap ? whole / p->layers_per_chunk : whole;
            sim_task_id last = end;
            if (o->overlap && whole > tail) {
              sim_task_id r = sim_graph_add_compute(g, st[s].dp, name, "dp", whole - tail, 0, 0);
              sim_graph_depend(g, r, c);
              last = r;
            }
            g_snprintf(name, sizeof name, "%s grads c%u (last bucket)",
                       o->zero ? "reduce-scatter" : "allreduce", x->chunk);
            sim_task_id r = sim_graph_add_compute(g, st[s].dp, name, "dp", tail, 0, 0);
            sim_graph_depend(g, r, end);
            sim_graph_depend(g, r, last);
            dp_tasks[x->chunk] = r;
          }
        }
        prev = end;
        has_prev = TRUE;
      }
      /* Without overlap the reductions wait for the whole backward. */
      if (!o->overlap && p->D > 1)
        for (uint32_t c = 0; c < p->V; c++)
          sim_graph_depend(g, dp_tasks[c], prev);
      sim_task_id last_backward = prev;
      /* Optimizer step over the device's (ZeRO-sharded) parameters: Adam reads the gradient,
       * master weights and both moments and writes them back with the 2-byte weights. */
      uint64_t params = 0;
      for (uint32_t c = 0; c < p->V; c++)
        params += chunk_params(p, c * p->P + s);
      uint64_t shard = o->zero >= 1 ? (params + p->D - 1) / p->D : params;
      wl_op_cost upd = {.kind = WL_OP_UPDATE, .pass = WL_PASS_UPDATE, .precision = o->precision,
                        .flops = shard * 10, .bytes_read = shard * (grad_elem + 12),
                        .bytes_written = shard * (12 + grad_elem), .out_elems = shard};
      sim_task_id u = sim_graph_add_compute(g, st[s].compute, "optimizer", "update",
                                            dev_op_time_ps(dev, &upd, 0), upd.flops, 0);
      sim_graph_depend(g, u, prev);
      if (p->D > 1)
        for (uint32_t c = 0; c < p->V; c++)
          sim_graph_depend(g, u, dp_tasks[c]);
      sim_task_id end = u;
      upd_task[s] = u;
      lastb_task[s] = last_backward;
      if (o->zero >= 1 && o->zero < 3 && p->D > 1) {
        /* Distributed optimizer: gather the updated parameters; with overlap the next
         * iteration's forward does not wait for them (Megatron's --overlap-param-gather
         * gathers each bucket just before its first use). */
        for (uint32_t c = 0; c < p->V; c++) {
          uint32_t vs = c * p->P + s;
          sim_task_id a = sim_graph_add_compute(g, st[s].dp, "allgather params", "dp",
                                                dp_gather[vs], 0, 0);
          sim_graph_depend(g, a, u);
          if (!o->overlap)
            end = a;
        }
      }
      last_task[s] = end;
      has_last[s] = TRUE;
      if (s == 0)
        g_array_append_val(plan->iteration_end, end);
    }
    if (tied) {
      sim_stream_id members[2] = {st[0].emb, st[p->P - 1].emb};
      uint64_t bytes = (uint64_t)p->tf.vocab * p->tf.hidden / p->T * grad_elem;
      sim_task_id e = sim_graph_add_collective(g, members, 2, "allreduce embedding grads",
                                               SIM_OP_ALLREDUCE, ct.algo, bytes);
      sim_graph_depend(g, e, lastb_task[0]);
      sim_graph_depend(g, e, lastb_task[p->P - 1]);
      sim_graph_depend(g, upd_task[0], e);
      sim_graph_depend(g, upd_task[p->P - 1], e);
    }
    /* Pipeline dependencies of this iteration. */
    for (uint32_t s = 0; s < p->P; s++) {
      GArray *order = g_ptr_array_index(orders, s);
      for (guint i = 0; i < order->len; i++) {
        const unit *x = &g_array_index(order, unit, i);
        uint32_t vs = x->chunk * p->P + s;
        uint64_t slot = (uint64_t)x->mb * nv + vs;
        if (x->fwd && vs > 0)
          sim_graph_depend(g, f_start[slot], f_send[slot - 1]);
        if (!x->fwd && vs + 1 < nv)
          sim_graph_depend(g, b_start[slot], b_send[slot + 1]);
        if (!x->fwd && vs + 1 == nv)
          sim_graph_depend(g, b_start[slot], f_end[slot]);
      }
    }
  }
  return plan;
}

void sim_3d_report(sim_3d_metrics *m, sim_report *r)
{
  double it = r->iteration_time_s;
  if (it <= 0)
    return;
  m->tokens_per_s = (double)m->global_batch * m->seq / it;
  m->model_tflops_per_device = m->model_flops / it / r->devices / 1e12;
  m->mfu = m->peak_flops > 0 ? m->model_tflops_per_device * 1e12 / m->peak_flops : 0;
  r->transformer = TRUE;
  r->tokens_per_s = m->tokens_per_s;
  r->model_tflops_per_device = m->model_tflops_per_device;
  r->mfu = m->mfu;
  r->memory_weights_bytes = m->weights_bytes;
  r->memory_gradients_bytes = m->gradients_bytes;
  r->memory_optimizer_bytes = m->optimizer_bytes;
  r->memory_activations_bytes = m->activations_bytes;
  r->memory_other_bytes = m->other_bytes;
}

/* ---- describe ---------------------------------------------------------------------------------- */

int sim_3d_describe(FILE *out, const char *model, uint32_t batch, uint32_t seq_len,
                    wl_precision precision, gboolean json, GError **error)
{
  wl_tf tf;
  if (!wl_tf_parse(model, &tf, error))
    return 2;
  if (seq_len)
    wl_tf_set_seq(&tf, seq_len);
  uint64_t b = batch ? batch : 1, s = tf.seq;
  /* The block's FLOPs as its kernels below run them (causal attention skips the masked half),
   * not Megatron's count of the whole score matrix. */
  uint64_t lp = wl_tf_layer_params(&tf), lf, lb;
  wl_tf_layer_run_flops(&tf, b, s, &lf, &lb);
  uint64_t hf = wl_tf_head_forward_flops(&tf, b, s);
  uint64_t la = wl_tf_layer_activation_bytes(&tf, s, b, 1, FALSE, WL_RECOMPUTE_NONE, precision);
  uint64_t ep = wl_tf_embedding_params(&tf), hp = wl_tf_head_params(&tf);
  uint64_t total_fwd = lf * tf.layers + hf, total_bwd = lb * tf.layers + 2 * hf;
  uint64_t total_act = la * tf.layers;
  if (json) {
    g_autoptr(GString) o = g_string_new("{\"model\":");
    dt_json_string(o, tf.name);
    g_string_append_printf(o, ",\"batch\":%" PRIu64 ",\"seq\":%" PRIu64
                           ",\"precision\":\"%s\",\"layers\":[", b, s,
                           wl_precision_name(precision));
    g_string_append_printf(o, "{\"name\":\"embedding\",\"type\":\"embedding\",\"params\":%" PRIu64
                           ",\"forward_flops\":0,\"backward_flops\":0,\"activation_bytes\":0}",
                           ep);
    for (uint32_t i = 0; i < tf.layers; i++)
      g_string_append_printf(o, ",{\"name\":\"block%u\",\"type\":\"transformer\",\"params\":%"
                             PRIu64 ",\"forward_flops\":%" PRIu64 ",\"backward_flops\":%" PRIu64
                             ",\"activation_bytes\":%" PRIu64 "}", i, lp, lf, lb, la);
    g_string_append_printf(o, ",{\"name\":\"lm_head\",\"type\":\"lm_head\",\"params\":%" PRIu64
                           ",\"forward_flops\":%" PRIu64 ",\"backward_flops\":%" PRIu64
                           ",\"activation_bytes\":0}]", hp, hf, 2 * hf);
    g_string_append_printf(o, ",\"total_params\":%" PRIu64 ",\"total_forward_flops\":%" PRIu64
                           ",\"total_backward_flops\":%" PRIu64 ",\"total_activation_bytes\":%"
                           PRIu64 "}\n", wl_tf_params(&tf), total_fwd, total_bwd, total_act);
    fputs(o->str, out);
    return 0;
  }
  fprintf(out, "model %s: %u layers, hidden %u, %u heads (%u key/value), ffn %u (%s), %s, "
          "vocabulary %u, sequence %u, %s; batch %" PRIu64 " sequences, %s\n\n",
          tf.name, tf.layers, tf.hidden, tf.heads, tf.kv_heads, tf.ffn,
          tf.mlp == WL_MLP_SWIGLU ? "swiglu" : "gelu",
          tf.norm == WL_NORM_RMSNORM ? "rmsnorm" : "layernorm", tf.vocab, tf.seq,
          tf.causal ? "causal" : "bidirectional", b, wl_precision_name(precision));
  fprintf(out, "one block, kernel by kernel (no tensor parallelism):\n");
  fprintf(out, "  %-14s %-11s %-24s %16s %16s %16s\n", "kernel", "kind", "GEMM m x n x k",
          "fwd FLOPs", "bwd FLOPs", "fwd bytes");
  wl_tf_shard sh = {.micro_batch = (uint32_t)b, .seq = (uint32_t)s, .tp = 1,
                    .precision = precision};
  wl_tf_kernel k[WL_TF_MAX_KERNELS];
  size_t n = wl_tf_layer_kernels(&tf, &sh, k);
  for (size_t i = 0; i < n; i++) {
    char shape[64] = "-";
    const wl_op_cost *f = &k[i].pass[0];
    if (f->gemm_m)
      g_snprintf(shape, sizeof shape, "%" PRIu64 " x %" PRIu64 " x %" PRIu64, f->gemm_m,
                 f->gemm_n, f->gemm_k);
    fprintf(out, "  %-14s %-11s %-24s %16" PRIu64 " %16" PRIu64 " %16" PRIu64 "\n", k[i].name,
            wl_op_kind_name(f->kind), shape, f->flops, k[i].pass[1].flops + k[i].pass[2].flops,
            f->bytes_read + f->bytes_written);
  }
  fprintf(out, "\n%-16s %8s %16s %20s %20s %18s\n", "layer", "count", "params", "fwd FLOPs",
          "bwd FLOPs", "activation bytes");
  fprintf(out, "%-16s %8u %16" PRIu64 " %20d %20d %18d\n", "embedding", 1, ep, 0, 0, 0);
  fprintf(out, "%-16s %8u %16" PRIu64 " %20" PRIu64 " %20" PRIu64 " %18" PRIu64 "\n", "block",
          tf.layers, lp, lf, lb, la);
  fprintf(out, "%-16s %8u %16" PRIu64 " %20" PRIu64 " %20" PRIu64 " %18d\n", "lm_head", 1, hp, hf,
          2 * hf, 0);
  fprintf(out, "\ntotal: %" PRIu64 " params (%.2f B); forward %.4g TFLOP, backward %.4g TFLOP per "
          "batch; activations %.3f GB without recomputation (Korthikanti et al.)\n",
          wl_tf_params(&tf), wl_tf_params(&tf) / 1e9, total_fwd / 1e12, total_bwd / 1e12,
          total_act / 1e9);
  fprintf(out, "  block: attention %" PRIu64 ", MLP %" PRIu64 ", norms %" PRIu64 " params\n",
          wl_tf_attention_params(&tf), wl_tf_mlp_params(&tf), 2 * wl_tf_norm_params(&tf));
  return 0;
}

/* ---- Keys and the registry entry ------------------------------------------------------------ */

static const sim_key keys_3d[] = {
    {"tp", SIM_KEY_INT, SIM_KEY_OFF(tp), "1", 1, 1 << 20, .commands = SIM_OPTS_RUN, .arg = "T",
     .help = "tensor-parallel degree (within the NVLink domain)"},
    {"pp", SIM_KEY_INT, SIM_KEY_OFF(pp), "1", 1, 1 << 20, .commands = SIM_OPTS_RUN, .arg = "P",
     .help = "pipeline-parallel degree"},
    {"dp", SIM_KEY_INT, SIM_KEY_OFF(dp), NULL, 1, 1 << 24, .commands = SIM_OPTS_RUN, .arg = "D",
     .help = "data-parallel degree (default: devices / (tp x pp))"},
    {"global-batch", SIM_KEY_INT, SIM_KEY_OFF(global_batch), NULL, 1, INT64_C(1) << 40,
     .commands = SIM_OPTS_RUN, .arg = "B",
     .help = "samples per iteration over the whole job (default: --batch x dp)"},
    {"micro-batch", SIM_KEY_INT, SIM_KEY_OFF(micro_batch), NULL, 1, 1 << 24,
     .commands = SIM_OPTS_RUN, .arg = "M",
     .help = "samples per micro-batch (default: 1 with a pipeline, else the largest power of "
             "two up to 8 dividing the replica's batch)"},
    {"interleave", SIM_KEY_INT, SIM_KEY_OFF(interleave), "1", 1, 1 << 10,
     .commands = SIM_OPTS_RUN, .arg = "V",
     .help = "model chunks per device (--schedule interleaved)"},
    {"sequence-parallel", SIM_KEY_ONOFF, SIM_KEY_OFF(sequence_parallel), "off",
     .commands = SIM_OPTS_RUN, .arg = "on|off",
     .help = "all-gather/reduce-scatter in place of the tensor-parallel all-reduce"},
    {"tp-overlap", SIM_KEY_ONOFF, SIM_KEY_OFF(tp_overlap), "off", .commands = SIM_OPTS_RUN,
     .arg = "on|off",
     .help = "tensor-parallel collectives run beside the GEMMs (Megatron's --tp-comm-overlap)"},
    {"attention", SIM_KEY_CHOICE, SIM_KEY_OFF(attention), "flash", .choices = "flash|unfused",
     .commands = SIM_OPTS_RUN,
     .help = "one fused attention kernel, or batched GEMMs around a softmax that writes the "
             "scores (Megatron-LM before FlashAttention)"},
    {"recompute", SIM_KEY_CHOICE, SIM_KEY_OFF(recompute), "none",
     .choices = "none|selective|full", .commands = SIM_OPTS_RUN,
     .help = "activation recomputation"},
    {"zero", SIM_KEY_INT, SIM_KEY_OFF(zero), "0", 0, 3, .commands = SIM_OPTS_RUN, .arg = "0-3",
     .help = "ZeRO stage: optimizer (1), gradient (2), parameter (3) sharding over dp"},
};
const sim_key_group sim_keys_3d = SIM_KEY_GROUP("3d", "3d", keys_3d);

gboolean sim_3d_opts_from_scenario(const sim_scenario *s, sim_3d_opts *o, GError **error)
{
  sim_3d_opts_init(o);
  gboolean dp = strcmp(s->strategy->name, "dp") == 0;
  if (!dp && strcmp(s->strategy->name, "3d") != 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: %s trains transformers with --strategy 3d (or dp, its special case)",
                sim_scenario_where(s, "strategy"), s->strategy->name);
    return FALSE;
  }
  o->model = s->model;
  o->seq_len = (uint32_t)s->seq_len;
  o->precision = s->precision;
  o->tp = dp ? 1 : (uint32_t)s->tp;
  o->pp = dp ? 1 : (uint32_t)s->pp;
  o->dp = dp ? 0 : (uint32_t)s->dp;
  o->batch = (uint64_t)s->batch;
  o->global_batch = (uint64_t)s->global_batch;
  o->micro_batch = (uint64_t)s->micro_batch;
  o->schedule = dp ? WL_SCHED_1F1B : (wl_schedule)s->schedule;
  o->interleave = dp ? 1 : (uint32_t)s->interleave;
  o->seq_parallel = s->sequence_parallel;
  o->tp_overlap = s->tp_overlap;
  o->attention = s->attention;
  o->recompute = (wl_recompute)s->recompute;
  o->zero = (unsigned)s->zero;
  o->overlap = s->overlap;
  /* The collectives of a 3d plan are timed once each, every group of a kind at once on the
   * network. 3d uses the ring unless --allreduce names an algorithm: bench/llm's accuracy
   * figures are the ring's (7.3% over its 27 rows; with nccl, the default elsewhere on GPUs,
   * 9.3%, its tensor-parallel allreduces paying NCCL's protocol latencies). nccl costs about
   * as little to simulate (0.02 s of CPU at 1024 GPUs, 0.34 s at 16384). */
  o->allreduce = sim_scenario_given(s, "allreduce") ? comm_coll_algorithm_name(s->allreduce)
                                                    : "ring";
  o->iterations = (uint32_t)s->iterations;
  return TRUE;
}

/* The registry's form: the plan of the scenario behind `opts` (the cost table is not used). */
static sim_plan *build_3d(const sim_costs *costs, const sim_plan_opts *opts, GError **error)
{
  (void)costs;
  const sim_scenario *s = opts->scenario;
  sim_3d_opts o;
  if (!s || !sim_3d_opts_from_scenario(s, &o, error))
    return NULL;
  g_autoptr(comm_topology) topo = sim_scenario_topology(s, error);
  if (!topo)
    return NULL;
  const char *device = s->device ? s->device : comm_topology_device_kind(topo);
  double reduce;
  sim_3d_metrics m;
  return sim_3d_build(&o, topo, s->net_model, device, s->calibration, &reduce, &m, error);
}

const sim_strategy sim__strategy_3d = {
    "3d", "tensor x pipeline x data parallelism of transformers (Megatron-LM: sequence "
          "parallelism, interleaved schedules, ZeRO, recomputation)", build_3d};
