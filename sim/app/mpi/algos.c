/* The collectives dtsim-mpi validates and, for each, the algorithms of Open MPI 4.1's tuned
 * component that match an algorithm of the model. The numbers are the values of
 * coll_tuned_<op>_algorithm as `ompi_info --param coll tuned --level 9` lists them for Open MPI
 * 4.1.4; the function names are the coll/base entry points each number dispatches to (checked
 * at run time by the interposers in spy.c, so a renumbering shows up as a mismatch, never as
 * a silently wrong row). Only algorithms dtsim models are listed: Open MPI's Bruck allgather
 * or scatter-allgather broadcast, say, would have nothing to be compared with. */
#include "comm_mpi.h"
#include "util.h"

#include <string.h>

static const char *const op_names[COMM_MPI_N_OPS] = {
    [COMM_MPI_ALLREDUCE] = "allreduce",
    [COMM_MPI_ALLGATHER] = "allgather",
    [COMM_MPI_REDUCE_SCATTER] = "reduce-scatter",
    [COMM_MPI_BROADCAST] = "broadcast",
};

static const char *const op_cvars[COMM_MPI_N_OPS] = {
    [COMM_MPI_ALLREDUCE] = "coll_tuned_allreduce_algorithm",
    [COMM_MPI_ALLGATHER] = "coll_tuned_allgather_algorithm",
    [COMM_MPI_REDUCE_SCATTER] = "coll_tuned_reduce_scatter_algorithm",
    [COMM_MPI_BROADCAST] = "coll_tuned_bcast_algorithm",
};

/* dtsim's chunk for a pipelined chain (comm/coll/coll.h, COMM_COLL_CHUNK_BYTES): Open MPI's
 * pipeline broadcast is forced to segments of the same size. */
#define CHAIN_SEGMENT_BYTES (512 * 1024)

/* The copies of each function (copies_whole, copies_block) are read from Open MPI 4.1's
 * coll/base sources (coll_base_allreduce.c, coll_base_allgather.c, coll_base_reduce_scatter.c,
 * coll_base_reduce.c, coll_base_bcast.c), for a send buffer distinct from the receive buffer:
 * - allreduce ring and Rabenseifner copy the send buffer into the receive buffer first (n);
 * - allreduce recursive doubling copies it into a temporary (n), and a rank whose result ends
 *   in the temporary copies it back to the receive buffer (n): 2n on the slowest rank;
 * - reduce-scatter ring and recursive halving copy the send buffer into a temporary
 *   accumulator (n) and the rank's reduced block out of it (n/p);
 * - allgather ring and recursive doubling copy the rank's own block into place (n/p);
 * - the binomial and linear reduces receive straight into the root's buffer and reduce the
 *   send buffer into it, and broadcasts move data only through transfers: no copies. */
