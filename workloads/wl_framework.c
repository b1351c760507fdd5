/* Frameworks as catalog files (see wl_framework.h): the loader, the kernels' bytes and the
 * host's optimizer step. */
#include "wl_framework.h"

#include "util.h"

#include <string.h>

void wl_framework_defaults(wl_framework *fw)
{
  memset(fw, 0, sizeof *fw);
  fw->prefetch_blocks = 1;
  fw->ep_comm_sms = 20;
  fw->reshard_after_forward = TRUE;
  fw->norm_bytes_factor = 1;
  fw->activation_bytes_factor = 1;
  fw->attention_time_factor = 1;
  fw->selective_attention = TRUE;
  fw->context_bytes = UINT64_C(512) << 20;
  fw->nccl_channels = 32;
  fw->nccl_p2p_channels = 2;
  fw->slack_percent = 5;
}

void wl_framework_free(wl_framework *fw)
{
  if (!fw)
    return;
  g_free(fw->name);
  g_free(fw->path);
  g_free(fw->description);
  g_free(fw);
}

static const char *const framework_keys[] = {"description", NULL};
static const char *const overlap_keys[] = {"gather", "prefetch_blocks", "reshard_after_forward",
                                           "reduce", "reduce_dtype", "bucket_mib", "ep_comm_sms",
                                           NULL};
static const char *const kernel_keys[] = {"norm_bytes_factor", "activation_bytes_factor",
                                          "rope_bytes_factor", "attention_time_factor",
                                          "fp8_cast_bytes", NULL};
static const char *const recompute_keys[] = {"selective_attention", "selective_gemm_fraction",
                                             NULL};
static const char *const memory_keys[] = {"context_mib", "nccl_channels", "nccl_p2p_channels",
                                          "allocator_slack_percent", NULL};
static const char *const offload_keys[] = {"host_adam_gparams_per_s", NULL};
static const char *const cpu_keys[] = {"efficiency", NULL};

/* A key whose value is one of two words: *out is TRUE for `yes_word`. */
static gboolean get_word(const dt_ini *ini, const char *group, const char *key,
                         const char *no_word, const char *yes_word, gboolean *out, GError **error)
{
  g_autofree char *v = dt_ini_string(ini, group, key, FALSE, NULL);
  if (!v)
    return TRUE;
  if (strcmp(v, yes_word) == 0 || strcmp(v, no_word) == 0) {
    *out = strcmp(v, yes_word) == 0;
    return TRUE;
  }
  return dt_ini_error(ini, group, key, error, "expected %s or %s, not '%s'", no_word, yes_word,
                      v);
}

static gboolean get_u32(const dt_ini *ini, const char *group, const char *key, int64_t min,
                        int64_t max, uint32_t *out, GError **error)
{
  int64_t v = *out;
  if (!dt_ini_int64(ini, group, key, FALSE, min, max, &v, error))
    return FALSE;
  *out = (uint32_t)v;
  return TRUE;
}

