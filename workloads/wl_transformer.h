/* Transformer language models: hyper-parameters, parameter and FLOP counts in closed form, the
 * kernels one layer runs at a tensor-parallel degree, and the memory one device holds.
 *
 * A transformer is described by its hyper-parameters (wl_tf), not by a layer graph: blocks are
 * of at most two kinds (dense, and mixture of experts after the first dense_layers), so the
 * cost of one block of each kind, the embedding and the LM head is all a strategy needs. Models
 * come from the zoo (gpt3-1.7b, gpt3-175b, llama2-7b, llama2-70b, llama3-8b, llama3-70b,
 * llama3-405b, bert-large, mixtral-8x7b, mixtral-8x22b, deepseek-v3, qwen3-30b-a3b,
 * qwen3-235b-a22b, gpt-oss-120b) or from an inline spec
 * "transformer:layers=L,hidden=H,heads=A,seq=S,vocab=V[,ffn=F][,kv-heads=K][,head-dim=D]
 * [,mlp=gelu|swiglu][,norm=layernorm|rmsnorm][,causal=1|0][,family=gpt|llama][,bias=0|1]
 * [,tied=0|1][,positions=learned|rotary|alibi][,experts=E,topk=K,moe-ffn=F,shared-experts=S,
 * dense-layers=N,expert-groups=G,group-topk=M][,mtp=D]" (docs/workloads.md).
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
/* How tokens know their place: learned position embeddings (GPT, BERT), rotary embeddings
 * (Llama) or ALiBi's linear biases; only learned ones have parameters. */
typedef enum { WL_POS_LEARNED, WL_POS_ROTARY, WL_POS_ALIBI } wl_positions;
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
  wl_positions positions;
  /* Attention shape. head_dim: width of one query/key head (0: hidden / heads), so the
   * attention width is heads x head_dim even where that is not hidden (Qwen3, GPT-OSS). */
  uint32_t head_dim;
  uint32_t v_head_dim;        /* width of one value head (0: head_dim) */
  gboolean qk_norm;           /* an rmsnorm over each query and key head (Qwen3) */
  gboolean sinks;             /* one learned attention-sink logit per head (GPT-OSS) */
  /* Multi-head latent attention (DeepSeek-V2/V3) when kv_lora > 0: queries come from h
   * through a rank-q_lora compression (normed, then expanded to heads x head_dim), keys and
   * values from one rank-kv_lora compression (normed, expanded to heads x (head_dim -
   * rope_dim) keys and heads x v_head_dim values), plus rope_dim rotary key dimensions shared
   * by all heads, taken from h directly. */
  uint32_t q_lora;            /* 0: queries straight from h */
  uint32_t kv_lora;
  uint32_t rope_dim;          /* decoupled rotary dimensions of each query and key head */
  /* Mixture of experts: the MLP of blocks dense_layers .. layers - 1 is a router over
   * `experts` gated MLPs of width moe_ffn, of which each token uses `topk`, plus
   * shared_experts always-on gated MLPs of width moe_ffn. experts = 0: a dense model. */
  uint32_t experts;
  uint32_t topk;
  uint32_t moe_ffn;
  uint32_t shared_experts;
  uint32_t dense_layers;      /* the first blocks keep the dense MLP of width ffn */
  /* Group-limited routing (DeepSeek-V3's node-limited routing; Megatron-Core's
   * --moe-router-num-groups / --moe-router-group-topk): the experts split into expert_groups
   * groups of consecutive experts, a token's topk experts all in group_topk of them. 0: not
   * limited. */
  uint32_t expert_groups;
  uint32_t group_topk;
  gboolean router_bias;       /* a bias per expert on the router's scores (GPT-OSS; DeepSeek-V3's
                               * load-balancing correction) */
  /* Multi-token prediction (DeepSeek-V3 report sec. 2.2; Megatron-Core --mtp-num-layers): mtp
   * sequential modules after the blocks, module k predicting the token k + 1 ahead. Each
   * norms the hidden state and the embedding of the next token, projects their concatenation
   * (2h -> h, no bias), runs one block of the model's last kind, a final norm and the shared
   * LM head and cross-entropy. The embedding and LM head matrices are shared. 0: none. */
  uint32_t mtp;
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

/* Blocks differ only in their MLP: a mixture-of-experts model keeps the dense MLP in its first
 * dense_layers blocks. "The block" of the functions without a block index is the model's last
 * (its main kind: a mixture-of-experts block when the model has experts). */
