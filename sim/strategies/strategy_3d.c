/* Strategy `3d` (see strategy_3d.h): validation of the degrees, the time of one block's kernels
 * and collectives, the pipeline schedules (GPipe, 1F1B, interleaved 1F1B as Megatron-LM orders
 * them), data-parallel gradient reduction and ZeRO, and the memory of each stage; and `describe`
 * of a transformer. */
#include "strategy_3d.h"

#include "strategy.h"
#include "colltime.h"
#include "cp.h"
#include "ep_overlap.h"
#include "schedule.h"
#include "framework_keys.h"
#include "fsdp.h"

#include "coll.h"
#include "devices.h"
#include "util.h"
#include "wl_framework.h"

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

static void free_array(gpointer p) { g_array_unref(p); }

/* ---- Per-chunk costs ------------------------------------------------------------------------- */

typedef struct {
  sim_time_ps fwd_ps, bwd_ps;         /* compute of one micro-batch through the chunk */
  sim_time_ps tp_fwd_ps, tp_bwd_ps;   /* tensor-parallel collectives on the critical path */
  uint64_t fwd_flops, bwd_flops;
  /* --ep-overlap: each pass's all-to-alls, forward's [0] and backward's [1], on an idle
   * network, and the other pass's compute (of the paired micro-batch) that covers them, before
   * its slow-down (ep_shown_ps) */
  sim_time_ps ep_a2a_ps[2];
  sim_time_ps ep_cover_ps[2];
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
  uint32_t EP, ETP;                   /* expert-parallel and expert tensor-parallel degrees */
  uint32_t CP;                        /* context-parallel degree (1: none) */
  uint32_t R;                         /* D x CP: the devices that hold the same parameters
                                       * and reduce their gradients (Megatron's data-parallel
                                       * group with context parallelism) */
  double expert_load;                 /* busiest expert's rows over the mean */
  /* Group-limited routing over an all-to-all group of ep_nodes >= 2 whole NVLink domains
   * (expert tensor parallelism 1): a token crosses once to each other domain it is routed to
   * (ep_node_copies domains in expectation, its own among them: wl_tf_routed_nodes) and its
   * topk copies reach their devices over that domain's NVLink (DeepEP's dispatch and
   * combine). 0: every copy crosses the all-to-all on its own. */
  uint32_t ep_nodes;
  double ep_node_copies;
  double dropped;                     /* fraction of routed copies over capacity */
  sim_cp_attention cpa;               /* one block's context-parallel attention (sim/cp.c) */
  wl_tf_shard cp_shard;               /* how its attention runs on a device */
  uint64_t m;                         /* micro-batches per replica and iteration */
  uint64_t mb;                        /* micro-batch, sequences */
  uint32_t *first_block, *n_blocks;   /* per virtual stage (chunk c of rank s is c P + s) */
  uint32_t mtp_vs;                    /* the virtual stage of the multi-token-prediction
                                       * modules (tf.mtp of them) */
  chunk_cost *cost;                   /* per virtual stage: its blocks, and the embedding's and
                                       * LM head's tensor-parallel collectives */
  chunk_cost emb, head;               /* the embedding's and LM head's compute, tasks of their
                                       * own on the first and last virtual stage */
  uint32_t devices, per_node;
  uint64_t act_elem_bytes;
  wl_framework *fw;                   /* the framework (--framework) */
  uint32_t G;                         /* ZeRO/FSDP sharding group (--shard-group; D: all) */
  double pcie_Bps;                    /* a device's host link, bytes/s (offload) */
} plan3d;

