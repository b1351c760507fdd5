/* Error handling shared by the subcommands and the placement of ranks on nodes and sockets. */
#include "comm_mpi_run.h"
#include "util.h"

#include <glib/gstdio.h>
#include <hwloc.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void print_error(const comm_mpi_ctx *ctx, const GError *error)
{
  g_autofree char *msg = dt_message(error ? error->message : "failed");
  fprintf(stderr, "dtsim-mpi%s%s: %s\n", ctx->command ? " " : "",
          ctx->command ? ctx->command : "", msg);
  fflush(stderr);
}

static char *scratch_dir;

const char *comm_mpi__scratch(GError **error)
{
  if (scratch_dir == NULL)
    scratch_dir = dt_scratch_new(COMM_MPI_SCRATCH_PREFIX, error);
  return scratch_dir;
}

void comm_mpi__scratch_remove(void)
{
  dt_scratch_remove(scratch_dir);
  g_clear_pointer(&scratch_dir, g_free);
}

/* Ends this rank cleanly with `status`, every rank of the job doing the same at the same
 * point: no MPI_Abort, whose banner buried the one-line message under seven more. (mpirun
 * still reports a non-zero exit status unless it runs with --quiet.) */
static G_GNUC_NORETURN void end_all(int status)
{
  comm_mpi__scratch_remove();
  dt__outfile_abandon_all();
  fflush(stdout);
  fflush(stderr);
  /* MPI_T first: see main(). */
  MPI_T_finalize();
  MPI_Finalize();
  exit(status);
}

void comm_mpi__fail_all(const comm_mpi_ctx *ctx, const GError *error)
{
  /* Every rank is here with the same error: rank 0 alone prints it. */
  if (ctx->rank == 0)
    print_error(ctx, error);
  end_all(dt_error_exit_status(error));
}

void comm_mpi__fail_here(const comm_mpi_ctx *ctx, const GError *error)
{
  comm_mpi__scratch_remove();
  print_error(ctx, error);
  MPI_Abort(MPI_COMM_WORLD, dt_error_exit_status(error));
  abort();
}

void comm_mpi__agree(const comm_mpi_ctx *ctx, gboolean ok, const GError *error)
{
  int mine = ok ? ctx->size : ctx->rank, first;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == ctx->size)
    return;
  /* Every rank knows: the lowest failing rank prints its error and tells its exit status. */
  int status = 1;
  if (first == ctx->rank) {
    print_error(ctx, error);
    status = dt_error_exit_status(error);
  }
  MPI_Bcast(&status, 1, MPI_INT, first, MPI_COMM_WORLD);
  end_all(status);
}

gboolean comm_mpi__parse(const comm_mpi_ctx *ctx, GOptionContext *octx, int *argc, char ***argv)
{
  /* GOption's own --help would print on every rank and exit without MPI_Finalize. Every
   * option group is printed (--help, -h, --help-all, --help-GROUP alike). */
  g_option_context_set_help_enabled(octx, FALSE);
  for (int i = 1; i < *argc; i++) {
    if (g_str_has_prefix((*argv)[i], "--help") || strcmp((*argv)[i], "-h") == 0) {
      if (ctx->rank == 0) {
        g_autofree char *help = g_option_context_get_help(octx, FALSE, NULL);
        fputs(help, stdout);
      }
      return FALSE;
    }
  }
  g_autoptr(GError) error = NULL;
  if (!dt_args_check_repeats(*argc, *argv, NULL, &error) ||
      !g_option_context_parse(octx, argc, argv, &error))
    comm_mpi__fail_all(ctx, error);
  if (*argc > 1) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT, "unexpected argument '%s'", (*argv)[1]);
    comm_mpi__fail_all(ctx, error);
  }
  return TRUE;
}

/* --help of a dtsim-mpi command: printed by rank 0 alone. */
static void print_help(const char *text, gpointer data)
{
  const comm_mpi_ctx *ctx = data;
  if (ctx->rank == 0)
    fputs(text, stdout);
}

gboolean comm_mpi__scenario(const comm_mpi_ctx *ctx, const char *summary, GOptionEntry *entries,
                            unsigned set, comm_mpi_scenario_check check, int argc, char **argv,
                            sim_scenario *s)
{
  /* dtsim's own front end; GOption's --help would print on every rank and exit without
   * MPI_Finalize. */
  sim_command_line cl = {
      .set = set,
      .parameter = summary,
      .entries = entries,
      .check = check,
      .help = print_help,
      .help_data = (gpointer)ctx,
  };
  g_autoptr(GError) error = NULL;
  if (sim_scenario_parse_args(s, &cl, argc, argv, &error))
    return TRUE;
  if (error)
    comm_mpi__fail_all(ctx, error);
  return FALSE;
}