uint64_t wl_tf_head_dim(const wl_tf *tf);           /* one query/key head */
uint64_t wl_tf_attention_params(const wl_tf *tf);   /* Q, K, V and output projections (MLA:
                                                     * compressions and their norms) */
uint64_t wl_tf_mlp_params(const wl_tf *tf);         /* the dense MLP of width ffn */
uint64_t wl_tf_expert_params(const wl_tf *tf);      /* one expert (gated MLP of moe_ffn) */
uint64_t wl_tf_router_params(const wl_tf *tf);      /* h x experts (+ bias) */
/* Parameters of the routed experts of blocks first .. first + count - 1 (what expert
 * parallelism spreads). */
uint64_t wl_tf_blocks_expert_params(const wl_tf *tf, uint32_t first, uint32_t count);
uint64_t wl_tf_norm_params(const wl_tf *tf);        /* one norm */
gboolean wl_tf_block_is_moe(const wl_tf *tf, uint32_t block);
/* The blocks with the dense MLP, which come first: all of them in a model without experts. */
uint32_t wl_tf_dense_blocks(const wl_tf *tf);
uint64_t wl_tf_block_params(const wl_tf *tf, uint32_t block);
/* Parameters one token uses in the block: all but the experts it is not routed to. */
uint64_t wl_tf_block_active_params(const wl_tf *tf, uint32_t block);
uint64_t wl_tf_layer_params(const wl_tf *tf);       /* the block (the last) */
/* Parameters of blocks first .. first + count - 1. */
uint64_t wl_tf_blocks_params(const wl_tf *tf, uint32_t first, uint32_t count);
uint64_t wl_tf_embedding_params(const wl_tf *tf);   /* tokens, positions, types, norm */
uint64_t wl_tf_head_params(const wl_tf *tf);        /* final norm, pooler, untied LM head */
/* Parameters of the mtp multi-token-prediction modules (0 without): each two norms, the 2h x h
 * projection, one block of the model's last kind and its final norm; the embedding and LM head
 * are the model's. */
uint64_t wl_tf_mtp_params(const wl_tf *tf);
/* Embedding, blocks, head and the multi-token-prediction modules. */
uint64_t wl_tf_params(const wl_tf *tf);
/* Parameters one token uses: the embedding, every block's active ones and the head (the
 * convention of Mixtral's 12.9 B and DeepSeek-V3's 37 B; GPT-OSS's model card leaves the
 * embedding out). */
uint64_t wl_tf_active_params(const wl_tf *tf);

/* ---- Model FLOPs (Megatron's convention) ------------------------------------------------------ */

/* Forward FLOPs of one block for b sequences of s tokens: 2 b s (the matrix weights a token
 * uses, the router's included) + 2 b s^2 heads (query/key width + value width), which is
 * 4 b s^2 h for plain attention. */
uint64_t wl_tf_block_forward_flops(const wl_tf *tf, uint32_t block, uint64_t b, uint64_t s);
uint64_t wl_tf_layer_forward_flops(const wl_tf *tf, uint64_t b, uint64_t s);   /* the block */
/* Forward FLOPs of one block's attention core as flash attention runs it: 2 b s^2 x heads x
 * (query/key head + value head), half of it for a causal model (the masked triangle of the
 * scores is skipped). */
uint64_t wl_tf_layer_attention_flops(const wl_tf *tf, uint64_t b, uint64_t s);
/* FLOPs of block `block` as its kernels run (wl_tf_layer_kernels' GEMMs and attention, without
 * the elementwise kernels; a mixture-of-experts block: its router and the experts a token
 * uses): forward 2 b s (block weights) + the attention core, backward twice the weights' and
 * 5/2 of the attention's (Q K^T again, dV, dP, dQ, dK). Megatron's count above runs the whole
 * score matrix instead. */
void wl_tf_block_run_flops(const wl_tf *tf, uint32_t block, uint64_t b, uint64_t s,
                           uint64_t *forward, uint64_t *backward);
/* Forward FLOPs of the LM head: 2 b s h V. */
uint64_t wl_tf_head_forward_flops(const wl_tf *tf, uint64_t b, uint64_t s);
/* Forward FLOPs of the mtp multi-token-prediction modules: each the projection (2 b s 2h h),
 * one block of the last kind and the LM head (0 without). */
