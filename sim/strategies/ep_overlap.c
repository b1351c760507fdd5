/* Expert-parallel all-to-alls under the compute of another micro-batch (ep_overlap.h). */
#include "ep_overlap.h"

void sim_ep_overlap_time(const int64_t a2a_ps[2], const int64_t compute_ps[2], unsigned sms,
                         unsigned comm_sms, sim_ep_overlap *out)
{
  double share = comm_sms < sms ? (double)comm_sms / (double)(sms - comm_sms) : 0;
  for (int pass = 0; pass < 2; pass++) {
    int64_t cover = compute_ps[1 - pass];
    int64_t hidden = a2a_ps[pass] < cover ? a2a_ps[pass] : cover;
    out->exposed_ps[pass] = a2a_ps[pass] - hidden;
    /* The pass that covers them (the other one) runs slower while they do. */
    out->slower_ps[1 - pass] = (int64_t)((double)hidden * share + 0.5);
  }
}
