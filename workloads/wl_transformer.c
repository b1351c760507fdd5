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
  tf->positions = WL_POS_ROTARY;
}

/* A mixture of experts on a Llama-style model: blocks dense .. l - 1 route each token to k of
 * e gated experts of width f, beside `shared` always-on ones. */
static void moe(wl_tf *tf, uint32_t e, uint32_t k, uint32_t f, uint32_t shared, uint32_t dense)
{
  tf->experts = e, tf->topk = k, tf->moe_ffn = f, tf->shared_experts = shared;
  tf->dense_layers = dense;
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
    {"mixtral-8x7b", "Mixtral 8x7B: 32 layers, h 4096, 32 heads (8 kv), 8 experts top 2 of "
                     "ffn 14336, s 4096"},
    {"mixtral-8x22b", "Mixtral 8x22B: 56 layers, h 6144, 48 heads (8 kv), 8 experts top 2 of "
                      "ffn 16384, s 4096"},
    {"deepseek-v3", "DeepSeek-V3: 61 layers (3 dense), h 7168, MLA 128 heads, 1 shared + 256 "
                    "experts top 8 of ffn 2048, s 4096"},
    {"qwen3-30b-a3b", "Qwen3 30B-A3B: 48 layers, h 2048, 32 heads (4 kv) of 128, 128 experts "
                      "top 8 of ffn 768, s 4096"},
    {"qwen3-235b-a22b", "Qwen3 235B-A22B: 94 layers, h 4096, 64 heads (4 kv) of 128, 128 "
                        "experts top 8 of ffn 1536, s 4096"},
    {"gpt-oss-120b", "GPT-OSS 120B: 36 layers, h 2880, 64 heads (8 kv) of 64, 128 experts top "
                     "4 of ffn 2880, s 4096"},
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
  } else if (strcmp(name, "mixtral-8x7b") == 0) {
    /* Jiang et al. 2024 (arXiv 2401.04088) Table 1; mistralai/Mixtral-8x7B-v0.1 config.json. */
    llama(tf, name, 32, 4096, 32, 8, 14336, 4096, 32000);
    moe(tf, 8, 2, 14336, 0, 0);
  } else if (strcmp(name, "mixtral-8x22b") == 0) {
    /* mistralai/Mixtral-8x22B-v0.1 config.json (vocabulary 32768). */
    llama(tf, name, 56, 6144, 48, 8, 16384, 4096, 32768);
    moe(tf, 8, 2, 16384, 0, 0);
  } else if (strcmp(name, "deepseek-v3") == 0) {
    /* DeepSeek-V3 technical report (arXiv 2412.19437) section 4.2 and deepseek-ai/DeepSeek-V3
     * config.json: MLA with q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128,
     * qk_rope_head_dim 64, v_head_dim 128; the first 3 blocks dense (ffn 18432); 1 shared and
     * 256 routed experts of 2048, 8 per token; a per-expert bias on the routing scores. The
     * multi-token-prediction module (one more block, 14 B) is not counted: 671 B. */
    llama(tf, name, 61, 7168, 128, 128, 18432, 4096, 129280);
    tf->head_dim = 192, tf->v_head_dim = 128, tf->rope_dim = 64;
    tf->q_lora = 1536, tf->kv_lora = 512;
    moe(tf, 256, 8, 2048, 1, 3);
    tf->router_bias = TRUE;
    /* Node-limited routing (report sec. 2.1.2; config.json n_group 8, topk_group 4): a token's
     * 8 experts lie in at most 4 of 8 groups of 32 consecutive experts. */
    tf->expert_groups = 8, tf->group_topk = 4;
  } else if (strcmp(name, "qwen3-30b-a3b") == 0) {
    /* Qwen3 technical report (arXiv 2505.09388) Table 2; Qwen/Qwen3-30B-A3B config.json:
     * head_dim 128, q/k rmsnorm per head, every block a mixture of experts. */
    llama(tf, name, 48, 2048, 32, 4, 6144, 4096, 151936);
    tf->head_dim = 128, tf->qk_norm = TRUE;
    moe(tf, 128, 8, 768, 0, 0);
  } else if (strcmp(name, "qwen3-235b-a22b") == 0) {
    llama(tf, name, 94, 4096, 64, 4, 12288, 4096, 151936);
    tf->head_dim = 128, tf->qk_norm = TRUE;
    moe(tf, 128, 8, 1536, 0, 0);
  } else if (strcmp(name, "gpt-oss-120b") == 0) {
    /* OpenAI gpt-oss model card (2025) and openai/gpt-oss-120b config.json: head_dim 64,
     * biases on the attention, router and experts, a learned sink per head; every other
     * block attends to a 128-token window, which is counted here as full attention. */
    llama(tf, name, 36, 2880, 64, 8, 2880, 4096, 201088);
    tf->head_dim = 64, tf->bias = TRUE, tf->sinks = TRUE;
    moe(tf, 128, 4, 2880, 0, 0);
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

/* A count of at most 2^31 - 1 that may be 0. */
static gboolean spec_count(const char *spec, const char *key, const char *value, uint32_t *out,
                           GError **error)
{
  if (strcmp(value, "0") == 0) {
    *out = 0;
    return TRUE;
  }
  if (!spec_uint(spec, key, value, out, NULL))
    return spec_error(error, spec, key, "expected a non-negative integer");
  return TRUE;
}

static gboolean spec_bool(const char *spec, const char *key, const char *value, gboolean *out,
                          GError **error)
{
  if (strcmp(value, "1") == 0)
    *out = TRUE;
  else if (strcmp(value, "0") == 0)
    *out = FALSE;
  else
    return spec_error(error, spec, key, "expected 1 or 0");
  return TRUE;
}

/* The keys of an inline spec with an unsigned value, and where each goes. */
typedef struct {
  const char *key;
  size_t offset;
  gboolean zero_ok;
} spec_number;

static const spec_number spec_numbers[] = {
    {"layers", G_STRUCT_OFFSET(wl_tf, layers), FALSE},
    {"hidden", G_STRUCT_OFFSET(wl_tf, hidden), FALSE},
    {"heads", G_STRUCT_OFFSET(wl_tf, heads), FALSE},
    {"seq", G_STRUCT_OFFSET(wl_tf, seq), FALSE},
    {"vocab", G_STRUCT_OFFSET(wl_tf, vocab), FALSE},
    {"ffn", G_STRUCT_OFFSET(wl_tf, ffn), FALSE},
    {"kv-heads", G_STRUCT_OFFSET(wl_tf, kv_heads), FALSE},
    {"head-dim", G_STRUCT_OFFSET(wl_tf, head_dim), FALSE},
    {"experts", G_STRUCT_OFFSET(wl_tf, experts), FALSE},
    {"topk", G_STRUCT_OFFSET(wl_tf, topk), FALSE},
    {"moe-ffn", G_STRUCT_OFFSET(wl_tf, moe_ffn), FALSE},
    {"shared-experts", G_STRUCT_OFFSET(wl_tf, shared_experts), TRUE},
    {"dense-layers", G_STRUCT_OFFSET(wl_tf, dense_layers), TRUE},
    {"expert-groups", G_STRUCT_OFFSET(wl_tf, expert_groups), FALSE},
    {"group-topk", G_STRUCT_OFFSET(wl_tf, group_topk), FALSE},
    {"mtp", G_STRUCT_OFFSET(wl_tf, mtp), TRUE},
};

#define SPEC_KEYS                                                                                 \
  "layers, hidden, heads, seq, vocab, ffn, kv-heads, head-dim, mlp, norm, causal, family, "     \
  "bias, tied, positions, experts, topk, moe-ffn, shared-experts, dense-layers, expert-groups, "  \
  "group-topk, mtp"

/* Checks the keys that relate to each other, and fills in the defaults. */
static gboolean spec_finish(const char *spec, wl_tf *tf, GError **error)
{
  static const char *const required[] = {"layers", "hidden", "heads", "seq", "vocab"};
  uint32_t vals[] = {tf->layers, tf->hidden, tf->heads, tf->seq, tf->vocab};
  for (size_t i = 0; i < G_N_ELEMENTS(required); i++)
    if (vals[i] == 0)
      return spec_error(error, spec, required[i], "missing");
  if (!tf->head_dim && tf->hidden % tf->heads)
    return spec_error(error, spec, "heads", "does not divide hidden (give head-dim)");
  if (tf->kv_heads == 0)
    tf->kv_heads = tf->heads;
  if (tf->kv_heads > tf->heads || tf->heads % tf->kv_heads)
    return spec_error(error, spec, "kv-heads", "must divide heads");
  if (tf->ffn == 0)
    tf->ffn = 4 * tf->hidden;
  if (!tf->experts) {
    static const char *const moe_keys[] = {"topk",         "moe-ffn",     "shared-experts",
                                           "dense-layers", "expert-groups", "group-topk"};
    uint32_t moe_vals[] = {tf->topk,         tf->moe_ffn,       tf->shared_experts,
                           tf->dense_layers, tf->expert_groups, tf->group_topk};
    for (size_t i = 0; i < G_N_ELEMENTS(moe_keys); i++)
      if (moe_vals[i])
        return spec_error(error, spec, moe_keys[i], "needs experts");
  } else {
    if (tf->topk == 0)
      tf->topk = 1;
    if (tf->topk > tf->experts)
      return spec_error(error, spec, "topk", "exceeds experts");
    if (tf->moe_ffn == 0)
      tf->moe_ffn = tf->ffn;
    if (tf->dense_layers > tf->layers)
      return spec_error(error, spec, "dense-layers", "exceeds layers");
    /* Group-limited routing: whole groups of experts, the chosen groups holding at least topk
     * experts. */
    if (tf->group_topk && !tf->expert_groups)
      return spec_error(error, spec, "group-topk", "needs expert-groups");
    if (tf->expert_groups && !tf->group_topk)
      return spec_error(error, spec, "group-topk", "missing (expert-groups needs it)");
    if (tf->expert_groups && tf->experts % tf->expert_groups)
      return spec_error(error, spec, "expert-groups", "must divide experts");
    if (tf->group_topk > tf->expert_groups)
      return spec_error(error, spec, "group-topk", "exceeds expert-groups");
    if (tf->expert_groups &&
        (uint64_t)tf->group_topk * (tf->experts / tf->expert_groups) < tf->topk)
      return spec_error(error, spec, "group-topk",
                        "its groups hold fewer experts than topk");
  }
  /* Each multi-token-prediction module predicts one token further: more than there are blocks
   * is no model anyone trains, and bounds the parameter count. */
  if (tf->mtp > tf->layers)
    return spec_error(error, spec, "mtp", "exceeds layers");
  tf->max_positions = tf->positions == WL_POS_LEARNED ? tf->seq : 0;
  return TRUE;
}

static gboolean parse_spec(const char *spec, wl_tf *tf, GError **error)
{
  g_auto(GStrv) items = g_strsplit(spec + strlen("transformer:"), ",", -1);
  /* The family sets the defaults the other keys override, wherever it stands. */
  gpt(tf, spec, 0, 0, 0, 0, 0);
  for (char **it = items; *it; it++)
    if (g_str_has_prefix(*it, "family=")) {
      const char *v = *it + strlen("family=");
      if (strcmp(v, "llama") == 0)
        llama(tf, spec, 0, 0, 0, 0, 0, 0, 0);
      else if (strcmp(v, "gpt") != 0)
        return spec_error(error, spec, "family", "expected gpt or llama");
    }
  tf->ffn = 0;
  tf->kv_heads = 0;
  for (char **it = items; *it; it++) {
    char *eq = strchr(*it, '=');
    if (!eq)
      return spec_error(error, spec, *it, "expected key=value");
    *eq = '\0';
    const char *k = *it, *v = eq + 1;
    const spec_number *num = NULL;
    for (size_t i = 0; i < G_N_ELEMENTS(spec_numbers); i++)
      if (strcmp(k, spec_numbers[i].key) == 0)
        num = &spec_numbers[i];
    if (num) {
      uint32_t *out = G_STRUCT_MEMBER_P(tf, num->offset);
      if (!(num->zero_ok ? spec_count : spec_uint)(spec, k, v, out, error))
        return FALSE;
    } else if (strcmp(k, "family") == 0) {
      continue;
    } else if (strcmp(k, "mlp") == 0) {
      if (strcmp(v, "gelu") == 0) tf->mlp = WL_MLP_GELU;
      else if (strcmp(v, "swiglu") == 0) tf->mlp = WL_MLP_SWIGLU;
      else return spec_error(error, spec, k, "expected gelu or swiglu");
    } else if (strcmp(k, "norm") == 0) {
      if (strcmp(v, "layernorm") == 0) tf->norm = WL_NORM_LAYERNORM;
      else if (strcmp(v, "rmsnorm") == 0) tf->norm = WL_NORM_RMSNORM;
      else return spec_error(error, spec, k, "expected layernorm or rmsnorm");
    } else if (strcmp(k, "positions") == 0) {
      if (strcmp(v, "learned") == 0) tf->positions = WL_POS_LEARNED;
      else if (strcmp(v, "rotary") == 0) tf->positions = WL_POS_ROTARY;
      else if (strcmp(v, "alibi") == 0) tf->positions = WL_POS_ALIBI;
      else return spec_error(error, spec, k, "expected learned, rotary or alibi");
    } else if (strcmp(k, "causal") == 0) {
      if (!spec_bool(spec, k, v, &tf->causal, error)) return FALSE;
    } else if (strcmp(k, "bias") == 0) {
      if (!spec_bool(spec, k, v, &tf->bias, error)) return FALSE;
    } else if (strcmp(k, "tied") == 0) {
      if (!spec_bool(spec, k, v, &tf->tied_head, error)) return FALSE;
    } else {
      return spec_error(error, spec, k, "unknown key (expected " SPEC_KEYS ")");
    }
  }
  return spec_finish(spec, tf, error);
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

uint64_t wl_tf_head_dim(const wl_tf *tf)
{
  return tf->head_dim ? tf->head_dim : tf->hidden / tf->heads;
}

static uint64_t v_dim(const wl_tf *tf) { return tf->v_head_dim ? tf->v_head_dim : wl_tf_head_dim(tf); }

/* Width of the keys (kv-heads x head_dim) and of the values (kv-heads x value head). */
static uint64_t kv_dim(const wl_tf *tf) { return (uint64_t)tf->kv_heads * wl_tf_head_dim(tf); }
static uint64_t kv_vdim(const wl_tf *tf) { return (uint64_t)tf->kv_heads * v_dim(tf); }

/* A norm over n elements: scale (and shift for layernorm). */
static uint64_t norm_of(const wl_tf *tf, uint64_t n) { return tf->norm == WL_NORM_LAYERNORM ? 2 * n : n; }

/* Matrix weights of the attention: the projections (MLA: compressions and expansions). */
static uint64_t attention_matrix_params(const wl_tf *tf)
{
  uint64_t h = tf->hidden, a = tf->heads, hd = wl_tf_head_dim(tf), vd = v_dim(tf);
  if (tf->kv_lora) {
    uint64_t q = tf->q_lora ? h * tf->q_lora + (uint64_t)tf->q_lora * a * hd : h * a * hd;
    uint64_t kv = h * ((uint64_t)tf->kv_lora + tf->rope_dim) +
                  (uint64_t)tf->kv_lora * a * (hd - tf->rope_dim + vd);
    return q + kv + a * vd * h;
  }
  return h * a * hd + h * kv_dim(tf) + h * kv_vdim(tf) + a * vd * h;
}

uint64_t wl_tf_attention_params(const wl_tf *tf)
{
  uint64_t h = tf->hidden, a = tf->heads, hd = wl_tf_head_dim(tf);
  uint64_t n = attention_matrix_params(tf);
  if (tf->bias && !tf->kv_lora)
    n += a * hd + kv_dim(tf) + kv_vdim(tf) + h;
  if (tf->kv_lora)   /* the norms of the two compressions */
    n += norm_of(tf, tf->q_lora) + norm_of(tf, tf->kv_lora);
  if (tf->qk_norm)
    n += 2 * norm_of(tf, hd);
  if (tf->sinks)
    n += a;
  return n;
}

uint64_t wl_tf_mlp_params(const wl_tf *tf)
{
  uint64_t h = tf->hidden, f = tf->ffn;
  if (tf->mlp == WL_MLP_SWIGLU)
    return 3 * h * f + (tf->bias ? 2 * f + h : 0);
  return 2 * h * f + (tf->bias ? f + h : 0);
}

uint64_t wl_tf_expert_params(const wl_tf *tf)
{
  uint64_t h = tf->hidden, f = tf->moe_ffn;
  return 3 * h * f + (tf->bias ? 2 * f + h : 0);
}

uint64_t wl_tf_router_params(const wl_tf *tf)
{
  uint64_t e = tf->experts;
  return tf->hidden * e + (tf->bias || tf->router_bias ? e : 0);
}

uint64_t wl_tf_norm_params(const wl_tf *tf) { return norm_of(tf, tf->hidden); }

gboolean wl_tf_block_is_moe(const wl_tf *tf, uint32_t block)
{
  return tf->experts > 0 && block >= tf->dense_layers;
}

uint32_t wl_tf_dense_blocks(const wl_tf *tf)
{
  return tf->experts ? MIN(tf->dense_layers, tf->layers) : tf->layers;
}

/* The block's parameters, with `experts` of its routed experts counted. */
static uint64_t block_params_with(const wl_tf *tf, uint32_t block, uint64_t experts)
{
  uint64_t mlp = wl_tf_block_is_moe(tf, block)
                     ? wl_tf_router_params(tf) + (experts + tf->shared_experts) * wl_tf_expert_params(tf)
                     : wl_tf_mlp_params(tf);
  return wl_tf_attention_params(tf) + mlp + 2 * wl_tf_norm_params(tf);
}

uint64_t wl_tf_block_params(const wl_tf *tf, uint32_t block)
{
  return block_params_with(tf, block, tf->experts);
}

uint64_t wl_tf_block_active_params(const wl_tf *tf, uint32_t block)
{
  return block_params_with(tf, block, tf->topk);
}

uint64_t wl_tf_layer_params(const wl_tf *tf)
{
  return wl_tf_block_params(tf, tf->layers ? tf->layers - 1 : 0);
}

uint64_t wl_tf_blocks_params(const wl_tf *tf, uint32_t first, uint32_t count)
{
  /* Blocks are of two kinds, dense before `split`: each kind is counted once. */
  uint32_t end = first + count, split = CLAMP(wl_tf_dense_blocks(tf), first, end);
  uint64_t n = 0;
  if (split > first)
    n += (uint64_t)(split - first) * wl_tf_block_params(tf, first);
  if (end > split)
    n += (uint64_t)(end - split) * wl_tf_block_params(tf, split);
  return n;
}

uint64_t wl_tf_blocks_expert_params(const wl_tf *tf, uint32_t first, uint32_t count)
{
  uint32_t end = first + count, split = CLAMP(wl_tf_dense_blocks(tf), first, end);
  return (uint64_t)(end - split) * tf->experts * wl_tf_expert_params(tf);
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

/* One multi-token-prediction module's parameters besides its block: the norms of the hidden
 * state and of the next token's embedding, the projection 2h -> h and the final norm. */
static uint64_t mtp_extra_params(const wl_tf *tf)
{
  uint64_t h = tf->hidden;
  return 3 * wl_tf_norm_params(tf) + 2 * h * h;
}

uint64_t wl_tf_mtp_params(const wl_tf *tf)
{
  if (!tf->mtp || !tf->layers)
    return 0;
  return tf->mtp * (mtp_extra_params(tf) + wl_tf_layer_params(tf));
}

uint64_t wl_tf_params(const wl_tf *tf)
{
  return wl_tf_embedding_params(tf) + wl_tf_blocks_params(tf, 0, tf->layers) +
         wl_tf_head_params(tf) + wl_tf_mtp_params(tf);
}

uint64_t wl_tf_active_params(const wl_tf *tf)
{
  uint64_t n = wl_tf_embedding_params(tf) + wl_tf_head_params(tf);
  if (tf->mtp && tf->layers)
    n += tf->mtp * (mtp_extra_params(tf) + wl_tf_block_active_params(tf, tf->layers - 1));
  uint32_t dense = wl_tf_dense_blocks(tf);
  if (dense)
    n += (uint64_t)dense * wl_tf_block_active_params(tf, 0);
  if (tf->layers > dense)
    n += (uint64_t)(tf->layers - dense) * wl_tf_block_active_params(tf, dense);
  return n;
}

/* ---- Model FLOPs ---------------------------------------------------------------------------- */

/* Weights of block `block` that one token multiplies (no biases or norms): the attention's,
 * and the dense MLP's or the router's and its topk and shared experts'. */
static uint64_t block_matrix_params(const wl_tf *tf, uint32_t block)
{
  uint64_t h = tf->hidden;
  uint64_t mlp = wl_tf_block_is_moe(tf, block)
                     ? h * tf->experts + ((uint64_t)tf->topk + tf->shared_experts) * 3 * h * tf->moe_ffn
                     : (tf->mlp == WL_MLP_SWIGLU ? 3 : 2) * h * tf->ffn;
  return attention_matrix_params(tf) + mlp;
}

uint64_t wl_tf_block_forward_flops(const wl_tf *tf, uint32_t block, uint64_t b, uint64_t s)
{
  return 2 * b * s * block_matrix_params(tf, block) +
         2 * b * s * s * tf->heads * (wl_tf_head_dim(tf) + v_dim(tf));
}

uint64_t wl_tf_layer_forward_flops(const wl_tf *tf, uint64_t b, uint64_t s)
{
  return wl_tf_block_forward_flops(tf, tf->layers ? tf->layers - 1 : 0, b, s);
}

uint64_t wl_tf_layer_attention_flops(const wl_tf *tf, uint64_t b, uint64_t s)
{
  uint64_t mm = 2 * b * s * s * (uint64_t)tf->heads * (wl_tf_head_dim(tf) + v_dim(tf));
  return tf->causal ? mm / 2 : mm;
}

void wl_tf_block_run_flops(const wl_tf *tf, uint32_t block, uint64_t b, uint64_t s,
                           uint64_t *forward, uint64_t *backward)
{
  uint64_t weights = 2 * b * s * block_matrix_params(tf, block);
  uint64_t attention = wl_tf_layer_attention_flops(tf, b, s);
  *forward = weights + attention;
  *backward = 2 * weights + attention * 5 / 2;
}

uint64_t wl_tf_head_forward_flops(const wl_tf *tf, uint64_t b, uint64_t s)
{
  return 2 * b * s * (uint64_t)tf->hidden * tf->vocab;
}

uint64_t wl_tf_mtp_forward_flops(const wl_tf *tf, uint64_t b, uint64_t s)
{
  if (!tf->mtp || !tf->layers)
    return 0;
  uint64_t h = tf->hidden;
  return tf->mtp * (2 * b * s * 2 * h * h + wl_tf_layer_forward_flops(tf, b, s) +
                    wl_tf_head_forward_flops(tf, b, s));
}

double wl_tf_iteration_flops(const wl_tf *tf, uint64_t B, uint64_t s, wl_recompute rc)
{
  double layer = 0;
  uint32_t dense = wl_tf_dense_blocks(tf);
  if (dense)
    layer += (double)wl_tf_block_forward_flops(tf, 0, B, s) * dense;
  if (tf->layers > dense)
    layer += (double)wl_tf_block_forward_flops(tf, dense, B, s) * (tf->layers - dense);
  /* The modules' blocks recompute as the others do; their projections and heads do not. */
  double mtp_block = tf->mtp && tf->layers
                         ? (double)tf->mtp * (double)wl_tf_layer_forward_flops(tf, B, s) : 0;
  layer += mtp_block;
  double head = (double)wl_tf_head_forward_flops(tf, B, s) +
                (double)wl_tf_mtp_forward_flops(tf, B, s) - mtp_block;
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

void wl_tf_gemm_kernel(wl_tf_kernel *kn, const char *name, uint64_t batch, uint64_t m,
                       uint64_t n, uint64_t k, wl_precision p)
{
  batched(kn, name, batch, m, n, k, p);
}

void wl_tf_stream_kernel(wl_tf_kernel *kn, const char *name, uint64_t elems, unsigned reads,
                         unsigned writes, unsigned flops_per, wl_precision p)
{
  stream(kn, name, elems, reads, writes, flops_per, p);
}

/* The attention's projections into Q, K and V on one rank (n: the count so far). Plain
 * attention: one GEMM to (heads + 2 kv-heads) x head widths / t. MLA: the query compression
 * (replicated on every rank) and its expansion, the key/value compression with the shared
 * rotary key (replicated) and its expansion into the rank's heads. */
static size_t qkv_kernels(const wl_tf *tf, uint64_t T, uint64_t t, wl_precision p,
                          wl_tf_kernel *out)
{
  uint64_t h = tf->hidden, a = tf->heads, hd = wl_tf_head_dim(tf), vd = v_dim(tf);
  size_t n = 0;
  if (!tf->kv_lora) {
    linear(&out[n++], "qkv", T, (a * hd + kv_dim(tf) + kv_vdim(tf)) / t, h, p);
    return n;
  }
  if (tf->q_lora) {
    linear(&out[n++], "q_down", T, tf->q_lora, h, p);
    linear(&out[n++], "q_up", T, a * hd / t, tf->q_lora, p);
  } else {
    linear(&out[n++], "q", T, a * hd / t, h, p);
  }
  linear(&out[n++], "kv_down", T, (uint64_t)tf->kv_lora + tf->rope_dim, h, p);
  linear(&out[n++], "kv_up", T, a * (hd - tf->rope_dim + vd) / t, tf->kv_lora, p);
  return n;
}

/* The MLP of a mixture-of-experts block on one rank: the router, the gather of each token's
 * topk copies by expert, the experts' grouped GEMMs (tokens spread evenly: T topk / experts
 * rows each), the scatter-and-sum back, and the shared experts. With expert parallelism the
 * rank's own tokens (T / t), its E / ep experts, each split over etp ranks that gather the
 * tokens routed to it (rows x etp, width f / etp), at the busiest expert's load. */
static size_t moe_kernels(const wl_tf *tf, uint64_t T, uint64_t Tn, uint64_t t,
                          const wl_tf_shard *sh, wl_precision p, wl_tf_kernel *out)
{
  uint64_t h = tf->hidden, f = tf->moe_ffn, E = tf->experts, k = tf->topk;
  uint64_t ep = sh->ep > 1 ? sh->ep : 1, etp = ep > 1 && sh->etp > 1 ? sh->etp : 1;
  double load = ep > 1 && sh->expert_load > 1 ? sh->expert_load : 1;
  uint64_t Tr = ep > 1 ? T / t : T, el = ep > 1 ? E / ep : E, et = ep > 1 ? etp : t;
  uint64_t copies = Tr * k, rows = (copies * ep * etp + E - 1) / E;
  if (load > 1)
    rows = (uint64_t)((double)rows * load + 0.999999);
  size_t n = 0;
  linear(&out[n++], "router", ep > 1 ? Tr : Tn, E, h, p);
  stream(&out[n++], "permute", copies * h, 1, 1, 0, p);
  batched(&out[n++], "experts_fc1", el, rows, 2 * f / et, h, p);
  stream(&out[n++], "experts_swiglu", (ep > 1 ? rows * el : copies) * f / et, 2, 1, 8, p);
  batched(&out[n++], "experts_fc2", el, rows, h, f / et, p);
  stream(&out[n++], "unpermute", copies * h, 2, 1, 2, p);
  if (tf->shared_experts) {
    uint64_t sf = (uint64_t)tf->shared_experts * f;
    linear(&out[n++], "shared_fc1", T, 2 * sf / t, h, p);
    stream(&out[n++], "shared_swiglu", T * sf / t, 2, 1, 8, p);
    linear(&out[n++], "shared_fc2", T, h, sf / t, p);
  }
  return n;
}

size_t wl_tf_block_kernels(const wl_tf *tf, const wl_tf_shard *sh, uint32_t block,
                           wl_tf_kernel *out)
{
  uint64_t t = sh->tp ? sh->tp : 1;
  uint64_t T = (uint64_t)sh->micro_batch * sh->seq / (sh->cp ? sh->cp : 1);   /* tokens */
  uint64_t Tn = sh->seq_parallel ? T / t : T;                 /* tokens outside TP regions */
  uint64_t h = tf->hidden, f = tf->ffn, hd = wl_tf_head_dim(tf), vd = v_dim(tf);
  uint64_t heads = tf->heads / t;
  wl_precision p = sh->precision;
  size_t n = 0;
  /* Norms read x and write y (layernorm: mean, variance, scale, shift: about 8 FLOPs per
   * element); residual blocks apply dropout and add: read two tensors, write one and a mask. */
  stream(&out[n++], "norm1", Tn * h, 1, 1, 8, p);
  n += qkv_kernels(tf, T, t, p, &out[n]);
  if (sh->attention == WL_ATTN_UNFUSED) {
    /* Per head: scores S = Q K^T (s x s x hd), softmax with mask and dropout over S (read S,
     * write the probabilities and the dropped-out copy, and a 1-byte mask), then P V. */
    uint64_t bh = (uint64_t)sh->micro_batch * heads;
    batched(&out[n], "scores", bh, sh->seq, sh->seq, hd, p);
    out[n++].attention_core = TRUE;
    stream(&out[n], "softmax", bh * sh->seq * sh->seq, 1, 2, 6, p);
    out[n++].attention_core = TRUE;
    batched(&out[n], "context", bh, sh->seq, vd, sh->seq, p);
    out[n++].attention_core = TRUE;
  } else {
    /* Flash attention: per head b s^2 hd multiply-adds for Q K^T and b s^2 vd for P V, in
     * FlashAttention's tiles; with context parallelism the device's queries against the whole
     * sequence's keys (what it computes over the ring's steps, timed by the strategy). */
    uint64_t cp = sh->cp ? sh->cp : 1;
    wl_tf_attention_kernel(tf, sh, sh->seq / cp, sh->seq, 1, tf->causal && cp < 2, &out[n]);
    if (cp > 1 && tf->causal) {
      /* Causal over the balanced chunks: half the pairs of s / cp x s (mask's waste aside). */
      for (int i = 0; i < 2; i++)
        out[n].pass[i].flops /= 2;
    }
    n++;
  }
  linear(&out[n++], "proj", T, h, tf->heads * vd / t, p);
  stream(&out[n++], "residual1", Tn * h, 2, 1, 2, p);
  stream(&out[n++], "norm2", Tn * h, 1, 1, 8, p);
  if (wl_tf_block_is_moe(tf, block)) {
    n += moe_kernels(tf, T, Tn, t, sh, p, &out[n]);
  } else {
    gboolean swiglu = tf->mlp == WL_MLP_SWIGLU;
    linear(&out[n++], "fc1", T, (swiglu ? 2 * f : f) / t, h, p);
    stream(&out[n++], swiglu ? "swiglu" : "gelu", T * f / t, swiglu ? 2 : 1, 1, 8, p);
    linear(&out[n++], "fc2", T, h, f / t, p);
  }
  stream(&out[n++], "residual2", Tn * h, 2, 1, 2, p);
  g_assert(n <= WL_TF_MAX_KERNELS);
  return n;
}

size_t wl_tf_layer_kernels(const wl_tf *tf, const wl_tf_shard *sh, wl_tf_kernel *out)
{
  return wl_tf_block_kernels(tf, sh, tf->layers ? tf->layers - 1 : 0, out);
}

size_t wl_tf_embedding_kernels(const wl_tf *tf, const wl_tf_shard *sh, wl_tf_kernel *out)
{
  uint64_t t = sh->tp ? sh->tp : 1;
  uint64_t T = (uint64_t)sh->micro_batch * sh->seq / (sh->cp ? sh->cp : 1);
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
  uint64_t T = (uint64_t)sh->micro_batch * sh->seq / (sh->cp ? sh->cp : 1);
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

size_t wl_tf_mtp_kernels(const wl_tf *tf, const wl_tf_shard *sh, wl_tf_kernel *out)
{
  uint64_t t = sh->tp ? sh->tp : 1;
  uint64_t T = (uint64_t)sh->micro_batch * sh->seq / (sh->cp ? sh->cp : 1);
  uint64_t Tn = sh->seq_parallel ? T / t : T;
  uint64_t h = tf->hidden;
  size_t n = wl_tf_embedding_kernels(tf, sh, out);
  stream(&out[n++], "mtp_hidden_norm", Tn * h, 1, 1, 8, sh->precision);
  stream(&out[n++], "mtp_embedding_norm", Tn * h, 1, 1, 8, sh->precision);
  /* Megatron-Core's eh_proj: column-parallel, each rank h / t of the h outputs. */
  linear(&out[n++], "mtp_projection", T, (h + t - 1) / t, 2 * h, sh->precision);
  n += wl_tf_head_kernels(tf, sh, out + n);
  g_assert(n <= WL_TF_MTP_KERNELS);
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

uint64_t wl_tf_block_activation_bytes(const wl_tf *tf, uint32_t block, uint64_t s, uint64_t b,
                                      uint32_t tp, gboolean sp, wl_recompute rc,
                                      wl_precision precision)
{
  uint64_t t = tp ? tp : 1;
  uint64_t h = tf->hidden, a = tf->heads, f = tf->ffn;
  uint64_t hd = wl_tf_head_dim(tf), vd = v_dim(tf);
  uint64_t kv = tf->kv_lora ? tf->heads : tf->kv_heads;
  uint64_t eb = wl_precision_bytes(precision);   /* 2 in the paper */
  uint64_t sb = s * b;
  if (rc == WL_RECOMPUTE_FULL)
    return 2 * sb * h * eb / 2 / (sp ? t : 1);
  /* Outside tensor-parallel regions: the two norms' inputs (2 sbh each), the inputs of the QKV
   * and first MLP GEMMs (2 sbh each), two dropout masks (sbh each, 1 byte): 10 sbh. */
  uint64_t outside = (8 * sb * h) * eb / 2 + 2 * sb * h;
  /* Inside: Q, K and V (2 sb (a hd + kv (hd + vd)); 2 sbh + 4 sb kvd for plain attention),
   * the projection's input (2 sb a vd), MLA's two compressions, and the MLP's: the
   * activation's input and output (2 sbf each; swiglu's input is gate and up, 4 sbf), 24 sbh
   * for GPT; a mixture of experts keeps per routed copy its gathered input and its experts'
   * tensors, and as much per shared expert without the gather. */
  uint64_t mlp = wl_tf_block_is_moe(tf, block)
                     ? (uint64_t)tf->topk * (2 * h + 6 * tf->moe_ffn) +
                           (uint64_t)tf->shared_experts * 6 * tf->moe_ffn
                     : (tf->mlp == WL_MLP_SWIGLU ? 6 : 4) * f;
  uint64_t inside = sb * (2 * (a * hd + kv * (hd + vd)) + 2 * a * vd +
                          2 * ((uint64_t)tf->q_lora + tf->kv_lora) + mlp) * eb / 2;
  /* Attention matrix: softmax output (2 a s^2 b), its dropout mask (a s^2 b) and output
   * (2 a s^2 b). */
  uint64_t scores = rc == WL_RECOMPUTE_NONE ? 5 * a * s * sb : 0;
  uint64_t bytes = (sp ? outside / t : outside) + inside / t + scores / t;
  return bytes;
}

uint64_t wl_tf_layer_activation_bytes(const wl_tf *tf, uint64_t s, uint64_t b, uint32_t tp,
                                      gboolean sp, wl_recompute rc, wl_precision precision)
{
  return wl_tf_block_activation_bytes(tf, tf->layers ? tf->layers - 1 : 0, s, b, tp, sp, rc,
                                      precision);
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
static const char *const sched_names[] = {"gpipe", "1f1b", "interleaved"};

const char *wl_recompute_name(wl_recompute r) { return r <= WL_RECOMPUTE_FULL ? rc_names[r] : "?"; }
const char *wl_schedule_name(wl_schedule s) { return s <= WL_SCHED_INTERLEAVED ? sched_names[s] : "?"; }
