/* `dtsim sweep`: a scenario over lists of device counts, strategies, algorithms and batches. */
#include "cli.h"
#include "sweep.h"
#include "util.h"

#include <string.h>
#include <unistd.h>

static void progress(guint done, guint total)
{
  const int width = 30;
  int filled = total ? (int)((uint64_t)done * width / total) : width;
  fprintf(stderr, "\r[%.*s%*s] %u/%u", filled, "##############################", width - filled, "",
          done, total);
  if (done == total)
    fputs("\r\033[K", stderr);
  fflush(stderr);
}

/* `--nodes` is one number for `run`; a sweep also takes a list there ("1,2,4", "1..64"), which
 * is the --nodes-list axis. Returns the arguments with such a --nodes rewritten. */
static GPtrArray *nodes_lists(int argc, char **argv)
{
  GPtrArray *args = g_ptr_array_new_with_free_func(g_free);
  for (int i = 0; i < argc; i++) {
    const char *v = NULL;
    gboolean separate = FALSE;
    if (g_str_has_prefix(argv[i], "--nodes="))
      v = argv[i] + strlen("--nodes=");
    else if (strcmp(argv[i], "--nodes") == 0 && i + 1 < argc)
      v = argv[i + 1], separate = TRUE;
    if (v && (strchr(v, ',') || strstr(v, ".."))) {
      g_ptr_array_add(args, g_strconcat("--nodes-list=", v, NULL));
      i += separate;
    } else {
      g_ptr_array_add(args, g_strdup(argv[i]));
    }
  }
  g_ptr_array_add(args, NULL);
  return args;
}

int dtsim_cmd_sweep(int argc, char **argv)
{
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  int status = 0;
  g_autoptr(GPtrArray) args = nodes_lists(argc, argv);
  /* Option parsing rearranges the vector it is given: give it a view, keep ownership here. */
  g_autofree char **view = g_memdup2(args->pdata, args->len * sizeof(char *));
  argc = (int)args->len - 1;
  argv = view;
  if (!sim_scenario_from_args(&s, "sweep",
                              "Simulate a scenario over lists of device counts (--devices), "
                              "strategies, allreduce algorithms and batches.",
                              SIM_OPTS_SWEEP | SIM_OPTS_RUN, argc, argv, &status))
    return status;
  g_autoptr(GError) error = NULL;
  if (s.trace) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                "--trace: a sweep writes no trace; run the point you want with 'dtsim run'");
    return dtsim_cli_fail("sweep", error);
  }
  g_autoptr(GPtrArray) points = sim_sweep_expand(&s, &error);
  if (!points || (s.csv && !dt_outfile_check(s.csv, "--csv", &error)) ||
      (s.plot && !dt_outfile_check(s.plot, "--plot", &error)))
    return dtsim_cli_fail("sweep", error);
  g_autofree sim_report *reports = g_new0(sim_report, points->len);
  gboolean tty = isatty(STDERR_FILENO);
  for (guint i = 0; i < points->len; i++) {
    if (tty)
      progress(i, points->len);
    if (!sim_sweep_run_point(points->pdata[i], &reports[i], &error)) {
      if (tty)
        fputs("\r\033[K", stderr);
      g_prefix_error(&error, "%s, %" G_GUINT64_FORMAT " devices: ",
                     ((sim_sweep_point *)points->pdata[i])->variant,
                     ((sim_sweep_point *)points->pdata[i])->devices);
      return dtsim_cli_fail("sweep", error);
    }
  }
  if (!sim_sweep_add_speedups(points, reports, &error))
    return dtsim_cli_fail("sweep", error);
  if (tty)
    progress(points->len, points->len);
  if (s.csv && !sim_sweep_write_csv(s.csv, points, reports, &error))
    return dtsim_cli_fail("sweep", error);
  if (s.plot) {
    g_autofree char *title = g_strdup_printf("%s, %s, %s scaling", s.model, s.system, s.scaling);
    if (!sim_sweep_write_svg(s.plot, title, points, reports, &error))
      return dtsim_cli_fail("sweep", error);
  }
  if (s.json)
    sim_sweep_print_json(stdout, points, reports);
  else
    sim_sweep_print_table(stdout, points, reports);
  return 0;
}
