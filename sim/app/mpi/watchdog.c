/* A time limit on a whole dtsim-mpi job: a rank that is stopped (SIGSTOP, a debugger, a host
 * that hangs) leaves the others waiting in a collective forever, and MPI has no timeout of its
 * own. Every rank arms alarm() for DTSIM_MPI_TIMEOUT_S seconds (default one day; 0: none);
 * when it fires the rank prints one line, removes its temporary files and exits with status 1
 * (not 124, which `timeout` gives a launch it had to kill), and mpirun then ends the others. */
#include "comm_mpi_run.h"
#include "util.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The line the handler writes, made beforehand: the handler may only call async-signal-safe
 * functions. */
static char message[256];
static size_t message_len;

static void on_alarm(int sig)
{
  (void)sig;
  ssize_t w = write(STDERR_FILENO, message, message_len);
  (void)w;
  dt__outfile_abandon_all();
  _exit(1);
}

gboolean comm_mpi__watchdog_start(const comm_mpi_ctx *ctx, GError **error)
{
  const char *text = g_getenv("DTSIM_MPI_TIMEOUT_S");
  int64_t seconds = COMM_MPI_TIMEOUT_S;
  if (text && !dt_parse_int64(text, "DTSIM_MPI_TIMEOUT_S", 0, 100 * 365 * 86400LL, &seconds,
                              error))
    return FALSE;
  if (seconds == 0)
    return TRUE;
  g_snprintf(message, sizeof message,
             "dtsim-mpi: rank %d: the job is still running after %" G_GINT64_FORMAT
             " s (DTSIM_MPI_TIMEOUT_S): a rank stopped or a collective never ended; ending the "
             "job\n", ctx->rank, seconds);
  message_len = strlen(message);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  alarm((unsigned)MIN(seconds, (int64_t)UINT_MAX));
  return TRUE;
}