uint64_t wl_tf_mtp_forward_flops(const wl_tf *tf, uint64_t b, uint64_t s);
/* FLOPs of one iteration over B sequences: 3 x forward (forward + backward), plus one more
 * forward of every block with full recomputation (the LM head is not recomputed); the
 * multi-token-prediction modules count as their projection, block and head. With
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
  /* Expert parallelism (0 or 1: none): the experts spread over `ep` devices, each whole (expert
   * tensor parallelism 1); a device routes its own tokens (those of its tensor rank, sequence
   * parallel) and runs its experts on what every device of the group sends them. */
  uint32_t ep;
  /* Expert tensor parallelism with ep > 1 (0 or 1: whole experts): each expert's width split
   * over `etp` devices, which all-gather the tokens routed to it (Megatron-Core's folding). */
  uint32_t etp;
  /* Rows of the busiest expert over the mean (0: 1): the router's imbalance, capped by a
   * capacity factor (wl_tf_expert_load). The grouped GEMMs and the all-to-alls wait for it. */
  double expert_load;
  /* Context parallelism (0 or 1: none): the device holds b s / cp tokens of each sequence, two
   * load-balanced chunks of 2 cp (wl_tf_cp.c); its attention kernel is what it computes of
   * the whole sequence's, which the strategy times step by step (wl_tf_cp_step). */
  uint32_t cp;
} wl_tf_shard;

/* One kernel of a block with its three passes (forward, backward-data, backward-weights);
 * has[] says which passes run. */
typedef struct {
  const char *name;
  wl_op_cost pass[3];
  gboolean has[3];
  gboolean attention_core;    /* recomputed by selective recomputation */
} wl_tf_kernel;

#define WL_TF_MAX_KERNELS 24
/* The kernels of block `block` on one tensor-parallel rank, in forward order; returns the
 * count. A mixture-of-experts block runs the router GEMM on every token, gathers each token's
 * topk copies by expert, runs the experts as grouped GEMMs (one GEMM per expert of tokens x
 * topk / experts rows, each expert's width split over the tensor-parallel ranks), and
 * scatters and sums the copies back, beside the shared experts' GEMMs. With expert
 * parallelism the device's tokens are its tensor rank's (b s / t), its experts experts / ep,
 * whole, and each gets tokens x topk x ep / experts rows (tokens spread evenly); the dispatch
 * and combine between the permutes are the strategy's all-to-alls. */
size_t wl_tf_block_kernels(const wl_tf *tf, const wl_tf_shard *sh, uint32_t block,
                           wl_tf_kernel *out);
/* The kernel builders behind those lists, for callers that time one kernel alone (the kernel
 * benchmarks): `batch` independent GEMMs y[m x n] = x[m x k] W[k x n] with their backward-data
 * and backward-weights GEMMs (a linear layer with batch 1; the experts' grouped GEMMs with one
 * GEMM per local expert); and a streaming kernel over `elems` elements that reads `reads` and
 * writes `writes` tensors of that size forward (about twice that backward) with `flops_per`
 * FLOPs per element (norms, activations, residual adds, permutes). */
void wl_tf_gemm_kernel(wl_tf_kernel *kn, const char *name, uint64_t batch, uint64_t m,
                       uint64_t n, uint64_t k, wl_precision p);
void wl_tf_stream_kernel(wl_tf_kernel *kn, const char *name, uint64_t elems, unsigned reads,
                         unsigned writes, unsigned flops_per, wl_precision p);
/* The kernels of the block (the last), in forward order; returns the count.
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
/* One multi-token-prediction module without its block (which is the model's last block's
 * kernels): the next token's embedding gather, the two norms, the projection 2h -> h (its
 * output split over the tensor-parallel ranks) and the head's kernels; returns the count (at
 * most WL_TF_MTP_KERNELS). */
#define WL_TF_MTP_KERNELS 8
size_t wl_tf_mtp_kernels(const wl_tf *tf, const wl_tf_shard *sh, wl_tf_kernel *out);

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

/* Reserved memory: what a training process holds beyond its tensors: the CUDA context (0.5 GiB),
 * NCCL's buffers (Simple, LL128 and LL: 9.19 MiB per channel and connection; 32 channels per
 * collective communicator the rank belongs to, 2 per point-to-point peer) and the caching
 * allocator's slack (5% of `dynamic_bytes`, the activations and other transient bytes). Bytes;
 * returns the sum. Sources: docs/workloads.md ("Reserved memory"). */
