/* dtsim-kernels-h200: the GPU device model on single kernels measured on one H200 SXM 141GB
 * (reference/h200-kernels.csv: cuBLAS GEMMs in bf16 and fp8 at Llama shapes, the experts'
 * grouped GEMMs with 1, 8 or 32 local experts, flash and cuDNN attention from 2k to 131k
 * tokens, the router, the token permutes and the elementwise kernels of a block).
 *
 * Every row becomes the kernel the simulator runs for it in a transformer block, built by the
 * same workloads/ functions (wl_tf_gemm_kernel, wl_tf_stream_kernel, and the attention kernel of
 * wl_tf_block_kernels), and is timed by dev_op_time_ps on the catalog device h200-sxm-141gb, as
 * a training run times it:
 *   - gemm: the linear layer whose forward, backward-data or backward-weights GEMM the row is
 *     (fwd+bwd: all three passes); fp8 rows at fp8;
 *   - expert_gemm_*: the experts' grouped GEMM, one GEMM per local expert of m rows, as one
 *     kernel (bmm, grouped_mm), or for the Python loop over experts as that many kernels of one
 *     GEMM each, each with its launch; fwd+bwd all three passes;
 *   - attention: the block's flash-attention kernel (32 query heads, 8 key/value heads of 128,
 *     batch 1), causal or full; fwd+bwd its forward and backward;
 *   - router: the router GEMM (tokens x experts x hidden); permute and unpermute: the block's
 *     gather and scatter-and-sum streams; rmsnorm, swiglu, residual_add: the block's norm,
 *     activation and residual streams; memcpy, memset, reduce: a stream reading and writing the
 *     tensor, writing it, reading it; rope, which the block folds into no kernel of its own, as
 *     a stream reading and writing the query tensor.
 * The simulator runs one fused kernel where PyTorch's eager rows run several (autograd, eager
 * fp32 norms, softmax and top-k after the router GEMM, the weighted sum after the scatter):
 * their extra kernels and launch gaps are part of the measured time only.
 *
 * Prints every row (measured, predicted, error), the mean absolute percentage error per kernel
 * family and per family and method, and overall. No parameter is fitted here: the device's
 * parameters are its catalog file's. Usage: dtsim-kernels-h200 [REFERENCE_DIR] [--device NAME]
 * [--quiet] (--quiet: the summaries only). */
#include "devices.h"
#include "util.h"
#include "wl_transformer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { C_ID, C_KERNEL, C_DTYPE, C_M, C_N, C_K, C_BATCH, C_EXPERTS, C_TOKENS, C_SEQ, C_HEADS,
       C_KV_HEADS, C_HEAD_DIM, C_CAUSAL, C_PASS, C_METHOD, C_TIME_US, C_COUNT };

/* The rows of one group: errors and the logarithms of predicted over measured. */
typedef struct {
  GArray *err, *log_ratio;
} tally;

static void tally_free(gpointer p)
{
  tally *t = p;
  g_array_unref(t->err);
  g_array_unref(t->log_ratio);
  g_free(t);
}

static void tally_add(GHashTable *by, const char *key, double measured, double predicted)
{
  tally *t = g_hash_table_lookup(by, key);
  if (t == NULL) {
    t = g_new0(tally, 1);
    t->err = g_array_new(FALSE, FALSE, sizeof(double));
    t->log_ratio = g_array_new(FALSE, FALSE, sizeof(double));
    g_hash_table_insert(by, g_strdup(key), t);
  }
  double err = (predicted - measured) / measured, lr = log(predicted / measured);
  g_array_append_val(t->err, err);
  g_array_append_val(t->log_ratio, lr);
}

/* Mean absolute and mean signed error, and the shape error: the mean absolute error once the
 * group's predictions are divided by their geometric-mean ratio to the measurements, which
 * leaves what the model gets wrong from row to row (sequence, causal mask, shape) apart from
 * one level for the whole group (a diagnostic: no prediction uses that scale). */
