/* Writing Chakra execution traces: one `PREFIX.RANK.et` per rank in a folder (a varint-length-
 * prefixed GlobalMetadata, then varint-length-prefixed Nodes, workloads/chakra/et_def.proto),
 * and `comm_group.json` with the ranks of each process group (the file ASTRA-sim takes as its
 * communicator-group configuration). Ranks are written one after the other, so that one file is
 * open at a time whatever the number of ranks; each file is written to a temporary name and
 * renamed at the end of its rank (dt_outfile). */
#ifndef DTSIM_TRACE_CHAKRA_OUT_H
#define DTSIM_TRACE_CHAKRA_OUT_H

#include <glib.h>
#include <stdint.h>

#include "wl_chakra.h"   /* the schema's node and collective types */

typedef struct {
  uint64_t id;
  const char *name;
  int type;                   /* wl_chakra_type */
  uint64_t duration_micros;   /* compute: its time; 0 leaves it out */
  uint64_t num_ops;           /* compute: FLOPs, 0 leaves it out */
  uint64_t tensor_size;       /* compute: bytes it moves, 0 leaves it out */
  gboolean is_cpu_op;
  int64_t stream;             /* the stream of the rank it runs on, -1 leaves it out */
  int comm_type;              /* collectives: wl_chakra_comm */
  uint64_t comm_size;         /* communication: bytes */
  const char *pg_name;        /* collectives: process group, NULL for none */
  int32_t comm_src, comm_dst, comm_tag;   /* send and receive */
  const uint64_t *data_deps;
  uint32_t n_data_deps;
  const uint64_t *ctrl_deps;  /* order only: the node before it on its stream */
  uint32_t n_ctrl_deps;
} trace_chakra_node;

typedef struct trace_chakra_out trace_chakra_out;

/* Creates the folder if needed; `what` names the option in messages. */
trace_chakra_out *trace_chakra_out_new(const char *dir, const char *prefix, const char *what,
                                       GError **error);
/* Names, in the global metadata of the files begun after it (attribute comm_algorithm, a
 * string), the collective algorithm the job was simulated with; dtsim's reader takes it as
 * the default of --allreduce, other readers ignore it. */
void trace_chakra_out_set_algorithm(trace_chakra_out *w, const char *name);
/* Starts rank `rank`'s file (the previous one must be ended). */
gboolean trace_chakra_out_begin(trace_chakra_out *w, uint32_t rank, GError **error);
gboolean trace_chakra_out_node(trace_chakra_out *w, const trace_chakra_node *n, GError **error);
gboolean trace_chakra_out_end(trace_chakra_out *w, GError **error);
/* Adds a process group to comm_group.json (written by _close). */
void trace_chakra_out_group(trace_chakra_out *w, const char *name, const uint32_t *ranks,
                            uint32_t n);
gboolean trace_chakra_out_close(trace_chakra_out *w, GError **error);
void trace_chakra_out_free(trace_chakra_out *w);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(trace_chakra_out, trace_chakra_out_free)

/* Checks before a run that `dir` is a folder that can be written, or can be made. */
gboolean trace_chakra_out_check(const char *dir, const char *what, GError **error);

#endif
