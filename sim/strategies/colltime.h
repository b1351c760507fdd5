/* Collective times on an idle network, shared by the strategies and the network adapter.
 *
 * Two uses, one memo:
 *   - sim_coll_memo: durations of collectives keyed by (algorithm, where, operation, size),
 *     "where" being whatever names the ranks (a group, a layout of concurrent groups). The
 *     network adapter keeps one for folded plans, whose collectives each start on an idle
 *     network and so last the same whenever they start; it times the first of each key as it
 *     runs and replays the rest as one event.
 *   - sim_coll_timer: a service that times collectives on an engine and network of its own,
 *     idle between runs: `groups` concurrent groups of a layout (the tensor-parallel groups of a
 *     node, the data-parallel groups of a stage) share the links as they would in the job. A
 *     strategy asks it while it builds (3d times its tensor- and data-parallel collectives
 *     there), and every time is kept in its memo. */
#ifndef DTSIM_COLLTIME_H
#define DTSIM_COLLTIME_H

#include <glib.h>
#include <stdint.h>

#include "coll.h"
#include "comm_net.h"
#include "engine.h"

/* ---- The memo -------------------------------------------------------------------------------- */

typedef struct {
  const comm_coll_algorithm *algo;
  const void *where;        /* the group or layout (compared as an address) */
  int op;
  uint64_t bytes;
  gboolean timed;           /* FALSE while the first one still runs */
  sim_time_ps duration_ps;
} sim_coll_memo_entry;

typedef struct {
  GArray *entries;          /* sim_coll_memo_entry, in the order first met */
} sim_coll_memo;

void sim_coll_memo_init(sim_coll_memo *m);
void sim_coll_memo_clear(sim_coll_memo *m);
/* The entry of the key, or -1. */
int64_t sim_coll_memo_find(const sim_coll_memo *m, const comm_coll_algorithm *algo,
                           const void *where, int op, uint64_t bytes);
/* Adds an entry (timed or not) and returns its index. */
int64_t sim_coll_memo_add(sim_coll_memo *m, const comm_coll_algorithm *algo, const void *where,
                          int op, uint64_t bytes, gboolean timed, sim_time_ps duration_ps);
sim_coll_memo_entry *sim_coll_memo_at(sim_coll_memo *m, int64_t i);

/* ---- The idle-network timer ------------------------------------------------------------------ */

typedef struct sim_coll_timer sim_coll_timer;

/* `algo` times every operation it supports; all-to-alls it lacks go direct, the others by
 * the ring. Collectives reduce at
 * `reduce_Bps` bytes/s. NULL with an error naming --allreduce when `algo` is unknown. */
sim_coll_timer *sim_coll_timer_new(const comm_topology *topo, comm_net_model model,
                                   const char *algo, double reduce_Bps, GError **error);
void sim_coll_timer_free(sim_coll_timer *ct);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sim_coll_timer, sim_coll_timer_free)
const comm_coll_algorithm *sim_coll_timer_algorithm(const sim_coll_timer *ct);
/* The algorithm sim_coll_timer_time runs `op` with: the timer's own where it implements it,
 * else "direct" for alltoall and "ring" for the others. */
const comm_coll_algorithm *sim_coll_timer_algorithm_for(const sim_coll_timer *ct, comm_coll_op op);

/* Time of `groups` concurrent collectives `op` of `bytes` (nccl-tests size), group g having the
 * ranks first + g * group_stride + i * stride for i < n; 0 for fewer than two ranks or no
 * bytes. */
gboolean sim_coll_timer_time(sim_coll_timer *ct, comm_coll_op op, uint32_t first, uint32_t n,
                             uint32_t stride, uint32_t groups, uint32_t group_stride,
                             uint64_t bytes, sim_time_ps *out, GError **error);
/* The same with the plain ring whatever the timer's algorithm: each rank sends to the next over
 * the route between the two, as point-to-point sends do (a context-parallel ring's keys and
 * values, one NIC per GPU across nodes). */
gboolean sim_coll_timer_ring_time(sim_coll_timer *ct, comm_coll_op op, uint32_t first,
                                  uint32_t n, uint32_t stride, uint32_t groups,
                                  uint32_t group_stride, uint64_t bytes, sim_time_ps *out,
                                  GError **error);

#endif
