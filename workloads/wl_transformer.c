/* Transformer language models (see wl_transformer.h): the zoo, the inline spec, closed-form
 * parameter and FLOP counts, the kernels of one block on one tensor-parallel rank, and memory
 * per device. Sources: docs/workloads.md ("Transformers"). */
#include "wl_transformer.h"

#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- The zoo ------------------------------------------------------------------------------- */

/* GPT as Megatron-LM builds it (Narayanan et al. SC'21 Table 1 and GPT-3, Brown et al. 2020,
 * Table 2.1): learned positions, biases, layernorm, gelu MLP of 4h, tied LM head. */
static void gpt(wl_tf *tf, const char *name, uint32_t l, uint32_t h, uint32_t a, uint32_t s,
                uint32_t v)
{
  memset(tf, 0, sizeof *tf);
  g_strlcpy(tf->name, name, sizeof tf->name);
  tf->layers = l, tf->hidden = h, tf->heads = a, tf->kv_heads = a, tf->ffn = 4 * h;
  tf->seq = s, tf->vocab = v;
  tf->mlp = WL_MLP_GELU, tf->norm = WL_NORM_LAYERNORM, tf->causal = TRUE, tf->bias = TRUE;
  tf->max_positions = s, tf->final_norm = TRUE, tf->tied_head = TRUE;
  tf->lm_fraction = 1.0;
}

/* Llama (Touvron et al. 2023; Llama 3 herd paper, Table 3; the released config.json files):
 * rotary positions, no biases, rmsnorm, swiglu MLP, untied LM head. */
static void llama(wl_tf *tf, const char *name, uint32_t l, uint32_t h, uint32_t a, uint32_t kv,
                  uint32_t f, uint32_t s, uint32_t v)
{
  memset(tf, 0, sizeof *tf);
  g_strlcpy(tf->name, name, sizeof tf->name);
  tf->layers = l, tf->hidden = h, tf->heads = a, tf->kv_heads = kv, tf->ffn = f;
  tf->seq = s, tf->vocab = v;
  tf->mlp = WL_MLP_SWIGLU, tf->norm = WL_NORM_RMSNORM, tf->causal = TRUE;
  tf->final_norm = TRUE;
  tf->lm_fraction = 1.0;
}

static const wl_tf_zoo_entry zoo[] = {
    {"gpt3-1.7b", "GPT 1.7B (Megatron-LM, SC'21 Table 1): 24 layers, h 2304, 24 heads, s 2048"},
    {"gpt3-175b", "GPT-3 175B: 96 layers, h 12288, 96 heads, s 2048, vocabulary 51200"},
    {"llama2-7b", "Llama 2 7B: 32 layers, h 4096, 32 heads, ffn 11008, s 4096"},
    {"llama2-70b", "Llama 2 70B: 80 layers, h 8192, 64 heads (8 kv), ffn 28672, s 4096"},
    {"llama3-8b", "Llama 3 8B: 32 layers, h 4096, 32 heads (8 kv), ffn 14336, s 8192"},
    {"llama3-70b", "Llama 3 70B: 80 layers, h 8192, 64 heads (8 kv), ffn 28672, s 8192"},
    {"llama3-405b", "Llama 3 405B: 126 layers, h 16384, 128 heads (8 kv), ffn 53248, s 8192"},
    {"bert-large", "BERT-large: 24 layers, h 1024, 16 heads, s 512, vocabulary 30522"},
};

const wl_tf_zoo_entry *wl_tf_zoo(size_t *n)
{
  *n = G_N_ELEMENTS(zoo);
  return zoo;
}

