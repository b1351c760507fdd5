/* dtsim-reference-run --heldout FILE: published runs kept out of every fit (held-out checks).
 *
 * FILE is a CSV like reference/training.csv with four more columns: `group` (the rows' family,
 * each with its own MAPE), `ps_count` and `ps_workers` (parameter servers and who pushes to
 * them, where the run had them) and `variable_update` (what the framework did, for the reader), and
 * optionally `ps_sharding` (how the servers hold the tensors, `round-robin` where TensorFlow's
 * replica_device_setter placed them; empty or absent: bytes). Lines that start with '#' are
 * comments. Every row runs as `dtsim run` would run it: the row's strategy, system, devices and
 * per-device batch, synthetic input, SGD, three iterations; `ps` rows at their placement and
 * server count, `dp` rows with one ring in rank order (NCCL 1.x, as in run_rows.c). Nothing is
 * fitted here.
 *
 * A bad row (wrong number of fields, a value out of range, an unknown name) stops the run with
 * one line naming the file, the line and the column, and exit status 2, before anything is
 * printed; --check parses every row and builds its cluster without simulating. */
#include "heldout.h"

#include "simulate.h"
#include "util.h"

#include <math.h>
#include <string.h>

/* The columns a held-out file must have (others are allowed and ignored). */
static const char *const needed[] = {"group", "model", "precision", "device", "system", "nodes",
                                     "devices_per_node", "batch_per_device", "strategy",
                                     "ps_placement", "ps_count", "ps_workers", "measured", "unit",
                                     "source", NULL};

typedef struct {
  char *group;
  int line;
  double measured;              /* images per second, all devices together */
  sim_scenario s;
} row;

static void row_clear(gpointer p)
{
  row *r = p;
  g_free(r->group);
  sim_scenario_clear(&r->s);
}

typedef struct {
  double sum_abs_pct;
  int n, over;                  /* rows; rows more than 15% off */
} tally;

static int column(GPtrArray *header, const char *name)
{
  for (guint i = 0; i < header->len; i++)
    if (strcmp(g_ptr_array_index(header, i), name) == 0)
      return (int)i;
  return -1;
}

/* Sets `key` from the cell of `col`; errors name FILE:LINE and the column. */
static gboolean set_cell(row *r, const char *path, const char *key, const char *col,
                         const char *value, GError **error)
{
  g_autofree char *where = g_strdup_printf("%s:%d: column %s", path, r->line, col);
  return sim_scenario_set(&r->s, key, value, where, error);
}

/* One data line into a scenario. */
static gboolean parse_row(const char *path, int line, GPtrArray *header, const int *idx,
                          const char *text, row *r, GError **error)
{
  g_autoptr(GPtrArray) f = dt_csv_split(text);
  r->line = line;
  if (f->len != header->len) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s:%d: %u fields where the header has %u", path,
                line, f->len, header->len);
    return FALSE;
  }
#define CELL(k) ((const char *)g_ptr_array_index(f, idx[k]))
  for (int k = 0; needed[k]; k++) {
    if (!dt_check_line(CELL(k), needed[k], error)) {
      g_prefix_error(error, "%s:%d: ", path, line);
      return FALSE;
    }
  }
  static const int required[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 14};
  for (size_t k = 0; k < G_N_ELEMENTS(required); k++)
    if (!*CELL(required[k])) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s:%d: column %s: empty", path, line,
                  needed[required[k]]);
      return FALSE;
    }
  r->group = g_strdup(CELL(0));
  g_autofree char *measured_where = g_strdup_printf("%s:%d: column measured", path, line);
  if (!dt_parse_double(CELL(12), measured_where, 1e-9, 1e12, &r->measured, error))
    return FALSE;
  if (strcmp(CELL(13), "images_per_s") != 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s:%d: column unit: '%s' (held-out rows compare images_per_s)", path, line,
                CELL(13));
    return FALSE;
  }
  sim_scenario_init(&r->s);
  static const struct {
    int col;
    const char *key;
  } keys[] = {{1, "model"}, {2, "precision"}, {3, "device"}, {4, "system"}, {5, "nodes"},
              {6, "devices-per-node"}, {7, "batch"}, {8, "strategy"}};
  for (size_t k = 0; k < G_N_ELEMENTS(keys); k++)
    if (!set_cell(r, path, keys[k].key, needed[keys[k].col], CELL(keys[k].col), error))
      return FALSE;
  gboolean servers = sim_scenario_key_equals(&r->s, "strategy", "ps");
  static const char *const ps_keys[] = {"ps-placement", "ps-count", "ps-workers"};
  for (int k = 9; k <= 11; k++) {
    if (!*CELL(k))
      continue;
    if (!servers) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s:%d: column %s: only rows of strategy ps have parameter servers", path,
                  line, needed[k]);
      return FALSE;
    }
    if (!set_cell(r, path, ps_keys[k - 9], needed[k], CELL(k), error))
      return FALSE;
  }
  /* Optional column: how the servers hold the tensors (bytes when absent or empty). */
  int sharding = column(header, "ps_sharding");
  const char *sharding_cell = sharding >= 0 ? g_ptr_array_index(f, sharding) : "";
  if (*sharding_cell) {
    if (!servers) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s:%d: column ps_sharding: only rows of strategy ps have parameter servers",
                  path, line);
      return FALSE;
    }
    if (!set_cell(r, path, "ps-sharding", "ps_sharding", sharding_cell, error))
      return FALSE;
  }
  r->s.synthetic = TRUE;
  r->s.iterations = 3;
  /* TensorFlow's benchmark page: "Optimizer: sgd" for every model. */
  g_assert_true(sim_scenario_set(&r->s, "optimizer", "sgd", NULL, NULL));
  /* Replicated variables with NCCL (TensorFlow 1.1): NCCL 1.x's one ring in rank order. */
  if (sim_scenario_key_equals(&r->s, "strategy", "dp"))
    g_assert_true(sim_scenario_set(&r->s, "allreduce", "ring", NULL, NULL));
  /* Errors of the whole row name the key's origin (FILE:LINE: column ...) where one key is to
   * blame; others get the file and line here. */
  g_autoptr(comm_topology) topo = NULL;
  if (!sim_scenario_check(&r->s, error) || !(topo = sim_scenario_topology(&r->s, error))) {
    if (!g_str_has_prefix((*error)->message, path))
      g_prefix_error(error, "%s:%d: ", path, line);
    return FALSE;
  }
