/* Internals of comm/coll shared by the executor, the phase kinds, the algorithm table and the
 * tests: a plan is a short list of phases; a phase kind says, for any rank and step, what that
 * rank sends, how many messages it waits for and how many bytes it reduces, and gives the
 * phase's closed-form time. */
#ifndef DTSIM_COMM_COLL_INTERNAL_H
#define DTSIM_COMM_COLL_INTERNAL_H

#include "coll.h"

/* A group's memo of auto's choices: a tensor-parallel group runs a few sizes and operations
 * (forward and backward, all-reduce or all-gather and reduce-scatter). */
#define COLL_PICK_MEMOS 4

struct comm_coll_group {
  const comm_topology *topo;
  uint32_t n;
  comm_ep *eps;          /* endpoint of each member */
  uint32_t *node;        /* node of each member */
  uint32_t *rank;        /* global rank of each member */
  uint32_t nodes;        /* distinct nodes */
  uint32_t per_node;     /* members per node when uniform and node-major, else 0 */
  /* The nccl choice's routes of this group's rings and trees (nccl.c), made when first
   * needed and kept with the group: they depend on nothing else. A memo behind the const of
   * the functions that take a group. */
  struct coll__nccl_routes *nccl_routes;
  /* Route latencies between members (coll__latency), asked again and again: a ring asks each
   * of its pairs four times per collective (both neighbours, in its reduce-scatter and its
   * allgather), and a group that runs several collectives asks again for each. Open addressing
   * on a << 32 | b (UINT64_MAX: empty), doubled when half full; a memo behind the const too.
   * NULL until first asked. */
  uint64_t *lat_key;
  sim_time_ps *lat_ps;
  uint32_t lat_mask, lat_used;   /* slots - 1; pairs held */
  /* Per member, the slower of its two routes' latencies in the ring of the whole group (see
   * ring_extra, phases.c), or NULL until first asked: a pipelined ring asks for every rank of
   * every collective, and the two lookups in lat_key were a twentieth of an every-device 3-D
   * run. Groups of more than COLL_LAT_MEMO_MEMBERS keep none, as lat_key. */
  sim_time_ps *ring_lat_ps;
  /* The last closed form of nccl's own choice asked of this group, and its arguments: auto
   * compares it with the ring's and the run then asks it again (planning nccl on 16384 GPUs
   * takes half a second). A memo behind the const too. */
  gboolean nccl_memo_valid;
  comm_coll_args nccl_memo_args;
  sim_time_ps nccl_memo_ps;
  /* The last choices of auto for this group and their arguments (auto_pick, algorithms.c): a
   * run asks again for every collective it starts (the adapter, comm_coll_new and the plan
   * each resolve the algorithm), and on accelerators each answer worked out the ring's closed
   * form, routes and all (a fifth of an every-device 3-D run). The choice depends on nothing
   * else; a memo behind the const too, COLL_PICK_MEMOS entries filled in turn. */
  struct {
    comm_coll_args args;
    const comm_coll_algorithm *algo;
  } pick_memo[COLL_PICK_MEMOS];
  uint32_t pick_memos, pick_next;   /* entries held; the one filled next */
};

/* The arguments that a collective's closed form, and auto's choice, depend on are the same. */
static inline gboolean coll__same_args(const comm_coll_args *a, const comm_coll_args *b)
{
  return a->op == b->op && a->bytes == b->bytes && a->root == b->root &&
         a->reduce_Bps == b->reduce_Bps && a->chunk_bytes == b->chunk_bytes &&
         a->form == b->form && a->launch_ps == b->launch_ps && a->step_ps == b->step_ps;
}

typedef struct {
  uint32_t peer;         /* group index */
  uint64_t bytes;
} coll__xfer;

/* What one rank does in one step. Sends start when the rank enters the step; the rank leaves
 * it when its sends are done and `nrecv` messages have arrived, after `extra_ps` (latency of
 * the steps a pipelined phase folds into one), the software overhead of the `folded` steps it
 * stands for (when it moves anything) and the reduction of `reduce_bytes`. */
typedef struct {
  uint32_t nsend;
  coll__xfer *send;      /* room for the group size; filled by the phase kind */
  uint32_t nrecv;
  uint64_t reduce_bytes;
  sim_time_ps extra_ps;
  uint32_t folded;       /* steps this one stands for; 0 is read as 1 */
} coll__step;

/* What the closed forms need besides the phase: the reduction rate (bytes/s, 0: free) and the
 * software overhead per step. */
typedef struct {
  double reduce_Bps;
  sim_time_ps step_ps;
} coll__cost;

typedef struct coll__phase coll__phase;

#define COLL__NONE UINT32_MAX

/* A spanning tree of the group (double-tree): parent of each member (COLL__NONE at the root),
 * children in CSR form, heights (leaves 0) and depths (root 0). */