static void plan3d_free(plan3d *p)
{
  if (!p)
    return;
  g_free(p->first_block);
  g_free(p->n_blocks);
  g_free(p->cost);
  wl_framework_free(p->fw);
  g_free(p);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(plan3d, plan3d_free)

/* The time of the tensor-parallel collectives of `count` activations of b s h elements (s / cp
 * tokens with context parallelism):
 * allreduces, or with sequence parallelism as many all-gathers and reduce-scatters (half
 * each). */
static gboolean tp_time(sim_coll_timer *ct, const plan3d *p, unsigned count, sim_time_ps *out,
                        GError **error)
{
  *out = 0;
  if (p->T < 2 || count == 0)
    return TRUE;
  uint64_t bytes = p->mb * (p->tf.seq / p->CP) * (uint64_t)p->tf.hidden * p->act_elem_bytes;
  uint32_t groups = p->per_node >= p->T && p->per_node % p->T == 0 ? p->per_node / p->T : 1;
  if (!p->o.seq_parallel) {
    sim_time_ps t;
    if (!sim_coll_timer_time(ct, COMM_COLL_ALLREDUCE, 0, p->T, 1, groups, p->T, bytes, &t, error))
      return FALSE;
    *out = t * count;
    return TRUE;
  }
  sim_time_ps ag, rs;
  if (!sim_coll_timer_time(ct, COMM_COLL_ALLGATHER, 0, p->T, 1, groups, p->T, bytes, &ag, error) ||
      !sim_coll_timer_time(ct, COMM_COLL_REDUCE_SCATTER, 0, p->T, 1, groups, p->T, bytes, &rs, error))
    return FALSE;
  *out = (ag + rs) * count / 2;
  return TRUE;
}

/* The bytes one device sends in an all-to-all of expert parallelism (ep_time): its tokens'
 * topk copies; with group-limited routing over nodes (ep_nodes) those of the NVLink part. */
static uint64_t ep_bytes(const plan3d *p)
{
  uint64_t bytes = p->mb * p->tf.seq / p->CP / p->T * p->tf.topk * p->tf.hidden *
                   p->act_elem_bytes;
  /* The busiest device of the group receives its experts' load. */
  return p->expert_load > 1 ? (uint64_t)((double)bytes * p->expert_load) : bytes;
}

/* With group-limited routing over ep_nodes nodes, the bytes of the cross-node part's
 * all-to-all over the devices of one local index in each node: each token once per node it
 * reaches (ep_node_copies x h elements), the share of its own node staying there, so that
 * (ep_nodes - 1) / ep_nodes of it, a token once per other node reached, crosses. */
static uint64_t ep_node_bytes(const plan3d *p)
{
  uint64_t tokens = p->mb * p->tf.seq / p->CP / p->T * p->tf.hidden * p->act_elem_bytes;
  return (uint64_t)((double)tokens * p->ep_node_copies * MAX(p->expert_load, 1.0) + 0.5);
}

/* The multi-token-prediction modules of virtual stage vs: each runs one block of the model's
 * last kind, which counts as one more block of the chunk for the collectives priced per
 * block. */
static uint32_t chunk_mtp(const plan3d *p, uint32_t vs) { return vs == p->mtp_vs ? p->tf.mtp : 0; }

/* The blocks virtual stage vs runs: its own and its multi-token-prediction modules'. */
static uint32_t chunk_blocks(const plan3d *p, uint32_t vs)
{
  return p->n_blocks[vs] + chunk_mtp(p, vs);
}

/* The mixture-of-experts blocks of virtual stage vs (its modules' among them). */
static uint32_t chunk_moe_blocks(const plan3d *p, uint32_t vs)
{
  uint32_t n = 0;
  for (uint32_t b = p->first_block[vs]; b < p->first_block[vs] + p->n_blocks[vs]; b++)
    n += wl_tf_block_is_moe(&p->tf, b) ? 1 : 0;
  if (p->tf.layers && wl_tf_block_is_moe(&p->tf, p->tf.layers - 1))
    n += chunk_mtp(p, vs);
  return n;
}

/* One all-to-all of expert parallelism: each device sends its tensor rank's tokens' topk copies
 * (b s / t x topk x h elements) over its group of ep consecutive devices (expert tensor
 * parallelism 1), every group of the stage at once. 0 without expert parallelism. */
static gboolean ep_time(sim_coll_timer *ct, const plan3d *p, sim_time_ps *out, GError **error)
{
  *out = 0;
  if (p->EP < 2)
    return TRUE;
  /* Group-limited routing over nodes: the cross-node part (over each local index's devices,
   * one all-to-all group's) and the NVLink part (the node's devices) run at once, pipelined
   * chunk by chunk: the slower of the two. */
  if (p->ep_nodes) {
    uint32_t d = p->EP / p->ep_nodes;
    sim_time_ps inter, intra;
    if (!sim_coll_timer_time(ct, COMM_COLL_ALLTOALL, 0, p->ep_nodes, d, d, 1, ep_node_bytes(p),
                             &inter, error) ||
        !sim_coll_timer_time(ct, COMM_COLL_ALLTOALL, 0, d, 1, p->T * p->R / d, d, ep_bytes(p),
                             &intra, error))
      return FALSE;
    *out = MAX(inter, intra);
    return TRUE;
  }
  /* With expert tensor parallelism the groups are ETP apart (Megatron's expert order: expert
   * tensor rank fastest), the ETP groups of a block of EP x ETP devices at once. */
  if (p->ETP > 1)
    return sim_coll_timer_time(ct, COMM_COLL_ALLTOALL, 0, p->EP, p->ETP, p->ETP, 1, ep_bytes(p),
                               out, error);
  return sim_coll_timer_time(ct, COMM_COLL_ALLTOALL, 0, p->EP, 1, p->T * p->R / p->EP, p->EP,
                             ep_bytes(p), out, error);
}

/* Expert tensor parallelism: the etp devices of an expert gather the tokens routed to them
 * before its GEMMs and reduce-scatter the outputs after (Megatron-Core's dispatcher with expert
 * tensor parallelism): an all-gather and a reduce-scatter of etp x ep_bytes (the group's
 * tokens, h each) over each group of etp consecutive devices, every group of the stage at once.
 * 0 without. */
static gboolean etp_time(sim_coll_timer *ct, const plan3d *p, sim_time_ps *out, GError **error)
{
  *out = 0;
  if (p->EP < 2 || p->ETP < 2)
    return TRUE;
  sim_time_ps ag, rs;
  uint64_t bytes = ep_bytes(p) * p->ETP;
  uint32_t groups = p->T * p->R / p->ETP;
  if (!sim_coll_timer_time(ct, COMM_COLL_ALLGATHER, 0, p->ETP, 1, groups, p->ETP, bytes, &ag,
                           error) ||
      !sim_coll_timer_time(ct, COMM_COLL_REDUCE_SCATTER, 0, p->ETP, 1, groups, p->ETP, bytes, &rs,
                           error))
    return FALSE;
  *out = ag + rs;
  return TRUE;
}

/* The compute and tensor-parallel time of one block on one device, for one micro-batch. */
static gboolean block_cost(const dev_device *dev, sim_coll_timer *ct, const plan3d *p, uint32_t block,
                           chunk_cost *out, GError **error)
{
  wl_tf_shard sh = {.micro_batch = (uint32_t)p->mb, .seq = p->tf.seq, .tp = p->T,
                    .seq_parallel = p->o.seq_parallel, .precision = p->o.precision,
                    .attention = p->o.attention};
  sh.ep = p->EP;
  sh.etp = p->ETP;
  sh.expert_load = p->expert_load;
  sh.cp = p->CP;
  wl_tf_kernel k[WL_TF_MAX_KERNELS];
  size_t n = wl_tf_block_kernels(&p->tf, &sh, block, k);
  /* Hopper and later (fp8 tensor cores): FlashAttention-2 leaves their new instructions unused. */
  gboolean hopper = dev_peak_flops(dev, WL_PREC_FP8) > dev_peak_flops(dev, WL_PREC_BF16);
  n = wl_framework_kernels(p->fw, &p->tf, &sh, hopper, k, n);
  uint64_t lf = 0, lb = 0, rf = 0;
  sim_time_ps layer_f = kernels_time(dev, k, n, 0, FALSE, &lf);
  sim_time_ps layer_b = kernels_time(dev, k, n, 1, FALSE, &lb);
  /* Context parallelism: the attention runs step by step with the exchange of keys and values
   * (sim/cp.c) in place of the kernel's one timing; the exchange that shows goes with the
   * tensor-parallel collectives (after the compute), or into the pass when those overlap. */
  sim_cp_attention cpa = {{0, 0}, {0, 0}, {0, 0}};
  if (p->CP > 1) {
    if (!sim_cp_attention_time(dev, ct, &p->tf, &sh, p->o.cp_comm, &cpa, error))
      return FALSE;
    /* The framework's attention kernel (wl_framework_kernels) runs the steps too. */
    for (int pass = 0; pass < 2 && hopper; pass++)
      cpa.compute_ps[pass] = (sim_time_ps)((double)cpa.compute_ps[pass] *
                                           p->fw->attention_time_factor);
    layer_f += cpa.compute_ps[0] - kernels_time(dev, k, n, 0, TRUE, NULL);
    layer_b += cpa.compute_ps[1] - kernels_time(dev, k, n, 1, TRUE, NULL);
  }
  /* Recomputation before the backward pass: the whole block's forward (full) or its attention
   * core (selective). */
  sim_time_ps layer_r = p->o.recompute == WL_RECOMPUTE_FULL ? kernels_time(dev, k, n, 0, FALSE, &rf)
                        : p->o.recompute == WL_RECOMPUTE_SELECTIVE && p->fw->selective_attention
                            ? kernels_time(dev, k, n, 0, TRUE, &rf) : 0;
  if (p->CP > 1 && p->o.recompute != WL_RECOMPUTE_NONE)
    layer_r += cpa.compute_ps[0] + cpa.exposed_ps[0] - kernels_time(dev, k, n, 0, TRUE, NULL);
  /* The framework's selective recomputation may also redo a share of the forward GEMMs. */
  if (p->o.recompute == WL_RECOMPUTE_SELECTIVE && p->fw->selective_gemm_fraction > 0)
    for (size_t i = 0; i < n; i++)
      if (k[i].has[0] && k[i].pass[0].kind == WL_OP_GEMM) {
        layer_r += (sim_time_ps)((double)dev_op_time_ps(dev, &k[i].pass[0], 0) *
                                 p->fw->selective_gemm_fraction);
        rf += (uint64_t)((double)k[i].pass[0].flops * p->fw->selective_gemm_fraction);
      }
  /* Megatron's block: one allreduce after attention and one after the MLP in forward, their
   * conjugates in backward (f and g of Shoeybi et al.); the recomputed forward repeats them. */
  sim_time_ps tp_f, tp_b;
  if (!tp_time(ct, p, 2, &tp_f, error) ||
      !tp_time(ct, p, p->o.recompute == WL_RECOMPUTE_FULL ? 4 : 2, &tp_b, error))
    return FALSE;
  /* Expert parallelism: the tokens' dispatch and combine all-to-alls in forward, their
   * conjugates in backward (and again in a fully recomputed forward). */
  sim_time_ps a2a = 0, etp = 0;
  if (wl_tf_block_is_moe(&p->tf, block) &&
      (!ep_time(ct, p, &a2a, error) || !etp_time(ct, p, &etp, error)))
    return FALSE;
  sim_time_ps a2a_pass[2] = {2 * a2a, (p->o.recompute == WL_RECOMPUTE_FULL ? 4 : 2) * a2a};
  sim_time_ps ep_cover[2] = {0, 0}, ep_a2a[2] = {0, 0};
  if (p->o.ep_overlap && a2a > 0) {
    /* Each pass's all-to-alls under the other pass's compute (of another micro-batch), on the
     * SMs the framework's communication kernels leave. */
    sim_ep_overlap ov;
    sim_time_ps compute[2] = {layer_f, layer_b + layer_r};
    sim_ep_overlap_time(a2a_pass, compute, dev_compute_units(dev), p->fw->ep_comm_sms, &ov);
    layer_f += ov.slower_ps[0], layer_b += ov.slower_ps[1];
    ep_cover[0] = compute[1], ep_cover[1] = compute[0];
    ep_a2a[0] = a2a_pass[0], ep_a2a[1] = a2a_pass[1];
    a2a_pass[0] = ov.exposed_ps[0], a2a_pass[1] = ov.exposed_ps[1];
  }
  tp_f += a2a_pass[0] + etp;
  tp_b += a2a_pass[1] + (p->o.recompute == WL_RECOMPUTE_FULL ? 2 : 1) * etp;
  if (p->o.tp_overlap)
    layer_f += cpa.exposed_ps[0], layer_b += cpa.exposed_ps[1];
  else
    tp_f += cpa.exposed_ps[0], tp_b += cpa.exposed_ps[1];
  *out = (chunk_cost){.fwd_ps = layer_f, .bwd_ps = layer_b + layer_r, .tp_fwd_ps = tp_f,
                      .tp_bwd_ps = tp_b, .fwd_flops = lf, .bwd_flops = lb + rf,
                      .ep_a2a_ps = {ep_a2a[0], ep_a2a[1]},
                      .ep_cover_ps = {ep_cover[0], ep_cover[1]}};
  return TRUE;
}

/* Adds n times `b` to `c`. */
static void cost_add(chunk_cost *c, const chunk_cost *b, uint64_t n)
{
  c->fwd_ps += b->fwd_ps * (sim_time_ps)n, c->bwd_ps += b->bwd_ps * (sim_time_ps)n;
  c->tp_fwd_ps += b->tp_fwd_ps * (sim_time_ps)n, c->tp_bwd_ps += b->tp_bwd_ps * (sim_time_ps)n;
  c->fwd_flops += b->fwd_flops * n, c->bwd_flops += b->bwd_flops * n;
  for (int pass = 0; pass < 2; pass++) {
    c->ep_a2a_ps[pass] += b->ep_a2a_ps[pass] * (sim_time_ps)n;
    c->ep_cover_ps[pass] += b->ep_cover_ps[pass] * (sim_time_ps)n;
  }
}

/* The cost of every virtual stage: its blocks of each kind (dense, mixture of experts), the
 * embedding (vocabulary-parallel: an allreduce of its output) on the first, and the final
 * norm, LM head and cross-entropy (an allreduce of the input gradient) on the last; the
 * embedding's and the head's compute are kept apart (p->emb, p->head). */
static gboolean chunk_costs(const dev_device *dev, sim_coll_timer *ct, plan3d *p, GError **error)
{
  uint32_t L = p->tf.layers, split = wl_tf_dense_blocks(&p->tf);
  chunk_cost kind[2] = {{0}, {0}}, mtp = {0};
  if (split > 0 && !block_cost(dev, ct, p, 0, &kind[0], error))
    return FALSE;
  if (split < L && !block_cost(dev, ct, p, split, &kind[1], error))
    return FALSE;
  wl_tf_shard sh = {.micro_batch = (uint32_t)p->mb, .seq = p->tf.seq, .tp = p->T,
                    .seq_parallel = p->o.seq_parallel, .precision = p->o.precision,
                    .attention = p->o.attention, .cp = p->CP};
  wl_tf_kernel e[4], h[4];
  size_t ne = wl_tf_embedding_kernels(&p->tf, &sh, e);
  size_t nh = wl_tf_head_kernels(&p->tf, &sh, h);
  sim_time_ps tp1;
  if (!tp_time(ct, p, 1, &tp1, error))
    return FALSE;
  chunk_cost *emb = &p->emb, *head = &p->head;
  memset(emb, 0, sizeof *emb);
  memset(head, 0, sizeof *head);
  emb->fwd_ps = kernels_time(dev, e, ne, 0, FALSE, &emb->fwd_flops);
  emb->bwd_ps = kernels_time(dev, e, ne, 1, FALSE, &emb->bwd_flops);
  head->fwd_ps = kernels_time(dev, h, nh, 0, FALSE, &head->fwd_flops);
  head->bwd_ps = kernels_time(dev, h, nh, 1, FALSE, &head->bwd_flops);
  /* One multi-token-prediction module: its block (the last block's kind, recomputed as that
   * is), the embedding gather, norms, projection and head (not recomputed, as the head is
   * not), and the embedding's and head's collectives. */
  if (p->tf.mtp) {
    wl_tf_kernel mk[WL_TF_MTP_KERNELS];
    size_t nm = wl_tf_mtp_kernels(&p->tf, &sh, mk);
    mtp = kind[L - 1 < split ? 0 : 1];
    mtp.fwd_ps += kernels_time(dev, mk, nm, 0, FALSE, &mtp.fwd_flops);
    mtp.bwd_ps += kernels_time(dev, mk, nm, 1, FALSE, &mtp.bwd_flops);
  }
  p->cp_shard = sh;
  if (p->CP > 1 && !sim_cp_attention_time(dev, ct, &p->tf, &sh, p->o.cp_comm, &p->cpa, error))
    return FALSE;
  uint32_t nv = p->P * p->V;
  for (uint32_t vs = 0; vs < nv; vs++) {
    chunk_cost *c = &p->cost[vs];
    uint32_t first = p->first_block[vs], end = first + p->n_blocks[vs];
    uint32_t dense = first < split ? MIN(end, split) - first : 0;
    memset(c, 0, sizeof *c);
    cost_add(c, &kind[0], dense);
    cost_add(c, &kind[1], p->n_blocks[vs] - dense);
    if (vs == 0)
      c->tp_fwd_ps += tp1;
    if (vs == nv - 1)
      c->tp_bwd_ps += tp1;
    cost_add(c, &mtp, chunk_mtp(p, vs));
    c->tp_fwd_ps += tp1 * (sim_time_ps)chunk_mtp(p, vs);
    c->tp_bwd_ps += tp1 * (sim_time_ps)chunk_mtp(p, vs);
  }
  return TRUE;
}

static const chunk_cost *cost_of(const plan3d *p, uint32_t vs) { return &p->cost[vs]; }

/* The routed experts' parameters of virtual stage vs's blocks, its multi-token-prediction
 * modules' among them. */
static uint64_t chunk_all_expert_params(const plan3d *p, uint32_t vs)
{
  return wl_tf_blocks_expert_params(&p->tf, p->first_block[vs], p->n_blocks[vs]) +
         (uint64_t)chunk_mtp(p, vs) * wl_tf_blocks_expert_params(&p->tf, p->tf.layers - 1, 1);
}

/* The routed experts' parameters one device of virtual stage vs holds: with expert parallelism
 * 1 / ep of them, whole; else in the tensor-parallel share chunk_params counts. */
static uint64_t chunk_expert_params(const plan3d *p, uint32_t vs)
{
  if (p->EP < 2)
    return 0;
  return chunk_all_expert_params(p, vs) / ((uint64_t)p->EP * p->ETP);
}

/* Parameters one device of virtual stage vs holds (its tensor-parallel share, and its experts). */
static uint64_t chunk_params(const plan3d *p, uint32_t vs)
{
  uint32_t nv = p->P * p->V;
  /* The multi-token-prediction modules, and on a stage other than the first a copy of the
   * embedding they share (Megatron-Core keeps one there, as for a tied head; the last stage
   * of a tied model has one already), on a stage other than the last a copy of the untied
   * head. */
  uint64_t n = wl_tf_blocks_params(&p->tf, p->first_block[vs], p->n_blocks[vs]);
  if (chunk_mtp(p, vs)) {
    uint64_t vh = (uint64_t)p->tf.vocab * p->tf.hidden;
    gboolean tied_copy = vs == nv - 1 && p->tf.tied_head && nv > 1;
    n += wl_tf_mtp_params(&p->tf) + (vs != 0 && !tied_copy ? vh : 0) +
         (vs != nv - 1 && !p->tf.tied_head ? vh : 0);
  }
  if (p->EP > 1)
    n -= chunk_all_expert_params(p, vs);
  if (vs == 0)
    n += wl_tf_embedding_params(&p->tf);
  /* The last stage holds the LM head: its own matrix, or a copy of the tied embedding
   * (Megatron keeps one on each end of the pipeline). */
  if (vs == nv - 1) {
    n += wl_tf_head_params(&p->tf);
    if (p->tf.tied_head && nv > 1)
      n += (uint64_t)p->tf.vocab * p->tf.hidden;
  }
  return (n + p->T - 1) / p->T + chunk_expert_params(p, vs);
}

/* FSDP's unit, one block of virtual stage vs: the dense parameters a device holds of it (the
 * chunk's, embedding and head included, spread evenly over its blocks) and its experts'
 * (expert parallelism; 0 without). */
static void block_params(const plan3d *p, uint32_t vs, uint64_t *dense, uint64_t *experts)
{
  uint64_t nb = MAX(p->n_blocks[vs], 1u), e = chunk_expert_params(p, vs);
  *dense = (chunk_params(p, vs) - e + nb - 1) / nb;
  *experts = (e + nb - 1) / nb;
}

/* Micro-batch sizes tried for transformers: powers of two up to 8 samples, a bound that keeps
 * the space small (a larger micro-batch raises activation memory in proportion and only
 * shortens the pipeline bubble, which more micro-batches already do). */
#define SEARCH_MAX_MICRO_BATCH 8

/* 3d: tensor-parallel degrees are the divisors of the devices of a node (one NVLink domain). */
static void tp_values(const sim_search_ctx *c, GPtrArray *out)
{
  for (uint64_t t = 1; t <= c->devices_per_node; t++)
    if (c->devices_per_node % t == 0)
      sim_search_add_value(out, "tp=%" G_GUINT64_FORMAT, t);
}

/* Pipeline degrees: the divisors of the layers, up to the devices. */
static void pp_values(const sim_search_ctx *c, GPtrArray *out)
{
  for (uint64_t p = 1; p <= c->layers && p <= c->devices; p++)
    if (c->layers % p == 0)
      sim_search_add_value(out, "pp=%" G_GUINT64_FORMAT, p);
}

/* Micro-batch sizes: the divisors of the global batch up to the bound (those that do not
 * divide a replica's share are dropped by the check). */
static void micro_batch_values(const sim_search_ctx *c, GPtrArray *out)
{
  for (uint64_t m = 1; m <= SEARCH_MAX_MICRO_BATCH && m <= c->global_batch; m++)
    if (c->global_batch % m == 0)
      sim_search_add_value(out, "micro-batch=%" G_GUINT64_FORMAT, m);
}

/* Model chunks per device with the interleaved schedule: every divisor of the blocks from 2 up
 * (GPT-3 175B's 96 blocks on 8 stages run best at 12 chunks of one block); the check keeps those
 * with a block per chunk on each stage. */
static void schedule_3d_values(const sim_search_ctx *c, GPtrArray *out)
{
  sim_search_add_value(out, "schedule=1f1b interleave=1");
  for (uint64_t v = 2; v <= c->layers; v++)
    if (c->layers % v == 0)
      sim_search_add_value(out, "schedule=interleaved interleave=%" G_GUINT64_FORMAT, v);
}

/* Sequence parallelism: off, and on where there is a tensor-parallel group to split the
 * sequence over (the check drops it with tp 1). */
static void sequence_parallel_values(const sim_search_ctx *c, GPtrArray *out)
{
  (void)c;
  sim_search_add_value(out, "sequence-parallel=off");
  sim_search_add_value(out, "sequence-parallel=on");
}

static void recompute_values(const sim_search_ctx *c, GPtrArray *out)
{
  (void)c;
  sim_search_add_value(out, "recompute=none");
  sim_search_add_value(out, "recompute=selective");
  sim_search_add_value(out, "recompute=full");
}

static void zero_values(const sim_search_ctx *c, GPtrArray *out)
{
  (void)c;
  for (int z = 0; z <= 3; z++)
    sim_search_add_value(out, "zero=%d", z);
}

#define SIM_DROP_TP_HEADS "tensor-parallel degree does not divide the attention heads"
#define SIM_DROP_TP_PP "tp x pp does not divide the devices"
#define SIM_DROP_INTERLEAVE_PP "interleaved schedule needs pp > 1 and a block per model chunk"
#define SIM_DROP_INTERLEAVE_M "interleaved schedule needs micro-batches a multiple of pp"
#define SIM_DROP_DP_GIVEN "tp x pp x the --dp given is not the devices"
#define SIM_DROP_ZERO_DP "ZeRO needs a data-parallel group (dp > 1)"
#define SIM_DROP_SP_TP "sequence parallelism needs tp > 1"
#define SIM_DROP_MEMORY_BOUND "does not fit in device memory (bound before simulating)"
#define SIM_DROP_UNEVEN_CHUNKS "model chunks of unequal blocks (searched only where they divide)"
#define SIM_DROP_OFFLOAD_FITS "offload not needed: fits in device memory without it"

/* A lower bound of the memory of the first pipeline stage, which the simulation's memory per
 * device (the largest stage's) cannot be below, from the workloads' closed forms: the model
 * state of its blocks (at least layers / pp of them, without the embedding) sharded by ZeRO,
 * and the activations of the micro-batches it holds at its peak, counted as selective
 * recomputation counts them when there is none (what flash attention keeps; never more than
 * without it) and without the extra block of full recomputation. Bytes. */
static uint64_t first_stage_bytes(const sim_scenario *s, const sim_search_ctx *c, uint64_t dp,
                                  uint64_t per_replica)
{
  uint64_t tp = (uint64_t)s->tp, pp = (uint64_t)s->pp, V = (uint64_t)s->interleave;
  uint64_t cp = (uint64_t)s->cp;
  uint64_t blocks = c->layers / pp;
  /* The experts' state is left out (expert parallelism spreads it). */
  uint64_t params = c->tf.experts ? wl_tf_layer_params(&c->tf) -
                                        wl_tf_blocks_expert_params(&c->tf, c->tf.layers - 1, 1)
                                  : wl_tf_layer_params(&c->tf);
  wl_tf_state_bytes st;
  wl_tf_state_memory(params * blocks / tp, (uint32_t)(dp * cp), (unsigned)s->zero, s->precision,
                     &st);
  wl_recompute rc = s->recompute == WL_RECOMPUTE_FULL ? WL_RECOMPUTE_FULL : WL_RECOMPUTE_SELECTIVE;
  wl_schedule sched = s->schedule;
  uint64_t seq = s->seq_len ? (uint64_t)s->seq_len : c->tf.seq;
  uint64_t per_layer = wl_tf_layer_activation_bytes(&c->tf, seq / cp, (uint64_t)s->micro_batch,
                                                    (uint32_t)tp, s->sequence_parallel, rc,
                                                    s->precision);
  uint64_t chunks = wl_tf_inflight_chunks(sched, (uint32_t)pp, (uint32_t)V,
                                          per_replica / (uint64_t)s->micro_batch, 0);
  return st.weights + st.gradients + st.optimizer + per_layer * (blocks / V) * chunks;
}

/* 3d: dp = devices / (tp pp) and the job's global batch (the rules are check_3d's). */
static const char *derive_3d(sim_scenario *s, const sim_search_ctx *c, GString *derived,
                             GError **error)
{
  uint64_t tp = (uint64_t)s->tp, pp = (uint64_t)s->pp, cp = (uint64_t)s->cp;
  gboolean divides = c->devices % (tp * pp * cp) == 0;
  uint64_t dp = divides ? c->devices / (tp * pp * cp) : 0;
  /* A --dp the user gave that is not the quotient is left for the check to refuse. */
  if (divides && (!sim_scenario_given(s, "dp") || (uint64_t)s->dp == dp) &&
      !sim_search_derive(s, derived, "dp", dp, error))
    return "";
  return sim_search_derive(s, derived, "global-batch", c->global_batch, error) ? NULL : "";
}

/* The memory bound of a candidate that passed the checks. */
static const char *bound_3d(const sim_scenario *s, const sim_search_ctx *c)
{
  uint64_t dp = (uint64_t)s->dp, per_replica = c->global_batch / dp;
  /* `run` spreads blocks that do not divide; the search keeps to even model chunks, which is
   * where the interleaved schedule's bubble is smallest for a given count. */
  if (s->interleave > 1 && c->layers % ((uint64_t)s->pp * (uint64_t)s->interleave))
    return SIM_DROP_UNEVEN_CHUNKS;
  if (!c->capacity_bytes)
    return NULL;
  sim_framework_opts fo = sim_framework_opts_of(s);
  const char *why = sim__3d_framework_bound(&fo, (unsigned)s->zero);
  if (why)
    return why;
  uint64_t G = fo.shard_group ? (uint64_t)fo.shard_group : dp;
  uint64_t need = first_stage_bytes(s, c, G, per_replica);
  /* Offload only adds work: a plan that fits without it is faster so; and it frees at most the
   * optimizer state (12 bytes of a parameter's 16). */
  if (fo.offload != SIM_OFFLOAD_NONE) {
    if (need <= c->capacity_bytes)
      return SIM_DROP_OFFLOAD_FITS;
    uint64_t tp = (uint64_t)s->tp, state = wl_tf_layer_params(&c->tf) * (c->layers / (uint64_t)s->pp) / tp;
    uint64_t optimizer = (s->zero >= 1 ? state / G : state) * 12;
    return need - MIN(need, optimizer) > c->capacity_bytes ? SIM_DROP_MEMORY_BOUND : NULL;
  }
  return need > c->capacity_bytes ? SIM_DROP_MEMORY_BOUND : NULL;
}

/* Most context-parallel and expert-parallel degrees tried, and the fewest tokens of a sequence
 * a context-parallel rank is given (below them a ring step's attention block is too short to
 * hide its keys and values: docs/search.md). */
#define SEARCH_MAX_CP 32
#define SEARCH_MIN_CP_TOKENS 2048
#define SEARCH_MAX_ETP 8

/* Context-parallel degrees: 1, and the powers of two that split the sequence into 2 cp chunks
 * of at least SEARCH_MIN_CP_TOKENS / 2 tokens (the strategy's check refuses the rest). An axis
 * with nothing to vary (a short sequence; a dense model for ep and etp) gives the empty setting,
 * so the candidates' labels stay as they were. */
static void cp_values(const sim_search_ctx *c, GPtrArray *out)
{
  sim_search_add_value(out, "cp=1");
  for (uint64_t cp = 2; cp <= SEARCH_MAX_CP && cp <= c->devices; cp *= 2)
    if (c->tf.seq % (2 * cp) == 0 && c->tf.seq / cp >= SEARCH_MIN_CP_TOKENS)
      sim_search_add_value(out, "cp=%" G_GUINT64_FORMAT, cp);
  if (out->len == 1)
    g_ptr_array_set_size(out, 0), sim_search_add_value(out, "%s", "");
}

/* Expert-parallel degrees: 1, and for a mixture of experts the divisors of the experts up to
 * the devices. */
static void ep_values(const sim_search_ctx *c, GPtrArray *out)
{
  if (!c->tf.experts) {
    sim_search_add_value(out, "%s", "");
    return;
  }
  sim_search_add_value(out, "ep=1");
  for (uint64_t e = 2; e <= c->tf.experts && e <= c->devices; e++)
    if (c->tf.experts % e == 0)
      sim_search_add_value(out, "ep=%" G_GUINT64_FORMAT, e);
}

/* Expert tensor-parallel degrees: 1, and for a mixture of experts the divisors of a node's
 * devices up to SEARCH_MAX_ETP (inside the NVLink domain, as tensor parallelism). */
static void etp_values(const sim_search_ctx *c, GPtrArray *out)
{
  if (!c->tf.experts) {
    sim_search_add_value(out, "%s", "");
    return;
  }
  sim_search_add_value(out, "etp=1");
  for (uint64_t x = 2; x <= SEARCH_MAX_ETP && x <= c->devices_per_node; x++)
    if (c->devices_per_node % x == 0)
      sim_search_add_value(out, "etp=%" G_GUINT64_FORMAT, x);
}

static const sim_search_axis axes_3d[] = {{"tp", tp_values},
                                      {"cp", cp_values},
                                      {"ep", ep_values},
                                      {"etp", etp_values},
                                      {"pp", pp_values},
                                      {"micro-batch", micro_batch_values},
                                      {"schedule|interleave", schedule_3d_values},
                                      {"sequence-parallel", sequence_parallel_values},
                                      {"recompute", recompute_values},
                                      {"zero", zero_values},
                                      {"framework", sim__3d_framework_values},
                                      {"shard-group", sim__3d_shard_group_values},
                                      {"offload", sim__3d_offload_values}};

static sim_time_ps time_bound_3d(const sim_scenario *s, const sim_search_ctx *c,
                                 uint64_t *memory_bytes);
static const sim_search_family search_3d[] = {
    {NULL, axes_3d, G_N_ELEMENTS(axes_3d), derive_3d, bound_3d, time_bound_3d}};

/* Expert parallelism (Megatron-Core's parallel folding): the tp x cp x dp devices of a stage
 * regroup into etp x ep x expert-dp, so ep x etp divides them; each group of etp devices holds
 * experts / ep whole experts split over it, so ep divides the experts and etp their width;
 * with tensor parallelism the tokens are split over the tensor ranks (sequence parallelism),
 * as Megatron-Core requires for experts. NULL when the rules hold, else a short reason with
 * *error set (the strategy's check and the build share them). */
#define SIM_DROP_EP "expert parallelism does not fold onto the devices of a stage"
static const char *ep_rules(const sim_3d_opts *o, const wl_tf *tf, uint64_t T, uint64_t CP,
                            uint64_t D, GError **error)
{
  uint64_t EP = o->ep ? o->ep : 1, ETP = o->etp ? o->etp : 1;
  gboolean ok = FALSE;
  if ((o->moe_capacity > 0 || o->moe_imbalance > 1) && !tf->experts)
    bad(error, "--%s: %s has no experts", o->moe_capacity > 0 ? "moe-capacity"
        : "moe-imbalance", o->model);
  else if (ETP > 1 && EP < 2)
    bad(error, "--etp %" PRIu64 " needs --ep 2 or more (without expert parallelism the experts "
        "split over --tp)", ETP);
  else if (EP > 1 && !tf->experts)
    bad(error, "--ep %" PRIu64 ": %s has no experts", EP, o->model);
  else if (EP > 1 && tf->experts % EP)
    bad(error, "--ep %" PRIu64 " does not divide the %u experts of %s", EP, tf->experts,
        o->model);
  else if (EP > 1 && tf->moe_ffn % ETP)
    bad(error, "--etp %" PRIu64 " does not divide the expert width %u of %s", ETP, tf->moe_ffn,
        o->model);
  else if ((T * CP * D) % (EP * ETP) && ETP == 1 && CP == 1)
    bad(error, "--ep %" PRIu64 " does not divide --tp %" PRIu64 " x --dp %" PRIu64 ", the "
        "devices of a stage", EP, T, D);
  else if ((T * CP * D) % (EP * ETP))
    bad(error, "--ep %" PRIu64 " x --etp %" PRIu64 " does not divide --tp %" PRIu64 " x --cp %"
        PRIu64 " x --dp %" PRIu64 ", the devices of a stage", EP, ETP, T, CP, D);
  else if (EP > 1 && T > 1 && !o->seq_parallel)
    bad(error, "--ep %" PRIu64 " with --tp %" PRIu64 " needs --sequence-parallel on", EP, T);
  else
    ok = TRUE;
  return ok ? NULL : SIM_DROP_EP;
}

/* ---- The strategy's check -------------------------------------------------------------------- */

/* The rules of a 3-D plan on a cluster shape, in the order the search counts them: the tensor
 * degree divides the heads, tp x pp the devices, the data-parallel replicas the global batch,
 * the micro-batch a replica's batch; the interleaved schedule needs a pipeline with a block for
 * each model chunk (blocks that do not divide are spread) and micro-batches in multiples of
 * pp. */
static const char *check_opts(const sim_3d_opts *op, const wl_tf *tfp, const sim_shape *shape,
                              GError **error)
{
  const sim_3d_opts o = *op;
  const wl_tf tf = *tfp;
  uint64_t tp = o.tp ? o.tp : 1, pp = o.pp ? o.pp : 1, V = o.interleave ? o.interleave : 1;
  uint64_t cp = o.cp ? o.cp : 1;
  const char *why = sim__3d_check_cp(&o, &tf, shape, error);
  if (why)
    return why;
  /* Past the context-parallel rules the rest holds with tp x cp in place of tp. */
  if (tf.heads % tp || tf.kv_heads % tp) {
    bad(error, "--tp %" PRIu64 " does not divide the %u attention heads (%u key/value heads) "
        "of %s", tp, tf.heads, tf.kv_heads, o.model);
    return SIM_DROP_TP_HEADS;
  }
  if (o.dp && tp * pp * cp * o.dp != shape->devices) {
    if (cp > 1)
      bad(error, "--tp %" PRIu64 " x --pp %" PRIu64 " x --cp %" PRIu64 " x --dp %u = %" PRIu64
          " is not the %" PRIu64 " devices of the cluster (--nodes x --devices-per-node)", tp,
          pp, cp, o.dp, tp * pp * cp * o.dp, shape->devices);
    else
      bad(error, "--tp %" PRIu64 " x --pp %" PRIu64 " x --dp %u = %" PRIu64 " is not the %"
          PRIu64 " devices of the cluster (--nodes x --devices-per-node)", tp, pp, o.dp,
          tp * pp * o.dp, shape->devices);
    return shape->devices % (tp * pp * cp) ? SIM_DROP_TP_PP : SIM_DROP_DP_GIVEN;
  }
  if (shape->devices % (tp * pp * cp)) {
    if (cp > 1)
      bad(error, "--tp %" PRIu64 " x --pp %" PRIu64 " x --cp %" PRIu64 " does not divide the %"
          PRIu64 " devices of the cluster", tp, pp, cp, shape->devices);
    else
      bad(error, "--tp %" PRIu64 " x --pp %" PRIu64 " does not divide the %" PRIu64
          " devices of the cluster", tp, pp, shape->devices);
    return SIM_DROP_TP_PP;
  }
  uint64_t dp = shape->devices / (tp * pp * cp);
  if ((why = ep_rules(&o, &tf, tp, cp, dp, error)))
    return why;
  /* ZeRO-Offload runs on one device too: the host holds what ZeRO would shard. */
  if (o.zero > 0 && dp * cp < 2 && o.offload == SIM_OFFLOAD_NONE) {
    bad(error, "--zero %u: shards over the data-parallel group, and --dp %" PRIu64 " has none "
        "(use --zero 0 or --dp 2 or more)", o.zero, dp);
    return SIM_DROP_ZERO_DP;
  }
  /* The sharding group divides the dp x cp ranks that reduce the gradients. */
  if ((why = sim__3d_check_framework(&o, dp * cp, error)))
    return why;
  if (o.seq_parallel && tp < 2) {
    bad(error, "--sequence-parallel on: needs --tp 2 or more (--tp %" PRIu64 " has no "
        "tensor-parallel group to split the sequence over)", tp);
    return SIM_DROP_SP_TP;
  }
  uint64_t global = o.global_batch ? o.global_batch : (o.batch ? o.batch : 1) * dp;
  if (o.micro_batch && global % (dp * o.micro_batch)) {
    bad(error, "--global-batch %" PRIu64 " is not divisible by --dp %" PRIu64 " x --micro-batch "
        "%" PRIu64, global, dp, o.micro_batch);
    return global % dp ? SIM_DROP_NOT_MULTIPLE_REPLICAS : SIM_DROP_MICRO_BATCHES;
  }
  if (global % dp) {
    bad(error, "--global-batch %" PRIu64 " is not divisible by --dp %" PRIu64, global, dp);
    return SIM_DROP_NOT_MULTIPLE_REPLICAS;
  }
  uint64_t per_replica = global / dp;
  if (o.schedule == WL_SCHED_INTERLEAVED) {
    if (pp < 2) {
      bad(error, "--schedule interleaved: needs --pp 2 or more (--pp %" PRIu64 " is no pipeline)",
          pp);
      return SIM_DROP_INTERLEAVE_PP;
    }
    if (V < 2) {
      bad(error, "--schedule interleaved: give --interleave V, 2 or more model chunks per "
          "device (with 1 it is 1f1b)");
      return SIM_DROP_INTERLEAVE_PP;
    }
    if (tf.layers < pp * V) {
      bad(error, "--schedule interleaved: --pp %" PRIu64 " x --interleave %" PRIu64 " model "
          "chunks need as many blocks, and %s has %u", pp, V, o.model, tf.layers);
      return SIM_DROP_INTERLEAVE_PP;
    }
    uint64_t m = per_replica / (o.micro_batch ? o.micro_batch : 1);
    if (m % pp) {
      bad(error, "--schedule interleaved: the %" PRIu64 " micro-batches per replica "
          "(--global-batch / (--dp x --micro-batch)) are not a multiple of --pp %" PRIu64, m, pp);
      return SIM_DROP_INTERLEAVE_M;
    }
  }
  return NULL;
}

/* The strategy's check: the scenario's options on the cluster's shape. */
static const char *check_3d(const sim_scenario *s, const sim_shape *shape, GError **error)
{
  sim_3d_opts o;
  wl_tf tf;
  if (!sim_3d_opts_from_scenario(s, &o, error) || !wl_tf_parse(o.model, &tf, error))
    return "";
  return check_opts(&o, &tf, shape, error);
}

/* ---- Validation ------------------------------------------------------------------------------ */

/* The experts' degrees of a plan whose rules hold, and the busiest expert's load and the
 * copies dropped from the router's imbalance and the capacity factor (wl_tf_expert_load). */
static gboolean check_ep(plan3d *p, const sim_3d_opts *o, GError **error)
{
  if (ep_rules(o, &p->tf, p->T, p->CP, p->D, error))
    return FALSE;
  p->EP = o->ep ? o->ep : 1;
  p->ETP = o->etp ? o->etp : 1;
  p->dropped = 0;
  p->expert_load = wl_tf_expert_load(o->moe_imbalance, o->moe_capacity, &p->dropped);
  if (p->EP < 2)
    p->expert_load = 1;
  return TRUE;
}

/* Group-limited routing whose all-to-all groups span whole NVLink domains (ep_nodes: one
 * node's devices, or those of the nodes sharing one): the stage's devices (a multiple of EP)
 * start on a domain's first. */
static void plan_node_limited(plan3d *p, const comm_topology *topo)
{
  const comm_system *sys = comm_topology_system(topo);
  uint32_t domain = p->per_node * MAX(sys ? sys->nvlink_domain_nodes : 0, 1u);
  p->ep_nodes = 0;
  p->ep_node_copies = 0;
  if (!p->tf.expert_groups || p->EP < 2 || p->ETP > 1 || domain == 0 || p->EP % domain ||
      p->EP / domain < 2)
    return;
  p->ep_nodes = p->EP / domain;
  p->ep_node_copies = wl_tf_routed_nodes(&p->tf, p->ep_nodes);
}

/* Which blocks each virtual stage holds (wl_tf_partition): the user's split or layout, or the
 * blocks spread with fewer on the first and last stages. */
static gboolean plan_partition(plan3d *p, const sim_3d_opts *o, GError **error)
{
  uint32_t nv = p->P * p->V;
  p->first_block = g_new(uint32_t, nv);
  p->n_blocks = g_new(uint32_t, nv);
  p->cost = g_new0(chunk_cost, nv);
  wl_tf_partition_opts po = {.stages = nv, .split = o->split, .n_split = o->n_split,
                             .layout = o->pp_layout,
                             .embedding_in_split = o->embedding_in_split,
                             .loss_in_split = o->loss_in_split, .mtp = p->tf.mtp};
  return wl_tf_partition(p->tf.layers, &po, p->first_block, p->n_blocks, &p->mtp_vs, error);
}

/* The tasks (and in *deps the dependencies) of the graph of all iterations. Per unit (a pass
 * of a micro-batch over a chunk): its compute, a parameter gather (ZeRO-3), its tensor-parallel
 * part (two tasks and an end when it overlaps) and its send; the dependencies of these and the
 * unit's two pipeline ones. Per chunk and stage: up to three data-parallel tasks and nine
 * dependencies; per stage the update, and the embedding allreduce; per micro-batch the
 * embedding's and the LM head's two passes and their dependencies. */
static uint64_t graph_size(const plan3d *p, uint64_t *deps)
{
  const sim_3d_opts *o = &p->o;
  /* Sizes past 2^60 (refused by the caller) are UINT64_MAX: the products below then cannot
   * overflow, being at most 9 units per micro-batch and 16 per chunk. */
  if ((double)o->iterations * 2 * (double)p->m * p->V * p->P * 16 > 0x1p60) {
    *deps = UINT64_MAX;
    return UINT64_MAX;
  }
  uint64_t units = 2 * p->m * p->V * p->P;
  uint64_t z3 = o->zero >= 3, ov = o->tp_overlap ? 2 : 0;
  uint64_t chunks = (uint64_t)p->V * p->P;
  /* FSDP: per unit, each block's compute, gather and reduction (sim__fsdp_add_pass). */
  uint64_t fsdp = p->fw && sim__3d_per_block(o, p->fw, p->G)
                      ? 3 * (((uint64_t)p->tf.layers + chunks - 1) / chunks) : 0;
  /* --ep-overlap: per unit the start, the lead, the all-to-alls and the end they join. */
  uint64_t ep = o->ep_overlap && p->EP > 1 ? 4 : 0, ep_deps = ep ? 5 : 0;
  *deps = o->iterations * (units * (5 + z3 + ov + fsdp + ep_deps) + 9 * chunks + 2 * p->P + 4 +
                           4 * p->m);
  return o->iterations * (units * (2 + z3 + 1 + ov + fsdp + ep) + 3 * chunks + p->P + 1 +
                          4 * p->m);
}

/* Tensor parallelism runs within the NVLink domain: one node's devices, or the devices of the
 * nodes that share one (GB200 NVL72: 18 trays of 4). */
static gboolean check_tp_domain(uint32_t T, const comm_topology *topo, GError **error)
{
  uint32_t per_node = comm_topology_devices_per_node(topo);
  uint32_t nodes = comm_topology_system(topo) ? comm_topology_system(topo)->nvlink_domain_nodes : 0;
  uint32_t domain = per_node * MAX(nodes, 1u);
  if (T > domain)
    return bad(error, "--tp %u: a tensor-parallel group stays within the NVLink domain, the %u "
               "devices of %s", T, domain, nodes > 1 ? "its nodes" : "one node");
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
  /* The rules run and search share (check_opts), then what only a build can see. */
  sim_shape shape = {p->devices, comm_topology_nodes(topo), p->per_node};
  if (check_opts(o, &p->tf, &shape, error))
    return FALSE;
  p->CP = o->cp ? o->cp : 1;
  p->D = p->devices / (p->T * p->P * p->CP);
  p->R = p->D * p->CP;
  if (p->tf.ffn % p->T)
    return bad(error, "--tp %u does not divide the MLP size %u of %s", p->T, p->tf.ffn, o->model);
  if (!check_tp_domain(p->T, topo, error))
    return FALSE;
  if (p->V > 1 && o->schedule != WL_SCHED_INTERLEAVED)
    return bad(error, "--interleave %u needs --schedule interleaved", p->V);
  if (!plan_partition(p, o, error) || !check_ep(p, o, error))
    return FALSE;
  plan_node_limited(p, topo);
  if (!sim__3d_framework_load(o, topo, p->R, &p->fw, &p->G, &p->pcie_Bps, error))
    return FALSE;
  if (o->zero > 3)
    return bad(error, "--zero %u: expected 0, 1, 2 or 3", o->zero);
  if (o->global_batch == 0)
    p->o.global_batch = (o->batch ? o->batch : 1) * p->D;
  o = &p->o;
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
  p->m = per_replica / p->mb;
  if (o->schedule == WL_SCHED_GPIPE && p->V > 1)
    return bad(error, "--schedule gpipe runs one model chunk per device (--interleave 1)");
  uint64_t deps;
  if (!sim_graph_check_size(graph_size(p, &deps), error))
    return FALSE;
  if (!dev_check_precision(dev, o->precision, "--precision", error))
    return FALSE;
  p->act_elem_bytes = wl_precision_bytes(o->precision);
  return TRUE;
}

/* ---- Memory ---------------------------------------------------------------------------------- */

/* Warm-up forwards ahead of the schedule's (sim_schedule_order_ahead): one with --ep-overlap,
 * so that each forward runs beside the backward of an earlier micro-batch, whose compute covers
 * its all-to-alls (a micro-batch's own backward needs its forward's output), as Megatron-Core's
 * combined 1F1B and DualPipe schedule them. */
static uint32_t schedule_ahead(const plan3d *p) { return p->o.ep_overlap && p->EP > 1 ? 1 : 0; }

/* Activation bytes one micro-batch leaves in virtual stage vs's blocks until its backward. */
static uint64_t chunk_activation_bytes(const plan3d *p, uint32_t vs, wl_recompute rc)
{
  uint64_t bytes = 0;
  uint32_t first = p->first_block[vs];
  uint32_t split = wl_tf_dense_blocks(&p->tf);
  uint32_t dense = first < split ? MIN(first + p->n_blocks[vs], split) - first : 0;
  uint32_t counts[2] = {dense, p->n_blocks[vs] - dense}, blocks[2] = {0, split};
  for (int k = 0; k < 2; k++)
    if (counts[k])
      bytes += counts[k] * wl_tf_block_activation_bytes(&p->tf, blocks[k], p->tf.seq / p->CP,
                                                        p->mb, p->T, p->o.seq_parallel, rc,
                                                        p->o.precision);
  /* The multi-token-prediction modules keep what their block keeps. */
  if (chunk_mtp(p, vs))
    bytes += chunk_mtp(p, vs) * wl_tf_block_activation_bytes(&p->tf, p->tf.layers - 1,
                                                             p->tf.seq / p->CP, p->mb, p->T,
                                                             p->o.seq_parallel, rc,
                                                             p->o.precision);
  return bytes;
}

/* What a device of pipeline stage s holds beyond its tensors (wl_reserved_memory): the NCCL
 * communicators it belongs to (its tensor-parallel and data-parallel groups, the two copies of a
 * tied embedding on the first and last stage) and its point-to-point pipeline peers. */
static uint64_t stage_reserved(const plan3d *p, uint32_t s, uint64_t dynamic_bytes)
{
  gboolean end = s == 0 || s == p->P - 1;
  uint32_t comms = (p->T > 1) + (p->R > 1) + (p->CP > 1) + (p->tf.tied_head && p->P > 1 && end);
  uint32_t peers = p->P < 2 ? 0 : p->P == 2 || (end && p->V == 1) ? 1 : 2;
  wl_reserved_bytes r;
  return wl_framework_reserved(p->fw, comms, peers, dynamic_bytes, &r);
}

static void stage_memory(const plan3d *p, uint32_t s, sim_3d_metrics *m)
{
  uint64_t params = 0, experts = 0;
  for (uint32_t c = 0; c < p->V; c++) {
    params += chunk_params(p, c * p->P + s);
    experts += chunk_expert_params(p, c * p->P + s);
  }
  /* ZeRO shards the dense parameters' state over the data-parallel group and the experts'
   * over the expert-data-parallel one (tp x dp / ep devices). */
  wl_tf_state_bytes st, se;
  wl_tf_state_memory(params - experts, p->G, p->o.zero, p->o.precision, &st);
  wl_tf_state_memory(experts, p->T * p->R / (p->EP * p->ETP), p->o.zero, p->o.precision, &se);
  st.weights += se.weights, st.gradients += se.gradients, st.optimizer += se.optimizer;
  /* Flash attention keeps no s x s matrix: without recomputation it stores what selective
   * recomputation stores. */
  wl_recompute rc = p->o.recompute == WL_RECOMPUTE_NONE && p->o.attention == WL_ATTN_FLASH
                        ? WL_RECOMPUTE_SELECTIVE : p->o.recompute;
  /* The in-flight units are micro-batches of one chunk each: counted at the stage's largest
   * chunk (chunks differ when the blocks do not divide evenly, or by kind). */
  uint64_t per_chunk = 0;
  for (uint32_t c = 0; c < p->V; c++)
    per_chunk = MAX(per_chunk, chunk_activation_bytes(p, c * p->P + s, rc));
  uint64_t chunks = sim_schedule_inflight(p->o.schedule, p->P, s, p->m, p->V, schedule_ahead(p));
  uint64_t act = per_chunk * chunks;
  /* With full recomputation one block's whole activations exist during its backward. */
  if (p->o.recompute == WL_RECOMPUTE_FULL)
    act += wl_tf_layer_activation_bytes(&p->tf, p->tf.seq / p->CP, p->mb, p->T, p->o.seq_parallel,
                                        p->o.attention == WL_ATTN_FLASH ? WL_RECOMPUTE_SELECTIVE
                                                                        : WL_RECOMPUTE_NONE,
                                        p->o.precision);
  /* Other: the last stage's fp32 logits of one micro-batch (vocabulary-parallel), and with
   * ZeRO-3 two gathered blocks of parameters (the one in use and the one prefetched, as FSDP
   * wraps each block). */
  uint64_t other = 0;
  if (s == p->P - 1)
    other += p->mb * p->tf.seq / p->CP * ((p->tf.vocab + p->T - 1) / p->T) * 4;
  if (p->o.zero >= 3)
    other += 2 * ((wl_tf_layer_params(&p->tf) + p->T - 1) / p->T) * p->act_elem_bytes;
  m->weights_bytes = st.weights;
  m->gradients_bytes = st.gradients;
  m->optimizer_bytes = st.optimizer;
  m->activations_bytes = act;
  m->other_bytes = other;
  /* Context parallelism: one block's key/value buffers at a time (wl_tf_cp_buffer_bytes). */
  wl_tf_shard sh = {.micro_batch = (uint32_t)p->mb, .seq = p->tf.seq, .tp = p->T,
                    .precision = p->o.precision, .cp = p->CP};
  m->activations_cp_bytes = wl_tf_cp_buffer_bytes(&p->tf, &sh, p->o.cp_comm);
  m->framework_reserved_bytes = stage_reserved(p, s, act + other + m->activations_cp_bytes);
  sim__3d_offload_memory(p->o.offload, params, p->G, p->o.zero, m);
}

static uint64_t mem_total(const sim_3d_metrics *m)
{
  return m->weights_bytes + m->gradients_bytes + m->optimizer_bytes + m->activations_bytes +
         m->activations_cp_bytes + m->other_bytes + m->framework_reserved_bytes;
}

/* Memory: the stage with the largest footprint. */
static void plan_memory(const plan3d *p, sim_3d_metrics *metrics)
{
  memset(metrics, 0, sizeof *metrics);
  for (uint32_t s = 0; s < p->P; s++) {
    sim_3d_metrics ms = {0};
    stage_memory(p, s, &ms);
    if (s == 0 || mem_total(&ms) > mem_total(metrics))
      *metrics = ms;
  }
}

/* ---- Schedules ---------------------------------------------------------------------------------- */

typedef sim_schedule_unit unit;

/* The order in which pipeline rank s runs its forward and backward units (schedule.h). */
static GArray *schedule_units(const plan3d *p, uint32_t s)
{
  guint n = (guint)(2 * p->m * p->V);
  GArray *u = g_array_sized_new(FALSE, FALSE, sizeof(unit), n);
  g_array_set_size(u, n);
  sim_schedule_order_ahead(p->o.schedule, p->P, s, p->m, p->V, schedule_ahead(p),
                           (unit *)u->data);
  return u;
}

/* The index in `order` of each chunk's last backward unit (it closes the chunk's gradients):
 * last_b[chunk], V entries, freed by the caller. */
static uint32_t *chunk_last_backward(const plan3d *p, const GArray *order)
{
  uint32_t *last_b = g_new0(uint32_t, p->V);
  for (guint i = 0; i < order->len; i++)
    if (!g_array_index(order, unit, i).fwd)
      last_b[g_array_index(order, unit, i).chunk] = i;
  return last_b;
}

/* ---- Data-parallel buckets -------------------------------------------------------------------- */

/* A collective of `bytes` over the expert-data-parallel groups of a stage with expert
 * parallelism: the tp x dp / ep devices that hold the same experts, every ep-th of the stage's
 * tp x dp devices, all ep groups at once. 0 without expert parallelism or with one such device. */
static gboolean expert_dp_time(sim_coll_timer *ct, const plan3d *p, comm_coll_op op, uint64_t bytes,
                               sim_time_ps *out, GError **error)
{
  *out = 0;
  if (p->EP < 2)
    return TRUE;
  uint32_t block = p->EP * p->ETP;
  return sim_coll_timer_time(ct, op, 0, p->T * p->R / block, block, block, 1, bytes, out, error);
}

/* Bytes of one parameter as it is gathered: 4 in fp32 and tf32, else 2 (bf16 or fp16, fp8
 * training included). */
static uint64_t param_elem_bytes(const plan3d *p)
{
  return p->o.precision == WL_PREC_FP32 || p->o.precision == WL_PREC_TF32 ? 4 : 2;
}

/* Bytes of one reduced gradient element: the parameter's, or the framework's reduce dtype
 * (FSDP2 in torchtitan reduces in fp32). */
static uint64_t grad_elem_bytes(const plan3d *p)
{
  if (p->fw && p->fw->reduce_bytes)
    return p->fw->reduce_bytes;
  return param_elem_bytes(p);
}

/* ZeRO-Offload: the time to copy the device's shard of `bytes` reduced gradients to the host
 * (0 without offload). */
static sim_time_ps grad_to_host_ps(const plan3d *p, uint64_t bytes)
{
  if (p->o.offload == SIM_OFFLOAD_NONE)
    return 0;
  return (sim_time_ps)(sim__pcie_s(bytes / MAX(p->G, 1u), p->pcie_Bps) * 1e12);
}

/* Most buckets one chunk's gradients are reduced in (bounds the graph). */
#define MAX_BUCKETS 64

/* Megatron-Core's gradient buckets with --overlap-grad-reduce: --ddp-bucket-size parameters, by
 * default max(40,000,000, 1,000,000 x dp) (megatron/training/training.py), or --bucket-mib;
 * each bucket is reduced (all-reduce, or reduce-scatter with the distributed optimizer) as soon
 * as the last micro-batch's backward has produced its gradients. *n: the buckets of virtual
 * stage vs (its gradients split evenly), *each_ps: the time of one on the network. */
static void dp_bucket_split(const plan3d *p, uint32_t vs, uint64_t grad_elem, uint32_t *n,
                            uint64_t *each_bytes)
{
  uint64_t params = chunk_params(p, vs) - chunk_expert_params(p, vs);
  uint64_t bucket_bytes = p->o.bucket_bytes ? p->o.bucket_bytes : p->fw->bucket_bytes;
  uint64_t per_bucket = bucket_bytes ? MAX(bucket_bytes / grad_elem, 1)
                                     : MAX(UINT64_C(40000000), UINT64_C(1000000) * p->R);
  uint64_t k = CLAMP((params + per_bucket - 1) / per_bucket, 1, MAX_BUCKETS);
  *n = (uint32_t)k;
  *each_bytes = (params + k - 1) / k * grad_elem;
}

static gboolean dp_buckets(sim_coll_timer *ct, const plan3d *p, uint32_t vs, uint64_t grad_elem,
                           uint32_t *n, sim_time_ps *each_ps, GError **error)
{
  uint64_t bytes;
  dp_bucket_split(p, vs, grad_elem, n, &bytes);
  if (!sim__dp_coll_time(ct, p->o.zero ? COMM_COLL_REDUCE_SCATTER : COMM_COLL_ALLREDUCE, p->R,
                         p->T, p->G, bytes, each_ps, error))
    return FALSE;
  /* ZeRO-Offload copies each reduced bucket's shard to the host as it comes. */
  *each_ps += grad_to_host_ps(p, bytes);
  return TRUE;
}


/* The optimizer step of a device of pipeline rank s over its (ZeRO-sharded) parameters: Adam
 * reads the gradient, master weights and both moments and writes them back with the 2-byte
 * weights. */
static wl_op_cost update_cost(const plan3d *p, uint32_t s)
{
  uint64_t grad_elem = grad_elem_bytes(p), params = 0;
  for (uint32_t c = 0; c < p->V; c++)
    params += chunk_params(p, c * p->P + s);
  uint64_t shard = p->o.zero >= 1 ? (params + p->G - 1) / p->G : params;
  return (wl_op_cost){.kind = WL_OP_UPDATE, .pass = WL_PASS_UPDATE, .precision = p->o.precision,
                      .flops = shard * 10, .bytes_read = shard * (grad_elem + 12),
                      .bytes_written = shard * (12 + grad_elem), .out_elems = shard};
}

/* The time of that step: on the device, or with ZeRO-Offload on the host's CPUs (the
 * framework's host Adam rate shared by the node's devices) followed by the updated 2-byte
 * parameters' copy back over PCIe. */
static sim_time_ps update_ps(const plan3d *p, const dev_device *dev, const wl_op_cost *upd)
{
  if (p->o.offload == SIM_OFFLOAD_NONE)
    return dev_op_time_ps(dev, upd, 0);
  double s = wl_framework_host_step_s(p->fw, upd->out_elems, p->per_node) +
             sim__pcie_s(upd->out_elems * param_elem_bytes(p), p->pcie_Bps);
  return (sim_time_ps)(s * 1e12);
}

/* ---- Building the graph ----------------------------------------------------------------------- */

typedef struct {
  sim_unit_id unit;
  sim_stream_id compute, tp, dp, send_f, recv_f, send_b, recv_b, emb;
  sim_stream_id cp_send, cp_recv;     /* context parallelism's ring (every device, p2p) */
  sim_stream_id ep;                   /* --ep-overlap: the all-to-alls beside the compute */
  sim_stream_id ep_nvlink;            /* group-limited routing over nodes: the all-to-alls'
                                       * NVLink part beside their cross-node part */
} stage_streams;

/* Task names by (kind, micro-batch, chunk), formatted once and handed out as the graph's copy
 * (sim_graph_intern): the same names recur on every stage and in every iteration. */
enum { NAME_PASS, NAME_TP, NAME_END, NAME_SEND, NAME_EMB, NAME_HEAD, NAME_EP, NAME_KINDS };

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
  static const char *const suffix[NAME_KINDS] = {"", " tp", " end", "", " embedding",
                                                 " lm_head", " ep"};
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

/* Adds the compute of one unit on `stream`: the chunk's blocks and, as tasks of their own so
 * that the schedule shows them, the embedding before them (forward) or after them (backward)
 * on the first virtual stage and the LM head after them (forward) or before them (backward) on
 * the last. *first and *last are its first and last task. */
static void add_unit_compute(const plan3d *p, sim_graph *g, sim_stream_id stream,
                             unit_names *names, const unit *x, size_t at, uint32_t vs,
                             uint32_t pieces, sim_task_id *piece_end, sim_task_id *first,
                             sim_task_id *last)
{
  uint32_t nv = p->P * p->V;
  const chunk_cost *cc = cost_of(p, vs);
  /* In order: before the blocks, the blocks, after them. */
  const chunk_cost *part[3] = {NULL, cc, NULL};
  int kind[3] = {NAME_PASS, NAME_PASS, NAME_PASS};
  if (vs == 0)
    part[x->fwd ? 0 : 2] = &p->emb, kind[x->fwd ? 0 : 2] = NAME_EMB;
  if (vs == nv - 1)
    part[x->fwd ? 2 : 0] = &p->head, kind[x->fwd ? 2 : 0] = NAME_HEAD;
  gboolean any = FALSE;
  for (int i = 0; i < 3; i++) {
    if (!part[i])
      continue;
    /* The blocks in `pieces` equal parts (a data-parallel bucket closes at the end of each). */
    uint32_t n = i == 1 ? MAX(pieces, 1u) : 1;
    sim_time_ps d = x->fwd ? part[i]->fwd_ps : part[i]->bwd_ps;
    uint64_t f = x->fwd ? part[i]->fwd_flops : part[i]->bwd_flops;
    for (uint32_t j = 0; j < n; j++) {
      sim_task_id t = sim_graph_add_compute(g, stream, unit_name(names, kind[i], at),
                                            x->fwd ? "forward" : "backward",
                                            d * (j + 1) / n - d * j / n, f * (j + 1) / n - f * j / n,
                                            0);
      if (any)
        sim_graph_depend(g, t, *last);
      else
        *first = t;
      *last = t;
      any = TRUE;
      if (i == 1 && piece_end)
        piece_end[j] = t;
    }
  }
}

/* The reductions of a chunk's n gradient buckets on the data-parallel stream, bucket j after
 * the piece of backward that closes it (piece_end[j]); returns the last. */
static sim_task_id add_buckets(sim_graph *g, sim_stream_id dp, const sim_task_id *piece_end,
                               uint32_t n, sim_time_ps each_ps, unsigned zero, uint32_t chunk)
{
  sim_task_id r = 0;
  for (uint32_t j = 0; j < n; j++) {
    char name[64];
    g_snprintf(name, sizeof name, "%s grads c%u bucket %u", zero ? "reduce-scatter" : "allreduce",
               chunk, j);
    sim_task_id t = sim_graph_add_compute(g, dp, name, "dp", each_ps, 0, 0);
    sim_graph_depend(g, t, piece_end[j]);
    if (j > 0)
      sim_graph_depend(g, t, r);
    r = t;
  }
  return r;
}

static sim_task_id add_tp(sim_graph *g, sim_stream_id tp, sim_task_id after, sim_time_ps d,
                          const char *name)
{
  sim_task_id t = sim_graph_add_compute(g, tp, name, "tp", d, 0, 0);
  sim_graph_depend(g, t, after);
  return t;
}

/* The tensor-parallel collectives of one pass over a chunk, as tp_time prices them: `count`
 * allreduces, or with sequence parallelism count / 2 all-gather and reduce-scatter pairs (and
 * one all-gather more when count is odd), each of b s h activations. */
static uint32_t tp_ops(const plan3d *p, unsigned count, int *ops)
{
  uint32_t n = 0;
  if (p->T < 2)
    return 0;
  if (!p->o.seq_parallel) {
    for (unsigned k = 0; k < count; k++)
      ops[n++] = SIM_OP_ALLREDUCE;
    return n;
  }
  for (unsigned k = 0; k + 1 < count; k += 2) {
    ops[n++] = SIM_OP_ALLGATHER;
    ops[n++] = SIM_OP_REDUCE_SCATTER;
  }
  if (count % 2)
    ops[n++] = SIM_OP_ALLGATHER;
  return n;
}

/* The end of a unit (task `end`) of device k of a stage (streams st[stage per_stage + k]; one
 * device a stage in the folded plan) and the transfer it sends: a forward's activations to
 * the same device of the next virtual stage, a backward's gradients to the previous one's. */
static void add_unit_send(sim_graph *g, const plan3d *p, const stage_streams *st,
                          uint32_t per_stage, uint32_t k, const unit *x, uint32_t vs,
                          const char *name, uint64_t bytes, sim_task_id end, uint64_t slot,
                          sim_task_id *f_end, sim_task_id *f_send, sim_task_id *b_send)
{
  uint32_t nv = p->P * p->V, s = vs % p->P;
  const stage_streams *me = &st[s * per_stage + k];
  if (x->fwd) {
    f_end[slot] = end;
    if (vs + 1 < nv) {
      const stage_streams *to = &st[(vs + 1) % p->P * per_stage + k];
      f_send[slot] = sim_graph_add_transfer(g, me->send_f, to->recv_f, name, bytes);
      sim_graph_depend(g, f_send[slot], end);
    }
  } else if (vs > 0) {
    const stage_streams *to = &st[(vs - 1) % p->P * per_stage + k];
    b_send[slot] = sim_graph_add_transfer(g, me->send_b, to->recv_b, name, bytes);
    sim_graph_depend(g, b_send[slot], end);
  }
}

/* The pipeline dependencies of one iteration: a forward waits for the previous virtual stage's
 * activations, a backward for the next one's gradients, and the last virtual stage's backward
 * for its own forward. Tasks are per slot (micro-batch mb, virtual stage vs) at k stride + mb
 * nv + vs, for each of `copies` devices k of a stage (1 and 0 in the folded plan). */
static void add_pipeline_deps(sim_graph *g, const plan3d *p, GPtrArray *orders, uint32_t copies,
                              uint64_t stride, const sim_task_id *f_start,
                              const sim_task_id *b_start, const sim_task_id *f_end,
                              const sim_task_id *f_send, const sim_task_id *b_send)
{
  uint32_t nv = p->P * p->V;
  for (uint32_t s = 0; s < p->P; s++) {
    GArray *order = g_ptr_array_index(orders, s);
    for (guint i = 0; i < order->len; i++) {
      const unit *x = &g_array_index(order, unit, i);
      uint32_t vs = x->chunk * p->P + s;
      for (uint32_t k = 0; k < copies; k++) {
        uint64_t slot = k * stride + (uint64_t)x->mb * nv + vs;
        if (x->fwd && vs > 0)
          sim_graph_depend(g, f_start[slot], f_send[slot - 1]);
        if (!x->fwd && vs + 1 < nv)
          sim_graph_depend(g, b_start[slot], b_send[slot + 1]);
        if (!x->fwd && vs + 1 == nv)
          sim_graph_depend(g, b_start[slot], f_end[slot]);
      }
    }
  }
}

/* n collectives in a row over the stage's devices first .. first + size - 1 (their streams
 * members[k]), of ops[j] (or `op` each when ops is NULL) and `bytes`: the first after each
 * member's after[k] where has_after, the others after it in stream order. Returns the last. */
static sim_task_id add_coll_chain(sim_graph *g, const sim_stream_id *members, uint32_t first,
                                  uint32_t size, const int *ops, int op, uint32_t n,
                                  const char *name, const comm_coll_algorithm *algo,
                                  uint64_t bytes, const sim_task_id *after, gboolean has_after)
{
  sim_task_id c = 0;
  for (uint32_t j = 0; j < n; j++) {
    sim_task_id t = sim_graph_add_collective(g, &members[first], size, name, ops ? ops[j] : op,
                                             algo, bytes);
    for (uint32_t k = first; k < first + size && j == 0 && has_after; k++)
      sim_graph_depend(g, t, after[k]);
    c = t;
  }
  return c;
}

/* Group-limited routing over nodes on every device (as ep_time prices it): the chain of n
 * all-to-alls of the group of devices base .. base + EP - 1 of a stage as its two parts at once,
 * the cross-node part (ep_node_bytes) over each local index's devices on their streams in
 * `across`, the NVLink part (ep_bytes) over each node's devices on their streams in `within`;
 * both start after after[k] (when has_after) and last[k] ends when device k's two chains have.
 * Arrays by device of the stage; mem and mem_after are scratch of ep_nodes. */
static void add_node_limited_chain(sim_graph *g, const plan3d *p, const sim_stream_id *across,
                                   const sim_stream_id *within, uint32_t base, uint32_t n,
                                   const char *name, const comm_coll_algorithm *algo,
                                   const sim_task_id *after, gboolean has_after,
                                   sim_stream_id *mem, sim_task_id *mem_after, sim_task_id *last)
{
  uint32_t N = p->ep_nodes, d = p->EP / N;
  for (uint32_t j = 0; j < d; j++) {
    for (uint32_t i = 0; i < N; i++) {
      mem[i] = across[base + j + i * d];
      mem_after[i] = has_after ? after[base + j + i * d] : 0;
    }
    sim_task_id c = add_coll_chain(g, mem, 0, N, NULL, SIM_OP_ALLTOALL, n, name, algo,
                                   ep_node_bytes(p), mem_after, has_after);
    for (uint32_t i = 0; i < N; i++) {
      uint32_t k = base + j + i * d;
      last[k] = sim_graph_add_delay(g, name, 0);
      sim_graph_depend(g, last[k], c);
    }
  }
  for (uint32_t i = 0; i < N; i++) {
    sim_task_id c = add_coll_chain(g, within, base + i * d, d, NULL, SIM_OP_ALLTOALL, n, name,
                                   algo, ep_bytes(p), after, has_after);
    for (uint32_t k = base + i * d; k < base + (i + 1) * d; k++)
      sim_graph_depend(g, last[k], c);
  }
}

/* The end of a pass on devices first .. first + size - 1 once its collectives (last: c) are
 * done: c itself, or beside the compute (overlap) an end when both are, made once (`name`). */
static void pass_end(sim_graph *g, const char *name, gboolean overlap, uint32_t first,
                     uint32_t size, const sim_task_id *comp, sim_task_id c, sim_task_id *cur)
{
  for (uint32_t k = first; k < first + size; k++) {
    if (!overlap) {
      cur[k] = c;
      continue;
    }
    if (cur[k] == comp[k]) {
      cur[k] = sim_graph_add_delay(g, name, 0);
      sim_graph_depend(g, cur[k], comp[k]);
    }
    sim_graph_depend(g, cur[k], c);
  }
}

/* Context parallelism on every device. p2p: before the pass's other kernels, for each block
 * the ring of each context-parallel group (devices cpg[c], c < CP, of the stage; their streams
 * in st): rank c computes step i's block (sim_cp_step_ps) once it has step i - 1's and has
 * received the keys and values of step i, which its predecessor sends as a flow as soon as it
 * starts step i - 1 (and has them); backward sends twice the bytes and the last gradients
 * home. begin[c] is each device's first task of the pass, end[c] receives its last. */
static void add_cp_ring(sim_graph *g, const plan3d *p, const stage_streams *const *cpg, gboolean fwd, uint32_t blocks,
                        const sim_task_id *begin, sim_task_id *end, const int64_t *step_ps)
{
  uint32_t CP = p->CP;
  uint64_t kv = wl_tf_cp_kv_bytes(&p->tf, &p->cp_shard) * (fwd ? 1 : 2);
  const char *what = fwd ? "attention" : "attention backward";
  g_autofree sim_task_id *last = g_new(sim_task_id, CP);      /* c_{i-1} */
  g_autofree sim_task_id *before = g_new(sim_task_id, CP);    /* c_{i-2}, or what precedes */
  g_autofree sim_task_id *got = g_new(sim_task_id, CP);       /* t_{i-1} into c */
  g_autofree sim_task_id *in = g_new(sim_task_id, CP);        /* t_i into c */
  for (uint32_t c = 0; c < CP; c++)
    last[c] = begin[c];
  for (uint32_t b = 0; b < blocks; b++) {
    for (uint32_t i = 0; i < CP; i++) {
      for (uint32_t c = 0; c < CP && i > 0; c++) {
        uint32_t src = (c + CP - 1) % CP;
        in[c] = sim_graph_add_transfer(g, cpg[src]->cp_send, cpg[c]->cp_recv,
                                       fwd ? "cp keys and values" : "cp keys, values, grads", kv);
        /* Sent when the sender starts step i - 1 (its step i - 2 done) with what it got. */
        sim_graph_depend(g, in[c], before[src]);
        if (i > 1)
          sim_graph_depend(g, in[c], got[src]);
      }
      for (uint32_t c = 0; c < CP; c++) {
        sim_task_id t = sim_graph_add_compute(g, cpg[c]->compute, what, fwd ? "forward" : "backward",
                                              step_ps[((size_t)c * CP + i) * 2 + (fwd ? 0 : 1)],
                                              0, 0);
        sim_graph_depend(g, t, last[c]);
        if (i > 0)
          sim_graph_depend(g, t, in[c]);
        before[c] = last[c];
        last[c] = t;
      }
      for (uint32_t c = 0; c < CP && i > 0; c++)
        got[c] = in[c];
    }
    if (!fwd) {
      /* The gradients of the last keys and values go home. */
      for (uint32_t c = 0; c < CP; c++) {
        uint32_t src = (c + CP - 1) % CP;
        in[c] = sim_graph_add_transfer(g, cpg[src]->cp_send, cpg[c]->cp_recv, "cp grads home",
                                       kv / 2);
        sim_graph_depend(g, in[c], last[src]);
      }
      for (uint32_t c = 0; c < CP; c++) {
        sim_task_id j = sim_graph_add_delay(g, "cp grads home", 0);
        sim_graph_depend(g, j, last[c]);
        sim_graph_depend(g, j, in[c]);
        last[c] = j;
      }
    }
  }
  for (uint32_t c = 0; c < CP; c++)
    end[c] = last[c];
}

/* The all-gather and a2a forms on every device: for each block the collectives sim/cp.c
 * prices (all-gather of the keys and values, and in backward the reduce-scatter of their
 * gradients; a2a: queries, keys and values, then the output) over each context-parallel group
 * of the stage (devices (q CP + c) T + r of the stage, from stage_first), on the cp streams after
 * the members' compute comp[]; comp[] and cur[] receive the last. */
static void add_cp_collectives(sim_graph *g, const plan3d *p, const stage_streams *st,
                               uint32_t stage_first, uint32_t replicas, gboolean fwd,
                               uint32_t blocks, const comm_coll_algorithm *algo,
                               const comm_coll_algorithm *a2a_algo, sim_task_id *comp,
                               sim_task_id *cur)
{
  uint32_t CP = p->CP, T = p->T;
  uint64_t kv = wl_tf_cp_kv_bytes(&p->tf, &p->cp_shard);
  gboolean a2a = p->o.cp_comm == WL_CP_A2A;
  int ops[2] = {a2a ? SIM_OP_ALLTOALL : SIM_OP_ALLGATHER,
                a2a ? SIM_OP_ALLTOALL : SIM_OP_REDUCE_SCATTER};
  uint64_t bytes[2] = {a2a ? wl_tf_cp_q_bytes(&p->tf, &p->cp_shard) + kv : kv * CP,
                       a2a ? wl_tf_cp_o_bytes(&p->tf, &p->cp_shard) : kv * CP};
  const char *names[2] = {a2a ? "cp all-to-all q, k, v" : "cp all-gather keys and values",
                          a2a ? "cp all-to-all output" : "cp reduce-scatter key/value grads"};
  uint32_t n = a2a || !fwd ? 2 : 1;
  g_autofree sim_stream_id *mem = g_new(sim_stream_id, CP);
  for (uint32_t q = 0; q < replicas; q++)
    for (uint32_t r = 0; r < T; r++) {
      for (uint32_t c = 0; c < CP; c++)
        mem[c] = st[stage_first + (q * CP + c) * T + r].cp_send;
      sim_task_id last = 0;
      for (uint32_t b = 0; b < blocks; b++)
        for (uint32_t j = 0; j < n; j++) {
          sim_task_id t = sim_graph_add_collective(g, mem, CP, names[j], ops[j],
                                                   a2a ? a2a_algo : algo, bytes[j]);
          for (uint32_t c = 0; c < CP && b == 0 && j == 0; c++)
            sim_graph_depend(g, t, comp[(q * CP + c) * T + r]);
          last = t;
        }
      for (uint32_t c = 0; c < CP && blocks > 0; c++)
        comp[(q * CP + c) * T + r] = cur[(q * CP + c) * T + r] = last;
    }
}

/* The p2p rings of pass x on every context-parallel group of pipeline stage s (devices
 * (q CP + c) T + r of the stage, k in the stage): each device's ring begins after after[k]
 * (when has_after) and, when f_start and b_start are given, is where the pass starts (the
 * pipeline's dependencies land on it); ring_end[k] receives its last task. */
static void add_cp_rings(sim_graph *g, const plan3d *p, const stage_streams *st, uint32_t s,
                         const unit *x, size_t at, unit_names *names, gboolean has_after,
                         const sim_task_id *after, const int64_t *step_ps, sim_task_id *f_start,
                         sim_task_id *b_start, sim_task_id *ring_end)
{
  uint32_t CP = p->CP, T = p->T, per_stage = p->R * T, nv = p->P * p->V;
  uint32_t vs = x->chunk * p->P + s;
  g_autofree const stage_streams **cpg = g_new(const stage_streams *, CP);
  g_autofree sim_task_id *begin = g_new(sim_task_id, CP);
  g_autofree sim_task_id *end = g_new(sim_task_id, CP);
  for (uint32_t q = 0; q < p->D; q++)
    for (uint32_t r = 0; r < T; r++) {
      for (uint32_t c = 0; c < CP; c++) {
        uint32_t k = (q * CP + c) * T + r;
        cpg[c] = &st[s * per_stage + k];
        begin[c] = sim_graph_add_delay(g, unit_name(names, NAME_PASS, at), 0);
        if (has_after)
          sim_graph_depend(g, begin[c], after[k]);
        if (f_start)
          (x->fwd ? f_start : b_start)[((uint64_t)k * p->m + x->mb) * nv + vs] = begin[c];
      }
      add_cp_ring(g, p, cpg, x->fwd, chunk_blocks(p, vs), begin, end, step_ps);
      for (uint32_t c = 0; c < CP; c++)
        ring_end[(q * CP + c) * T + r] = end[c];
    }
}

/* The data-parallel group grp of stage s in the every-device plan below (st: every device's
 * streams, R T of them a stage, R = D x CP replicas: gradients and ZeRO shards span dp x cp):
 * grp < T is the dense parameters' group of tensor rank grp (devices k = grp + q T of the
 * stage), grp = T + e the experts' expert-data-parallel group e
 * (k = e + q EP). Fills members with their dp streams and returns the group's size; *bytes
 * (when not NULL) gets the bytes of chunk vs's parameters that group holds, at elem bytes an
 * element. */
static uint32_t dp_group(const plan3d *p, const stage_streams *st, uint32_t s, uint32_t grp,
                         uint32_t vs, uint64_t elem, sim_stream_id *members, uint64_t *bytes)
{
  uint32_t per_stage = p->R * p->T;
  gboolean ex = grp >= p->T;
  uint32_t first = ex ? grp - p->T : grp, stride = ex ? p->EP * p->ETP : p->T;
  uint32_t size = ex ? per_stage / (p->EP * p->ETP) : p->R;
  for (uint32_t q = 0; q < size; q++)
    members[q] = st[s * per_stage + first + q * stride].dp;
  if (bytes) {
    uint64_t experts = chunk_expert_params(p, vs);
    *bytes = (ex ? experts : chunk_params(p, vs) - experts) * elem;
  }
  return size;
}

/* One data-parallel collective `op` of `bytes` over group grp of stage s (dp_group's groups) on
 * every device, taken apart as sim__dp_steps takes it in the folded plan: over the whole group;
 * or, for the dense parameters with a sharding group of G < R replicas (HSDP), within each
 * sharding group of G consecutive replicas (devices k = grp + (h G + i) T of the stage), a
 * reduce-scatter then followed by the allreduce of its shard (bytes / G) across the R / G
 * sharding groups (devices k = grp + (j G + i) T). Groups of one device are skipped (the folded
 * plan times them 0). The first collectives wait for `gate` (when not 0) and for each member
 * k's after[k after_stride] (when after is not NULL). With host_ps (ZeRO-Offload), each member
 * then copies its reduced shard to the host on its dp stream for that long. done[k] receives
 * each member's last task. Returns the tasks made (0: none, done untouched). */
static uint32_t add_dp_coll(sim_graph *g, const plan3d *p, const stage_streams *st, uint32_t s,
                            uint32_t grp, int op, uint64_t bytes, const comm_coll_algorithm *algo,
                            const char *name, const sim_task_id *after, uint32_t after_stride,
                            sim_task_id gate, sim_time_ps host_ps, sim_stream_id *members,
                            sim_task_id *done)
{
  uint32_t T = p->T, per_stage = p->R * T, EB = p->EP * p->ETP;
  gboolean ex = grp >= T;
  uint32_t first = ex ? grp - T : grp, stride = ex ? EB : T;
  uint32_t size = ex ? per_stage / EB : p->R;
  uint32_t G = !ex && op != SIM_OP_ALLREDUCE && p->G < size ? p->G : size;
  uint32_t made = 0;
  /* The steps: [0] within each sharding group (h: the group, i: the member), [1] HSDP's
   * allreduce across them (h: the shard, i: the sharding group). The first step that makes
   * tasks waits for what the caller says; what follows it runs in dp stream order. */
  for (int step = 0; step < 2; step++) {
    uint32_t n = step == 0 ? G : size / G, n_groups = step == 0 ? size / G : G;
    if (step == 1 && (G == size || op != SIM_OP_REDUCE_SCATTER))
      break;
    gboolean first_step = made == 0;
    for (uint32_t h = 0; h < n_groups && n > 1; h++) {
      for (uint32_t i = 0; i < n; i++)
        members[i] = st[s * per_stage + first + (step == 0 ? h * G + i : i * G + h) * stride].dp;
      sim_task_id t = sim_graph_add_collective(g, members, n,
                                               step == 0 ? name : "allreduce grad shards",
                                               step == 0 ? op : SIM_OP_ALLREDUCE, algo,
                                               step == 0 ? bytes : bytes / G);
      if (first_step && gate)
        sim_graph_depend(g, t, gate);
      for (uint32_t i = 0; i < n; i++) {
        uint32_t k = first + (step == 0 ? h * G + i : i * G + h) * stride;
        if (first_step && after)
          sim_graph_depend(g, t, after[(size_t)k * after_stride]);
        done[k] = t;
      }
      made++;
    }
  }
  for (uint32_t q = 0; q < size && host_ps > 0; q++) {
    uint32_t k = first + q * stride;
    sim_task_id t = sim_graph_add_compute(g, st[s * per_stage + k].dp, "grads to host", "dp",
                                          host_ps, 0, 0);
    if (made == 0 && gate)
      sim_graph_depend(g, t, gate);
    if (made == 0 && after)
      sim_graph_depend(g, t, after[(size_t)k * after_stride]);
    done[k] = t;
  }
  return made + (host_ps > 0 ? size : 0);
}

/* The most blocks a virtual stage holds. */
static uint32_t most_blocks_of(const plan3d *p)
{
  uint32_t most = 0;
  for (uint32_t vs = 0; vs < p->P * p->V; vs++)
    most = MAX(most, chunk_blocks(p, vs));
  return most;
}

/* Expert tensor parallelism on every device: for each of n_units (a mixture-of-experts
 * block's forward, or its backward, and a recomputed forward) the dispatch all-to-all over
 * each all-to-all group (the EP devices ETP apart of a block of EP x ETP consecutive devices of
 * the stage), the all-gather of the routed tokens and the reduce-scatter of the experts'
 * outputs over each group of ETP consecutive devices (etp_time's), then the combine
 * all-to-all, as ep_time and etp_time price them (the all-to-alls only when a2a_too: with
 * --ep-overlap they run beside the compute). Every device's first collective waits for its
 * after[k] (when has_after); last[k] receives its last. mem: room for EP streams. */
static void add_etp_chain(sim_graph *g, const plan3d *p, const sim_stream_id *tp_members,
                          uint32_t n_units, gboolean a2a_too, const char *name,
                          const comm_coll_algorithm *algo,
                          const comm_coll_algorithm *a2a_algo, const sim_task_id *after,
                          gboolean has_after, sim_stream_id *mem, sim_task_id *last)
{
  uint32_t EP = p->EP, ETP = p->ETP, EB = EP * ETP, per_stage = p->R * p->T;
  static const int op[4] = {SIM_OP_ALLTOALL, SIM_OP_ALLGATHER, SIM_OP_REDUCE_SCATTER,
                            SIM_OP_ALLTOALL};
  gboolean started = FALSE;
  for (uint32_t u = 0; u < n_units; u++)
    for (int step = 0; step < 4; step++) {
      gboolean a2a = op[step] == SIM_OP_ALLTOALL;
      if (a2a && !a2a_too)
        continue;
      /* All-to-all groups: block b, expert tensor rank x, members b EB + x + e ETP; expert
       * tensor-parallel groups: members q ETP + i. */
      uint32_t n = a2a ? EP : ETP, n_groups = per_stage / n;
      for (uint32_t grp = 0; grp < n_groups; grp++) {
        uint32_t base = a2a ? grp / ETP * EB + grp % ETP : grp * ETP, stride = a2a ? ETP : 1;
        for (uint32_t i = 0; i < n; i++)
          mem[i] = tp_members[base + i * stride];
        sim_task_id t = sim_graph_add_collective(g, mem, n, name, op[step], a2a ? a2a_algo : algo,
                                                 a2a ? ep_bytes(p) : ep_bytes(p) * ETP);
        for (uint32_t i = 0; i < n; i++) {
          if (!started && has_after)
            sim_graph_depend(g, t, after[base + i * stride]);
          last[base + i * stride] = t;
        }
      }
      started = TRUE;
    }
}

/* --ep-overlap: what the folded plan shows of a pass's (pass 0 forward, 1 backward) all-to-alls
 * A after its compute, in its tensor-parallel time: max(0, A - C_cover), the chunk's
 * mixture-of-experts blocks' alike (sim_ep_overlap_time). */
static sim_time_ps ep_shown_ps(const chunk_cost *c, int pass)
{
  sim_time_ps d = c->ep_a2a_ps[pass] - c->ep_cover_ps[pass];
  return d > 0 ? d : 0;
}

/* --ep-overlap: how long after a pass's start its all-to-alls begin, on an ep stream beside the
 * compute (in both plans). The folded plan (block_cost) shows of a pass's all-to-alls A what
 * the paired micro-batch's other pass C_cover does not cover, after the pass's compute C
 * (slowed by the SMs they hold): C + max(0, A - C_cover) (ep_shown_ps). A backward (C >=
 * C_cover: covered by a shorter forward) begins them C - C_cover after its start, so that they
 * end at max(C, C - C_cover + A), its time, and it waits for them. A forward shorter than its
 * cover begins them with it, and they run on under the next unit's compute, the backward of an
 * earlier micro-batch (schedule_ahead): the next unit waits for the forward's compute and what
 * shows, its output (the send, its own backward) for the all-to-alls too, which end A after
 * the forward's start. The backward that follows begins its own at least C_f + max(0, A - C_b)
 * + C_b - C_f = max(C_b, A) after that start, so on the FIFO ep stream each pair runs its
 * forward's all-to-alls, then its backward's. Only forwards in a row (a pipeline's warm-up)
 * queue their all-to-alls behind each other, and their outputs wait. C: the unit's compute,
 * embedding and LM head included; C_cover: the chunk's mixture-of-experts blocks'. */
static sim_time_ps ep_overlap_lead(const plan3d *p, gboolean fwd, uint32_t vs)
{
  const chunk_cost *c = &p->cost[vs];
  uint32_t nv = p->P * p->V;
  sim_time_ps own = fwd ? c->fwd_ps : c->bwd_ps;
  if (vs == 0)
    own += fwd ? p->emb.fwd_ps : p->emb.bwd_ps;
  if (vs == nv - 1)
    own += fwd ? p->head.fwd_ps : p->head.bwd_ps;
  sim_time_ps cover = c->ep_cover_ps[fwd ? 0 : 1];
  return own > cover ? own - cover : 0;
}

/* ---- Every device (--symmetry off) --------------------------------------------------------------
 *
 * The folded plan above holds one device per stage and prices the tensor- and data-parallel
 * collectives on an idle network. Here every device of the job is a unit with its own streams
 * and the folded plan's tasks, made by the same functions (add_unit_compute: the passes with
 * the embedding's and LM head's; dp_bucket_split; update_cost; add_pipeline_deps); every
 * pipeline transfer of every replica and tensor rank is a flow; every tensor-parallel
 * collective of every pass (as tp_ops lists them), every expert-parallel all-to-all, every
 * data-parallel collective (each chunk's gradient buckets, closed by pieces of its last
 * backward as above, and the experts' share over their expert-data-parallel groups; the
 * distributed optimizer's gather; the tied embedding's allreduce) is a collective task over
 * its group's streams, run as flows on the shared topology: collectives of different groups
 * meet on the links they share. Ranks as Megatron's: device s T D + d T + r is tensor rank r
 * of replica d at stage s; its index in the stage is k = d T + r. With context parallelism the
 * replicas are D x CP (d = data-parallel replica x CP + context-parallel rank, Megatron's order)
 * and each pass adds its context-parallel exchange (add_cp_rings, add_cp_collectives). ZeRO 3
 * (FSDP) has a parameter gather before each pass as the folded plan's (one allgather of the
 * chunk's parameters over each data-parallel group, and of its experts over each
 * expert-data-parallel group, on the dp streams ahead of the pass's compute) with the gradients
 * reduce-scattered as above. A sharding group smaller than the replicas (HSDP, --shard-group)
 * splits each dense collective as sim__dp_steps does (add_dp_coll): within each sharding
 * group, and a reduce-scatter's shard allreduced across them. FSDP's per-block frameworks
 * gather each block's parameters and reduce-scatter its gradients over the sharding groups on
 * the dp streams, ordered as sim__fsdp_add_pass orders the folded plan's. Expert tensor
 * parallelism regroups the experts' collectives (add_etp_chain; the expert-data-parallel groups
 * EP x ETP apart); with --ep-overlap the all-to-alls run on an ep stream of each device
 * beside the pass's compute, a forward's on under the next unit's (ep_overlap_lead).
 * ZeRO-Offload copies each device's reduced gradient shard to the host on its dp stream, as
 * long as the folded plan's copy (a PCIe link of its own per device, as there).
 * With --tp-overlap and context parallelism the exchange of keys and values (the ring, or the
 * all-gather and a2a forms' collectives on a cp stream) stays in the pass, the tensor-parallel
 * collectives beside it, as the folded plan's block_cost has it. */
static sim_plan *build_every_device(const plan3d *p, const dev_device *dev,
                                    const comm_coll_algorithm *algo,
                                    const comm_coll_algorithm *a2a_algo,
                                    const sim_3d_metrics *metrics, GError **error)
{
  const sim_3d_opts *o = &p->o;
  /* --ep-overlap: each pass's all-to-alls on a stream of their own beside the compute
   * (ep_overlap_lead). */
  gboolean ep_ov = p->EP > 1 && o->ep_overlap;
  /* Replicas: D x CP (the context-parallel rank within the replica after the tensor rank: a
   * device's index in a stage is (d CP + c) T + r, Megatron's order). */
  uint32_t T = p->T, P = p->P, D = p->R, V = p->V, nv = P * V, n_dev = P * D * T;
  uint32_t CP = p->CP;
  gboolean ring = CP > 1 && o->cp_comm == WL_CP_P2P;
  /* The ring's blocks are tasks of their own (add_cp_ring): the passes' other compute is the
   * chunk's less their attention blocks. With --tp-overlap the folded plan puts the exchange's
   * exposed time into the passes' compute (block_cost); here the ring or the collectives are
   * that exchange, so it comes out too. */
  plan3d stripped_plan = *p;
  g_autofree chunk_cost *stripped = NULL;
  g_autofree int64_t *step_ps = NULL;
  const plan3d *pc = p;
  if (ring || (CP > 1 && o->tp_overlap)) {
    stripped = g_new(chunk_cost, nv);
    for (uint32_t vs = 0; vs < nv; vs++) {
      stripped[vs] = p->cost[vs];
      for (int pass = 0; pass < 2; pass++) {
        sim_time_ps out = (ring ? p->cpa.compute_ps[pass] : 0) +
                          (o->tp_overlap ? p->cpa.exposed_ps[pass] : 0);
        *(pass ? &stripped[vs].bwd_ps : &stripped[vs].fwd_ps) -=
            (sim_time_ps)chunk_blocks(p, vs) * out;
      }
    }
    stripped_plan.cost = stripped;
    pc = &stripped_plan;
  }
  if (ring) {
    step_ps = g_new(int64_t, (gsize)CP * CP * 2);
    for (uint32_t c = 0; c < CP; c++)
      for (uint32_t i = 0; i < CP; i++)
        sim_cp_step_ps(dev, &p->tf, &p->cp_shard, c, i, &step_ps[((size_t)c * CP + i) * 2]);
  }
  uint64_t grad_elem = grad_elem_bytes(p);
  sim_plan *plan = sim__plan_new();
  sim_graph *g = plan->graph;
  plan->devices = p->devices;
  plan->samples_per_iteration = o->global_batch;
  plan->memory_per_device_bytes = mem_total(metrics);
  gboolean tied = p->tf.tied_head && P > 1;
#define RANK(s, d, r) (((s) * D + (d)) * T + (r))
  g_autofree stage_streams *st = g_new0(stage_streams, n_dev);
  for (uint32_t s = 0; s < P; s++)
    for (uint32_t d = 0; d < D; d++)
      for (uint32_t r = 0; r < T; r++) {
        uint32_t rank = RANK(s, d, r);
        g_autofree char *name =
            CP > 1 ? g_strdup_printf("gpu%u (stage %u, replica %u, cp %u, tp %u, node %u)", rank,
                                     s, d / CP, d % CP, r, rank / p->per_node)
                   : g_strdup_printf("gpu%u (stage %u, replica %u, tp %u, node %u)", rank, s, d,
                                     r, rank / p->per_node);
        stage_streams *x = &st[rank];
        x->unit = sim__plan_add_unit(plan, SIM_PROC_DEVICE, SIM_UNIT_DEVICE, rank, name);
        x->compute = sim_graph_add_stream(g, x->unit, "compute");
        if (T > 1 || p->EP > 1 || CP > 1)
          x->tp = sim_graph_add_stream(g, x->unit, "tp");
        if (ep_ov)
          x->ep = sim_graph_add_stream(g, x->unit, "ep");
        if (p->ep_nodes)
          x->ep_nvlink = sim_graph_add_stream(g, x->unit, "ep nvlink");
        x->dp = sim_graph_add_stream(g, x->unit, "dp");
        /* The all-gather and a2a forms' collectives go on a stream of their own, in the
         * pass's order after its compute, so that --tp-overlap's collectives run beside them. */
        if (CP > 1 && !ring)
          x->cp_send = sim_graph_add_stream(g, x->unit, "cp");
        if (ring) {
          x->cp_send = sim_graph_add_stream(g, x->unit, "cp send");
          x->cp_recv = sim_graph_add_stream(g, x->unit, "cp receive");
        }
        if (P > 1) {
          x->send_f = sim_graph_add_stream(g, x->unit, "pp send activations");
          x->recv_f = sim_graph_add_stream(g, x->unit, "pp receive activations");
          x->send_b = sim_graph_add_stream(g, x->unit, "pp send gradients");
          x->recv_b = sim_graph_add_stream(g, x->unit, "pp receive gradients");
          if (tied && (s == 0 || s == P - 1))
            x->emb = sim_graph_add_stream(g, x->unit, "pp embedding gradients");
        }
      }
  plan->probe_unit = st[0].unit;
  plan->probe_compute = st[0].compute;

  /* Per (device of a stage, micro-batch, virtual stage); a stage has D T devices. */
  uint32_t per_stage = D * T;
  uint64_t slots = (uint64_t)per_stage * p->m * nv;
#define SLOT(k, mb, vs) (((uint64_t)(k) * p->m + (mb)) * nv + (vs))
  g_autofree sim_task_id *f_end = g_new(sim_task_id, slots);
  g_autofree sim_task_id *f_send = g_new(sim_task_id, slots);
  g_autofree sim_task_id *b_send = g_new(sim_task_id, slots);
  g_autofree sim_task_id *f_start = g_new(sim_task_id, slots);
  g_autofree sim_task_id *b_start = g_new(sim_task_id, slots);
  g_autofree sim_task_id *last_task = g_new(sim_task_id, n_dev);
  g_autofree gboolean *has_last = g_new0(gboolean, n_dev);
  g_autofree sim_task_id *prev = g_new(sim_task_id, per_stage);
  g_autofree sim_task_id *comp = g_new(sim_task_id, per_stage);
  g_autofree sim_task_id *cur = g_new(sim_task_id, per_stage);
  g_autofree sim_task_id *ring_end = g_new(sim_task_id, per_stage);
  /* --ep-overlap: each device's start of the pass, and its all-to-alls' streams and start. */
  g_autofree sim_task_id *pass_start = g_new(sim_task_id, per_stage);
  g_autofree sim_stream_id *ep_members = g_new(sim_stream_id, per_stage);
  g_autofree sim_task_id *ep_after = g_new(sim_task_id, per_stage);
  g_autofree sim_task_id *ep_end = g_new(sim_task_id, per_stage);   /* a forward's output */
  /* Per device of the stage: the pieces of its last backward of a chunk that close buckets. */
  g_autofree sim_task_id *piece_end = g_new(sim_task_id, (gsize)per_stage * MAX_BUCKETS);
  g_autofree sim_task_id *upd_task = g_new(sim_task_id, n_dev);
  g_autofree sim_task_id *lastb_task = g_new(sim_task_id, n_dev);
  /* Expert parallelism: the stage's devices in blocks of EB = EP x ETP consecutive k; in a
   * block the EP devices of each expert tensor rank (ETP apart) make an all-to-all group, and
   * the ETP consecutive devices of each expert an expert-tensor-parallel group (Megatron-Core's
   * expert order: expert tensor rank fastest); EB expert-data-parallel groups (k = e + q EB)
   * of ep_size for the experts' gradients; none of these without expert parallelism or with
   * one device a group. */
  uint32_t EP = p->EP, ETP = p->ETP, EB = EP * ETP, ep_size = D * T / EB;
  uint32_t n_ep_groups = EP > 1 && ep_size > 1 ? EB : 0;
  uint32_t n_grp = T + n_ep_groups;
  g_autofree sim_stream_id *members = g_new(sim_stream_id, (gsize)T * D);
  g_autofree sim_stream_id *tp_members = g_new(sim_stream_id, (gsize)D * T);
  /* Group-limited routing over nodes: each device's NVLink-part stream, and scratch. */
  g_autofree sim_stream_id *nv_members = g_new(sim_stream_id, (gsize)D * T);
  g_autofree sim_task_id *nl_after = g_new(sim_task_id, (gsize)D * T);
  g_autofree sim_task_id *ex_last = g_new(sim_task_id, per_stage);
  /* ZeRO 3 and FSDP: each device's parameter gather, dense [k] and experts' [per_stage + k];
   * whether group grp made one. */
  g_autofree sim_task_id *gdone = g_new(sim_task_id, (gsize)2 * per_stage);
  g_autofree gboolean *gmade = g_new0(gboolean, n_grp);
  /* FSDP: the devices' block tasks of a pass (nb of each device), and each device's last
   * per-block reduction. */
  gboolean per_block = sim__3d_per_block(o, p->fw, p->G);
  gboolean block_reduce_on = per_block && p->fw->reduce_per_block;
  g_autofree sim_task_id *blocks = per_block ? g_new(sim_task_id, (gsize)per_stage *
                                                                   MAX(most_blocks_of(p), 1u))
                                             : NULL;
  /* Gradients leave the device after backward: reduced over the replicas, or copied to the
   * host (ZeRO-Offload, also without replicas). */
  gboolean dp_on = D > 1 || o->offload != SIM_OFFLOAD_NONE;
  uint64_t xfer_bytes = p->mb * (p->tf.seq / p->CP) * (uint64_t)p->tf.hidden * p->act_elem_bytes / T;
  uint64_t tp_bytes = p->mb * (p->tf.seq / p->CP) * (uint64_t)p->tf.hidden * p->act_elem_bytes;
  g_autoptr(GPtrArray) orders = g_ptr_array_new_with_free_func(free_array);
  for (uint32_t s = 0; s < P; s++)
    g_ptr_array_add(orders, schedule_units(p, s));
  g_autofree const char **name_table = g_new0(const char *, (size_t)NAME_KINDS * 2 * p->m * V);
  unit_names names = {g, (uint32_t)p->m, V, (size_t)2 * p->m * V, name_table};
  int reduce_op = o->zero ? SIM_OP_REDUCE_SCATTER : SIM_OP_ALLREDUCE;
  const char *reduce_name = o->zero ? "reduce-scatter" : "allreduce";
  unsigned tp_count_b = o->recompute == WL_RECOMPUTE_FULL ? 4 : 2;
  /* The tensor-parallel operations of a pass (tp_ops): at most tp_count_b per block and one. */
  g_autofree int *ops = g_new(int, (gsize)tp_count_b * most_blocks_of(p) + 2 + p->tf.mtp);

  for (uint32_t it = 0; it < o->iterations; it++) {
    for (uint32_t s = 0; s < P; s++) {
      GArray *order = g_ptr_array_index(orders, s);
      gboolean has_prev = has_last[RANK(s, 0, 0)];
      for (uint32_t d = 0; d < D; d++)
        for (uint32_t r = 0; r < T; r++) {
          prev[d * T + r] = last_task[RANK(s, d, r)];
          /* Tensor-parallel groups by replica: tp_members[d T + r] (data-parallel groups are
           * made where they are used). */
          tp_members[d * T + r] = st[RANK(s, d, r)].tp;
          nv_members[d * T + r] = st[RANK(s, d, r)].ep_nvlink;
        }
      g_autofree uint32_t *last_b = chunk_last_backward(p, order);
      /* Each device's last task of each chunk's gradients, [(chunk 2 + experts) per_stage + k],
       * and without overlap the gate of each chunk's reduction per group, which waits for the
       * members' whole backward. */
      g_autofree sim_task_id *dp_done = g_new(sim_task_id, (gsize)V * 2 * per_stage);
      g_autofree gboolean *dp_made = g_new0(gboolean, (gsize)V * 2);
      g_autofree sim_task_id *dp_gate = g_new0(sim_task_id, (gsize)V * n_grp);
      for (guint i = 0; i < order->len; i++) {
        const unit *x = &g_array_index(order, unit, i);
        uint32_t vs = x->chunk * P + s;
        size_t at = unit_at(&names, x);
        uint32_t nb = MAX(p->n_blocks[vs], 1u);   /* FSDP units: a chunk without blocks is one */
        /* The last backward of a chunk closes its gradient buckets one after the other, as
         * in the folded plan (dp_bucket_split); FSDP's per-block reductions replace them. */
        gboolean last_backward = !x->fwd && i == last_b[x->chunk];
        gboolean buckets = last_backward && o->overlap && dp_on && !block_reduce_on;
        uint32_t n_buckets = 1;
        uint64_t bucket_bytes = 0;
        if (buckets)
          dp_bucket_split(p, vs, grad_elem, &n_buckets, &bucket_bytes);
        /* ZeRO 3: the pass's parameters gathered over each data-parallel group (its sharding
         * groups with HSDP; the experts' over each expert-data-parallel one) on the dp
         * streams, prefetched: each runs once the stream's previous collective is done. */
        if (o->zero >= 3 && !per_block)
          for (uint32_t grp = 0; grp < n_grp; grp++) {
            uint64_t bytes;
            dp_group(p, st, s, grp, vs, grad_elem, members, &bytes);
            char name[64];
            g_snprintf(name, sizeof name, "allgather %sparams c%u", grp >= T ? "expert " : "",
                       x->chunk);
            gmade[grp] = add_dp_coll(g, p, st, s, grp, SIM_OP_ALLGATHER, bytes, algo, name, NULL,
                                     0, 0, 0, members, &gdone[grp >= T ? per_stage : 0]) > 0;
          }
        /* The p2p ring's attention blocks, group by group: first in the pass (they start it),
         * or after its other kernels in a backward whose pieces close gradient buckets (so
         * that the buckets' reductions overlap the ring, as they overlap the whole pass in the
         * folded plan). */
        gboolean ring_first = ring && !buckets;
        if (ring_first)
          add_cp_rings(g, p, st, s, x, at, &names, has_prev, prev, step_ps, f_start, b_start,
                       ring_end);
        for (uint32_t k = 0; k < per_stage; k++) {
          uint32_t d = k / T, r = k % T;
          sim_task_id first = 0;
          sim_task_id *pieces = per_block ? &blocks[(gsize)k * nb]
                                : buckets ? &piece_end[(gsize)k * MAX_BUCKETS] : NULL;
          add_unit_compute(pc, g, st[RANK(s, d, r)].compute, &names, x, at, vs,
                           per_block ? nb : buckets ? n_buckets : 1, pieces, &first, &comp[k]);
          if (ep_ov) {
            /* The pass's start, from which its all-to-alls are timed: what the pass waits for
             * (its inputs, the previous pass, gathers) comes to this mark, the compute after. */
            sim_task_id mark = sim_graph_add_delay(g, unit_name(&names, NAME_PASS, at), 0);
            sim_graph_depend(g, first, mark);
            first = pass_start[k] = mark;
            ep_members[k] = st[RANK(s, d, r)].ep;
          }
          if (o->zero >= 3 && !per_block) {
            if (gmade[k % T])
              sim_graph_depend(g, first, gdone[k]);
            if (n_ep_groups && gmade[T + k % EB])
              sim_graph_depend(g, first, gdone[per_stage + k]);
          }
          /* FSDP in a backward whose buckets close at block ends: bucket j closes with the
           * block that ends its share, as in the folded plan. */
          for (uint32_t j = 0; per_block && buckets && j < n_buckets; j++)
            piece_end[(gsize)k * MAX_BUCKETS + j] =
                blocks[(gsize)k * nb + ((uint64_t)(j + 1) * nb + n_buckets - 1) / n_buckets - 1];
          if (ring_first) {
            sim_graph_depend(g, first, ring_end[k]);
          } else {
            if (has_prev)
              sim_graph_depend(g, first, prev[k]);
            (x->fwd ? f_start : b_start)[SLOT(k, x->mb, vs)] = first;
          }
          cur[k] = comp[k];
        }
        /* FSDP: each block's parameters gathered over the sharding groups (its experts' over
         * their expert-data-parallel groups) before it runs, prefetch blocks ahead (not before
         * block j - 1 - prefetch has freed its buffer), and each block's gradients
         * reduce-scattered (and with HSDP allreduced across the sharding groups) after it, on
         * the dp streams in the order sim__fsdp_add_pass puts them. */
        if (per_block) {
          uint64_t block_elems[2];
          block_params(p, vs, &block_elems[0], &block_elems[1]);
          gboolean gathers = x->fwd || (o->zero >= 3 && p->fw->reshard_after_forward);
          gboolean reduces = !x->fwd && block_reduce_on;
          uint32_t pf = p->fw->prefetch_blocks, ahead = MIN(nb, pf + 1);
          char gname[48], rname[48];
          g_snprintf(gname, sizeof gname, "allgather params c%u block", x->chunk);
          g_snprintf(rname, sizeof rname, "reduce-scatter grads c%u block", x->chunk);
          for (uint32_t j = 0; j < nb + ahead; j++) {
            /* Gather j (the first `ahead` at once, then one as each block ends), then block
             * j - ahead's reduction. */
            for (uint32_t grp = 0; gathers && j < nb && grp < n_grp; grp++) {
              gboolean ex = grp >= T;
              uint32_t first = ex ? grp - T : grp, stride = ex ? EB : T;
              if (!add_dp_coll(g, p, st, s, grp, SIM_OP_ALLGATHER,
                               block_elems[ex] * param_elem_bytes(p), algo, gname,
                               j >= pf + 1 ? &blocks[j - 1 - pf] : NULL, nb, 0, 0, members,
                               &gdone[ex ? per_stage : 0]))
                continue;
              for (uint32_t k = first; k < per_stage; k += stride)
                sim_graph_depend(g, blocks[(gsize)k * nb + j], gdone[(ex ? per_stage : 0) + k]);
            }
            if (reduces && j >= ahead) {
              uint32_t rj = j - ahead;
              gboolean closes = rj + 1 == nb && last_backward;
              sim_task_id gate = closes && !o->overlap ? sim_graph_add_delay(g, rname, 0) : 0;
              for (uint32_t grp = 0; grp < n_grp; grp++) {
                gboolean ex = grp >= T;
                uint64_t bytes = block_elems[ex] * grad_elem;
                if (gate)
                  dp_gate[(gsize)x->chunk * n_grp + grp] = gate;
                if (add_dp_coll(g, p, st, s, grp, SIM_OP_REDUCE_SCATTER, bytes, algo, rname,
                                &blocks[rj], nb, gate, ex ? 0 : grad_to_host_ps(p, bytes),
                                members, &dp_done[((gsize)x->chunk * 2 + ex) * per_stage]) &&
                    closes)
                  dp_made[x->chunk * 2 + ex] = TRUE;
              }
            }
          }
        }
        if (ring && !ring_first) {
          add_cp_rings(g, p, st, s, x, at, &names, TRUE, comp, step_ps, NULL, NULL, ring_end);
          for (uint32_t k = 0; k < per_stage; k++)
            comp[k] = cur[k] = ring_end[k];
        }
        /* The all-gather and a2a forms: their collectives over each context-parallel group
         * after the pass's compute, block by block, as sim/cp.c prices them. */
        if (CP > 1 && !ring)
          add_cp_collectives(g, p, st, s * per_stage, D / CP, x->fwd, chunk_blocks(p, vs), algo,
                             a2a_algo, comp, cur);
        /* Tensor-parallel collectives of the pass, group by group: after the compute, or
         * beside it (--tp-overlap: from the pass's start, the pass ending when both have). */
        /* Per block (a multi-token-prediction module's among them) and for the embedding
         * (forward) and head (backward), the modules' own included. */
        unsigned count = x->fwd ? 2 * chunk_blocks(p, vs) + (vs == 0) + chunk_mtp(p, vs)
                                : tp_count_b * chunk_blocks(p, vs) + (vs == nv - 1) +
                                      chunk_mtp(p, vs);
        uint32_t n_ops = tp_ops(p, count, ops);
        /* The first collective of each group after its members' compute (or, with
         * --tp-overlap, after their previous pass). */
        const sim_task_id *after = o->tp_overlap ? prev : comp;
        gboolean has_after = !o->tp_overlap || has_prev;
        for (uint32_t d = 0; d < D && n_ops > 0; d++) {
          sim_task_id c = add_coll_chain(g, tp_members, d * T, T, ops, 0, n_ops,
                                         unit_name(&names, NAME_TP, at), algo, tp_bytes, after,
                                         has_after);
          pass_end(g, unit_name(&names, NAME_END, at), o->tp_overlap, d * T, T, comp, c, cur);
        }
        /* Expert parallelism: the dispatch and combine all-to-alls of the chunk's
         * mixture-of-experts blocks (as block_cost prices them) over each all-to-all group of
         * the stage, on the tp stream after the pass's tensor-parallel collectives. */
        uint32_t n_a2a = EP < 2 ? 0 : chunk_moe_blocks(p, vs) * (x->fwd ? 2 : tp_count_b);
        for (uint32_t e = 0; !ep_ov && p->ep_nodes && e < D * T / EP && n_a2a > 0; e++) {
          add_node_limited_chain(g, p, tp_members, nv_members, e * EP, n_a2a,
                                 unit_name(&names, NAME_EP, at), a2a_algo,
                                 o->tp_overlap ? prev : cur, has_after, members, nl_after,
                                 ex_last);
          for (uint32_t k = e * EP; k < (e + 1) * EP; k++)
            pass_end(g, unit_name(&names, NAME_END, at), o->tp_overlap, k, 1, comp, ex_last[k],
                     cur);
        }
        for (uint32_t e = 0; !ep_ov && !p->ep_nodes && ETP == 1 && e < D * T / EP && n_a2a > 0;
             e++) {
          sim_task_id c = add_coll_chain(g, tp_members, e * EP, EP, NULL, SIM_OP_ALLTOALL, n_a2a,
                                         unit_name(&names, NAME_EP, at), a2a_algo, ep_bytes(p),
                                         o->tp_overlap ? prev : cur, has_after);
          pass_end(g, unit_name(&names, NAME_END, at), o->tp_overlap, e * EP, EP, comp, c, cur);
        }
        /* With expert tensor parallelism each block's dispatch all-to-all, the expert
         * tensor-parallel all-gather of the tokens and reduce-scatter of the outputs (etp_time),
         * and the combine all-to-all, group by group in that order on every device. */
        if (ETP > 1 && n_a2a > 0) {
          add_etp_chain(g, p, tp_members, n_a2a / 2, !ep_ov, unit_name(&names, NAME_EP, at),
                        algo, a2a_algo, o->tp_overlap ? prev : cur, has_after, members,
                        ex_last);
          for (uint32_t k = 0; k < per_stage; k++)
            pass_end(g, unit_name(&names, NAME_END, at), o->tp_overlap, k, 1, comp, ex_last[k],
                     cur);
        }
        /* --ep-overlap: the all-to-alls on the ep streams of each all-to-all group (as
         * add_etp_chain groups them), from ep_overlap_lead after the pass's start, the pass
         * ending when both they and its compute and collectives are done. */
        for (uint32_t grp = 0; ep_ov && grp < D * T / EP && n_a2a > 0; grp++) {
          uint32_t base = grp / ETP * EB + grp % ETP;
          sim_task_id lead = sim_graph_add_delay(g, unit_name(&names, NAME_EP, at),
                                                 ep_overlap_lead(pc, x->fwd, vs));
          for (uint32_t q = 0; q < EP; q++) {
            sim_graph_depend(g, lead, pass_start[base + q * ETP]);
            members[q] = ep_members[base + q * ETP];
            ep_after[q] = lead;
            nl_after[base + q * ETP] = lead;
          }
          sim_task_id c = 0;
          if (p->ep_nodes)
            add_node_limited_chain(g, p, ep_members, nv_members, base, n_a2a,
                                   unit_name(&names, NAME_EP, at), a2a_algo, nl_after, TRUE,
                                   members, ep_after, ex_last);
          else
            c = add_coll_chain(g, members, 0, EP, NULL, SIM_OP_ALLTOALL, n_a2a,
                               unit_name(&names, NAME_EP, at), a2a_algo, ep_bytes(p), ep_after,
                               TRUE);
          for (uint32_t q = 0; q < EP; q++) {
            uint32_t k = base + q * ETP;
            sim_task_id end = sim_graph_add_delay(g, unit_name(&names, NAME_END, at), 0);
            sim_graph_depend(g, end, cur[k]);
            sim_graph_depend(g, end, p->ep_nodes ? ex_last[k] : c);
            if (!x->fwd) {
              cur[k] = end;
              continue;
            }
            /* A forward's all-to-alls run on under the next unit's compute (the backward of
             * an earlier micro-batch, schedule_ahead): only its output (the send, its own
             * backward) waits for them; the next unit waits for what the folded plan shows
             * of them after the compute. */
            ep_end[k] = end;
            sim_time_ps shown = ep_shown_ps(&pc->cost[vs], 0);
            if (shown > 0) {
              sim_task_id t = sim_graph_add_delay(g, unit_name(&names, NAME_EP, at), shown);
              sim_graph_depend(g, t, cur[k]);
              cur[k] = t;
            }
          }
        }
        gboolean fwd_a2a = ep_ov && x->fwd && n_a2a > 0;
        for (uint32_t k = 0; k < per_stage; k++)
          add_unit_send(g, p, st, per_stage, k, x, vs, unit_name(&names, NAME_SEND, at),
                        xfer_bytes, fwd_a2a ? ep_end[k] : cur[k], SLOT(k, x->mb, vs), f_end,
                        f_send, b_send);
        if (last_backward && dp_on && !block_reduce_on) {
          /* The chunk's gradients over the replicas, one group per tensor rank (devices
           * k = r + q T; with HSDP its sharding groups, then across them), then the experts'
           * over their expert-data-parallel groups (k = e + q EB), as dp_buckets and
           * expert_dp_time price them: with overlap bucket j after the piece of every
           * member's backward that closes it, each group's share of the experts' gradients
           * after each bucket; without, at once after the backward (a gate that waits for the
           * members' whole backward, below). ZeRO-Offload copies each reduced shard of the
           * dense gradients to the host. */
          uint64_t experts = chunk_expert_params(p, vs) * grad_elem;
          uint64_t dense = (chunk_params(p, vs) - chunk_expert_params(p, vs)) * grad_elem;
          uint32_t n = buckets ? n_buckets : 1;
          /* Bucket by bucket, so that each device's dp stream runs bucket j's dense and expert
           * parts before bucket j + 1's. */
          for (uint32_t j = 0; j < n; j++)
            for (uint32_t grp = 0; grp < n_grp; grp++) {
              gboolean ex = grp >= T;
              uint64_t bytes = ex ? (experts + n - 1) / n : buckets ? bucket_bytes : dense;
              char name[64];
              if (buckets)
                g_snprintf(name, sizeof name, "%s %sgrads c%u bucket %u", reduce_name,
                           ex ? "expert " : "", x->chunk, j);
              else
                g_snprintf(name, sizeof name, "%s %sgrads c%u", reduce_name, ex ? "expert " : "",
                           x->chunk);
              sim_task_id gate = 0;
              if (!buckets)
                gate = dp_gate[(gsize)x->chunk * n_grp + grp] = sim_graph_add_delay(g, name, 0);
              if (add_dp_coll(g, p, st, s, grp, reduce_op, bytes, algo, name,
                              buckets ? &piece_end[j] : NULL, MAX_BUCKETS, gate,
                              ex ? 0 : grad_to_host_ps(p, bytes), members,
                              &dp_done[((gsize)x->chunk * 2 + ex) * per_stage]))
                dp_made[x->chunk * 2 + ex] = TRUE;
            }
        }
        for (uint32_t k = 0; k < per_stage; k++)
          prev[k] = cur[k];
        has_prev = TRUE;
      }
      /* Without overlap the reductions wait for the whole backward. */
      for (uint32_t c = 0; c < V && !o->overlap && dp_on; c++)
        for (uint32_t k = 0; k < per_stage; k++) {
          sim_task_id gate = dp_gate[(gsize)c * n_grp + k % T];
          if (gate)
            sim_graph_depend(g, gate, prev[k]);
          if (n_ep_groups && (gate = dp_gate[(gsize)c * n_grp + T + k % EB]))
            sim_graph_depend(g, gate, prev[k]);
        }
      wl_op_cost upd = update_cost(p, s);
      sim_time_ps upd_ps = update_ps(p, dev, &upd);
      for (uint32_t k = 0; k < per_stage; k++) {
        uint32_t rank = RANK(s, k / T, k % T);
        sim_task_id u = sim_graph_add_compute(g, st[rank].compute, "optimizer", "update", upd_ps,
                                              upd.flops, 0);
        sim_graph_depend(g, u, prev[k]);
        for (uint32_t c = 0; c < V; c++)
          for (int ex = 0; ex < 2; ex++)
            if (dp_made[c * 2 + ex])
              sim_graph_depend(g, u, dp_done[((gsize)c * 2 + ex) * per_stage + k]);
        upd_task[rank] = u;
        lastb_task[rank] = prev[k];
        last_task[rank] = u;
        has_last[rank] = TRUE;
      }
      if (o->zero >= 1 && o->zero < 3 && D > 1 && !per_block) {
        /* Distributed optimizer: the updated parameters gathered over the replicas (their
         * sharding groups with HSDP; the experts' over their expert-data-parallel groups),
         * groups as in the reduction. */
        for (uint32_t c = 0; c < V; c++)
          for (uint32_t grp = 0; grp < n_grp; grp++) {
            gboolean ex = grp >= T;
            uint64_t bytes;
            dp_group(p, st, s, grp, c * P + s, grad_elem, members, &bytes);
            if (add_dp_coll(g, p, st, s, grp, SIM_OP_ALLGATHER, bytes, algo,
                            ex ? "allgather expert params" : "allgather params",
                            &upd_task[s * per_stage], 1, 0, 0, members, gdone) &&
                !o->overlap) {
              uint32_t first = ex ? grp - T : grp, stride = ex ? EB : T;
              for (uint32_t q = first; q < per_stage; q += stride)
                last_task[s * per_stage + q] = gdone[q];
            }
          }
      }
      if (s == 0)
        g_array_append_val(plan->iteration_end, last_task[0]);
      if (it == 0 && s == 0) {
        /* Room for every iteration, from the first stage's tasks, members and dependencies:
         * the other stages have as many (the first stage's embedding passes and collectives
         * are the last one's LM head's), and each iteration adds at most one pipeline
         * dependency per unit, the tied embeddings' allreduces and a dependency per device on
         * its previous iteration. A hint: arrays that are still outgrown double as before. */
        uint64_t its = o->iterations, units = (uint64_t)n_dev * order->len;
        sim_graph_reserve(g, its * ((uint64_t)P * sim_graph_n_tasks(g) + per_stage),
                          its * ((uint64_t)P * sim_graph_n_edges(g) + units + 4 * per_stage +
                                 n_dev));
        sim_graph_reserve_members(g, its * P * sim_graph_n_members(g));
      }
    }
    if (tied) {
      uint64_t bytes = (uint64_t)p->tf.vocab * p->tf.hidden / T * grad_elem;
      for (uint32_t d = 0; d < D; d++)
        for (uint32_t r = 0; r < T; r++) {
          uint32_t a = RANK(0, d, r), b = RANK(P - 1, d, r);
          sim_stream_id pair[2] = {st[a].emb, st[b].emb};
          sim_task_id e = sim_graph_add_collective(g, pair, 2, "allreduce embedding grads",
                                                   SIM_OP_ALLREDUCE, algo, bytes);
          sim_graph_depend(g, e, lastb_task[a]);
          sim_graph_depend(g, e, lastb_task[b]);
          sim_graph_depend(g, upd_task[a], e);
          sim_graph_depend(g, upd_task[b], e);
        }
    }
    add_pipeline_deps(g, p, orders, per_stage, p->m * nv, f_start, b_start, f_end, f_send,
                      b_send);
    if (it == 0 && o->iterations > 1) {
      /* Every iteration adds the first one's tasks, collective members and dependencies (and
       * one more dependency per device, on its previous iteration): room for all of them
       * now, so that the arrays are not doubled and copied again (GPT-3 175B on 16384 GPUs
       * holds 82 million tasks; a doubling of its task records asked for 6 GiB more). */
      uint64_t its = o->iterations;
      sim_graph_reserve(g, its * sim_graph_n_tasks(g),
                        its * (sim_graph_n_edges(g) + n_dev));
      sim_graph_reserve_members(g, its * sim_graph_n_members(g));
    }
  }
#undef SLOT
#undef RANK
  return plan;
}

sim_plan *sim_3d_build(const sim_3d_opts *o, const comm_topology *topo,
                       comm_net_model net_model, const char *device, const char *calibration,
                       double *reduce_Bps, sim_3d_metrics *metrics, GError **error)
{
  g_autoptr(dev_device) dev = dev_device_load(device, calibration, error);
  if (!dev)
    return NULL;
  g_autoptr(plan3d) p = g_new0(plan3d, 1);
  if (!validate(p, o, topo, dev, error))
    return NULL;
  o = &p->o;   /* with the defaults filled in */
  *reduce_Bps = dev_stream_Bps(dev) / 3.0;
  g_autoptr(sim_coll_timer) ct = sim_coll_timer_new(topo, net_model, o->allreduce, *reduce_Bps,
                                                     error);
  if (!ct)
    return NULL;
  if (!chunk_costs(dev, ct, p, error))
    return NULL;

  plan_memory(p, metrics);
  metrics->micro_batch = p->mb;
  metrics->has_cp = p->CP > 1;
  metrics->has_capacity = o->moe_capacity > 0 && p->tf.experts;
  /* Routed copies over capacity: the fraction of the iteration's tokens x topk in each of the
   * mixture-of-experts blocks. */
  metrics->tokens_dropped = p->dropped * (double)o->global_batch * p->tf.seq * p->tf.topk *
                            (p->tf.layers - wl_tf_dense_blocks(&p->tf));
  metrics->global_batch = o->global_batch;
  metrics->seq = p->tf.seq;
  metrics->peak_flops = dev_peak_flops(dev, o->precision);
  metrics->capacity_bytes = dev_memory_bytes(dev);
  metrics->model_flops = wl_tf_iteration_flops(&p->tf, o->global_batch, p->tf.seq,
                                               WL_RECOMPUTE_NONE);
  if (o->every_device)
    return build_every_device(p, dev, sim_coll_timer_algorithm(ct),
                              sim_coll_timer_algorithm_for(ct, COMM_COLL_ALLTOALL), metrics, error);

  /* Data-parallel collectives of one chunk's gradients (or parameters): the T groups of a
   * stage, ranks s T D + d T + r, run at once. */
  uint64_t grad_elem = grad_elem_bytes(p);
  uint32_t nv = p->P * p->V;
  g_autofree sim_time_ps *dp_reduce = g_new0(sim_time_ps, nv);
  g_autofree sim_time_ps *dp_gather = g_new0(sim_time_ps, nv);
  g_autofree uint32_t *n_buckets = g_new0(uint32_t, nv);
  g_autofree sim_time_ps *bucket_ps = g_new0(sim_time_ps, nv);
  /* Gradients leave the device after backward: reduced over data parallelism, or copied to
   * the host (ZeRO-Offload, also on one device). */
  gboolean dp_on = p->R > 1 || o->offload != SIM_OFFLOAD_NONE;
  for (uint32_t vs = 0; vs < nv && o->overlap && dp_on; vs++)
    if (!dp_buckets(ct, p, vs, grad_elem, &n_buckets[vs], &bucket_ps[vs], error))
      return NULL;
  /* FSDP: each block's gather and reduction (sim__fsdp_add_pass). */
  gboolean per_block = sim__3d_per_block(o, p->fw, p->G);
  g_autofree sim_time_ps *block_gather = g_new0(sim_time_ps, nv);
  g_autofree sim_time_ps *block_reduce = g_new0(sim_time_ps, nv);
  for (uint32_t vs = 0; vs < nv && per_block; vs++) {
    /* A block's dense parameters over the sharding group, its experts (with expert
     * parallelism) over their expert-data-parallel group, one after the other. */
    uint64_t params, experts;
    block_params(p, vs, &params, &experts);
    sim_time_ps eg = 0, er = 0;
    if (!sim__dp_coll_time(ct, COMM_COLL_ALLGATHER, p->R, p->T, p->G,
                           params * param_elem_bytes(p), &block_gather[vs], error) ||
        !sim__dp_coll_time(ct, COMM_COLL_REDUCE_SCATTER, p->R, p->T, p->G, params * grad_elem,
                           &block_reduce[vs], error) ||
        !expert_dp_time(ct, p, COMM_COLL_ALLGATHER, experts * param_elem_bytes(p), &eg, error) ||
        !expert_dp_time(ct, p, COMM_COLL_REDUCE_SCATTER, experts * grad_elem, &er, error))
      return NULL;
    block_gather[vs] += eg;
    block_reduce[vs] += grad_to_host_ps(p, params * grad_elem) + er;
  }
  for (uint32_t vs = 0; vs < nv; vs++) {
    uint64_t experts = chunk_expert_params(p, vs);
    uint64_t bytes = (chunk_params(p, vs) - experts) * grad_elem;
    if (o->zero == 0) {
      if (!sim_coll_timer_time(ct, COMM_COLL_ALLREDUCE, 0, p->R, p->T, p->T, 1, bytes, &dp_reduce[vs],
                     error))
        return NULL;
    } else if (!sim__dp_coll_time(ct, COMM_COLL_REDUCE_SCATTER, p->R, p->T, p->G, bytes,
                                  &dp_reduce[vs], error) ||
               !sim__dp_coll_time(ct, COMM_COLL_ALLGATHER, p->R, p->T, p->G,
                                  bytes / grad_elem * param_elem_bytes(p), &dp_gather[vs],
                                  error)) {
      return NULL;
    }
    dp_reduce[vs] += grad_to_host_ps(p, bytes);
    /* The experts' gradients over their expert-data-parallel group, after the others. */
    sim_time_ps er = 0, eg = 0;
    if (!expert_dp_time(ct, p, o->zero ? COMM_COLL_REDUCE_SCATTER : COMM_COLL_ALLREDUCE,
                        experts * grad_elem, &er, error) ||
        (o->zero && !expert_dp_time(ct, p, COMM_COLL_ALLGATHER, experts * grad_elem, &eg,
                                    error)))
      return NULL;
    dp_reduce[vs] += er, dp_gather[vs] += eg;
    bucket_ps[vs] += n_buckets[vs] ? er / n_buckets[vs] : 0;
  }

  sim_plan *plan = sim__plan_new();
  sim_graph *g = plan->graph;
  plan->devices = p->devices;
  plan->samples_per_iteration = o->global_batch;
  plan->memory_per_device_bytes = mem_total(metrics);
  g_autofree stage_streams *st = g_new0(stage_streams, p->P);
  /* --ep-overlap: each pass's all-to-alls also on an ep stream beside the compute, timed as on
   * every device (ep_overlap_lead), for what waits for them there. */
  gboolean ep_ov = p->EP > 1 && o->ep_overlap;
  /* A tied LM head is a copy of the embedding on the last stage: Megatron allreduces the two
   * copies' gradients between the first and the last stage before the step. */
  gboolean tied = p->tf.tied_head && p->P > 1;
  g_autofree sim_task_id *upd_task = g_new0(sim_task_id, p->P);
  g_autofree sim_task_id *lastb_task = g_new0(sim_task_id, p->P);
  for (uint32_t s = 0; s < p->P; s++) {
    uint32_t rank = s * p->T * p->R;
    g_autofree char *name = g_strdup_printf("gpu%u (stage %u, node %u)", rank, s,
                                            rank / p->per_node);
    st[s].unit = sim__plan_add_unit(plan, SIM_PROC_DEVICE, SIM_UNIT_DEVICE, rank, name);
    st[s].compute = sim_graph_add_stream(g, st[s].unit, "compute");
    st[s].tp = sim_graph_add_stream(g, st[s].unit, "tp");
    st[s].dp = sim_graph_add_stream(g, st[s].unit, "dp");
    if (ep_ov)
      st[s].ep = sim_graph_add_stream(g, st[s].unit, "ep");
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
  g_autofree sim_task_id *f_send = g_new(sim_task_id, slots);
  g_autofree sim_task_id *b_send = g_new(sim_task_id, slots);
  g_autofree sim_task_id *f_start = g_new(sim_task_id, slots);
  g_autofree sim_task_id *b_start = g_new(sim_task_id, slots);
  g_autofree sim_task_id *last_task = g_new(sim_task_id, p->P);
  g_autofree gboolean *has_last = g_new0(gboolean, p->P);
  uint64_t xfer_bytes = p->mb * (p->tf.seq / p->CP) * (uint64_t)p->tf.hidden * p->act_elem_bytes / p->T;
  g_autoptr(GPtrArray) orders = g_ptr_array_new_with_free_func(free_array);
  for (uint32_t s = 0; s < p->P; s++)
    g_ptr_array_add(orders, schedule_units(p, s));
  g_autofree const char **name_table = g_new0(const char *, (size_t)NAME_KINDS * 2 * p->m * p->V);
  unit_names names = {g, p->m, p->V, (size_t)2 * p->m * p->V, name_table};
  /* Room for the whole graph at once. */
  uint64_t deps;
  uint64_t tasks = graph_size(p, &deps);
  sim_graph_reserve(g, tasks, deps);

  for (uint32_t it = 0; it < o->iterations; it++) {
    for (uint32_t s = 0; s < p->P; s++) {
      GArray *order = g_ptr_array_index(orders, s);
      sim_task_id prev = 0;
      gboolean has_prev = has_last[s];
      if (has_prev)
        prev = last_task[s];
      g_autofree uint32_t *last_b = chunk_last_backward(p, order);
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
        if (o->zero >= 3 && !per_block) {
          /* ZeRO-3: gather the chunk's parameters before each pass, prefetched on the dp
           * stream (it runs as soon as the previous gather is done). */
          g_snprintf(name, sizeof name, "allgather params c%u", x->chunk);
          sim_time_ps d = dp_gather[vs];
          gather = sim_graph_add_compute(g, st[s].dp, name, "dp", d, 0, 0);
          has_gather = TRUE;
        }
        sim_task_id c = 0, c_last = 0;
        /* The last backward of a chunk closes its gradient buckets one after the other. */
        gboolean block_reduce_on = per_block && p->fw->reduce_per_block;
        gboolean buckets = !x->fwd && i == last_b[x->chunk] && o->overlap && dp_on &&
                           !block_reduce_on;
        sim_task_id piece_end[MAX_BUCKETS];
        /* FSDP runs the chunk block by block; a bucket then closes at the end of a block. */
        uint32_t nb = MAX(p->n_blocks[vs], 1u);   /* FSDP units: a chunk without blocks is one */
        g_autofree sim_task_id *blocks = per_block ? g_new(sim_task_id, MAX(nb, 1u)) : NULL;
        add_unit_compute(p, g, st[s].compute, &names, x, at, vs,
                         per_block ? nb : buckets ? n_buckets[vs] : 1,
                         per_block ? blocks : buckets ? piece_end : NULL, &c, &c_last);
        if (per_block) {
          gboolean gathers = x->fwd || (o->zero >= 3 && p->fw->reshard_after_forward);
          sim_fsdp_pass fp = {.comm = st[s].dp, .pieces = blocks, .n = nb,
                              .gather_ps = gathers ? block_gather[vs] : 0,
                              .reduce_ps = !x->fwd && block_reduce_on ? block_reduce[vs] : 0,
                              .prefetch = p->fw->prefetch_blocks, .chunk = x->chunk};
          sim_task_id r = sim__fsdp_add_pass(g, &fp);
          if (r)
            dp_tasks[x->chunk] = r;
          for (uint32_t j = 0; buckets && j < n_buckets[vs]; j++)
            piece_end[j] = blocks[((uint64_t)(j + 1) * nb + n_buckets[vs] - 1) / n_buckets[vs] - 1];
        }
        /* --ep-overlap: the pass's start, from which its all-to-alls are timed. */
        sim_time_ps a2a = ep_ov ? cc->ep_a2a_ps[x->fwd ? 0 : 1] : 0;
        sim_task_id start = c;
        if (a2a > 0) {
          start = sim_graph_add_delay(g, unit_name(&names, NAME_PASS, at), 0);
          sim_graph_depend(g, c, start);
        }
        if (has_prev)
          sim_graph_depend(g, start, prev);
        if (has_gather)
          sim_graph_depend(g, start, gather);
        (x->fwd ? f_start : b_start)[slot] = start;
        sim_task_id end = c_last;
        sim_time_ps tpd = x->fwd ? cc->tp_fwd_ps : cc->tp_bwd_ps;
        if (tpd > 0) {
          const char *tp_name = unit_name(&names, NAME_TP, at);
          if (o->tp_overlap) {
            /* Beside the compute: the unit ends when both have. */
            sim_task_id tpt = sim_graph_add_compute(g, st[s].tp, tp_name, "tp", tpd, 0, 0);
            if (has_prev)
              sim_graph_depend(g, tpt, prev);
            end = sim_graph_add_delay(g, unit_name(&names, NAME_END, at), 0);
            sim_graph_depend(g, end, c_last);
            sim_graph_depend(g, end, tpt);
          } else {
            end = add_tp(g, st[s].tp, c_last, tpd, tp_name);
          }
        }
        /* --ep-overlap: the all-to-alls from ep_overlap_lead after the start, in the pass's
         * order on the ep stream. They end within the pass's time on their own; queued behind
         * earlier ones (forwards in a row), they hold a backward's end, and a forward's output
         * (its send, its own backward) but not the next unit, as on every device. */
        sim_task_id out = end;
        if (a2a > 0) {
          sim_task_id lead = sim_graph_add_delay(g, unit_name(&names, NAME_EP, at),
                                                 ep_overlap_lead(p, x->fwd, vs));
          sim_graph_depend(g, lead, start);
          sim_task_id t = sim_graph_add_compute(g, st[s].ep, unit_name(&names, NAME_EP, at), "ep",
                                                a2a, 0, 0);
          sim_graph_depend(g, t, lead);
          out = sim_graph_add_delay(g, unit_name(&names, NAME_END, at), 0);
          sim_graph_depend(g, out, end);
          sim_graph_depend(g, out, t);
          if (!x->fwd)
            end = out;
        }
        add_unit_send(g, p, st, 1, 0, x, vs, unit_name(&names, NAME_SEND, at), xfer_bytes, out,
                      slot, f_end, f_send, b_send);
        if (!x->fwd) {
          if (buckets) {
            dp_tasks[x->chunk] = add_buckets(g, st[s].dp, piece_end, n_buckets[vs],
                                             bucket_ps[vs], o->zero, x->chunk);
          } else if (i == last_b[x->chunk] && dp_on && !block_reduce_on) {
            /* Without overlap the chunk's gradients are reduced at once after the backward
             * (and after the device's whole backward, below). */
            g_snprintf(name, sizeof name, "%s grads c%u",
                       o->zero ? "reduce-scatter" : "allreduce", x->chunk);
            sim_task_id r = sim_graph_add_compute(g, st[s].dp, name, "dp", dp_reduce[vs], 0, 0);
            sim_graph_depend(g, r, end);
            dp_tasks[x->chunk] = r;
          }
        }
        prev = end;
        has_prev = TRUE;
      }
      /* Without overlap the reductions wait for the whole backward. */
      if (!o->overlap && dp_on)
        for (uint32_t c = 0; c < p->V; c++)
          sim_graph_depend(g, dp_tasks[c], prev);
      sim_task_id last_backward = prev;
      wl_op_cost upd = update_cost(p, s);
      sim_task_id u = sim_graph_add_compute(g, st[s].compute, "optimizer", "update",
                                            update_ps(p, dev, &upd), upd.flops, 0);
      sim_graph_depend(g, u, prev);
      if (dp_on)
        for (uint32_t c = 0; c < p->V; c++)
          sim_graph_depend(g, u, dp_tasks[c]);
      sim_task_id end = u;
      upd_task[s] = u;
      lastb_task[s] = last_backward;
      if (o->zero >= 1 && o->zero < 3 && p->R > 1 && !per_block) {
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
                                               SIM_OP_ALLREDUCE, sim_coll_timer_algorithm(ct), bytes);
      sim_graph_depend(g, e, lastb_task[0]);
      sim_graph_depend(g, e, lastb_task[p->P - 1]);
      sim_graph_depend(g, upd_task[0], e);
      sim_graph_depend(g, upd_task[p->P - 1], e);
    }
    add_pipeline_deps(g, p, orders, 1, 0, f_start, b_start, f_end, f_send, b_send);
  }
  return plan;
}

/* ---- A lower bound of the iteration, for the search ------------------------------------------ */

/* The shortest a unit of the folded plan can take: its compute (with the embedding on the
 * first virtual stage and the LM head on the last) and its tensor-parallel collectives, after
 * the compute or beside it (tp_overlap). */
static sim_time_ps unit_min_ps(const plan3d *p, gboolean fwd, uint32_t vs)
{
  const chunk_cost *cc = cost_of(p, vs);
  sim_time_ps compute = fwd ? cc->fwd_ps : cc->bwd_ps;
  if (vs == 0)
    compute += fwd ? p->emb.fwd_ps : p->emb.bwd_ps;
  if (vs == p->P * p->V - 1)
    compute += fwd ? p->head.fwd_ps : p->head.bwd_ps;
  sim_time_ps tp = fwd ? cc->tp_fwd_ps : cc->tp_bwd_ps;
  return p->o.tp_overlap ? MAX(compute, tp) : compute + tp;
}

/* A lower bound of the iteration time of sim_3d_build's folded plan (one device a stage), from
 * the chunk costs alone, without the graph. In that plan each stage runs its units one after
 * the other; a forward of micro-batch b on virtual stage v waits for b's forward on v - 1, a
 * backward for b's backward on v + 1; the iteration ends with the first stage's optimizer
 * step after its last backward. So for every stage s: the forwards of its first unit's
 * micro-batch on the virtual stages before it, all of s's units, the backwards of its last
 * unit's micro-batch on the virtual stages below it (the last on the first stage), and the
 * first stage's step come one after the other. Transfers, data-parallel collectives, parameter
 * gathers and waits only add to it. With equal stages and 1F1B it is (m + P - 1)(f + b) plus
 * the step, the pipeline's bubble included. 0 (no bound) for plans built otherwise (every
 * device) or that fail to cost. *memory_bytes: the plan's memory per device, as the build
 * reports it. */
static sim_time_ps time_bound_3d(const sim_scenario *s, const sim_search_ctx *c,
                                 uint64_t *memory_bytes)
{
  *memory_bytes = 0;
  sim_3d_opts o;
  if (!c->topology || !sim_3d_opts_from_scenario(s, &o, NULL) || o.every_device)
    return 0;
  g_autoptr(dev_device) own = NULL;
  const dev_device *dev = c->device;
  if (!dev) {
    const char *name = s->device ? s->device : comm_topology_device_kind(c->topology);
    dev = own = dev_device_load(name, s->calibration, NULL);
  }
  g_autoptr(plan3d) p = g_new0(plan3d, 1);
  if (!dev || !validate(p, &o, c->topology, dev, NULL))
    return 0;
  /* The search's timer for this algorithm, or one of its own (an idle network's times do
   * not depend on what it timed before). */
  const char *algo = p->o.allreduce ? p->o.allreduce : "";
  sim_coll_timer *ct = c->coll_timers ? g_hash_table_lookup(c->coll_timers, algo) : NULL;
  g_autoptr(sim_coll_timer) own_ct = NULL;
  if (!ct) {
    ct = sim_coll_timer_new(c->topology, COMM_NET_ANALYTIC, p->o.allreduce,
                            dev_stream_Bps(dev) / 3.0, NULL);
    if (!ct)
      return 0;
    if (c->coll_timers)
      g_hash_table_insert(c->coll_timers, g_strdup(algo), ct);
    else
      own_ct = ct;
  }
  if (!chunk_costs(dev, ct, p, NULL))
    return 0;
  sim_3d_metrics m;
  plan_memory(p, &m);
  *memory_bytes = mem_total(&m);
  sim_time_ps longest = 0;
  for (uint32_t st = 0; st < p->P; st++) {
    g_autoptr(GArray) order = schedule_units(p, st);
    sim_time_ps t = 0;
    for (guint i = 0; i < order->len; i++) {
      const unit *x = &g_array_index(order, unit, i);
      t += unit_min_ps(p, x->fwd, x->chunk * p->P + st);
    }
    const unit *first = &g_array_index(order, unit, 0);
    const unit *last = &g_array_index(order, unit, order->len - 1);
    for (uint32_t v = 0; first->fwd && v < first->chunk * p->P + st; v++)
      t += unit_min_ps(p, TRUE, v);
    for (uint32_t v = 0; !last->fwd && v < last->chunk * p->P + st; v++)
      t += unit_min_ps(p, FALSE, v);
    longest = MAX(longest, t);
  }
  wl_op_cost upd = update_cost(p, 0);
  sim_time_ps bound = longest + update_ps(p, dev, &upd);
  /* Less one part in a million: with one stage and everything else hidden the simulation
   * takes exactly the bound, and its collectives are timed on timers of its own, whose
   * picoseconds may round otherwise. */
  return bound - bound / 1000000;
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
  r->memory_framework_reserved_bytes = m->framework_reserved_bytes;
  r->memory_host_bytes = m->host_bytes;
  r->has_activations_cp = m->has_cp;
  r->memory_activations_cp_bytes = m->activations_cp_bytes;
  r->has_tokens_dropped = m->has_capacity;
  r->tokens_dropped = m->tokens_dropped;
}

/* ---- describe ---------------------------------------------------------------------------------- */

/* The two kinds of block of a model, as describe lists them: [0] the dense blocks (none in a
 * model whose every block has experts), [1] the mixture-of-experts blocks (none in a dense
 * model). first and count per kind. */
static void block_kinds(const wl_tf *tf, uint32_t first[2], uint32_t count[2])
{
  uint32_t dense = wl_tf_dense_blocks(tf);
  first[0] = 0, count[0] = dense;
  first[1] = dense, count[1] = tf->layers - dense;
}

int sim_3d_describe(FILE *out, const char *model, uint32_t batch, uint32_t seq_len,
                    wl_precision precision, gboolean json, GError **error)
{
  wl_tf tf;
  if (!wl_tf_parse(model, &tf, error))
    return 2;
  if (seq_len)
    wl_tf_set_seq(&tf, seq_len);
  uint64_t b = batch ? batch : 1, s = tf.seq;
  uint32_t kfirst[2], kcount[2];
  block_kinds(&tf, kfirst, kcount);
  /* Each kind of block's FLOPs as its kernels run them (causal attention skips the masked
   * half), not Megatron's count of the whole score matrix, which MFU uses. */
  uint64_t lp[2], lf[2], lb[2], la[2];
  for (int k = 0; k < 2; k++) {
    lp[k] = wl_tf_block_params(&tf, kfirst[k]);
    wl_tf_block_run_flops(&tf, kfirst[k], b, s, &lf[k], &lb[k]);
    la[k] = wl_tf_block_activation_bytes(&tf, kfirst[k], s, b, 1, FALSE, WL_RECOMPUTE_NONE,
                                         precision);
  }
  uint64_t hf = wl_tf_head_forward_flops(&tf, b, s);
  uint64_t ep = wl_tf_embedding_params(&tf), hp = wl_tf_head_params(&tf);
  /* One multi-token-prediction module: its projection (2h -> h), a block of the last kind
   * and the LM head. */
  int mk = kcount[1] ? 1 : 0;
  uint64_t proj = 2 * b * s * 2 * (uint64_t)tf.hidden * tf.hidden;
  uint64_t mp = tf.mtp ? wl_tf_mtp_params(&tf) / tf.mtp : 0;
  uint64_t mf = proj + lf[mk] + hf, mb = 2 * proj + lb[mk] + 2 * hf;
  uint64_t total_fwd = lf[0] * kcount[0] + lf[1] * kcount[1] + hf + tf.mtp * mf;
  uint64_t total_bwd = lb[0] * kcount[0] + lb[1] * kcount[1] + 2 * hf + tf.mtp * mb;
  uint64_t total_act = la[0] * kcount[0] + la[1] * kcount[1] + tf.mtp * la[mk];
  uint64_t active = wl_tf_active_params(&tf);
  /* Per token: the forward FLOPs of one token at this sequence (2 x the matrix weights it
   * uses + its share of attention + the LM head), and a training step's 3x that. */
  double fwd_per_token = (double)total_fwd / (double)(b * s);
  if (json) {
    g_autoptr(GString) o = g_string_new("{\"model\":");
    dt_json_string(o, tf.name);
    g_string_append_printf(o, ",\"batch\":%" PRIu64 ",\"seq\":%" PRIu64
                           ",\"precision\":\"%s\",\"layers\":[", b, s,
                           wl_precision_name(precision));
    g_string_append_printf(o, "{\"name\":\"embedding\",\"type\":\"embedding\",\"params\":%" PRIu64
                           ",\"forward_flops\":0,\"backward_flops\":0,\"activation_bytes\":0}",
                           ep);
    for (uint32_t i = 0; i < tf.layers; i++) {
      int k = wl_tf_block_is_moe(&tf, i) ? 1 : 0;
      g_string_append_printf(o, ",{\"name\":\"block%u\",\"type\":\"%s\",\"params\":%" PRIu64
                             ",\"active_params\":%" PRIu64 ",\"forward_flops\":%" PRIu64
                             ",\"backward_flops\":%" PRIu64 ",\"activation_bytes\":%" PRIu64 "}",
                             i, k ? "moe_transformer" : "transformer", lp[k],
                             wl_tf_block_active_params(&tf, i), lf[k], lb[k], la[k]);
    }
    g_string_append_printf(o, ",{\"name\":\"lm_head\",\"type\":\"lm_head\",\"params\":%" PRIu64
                           ",\"forward_flops\":%" PRIu64 ",\"backward_flops\":%" PRIu64
                           ",\"activation_bytes\":0}", hp, hf, 2 * hf);
    for (uint32_t i = 0; i < tf.mtp; i++)
      g_string_append_printf(o, ",{\"name\":\"mtp%u\",\"type\":\"mtp\",\"params\":%" PRIu64
                             ",\"forward_flops\":%" PRIu64 ",\"backward_flops\":%" PRIu64
                             ",\"activation_bytes\":%" PRIu64 "}", i, mp, mf, mb, la[mk]);
    g_string_append(o, "]");
    g_string_append_printf(o, ",\"total_params\":%" PRIu64 ",\"active_params\":%" PRIu64
                           ",\"total_forward_flops\":%" PRIu64 ",\"total_backward_flops\":%"
                           PRIu64 ",\"forward_flops_per_token\":%.0f"
                           ",\"training_flops_per_token\":%.0f,\"total_activation_bytes\":%"
                           PRIu64 "}\n", wl_tf_params(&tf), active, total_fwd, total_bwd,
                           fwd_per_token, 3 * fwd_per_token, total_act);
    fputs(o->str, out);
    return 0;
  }
  fprintf(out, "model %s: %u layers, hidden %u, %u heads (%u key/value) of %" PRIu64 ", ffn %u "
          "(%s), %s, vocabulary %u, sequence %u, %s; batch %" PRIu64 " sequences, %s\n",
          tf.name, tf.layers, tf.hidden, tf.heads, tf.kv_heads, wl_tf_head_dim(&tf), tf.ffn,
          tf.mlp == WL_MLP_SWIGLU ? "swiglu" : "gelu",
          tf.norm == WL_NORM_RMSNORM ? "rmsnorm" : "layernorm", tf.vocab, tf.seq,
          tf.causal ? "causal" : "bidirectional", b, wl_precision_name(precision));
  if (tf.kv_lora)
    fprintf(out, "latent attention: query rank %u, key/value rank %u, rotary dims %u, value "
            "head %u\n", tf.q_lora, tf.kv_lora, tf.rope_dim, tf.v_head_dim);
  if (tf.experts)
    fprintf(out, "experts: %u routed (top %u) + %u shared, each a gated MLP of %u; the first %u "
            "blocks dense\n", tf.experts, tf.topk, tf.shared_experts, tf.moe_ffn,
            kcount[0]);
  if (tf.expert_groups)
    fprintf(out, "routing: a token's experts within %u of %u groups of %u\n", tf.group_topk,
            tf.expert_groups, tf.experts / tf.expert_groups);
  if (tf.mtp)
    fprintf(out, "multi-token prediction: %u modules (norms, projection 2h -> h, one %s, the "
            "shared LM head)\n", tf.mtp, kcount[1] ? "moe block" : "block");
  fprintf(out, "\none block, kernel by kernel (no tensor parallelism):\n");
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
      g_snprintf(shape, sizeof shape, "%s%" PRIu64 " x %" PRIu64 " x %" PRIu64,
                 f->gemm_batch > 1 && f->kind == WL_OP_GEMM ? "E x " : "", f->gemm_m,
                 f->gemm_n, f->gemm_k);
    fprintf(out, "  %-14s %-11s %-24s %16" PRIu64 " %16" PRIu64 " %16" PRIu64 "\n", k[i].name,
            wl_op_kind_name(f->kind), shape, f->flops, k[i].pass[1].flops + k[i].pass[2].flops,
            f->bytes_read + f->bytes_written);
  }
  fprintf(out, "\n%-16s %8s %16s %20s %20s %18s\n", "layer", "count", "params", "fwd FLOPs",
          "bwd FLOPs", "activation bytes");
  fprintf(out, "%-16s %8u %16" PRIu64 " %20d %20d %18d\n", "embedding", 1, ep, 0, 0, 0);
  static const char *const kind_names[2] = {"block", "moe block"};
  for (int i = 0; i < 2; i++)
    if (kcount[i])
      fprintf(out, "%-16s %8u %16" PRIu64 " %20" PRIu64 " %20" PRIu64 " %18" PRIu64 "\n",
              kind_names[i], kcount[i], lp[i], lf[i], lb[i], la[i]);
  fprintf(out, "%-16s %8u %16" PRIu64 " %20" PRIu64 " %20" PRIu64 " %18d\n", "lm_head", 1, hp, hf,
          2 * hf, 0);
  if (tf.mtp)
    fprintf(out, "%-16s %8u %16" PRIu64 " %20" PRIu64 " %20" PRIu64 " %18" PRIu64 "\n",
            "mtp module", tf.mtp, mp, mf, mb, la[mk]);
  fprintf(out, "\ntotal: %" PRIu64 " params (%.2f B), %" PRIu64 " active per token (%.2f B); "
          "forward %.4g TFLOP, backward %.4g TFLOP per batch; activations %.3f GB without "
          "recomputation (Korthikanti et al.)\n",
          wl_tf_params(&tf), wl_tf_params(&tf) / 1e9, active, active / 1e9, total_fwd / 1e12,
          total_bwd / 1e12, total_act / 1e9);
  fprintf(out, "  per token: forward %.4g GFLOP, training (forward + backward) %.4g GFLOP\n",
          fwd_per_token / 1e9, 3 * fwd_per_token / 1e9);
  fprintf(out, "  block: attention %" PRIu64 ", MLP %" PRIu64 ", norms %" PRIu64 " params\n",
          wl_tf_attention_params(&tf),
          tf.experts ? wl_tf_router_params(&tf) + ((uint64_t)tf.experts + tf.shared_experts) *
                                                      wl_tf_expert_params(&tf)
                     : wl_tf_mlp_params(&tf),
          2 * wl_tf_norm_params(&tf));
  return 0;
}