static gboolean zoo_build(const char *name, wl_tf *tf)
{
  if (strcmp(name, "gpt3-1.7b") == 0)
    gpt(tf, name, 24, 2304, 24, 2048, 51200);
  else if (strcmp(name, "gpt3-175b") == 0)
    gpt(tf, name, 96, 12288, 96, 2048, 51200);
  else if (strcmp(name, "llama2-7b") == 0)
    llama(tf, name, 32, 4096, 32, 32, 11008, 4096, 32000);
  else if (strcmp(name, "llama2-70b") == 0)
    llama(tf, name, 80, 8192, 64, 8, 28672, 4096, 32000);
  else if (strcmp(name, "llama3-8b") == 0)
    llama(tf, name, 32, 4096, 32, 8, 14336, 8192, 128256);
  else if (strcmp(name, "llama3-70b") == 0)
    llama(tf, name, 80, 8192, 64, 8, 28672, 8192, 128256);
  else if (strcmp(name, "llama3-405b") == 0)
    llama(tf, name, 126, 16384, 128, 8, 53248, 8192, 128256);
  else if (strcmp(name, "bert-large") == 0) {
    /* Devlin et al. 2019; Hugging Face bert-large-uncased: 512 learned positions, 2 token
     * types, a layernorm after the embedding, post-norm blocks, a pooler, the MLM decoder tied
     * to the word embeddings. */
    gpt(tf, name, 24, 1024, 16, 512, 30522);
    tf->causal = FALSE;
    tf->type_vocab = 2;
    tf->embed_norm = TRUE;
    tf->final_norm = FALSE;
    tf->pooler = TRUE;
    /* Masked-language-model pre-training predicts the masked tokens only: NVIDIA's recipe
     * masks at most 20 of 128 (80 of 512) tokens per sequence. */
    tf->lm_fraction = 20.0 / 128.0;
  } else
    return FALSE;
  return TRUE;
}

gboolean wl_tf_is_transformer(const char *name)
{
  if (!name)
    return FALSE;
  if (g_str_has_prefix(name, "transformer:"))
    return TRUE;
  for (size_t i = 0; i < G_N_ELEMENTS(zoo); i++)
    if (strcmp(zoo[i].name, name) == 0)
      return TRUE;
  return FALSE;
}

static gboolean spec_error(GError **error, const char *spec, const char *key, const char *why)
{
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--model %s: %s: %s", spec, key, why);
  return FALSE;
}

/* A positive integer of at most 2^31 - 1. */
static gboolean spec_uint(const char *spec, const char *key, const char *value, uint32_t *out,
                          GError **error)
{
  char *end = NULL;
  errno = 0;
  long long v = strtoll(value, &end, 10);
  if (!*value || *end || errno || v <= 0 || v > G_MAXINT32)
    return spec_error(error, spec, key, "expected a positive integer");
  *out = (uint32_t)v;
  return TRUE;
}