static gboolean read_groups(const dt_ini *ini, wl_framework *fw, GError **error)
{
  GKeyFile *kf = dt_ini_keyfile(ini);
  g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
  static const char *const known[] = {"framework", "overlap", "kernels", "recompute", "memory",
                                      "offload", "cpu", NULL};
  static const char *const *const keys[] = {framework_keys, overlap_keys, kernel_keys,
                                            recompute_keys, memory_keys, offload_keys, cpu_keys};
  gboolean cpu = FALSE, transformer = FALSE;
  for (char **g = groups; *g; g++) {
    gsize i = 0;
    while (known[i] && strcmp(known[i], *g) != 0)
      i++;
    if (known[i]) {
      cpu |= strcmp(*g, "cpu") == 0;
      transformer |= i > 0 && strcmp(*g, "cpu") != 0;
    }
    if (!known[i])
      return dt_ini_error(ini, *g, NULL, error, "unknown group (expected [framework], "
                          "[overlap], [kernels], [recompute], [memory], [offload], [cpu])");
    if (!dt_ini_check_keys(ini, *g, keys[i], error))
      return FALSE;
  }
  fw->transformers = transformer || !cpu;
  if (!(fw->description = dt_ini_string(ini, "framework", "description", TRUE, error)))
    return FALSE;
  gboolean bf16_reduce = TRUE;
  double bucket_mib = 0, context_mib = (double)(fw->context_bytes >> 20);
  if (!get_word(ini, "overlap", "gather", "per-chunk", "per-block", &fw->gather_per_block,
                error) ||
      !get_u32(ini, "overlap", "prefetch_blocks", 0, 64, &fw->prefetch_blocks, error) ||
      !get_word(ini, "overlap", "reshard_after_forward", "no", "yes",
                &fw->reshard_after_forward, error) ||
      !get_word(ini, "overlap", "reduce", "per-bucket", "per-block", &fw->reduce_per_block,
                error) ||
      !get_word(ini, "overlap", "reduce_dtype", "fp32", "param", &bf16_reduce, error) ||
      !dt_ini_double(ini, "overlap", "bucket_mib", FALSE, 0, 1 << 20, &bucket_mib, error) ||
      !get_u32(ini, "overlap", "ep_comm_sms", 0, 1024, &fw->ep_comm_sms, error) ||
      !dt_ini_double(ini, "kernels", "norm_bytes_factor", FALSE, 1, 100, &fw->norm_bytes_factor,
                     error) ||
      !dt_ini_double(ini, "kernels", "activation_bytes_factor", FALSE, 1, 100,
                     &fw->activation_bytes_factor, error) ||
      !dt_ini_double(ini, "kernels", "rope_bytes_factor", FALSE, 0, 100, &fw->rope_bytes_factor,
                     error) ||
      !dt_ini_double(ini, "kernels", "attention_time_factor", FALSE, 0.1, 100,
                     &fw->attention_time_factor, error) ||
      !dt_ini_double(ini, "kernels", "fp8_cast_bytes", FALSE, 0, 100, &fw->fp8_cast_bytes,
                     error) ||
      !get_word(ini, "recompute", "selective_attention", "no", "yes", &fw->selective_attention,
                error) ||
      !dt_ini_double(ini, "recompute", "selective_gemm_fraction", FALSE, 0, 1,
                     &fw->selective_gemm_fraction, error) ||
      !dt_ini_double(ini, "memory", "context_mib", FALSE, 0, 1 << 20, &context_mib, error) ||
      !get_u32(ini, "memory", "nccl_channels", 1, 64, &fw->nccl_channels, error) ||
      !get_u32(ini, "memory", "nccl_p2p_channels", 1, 64, &fw->nccl_p2p_channels, error) ||
      !get_u32(ini, "memory", "allocator_slack_percent", 0, 100, &fw->slack_percent, error))
    return FALSE;
  double gparams = 0;
  if (!dt_ini_double(ini, "offload", "host_adam_gparams_per_s", FALSE, 1e-6, 1e6, &gparams,
                     error))
    return FALSE;
  fw->host_adam_params_per_s = gparams * 1e9;
  /* 0 (not stated) is kept apart from any stated share, which must be positive. */
  if (!dt_ini_double(ini, "cpu", "efficiency", FALSE, 1e-3, 1, &fw->cpu_efficiency, error))
    return FALSE;
  fw->reduce_bytes = bf16_reduce ? 0 : 4;
  fw->bucket_bytes = (uint64_t)(bucket_mib * (1 << 20));
  fw->context_bytes = (uint64_t)(context_mib * (1 << 20));
  return TRUE;
}

wl_framework *wl_framework_load(const char *name, const char *what, GError **error)
{
  g_autoptr(dt_ini) ini =
      dt_catalog_load("workloads/catalog/frameworks", name, what, "framework", error);
  if (!ini)
    return NULL;
  const char *path = dt_ini_path(ini);
  g_autoptr(wl_framework) fw = g_new0(wl_framework, 1);
  wl_framework_defaults(fw);
  fw->name = g_strdup(name);
  fw->path = g_strdup(path);
  if (!read_groups(ini, fw, error))
    return NULL;
  return g_steal_pointer(&fw);
}

/* Which factor a block's streaming kernel takes, by its name (wl_tf_block_kernels). */
static double factor_of(const wl_framework *fw, const char *name)
{
  if (g_str_has_prefix(name, "norm") || strcmp(name, "final_norm") == 0)
    return fw->norm_bytes_factor;
  if (strstr(name, "swiglu") || strcmp(name, "gelu") == 0)
    return fw->activation_bytes_factor;
  return 1;
}

/* fp8 GEMMs whose inputs the framework scales and casts in kernels of their own (torchao's
 * dynamic scaling): one streaming kernel per pass moving fp8_cast_bytes per element of every
 * GEMM's two inputs (forward: the activations and the weights; backward: the output gradient
 * and the transposed copies both products need). */