typedef struct {
  uint32_t n, root, root_height;
  uint32_t *parent, *height, *depth;
  uint32_t *child_first;   /* n + 1 entries */
  uint32_t *child;
} coll__tree;

coll__tree *coll__tree_build(const comm_coll_group *group, int which);
void coll__tree_free(coll__tree *tree);

typedef struct {
  const char *name;
  uint32_t (*steps)(const coll__phase *ph);
  void (*step)(const coll__phase *ph, uint32_t rank, uint32_t step, coll__step *out);
  sim_time_ps (*analytic)(const coll__phase *ph, const coll__cost *cost);
} coll__phase_kind;

/* A phase works inside subgroups of `m` members spaced `stride` apart: member i of rank r's
 * subgroup is r - pos(r) * stride + i * stride with pos(r) = (r / stride) % m. The whole group
 * is m = n, stride = 1; a node is m = per_node, stride = 1; the same local index across nodes
 * is m = nodes, stride = per_node. */
struct coll__phase {
  const coll__phase_kind *kind;
  const comm_coll_group *group;
  uint32_t m, stride;
  uint64_t bytes;        /* the phase's buffer per subgroup */
  uint32_t seg_of;       /* > 0: the buffer is segment (local + 1) % seg_of of `bytes` split
                          * seg_of ways (the inter-node phase of hierarchical) */
  uint32_t root;         /* position of the root inside the subgroup */
  uint32_t offset;       /* ring allgather: 1 when rank p starts owning segment p + 1 */
  uint32_t chunks;       /* pipeline chunks */
  gboolean pipelined;    /* ring phases: one step carrying every step's bytes */
  coll__tree *trees[2];  /* double-tree: owned by the plan */
};

#define COLL__MAX_PHASES 4

typedef struct {
  uint32_t nphases;
  coll__phase phases[COLL__MAX_PHASES];
} coll__plan;

typedef gboolean (*coll__plan_fn)(coll__plan *plan, const comm_coll_group *group,
                                  const comm_coll_args *args, GError **error);
typedef const comm_coll_algorithm *(*coll__pick_fn)(const comm_coll_group *group,
                                                    const comm_coll_args *args);

/* What "nccl:ALGO[/PROTO[/CHANNELS]]" forces, as NCCL_ALGO, NCCL_PROTO and
 * NCCL_MIN_NCHANNELS do: an algorithm (COLL__NCCL_*), a protocol (COLL__LL...; -1: NCCL's
 * choice) and a channel count (0: NCCL's). */
typedef struct {
  int algo, proto;
  uint32_t channels;
} coll__nccl_force;

struct comm_coll_algorithm {
  const char *name;
  const char *description;
  coll__plan_fn plan[COMM_COLL_N_OPS];   /* NULL: operation not supported */
  coll__pick_fn pick;                    /* non-NULL only for "auto" */
  gboolean nccl;                         /* "nccl": channels and protocols (nccl.c) */
  coll__nccl_force force;                /* with nccl and `forced`: what the name forces */
  gboolean forced;
};

/* A registry entry by name (programming error if absent). */
const comm_coll_algorithm *coll__algorithm_builtin(const char *name);

/* Segment i of `bytes` split `parts` ways (sizes differ by at most one byte). */
uint64_t coll__seg(uint64_t bytes, uint64_t parts, uint64_t i);
/* Builds the plan of a resolved algorithm. */
gboolean coll__plan_build(coll__plan *plan, const comm_coll_group *group,
                          const comm_coll_algorithm *algo, const comm_coll_args *args,
                          GError **error);
uint32_t coll__plan_steps(const coll__plan *plan);
/* Frees what the plan's phases own; the plan may be built again afterwards. */
void coll__plan_clear(coll__plan *plan);

/* Phase kinds. */
extern const coll__phase_kind coll__ring_rs, coll__ring_ag, coll__binomial_reduce,
    coll__binomial_bcast, coll__rd_fold, coll__rd_exchange, coll__rd_unfold, coll__halving,
    coll__doubling, coll__gather_root, coll__scatter_root, coll__chain_bcast, coll__chain_reduce,
    coll__double_tree, coll__rd_allgather, coll__alltoall;

/* The subgroup helpers phase kinds share. */
uint32_t coll__pos(const coll__phase *ph, uint32_t rank);
uint32_t coll__member(const coll__phase *ph, uint32_t rank, uint32_t pos);
uint64_t coll__phase_bytes(const coll__phase *ph, uint32_t rank);
/* Idle-network time of `bytes` from member a to member b. */
sim_time_ps coll__p2p(const comm_coll_group *g, uint32_t a, uint32_t b, uint64_t bytes);
sim_time_ps coll__latency(const comm_coll_group *g, uint32_t a, uint32_t b);
/* One of a set of transfers that run at once, between group members. */
typedef struct {
  uint32_t src, dst;   /* group indices */
  uint64_t bytes;
} coll__flow;
/* Per transfer: the share of its route it gets when every link's capacity is split equally
 * among the transfers crossing it (bytes/s), and its route's latency for its size. */