/* ---- Keys and the registry entry ------------------------------------------------------------ */

SIM_CHOICES_OF(wl_attention_name, wl_attention)
SIM_CHOICES_OF(wl_recompute_name, wl_recompute)
SIM_CHOICES_OF(wl_cp_comm_name, wl_cp_comm)
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
    {"attention", SIM_KEY_CHOICE, SIM_KEY_OFF(attention), "flash", .choice_name = wl_attention_name_choice,
     .n_choices = WL_ATTN_UNFUSED + 1,
     .commands = SIM_OPTS_RUN,
     .help = "one fused attention kernel, or batched GEMMs around a softmax that writes the "
             "scores (Megatron-LM before FlashAttention)"},
    {"recompute", SIM_KEY_CHOICE, SIM_KEY_OFF(recompute), "none",
     .choice_name = wl_recompute_name_choice, .n_choices = WL_RECOMPUTE_FULL + 1, .commands = SIM_OPTS_RUN,
     .help = "activation recomputation"},
    {"zero", SIM_KEY_INT, SIM_KEY_OFF(zero), "0", 0, 3, .commands = SIM_OPTS_RUN, .arg = "0-3",
     .help = "ZeRO stage: optimizer (1), gradient (2), parameter (3) sharding over dp"},
    {"ep", SIM_KEY_INT, SIM_KEY_OFF(ep), "1", 1, 1 << 20, .commands = SIM_OPTS_RUN, .arg = "E",
     .help = "expert-parallel degree: the experts spread over E of a stage's tp x cp x dp devices "
             "(dispatch and combine all-to-alls over them)"},
    {"etp", SIM_KEY_INT, SIM_KEY_OFF(etp), "1", 1, 1 << 20, .commands = SIM_OPTS_RUN, .arg = "X",
     .help = "expert tensor-parallel degree: each expert split over X devices (--ep x --etp "
             "divides tp x cp x dp)"},
    {"cp", SIM_KEY_INT, SIM_KEY_OFF(cp), "1", 1, 1 << 20, .commands = SIM_OPTS_RUN, .arg = "C",
     .help = "context-parallel degree: each sequence split over C devices in 2 C load-balanced "
             "chunks (devices = tp x pp x cp x dp)"},
    {"cp-comm", SIM_KEY_CHOICE, SIM_KEY_OFF(cp_comm), "p2p", .choice_name = wl_cp_comm_name_choice,
     .n_choices = WL_CP_A2A + 1, .commands = SIM_OPTS_RUN,
     .help = "how context-parallel attention gets the other keys and values: a ring of sends "
             "overlapped with the attention blocks, one all-gather, or all-to-alls to a head "
             "split"},
    {"moe-capacity", SIM_KEY_DOUBLE, SIM_KEY_OFF(moe_capacity), "0", 0, 1000,
     .commands = SIM_OPTS_RUN, .arg = "F",
     .help = "expert capacity factor: an expert keeps at most F times the mean tokens, the "
             "rest are dropped (0: dropless)"},
    {"moe-imbalance", SIM_KEY_DOUBLE, SIM_KEY_OFF(moe_imbalance), "1", 1, 2,
     .commands = SIM_OPTS_RUN, .arg = "X",
     .help = "tokens of the busiest expert over the mean, 1 to 2 (loads spread evenly "
             "between 2 - X and X)"},
    {"pp-layout", SIM_KEY_STRING, SIM_KEY_OFF(pp_layout), .commands = SIM_OPTS_RUN,
     .arg = "STR",
     .help = "Megatron-Core's pipeline layout: E embedding, t block, m multi-token "
             "prediction, L loss, | stage boundary, (...)*N repeat"},
    {"embedding-in-split", SIM_KEY_ONOFF, SIM_KEY_OFF(embedding_in_split), "off",
     .commands = SIM_OPTS_RUN, .arg = "on|off",
     .help = "count the embedding as one block when spreading blocks over the stages"},
    {"loss-in-split", SIM_KEY_ONOFF, SIM_KEY_OFF(loss_in_split), "off",
     .commands = SIM_OPTS_RUN, .arg = "on|off",
     .help = "count the loss (LM head) as one block when spreading blocks over the stages"},
};
static const sim_key_group sim_keys_3d = SIM_KEY_GROUP("3d", SIM_STRATEGY_TRANSFORMER, keys_3d);

