/* placeholder */
#include "comm_mpi_run.h"
int comm_mpi_cmd_sweep(comm_mpi_ctx *ctx, int argc, char **argv) { return 0; }
