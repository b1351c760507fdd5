/* Transformer language models: hyper-parameters, parameter and FLOP counts in closed form, the
 * kernels one layer runs at a tensor-parallel degree, and the memory one device holds.
 *
 * A transformer is described by its hyper-parameters (wl_tf), not by a layer graph: every
 * block is the same, so the cost of one block, the embedding and the LM head is all a strategy
 * needs. Models come from the zoo (gpt3-1.7b, gpt3-175b, llama2-7b, llama2-70b, llama3-8b,
 * llama3-70b, llama3-405b, bert-large) or from an inline spec
 * "transformer:layers=L,hidden=H,heads=A,seq=S,vocab=V[,ffn=F][,kv-heads=K][,mlp=gelu|swiglu]
 * [,norm=layernorm|rmsnorm][,causal=1|0]".
 *
 * Units: FLOPs count 2 per multiply-add; bytes are bytes; b is the micro-batch in sequences,
 * s the sequence length in tokens, h the hidden size, a the attention heads, t the
 * tensor-parallel degree. Model FLOPs follow Megatron-LM's convention: attention scores and
 * their product with V count the whole s x s matrix (causal or not), backward is twice forward.
 * Sources of every formula: docs/workloads.md. */
#ifndef DTSIM_WL_TRANSFORMER_H
#define DTSIM_WL_TRANSFORMER_H

#include <glib.h>
#include <stdint.h>

#include "wl_op.h"

typedef enum { WL_MLP_GELU, WL_MLP_SWIGLU } wl_mlp_kind;
typedef enum { WL_NORM_LAYERNORM, WL_NORM_RMSNORM } wl_norm_kind;
typedef enum { WL_RECOMPUTE_NONE, WL_RECOMPUTE_SELECTIVE, WL_RECOMPUTE_FULL } wl_recompute;
typedef enum { WL_SCHED_GPIPE, WL_SCHED_1F1B, WL_SCHED_INTERLEAVED } wl_schedule;
/* How attention runs: one fused kernel that keeps the s x s scores on chip (FlashAttention,
 * 2022 on), or batched GEMMs around a softmax kernel that writes them (Megatron-LM's fused
 * scale-mask-softmax, 2019-2021). */
typedef enum { WL_ATTN_FLASH, WL_ATTN_UNFUSED } wl_attention;

typedef struct {
  char name[96];
  uint32_t layers;
  uint32_t hidden;            /* h */
  uint32_t heads;             /* a: query heads */
  uint32_t kv_heads;          /* key/value heads (grouped-query attention); = heads for MHA */
  uint32_t ffn;               /* MLP inner size */
  uint32_t seq;               /* training sequence length, tokens */
  uint32_t vocab;
  wl_mlp_kind mlp;
  wl_norm_kind norm;
  gboolean causal;
  gboolean bias;              /* linear layers and norms carry biases (GPT, BERT) */
  uint32_t max_positions;     /* learned position embeddings (0: rotary, no parameters) */
  uint32_t type_vocab;        /* BERT token-type embeddings (0: none) */
  gboolean embed_norm;        /* a norm after the embedding (BERT) */
  gboolean final_norm;        /* a norm before the LM head (GPT, Llama) */
  gboolean tied_head;         /* the LM head reuses the embedding matrix */
  gboolean pooler;            /* BERT's pooler (h x h + h) */
  double lm_fraction;         /* tokens the LM head predicts: 1, or BERT's masked 15.6% */
} wl_tf;

/* The transformer zoo, in a fixed order. */
typedef struct {
  const char *name;
  const char *description;
} wl_tf_zoo_entry;
const wl_tf_zoo_entry *wl_tf_zoo(size_t *n);

/* TRUE when `name` is a transformer zoo name or starts with "transformer:". */
gboolean wl_tf_is_transformer(const char *name);
/* Parses a zoo name or an inline spec. A bad spec is DT_ERROR_INPUT naming the key. */
gboolean wl_tf_parse(const char *name, wl_tf *out, GError **error);
/* Overrides the sequence length (--seq-len); position embeddings grow with it when the model
 * learns them. */
void wl_tf_set_seq(wl_tf *tf, uint32_t seq);

/* ---- Parameters ----------------------------------------------------------------------------- */

uint64_t wl_tf_head_dim(const wl_tf *tf);
uint64_t wl_tf_attention_params(const wl_tf *tf);   /* Q, K, V and output projections */
uint64_t wl_tf_mlp_params(const wl_tf *tf);
uint64_t wl_tf_norm_params(const wl_tf *tf);        /* one norm */
uint64_t wl_tf_layer_params(const wl_tf *tf);       /* one block */
uint64_t wl_tf_embedding_params(const wl_tf *tf);   /* tokens, positions, types, norm */
uint64_t wl_tf_head_params(const wl_tf *tf);        /* final norm, pooler, untied LM head */
uint64_t wl_tf_params(const wl_tf *tf);

/* ---- Model FLOPs (Megatron's convention) ------------------------------------------------------ */

/* Forward FLOPs of one block for b sequences of s tokens: 2 b s (block weights) + 4 b s^2 h. */
uint64_t wl_tf_layer_forward_flops(const wl_tf *tf, uint64_t b, uint64_t s);
/* Forward FLOPs of one block's attention core as flash attention runs it: 4 b s^2 x heads x
 * head_dim, half of it for a causal model (the masked triangle of the scores is skipped). */