static gboolean parse_spec(const char *spec, wl_tf *tf, GError **error)
{
  gpt(tf, spec, 0, 0, 0, 0, 0);
  tf->ffn = 0;
  tf->lm_fraction = 1.0;
  tf->kv_heads = 0;
  g_auto(GStrv) items = g_strsplit(spec + strlen("transformer:"), ",", -1);
  for (char **it = items; *it; it++) {
    char *eq = strchr(*it, '=');
    if (!eq)
      return spec_error(error, spec, *it, "expected key=value");
    *eq = '\0';
    const char *k = *it, *v = eq + 1;
    if (strcmp(k, "layers") == 0) {
      if (!spec_uint(spec, k, v, &tf->layers, error)) return FALSE;
    } else if (strcmp(k, "hidden") == 0) {
      if (!spec_uint(spec, k, v, &tf->hidden, error)) return FALSE;
    } else if (strcmp(k, "heads") == 0) {
      if (!spec_uint(spec, k, v, &tf->heads, error)) return FALSE;
    } else if (strcmp(k, "seq") == 0) {
      if (!spec_uint(spec, k, v, &tf->seq, error)) return FALSE;
    } else if (strcmp(k, "vocab") == 0) {
      if (!spec_uint(spec, k, v, &tf->vocab, error)) return FALSE;
    } else if (strcmp(k, "ffn") == 0) {
      if (!spec_uint(spec, k, v, &tf->ffn, error)) return FALSE;
    } else if (strcmp(k, "kv-heads") == 0) {
      if (!spec_uint(spec, k, v, &tf->kv_heads, error)) return FALSE;
    } else if (strcmp(k, "mlp") == 0) {
      if (strcmp(v, "gelu") == 0) tf->mlp = WL_MLP_GELU;
      else if (strcmp(v, "swiglu") == 0) tf->mlp = WL_MLP_SWIGLU;
      else return spec_error(error, spec, k, "expected gelu or swiglu");
    } else if (strcmp(k, "norm") == 0) {
      if (strcmp(v, "layernorm") == 0) tf->norm = WL_NORM_LAYERNORM;
      else if (strcmp(v, "rmsnorm") == 0) tf->norm = WL_NORM_RMSNORM;
      else return spec_error(error, spec, k, "expected layernorm or rmsnorm");
    } else if (strcmp(k, "causal") == 0) {
      if (strcmp(v, "1") == 0) tf->causal = TRUE;
      else if (strcmp(v, "0") == 0) tf->causal = FALSE;
      else return spec_error(error, spec, k, "expected 1 or 0");
    } else {
      return spec_error(error, spec, k,
                        "unknown key (expected layers, hidden, heads, seq, vocab, ffn, "
                        "kv-heads, mlp, norm, causal)");
    }
  }
  static const char *const required[] = {"layers", "hidden", "heads", "seq", "vocab"};
  uint32_t vals[] = {tf->layers, tf->hidden, tf->heads, tf->seq, tf->vocab};
  for (size_t i = 0; i < G_N_ELEMENTS(required); i++)
    if (vals[i] == 0)
      return spec_error(error, spec, required[i], "missing");
  if (tf->hidden % tf->heads)
    return spec_error(error, spec, "heads", "does not divide hidden");
  if (tf->kv_heads == 0)
    tf->kv_heads = tf->heads;
  if (tf->kv_heads > tf->heads || tf->heads % tf->kv_heads)
    return spec_error(error, spec, "kv-heads", "must divide heads");
  if (tf->ffn == 0)
    tf->ffn = 4 * tf->hidden;
  tf->max_positions = tf->seq;
  return TRUE;
}

gboolean wl_tf_parse(const char *name, wl_tf *out, GError **error)
{
  if (name && g_str_has_prefix(name, "transformer:"))
    return parse_spec(name, out, error);
  if (name && zoo_build(name, out))
    return TRUE;
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--model: '%s' is not a transformer", name);
  return FALSE;
}

void wl_tf_set_seq(wl_tf *tf, uint32_t seq)
{
  if (tf->max_positions && seq > tf->max_positions)
    tf->max_positions = seq;
  tf->seq = seq;
}

/* ---- Parameters ----------------------------------------------------------------------------- */

uint64_t wl_tf_head_dim(const wl_tf *tf) { return tf->hidden / tf->heads; }

static uint64_t kv_dim(const wl_tf *tf) { return (uint64_t)tf->kv_heads * wl_tf_head_dim(tf); }

uint64_t wl_tf_attention_params(const wl_tf *tf)
{
  uint64_t h = tf->hidden, kvd = kv_dim(tf);
  uint64_t w = h * h + 2 * h * kvd + h * h;
  return w + (tf->bias ? h + 2 * kvd + h : 0);
}

uint64_t wl_tf_mlp_params(const wl_tf *tf)
{
  uint64_t h = tf->hidden, f = tf->ffn;
  if (tf->mlp == WL_MLP_SWIGLU)
    return 3 * h * f + (tf->bias ? 2 * f + h : 0);
  return 2 * h * f + (tf->bias ? f + h : 0);
}

uint64_t wl_tf_norm_params(const wl_tf *tf)
{
  return tf->norm == WL_NORM_LAYERNORM ? 2 * (uint64_t)tf->hidden : tf->hidden;
}

uint64_t wl_tf_layer_params(const wl_tf *tf)
{
  return wl_tf_attention_params(tf) + wl_tf_mlp_params(tf) + 2 * wl_tf_norm_params(tf);
}

uint64_t wl_tf_embedding_params(const wl_tf *tf)
{
  uint64_t h = tf->hidden;
  return (uint64_t)tf->vocab * h + (uint64_t)tf->max_positions * h + (uint64_t)tf->type_vocab * h +
         (tf->embed_norm ? wl_tf_norm_params(tf) : 0);
}