static void tally_stats(const tally *t, double *mape, double *mean, double *shape)
{
  double abs_sum = 0, sum = 0, lr_sum = 0, shape_sum = 0;
  guint n = t->err->len;
  for (guint i = 0; i < n; i++) {
    double e = g_array_index(t->err, double, i);
    abs_sum += fabs(e), sum += e, lr_sum += g_array_index(t->log_ratio, double, i);
  }
  for (guint i = 0; i < n; i++)
    shape_sum += fabs(exp(g_array_index(t->log_ratio, double, i) - lr_sum / n) - 1);
  *mape = 100 * abs_sum / n, *mean = 100 * sum / n, *shape = 100 * shape_sum / n;
}

static uint64_t cell(GPtrArray *f, int c)
{
  const char *v = g_ptr_array_index(f, c);
  return *v ? g_ascii_strtoull(v, NULL, 10) : 0;
}

static const char *str(GPtrArray *f, int c) { return g_ptr_array_index(f, c); }

/* Which passes of a three-pass kernel a row times: 1 << pass. */
static unsigned passes_of(const char *pass)
{
  if (strcmp(pass, "fwd") == 0)
    return 1u << WL_PASS_FORWARD;
  if (strcmp(pass, "dgrad") == 0)
    return 1u << WL_PASS_BACKWARD_DATA;
  if (strcmp(pass, "wgrad") == 0)
    return 1u << WL_PASS_BACKWARD_WEIGHTS;
  if (strcmp(pass, "fwd+bwd") == 0)
    return 7u;
  return 0;
}

/* The flash-attention kernel of a block with the row's heads and sequence, batch 1. */
static gboolean attention_kernel(GPtrArray *f, wl_tf_kernel *out, GError **error)
{
  uint64_t heads = cell(f, C_HEADS), kv = cell(f, C_KV_HEADS), hd = cell(f, C_HEAD_DIM);
  uint64_t seq = cell(f, C_SEQ);
  g_autofree char *spec = g_strdup_printf(
      "transformer:layers=1,hidden=%" G_GUINT64_FORMAT ",heads=%" G_GUINT64_FORMAT
      ",kv-heads=%" G_GUINT64_FORMAT ",head-dim=%" G_GUINT64_FORMAT ",seq=%" G_GUINT64_FORMAT
      ",vocab=128,family=llama,causal=%d",
      heads * hd, heads, kv, hd, seq, cell(f, C_CAUSAL) ? 1 : 0);
  wl_tf tf;
  if (!wl_tf_parse(spec, &tf, error))
    return FALSE;
  wl_tf_shard sh = {.micro_batch = 1, .seq = (uint32_t)seq, .tp = 1,
                    .precision = WL_PREC_BF16, .attention = WL_ATTN_FLASH};
  wl_tf_kernel ks[WL_TF_MAX_KERNELS];
  size_t n = wl_tf_block_kernels(&tf, &sh, 0, ks);
  for (size_t i = 0; i < n; i++)
    if (strcmp(ks[i].name, "attention") == 0) {
      *out = ks[i];
      return TRUE;
    }
  g_set_error(error, DT_ERROR, DT_ERROR_INTERNAL, "the block of %s has no attention kernel", spec);
  return FALSE;
}

/* The simulator's kernel for one row, which of its passes the row times, and how many times
 * it runs (*times: the local experts of a loop over experts, else 1). */