typedef struct {
  uint64_t context, nccl, slack;
} wl_reserved_bytes;
uint64_t wl_reserved_memory(uint32_t communicators, uint32_t p2p_peers, uint64_t dynamic_bytes,
                            wl_reserved_bytes *out);

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
/* The same for block `block`: a mixture-of-experts block keeps, per token and routed copy,
 * the gathered input (h) and the experts' gate, up and activation outputs (3 moe_ffn), and
 * as much per shared expert, in place of the dense MLP's tensors. */
uint64_t wl_tf_block_activation_bytes(const wl_tf *tf, uint32_t block, uint64_t s, uint64_t b,
                                      uint32_t t, gboolean seq_parallel, wl_recompute rc,
                                      wl_precision precision);

/* Micro-batches of one model chunk whose activations pipeline rank `rank` (0 = first stage) of
 * `P` holds at its peak, with `m` micro-batches per iteration and `V` chunks per rank:
 * GPipe m; 1F1B min(P - rank, m); interleaved (Megatron's warm-up) (P - rank - 1) 2 +
 * (V - 1) P + 1, at most m V. Each unit is one micro-batch of layers / (P V) blocks. */
uint64_t wl_tf_inflight_chunks(wl_schedule sched, uint32_t P, uint32_t V, uint64_t m,
                               uint32_t rank);

/* ---- Pipeline partition --------------------------------------------------------------------- */

/* How the blocks go onto `stages` virtual pipeline stages (pp x interleave, in pipeline order:
 * chunk c of rank r is stage c pp + r). The embedding is on the first, the LM head and loss on
 * the last. Given `split` (the first block of each stage after the first, n_split of them) or
 * `layout` (Megatron-Core's pipeline_model_parallel_layout: E embedding, t block, m
 * multi-token-prediction module, L loss, | stage boundary, (...)*N and X*N repeats, commas and
 * spaces ignored), that; else the blocks spread as evenly as they go, the remainder on the
 * middle stages so the first and last hold fewer, and with embedding_in_split / loss_in_split
 * the embedding / loss counted as one block there. The model's `mtp` multi-token-prediction
 * modules go on one stage: where the layout puts its m letters (as many as mtp, all on one
 * stage), else the last. */
typedef struct {
  uint32_t stages;
  const int64_t *split;
  size_t n_split;
  const char *layout;
  gboolean embedding_in_split, loss_in_split;
  uint32_t mtp;               /* the model's multi-token-prediction modules */
} wl_tf_partition_opts;
/* Fills first[v] and count[v] for every stage v, and *mtp_stage (when not NULL) with the stage
 * of the multi-token-prediction modules. Bad options are DT_ERROR_INPUT naming --split,
 * --pp-layout, --embedding-in-split or --loss-in-split. */
gboolean wl_tf_partition(uint32_t layers, const wl_tf_partition_opts *o, uint32_t *first,
                         uint32_t *count, uint32_t *mtp_stage, GError **error);

/* ---- Context parallelism (wl_tf_cp.c) ------------------------------------------------------ */

/* How a context-parallel rank gets the keys and values of the others: a ring of point-to-point
 * sends overlapped with the attention blocks (Megatron-Core / Transformer Engine p2p), one
 * all-gather of them (PyTorch's allgather rotation, TE's all_gather), or all-to-alls that
 * switch from a sequence split to a head split and back (DeepSpeed-Ulysses, TE's a2a). */
typedef enum { WL_CP_P2P, WL_CP_ALLGATHER, WL_CP_A2A } wl_cp_comm;
const char *wl_cp_comm_name(wl_cp_comm c);

/* The two chunks of the sequence, cut into 2 cp, that context-parallel rank `rank` holds:
 * `rank` and 2 cp - 1 - rank (causal load balancing). */
void wl_tf_cp_chunks(uint32_t cp, uint32_t rank, uint32_t chunks[2]);
/* The causal query-key pairs rank `rank` computes, in halves of a chunk's square
 * ((s / 2cp)^2 / 2): chunk c attends to chunks 0 .. c - 1 whole and to itself half, 2c + 1
 * halves; both chunks of any rank make 4 cp. */
uint64_t wl_tf_cp_causal_halves(uint32_t cp, uint32_t rank);
/* One step of the p2p ring on rank `rank`: at step 0 its own keys (its s / cp queries against
 * its s / cp keys, causal), at step i >= 1 those of rank (rank - i) mod cp: from a lower rank
 * both query chunks against that rank's first key chunk, from a higher one the second query
 * chunk against both key chunks; s / cp x s / 2cp, no mask, either way. Tokens per sequence. */