uint64_t wl_tf_head_params(const wl_tf *tf)
{
  uint64_t h = tf->hidden;
  return (tf->final_norm ? wl_tf_norm_params(tf) : 0) + (tf->pooler ? h * h + h : 0) +
         (tf->tied_head ? 0 : (uint64_t)tf->vocab * h);
}

uint64_t wl_tf_params(const wl_tf *tf)
{
  return wl_tf_embedding_params(tf) + (uint64_t)tf->layers * wl_tf_layer_params(tf) +
         wl_tf_head_params(tf);
}

/* ---- Model FLOPs ---------------------------------------------------------------------------- */

/* Weights of one block that take part in matrix products (no biases or norms). */
static uint64_t layer_matrix_params(const wl_tf *tf)
{
  uint64_t h = tf->hidden, kvd = kv_dim(tf), f = tf->ffn;
  return 2 * h * h + 2 * h * kvd + (tf->mlp == WL_MLP_SWIGLU ? 3 : 2) * h * f;
}

uint64_t wl_tf_layer_forward_flops(const wl_tf *tf, uint64_t b, uint64_t s)
{
  return 2 * b * s * layer_matrix_params(tf) + 4 * b * s * s * tf->hidden;
}

uint64_t wl_tf_layer_attention_flops(const wl_tf *tf, uint64_t b, uint64_t s)
{
  uint64_t mm = 4 * b * s * s * (uint64_t)tf->heads * wl_tf_head_dim(tf);
  return tf->causal ? mm / 2 : mm;
}

void wl_tf_layer_run_flops(const wl_tf *tf, uint64_t b, uint64_t s, uint64_t *forward,
                           uint64_t *backward)
{
  uint64_t weights = 2 * b * s * layer_matrix_params(tf), attention = wl_tf_layer_attention_flops(tf, b, s);
  *forward = weights + attention;
  *backward = 2 * weights + attention * 5 / 2;
}

uint64_t wl_tf_head_forward_flops(const wl_tf *tf, uint64_t b, uint64_t s)
{
  return 2 * b * s * (uint64_t)tf->hidden * tf->vocab;
}

double wl_tf_iteration_flops(const wl_tf *tf, uint64_t B, uint64_t s, wl_recompute rc)
{
  double layer = (double)wl_tf_layer_forward_flops(tf, B, s) * tf->layers;
  double head = (double)wl_tf_head_forward_flops(tf, B, s);
  return (rc == WL_RECOMPUTE_FULL ? 4.0 : 3.0) * layer + 3.0 * head;
}

/* ---- Kernels -------------------------------------------------------------------------------- */

static unsigned gemm_in_bytes(wl_precision p) { return p == WL_PREC_FP8 ? 1 : wl_precision_bytes(p); }

/* A linear layer y[m x n] = x[m x k] W[k x n] and its two backward GEMMs. */
static void batched(wl_tf_kernel *kn, const char *name, uint64_t batch, uint64_t m, uint64_t n,
                    uint64_t k, wl_precision p);

static void linear(wl_tf_kernel *kn, const char *name, uint64_t m, uint64_t n, uint64_t k,
                   wl_precision p)
{
  batched(kn, name, 1, m, n, k, p);
}

