/* Pipeline schedules (see schedule.h). */
#include "schedule.h"

/* The k-th forward or backward unit of the interleaved order (with V = 1 simply micro-batch
 * k): unit k is in group k / P, which is chunk (k / P) mod V of micro-batch
 * (k / (P V)) P + k mod P. Backward runs the chunks from the last. */
static sim_schedule_unit nth_unit(gboolean fwd, uint64_t k, uint64_t P, uint64_t V)
{
  uint64_t c = V > 1 ? (k / P) % V : 0;
  uint64_t mb = V > 1 ? (k / (P * V)) * P + k % P : k;
  return (sim_schedule_unit){fwd, (uint32_t)mb, (uint32_t)(fwd ? c : V - 1 - c)};
}

void sim_schedule_order(wl_schedule schedule, uint32_t P, uint32_t s, uint64_t M, uint32_t V,
                        sim_schedule_unit *out)
{
  sim_schedule_order_ahead(schedule, P, s, M, V, 0, out);
}

uint64_t sim_schedule_inflight(wl_schedule schedule, uint32_t P, uint32_t s, uint64_t M,
                               uint32_t V, uint32_t ahead)
{
  uint64_t n = wl_tf_inflight_chunks(schedule, P, V, M, s) + ahead;
  uint64_t total = M * (V ? V : 1);
  return n < total ? n : total;
}

void sim_schedule_order_ahead(wl_schedule schedule, uint32_t P, uint32_t s, uint64_t M,
                              uint32_t V, uint32_t ahead, sim_schedule_unit *out)
{
  g_return_if_fail(s < P && V >= 1);
  uint64_t total = M * V;
  uint64_t warm;
  switch (schedule) {
  case WL_SCHED_GPIPE:
    warm = total;
    break;
  case WL_SCHED_INTERLEAVED:
    warm = V > 1 ? ((uint64_t)P - s - 1) * 2 + ((uint64_t)V - 1) * P : (uint64_t)P - s - 1;
    break;
  default:
    warm = (uint64_t)P - s - 1;
    break;
  }
  warm += ahead;
  if (warm > total)
    warm = total;
  sim_schedule_unit *next = out;
  uint64_t kf = 0, kb = 0;
  for (; kf < warm; kf++)
    *next++ = nth_unit(TRUE, kf, P, V);
  for (; kf < total; kf++, kb++) {
    *next++ = nth_unit(TRUE, kf, P, V);
    *next++ = nth_unit(FALSE, kb, P, V);
  }
  if (schedule == WL_SCHED_GPIPE) {
    /* All forwards came first; the backwards go in reverse order. */
    for (uint64_t k = total; k-- > 0;)
      *next++ = nth_unit(FALSE, k, P, V);
  } else {
    for (; kb < total; kb++)
      *next++ = nth_unit(FALSE, kb, P, V);
  }
  g_assert(next == out + 2 * total);
}
