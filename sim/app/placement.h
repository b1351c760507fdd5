/* Placement of jobs on the nodes of one cluster: each job takes the nodes its list names, or
 * the next free nodes in file order. A node list is "A-B,C,D-E" (node numbers from 0). Errors
 * name the key that asked (the `where` of the request). */
#ifndef DTSIM_PLACEMENT_H
#define DTSIM_PLACEMENT_H

#include <glib.h>
#include <stdint.h>

typedef struct {
  const char *job;              /* its name, for messages */
  uint32_t nodes;               /* nodes it asks for when it has no list */
  const GArray *list;           /* uint32_t cluster nodes in the job's order, or NULL */
  const char *where;            /* the key that asked: "FILE:LINE: [job a] node-list" */
  GArray *placed;               /* out (made by sim_place_jobs): uint32_t cluster node of each
                                 * of the job's nodes, in order */
} sim_place_request;

/* Parses a node list into a new array of uint32_t (in the order given); refuses empty items,
 * reversed ranges, numbers past max_node and nodes named twice. */
gboolean sim_place_parse_list(const char *text, const char *where, uint32_t max_node,
                              GArray **out, GError **error);

/* Places the requests on a cluster of `cluster_nodes` nodes: the lists first (each node in range
 * and in one list only), then the others in order on the lowest free nodes. Fills each
 * request's `placed`; FALSE naming the request that does not fit. */
gboolean sim_place_jobs(sim_place_request *reqs, guint n, uint32_t cluster_nodes,
                        const char *cluster_where, GError **error);

/* Frees the `placed` arrays of the requests. */
void sim_place_clear(sim_place_request *reqs, guint n);

#endif
