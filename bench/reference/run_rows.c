/* dtsim-reference-run: accuracy of the whole simulator (workload, device, network, strategy)
 * on the published multi-device measurements, every row run as `dtsim run` would run it.
 *
 * training.csv: every row. Throughput rows (images/s over all devices) run the row's strategy
 * (dp: the ring allreduce of the GPUs in order, as NCCL 1.x, which TensorFlow 1.1's replicated
 * variables reduced with, ran it; ps: parameter servers at the row's placement) on the row's
 * system preset with synthetic input (tf_cnn_benchmarks used synthetic data) and compare
 * throughput; "fwd+bwd" rows compare forward + backward time of one device.
 * scaling.csv: speedup over one device; systems not in the catalog are the INI files beside this
 * program (bench/reference/systems/), whose comments say what is known and what is assumed.
 *
 * Prints measured, predicted and error per row and the mean absolute percentage error.
 * No row has parameters of its own. Usage: dtsim-reference-run [REFERENCE_DIR]; held-out rows
 * (heldout.c): dtsim-reference-run --heldout FILE [--check]. */
#include "heldout.h"
#include "simulate.h"
#include "util.h"
#include "comm_net.h"

#include <math.h>
#include <string.h>

typedef struct {
  double sum_abs_pct;
  int n;
} tally;

static void account(tally *t, double measured, double predicted)
{
  t->sum_abs_pct += fabs(predicted - measured) / measured * 100;
  t->n++;
}

static gboolean simulate(sim_scenario *s, sim_report *r, GError **error)
{
  sim_run_opts o = {0};
  return sim_simulate(s, &o, r, error);
}

/* The lines of DIR/FILE, or NULL after printing why not. */
static char **read_rows(const char *dir, const char *file, char **path_out)
{
  g_autofree char *path = g_build_filename(dir, file, NULL);
  g_autofree char *text = NULL;
  g_autoptr(GError) error = NULL;
  if (!g_file_get_contents(path, &text, NULL, &error)) {
    fprintf(stderr, "dtsim-reference-run: %s\n", error->message);
    return NULL;
  }
  *path_out = g_steal_pointer(&path);
  return g_strsplit(g_strstrip(text), "\n", -1);
}

static int training(const char *dir, tally *all)
{
  g_autofree char *path = NULL;
  g_auto(GStrv) lines = read_rows(dir, "training.csv", &path);
  if (!lines)
    return 1;
  g_autoptr(GError) error = NULL;
  tally t = {0};
  /* Per system (the system column, "-" for single-device rows without one): no parameter of
   * the simulator is fitted to these rows (the NCCL pipeline's slice is fitted on the
   * collective rows, bench/collective/fit.sh) but the K80's clock with both dies of its board
   * busy, read off the two 2-die gce-k80x8 rows (docs/accuracy.md), so the error of a system left
   * out of every fit is its error here: the leave-one-system-out figures. */
  g_autoptr(GHashTable) by_sys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  printf("== training.csv through the whole simulator\n");
  printf("%-13s %-15s %-10s %4s %5s %-8s %10s %10s %7s\n", "model", "device", "system", "devs",
         "batch", "strategy", "measured", "predicted", "err%");
  for (int i = 1; lines[i]; i++) {
    g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
    if (g_strv_length(f) < 12)
      continue;
    gboolean fwdbwd = strcmp(f[8], "fwd+bwd") == 0;
    sim_scenario s;
    sim_scenario_init(&s);
    g_assert_true(sim_scenario_set(&s, "model", f[0], NULL, NULL));
    g_assert_true(sim_scenario_set(&s, "precision", f[2], NULL, NULL));
    g_assert_true(sim_scenario_set(&s, "device", f[3], NULL, NULL));
    g_assert_true(sim_scenario_set(&s, "system", *f[4] ? f[4] : "workstation-1gpu", NULL, NULL));
    s.nodes = g_ascii_strtoll(f[5], NULL, 10);
    s.devices_per_node = g_ascii_strtoll(f[6], NULL, 10);
    s.batch = g_ascii_strtoll(f[7], NULL, 10);
    g_assert_true(sim_scenario_set(&s, "strategy", fwdbwd ? "dp" : f[8], NULL, NULL));
    if (*f[9])
      g_assert_true(sim_scenario_set(&s, "ps-placement", f[9], NULL, NULL));
    s.synthetic = TRUE;
    s.iterations = 3;
    /* TensorFlow's benchmark page: "Optimizer: sgd" for every model (convnet-benchmarks' rows
     * time forward and backward only); dtsim-reference costs the same update. */
    g_assert_true(sim_scenario_set(&s, "optimizer", "sgd", NULL, NULL));
    /* TensorFlow 1.1 (May 2017) reduced replicated variables with tf.contrib.nccl, NCCL 1.x:
     * one ring of the ranks in order (src/core.cu, commBuildMaps), not NCCL 2's channels. */
    if (strcmp(f[8], "dp") == 0)
      g_assert_true(sim_scenario_set(&s, "allreduce", "ring", NULL, NULL));
    double measured = g_ascii_strtod(f[10], NULL), predicted = 0;
    sim_report r;
    if (!simulate(&s, &r, &error)) {
      fprintf(stderr, "dtsim-reference-run: %s line %d: %s\n", path, i + 1, error->message);
      sim_scenario_clear(&s);
      return 1;
    }
    if (fwdbwd)
      predicted = (r.forward_time_s + r.backward_time_s) * 1e3;  /* ms */
    else
      predicted = r.throughput_samples_per_s;
    account(&t, measured, predicted);
    account(all, measured, predicted);
    tally *ts = g_hash_table_lookup(by_sys, *f[4] ? f[4] : "-");
    if (!ts) {
      ts = g_new0(tally, 1);
      g_hash_table_insert(by_sys, g_strdup(*f[4] ? f[4] : "-"), ts);
    }
    account(ts, measured, predicted);
    printf("%-13s %-15s %-10s %4" G_GINT64_FORMAT " %5" G_GINT64_FORMAT " %-8s %10.1f %10.1f %+7.1f%s\n",
           f[0], f[3], *f[4] ? f[4] : "-", s.nodes * s.devices_per_node, s.batch, f[8], measured,
           predicted, (predicted - measured) / measured * 100, fwdbwd ? "  (ms)" : "");
    sim_scenario_clear(&s);
  }
  printf("MAPE over %d training rows: %.1f%%\n", t.n, t.n ? t.sum_abs_pct / t.n : 0);
  g_autoptr(GList) keys = g_list_sort(g_hash_table_get_keys(by_sys), (GCompareFunc)strcmp);
  printf("leave-one-system-out (nothing fitted to these rows but the K80's board_busy_clock_mhz, "
         "from the two 2-die gce-k80x8 rows):");
  for (GList *k = keys; k; k = k->next) {
    const tally *ts = g_hash_table_lookup(by_sys, k->data);
    printf(" %s %.1f%% (%d rows)%s", (const char *)k->data, ts->sum_abs_pct / ts->n, ts->n,
           k->next ? ";" : "");
  }
  printf("\n\n");
  return 0;
}

