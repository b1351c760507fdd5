/* The link model of dtsim-netwire, the user-space wire of the one-machine cluster
 * (scripts/netns-cluster.sh): N hosts, each with one full-duplex link of the same rate to a
 * non-blocking switch, and one fixed one-way delay between any two hosts. This header is the
 * timing alone, without sockets or devices, so that unit tests can check it.
 *
 * A packet of b bytes that host s hands to the wire at time t (nanoseconds):
 *   - leaves on s's uplink once the packets before it have left: tx_start = max(t, tx_free[s]),
 *     tx_free[s] = tx_start + b / rate;
 *   - starts to arrive at d's downlink a delay later, cut-through, or when d's downlink has
 *     finished the packets queued for it before: rx_start = max(tx_start + delay, rx_free[d]);
 *   - is delivered whole at rx_free[d] = rx_start + b / rate.
 * One stream of n bytes from s to d thus takes delay + n / rate: the alpha-beta line that the
 * calibration fits. Two senders to one host share its downlink; a host sends and receives at
 * the full rate at once. Deliveries to one host come in the order the packets were handed in. */
#ifndef DTSIM_COMM_WIRE_H
#define DTSIM_COMM_WIRE_H

#include <glib.h>
#include <stdint.h>

typedef struct comm_wire comm_wire;

/* hosts >= 1; rate_Bps > 0 (bytes/s); delay_ns >= 0. */
comm_wire *comm_wire_new(guint hosts, uint64_t rate_Bps, int64_t delay_ns);
void comm_wire_free(comm_wire *w);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(comm_wire, comm_wire_free)

/* Time (ns) to put `bytes` on a link: ceil(bytes * 1e9 / rate). */
int64_t comm_wire_serialize_ns(const comm_wire *w, uint32_t bytes);

/* Schedules a packet of `bytes` from host src to host dst (0-based, src != dst) handed in at
 * now_ns; returns when it is delivered (ns, same clock). */
int64_t comm_wire_schedule(comm_wire *w, guint src, guint dst, uint32_t bytes, int64_t now_ns);

#endif