uint64_t wl_tf_layer_attention_flops(const wl_tf *tf, uint64_t b, uint64_t s);
/* FLOPs of one block as its kernels run (wl_tf_layer_kernels' GEMMs and attention, without
 * the elementwise kernels): forward 2 b s (block weights) + the attention core, backward twice
 * the weights' and 5/2 of the attention's (Q K^T again, dV, dP, dQ, dK). Megatron's count above
 * runs the whole score matrix instead. */
void wl_tf_layer_run_flops(const wl_tf *tf, uint64_t b, uint64_t s, uint64_t *forward,
                           uint64_t *backward);
/* Forward FLOPs of the LM head: 2 b s h V. */
uint64_t wl_tf_head_forward_flops(const wl_tf *tf, uint64_t b, uint64_t s);
/* FLOPs of one iteration over B sequences: 3 x forward (forward + backward), plus one more
 * forward of every block with full recomputation (the LM head is not recomputed). With
 * recompute = FULL this is Narayanan et al.'s eq. 3 for GPT models. */
double wl_tf_iteration_flops(const wl_tf *tf, uint64_t B, uint64_t s, wl_recompute rc);

/* ---- Kernels ------------------------------------------------------------------------------ */

/* How one device runs a block: micro-batch, sequence, tensor-parallel degree, sequence
 * parallelism, precision. */
typedef struct {
  uint32_t micro_batch;
  uint32_t seq;
  uint32_t tp;
  gboolean seq_parallel;
  wl_precision precision;
  wl_attention attention;
} wl_tf_shard;

/* One kernel of a block with its three passes (forward, backward-data, backward-weights);
 * has[] says which passes run. */
typedef struct {
  const char *name;
  wl_op_cost pass[3];
  gboolean has[3];
  gboolean attention_core;    /* recomputed by selective recomputation */
} wl_tf_kernel;

#define WL_TF_MAX_KERNELS 16
/* The kernels of one block on one tensor-parallel rank, in forward order; returns the count.
 * Flash attention is one kernel (scores, softmax and the product with V without writing the
 * s x s matrix); its backward recomputes the scores (2.5x the forward's matrix FLOPs), and a
 * causal mask halves both. Unfused attention is a batched GEMM Q K^T, a softmax with mask and
 * dropout over the s x s scores, and a batched GEMM with V, whole matrices causal or not. */
size_t wl_tf_layer_kernels(const wl_tf *tf, const wl_tf_shard *sh, wl_tf_kernel *out);
/* The embedding (a gather, and its scatter-add in backward). */
size_t wl_tf_embedding_kernels(const wl_tf *tf, const wl_tf_shard *sh, wl_tf_kernel *out);
/* Final norm, LM head (vocabulary padded to a multiple of 128 per tensor-parallel rank, as
 * Megatron-LM pads it, and split over the ranks) and cross-entropy, over the tokens the head
 * predicts (lm_fraction of them). */
size_t wl_tf_head_kernels(const wl_tf *tf, const wl_tf_shard *sh, wl_tf_kernel *out);

/* ---- Memory per device ------------------------------------------------------------------------ */

/* Mixed-precision training with Adam: 2-byte weights and gradients, fp32 master weights and two
 * fp32 moments (12 bytes): 16 bytes per parameter. ZeRO shards the optimizer state (stage 1),
 * the gradients too (2) and the weights too (3) over the data-parallel group of `dp` ranks.
 * `params` are the parameters this device holds before sharding. Bytes. */
typedef struct {
  uint64_t weights, gradients, optimizer;
} wl_tf_state_bytes;
void wl_tf_state_memory(uint64_t params, uint32_t dp, unsigned zero, wl_precision precision,
                        wl_tf_state_bytes *out);

/* Activation bytes one block keeps for backward for one micro-batch of b sequences, as
 * Korthikanti et al. (2022) count them for 2-byte activations: s b h (34 + 5 a s / h) without
 * parallelism; with tensor parallelism s b h (10 + 24/t + 5 a s / (h t)); with sequence
 * parallelism also the 10 divides by t; selective recomputation drops the 5 a s^2 b term;
 * full recomputation keeps only the block's input, 2 s b h (/t with sequence parallelism).
 * The 24 (Q, K, V, the projection's input and the MLP's two 4h tensors) follow kv-heads and ffn.
 * 4-byte activations (fp32, tf32) double every term but the dropout masks. */
uint64_t wl_tf_layer_activation_bytes(const wl_tf *tf, uint64_t s, uint64_t b, uint32_t t,
                                      gboolean seq_parallel, wl_recompute rc,
                                      wl_precision precision);

/* Micro-batches of one model chunk whose activations pipeline rank `rank` (0 = first stage) of
 * `P` holds at its peak, with `m` micro-batches per iteration and `V` chunks per rank:
 * GPipe m; 1F1B min(P - rank, m); interleaved (Megatron's warm-up) (P - rank - 1) 2 +
 * (V - 1) P + 1, at most m V. Each unit is one micro-batch of layers / (P V) blocks. */
uint64_t wl_tf_inflight_chunks(wl_schedule sched, uint32_t P, uint32_t V, uint64_t m,
                               uint32_t rank);

const char *wl_attention_name(wl_attention a);
int wl_attention_parse(const char *name);
const char *wl_recompute_name(wl_recompute r);
int wl_recompute_parse(const char *name);
const char *wl_schedule_name(wl_schedule s);
int wl_schedule_parse(const char *name);

#endif