static size_t add_fp8_casts(const wl_framework *fw, const wl_tf_shard *sh, wl_tf_kernel *k,
                            size_t n)
{
  if (fw->fp8_cast_bytes <= 0 || sh->precision != WL_PREC_FP8 || n >= WL_TF_MAX_KERNELS)
    return n;
  uint64_t elems[2] = {0, 0};
  for (size_t i = 0; i < n; i++)
    for (int p = 0; p < 3; p++) {
      const wl_op_cost *c = &k[i].pass[p];
      if (k[i].has[p] && c->kind == WL_OP_GEMM)
        elems[p ? 1 : 0] += (c->gemm_m * c->gemm_k + c->gemm_k * c->gemm_n) *
                            MAX(c->gemm_batch, UINT64_C(1));
    }
  wl_tf_kernel *r = &k[n];
  memset(r, 0, sizeof *r);
  r->name = "fp8_cast";
  for (int p = 0; p < 2; p++) {
    wl_op_cost *c = &r->pass[p];
    c->kind = WL_OP_ELEMENTWISE;
    c->pass = (wl_pass)p;
    c->precision = WL_PREC_BF16;
    c->flops = elems[p] * 2;
    /* Reads of the 2-byte input (its maximum, then the scaled cast) and the 1-byte write. */
    c->bytes_read = (uint64_t)((double)elems[p] * (fw->fp8_cast_bytes - 1));
    c->bytes_written = elems[p];
    c->out_elems = elems[p];
    r->has[p] = elems[p] > 0;
  }
  return n + 1;
}

size_t wl_framework_kernels(const wl_framework *fw, const wl_tf *tf, const wl_tf_shard *sh,
                            gboolean hopper, wl_tf_kernel *k, size_t n)
{
  double attention = hopper ? fw->attention_time_factor : 1;
  for (size_t i = 0; i < n; i++) {
    /* A slower attention kernel: its work counted as factor x FLOPs and bytes, the rate the
     * device model gives fused attention being the faster kernel's. */
    for (int p = 0; p < 3 && attention != 1; p++)
      if (k[i].has[p] && k[i].pass[p].kind == WL_OP_ATTENTION) {
        k[i].pass[p].flops = (uint64_t)((double)k[i].pass[p].flops * attention);
        k[i].pass[p].bytes_read = (uint64_t)((double)k[i].pass[p].bytes_read * attention);
        k[i].pass[p].bytes_written = (uint64_t)((double)k[i].pass[p].bytes_written * attention);
      }
    double f = factor_of(fw, k[i].name);
    if (f == 1)
      continue;
    for (int p = 0; p < 3; p++)
      if (k[i].has[p] && k[i].pass[p].kind == WL_OP_ELEMENTWISE) {
        k[i].pass[p].bytes_read = (uint64_t)((double)k[i].pass[p].bytes_read * f);
        k[i].pass[p].bytes_written = (uint64_t)((double)k[i].pass[p].bytes_written * f);
      }
  }
  n = add_fp8_casts(fw, sh, k, n);
  if (fw->rope_bytes_factor <= 0 || tf->positions != WL_POS_ROTARY || n >= WL_TF_MAX_KERNELS)
    return n;
  /* The rotary embedding reads and writes the rank's queries and keys (its heads and key/value
   * heads x head width, of its b s / cp tokens with context parallelism); backward the same on
   * their gradients. */
  uint64_t t = sh->tp ? sh->tp : 1;
  uint64_t T = (uint64_t)sh->micro_batch * sh->seq / (sh->cp ? sh->cp : 1);
  uint64_t elems = T * ((uint64_t)tf->heads + tf->kv_heads) * wl_tf_head_dim(tf) / t;
  uint64_t bytes = (uint64_t)((double)(elems * wl_precision_bytes(sh->precision)) *
                              fw->rope_bytes_factor);
  wl_tf_kernel *r = &k[n];
  memset(r, 0, sizeof *r);
  r->name = "rope";
  for (int p = 0; p < 2; p++) {
    wl_op_cost *c = &r->pass[p];
    c->kind = WL_OP_ELEMENTWISE;
    c->pass = (wl_pass)p;
    c->precision = sh->precision;
    c->flops = elems * 3;
    c->bytes_read = bytes;
    c->bytes_written = bytes;
    c->out_elems = elems;
    r->has[p] = TRUE;
  }
  return n + 1;
}

double wl_framework_host_step_s(const wl_framework *fw, uint64_t params,
                                uint32_t devices_per_node)
{
  if (fw->host_adam_params_per_s <= 0)
    return 0;
  return (double)params * (devices_per_node ? devices_per_node : 1) / fw->host_adam_params_per_s;
}
