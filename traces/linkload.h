/* Link load: what each link of the network carried over a run, from the flows that crossed it
 * (the flow network tells of each as it ends: comm_net_set_flow_observer, whose signature
 * trace_linkload_flow has), and two views of it: Chrome trace counters of the busiest links'
 * rates over time, and an SVG heat map of link utilization over time grouped by tier.
 *
 * Each flow's bytes are spread evenly over its life (from the end of its route's latency to its
 * last byte), so a link's total bytes are exact and its rate over time is the sum of the mean
 * rates of the flows on it (which can briefly pass the capacity where a flow's rate changed
 * during its life). Depends only on the engine's types and the Chrome trace writer. */
#ifndef DTSIM_TRACE_LINKLOAD_H
#define DTSIM_TRACE_LINKLOAD_H

#include <glib.h>
#include <stdint.h>

#include "chrome.h"
#include "engine.h"

typedef struct trace_linkload trace_linkload;

/* For links with ids below n_links; at most max_records (flow, link) records are kept for the
 * views over time (totals are always kept). */
trace_linkload *trace_linkload_new(uint32_t n_links, uint64_t max_records);
void trace_linkload_free(trace_linkload *ll);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(trace_linkload, trace_linkload_free)

/* One flow: `bytes` over the directed links of its route from start_ps to end_ps. `user` is the
 * trace_linkload. */
void trace_linkload_flow(void *user, const uint32_t *links, uint32_t n, sim_time_ps start_ps,
                         sim_time_ps end_ps, uint64_t bytes);

double trace_linkload_bytes(const trace_linkload *ll, uint32_t link);
/* TRUE when records were dropped past max_records (the views over time are then partial). */
gboolean trace_linkload_truncated(const trace_linkload *ll);
/* The (at most) k links that carried the most bytes, most first, ties to the lower id, into
 * out; returns how many (links that carried nothing are left out). */
uint32_t trace_linkload_busiest(const trace_linkload *ll, uint32_t k, uint32_t *out);
/* Bytes that `link` carried in [a, b). */
double trace_linkload_bytes_between(const trace_linkload *ll, uint32_t link, sim_time_ps a,
                                    sim_time_ps b);

/* What the views need to know of a link: its name ("leaf0-spine3"), its tier ("nvlink",
 * "pcie", "host", "nic", "leaf", "rail", "spine", "network") and capacity, bytes/s. */
typedef struct {
  char *(*name)(void *user, uint32_t link);          /* newly allocated */
  const char *(*tier)(void *user, uint32_t link);
  double (*Bps)(void *user, uint32_t link);
  void *user;
} trace_link_info;

/* The rate of each link over time as counters ("NAME GB/s") of a process of `engine` named
 * `proc_name`, written into the trace t (the engine's observer). */
void trace_linkload_counters(const trace_linkload *ll, trace_chrome *t, sim_engine *engine,
                             const char *proc_name, const uint32_t *links, uint32_t n,
                             const trace_link_info *info);

/* An SVG heat map: one row per link (the busiest rows_per_tier links of each tier with load,
 * tiers in the order above), time across in `bins` columns up to end_ps, each cell coloured by
 * the link's utilization in that interval (bytes over capacity x interval). */
gboolean trace_linkload_write_svg(const trace_linkload *ll, const char *path, const char *title,
                                  sim_time_ps end_ps, uint32_t bins, uint32_t rows_per_tier,
                                  const trace_link_info *info, GError **error);

#endif
