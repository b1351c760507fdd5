/* Which algorithm did Open MPI really run? Open MPI 4.1's tuned component (a plugin,
 * mca_coll_tuned.so) carries out each algorithm by calling an exported function of libmpi,
 * ompi_coll_base_<op>_intra_<algorithm>. The dtsim-mpi executable defines functions of the same
 * names (exported with ENABLE_EXPORTS), so the dynamic linker binds the plugin's calls to them;
 * each records its name and forwards to libmpi's function found with dlsym(RTLD_NEXT). Nested
 * calls are seen too (Open MPI's segmented ring, for instance, falls back to the plain ring).
 *
 * The argument lists are those of ompi/mca/coll/base/coll_base_functions.h in Open MPI 4.1
 * (ALLREDUCE_ARGS: sbuf, rbuf, count, dtype, op, comm, module; ALLGATHER_ARGS: sbuf, scount,
 * sdtype, rbuf, rcount, rdtype, comm, module; REDUCESCATTER_ARGS: sbuf, rbuf, rcounts, dtype,
 * op, comm, module; BCAST_ARGS: buffer, count, dtype, root, comm, module, then segsize;
 * REDUCE_ARGS: sbuf, rbuf, count, dtype, op, root, comm, module, then segsize and
 * max_outstanding_reqs).
 * Open MPI's own types are opaque here: only pointers to them pass through. */
#define _GNU_SOURCE
#include "comm_mpi_run.h"

#include <dlfcn.h>
#include <string.h>

#define SPY_MAX 8
static const char *seen[SPY_MAX];
static int n_seen;
static char seen_text[SPY_MAX * 64];

static void record(const char *name)
{
  for (int i = 0; i < n_seen; i++)
    if (seen[i] == name)
      return;
  if (n_seen < SPY_MAX)
    seen[n_seen++] = name;
}

void comm_mpi__spy_reset(void)
{
  n_seen = 0;
}

const char *comm_mpi__spy_seen(void)
{
  seen_text[0] = '\0';
  for (int i = 0; i < n_seen; i++) {
    if (i)
      g_strlcat(seen_text, "+", sizeof seen_text);
    g_strlcat(seen_text, seen[i], sizeof seen_text);
  }
  return seen_text;
}

gboolean comm_mpi__spy_saw(const char *base_fn)
{
  for (int i = 0; i < n_seen; i++)
    if (strcmp(seen[i], base_fn) == 0)
      return TRUE;
  return FALSE;
}

/* Looks up libmpi's definition once; a missing symbol means another MPI than Open MPI 4.x, and
 * the wrapper is never called there. */
static void *next_symbol(const char *name)
{
  void *p = dlsym(RTLD_NEXT, name);
  if (p == NULL) {
    fprintf(stderr, "dtsim-mpi: %s not found in the MPI library\n", name);
    abort();
  }
  return p;
}

typedef struct ompi_opaque ompi_opaque;
typedef int (*allreduce_fn)(const void *, void *, int, ompi_opaque *, ompi_opaque *,
                            ompi_opaque *, ompi_opaque *);
typedef int (*allgather_fn)(const void *, int, ompi_opaque *, void *, int, ompi_opaque *,
                            ompi_opaque *, ompi_opaque *);
typedef int (*redscat_fn)(const void *, void *, const int *, ompi_opaque *, ompi_opaque *,
                          ompi_opaque *, ompi_opaque *);
typedef int (*bcast_fn)(void *, int, ompi_opaque *, int, ompi_opaque *, ompi_opaque *);
typedef int (*reduce_seg_fn)(const void *, void *, int, ompi_opaque *, ompi_opaque *, int,
                             ompi_opaque *, ompi_opaque *, uint32_t, int);
typedef int (*reduce_fn)(const void *, void *, int, ompi_opaque *, ompi_opaque *, int,
                         ompi_opaque *, ompi_opaque *);
typedef int (*bcast_seg_fn)(void *, int, ompi_opaque *, int, ompi_opaque *, ompi_opaque *,
                            uint32_t);

