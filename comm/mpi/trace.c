/* placeholder */
#include "comm_mpi_run.h"