/* `batch` independent GEMMs of that shape (attention's per-head products). */
static void batched(wl_tf_kernel *kn, const char *name, uint64_t batch, uint64_t m, uint64_t n,
                    uint64_t k, wl_precision p)
{
  memset(kn, 0, sizeof *kn);
  kn->name = name;
  uint64_t e = wl_precision_bytes(p), ge = gemm_in_bytes(p);
  /* (m, n, k) of forward, backward-data (dx = dy W^T) and backward-weights (dW = x^T dy). */
  uint64_t shape[3][3] = {{m, n, k}, {m, k, n}, {k, n, m}};
  for (int i = 0; i < 3; i++) {
    wl_op_cost *c = &kn->pass[i];
    c->kind = WL_OP_GEMM;
    c->pass = (wl_pass)i;
    c->precision = p;
    c->gemm_m = shape[i][0], c->gemm_n = shape[i][1], c->gemm_k = shape[i][2];
    c->gemm_batch = batch;
    c->flops = 2 * m * n * k * batch;
    c->bytes_read = (c->gemm_m * c->gemm_k + c->gemm_k * c->gemm_n) * ge * batch;
    /* Weight gradients accumulate over micro-batches in fp32. */
    c->bytes_written = c->gemm_m * c->gemm_n * (i == 2 && batch == 1 ? 4 : e) * batch;
    c->out_elems = c->gemm_m * c->gemm_n * batch;
    kn->has[i] = TRUE;
  }
}

/* A streaming kernel over `elems` elements: reads `reads` and writes `writes` tensors of that
 * size forward, about twice that backward; `flops_per` FLOPs per element. */
static void stream(wl_tf_kernel *kn, const char *name, uint64_t elems, unsigned reads,
                   unsigned writes, unsigned flops_per, wl_precision p)
{
  memset(kn, 0, sizeof *kn);
  kn->name = name;
  uint64_t e = wl_precision_bytes(p);
  for (int i = 0; i < 2; i++) {
    wl_op_cost *c = &kn->pass[i];
    c->kind = WL_OP_ELEMENTWISE;
    c->pass = (wl_pass)i;
    c->precision = p;
    c->flops = elems * flops_per * (i ? 2 : 1);
    c->bytes_read = elems * e * (i ? reads + writes : reads);
    c->bytes_written = elems * e * (i ? reads : writes);
    c->out_elems = elems;
    kn->has[i] = TRUE;
  }
}

size_t wl_tf_layer_kernels(const wl_tf *tf, const wl_tf_shard *sh, wl_tf_kernel *out)
{
  uint64_t t = sh->tp ? sh->tp : 1;
  uint64_t T = (uint64_t)sh->micro_batch * sh->seq;          /* tokens */
  uint64_t Tn = sh->seq_parallel ? T / t : T;                 /* tokens outside TP regions */
  uint64_t h = tf->hidden, kvd = kv_dim(tf), f = tf->ffn, hd = wl_tf_head_dim(tf);
  uint64_t heads = tf->heads / t;
  wl_precision p = sh->precision;
  uint64_t e = wl_precision_bytes(p);
  size_t n = 0;
  /* Norms read x and write y (layernorm: mean, variance, scale, shift: about 8 FLOPs per
   * element); residual blocks apply dropout and add: read two tensors, write one and a mask. */
  stream(&out[n++], "norm1", Tn * h, 1, 1, 8, p);
  linear(&out[n++], "qkv", T, (h + 2 * kvd) / t, h, p);
  if (sh->attention == WL_ATTN_UNFUSED) {
    /* Per head: scores S = Q K^T (s x s x hd), softmax with mask and dropout over S (read S,
     * write the probabilities and the dropped-out copy, and a 1-byte mask), then P V. */
    uint64_t bh = (uint64_t)sh->micro_batch * heads;
    batched(&out[n], "scores", bh, sh->seq, sh->seq, hd, p);
    out[n++].attention_core = TRUE;
    stream(&out[n], "softmax", bh * sh->seq * sh->seq, 1, 2, 6, p);
    out[n++].attention_core = TRUE;
    batched(&out[n], "context", bh, sh->seq, hd, sh->seq, p);
    out[n++].attention_core = TRUE;
  } else {
    /* Flash attention: per head b s^2 hd multiply-adds for Q K^T and as many for P V. */
    wl_tf_kernel *at = &out[n++];
    memset(at, 0, sizeof *at);
    at->name = "attention";
    at->attention_core = TRUE;
    uint64_t mm = 4 * (uint64_t)sh->micro_batch * heads * sh->seq * sh->seq * hd;
    if (tf->causal)
      mm /= 2;
    uint64_t qkv_bytes = T * (h + 2 * kvd) / t * e, o_bytes = T * h / t * e;
    for (int i = 0; i < 2; i++) {
      wl_op_cost *c = &at->pass[i];
      c->kind = WL_OP_ATTENTION;
      c->pass = (wl_pass)i;
      c->precision = p;
      /* Backward: Q K^T again, dV, dP, dQ and dK: five products against the forward's two. */
      c->flops = i ? mm * 5 / 2 : mm;
      c->bytes_read = i ? qkv_bytes + 2 * o_bytes : qkv_bytes;
      c->bytes_written = i ? qkv_bytes : o_bytes;
      c->out_elems = T * h / t;
      at->has[i] = TRUE;
    }
  }
  linear(&out[n++], "proj", T, h, h / t, p);
  stream(&out[n++], "residual1", Tn * h, 2, 1, 2, p);
  stream(&out[n++], "norm2", Tn * h, 1, 1, 8, p);
  gboolean swiglu = tf->mlp == WL_MLP_SWIGLU;
  linear(&out[n++], "fc1", T, (swiglu ? 2 * f : f) / t, h, p);
  stream(&out[n++], swiglu ? "swiglu" : "gelu", T * f / t, swiglu ? 2 : 1, 1, 8, p);
  linear(&out[n++], "fc2", T, h, f / t, p);
  stream(&out[n++], "residual2", Tn * h, 2, 1, 2, p);
  (void)heads;
  return n;
}

