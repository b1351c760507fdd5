/* Chakra execution traces (MLCommons Chakra ET): a folder of per-rank protobuf files, read into
 * typed per-rank node arrays that the simulator turns into a task graph (sim/chakra.c).
 *
 * A trace folder holds `PREFIX.RANK.et` for RANK = 0..N-1 (one prefix), and optionally
 * `comm_group.json`, ASTRA-sim's map from a process-group name to its ranks
 * ({"1": [0, 1, 2, 3], ...}). Each file is a varint-length-prefixed GlobalMetadata message and
 * then varint-length-prefixed Node messages (workloads/chakra/et_def.proto). Files are streamed:
 * memory grows with the nodes kept (about 64 bytes each plus dependencies), never with the file,
 * and one message may not exceed WL_CHAKRA_MAX_MESSAGE_BYTES.
 *
 * Every problem is DT_ERROR_INPUT with one line naming the file, the node (id and name) and what
 * is wrong: truncated files, files that are not Chakra traces, node types outside the schema,
 * duplicate ids, dependencies on nodes that do not exist, cycles, groups naming ranks outside
 * the trace. */
#ifndef DTSIM_WL_CHAKRA_H
#define DTSIM_WL_CHAKRA_H

#include <glib.h>
#include <stdint.h>

/* Largest message (metadata or node) accepted, bytes. */
#define WL_CHAKRA_MAX_MESSAGE_BYTES (16u << 20)
/* Most nodes in one trace folder (all ranks): bounds the memory at a few GB. */
#define WL_CHAKRA_MAX_NODES (UINT32_C(1) << 26)
/* Most ranks. */
#define WL_CHAKRA_MAX_RANKS 1000000u
/* Streams above this number are taken as this one. */
#define WL_CHAKRA_MAX_STREAM ((1u << 30) - 1)
/* No group: the collective spans every rank of the trace. */
#define WL_CHAKRA_WORLD UINT32_MAX

/* The schema's node types (NodeType), INVALID_NODE excluded. */
typedef enum {
  WL_CHAKRA_METADATA = 1,
  WL_CHAKRA_MEM_LOAD = 2,
  WL_CHAKRA_MEM_STORE = 3,
  WL_CHAKRA_COMP = 4,
  WL_CHAKRA_SEND = 5,
  WL_CHAKRA_RECV = 6,
  WL_CHAKRA_COLL = 7,
} wl_chakra_type;

/* The schema's collective types (CollectiveCommType). */
typedef enum {
  WL_CHAKRA_ALL_REDUCE = 0,
  WL_CHAKRA_REDUCE = 1,
  WL_CHAKRA_ALL_GATHER = 2,
  WL_CHAKRA_GATHER = 3,
  WL_CHAKRA_SCATTER = 4,
  WL_CHAKRA_BROADCAST = 5,
  WL_CHAKRA_ALL_TO_ALL = 6,
  WL_CHAKRA_REDUCE_SCATTER = 7,
  WL_CHAKRA_REDUCE_SCATTER_BLOCK = 8,
  WL_CHAKRA_BARRIER = 9,
  WL_CHAKRA_COMM_TYPES
} wl_chakra_comm;

/* "all-reduce", ...; "?" out of range. */
const char *wl_chakra_comm_name(wl_chakra_comm c);

typedef struct {
  uint64_t id;              /* the node's id in its file */
  const char *name;         /* interned in the trace */
  uint64_t duration_ps;     /* duration_micros x 10^6; 0 when not recorded */
  uint64_t flops;           /* num_ops: floating-point operations */
  uint64_t bytes;           /* compute: tensor_size; communication: comm_size (or tensor_size) */
  uint32_t group;           /* collectives: index into the trace's groups, or WL_CHAKRA_WORLD */
  uint32_t stream;          /* the "stream" attribute (the converter's CUDA stream), 0 if none */
  int32_t peer;             /* send: comm_dst; receive: comm_src */
  int32_t tag;              /* comm_tag, 0 if none */
  uint32_t first_dep;       /* into the rank's deps: node indices of this rank */
  uint32_t n_deps;
  uint8_t type;             /* wl_chakra_type */
  uint8_t comm;             /* wl_chakra_comm, collectives */
  uint8_t cpu;              /* is_cpu_op */
} wl_chakra_node;

typedef struct {
  char *path;               /* the rank's file */
  wl_chakra_node *nodes;
  uint32_t n_nodes;
  uint32_t *deps;           /* indices of nodes of this rank */
  uint32_t n_deps;
  uint32_t *order;          /* the nodes in a dependency order, file order among free ones */
  const char *algorithm;    /* the global metadata's comm_algorithm (dtsim's traces), or NULL */
} wl_chakra_rank;

typedef struct {
  char *name;               /* pg_name */
  uint32_t *ranks;
  uint32_t n;
} wl_chakra_group;

typedef struct {
  char *dir;
  uint32_t n_ranks;
  wl_chakra_rank *ranks;
  GPtrArray *groups;        /* wl_chakra_group* */
  char *groups_path;        /* comm_group.json, or NULL when the folder has none */
  uint64_t n_nodes;         /* over all ranks */
  GStringChunk *names;
} wl_chakra_trace;

/* Reads every rank of the trace folder `dir`; `what` names the option in messages. */
wl_chakra_trace *wl_chakra_load(const char *dir, const char *what, GError **error);
/* Reads one rank's file (the rest of the trace is for groups: `groups` maps pg_name to an index
 * of `group_list`, or is NULL when every collective spans the world). For tests. */
gboolean wl_chakra__read_rank(const char *path, GHashTable *groups, GStringChunk *names,
                              uint64_t *budget_nodes, wl_chakra_rank *out, GError **error);
void wl_chakra_free(wl_chakra_trace *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(wl_chakra_trace, wl_chakra_free)

/* "FILE: node ID (NAME)" for messages about a node. */
char *wl_chakra_node_where(const wl_chakra_rank *r, uint32_t node);

#endif
