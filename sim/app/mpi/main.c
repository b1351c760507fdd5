/* dtsim-mpi: entry point. Runs under mpirun on every rank: checks the launch (at least two
 * ranks, the same arguments on every rank), then runs one subcommand. A bad launch ends every
 * rank with one message from rank 0, never a hang. */
#include "comm_mpi_run.h"
#include "util.h"

#include <locale.h>
#include <string.h>

typedef int (*command_fn)(comm_mpi_ctx *ctx, int argc, char **argv);

typedef struct {
  const char *name;
  const char *summary;
  command_fn fn;
} command;

static const command commands[] = {
    {"calibrate", "ping-pong every pair of ranks, fit latency/bandwidth per locality, write a "
                  "system INI", comm_mpi__cmd_calibrate},
    {"validate", "time collectives with Open MPI's algorithm forced, compare with the model",
     comm_mpi__cmd_validate},
    {"replay", "run a dp or ps iteration's communication for real, compare iteration times",
     comm_mpi__cmd_replay},
    {"sweep", "spread the points of a dtsim sweep over the ranks, gather one table",
     comm_mpi__cmd_sweep},
    {"search", "spread the simulations of a dtsim search over the ranks, gather one ranking",
     comm_mpi__cmd_search},
};

static void usage(FILE *out)
{
  fprintf(out, "Usage: mpirun -np N dtsim-mpi COMMAND [OPTIONS]   (N >= 2)\n\n"
               "Measures real MPI communication and compares it with dtsim's model.\n\n"
               "Commands:\n");
  for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\nRun 'dtsim-mpi COMMAND --help' for the options of a command.\n");
}

int main(int argc, char **argv)
{
  /* The user's locale (see sim/app/main.c); option values are bytes; numbers in the C locale. */
  setlocale(LC_ALL, "");
  setlocale(LC_NUMERIC, "C");
  /* The tuned component obeys coll_tuned_<op>_algorithm only with dynamic rules on; it is read
   * at MPI_Init, so it is set here unless the user chose otherwise. */
  g_setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", FALSE);
  /* Serialized: replay runs its communication on a second thread while the first busy-waits;
   * only that thread calls MPI meanwhile. */
  int provided;
  MPI_T_init_thread(MPI_THREAD_SERIALIZED, &provided);
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  comm_mpi_ctx ctx = {0};
  MPI_Comm_rank(MPI_COMM_WORLD, &ctx.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ctx.size);
  g_autoptr(GError) error = NULL;
  /* Scratch folders of ranks that were killed (SIGKILL) on this machine. */
  dt_scratch_sweep(COMM_MPI_SCRATCH_PREFIX);

  if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
                    strcmp(argv[1], "help") == 0)) {
    if (ctx.rank == 0)
      usage(stdout);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
  }

  const command *cmd = NULL;
  for (gsize i = 0; argc >= 2 && i < G_N_ELEMENTS(commands); i++)
    if (strcmp(argv[1], commands[i].name) == 0)
      cmd = &commands[i];
  if (cmd) {
    ctx.command = cmd->name;
    g_autofree char *prg = g_strdup_printf("dtsim-mpi %s", cmd->name);
    g_set_prgname(prg);
  }

  /* `dtsim-mpi COMMAND --help` works without mpirun: the command prints its options. */
  gboolean help = FALSE;
  for (int i = 2; cmd && i < argc; i++)
    help |= g_str_has_prefix(argv[i], "--help") || strcmp(argv[i], "-h") == 0;
  if (ctx.size < 2 && !help) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                "needs at least 2 ranks, got 1: run it as 'mpirun -np N dtsim-mpi COMMAND' "
                "with N >= 2");
    comm_mpi__fail_all(&ctx, error);
  }

  /* A stopped rank would leave the others waiting forever: a time limit on the job. */
  if (!comm_mpi__watchdog_start(&ctx, &error))
    comm_mpi__fail_all(&ctx, error);

  /* Every rank must run the same command with the same options, or the ranks would wait for
   * each other in different collectives forever. Rank 0's hash is the reference. */
  uint64_t mine = comm_mpi_hash_argv(argc, argv), ref = mine;
  MPI_Bcast(&ref, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  int differs = mine != ref ? ctx.rank : ctx.size, first;
  MPI_Allreduce(&differs, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first < ctx.size) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                "rank %d was started with other arguments than rank 0: every rank must run "
                "the same command with the same options", first);
    comm_mpi__fail_all(&ctx, error);
  }

  if (cmd == NULL) {
    if (argc < 2)
      g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                  "no command given (calibrate, validate, replay, sweep, search; see --help)");
    else
      g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                  "unknown command '%s' (calibrate, validate, replay, sweep, search; see --help)",
                  argv[1]);
    comm_mpi__fail_all(&ctx, error);
  }

  int status = cmd->fn(&ctx, argc - 1, argv + 1);
  fflush(stdout);
  g_free(ctx.node_of);
  g_free(ctx.socket_of);
  /* MPI_T before MPI: Open MPI 4.1 finalizes its transports a second time (and crashes in the
   * shared-memory one) when MPI_T_finalize comes after MPI_Finalize. */
  MPI_T_finalize();
  MPI_Finalize();
  return status;
}