/* The pipeline partition options of the scenario (they point into it). */
static void sim_3d_opts_partition(const sim_scenario *s, sim_3d_opts *o)
{
  if (s->split) {
    o->split = (const int64_t *)(const void *)s->split->data;
    o->n_split = s->split->len;
  }
  o->pp_layout = s->pp_layout;
  o->embedding_in_split = s->embedding_in_split;
  o->loss_in_split = s->loss_in_split;
}

gboolean sim_3d_opts_from_scenario(const sim_scenario *s, sim_3d_opts *o, GError **error)
{
  sim_3d_opts_init(o);
  /* A strategy whose transformer form this is trains with one tensor and one pipeline rank. */
  if (!sim_strategy_for_scenario(s, error))
    return FALSE;
  gboolean dp = !(s->strategy->flags & SIM_STRATEGY_TRANSFORMER);
  o->model = s->model;
  o->seq_len = (uint32_t)s->seq_len;
  o->precision = s->precision;
  o->tp = dp ? 1 : (uint32_t)s->tp;
  o->pp = dp ? 1 : (uint32_t)s->pp;
  o->dp = dp ? 0 : (uint32_t)s->dp;
  o->batch = (uint64_t)s->batch;
  o->global_batch = (uint64_t)s->global_batch;
  o->micro_batch = (uint64_t)s->micro_batch;
  o->schedule = dp ? WL_SCHED_1F1B : s->schedule;
  o->interleave = dp ? 1 : (uint32_t)s->interleave;
  o->seq_parallel = s->sequence_parallel;
  o->tp_overlap = s->tp_overlap;
  o->attention = s->attention;
  o->recompute = s->recompute;
  o->zero = (unsigned)s->zero;
  o->overlap = s->overlap;
  /* The collectives of a 3d plan are timed once each, every group of a kind at once on the
   * network, with the algorithm --allreduce names, by default dp's: auto, which takes NCCL's
   * choice or the plain ring, whichever is faster (bench/llm's 27 rows: 9.7% off, 10.8% leave
   * one source out; 9.5% and 9.7% with the ring everywhere). */
  o->allreduce = comm_coll_algorithm_name(s->allreduce);
  o->iterations = (uint32_t)s->iterations;
  o->bucket_bytes = sim_scenario_given(s, "bucket-mib") ? s->bucket_bytes : 0;
  o->ep = dp ? 1 : (uint32_t)s->ep;
  o->etp = dp ? 1 : (uint32_t)s->etp;
  o->cp = dp ? 1 : (uint32_t)s->cp;
  o->cp_comm = (wl_cp_comm)s->cp_comm;
  o->moe_capacity = s->moe_capacity;
  o->moe_imbalance = s->moe_imbalance;
  sim_framework_opts fo = sim_framework_opts_of(s);
  o->framework = fo.framework;
  o->shard_group = (uint32_t)fo.shard_group;
  o->offload = (unsigned)fo.offload;
  o->ep_overlap = fo.ep_overlap;
  sim_3d_opts_partition(s, o);
  /* A failed link breaks the symmetry folding relies on (one pipeline's groups stand for all):
   * unfolded unless --symmetry was given (on is then refused by the faults check). */
  o->every_device = !s->symmetry || (s->links_down && s->links_down->len &&
                                     !sim_scenario_given(s, "symmetry"));
  return TRUE;
}

