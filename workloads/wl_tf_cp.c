/* Context parallelism and expert load of a transformer (see wl_transformer.h): which chunks of
 * the sequence a context-parallel rank holds, the attention blocks of each step of the p2p
 * ring, the fused attention kernel of a block with FlashAttention's tiles, the bytes the ranks
 * exchange and hold, and the busiest expert's load under a capacity factor. Sources:
 * docs/workloads.md ("Context parallelism", "Expert load"). */
#include "wl_transformer.h"

#include <string.h>

static const char *const cp_comm_names[] = {"p2p", "all-gather", "a2a"};

const char *wl_cp_comm_name(wl_cp_comm c)
{
  return c <= WL_CP_A2A ? cp_comm_names[c] : "?";
}

void wl_tf_cp_chunks(uint32_t cp, uint32_t rank, uint32_t chunks[2])
{
  chunks[0] = rank;
  chunks[1] = 2 * cp - 1 - rank;
}

uint64_t wl_tf_cp_causal_halves(uint32_t cp, uint32_t rank)
{
  uint32_t c[2];
  wl_tf_cp_chunks(cp, rank, c);
  return (2 * (uint64_t)c[0] + 1) + (2 * (uint64_t)c[1] + 1);
}

wl_tf_cp_block wl_tf_cp_step(uint64_t seq, uint32_t cp, uint32_t rank, uint32_t step)
{
  uint64_t local = seq / (cp ? cp : 1);
  if (step == 0 || cp < 2)
    return (wl_tf_cp_block){local, local, TRUE};
  /* The source rank (rank - step) mod cp is lower when step <= rank. */
  if (step <= rank)
    return (wl_tf_cp_block){local, local / 2, FALSE};
  return (wl_tf_cp_block){local / 2, local, FALSE};
}

uint64_t wl_tf_cp_attention_flops(const wl_tf *tf, uint64_t b, uint64_t s, uint32_t cp)
{
  return wl_tf_layer_attention_flops(tf, b, s) / (cp ? cp : 1);
}

/* Widths of one query/key head and one value head; the heads whose keys and values a device
 * reads (multi-head latent attention expands them for every head). */
static uint64_t head_dim(const wl_tf *tf) { return wl_tf_head_dim(tf); }
static uint64_t value_dim(const wl_tf *tf)
{
  return tf->v_head_dim ? tf->v_head_dim : wl_tf_head_dim(tf);
}
static uint64_t kv_heads(const wl_tf *tf) { return tf->kv_lora ? tf->heads : tf->kv_heads; }

/* FlashAttention's tile: 128 queries x 128 keys (FlashAttention-2 and -3 forward at head
 * widths 64-128; docs/workloads.md). */
#define ATTN_TILE 128

void wl_tf_attention_kernel(const wl_tf *tf, const wl_tf_shard *sh, uint64_t q, uint64_t k,
                            uint32_t head_split, gboolean causal, wl_tf_kernel *out)
{
  uint64_t t = (uint64_t)(sh->tp ? sh->tp : 1) * (head_split ? head_split : 1);
  uint64_t b = sh->micro_batch, hd = head_dim(tf), vd = value_dim(tf);
  uint64_t heads = tf->heads / t;
  uint64_t e = wl_precision_bytes(sh->precision);
  memset(out, 0, sizeof *out);
  out->name = "attention";
  out->attention_core = TRUE;
  /* Query-key pairs the kernel computes per head and sequence: whole tiles on the diagonal of
   * a causal block, none above it. */
  uint64_t pairs = q * k;
  if (causal) {
    uint64_t n = (q + ATTN_TILE - 1) / ATTN_TILE;
    pairs = n ? q * q * (n + 1) / (2 * n) : 0;
  }
  uint64_t mm = 2 * b * heads * pairs * (hd + vd);
  /* Reads the queries and the keys and values, writes the output. */
  uint64_t qkv_bytes = b * (q * heads * hd + k * kv_heads(tf) / t * (hd + vd)) * e;
  uint64_t o_bytes = b * q * heads * vd * e;
  for (int i = 0; i < 2; i++) {
    wl_op_cost *c = &out->pass[i];
    c->kind = WL_OP_ATTENTION;
    c->pass = (wl_pass)i;
    c->precision = sh->precision;
    /* Backward: Q K^T again, dV, dP, dQ and dK: five products against the forward's two. */
    c->flops = i ? mm * 5 / 2 : mm;
    c->bytes_read = i ? qkv_bytes + 2 * o_bytes : qkv_bytes;
    c->bytes_written = i ? qkv_bytes : o_bytes;
    c->out_elems = b * q * heads * vd;
    /* Its shape, for the device's tiles and waves (dev__attention_fill): q queries against k
     * keys per sequence and head. */
    c->gemm_m = q;
    c->gemm_k = k;
    c->gemm_n = hd + vd;
    c->gemm_batch = b * heads;
    c->causal = causal ? 1 : 0;
    out->has[i] = TRUE;
  }
}

/* Tokens of one sequence a device holds. */
static uint64_t local_tokens(const wl_tf_shard *sh)
{
  return (uint64_t)sh->micro_batch * sh->seq / (sh->cp ? sh->cp : 1);
}

uint64_t wl_tf_cp_kv_bytes(const wl_tf *tf, const wl_tf_shard *sh)
{
  uint64_t t = sh->tp ? sh->tp : 1;
  return local_tokens(sh) * kv_heads(tf) * (head_dim(tf) + value_dim(tf)) / t *
         wl_precision_bytes(sh->precision);
}

uint64_t wl_tf_cp_q_bytes(const wl_tf *tf, const wl_tf_shard *sh)
{
  uint64_t t = sh->tp ? sh->tp : 1;
  return local_tokens(sh) * tf->heads * head_dim(tf) / t * wl_precision_bytes(sh->precision);
}

uint64_t wl_tf_cp_o_bytes(const wl_tf *tf, const wl_tf_shard *sh)
{
  uint64_t t = sh->tp ? sh->tp : 1;
  return local_tokens(sh) * tf->heads * value_dim(tf) / t * wl_precision_bytes(sh->precision);
}

uint64_t wl_tf_cp_buffer_bytes(const wl_tf *tf, const wl_tf_shard *sh, wl_cp_comm comm)
{
  uint64_t cp = sh->cp ? sh->cp : 1;
  if (cp < 2)
    return 0;
  uint64_t kv = wl_tf_cp_kv_bytes(tf, sh);
  switch (comm) {
  case WL_CP_P2P:
    return 4 * kv;
  case WL_CP_ALLGATHER:
    return 2 * cp * kv;
  case WL_CP_A2A:
    return 2 * (kv + wl_tf_cp_q_bytes(tf, sh) + wl_tf_cp_o_bytes(tf, sh));
  }
  return 0;
}

double wl_tf_expert_load(double imbalance, double capacity, double *dropped_fraction)
{
  double x = imbalance > 1 ? imbalance : 1, c = capacity;
  double dropped = 0;
  if (c > 0 && c < x) {
    /* Loads spread evenly over [2 - x, x]: all above capacity when c <= 2 - x. */
    dropped = c <= 2 - x ? 1 - c : (x - c) * (x - c) / (4 * (x - 1));
  }
  if (dropped_fraction)
    *dropped_fraction = dropped;
  return c > 0 && c < x ? c : x;
}
