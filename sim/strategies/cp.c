/* Context parallelism of a block's attention (see cp.h). */
#include "cp.h"

#include "util.h"

#include <inttypes.h>
#include <string.h>

const char *sim__3d_check_cp(const sim_3d_opts *o, const wl_tf *tf, const sim_shape *shape,
                             GError **error)
{
  (void)shape;
  uint64_t cp = o->cp ? o->cp : 1, tp = o->tp ? o->tp : 1;
  if (cp < 2)
    return NULL;
  uint64_t seq = o->seq_len ? o->seq_len : tf->seq;
  if (seq % (2 * cp)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--cp %" PRIu64 ": the %" PRIu64 "-token "
                "sequence does not split into 2 x %" PRIu64 " equal chunks (causal load "
                "balancing)", cp, seq, cp);
    return SIM_DROP_CP_SEQ;
  }
  if (o->cp_comm == WL_CP_A2A && (tf->heads % (tp * cp) || tf->kv_heads % (tp * cp))) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--cp-comm a2a: --tp %" PRIu64 " x --cp %"
                PRIu64 " does not divide the %u attention heads (%u key/value heads) of %s",
                tp, cp, tf->heads, tf->kv_heads, o->model);
    return SIM_DROP_CP_HEADS;
  }
  if (o->attention != WL_ATTN_FLASH) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--cp %" PRIu64 ": context parallelism runs "
                "the fused attention kernel (--attention flash)", cp);
    return SIM_DROP_CP_ATTENTION;
  }
  return NULL;
}

int64_t sim_cp_ring_step_ps(int64_t transfer_ps, int64_t block_ps)
{
  return transfer_ps > block_ps ? transfer_ps : block_ps;
}

/* The group's collective `op` of `bytes` (nccl-tests size): cp ranks tp apart, the tp groups of
 * a replica at once; with the plain ring when `ring`, else the run's algorithm. */
static gboolean group_time(sim_coll_timer *ct, const wl_tf_shard *sh, comm_coll_op op,
                           gboolean ring, uint64_t bytes, int64_t *out, GError **error)
{
  uint32_t t = sh->tp ? sh->tp : 1;
  sim_time_ps d = 0;
  if (!(ring ? sim_coll_timer_ring_time : sim_coll_timer_time)(ct, op, 0, sh->cp, t, t, 1, bytes,
                                                                &d, error))
    return FALSE;
  *out = d;
  return TRUE;
}

/* Forward and backward time of one attention block of q x k on dev. */
static void block_ps(const dev_device *dev, const wl_tf *tf, const wl_tf_shard *sh, uint64_t q,
                     uint64_t k, uint32_t head_split, gboolean causal, int64_t ps[2])
{
  wl_tf_kernel kn;
  wl_tf_attention_kernel(tf, sh, q, k, head_split, causal, &kn);
  for (int i = 0; i < 2; i++)
    ps[i] = dev_op_time_ps(dev, &kn.pass[i], 0);
}

/* The merge of one ring step's partial results, a streaming kernel: forward, the step's output
 * rescaled by its softmax statistics and added into the rank's output (Transformer Engine's
 * flash_attn_fwd_out_correction: reads the step's output, reads and writes the sum: 3 x the
 * output's bytes); backward, the step's query gradient added into the rank's (3 x the queries'
 * bytes), its key and value gradients concatenated and added into the buffer that travels on
 * (2 + 3 x the keys' and values' bytes; AttnFuncWithCPAndKVP2P.backward). */
int64_t sim_cp_merge_ps(const dev_device *dev, const wl_tf *tf, const wl_tf_shard *sh, int pass)
{
  uint64_t bytes = pass ? 3 * wl_tf_cp_q_bytes(tf, sh) + 5 * wl_tf_cp_kv_bytes(tf, sh)
                        : 3 * wl_tf_cp_o_bytes(tf, sh);
  wl_op_cost op = {0};
  op.kind = WL_OP_ELEMENTWISE;
  op.pass = pass ? WL_PASS_BACKWARD_DATA : WL_PASS_FORWARD;
  op.precision = sh->precision;
  /* One write for every three bytes moved (the sum), the rest reads. */
  op.bytes_written = bytes / 3;
  op.bytes_read = bytes - op.bytes_written;
  op.out_elems = op.bytes_written / wl_precision_bytes(sh->precision);
  op.flops = 2 * op.out_elems;
  return dev_op_time_ps(dev, &op, 0);
}

