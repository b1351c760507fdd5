/* The part of dtsim-mpi that runs under MPI: the context every subcommand receives, collective
 * error handling, and rank placement. Internal to the dtsim-mpi executable and its tests. */
#ifndef DTSIM_COMM_MPI_RUN_H
#define DTSIM_COMM_MPI_RUN_H

#include <mpi.h>

#include "comm_mpi.h"
#include "scenario.h"

typedef struct {
  int rank, size;
  const char *command;  /* subcommand, for messages: "dtsim-mpi COMMAND: ..." */
  int *node_of;         /* node index of each rank (numbered in order of first appearance) */
  int *socket_of;       /* hwloc package of each rank, -1 when not bound within one package */
  int nodes;
  int ranks_per_node;   /* ranks on the most populated node */
} comm_mpi_ctx;

/* Ends every rank after an error all ranks reached together (the same options everywhere):
 * rank 0 prints "dtsim-mpi COMMAND: message" on stderr, then every rank finalizes MPI and exits
 * with the status of the error (2 for bad input, 1 otherwise): one line, no MPI_Abort. */
G_GNUC_NORETURN void comm_mpi__fail_all(const comm_mpi_ctx *ctx, const GError *error);
/* Ends every rank after an error only this rank saw: this rank prints, then aborts the job. */
G_GNUC_NORETURN void comm_mpi__fail_here(const comm_mpi_ctx *ctx, const GError *error);
/* The default limit on a whole job, seconds (DTSIM_MPI_TIMEOUT_S overrides it; 0: none). */
#define COMM_MPI_TIMEOUT_S 86400
/* Arms this rank's time limit (see watchdog.c); FALSE with an error naming
 * DTSIM_MPI_TIMEOUT_S when its value is not a whole number of seconds. */
gboolean comm_mpi__watchdog_start(const comm_mpi_ctx *ctx, GError **error);

/* Collective check: when `ok` is FALSE on some ranks, the lowest of them prints its error and
 * every rank finalizes MPI and exits with that error's status; otherwise returns. Every rank
 * must call it. */
void comm_mpi__agree(const comm_mpi_ctx *ctx, gboolean ok, const GError *error);

/* This rank's scratch folder, /tmp/dtsim-mpi-HOST-PID-XXXXXX (or under $TMPDIR; see
 * dt_scratch_new), made on first call and kept until comm_mpi__scratch_remove(); NULL with an
 * error if it cannot be made. The failure paths above (fail_all, fail_here, a failed agree)
 * remove it and its files before the job ends; SIGINT, SIGTERM and SIGHUP (Open MPI's way of
 * ending the other ranks when one aborts) remove it too; the folders of ranks killed by SIGKILL
 * are removed by the next dtsim-mpi started on the machine (main() sweeps them). */
const char *comm_mpi__scratch(GError **error);
void comm_mpi__scratch_remove(void);

/* Parses the subcommand's options on every rank (the argument vectors are identical, checked at
 * start-up); a bad option ends the job with one message. Handles --help on rank 0. Returns
 * FALSE when --help was printed and the command should return 0. */
gboolean comm_mpi__parse(const comm_mpi_ctx *ctx, GOptionContext *octx, int *argc, char ***argv);

/* The scenario of a command that simulates (replay, sweep, search): an optional positional
 * SCENARIO.ini, then the shared scenario options of the commands in `set` beside the command's
 * own `entries` (NULL-terminated, or NULL), parsed with comm_mpi__parse(); with SIM_OPTS_SWEEP a
 * --nodes list is the --nodes-list axis; `check` at the end (NULL: sim_scenario_check; search
 * passes sim_search_check, which checks against every strategy it covers). `s` is initialised by
 * the caller. Bad input ends the job with one message; FALSE when --help was printed. The
 * strings set through `entries` stay valid after return. */
typedef gboolean (*comm_mpi_scenario_check)(sim_scenario *s, GError **error);
gboolean comm_mpi__scenario(const comm_mpi_ctx *ctx, const char *summary, GOptionEntry *entries,
                            unsigned set, comm_mpi_scenario_check check, int argc, char **argv,
                            sim_scenario *s);

/* Fills node_of, socket_of, nodes and ranks_per_node (collective). Nodes are told apart by host
 * name and network namespace, so ranks in different namespaces of one machine count as
 * different nodes, as they do for Open MPI's TCP transport. */
void comm_mpi__locate(comm_mpi_ctx *ctx);
comm_mpi_locality comm_mpi__pair_locality(const comm_mpi_ctx *ctx, int a, int b);

/* Calls of Open MPI's coll/base algorithm functions seen since the last reset (spy.c). */
void comm_mpi__spy_reset(void);
/* The functions entered, in order of first call, joined by '+'; "" when none. */
const char *comm_mpi__spy_seen(void);
/* Whether `base_fn` was entered since the last reset. */
gboolean comm_mpi__spy_saw(const char *base_fn);

/* Forces `algo` in Open MPI's tuned component (its number and the further variables it needs)
 * through MPI_T, for communicators created afterwards; `on` FALSE gives the choice back to
 * Open MPI. NULL does nothing. Collective: a failure on any rank ends the job. */
void comm_mpi__force(const comm_mpi_ctx *ctx, const comm_mpi_algorithm *algo, gboolean on);

/* Subcommands: each runs on every rank and returns the exit status. */
int comm_mpi__cmd_calibrate(comm_mpi_ctx *ctx, int argc, char **argv);
int comm_mpi__cmd_validate(comm_mpi_ctx *ctx, int argc, char **argv);
int comm_mpi__cmd_replay(comm_mpi_ctx *ctx, int argc, char **argv);
int comm_mpi__cmd_sweep(comm_mpi_ctx *ctx, int argc, char **argv);
int comm_mpi__cmd_search(comm_mpi_ctx *ctx, int argc, char **argv);

/* Host-side rates for a row of `bytes` (host.c), collective: MPI_SUM over floats with
 * MPI_Reduce_local (input bytes per second) and memcpy, both from `in` into `inout` on every
 * rank at once, median of `reps` of the slowest rank. The buffers hold at least `bytes`. */
void comm_mpi__host_rates(float *in, float *inout, uint64_t bytes, int reps, double *reduce_Bps,
                          double *copy_Bps);
/* Seconds the first touch of one fresh page costs beyond writing it (fault, zeroing, unmap),
 * every rank faulting at once; collective. */
double comm_mpi__first_touch_s(const comm_mpi_ctx *ctx, int reps);
/* Minor page faults of this process so far (getrusage). */
long comm_mpi__minor_faults(void);
/* dtsim's (node-major) rank of every MPI rank: node * ranks_per_node + index on the node.
 * Fails when the nodes hold different numbers of ranks, which dtsim's clusters cannot. */
gboolean comm_mpi__dtsim_ranks(const comm_mpi_ctx *ctx, uint32_t *out, GError **error);

/* Calibration as a step of other commands: measures and fits on all ranks; the result is
 * valid on every rank. `sizes` NULL means the default sizes. */
void comm_mpi__calibrate_run(comm_mpi_ctx *ctx, const GArray *sizes, int reps, int warmup,
                            gboolean print, comm_mpi_system *out);

#endif