static gboolean row_kernel(GPtrArray *f, wl_tf_kernel *kn, unsigned *passes, uint64_t *times,
                           GError **error)
{
  *times = 1;
  const char *kernel = str(f, C_KERNEL);
  wl_precision p = strncmp(str(f, C_DTYPE), "fp8", 3) == 0 ? WL_PREC_FP8 : WL_PREC_BF16;
  uint64_t m = cell(f, C_M), n = cell(f, C_N), k = cell(f, C_K);
  uint64_t elems = n ? m * n : m;
  *passes = passes_of(str(f, C_PASS));
  if (*passes == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "pass: unknown '%s'", str(f, C_PASS));
    return FALSE;
  }
  if (strcmp(kernel, "gemm") == 0 || g_str_has_prefix(kernel, "expert_gemm")) {
    uint64_t batch = cell(f, C_BATCH) ? cell(f, C_BATCH) : 1;
    if (strstr(str(f, C_METHOD), "loop")) {
      *times = batch;
      batch = 1;
    }
    /* The row's (m, n, k) is the GEMM it times; the linear layer y[M x N] = x[M x K] W runs
     * backward-data as (M, K, N) and backward-weights as (K, N, M). */
    if (*passes == 1u << WL_PASS_BACKWARD_DATA)
      wl_tf_gemm_kernel(kn, kernel, batch, m, k, n, p);
    else if (*passes == 1u << WL_PASS_BACKWARD_WEIGHTS)
      wl_tf_gemm_kernel(kn, kernel, batch, k, n, m, p);
    else
      wl_tf_gemm_kernel(kn, kernel, batch, m, n, k, p);
  } else if (strcmp(kernel, "router") == 0) {
    wl_tf_gemm_kernel(kn, kernel, 1, m, n, k, p);
  } else if (strcmp(kernel, "attention") == 0) {
    return attention_kernel(f, kn, error);
  } else if (strcmp(kernel, "permute") == 0 || strcmp(kernel, "memcpy") == 0 ||
             strcmp(kernel, "rope") == 0) {
    wl_tf_stream_kernel(kn, kernel, elems, 1, 1, 0, p);
  } else if (strcmp(kernel, "unpermute") == 0 || strcmp(kernel, "residual_add") == 0) {
    wl_tf_stream_kernel(kn, kernel, elems, 2, 1, 2, p);
  } else if (strcmp(kernel, "rmsnorm") == 0) {
    wl_tf_stream_kernel(kn, kernel, elems, 1, 1, 8, p);
  } else if (strcmp(kernel, "swiglu") == 0) {
    wl_tf_stream_kernel(kn, kernel, elems, 2, 1, 8, p);
  } else if (strcmp(kernel, "memset") == 0) {
    wl_tf_stream_kernel(kn, kernel, elems, 0, 1, 0, p);
  } else if (strcmp(kernel, "reduce") == 0) {
    wl_tf_stream_kernel(kn, kernel, elems, 1, 0, 1, p);
  } else {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "kernel: unknown family '%s'", kernel);
    return FALSE;
  }
  return TRUE;
}

/* Seconds the simulator takes for the passes of `kn`. */
static double kernel_s(const dev_device *dev, const wl_tf_kernel *kn, unsigned passes)
{
  int64_t ps = 0;
  for (int i = 0; i < 3; i++)
    if ((passes & (1u << i)) && kn->has[i])
      ps += dev_op_time_ps(dev, &kn->pass[i], 0);
  return (double)ps * 1e-12;
}

/* The method of a row in a word: "flash", "cudnn", "loop", "bmm", "grouped", "eager", ... */
static const char *method_class(GPtrArray *f)
{
  const char *m = str(f, C_METHOD);
  if (strstr(m, "eager") && strstr(m, "autograd"))
    return "eager-fwdbwd";
  if (strstr(m, "eager"))
    return "eager";
  if (strstr(m, "sort"))
    return "sort+gather";
  if (strstr(m, "cudnn"))
    return "cudnn";
  if (strstr(m, "flash"))
    return "flash";
  if (strstr(m, "loop"))
    return "loop";
  if (strstr(m, "_scaled_grouped_mm"))
    return "fp8-grouped";
  if (strstr(m, "_grouped_mm (autograd)"))
    return "grouped-fwdbwd";
  if (strstr(m, "_grouped_mm"))
    return "grouped";
  if (strstr(m, "bmm"))
    return "bmm";
  if (strstr(m, "use_fast_accum"))
    return "fp8-fast-accum";
  if (strstr(m, "_scaled_mm"))
    return "fp8";
  if (strstr(m, "autograd"))
    return "fwdbwd";
  return "one-kernel";
}

static void print_tallies(const char *title, GHashTable *by)
{
  g_autoptr(GList) keys = g_list_sort(g_hash_table_get_keys(by), (GCompareFunc)strcmp);
  printf("%s\n%-34s %5s %8s %9s %8s\n", title, "", "rows", "mape%", "mean_err%", "shape%");
  for (GList *l = keys; l; l = l->next) {
    double mape, mean, shape;
    tally_stats(g_hash_table_lookup(by, l->data), &mape, &mean, &shape);
    printf("%-34s %5u %8.1f %+9.1f %8.1f\n", (const char *)l->data,
           ((const tally *)g_hash_table_lookup(by, l->data))->err->len, mape, mean, shape);
  }
}