void sim_cp_step_ps(const dev_device *dev, const wl_tf *tf, const wl_tf_shard *sh, uint32_t rank,
                    uint32_t step, int64_t ps[2])
{
  wl_tf_cp_block b = wl_tf_cp_step(sh->seq, sh->cp, rank, step);
  block_ps(dev, tf, sh, b.q, b.k, 1, b.causal && tf->causal, ps);
  /* The step's partial results merged into the rank's (after its block, on the compute
   * stream). */
  for (int pass = 0; pass < 2; pass++)
    ps[pass] += sim_cp_merge_ps(dev, tf, sh, pass);
}

gboolean sim_cp_attention_time(const dev_device *dev, sim_coll_timer *ct, const wl_tf *tf,
                               const wl_tf_shard *sh, wl_cp_comm comm, sim_cp_attention *out,
                               GError **error)
{
  memset(out, 0, sizeof *out);
  uint32_t cp = sh->cp;
  g_return_val_if_fail(cp >= 2, FALSE);
  uint64_t kv = wl_tf_cp_kv_bytes(tf, sh);
  if (comm == WL_CP_A2A) {
    /* Heads / cp over the whole sequence: one causal block. */
    int64_t ps[2], qkv_ps, o_ps;
    block_ps(dev, tf, sh, sh->seq, sh->seq, cp, tf->causal, ps);
    if (!group_time(ct, sh, COMM_COLL_ALLTOALL, FALSE, wl_tf_cp_q_bytes(tf, sh) + kv, &qkv_ps,
                    error) ||
        !group_time(ct, sh, COMM_COLL_ALLTOALL, FALSE, wl_tf_cp_o_bytes(tf, sh), &o_ps, error))
      return FALSE;
    for (int i = 0; i < 2; i++) {
      out->compute_ps[i] = ps[i];
      out->comm_ps[i] = out->exposed_ps[i] = qkv_ps + o_ps;
    }
    return TRUE;
  }
  /* The slowest rank's blocks (they differ in which half of the sequence they hold), and the
   * ring's steps on it. */
  int64_t step_ps = 0, gather_ps = 0, scatter_ps = 0;
  if (comm == WL_CP_P2P) {
    /* Each step sends the keys and values to the next rank, point to point: the plain ring's
     * all-gather is that pattern, over the routes between neighbours (one GPU's NIC where the
     * ring crosses nodes), where the collective algorithm would spread it over every NIC. */
    int64_t ring;
    if (!group_time(ct, sh, COMM_COLL_ALLGATHER, TRUE, kv * cp, &ring, error))
      return FALSE;
    step_ps = ring / (cp - 1);
  } else if (!group_time(ct, sh, COMM_COLL_ALLGATHER, FALSE, kv * cp, &gather_ps, error) ||
             !group_time(ct, sh, COMM_COLL_REDUCE_SCATTER, FALSE, kv * cp, &scatter_ps, error)) {
    return FALSE;
  }
  for (uint32_t r = 0; r < cp; r++) {
    int64_t compute[2] = {0, 0}, total[2] = {0, 0};
    for (uint32_t i = 0; i < cp; i++) {
      int64_t ps[2];
      sim_cp_step_ps(dev, tf, sh, r, i, ps);
      for (int pass = 0; pass < 2; pass++) {
        compute[pass] += ps[pass];
        /* Backward sends the keys and values and their gradients: twice the bytes. */
        int64_t xfer = step_ps * (pass ? 2 : 1);
        total[pass] += i == 0 || comm != WL_CP_P2P ? ps[pass] : sim_cp_ring_step_ps(xfer, ps[pass]);
      }
    }
    if (comm == WL_CP_P2P) {
      /* The gradients of the last step's keys and values go home. */
      total[1] += step_ps;
    } else {
      total[0] += gather_ps;
      total[1] += gather_ps + scatter_ps;
    }
    for (int pass = 0; pass < 2; pass++)
      if (total[pass] > out->compute_ps[pass] + out->exposed_ps[pass]) {
        out->compute_ps[pass] = compute[pass];
        out->exposed_ps[pass] = total[pass] - compute[pass];
      }
  }
  if (comm == WL_CP_P2P) {
    out->comm_ps[0] = step_ps * (cp - 1);
    out->comm_ps[1] = 2 * step_ps * (cp - 1) + step_ps;
  } else {
    out->comm_ps[0] = gather_ps;
    out->comm_ps[1] = gather_ps + scatter_ps;
  }
  return TRUE;
}
