/* Host-side costs of the validation's rows, measured on every rank at once (the ranks of a
 * collective reduce, copy and fault pages at the same time, through the same memory):
 * - MPI_Reduce_local and memcpy over buffers of the row's size, reused from call to call as
 *   the collective reuses its buffers, so they stay in cache when the row fits and come from
 *   memory when it does not;
 * - the first touch of a fresh page (fault, zeroing, and its share of the unmapping), which
 *   Open MPI's temporaries pay when the allocator hands out new memory for them.
 * Each figure is the median over repetitions of the slowest rank's time. */
#include "comm_mpi_run.h"
#include "util.h"

#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

/* Median over `reps` of the slowest rank's time of fn(user), each after a barrier. */
static double slowest_median(int reps, void (*fn)(void *), void *user)
{
  g_autofree double *t = g_new(double, reps);
  for (int i = -1; i < reps; i++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    fn(user);
    double mine = MPI_Wtime() - t0, slowest;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (i >= 0)
      t[i] = slowest;
  }
  return comm_mpi_median(t, (size_t)reps);
}

typedef struct {
  float *in, *inout;
  size_t bytes;
} buffers;

static void do_reduce(void *user)
{
  buffers *b = user;
  MPI_Reduce_local(b->in, b->inout, (int)(b->bytes / sizeof(float)), MPI_FLOAT, MPI_SUM);
}

static void do_copy(void *user)
{
  buffers *b = user;
  memcpy(b->inout, b->in, b->bytes);
}

void comm_mpi__host_rates(float *in, float *inout, uint64_t bytes, int reps, double *reduce_Bps,
                          double *copy_Bps)
{
  g_return_if_fail(bytes >= sizeof(float) && bytes <= INT32_MAX);
  buffers b = {in, inout, bytes - bytes % sizeof(float)};
  *reduce_Bps = (double)b.bytes / slowest_median(reps, do_reduce, &b);
  *copy_Bps = (double)b.bytes / slowest_median(reps, do_copy, &b);
}

/* 32 MiB: far more pages than the timer's resolution needs, and the size of the largest
 * temporaries of the validation's default rows. */
#define TOUCH_BYTES (32u << 20)

typedef struct {
  char *reused;
  gboolean fresh;
  gboolean failed;
} touch_state;

static void do_touch(void *user)
{
  touch_state *s = user;
  if (!s->fresh) {
    memset(s->reused, 1, TOUCH_BYTES);
    return;
  }
  /* mmap guarantees fresh pages whatever the allocator would do; munmap gives them back, as
   * free does for a large temporary. */
  char *p = mmap(NULL, TOUCH_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    s->failed = TRUE;
    return;
  }
  memset(p, 1, TOUCH_BYTES);
  munmap(p, TOUCH_BYTES);
}

double comm_mpi__first_touch_s(const comm_mpi_ctx *ctx, int reps)
{
  touch_state s = {.reused = g_malloc(TOUCH_BYTES)};
  memset(s.reused, 0, TOUCH_BYTES);
  double t_reused = slowest_median(reps, do_touch, &s);
  s.fresh = TRUE;
  double t_fresh = slowest_median(reps, do_touch, &s);
  g_free(s.reused);
  g_autoptr(GError) error = NULL;
  if (s.failed)
    g_set_error(&error, DT_ERROR, DT_ERROR_INTERNAL, "cannot map %u bytes to time page faults",
                TOUCH_BYTES);
  comm_mpi__agree(ctx, !s.failed, error);
  long page = sysconf(_SC_PAGESIZE);
  double pages = (double)TOUCH_BYTES / (double)(page > 0 ? page : 4096);
  return MAX(0.0, t_fresh - t_reused) / pages;
}

long comm_mpi__minor_faults(void)
{
  struct rusage u;
  return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_minflt : 0;
}