void coll__flow_shares(const comm_coll_group *g, const coll__flow *f, uint32_t nf, double *share,
                       sim_time_ps *lat);
/* The same in two parts, for sets of transfers timed at several sizes: their routes and the
 * shares of their links (which do not depend on the sizes), then each transfer's share and
 * latency for the sizes in `f` (the transfers the routes were made of, in the same order). */
typedef struct coll__flow_routes coll__flow_routes;
coll__flow_routes *coll__flow_routes_new(const comm_coll_group *g, const coll__flow *f,
                                         uint32_t nf);
void coll__flow_routes_shares(const coll__flow_routes *r, const coll__flow *f, double *share,
                              sim_time_ps *lat);
void coll__flow_routes_free(coll__flow_routes *r);
sim_time_ps coll__reduce_time(uint64_t bytes, double reduce_Bps);
/* A lower bound on a phase's time: per step, the bytes its busiest link carries over the
 * link's rate plus the longest route latency, summed over the steps (0 where it is not worked
 * out: a ring over the whole group, or a phase of more than 2^20 transfers). */
sim_time_ps coll__phase_link_bound(const coll__phase *ph);
/* Delay after a rank's step: folded latency, software overhead, reduction. */
sim_time_ps coll__step_delay(const coll__step *st, const coll__cost *cost);

/* ---- The "nccl" algorithm (nccl.c) -------------------------------------------------------- */

enum {
  COLL__NCCL_RING,
  COLL__NCCL_TREE,
  COLL__NCCL_NVLS,
  COLL__NCCL_P2P,
  COLL__NCCL_COLLNET,         /* CollNet Direct */
  COLL__NCCL_NVLS_TREE,
  COLL__NCCL_COLLNET_CHAIN,
  COLL__NCCL_PAT,
  COLL__NCCL_NALGO
};
enum { COLL__LL, COLL__LL128, COLL__SIMPLE, COLL__NPROTO };
/* The names "nccl:ALGO/PROTO" takes (NCCL_ALGO's and NCCL_PROTO's, lower case): indexed by
 * COLL__NCCL_* and COLL__LL...; "p2p" (alltoall's point-to-point) is not forced by name. */
extern const char *const coll__nccl_algo_names[COLL__NCCL_NALGO];
extern const char *const coll__nccl_proto_names[COLL__NPROTO];

/* What NCCL's cost model picks, and its closed form on an idle network. */
typedef struct {
  int algo, proto;
  uint32_t channels;
  double wire;             /* bytes on the wire per payload byte (protocol efficiency) */
  sim_time_ps launch_ps;   /* base latency plus the pipeline's fill (fill_ps) */
  sim_time_ps fill_ps;     /* slices forwarded hop by hop before the pipeline is full */
  sim_time_ps step_ps;     /* per hop, beyond the links' own latency */
  sim_time_ps time_ps;     /* closed form */
  sim_time_ps cost_ps;     /* what the choice compares: the closed form, or for trees NCCL's
                            * own estimate (nccl.c, tree_cost); 0: the closed form */
} coll__nccl_choice;

typedef struct coll__nccl coll__nccl;

/* The channels' rings: returns their count C and C x n group indices (g_free them). */
uint32_t coll__nccl_rings(const comm_coll_group *group, uint32_t **orders);
/* Chooses as NCCL would; algo / proto >= 0 restrict the choice, channels > 0 sets the channel
 * count (NCCL_MIN_NCHANNELS). With a forced algorithm the system cannot run, one line says
 * why. */
coll__nccl *coll__nccl_plan(const comm_coll_group *group, const comm_coll_args *args, int algo,
                            int proto, GError **error);
coll__nccl *coll__nccl_plan_forced(const comm_coll_group *group, const comm_coll_args *args,
                                   const coll__nccl_force *force, GError **error);
void coll__nccl_free(coll__nccl *x);
void coll__nccl_routes_free(struct coll__nccl_routes *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(coll__nccl, coll__nccl_free)
const coll__nccl_choice *coll__nccl_chosen(const coll__nccl *x);
const char *coll__nccl_label(const coll__nccl *x);
/* Builds the channels' sub-collectives on `net`; then start once. */
gboolean coll__nccl_prepare(coll__nccl *x, comm_net *net, GError **error);
void coll__nccl_start(coll__nccl *x, void (*finished)(void *user), void *user);
uint64_t coll__nccl_flows(const coll__nccl *x);

#endif