#undef CELL
  return TRUE;
}

/* Every row of the file, or NULL with an error naming the file and line. */
static GArray *read_heldout(const char *path, GError **error)
{
  g_autofree char *text = NULL;
  gsize len = 0;
  if (!dt_read_file(path, "--heldout", DT_INPUT_MAX_BYTES, &text, &len, error))
    return NULL;
  if (strlen(text) != len) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--heldout: %s: holds a NUL byte", path);
    return NULL;
  }
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  g_autoptr(GPtrArray) header = NULL;
  int idx[G_N_ELEMENTS(needed)];
  g_autoptr(GArray) rows = g_array_new(FALSE, TRUE, sizeof(row));
  g_array_set_clear_func(rows, row_clear);
  for (int i = 0; lines[i]; i++) {
    const char *l = lines[i];
    if (l[0] == '#' || l[strspn(l, " \t\r")] == '\0')
      continue;
    if (!header) {
      header = dt_csv_split(l);
      for (int k = 0; needed[k]; k++)
        if ((idx[k] = column(header, needed[k])) < 0) {
          g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s:%d: the header has no column %s",
                      path, i + 1, needed[k]);
          return NULL;
        }
      continue;
    }
    g_array_set_size(rows, rows->len + 1);
    if (!parse_row(path, i + 1, header, idx, l, &g_array_index(rows, row, rows->len - 1),
                   error))
      return NULL;
  }
  if (rows->len == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--heldout: %s: no rows", path);
    return NULL;
  }
  return g_steal_pointer(&rows);
}

static void account(tally *t, double measured, double predicted)
{
  double pct = fabs(predicted - measured) / measured * 100;
  t->sum_abs_pct += pct;
  t->n++;
  t->over += pct > 15;
}

/* The group's tally, in order of first appearance. */
static tally *group_tally(GPtrArray *names, GArray *tallies, const char *group)
{
  for (guint i = 0; i < names->len; i++)
    if (strcmp(g_ptr_array_index(names, i), group) == 0)
      return &g_array_index(tallies, tally, i);
  g_ptr_array_add(names, g_strdup(group));
  g_array_set_size(tallies, tallies->len + 1);
  return &g_array_index(tallies, tally, tallies->len - 1);
}

/* Rows on several nodes against the row of the same group, model, batch and system on one node
 * of as many devices: the speedup over one node, measured and predicted. The error of that ratio
 * is what the communication between nodes adds or misses, without the one-node error both rows
 * share (the device model, the node's own servers). */