size_t wl_tf_embedding_kernels(const wl_tf *tf, const wl_tf_shard *sh, wl_tf_kernel *out)
{
  uint64_t t = sh->tp ? sh->tp : 1;
  uint64_t T = (uint64_t)sh->micro_batch * sh->seq;
  uint64_t h = tf->hidden;
  /* Gather T rows of the (vocabulary-parallel) table, add positions; backward scatter-adds
   * the gradient rows into the fp32 table gradient. */
  stream(&out[0], "embedding", T * h, 2, 1, 1, sh->precision);
  /* Token ids have no gradient: the backward pass is the table's (weights) gradient. */
  out[0].pass[2] = out[0].pass[1];
  out[0].pass[2].pass = WL_PASS_BACKWARD_WEIGHTS;
  out[0].has[2] = TRUE;
  memset(&out[0].pass[1], 0, sizeof out[0].pass[1]);
  out[0].has[1] = FALSE;
  (void)t;
  return 1;
}

size_t wl_tf_head_kernels(const wl_tf *tf, const wl_tf_shard *sh, wl_tf_kernel *out)
{
  uint64_t t = sh->tp ? sh->tp : 1;
  uint64_t T = (uint64_t)sh->micro_batch * sh->seq;
  uint64_t Tn = sh->seq_parallel ? T / t : T;
  uint64_t h = tf->hidden, pad = 128 * t;
  uint64_t Vr = (tf->vocab + pad - 1) / pad * pad / t;   /* padded vocabulary of one rank */
  double frac = tf->lm_fraction > 0 ? tf->lm_fraction : 1.0;
  uint64_t Tp = (uint64_t)((double)T * frac + 0.5);
  if (Tp == 0)
    Tp = 1;
  size_t n = 0;
  if (tf->final_norm)
    stream(&out[n++], "final_norm", Tn * h, 1, 1, 8, sh->precision);
  linear(&out[n++], "lm_head", Tp, Vr, h, sh->precision);
  /* Vocabulary-parallel cross-entropy: max, sum of exponentials and the gradient over the
   * rank's logits. */
  stream(&out[n++], "cross_entropy", Tp * Vr, 2, 1, 4, sh->precision);
  return n;
}

/* ---- Memory --------------------------------------------------------------------------------- */