static void metrics_free(gpointer m) { g_free(m); }

/* The registry's form: the plan of the scenario behind `opts` (the cost table is not used),
 * on the driver's topology and network model when it made them. */
static sim_plan *build_3d(const sim_costs *costs, const sim_plan_opts *opts, GError **error)
{
  (void)costs;
  const sim_scenario *s = opts->scenario;
  sim_3d_opts o;
  if (!s || !sim_3d_opts_from_scenario(s, &o, error))
    return NULL;
  g_autoptr(comm_topology) own = NULL;
  const comm_topology *topo = opts->topology;
  comm_net_model net_model = opts->topology ? opts->net_model : s->net_model;
  if (!topo && !(topo = own = sim_scenario_topology(s, error)))
    return NULL;
  const char *device = opts->device ? opts->device
                       : s->device  ? s->device
                                    : comm_topology_device_kind(topo);
  double reduce;
  sim_3d_metrics *m = g_new0(sim_3d_metrics, 1);
  sim_plan *p = sim_3d_build(&o, topo, net_model, device, s->calibration, &reduce, m, error);
  if (!p) {
    g_free(m);
    return NULL;
  }
  p->reduce_Bps = reduce;
  p->memory_capacity_bytes = m->capacity_bytes;
  if (!o.every_device) {
    p->fold_tp = o.tp ? o.tp : 1;
    p->fold_pp = o.pp ? o.pp : 1;
  }
  p->extra = m;
  p->extra_free = metrics_free;
  return p;
}

static void report_3d(const sim_plan *plan, sim_report *r)
{
  sim_3d_metrics *m = plan->extra;
  sim_3d_report(m, r);
  r->tokens_per_iteration = m->global_batch * (uint64_t)m->seq;
}

const sim_strategy sim__strategy_3d = {
    .name = "3d",
    .description = "tensor x pipeline x data parallelism of transformers (Megatron-LM: "
                   "sequence parallelism, interleaved schedules, ZeRO, recomputation)",
    .flags = SIM_STRATEGY_TRANSFORMER | SIM_STRATEGY_ALLREDUCE | SIM_STRATEGY_OVERLAP |
             SIM_STRATEGY_SCHEDULE | SIM_STRATEGY_SPLIT | SIM_STRATEGY_FOLDABLE,
    .check = check_3d,
    .keys = &sim_keys_3d,
    .build = build_3d,
    .report = report_3d,
    .search = search_3d,
    .n_search = G_N_ELEMENTS(search_3d),
};
