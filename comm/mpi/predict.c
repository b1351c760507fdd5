/* Closed-form times of the Open MPI algorithms in comm_mpi_algorithms() on a fitted system, in
 * the Hockney model (each message costs latency + bytes / bandwidth, each reduction
 * bytes / reduce rate) with the step costs of Thakur, Rabenseifner and Gropp, "Optimization of
 * Collective Communication Operations in MPICH" (IJHPCA 2005). A step where every rank talks to
 * one partner takes as long as its slowest pair, so a step is priced on the inter-node fabric as
 * soon as one of its pairs crosses nodes (ranks placed node-major, as dtsim numbers them). */
#include "comm_mpi.h"
#include "util.h"

#include <math.h>

typedef struct {
  const comm_mpi_system *sys;
  uint32_t ranks;
  uint32_t per_node; /* ranks per node: ceil(ranks / nodes) */
} shape;

/* Whether a step whose pairs are ranks at distance `dist` (exchange partners r ^ dist when
 * `xor_pairs`, else r and r + dist modulo ranks) has a pair on two different nodes. */
static gboolean step_crosses(const shape *s, uint32_t dist, gboolean xor_pairs)
{
  for (uint32_t r = 0; r < s->ranks; r++) {
    uint32_t peer = xor_pairs ? (r ^ dist) : (r + dist) % s->ranks;
    if (peer < s->ranks && r / s->per_node != peer / s->per_node)
      return TRUE;
  }
  return FALSE;
}

static double step_s(const shape *s, gboolean inter, double bytes, double reduce_bytes)
{
  const comm_mpi_fabric *f = inter && s->sys->inter_measured ? &s->sys->inter : &s->sys->intra;
  double t = f->latency_ns * 1e-9 + bytes / (f->bandwidth_GBps * 1e9);
  if (reduce_bytes > 0 && s->sys->reduce_GBps > 0)
    t += reduce_bytes / (s->sys->reduce_GBps * 1e9);
  return t;
}

gboolean comm_mpi_predict(const comm_mpi_system *sys, const comm_mpi_algorithm *algo,
                          uint64_t bytes, uint32_t ranks, double *out_s, GError **error)
{
  g_return_val_if_fail(sys != NULL && algo != NULL && out_s != NULL, FALSE);
  if (ranks < 2) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "a collective needs at least 2 ranks");
    return FALSE;
  }
  if (!(sys->intra.bandwidth_GBps > 0)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "the system has no fitted bandwidth");
    return FALSE;
  }
  uint32_t nodes = sys->nodes ? sys->nodes : 1;
  shape s = {sys, ranks, (ranks + nodes - 1) / nodes};
  double n = (double)bytes, p = ranks, block = n / p;
  gboolean pow2 = (ranks & (ranks - 1)) == 0;
  gboolean ring_inter = step_crosses(&s, 1, FALSE);
  double t = 0;

  switch (algo->op) {
  case COMM_MPI_ALLREDUCE:
    if (g_str_equal(algo->name, "ring")) {
      t = (p - 1) * step_s(&s, ring_inter, block, block) + (p - 1) * step_s(&s, ring_inter, block, 0);
    } else if (g_str_equal(algo->name, "recursive-doubling") && pow2) {
      for (uint32_t d = 1; d < ranks; d *= 2)
        t += step_s(&s, step_crosses(&s, d, TRUE), n, n);
    } else if (g_str_equal(algo->name, "halving-doubling") && pow2) {
      /* Recursive halving (distance p/2 first, halving the data each time), then the mirror. */
      double part = n;
      for (uint32_t d = ranks / 2; d >= 1; d /= 2) {
        part /= 2;
        gboolean x = step_crosses(&s, d, TRUE);
        t += step_s(&s, x, part, part) + step_s(&s, x, part, 0);
      }
    } else {
      goto unsupported;
    }
    break;
  case COMM_MPI_ALLGATHER:
  case COMM_MPI_REDUCE_SCATTER: {
    gboolean reduce = algo->op == COMM_MPI_REDUCE_SCATTER;
    if (g_str_equal(algo->name, "ring")) {
      t = (p - 1) * step_s(&s, ring_inter, block, reduce ? block : 0);
    } else if ((g_str_equal(algo->name, "recursive-doubling") ||
                g_str_equal(algo->name, "halving-doubling")) && pow2) {
      for (uint32_t d = 1, k = 1; d < ranks; d *= 2, k *= 2)
        t += step_s(&s, step_crosses(&s, d, TRUE), block * k, reduce ? block * k : 0);
    } else if (g_str_equal(algo->name, "bruck")) {
      /* Step k sends min(2^k, p - 2^k) blocks to rank - 2^k. */
      for (uint32_t d = 1; d < ranks; d *= 2)
        t += step_s(&s, step_crosses(&s, ranks - d, FALSE), block * MIN(d, ranks - d), 0);
    } else {
      goto unsupported;
    }
    break;
  }
  case COMM_MPI_BROADCAST:
    if (g_str_equal(algo->name, "binomial")) {
      for (uint32_t d = 1; d < ranks; d *= 2)
        t += step_s(&s, step_crosses(&s, d, TRUE), n, 0);
    } else if (g_str_equal(algo->name, "pipeline")) {
      t = (p - 1) * step_s(&s, ring_inter, n, 0);
    } else if (g_str_equal(algo->name, "scatter-allgather") && pow2) {
      /* Binomial scatter: the root's half, quarter, ... then recursive-doubling allgather. */
      for (uint32_t d = ranks / 2, k = ranks / 2; d >= 1; d /= 2, k /= 2)
        t += step_s(&s, step_crosses(&s, d, TRUE), block * k, 0);
      for (uint32_t d = 1, k = 1; d < ranks; d *= 2, k *= 2)
        t += step_s(&s, step_crosses(&s, d, TRUE), block * k, 0);
    } else {
      goto unsupported;
    }
    break;
  default:
    goto unsupported;
  }
  *out_s = t;
  return TRUE;

unsupported:
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s %s is not modeled for %u ranks%s",
              comm_mpi_op_name(algo->op), algo->name, ranks,
              pow2 ? "" : " (it needs a power-of-two rank count)");
  return FALSE;
}

const char *comm_mpi_predict_model(void)
{
  return "closed-form Hockney model of the Open MPI algorithm on the fitted fabrics";
}
