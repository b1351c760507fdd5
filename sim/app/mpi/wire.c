/* The link model of dtsim-netwire (see wire.h). */
#include "wire.h"

struct comm_wire {
  guint hosts;
  uint64_t rate_Bps;
  int64_t delay_ns;
  int64_t *tx_free_ns; /* per host: when its uplink has sent everything handed to it */
  int64_t *rx_free_ns; /* per host: when its downlink has delivered everything queued for it */
};

comm_wire *comm_wire_new(guint hosts, uint64_t rate_Bps, int64_t delay_ns)
{
  g_return_val_if_fail(hosts >= 1 && rate_Bps > 0 && delay_ns >= 0, NULL);
  comm_wire *w = g_new0(comm_wire, 1);
  w->hosts = hosts;
  w->rate_Bps = rate_Bps;
  w->delay_ns = delay_ns;
  w->tx_free_ns = g_new0(int64_t, hosts);
  w->rx_free_ns = g_new0(int64_t, hosts);
  return w;
}

void comm_wire_free(comm_wire *w)
{
  if (!w)
    return;
  g_free(w->tx_free_ns);
  g_free(w->rx_free_ns);
  g_free(w);
}

int64_t comm_wire_serialize_ns(const comm_wire *w, uint32_t bytes)
{
  /* bytes < 2^32 and 1e9 < 2^30: the product fits in 64 bits. */
  uint64_t num = (uint64_t)bytes * UINT64_C(1000000000);
  return (int64_t)((num + w->rate_Bps - 1) / w->rate_Bps);
}

int64_t comm_wire_schedule(comm_wire *w, guint src, guint dst, uint32_t bytes, int64_t now_ns)
{
  g_return_val_if_fail(w != NULL && src < w->hosts && dst < w->hosts && src != dst, now_ns);
  int64_t ser_ns = comm_wire_serialize_ns(w, bytes);
  int64_t tx_start = MAX(now_ns, w->tx_free_ns[src]);
  w->tx_free_ns[src] = tx_start + ser_ns;
  int64_t rx_start = MAX(tx_start + w->delay_ns, w->rx_free_ns[dst]);
  w->rx_free_ns[dst] = rx_start + ser_ns;
  return w->rx_free_ns[dst];
}
