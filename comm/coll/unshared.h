/* A collective computed without flows, when none of its transfers can ever share a link.
 *
 * The executor of coll.c runs a collective's plan as flows: a transfer starts once its sender
 * and its receiver have both entered its step, and a rank leaves a step when its sends and
 * receives are complete, after the step's delay (folded latency, software overhead,
 * reduction). If no other traffic is on the network while the collective runs, if no rank sends
 * two messages to one peer in one step, and if the routes of all the (sender, receiver) pairs
 * of the collective share no directed link, then every flow is alone on its links for its whole
 * life (a pair's messages follow one another: a sender leaves a step only once its send has
 * arrived), so each one takes the lone-flow time of comm__lone_time, and the executor's times
 * follow from a recurrence over the steps: rank r enters step s at ready[r]; a message of the
 * step from r to d arrives at max(ready[r], ready[d]) + its lone time; a rank's step ends at its
 * last send's or receive's arrival, plus the step's delay. This is the same arithmetic as the
 * executor on the flow network, without an engine event per transfer: exact, not a model of
 * it (tests/sim/test_fold.c compares the two to the picosecond).
 *
 * The "nccl" algorithm runs its channels with an executor of its own and is always left to
 * it (COMM_COLL_UNSHARED_SHARED).
 *
 * Only the caller knows that nothing else runs on the network meanwhile (a strategy whose
 * collectives are serialized on one stream and that sends nothing else, as symmetric data
 * parallelism); the collective itself checks the rest. */
#ifndef DTSIM_COMM_COLL_UNSHARED_H
#define DTSIM_COMM_COLL_UNSHARED_H

#include "coll.h"

typedef enum {
  COMM_COLL_UNSHARED_DONE,     /* *duration_ps and *flows are set */
  COMM_COLL_UNSHARED_SHARED,   /* some transfers could share a link: run it as flows */
  COMM_COLL_UNSHARED_ERROR,    /* the algorithm cannot run this (error set) */
} comm_coll_unshared_result;

/* Duration of the collective from its start on an idle flow network (no flow in flight, no
 * observer), and the flows the executor would have sent. */
comm_coll_unshared_result comm_coll_unshared_time(comm_net *net, const comm_coll_group *group,
                                                  const comm_coll_algorithm *algo,
                                                  const comm_coll_args *args,
                                                  sim_time_ps *duration_ps, uint64_t *flows,
                                                  GError **error);

#endif