static const comm_mpi_algorithm algorithms[] = {
    {COMM_MPI_ALLREDUCE, "ring", 4, "ring", "ompi_coll_base_allreduce_intra_ring", {{0}},
     "reduce-scatter then allgather around a ring: 2(p-1) steps of n/p bytes", 1, 0},
    {COMM_MPI_ALLREDUCE, "recursive-doubling", 3, "recursive_doubling",
     "ompi_coll_base_allreduce_intra_recursivedoubling", {{0}},
     "log2(p) exchanges of the whole buffer with partners at doubling distances", 2, 0},
    {COMM_MPI_ALLREDUCE, "halving-doubling", 6, "rabenseifner",
     "ompi_coll_base_allreduce_intra_redscat_allgather", {{0}},
     "Rabenseifner: reduce-scatter by recursive halving, allgather by recursive doubling", 1, 0},
    {COMM_MPI_ALLREDUCE, "tree", 2, "nonoverlapping",
     "ompi_coll_base_allreduce_intra_nonoverlapping",
     {{"coll_tuned_reduce_algorithm", 5, "ompi_coll_base_reduce_intra_binomial"},
      {"coll_tuned_bcast_algorithm", 6, "ompi_coll_base_bcast_intra_binomial"}},
     "binomial reduce to rank 0, then binomial broadcast (Open MPI: reduce 5, bcast 6)", 0, 0},
    {COMM_MPI_ALLREDUCE, "onetoall", 1, "basic_linear",
     "ompi_coll_base_allreduce_intra_basic_linear", {{0}},
     "every rank sends to rank 0, which reduces and sends the result to each", 0, 0},
    {COMM_MPI_ALLGATHER, "ring", 4, "ring", "ompi_coll_base_allgather_intra_ring", {{0}},
     "p-1 steps passing one block of n/p bytes to the next rank", 0, 1},
    {COMM_MPI_ALLGATHER, "recursive-doubling", 3, "recursive_doubling",
     "ompi_coll_base_allgather_intra_recursivedoubling", {{0}},
     "log2(p) exchanges of doubling size (power-of-two ranks)", 0, 1},
    {COMM_MPI_REDUCE_SCATTER, "ring", 3, "ring", "ompi_coll_base_reduce_scatter_intra_ring",
     {{0}}, "p-1 steps passing and reducing one block of n/p bytes", 1, 1},
    {COMM_MPI_REDUCE_SCATTER, "halving-doubling", 2, "recursive_halving",
     "ompi_coll_base_reduce_scatter_intra_basic_recursivehalving", {{0}},
     "log2(p) exchanges of halving size with partners at halving distances", 1, 1},
    {COMM_MPI_BROADCAST, "tree", 6, "binomial", "ompi_coll_base_bcast_intra_binomial", {{0}},
     "binomial tree from the root, unsegmented: ceil(log2 p) rounds of the whole buffer", 0, 0},
    {COMM_MPI_BROADCAST, "ring", 3, "pipeline", "ompi_coll_base_bcast_intra_pipeline",
     {{"coll_tuned_bcast_algorithm_segmentsize", CHAIN_SEGMENT_BYTES, NULL}},
     "chain from the root, pipelined in 512 KiB segments", 0, 0},
    {COMM_MPI_BROADCAST, "onetoall", 1, "basic_linear",
     "ompi_coll_base_bcast_intra_basic_linear", {{0}},
     "the root sends the whole buffer to every other rank", 0, 0},
};

double comm_mpi_algorithm_copy_bytes(const comm_mpi_algorithm *algo, uint64_t bytes,
                                     uint32_t ranks)
{
  g_return_val_if_fail(algo != NULL && ranks > 0, 0);
  return algo->copies_whole * (double)bytes + algo->copies_block * (double)bytes / ranks;
}

const char *comm_mpi_op_name(comm_mpi_op op)
{
  g_return_val_if_fail(op < COMM_MPI_N_OPS, "?");
  return op_names[op];
}

const char *comm_mpi_op_cvar(comm_mpi_op op)
{
  g_return_val_if_fail(op < COMM_MPI_N_OPS, NULL);
  return op_cvars[op];
}

gboolean comm_mpi_op_parse(const char *name, comm_mpi_op *out, GError **error)
{
  for (int op = 0; op < COMM_MPI_N_OPS; op++) {
    if (strcmp(name, op_names[op]) == 0) {
      *out = (comm_mpi_op)op;
      return TRUE;
    }
  }
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
              "--ops: unknown collective '%s' (known: allreduce, allgather, reduce-scatter, "
              "broadcast)", name);
  return FALSE;
}

const comm_mpi_algorithm *comm_mpi_algorithms(size_t *n)
{
  *n = G_N_ELEMENTS(algorithms);
  return algorithms;
}

const comm_mpi_algorithm *comm_mpi_algorithm_find(comm_mpi_op op, const char *name,
                                                  GError **error)
{
  g_autoptr(GString) known = g_string_new(NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(algorithms); i++) {
    if (algorithms[i].op != op)
      continue;
    if (strcmp(algorithms[i].name, name) == 0)
      return &algorithms[i];
    g_string_append_printf(known, "%s%s", known->len ? ", " : "", algorithms[i].name);
  }
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
              "--algorithms: unknown %s algorithm '%s' (known: %s)", op_names[op], name,
              known->str);
  return NULL;
}