static void scaling_over_one_node(GArray *rows, const double *predicted)
{
  tally t = {0};
  for (guint i = 0; i < rows->len; i++) {
    const row *r = &g_array_index(rows, row, i);
    if (r->s.nodes < 2)
      continue;
    for (guint j = 0; j < rows->len; j++) {
      const row *b = &g_array_index(rows, row, j);
      if (b->s.nodes != 1 || b->s.devices_per_node != r->s.devices_per_node ||
          b->s.batch != r->s.batch || strcmp(b->group, r->group) != 0 ||
          strcmp(b->s.model, r->s.model) != 0 || strcmp(b->s.system, r->s.system) != 0)
        continue;
      if (t.n == 0)
        printf("\n== speedup over one node (the row of the same group, model, batch and system on "
               "one node)\n%-16s %-13s %5s %5s %9s %10s %7s\n", "group", "model", "devs",
               "batch", "measured", "predicted", "err%");
      double m = r->measured / b->measured, p = predicted[i] / predicted[j];
      account(&t, m, p);
      printf("%-16s %-13s %5" G_GINT64_FORMAT " %5" G_GINT64_FORMAT " %9.2f %10.2f %+7.1f\n",
             r->group, r->s.model, (int64_t)(r->s.nodes * r->s.devices_per_node),
             (int64_t)r->s.batch, m, p, (p - m) / m * 100);
      break;
    }
  }
  if (t.n)
    printf("MAPE of the speedup over one node: %.1f%% over %d rows (%d more than 15%% off)\n",
           t.sum_abs_pct / t.n, t.n, t.over);
}

int ref_heldout(const char *path, gboolean check_only)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) rows = read_heldout(path, &error);
  if (!rows) {
    g_autofree char *msg = dt_escape(error->message);
    fprintf(stderr, "dtsim-reference-run: %s\n", msg);
    return dt_error_exit_status(error);
  }
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GArray) tallies = g_array_new(FALSE, TRUE, sizeof(tally));
  if (check_only) {
    for (guint i = 0; i < rows->len; i++)
      group_tally(names, tallies, g_array_index(rows, row, i).group)->n++;
    printf("%s: %u rows:", path, rows->len);
    for (guint i = 0; i < names->len; i++)
      printf(" %s %d%s", (const char *)g_ptr_array_index(names, i),
             g_array_index(tallies, tally, i).n, i + 1 < names->len ? ";" : "\n");
    return 0;
  }
  /* Simulate every row first, so that a row the simulator refuses prints nothing. */
  g_autofree double *predicted = g_new(double, rows->len);
  for (guint i = 0; i < rows->len; i++) {
    row *r = &g_array_index(rows, row, i);
    sim_run_opts o = {.quiet = TRUE};
    sim_report rep;
    if (!sim_simulate(&r->s, &o, &rep, &error)) {
      g_autofree char *msg = dt_escape(error->message);
      fprintf(stderr, "dtsim-reference-run: %s:%d: %s\n", path, r->line, msg);
      return dt_error_exit_status(error);
    }
    predicted[i] = rep.throughput_samples_per_s;
  }
  printf("== held-out rows (%s) through the whole simulator; * more than 15%% off\n", path);
  printf("%-16s %-13s %-11s %5s %5s %-8s %-10s %3s %-7s %9s %10s %7s\n", "group", "model",
         "system", "devs", "batch", "strategy", "placement", "ps", "workers", "measured",
         "predicted", "err%");
  tally all = {0};
  for (guint i = 0; i < rows->len; i++) {
    row *r = &g_array_index(rows, row, i);
    double err = (predicted[i] - r->measured) / r->measured * 100;
    account(&all, r->measured, predicted[i]);
    account(group_tally(names, tallies, r->group), r->measured, predicted[i]);
    gboolean servers = sim_scenario_key_equals(&r->s, "strategy", "ps");
    g_autofree char *ps = servers ? g_strdup_printf("%" G_GINT64_FORMAT, (int64_t)r->s.ps_count)
                                  : g_strdup("-");
    printf("%-16s %-13s %-11s %5" G_GINT64_FORMAT " %5" G_GINT64_FORMAT
           " %-8s %-10s %3s %-7s %9.1f %10.1f %+7.1f%s\n",
           r->group, r->s.model, r->s.system,
           (int64_t)(r->s.nodes * r->s.devices_per_node), (int64_t)r->s.batch,
           sim_scenario_strategy_name(&r->s),
           servers ? comm_ps_placement_name(r->s.ps_placement) : "-", ps,
           servers ? comm_ps_workers_name(r->s.ps_workers) : "-", r->measured,
           predicted[i], err, fabs(err) > 15 ? " *" : "");
  }
  for (guint i = 0; i < names->len; i++) {
    const tally *t = &g_array_index(tallies, tally, i);
    printf("MAPE %-16s %5.1f%% over %2d rows (%d more than 15%% off)\n",
           (const char *)g_ptr_array_index(names, i), t->sum_abs_pct / t->n, t->n, t->over);
  }
  printf("MAPE over all %d held-out rows: %.1f%% (%d more than 15%% off)\n", all.n,
         all.sum_abs_pct / all.n, all.over);
  scaling_over_one_node(rows, predicted);
  return 0;
}