#define SPY(NAME, FN_T, PARAMS, ARGS)                                                          \
  int NAME PARAMS;                                                                             \
  int NAME PARAMS                                                                              \
  {                                                                                            \
    static union {                                                                             \
      void *p;                                                                                 \
      FN_T fn;                                                                                 \
    } real;                                                                                    \
    if (real.p == NULL)                                                                        \
      real.p = next_symbol(#NAME);                                                             \
    record(#NAME);                                                                             \
    return real.fn ARGS;                                                                       \
  }

#define ALLREDUCE_P                                                                            \
  (const void *sbuf, void *rbuf, int count, ompi_opaque *dtype, ompi_opaque *op,               \
   ompi_opaque *comm, ompi_opaque *module)
#define ALLREDUCE_A (sbuf, rbuf, count, dtype, op, comm, module)
SPY(ompi_coll_base_allreduce_intra_ring, allreduce_fn, ALLREDUCE_P, ALLREDUCE_A)
SPY(ompi_coll_base_allreduce_intra_recursivedoubling, allreduce_fn, ALLREDUCE_P, ALLREDUCE_A)
SPY(ompi_coll_base_allreduce_intra_redscat_allgather, allreduce_fn, ALLREDUCE_P, ALLREDUCE_A)
SPY(ompi_coll_base_allreduce_intra_nonoverlapping, allreduce_fn, ALLREDUCE_P, ALLREDUCE_A)
SPY(ompi_coll_base_allreduce_intra_basic_linear, allreduce_fn, ALLREDUCE_P, ALLREDUCE_A)

#define ALLGATHER_P                                                                            \
  (const void *sbuf, int scount, ompi_opaque *sdtype, void *rbuf, int rcount,                  \
   ompi_opaque *rdtype, ompi_opaque *comm, ompi_opaque *module)
#define ALLGATHER_A (sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, module)
SPY(ompi_coll_base_allgather_intra_ring, allgather_fn, ALLGATHER_P, ALLGATHER_A)
SPY(ompi_coll_base_allgather_intra_recursivedoubling, allgather_fn, ALLGATHER_P, ALLGATHER_A)
SPY(ompi_coll_base_allgather_intra_bruck, allgather_fn, ALLGATHER_P, ALLGATHER_A)
SPY(ompi_coll_base_allgather_intra_neighborexchange, allgather_fn, ALLGATHER_P, ALLGATHER_A)
SPY(ompi_coll_base_allgather_intra_two_procs, allgather_fn, ALLGATHER_P, ALLGATHER_A)
SPY(ompi_coll_base_allgather_intra_basic_linear, allgather_fn, ALLGATHER_P, ALLGATHER_A)

#define REDSCAT_P                                                                              \
  (const void *sbuf, void *rbuf, const int *rcounts, ompi_opaque *dtype, ompi_opaque *op,      \
   ompi_opaque *comm, ompi_opaque *module)
#define REDSCAT_A (sbuf, rbuf, rcounts, dtype, op, comm, module)
SPY(ompi_coll_base_reduce_scatter_intra_ring, redscat_fn, REDSCAT_P, REDSCAT_A)
SPY(ompi_coll_base_reduce_scatter_intra_basic_recursivehalving, redscat_fn, REDSCAT_P, REDSCAT_A)
SPY(ompi_coll_base_reduce_scatter_intra_nonoverlapping, redscat_fn, REDSCAT_P, REDSCAT_A)

#define BCAST_P                                                                                \
  (void *buf, int count, ompi_opaque *dtype, int root, ompi_opaque *comm, ompi_opaque *module, \
   uint32_t segsize)
#define BCAST_A (buf, count, dtype, root, comm, module, segsize)
SPY(ompi_coll_base_bcast_intra_binomial, bcast_seg_fn, BCAST_P, BCAST_A)
SPY(ompi_coll_base_bcast_intra_pipeline, bcast_seg_fn, BCAST_P, BCAST_A)
SPY(ompi_coll_base_bcast_intra_scatter_allgather, bcast_seg_fn, BCAST_P, BCAST_A)
SPY(ompi_coll_base_bcast_intra_scatter_allgather_ring, bcast_seg_fn, BCAST_P, BCAST_A)
SPY(ompi_coll_base_bcast_intra_bintree, bcast_seg_fn, BCAST_P, BCAST_A)
SPY(ompi_coll_base_bcast_intra_split_bintree, bcast_seg_fn, BCAST_P, BCAST_A)
SPY(ompi_coll_base_bcast_intra_basic_linear, bcast_fn,
    (void *buf, int count, ompi_opaque *dtype, int root, ompi_opaque *comm, ompi_opaque *module),
    (buf, count, dtype, root, comm, module))

#define REDUCE_P                                                                               \
  (const void *sbuf, void *rbuf, int count, ompi_opaque *dtype, ompi_opaque *op, int root,     \
   ompi_opaque *comm, ompi_opaque *module)
#define REDUCE_A (sbuf, rbuf, count, dtype, op, root, comm, module)
SPY(ompi_coll_base_reduce_intra_basic_linear, reduce_fn, REDUCE_P, REDUCE_A)
SPY(ompi_coll_base_reduce_intra_binomial, reduce_seg_fn,
    (const void *sbuf, void *rbuf, int count, ompi_opaque *dtype, ompi_opaque *op, int root,
     ompi_opaque *comm, ompi_opaque *module, uint32_t segsize, int max_reqs),
    (sbuf, rbuf, count, dtype, op, root, comm, module, segsize, max_reqs))