/* The hwloc package holding this process's CPU binding, or -1 when the binding spans several
 * packages (or none is set), in which case the socket is unknown. */
static int my_package(void)
{
  hwloc_topology_t topo;
  int pkg = -1;
  if (hwloc_topology_init(&topo) != 0)
    return -1;
  if (hwloc_topology_load(topo) == 0) {
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0 && !hwloc_bitmap_iszero(set)) {
      hwloc_obj_t obj = hwloc_get_obj_covering_cpuset(topo, set);
      while (obj && obj->type != HWLOC_OBJ_PACKAGE)
        obj = obj->parent;
      /* A binding to the whole machine tells nothing about the socket. */
      if (obj && !hwloc_bitmap_isequal(set, hwloc_topology_get_topology_cpuset(topo)))
        pkg = (int)obj->logical_index;
    }
    hwloc_bitmap_free(set);
  }
  hwloc_topology_destroy(topo);
  return pkg;
}

#define NODE_KEY_LEN 320

void comm_mpi__locate(comm_mpi_ctx *ctx)
{
  char key[NODE_KEY_LEN] = {0};
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0)
    g_strlcpy(host, "unknown", sizeof host);
  struct stat st;
  unsigned long long netns = stat("/proc/self/ns/net", &st) == 0 ? (unsigned long long)st.st_ino : 0;
  g_snprintf(key, sizeof key, "%s/netns:%llu", host, netns);
  char *keys = g_malloc0((size_t)ctx->size * NODE_KEY_LEN);
  MPI_Allgather(key, NODE_KEY_LEN, MPI_CHAR, keys, NODE_KEY_LEN, MPI_CHAR, MPI_COMM_WORLD);
  int pkg = my_package();
  g_free(ctx->socket_of);
  g_free(ctx->node_of);
  ctx->socket_of = g_new(int, ctx->size);
  ctx->node_of = g_new(int, ctx->size);
  MPI_Allgather(&pkg, 1, MPI_INT, ctx->socket_of, 1, MPI_INT, MPI_COMM_WORLD);
  ctx->nodes = 0;
  g_autofree int *count = g_new0(int, ctx->size);
  for (int r = 0; r < ctx->size; r++) {
    int n = -1;
    for (int q = 0; q < r && n < 0; q++)
      if (strncmp(keys + (size_t)q * NODE_KEY_LEN, keys + (size_t)r * NODE_KEY_LEN, NODE_KEY_LEN) == 0)
        n = ctx->node_of[q];
    ctx->node_of[r] = n >= 0 ? n : ctx->nodes++;
    count[ctx->node_of[r]]++;
  }
  ctx->ranks_per_node = 0;
  for (int n = 0; n < ctx->nodes; n++)
    ctx->ranks_per_node = MAX(ctx->ranks_per_node, count[n]);
  g_free(keys);
}

comm_mpi_locality comm_mpi__pair_locality(const comm_mpi_ctx *ctx, int a, int b)
{
  if (ctx->node_of[a] != ctx->node_of[b])
    return COMM_MPI_OTHER_NODE;
  if (ctx->socket_of[a] >= 0 && ctx->socket_of[a] == ctx->socket_of[b])
    return COMM_MPI_SAME_SOCKET;
  return COMM_MPI_SAME_NODE;
}

gboolean comm_mpi__dtsim_ranks(const comm_mpi_ctx *ctx, uint32_t *out, GError **error)
{
  g_autofree int *seen = g_new0(int, ctx->nodes);
  for (int r = 0; r < ctx->size; r++)
    out[r] = (uint32_t)(ctx->node_of[r] * ctx->ranks_per_node + seen[ctx->node_of[r]]++);
  for (int n = 0; n < ctx->nodes; n++) {
    if (seen[n] != ctx->ranks_per_node) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "node %d holds %d ranks and another %d: dtsim's clusters have the same number "
                  "of devices on every node (launch with the same slots per host)", n, seen[n],
                  ctx->ranks_per_node);
      return FALSE;
    }
  }
  return TRUE;
}