void wl_tf_state_memory(uint64_t params, uint32_t dp, unsigned zero, wl_precision precision,
                        wl_tf_state_bytes *out)
{
  uint64_t d = dp ? dp : 1;
  /* fp32 and tf32 train fp32 weights and gradients with two fp32 moments (16 bytes too, but
   * without a master copy); fp16, bf16 and fp8 keep 2-byte weights and gradients, an fp32
   * master copy and two moments. */
  gboolean full = precision == WL_PREC_FP32 || precision == WL_PREC_TF32;
  uint64_t w = params * (full ? 4 : 2), g = params * (full ? 4 : 2);
  uint64_t o = params * (full ? 8 : 12);
  out->optimizer = zero >= 1 ? (o + d - 1) / d : o;
  out->gradients = zero >= 2 ? (g + d - 1) / d : g;
  out->weights = zero >= 3 ? (w + d - 1) / d : w;
}

uint64_t wl_tf_layer_activation_bytes(const wl_tf *tf, uint64_t s, uint64_t b, uint32_t tp,
                                      gboolean sp, wl_recompute rc, wl_precision precision)
{
  uint64_t t = tp ? tp : 1;
  uint64_t h = tf->hidden, a = tf->heads, kvd = kv_dim(tf), f = tf->ffn;
  uint64_t eb = wl_precision_bytes(precision);   /* 2 in the paper */
  uint64_t sb = s * b;
  if (rc == WL_RECOMPUTE_FULL)
    return 2 * sb * h * eb / 2 / (sp ? t : 1);
  /* Outside tensor-parallel regions: the two norms' inputs (2 sbh each), the inputs of the QKV
   * and first MLP GEMMs (2 sbh each), two dropout masks (sbh each, 1 byte): 10 sbh. */
  uint64_t outside = (8 * sb * h) * eb / 2 + 2 * sb * h;
  /* Inside: Q, K and V (2 sbh + 4 sb kvd), the projection's input (2 sbh), the MLP
   * activation's input and output (2 sbf each; swiglu's input is gate and up, 4 sbf): 24 sbh
   * for GPT. */
  uint64_t inside = (2 * sb * h + 4 * sb * kvd + 2 * sb * h +
                     (tf->mlp == WL_MLP_SWIGLU ? 6 : 4) * sb * f) * eb / 2;
  /* Attention matrix: softmax output (2 a s^2 b), its dropout mask (a s^2 b) and output
   * (2 a s^2 b). */
  uint64_t scores = rc == WL_RECOMPUTE_NONE ? 5 * a * s * sb : 0;
  uint64_t bytes = (sp ? outside / t : outside) + inside / t + scores / t;
  return bytes;
}

uint64_t wl_tf_inflight_chunks(wl_schedule sched, uint32_t P, uint32_t V, uint64_t m,
                               uint32_t rank)
{
  uint64_t v = V ? V : 1;
  switch (sched) {
  case WL_SCHED_GPIPE:
    return m;
  case WL_SCHED_1F1B: {
    uint64_t k = (uint64_t)P - rank;
    return k < m ? k : m;
  }
  case WL_SCHED_INTERLEAVED: {
    uint64_t k = ((uint64_t)P - rank - 1) * 2 + (v - 1) * P + 1;
    return k < m * v ? k : m * v;
  }
  }
  return m;
}

static const char *const rc_names[] = {"none", "selective", "full"};
static const char *const attn_names[] = {"flash", "unfused"};

const char *wl_attention_name(wl_attention a) { return a <= WL_ATTN_UNFUSED ? attn_names[a] : "?"; }
int wl_attention_parse(const char *name)
{
  for (int i = 0; i < 2; i++)
    if (name && strcmp(name, attn_names[i]) == 0)
      return i;
  return -1;
}
static const char *const sched_names[] = {"gpipe", "1f1b", "interleaved"};

const char *wl_recompute_name(wl_recompute r) { return r <= WL_RECOMPUTE_FULL ? rc_names[r] : "?"; }
int wl_recompute_parse(const char *name)
{
  for (int i = 0; i < 3; i++)
    if (name && strcmp(name, rc_names[i]) == 0)
      return i;
  return -1;
}
const char *wl_schedule_name(wl_schedule s) { return s <= WL_SCHED_INTERLEAVED ? sched_names[s] : "?"; }
int wl_schedule_parse(const char *name)
{
  for (int i = 0; i < 3; i++)
    if (name && strcmp(name, sched_names[i]) == 0)
      return i;
  return -1;
}