static int scaling(const char *dir, tally *all)
{
  g_autofree char *path = NULL;
  g_auto(GStrv) lines = read_rows(dir, "scaling.csv", &path);
  if (!lines)
    return 1;
  g_autoptr(GError) error = NULL;
  tally t = {0};
  printf("== scaling.csv: speedup over one device\n");
  printf("%-13s %-22s %5s %-8s %-10s %9s %10s %7s\n", "model", "system", "devs", "strategy",
         "algorithm", "measured", "predicted", "err%");
  for (int i = 1; lines[i]; i++) {
    g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
    if (g_strv_length(f) < 6)
      continue;
    g_autofree char *sys = g_strdup_printf("%s/systems/%s.ini", DTSIM_BENCH_DIR, f[1]);
    int64_t devices = g_ascii_strtoll(f[2], NULL, 10);
    sim_scenario s;
    sim_scenario_init(&s);
    g_assert_true(sim_scenario_set(&s, "model", f[0], NULL, NULL));
    g_assert_true(sim_scenario_set(&s, "system", sys, NULL, NULL));
    g_assert_true(sim_scenario_set(&s, "strategy", f[3], NULL, NULL));
    if (*f[4])
      g_assert_true(sim_scenario_set(&s, "allreduce", f[4], NULL, NULL));
    g_autoptr(comm_system) cs = comm_system_load(sys, "system", &error);
    if (!cs) {
      fprintf(stderr, "dtsim-reference-run: %s\n", error->message);
      return 1;
    }
    int64_t dpn = MIN(devices, (int64_t)cs->devices_per_node);
    s.devices_per_node = dpn;
    s.nodes = (devices + dpn - 1) / dpn;
    s.iterations = 3;
    s.synthetic = TRUE;
    gboolean strong = strcmp(f[0], "nin") == 0;
    /* FireCaffe: 1024 images per step in total (strong scaling); TensorFlow: 32 per GPU. */
    int64_t global = 1024;
    s.batch = strong ? global / (s.nodes * dpn) : 32;
    if (strcmp(f[3], "ps") == 0) {
      g_assert_true(sim_scenario_set(&s, "ps-placement", "colocated", NULL, NULL));
      s.ps_count = s.nodes;
    }
    sim_report many, one;
    if (!simulate(&s, &many, &error)) {
      fprintf(stderr, "dtsim-reference-run: %s line %d: %s\n", path, i + 1, error->message);
      return 1;
    }
    s.nodes = 1;
    s.devices_per_node = 1;
    s.batch = strong ? global : 32;
    if (strcmp(f[3], "ps") == 0)
      s.ps_count = 1;
    if (!simulate(&s, &one, &error)) {
      fprintf(stderr, "dtsim-reference-run: %s line %d: %s\n", path, i + 1, error->message);
      return 1;
    }
    double measured = g_ascii_strtod(f[5], NULL);
    double predicted = many.throughput_samples_per_s / one.throughput_samples_per_s;
    account(&t, measured, predicted);
    account(all, measured, predicted);
    printf("%-13s %-22s %5" G_GINT64_FORMAT " %-8s %-10s %9.1f %10.1f %+7.1f\n", f[0], f[1],
           devices, f[3], *f[4] ? f[4] : "-", measured, predicted,
           (predicted - measured) / measured * 100);
    sim_scenario_clear(&s);
  }
  printf("MAPE over %d scaling rows: %.1f%%\n\n", t.n, t.n ? t.sum_abs_pct / t.n : 0);
  return 0;
}

int main(int argc, char **argv)
{
  if (argc > 1 && strcmp(argv[1], "--heldout") == 0) {
    gboolean check = argc == 4 && strcmp(argv[3], "--check") == 0;
    if (argc < 3 || (argc > 3 && !check)) {
      fprintf(stderr, "dtsim-reference-run: usage: dtsim-reference-run --heldout FILE [--check]\n");
      return 2;
    }
    return ref_heldout(argv[2], check);
  }
  const char *dir = argc > 1 ? argv[1] : DTSIM_REFERENCE_DIR;
  tally all = {0};
  if (training(dir, &all) || scaling(dir, &all))
    return 1;
  printf("MAPE over all %d rows (target <= 15%%): %.1f%%\n", all.n, all.sum_abs_pct / all.n);
  return 0;
}
