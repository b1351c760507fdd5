/* dtsim-mpi sweep: spreads the points of a `dtsim sweep` over the ranks and gathers one table.
 * Point i goes to rank i mod size (cyclic, so neighbouring points, which cost about the same,
 * land on different ranks); each rank simulates its points with dtsim_sweep_point() (the
 * function behind `dtsim sweep`, sweep_point.h) and rank 0 gathers the JSON lines, puts them
 * back in point order and prints them: the output is the same bytes whatever the rank count. */
#include "comm_mpi_run.h"
#include "sweep_point.h"
#include "util.h"

#include <json-glib/json-glib.h>
#include <string.h>

/* A table row from one point's JSON line. */
static void print_row(FILE *f, int point, const char *line)
{
  g_autoptr(JsonParser) parser = json_parser_new();
  double t = 0, thr = 0;
  int64_t devices = 0;
  if (json_parser_load_from_data(parser, line, -1, NULL)) {
    JsonObject *o = json_node_get_object(json_parser_get_root(parser));
    t = json_object_get_double_member_with_default(o, "iteration_time_s", 0);
    thr = json_object_get_double_member_with_default(o, "throughput_samples_per_s", 0);
    devices = json_object_get_int_member_with_default(o, "devices", 0);
  }
  fprintf(f, "%6d %8" G_GINT64_FORMAT " %18.3f %22.1f\n", point, devices, t * 1e3, thr);
}

int comm_mpi__cmd_sweep(comm_mpi_ctx *ctx, int argc, char **argv)
{
  gboolean json = FALSE;
  GOptionEntry entries[] = {{NULL}};
  g_autoptr(GOptionContext) octx = g_option_context_new("[SCENARIO.ini] - a sweep spread over the ranks");
  g_option_context_add_main_entries(octx, entries, NULL);
  g_autoptr(sim_scenario_opts) so = sim_scenario_opts_new(octx, SIM_OPTS_SWEEP);
  char *scenario_file = NULL;
  if (argc >= 2 && argv[1][0] != '-') {
    scenario_file = argv[1];
    argv[1] = argv[0];
    argv++;
    argc--;
  }
  if (!comm_mpi__parse(ctx, octx, &argc, &argv))
    return 0;
  g_autoptr(GError) error = NULL;
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  if ((scenario_file && !sim_scenario_load(&s, scenario_file, SIM_OPTS_SWEEP, &error)) ||
      !sim_scenario_apply_options(&s, so, &error))
    comm_mpi__fail_all(ctx, error);
  json = s.json;

  int points = dtsim_sweep_point(&s, -1, NULL, &error);
  if (points < 0)
    comm_mpi__fail_all(ctx, error);

  /* This rank's points, their JSON lines one after the other with their lengths. */
  g_autoptr(GString) text = g_string_new(NULL);
  g_autoptr(GArray) lens = g_array_new(FALSE, FALSE, sizeof(int));
  gboolean ok = TRUE;
  for (int i = ctx->rank; ok && i < points; i += ctx->size) {
    gsize before = text->len;
    ok = dtsim_sweep_point(&s, i, text, &error) >= 0;
    int len = (int)(text->len - before);
    g_array_append_val(lens, len);
  }
  comm_mpi__agree(ctx, ok, error);

  /* Gather: the number of points and the text length of every rank, then lengths and text. */
  int mine[2] = {(int)lens->len, (int)text->len};
  g_autofree int *sizes = ctx->rank == 0 ? g_new(int, 2 * ctx->size) : NULL;
  MPI_Gather(mine, 2, MPI_INT, sizes, 2, MPI_INT, 0, MPI_COMM_WORLD);
  g_autofree int *n_displ = NULL, *n_counts = NULL, *t_displ = NULL, *t_counts = NULL;
  g_autofree int *all_lens = NULL;
  g_autofree char *all_text = NULL;
  if (ctx->rank == 0) {
    n_counts = g_new(int, ctx->size);
    n_displ = g_new(int, ctx->size);
    t_counts = g_new(int, ctx->size);
    t_displ = g_new(int, ctx->size);
    int n = 0, t = 0;
    for (int r = 0; r < ctx->size; r++) {
      n_counts[r] = sizes[2 * r];
      t_counts[r] = sizes[2 * r + 1];
      n_displ[r] = n;
      t_displ[r] = t;
      n += n_counts[r];
      t += t_counts[r];
    }
    all_lens = g_new(int, MAX(n, 1));
    all_text = g_malloc(MAX(t, 1));
  }
  MPI_Gatherv(lens->data, (int)lens->len, MPI_INT, all_lens, n_counts, n_displ, MPI_INT, 0,
              MPI_COMM_WORLD);
  MPI_Gatherv(text->str, (int)text->len, MPI_CHAR, all_text, t_counts, t_displ, MPI_CHAR, 0,
              MPI_COMM_WORLD);

  if (ctx->rank == 0) {
    /* Point i is the (i / size)-th point of rank i % size. */
    g_autofree int *offset = g_new0(int, (gsize)MAX(points, 1));
    g_autofree int *length = g_new0(int, (gsize)MAX(points, 1));
    for (int r = 0; r < ctx->size; r++) {
      int off = t_displ[r];
      for (int k = 0; k < n_counts[r]; k++) {
        int i = r + k * ctx->size;
        offset[i] = off;
        length[i] = all_lens[n_displ[r] + k];
        off += length[i];
      }
    }
    if (!json)
      printf("%6s %8s %18s %22s\n", "point", "devices", "iteration_time_ms",
             "throughput_samples_s");
    for (int i = 0; i < points; i++) {
      g_autofree char *line = g_strndup(all_text + offset[i], (gsize)length[i]);
      if (json)
        printf("%s\n", line);
      else
        print_row(stdout, i, line);
    }
  }
  return 0;
}