typedef struct {
  uint64_t q, k;
  gboolean causal;
} wl_tf_cp_block;
wl_tf_cp_block wl_tf_cp_step(uint64_t seq, uint32_t cp, uint32_t rank, uint32_t step);
/* Useful forward FLOPs of one block's attention on one context-parallel rank for b sequences
 * of s tokens: the model's (wl_tf_layer_attention_flops: 2 b s^2 heads (hd + vd), half of it
 * causal) over cp, the same on every rank thanks to the balanced chunks. */
uint64_t wl_tf_cp_attention_flops(const wl_tf *tf, uint64_t b, uint64_t s, uint32_t cp);
/* The fused attention kernel of q queries against k keys per sequence (causal: the q x q
 * diagonal block) on one device with sh's micro-batch, tensor-parallel degree and precision,
 * over heads / (tp x head_split) heads. FLOPs are the products it runs: FlashAttention works in
 * tiles of 128 queries x 128 keys, computes a diagonal tile whole and skips the tiles above
 * the diagonal, so a causal block of n tiles a side runs n (n + 1) / 2 of them (the efficiency
 * of short blocks falls; the mask's waste is 1/n). */
void wl_tf_attention_kernel(const wl_tf *tf, const wl_tf_shard *sh, uint64_t q, uint64_t k,
                            uint32_t head_split, gboolean causal, wl_tf_kernel *out);
/* Bytes of one rank's keys and values (b s / cp tokens, its tensor rank's heads) and of its
 * queries and outputs (what the a2a form exchanges besides). */
uint64_t wl_tf_cp_kv_bytes(const wl_tf *tf, const wl_tf_shard *sh);
uint64_t wl_tf_cp_q_bytes(const wl_tf *tf, const wl_tf_shard *sh);
uint64_t wl_tf_cp_o_bytes(const wl_tf *tf, const wl_tf_shard *sh);
/* What context parallelism adds to a device's activations while one block's attention runs,
 * beyond the s / cp tokens' own (memory key activations_cp): p2p double-buffers the keys and
 * values received and, in backward, their gradients (4 ranks' worth); all-gather holds every
 * rank's keys and values and their gradients (2 cp); a2a the full sequence's queries, keys,
 * values and output of heads / cp (2 x the rank's own). Bytes. */
uint64_t wl_tf_cp_buffer_bytes(const wl_tf *tf, const wl_tf_shard *sh, wl_cp_comm comm);

/* ---- Expert load (wl_tf_cp.c) --------------------------------------------------------------- */

/* The rows of the busiest expert over the mean and the routed copies dropped, from the
 * router's imbalance X >= 1 (busiest expert's share over the mean) and the capacity factor C
 * (0: dropless). The experts' loads are taken as spread evenly between 2 - X and X times the
 * mean (mean 1, busiest X: a documented assumption, docs/workloads.md); an expert keeps at most
 * C times the mean, so the busiest runs min(X, C) and the fraction of copies dropped is the
 * mass above C: (X - C)^2 / (4 (X - 1)) for C < X (1 - C when X = 1). */
double wl_tf_expert_load(double imbalance, double capacity, double *dropped_fraction);

/* ---- Group-limited routing (wl_tf_routing.c) ------------------------------------------------ */

/* The expected count of distinct nodes (its own among them) that one token's topk routed copies
 * reach when the experts lie in equal consecutive shares on `nodes` nodes, under the model's
 * group-limited routing (expert_groups, group_topk), tokens routed evenly: with G groups, M
 * chosen, m = min(M, topk), N nodes and E experts,
 *   N | G:  N (1 - C(G - G/N, m) / C(G, m))   (DeepSeek-V3 on 8 nodes: 4)
 *   G | N:  sum over the m chosen groups of N/G (1 - C(E/G - E/N, c) / C(E/G, c)), c the
 *           group's copies (topk / m, one more in topk mod m of them)
 * and without groups (or when neither divides the other) N (1 - C(E - E/N, topk) / C(E, topk)).
 * 1 for one node; 0 when E is not a multiple of nodes. */
double wl_tf_routed_nodes(const wl_tf *tf, uint32_t nodes);

const char *wl_attention_name(wl_attention a);
const char *wl_recompute_name(wl_recompute r);
const char *wl_schedule_name(wl_schedule s);

#endif