int main(int argc, char **argv)
{
  const char *dir = DTSIM_REFERENCE_DIR, *device = "h200-sxm-141gb";
  gboolean quiet = FALSE;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--device") == 0 && i + 1 < argc)
      device = argv[++i];
    else if (strcmp(argv[i], "--quiet") == 0)
      quiet = TRUE;
    else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: dtsim-kernels-h200 [REFERENCE_DIR] [--device NAME] [--quiet]\n");
      return 2;
    } else
      dir = argv[i];
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(dev_device) dev = dev_device_load(device, NULL, &error);
  if (dev == NULL) {
    fprintf(stderr, "dtsim-kernels-h200: %s\n", error->message);
    return 2;
  }
  g_autofree char *path = g_build_filename(dir, "h200-kernels.csv", NULL);
  g_autofree char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, &error)) {
    fprintf(stderr, "dtsim-kernels-h200: %s\n", error->message);
    return 2;
  }
  g_autoptr(GHashTable) by_family = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, tally_free);
  g_autoptr(GHashTable) by_method = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, tally_free);
  g_autoptr(GHashTable) overall = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                        tally_free);
  g_auto(GStrv) lines = g_strsplit(g_strstrip(text), "\n", -1);
  /* The rows are printed once the whole table has been read: a bad row prints nothing. */
  g_autoptr(GString) table = g_string_new(NULL);
  g_string_append_printf(table, "== %s on %s: single kernels, microseconds\n"
                         "%-56s %-15s %11s %11s %7s\n", path, dev_device_name(dev), "row",
                         "method", "measured", "predicted", "err%");
  for (int i = 1; lines[i]; i++) {
    g_autoptr(GPtrArray) f = dt_csv_split(lines[i]);
    if (f->len < C_COUNT) {
      fprintf(stderr, "dtsim-kernels-h200: %s:%d: %u columns, expected at least %d\n", path,
              i + 1, f->len, C_COUNT);
      return 2;
    }
    double measured = g_ascii_strtod(str(f, C_TIME_US), NULL) * 1e-6;
    wl_tf_kernel kn;
    unsigned passes;
    uint64_t times;
    if (!(measured > 0) || !row_kernel(f, &kn, &passes, &times, &error)) {
      fprintf(stderr, "dtsim-kernels-h200: %s:%d: %s\n", path, i + 1,
              error ? error->message : "time_us: not a positive number");
      return 2;
    }
    double predicted = (double)times * kernel_s(dev, &kn, passes);
    double err = (predicted - measured) / measured;
    const char *method = method_class(f);
    g_autofree char *fm = g_strdup_printf("%s/%s", str(f, C_KERNEL), method);
    tally_add(by_family, str(f, C_KERNEL), measured, predicted);
    tally_add(by_method, fm, measured, predicted);
    tally_add(overall, "all", measured, predicted);
    g_string_append_printf(table, "%-56s %-15s %11.2f %11.2f %+7.1f\n", str(f, C_ID), method,
                           measured * 1e6, predicted * 1e6, 100 * err);
  }
  if (g_hash_table_size(overall) == 0) {
    fprintf(stderr, "dtsim-kernels-h200: %s: no rows\n", path);
    return 2;
  }
  if (!quiet)
    fputs(table->str, stdout);
  printf("\n");
  print_tallies("== by kernel family", by_family);
  printf("\n");
  print_tallies("== by family and method", by_method);
  /* The mean over families weighs each family once, whatever its row count. */
  double fam_sum = 0, mape, mean, shape;
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init(&it, by_family);
  while (g_hash_table_iter_next(&it, NULL, &v)) {
    tally_stats(v, &mape, &mean, &shape);
    fam_sum += mape;
  }
  const tally *all = g_hash_table_lookup(overall, "all");
  tally_stats(all, &mape, &mean, &shape);
  printf("\nMAPE all %u rows: %.1f%% (mean signed %+.1f%%); mean of the %u family MAPEs: %.1f%%\n",
         all->err->len, mape, mean, g_hash_table_size(by_family),
         fam_sum / g_hash_table_size(by_family));
  return 0;
}
