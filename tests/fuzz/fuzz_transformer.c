/* Fuzz harness for the transformer spec reader, wl_tf_parse(): zoo names and inline specs
 * "transformer:layers=L,hidden=H,heads=A,seq=S,vocab=V[,ffn=F][,kv-heads=K][,mlp=...]
 * [,norm=...][,causal=...]" (workloads/wl_transformer.h). The input is the spec, whole.
 *
 * Invariants: a refusal is a DT_ERROR with a non-empty message; an accepted spec has every
 * size positive, query heads a multiple of the key/value heads, a hidden size the heads divide
 * (head_dim x heads = hidden), and positive parameter counts, a layer holding its attention and
 * MLP parameters. */
#include "fuzz.h"

#include "util.h"
#include "wl_transformer.h"

#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  fuzz_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  g_autofree char *text = fuzz_text(data, size);
  wl_tf tf;
  memset(&tf, 0, sizeof tf);
  g_autoptr(GError) error = NULL;
  if (!wl_tf_parse(text, &tf, &error)) {
    fuzz_check_error(error, NULL);
    return 0;
  }
  FUZZ_CHECK(tf.layers > 0 && tf.hidden > 0 && tf.heads > 0 && tf.kv_heads > 0 && tf.ffn > 0 &&
                 tf.seq > 0 && tf.vocab > 0,
             "'%s': a zero size", text);
  FUZZ_CHECK(tf.heads % tf.kv_heads == 0, "'%s': %u heads over %u kv-heads", text, tf.heads,
             tf.kv_heads);
  /* A head's width is hidden / heads unless the spec gives head-dim (Qwen3, GPT-OSS: the
   * attention is wider or narrower than the model). */
  FUZZ_CHECK(tf.head_dim ? wl_tf_head_dim(&tf) == tf.head_dim
                         : (uint64_t)wl_tf_head_dim(&tf) * tf.heads == tf.hidden,
             "'%s': head_dim %" G_GUINT64_FORMAT " (given %u) x %u heads, hidden %u", text,
             wl_tf_head_dim(&tf), tf.head_dim, tf.heads, tf.hidden);
  /* The last block's MLP: the dense one, or (mixture of experts) every routed and shared
   * expert and the router. */
  uint64_t attn = wl_tf_attention_params(&tf);
  uint64_t mlp = tf.experts && wl_tf_dense_blocks(&tf) < tf.layers
                     ? (uint64_t)(tf.experts + tf.shared_experts) * wl_tf_expert_params(&tf) +
                           wl_tf_router_params(&tf)
                     : wl_tf_mlp_params(&tf);
  uint64_t layer = wl_tf_layer_params(&tf);
  FUZZ_CHECK(attn > 0 && mlp > 0, "'%s': no attention or MLP parameters", text);
  FUZZ_CHECK(layer >= attn + mlp && layer - attn - mlp <= 4 * (uint64_t)tf.hidden,
             "'%s': a layer's %" G_GUINT64_FORMAT " parameters are not attention %"
             G_GUINT64_FORMAT " + MLP or experts %" G_GUINT64_FORMAT " + two norms", text, layer, attn, mlp);
  /* Group-limited routing: a token's copies reach at least one node and at most as many as
   * there are nodes or copies, for any layout whose nodes hold the experts evenly. */
  for (uint32_t nodes = 1; tf.experts && nodes <= 64; nodes *= 2) {
    if (tf.experts % nodes)
      continue;
    double d = wl_tf_routed_nodes(&tf, nodes);
    FUZZ_CHECK(d >= 1 - 1e-9 && d <= MIN(nodes, tf.topk) + 1e-9,
               "'%s': %g nodes reached of %u (top %u)", text, d, nodes, tf.topk);
  }
  fuzz_accepted();
  return 0;
}
