/* FSDP's per-block gathers and reductions, HSDP's collectives, ZeRO-Offload's transfers (see
 * fsdp.h). */
#include "fsdp.h"

#include "framework_keys.h"
#include "util.h"

/* A gather of block j: after the gathers before it (stream order) and after block
 * j - 1 - prefetch has run. */
static sim_task_id add_gather(sim_graph *g, const sim_fsdp_pass *x, uint32_t j, const char *name)
{
  sim_task_id t = sim_graph_add_compute(g, x->comm, name, "dp", x->gather_ps, 0, 0);
  sim_graph_depend(g, x->pieces[j], t);
  if (j >= x->prefetch + 1)
    sim_graph_depend(g, t, x->pieces[j - 1 - x->prefetch]);
  return t;
}

sim_task_id sim__fsdp_add_pass(sim_graph *g, const sim_fsdp_pass *x)
{
  char gname[48], rname[48];
  g_snprintf(gname, sizeof gname, "allgather params c%u block", x->chunk);
  g_snprintf(rname, sizeof rname, "reduce-scatter grads c%u block", x->chunk);
  gboolean gathers = x->gather_ps > 0;
  /* The first 1 + prefetch gathers have nothing of this pass to wait for. */
  uint32_t ahead = MIN(x->n, x->prefetch + 1);
  for (uint32_t j = 0; gathers && j < ahead; j++)
    add_gather(g, x, j, gname);
  sim_task_id last = 0;
  for (uint32_t j = 0; j < x->n; j++) {
    /* Block j's end frees a buffer: the gather prefetch + 1 blocks on goes first (the next
     * compute waits for it), then block j's reduction. */
    if (gathers && j + ahead < x->n)
      add_gather(g, x, j + ahead, gname);
    if (x->reduce_ps > 0) {
      last = sim_graph_add_compute(g, x->comm, rname, "dp", x->reduce_ps, 0, 0);
      sim_graph_depend(g, last, x->pieces[j]);
    }
  }
  return last;
}

uint32_t sim__dp_steps(comm_coll_op op, uint32_t D, uint32_t T, uint32_t G, uint64_t bytes,
                       sim_dp_step steps[2])
{
  if (G == 0 || G >= D || op == COMM_COLL_ALLREDUCE) {
    steps[0] = (sim_dp_step){op, D, T, T, 1, bytes};
    return 1;
  }
  /* A sharding group is G data-parallel ranks T apart; with one tensor rank the D / G groups
   * are G apart and run at once, else the T groups of the first sharding group stand for them
   * (the others sit on other nodes when G x T fills the nodes). */
  steps[0] = (sim_dp_step){op, G, T, T == 1 ? D / G : T, T == 1 ? G : 1, bytes};
  if (op != COMM_COLL_REDUCE_SCATTER)
    return 1;
  /* The replicas' allreduce of each shard: D / G ranks G T apart, G T such groups at once. */
  steps[1] = (sim_dp_step){COMM_COLL_ALLREDUCE, D / G, G * T, G * T, 1, bytes / G};
  return 2;
}

gboolean sim__dp_coll_time(sim_coll_timer *ct, comm_coll_op op, uint32_t D, uint32_t T,
                           uint32_t G, uint64_t bytes, sim_time_ps *out, GError **error)
{
  sim_dp_step steps[2];
  uint32_t n = sim__dp_steps(op, D, T, G, bytes, steps);
  *out = 0;
  for (uint32_t i = 0; i < n; i++) {
    sim_time_ps t;
    if (!sim_coll_timer_time(ct, steps[i].op, 0, steps[i].n, steps[i].stride, steps[i].groups,
                             steps[i].group_stride, steps[i].bytes, &t, error))
      return FALSE;
    *out += t;
  }
  return TRUE;
}

double sim__pcie_s(uint64_t bytes, double Bps)
{
  return Bps > 0 ? (double)bytes / Bps : 0;
}

/* ---- The 3-D strategy's side ------------------------------------------------------------------ */

#define SIM_DROP_SHARD_GROUP "shard group does not divide dp"
#define SIM_DROP_SHARD_ZERO "a shard group needs ZeRO (--zero 1-3)"
#define SIM_DROP_OFFLOAD_ZERO "offload needs ZeRO (--zero 1-3)"

const char *sim__3d_check_framework(const sim_3d_opts *o, uint64_t dp, GError **error)
{
  if (o->shard_group) {
    if (o->zero == 0) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--shard-group %u: shards ZeRO state over "
                  "part of the data-parallel group; give --zero 1, 2 or 3", o->shard_group);
      return SIM_DROP_SHARD_ZERO;
    }
    if (o->shard_group > dp || dp % o->shard_group) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--shard-group %u does not divide the %"
                  G_GUINT64_FORMAT " data-parallel ranks (--dp)", o->shard_group, dp);
      return SIM_DROP_SHARD_GROUP;
    }
  }
  if (o->offload != SIM_OFFLOAD_NONE && o->zero == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--offload %s: ZeRO-Offload moves ZeRO's "
                "partitions to the host; give --zero 1, 2 or 3",
                sim_offload_name((sim_offload)o->offload));
    return SIM_DROP_OFFLOAD_ZERO;
  }
  return NULL;
}

gboolean sim__3d_framework_load(const sim_3d_opts *o, const comm_topology *topo, uint32_t dp,
                                wl_framework **fw, uint32_t *G, double *pcie_Bps,
                                GError **error)
{
  *fw = wl_framework_load(o->framework ? o->framework : "megatron", "--framework", error);
  if (!*fw)
    return FALSE;
  if (!(*fw)->transformers) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--framework %s: a CNN framework on CPUs (%s "
                "states only [cpu]), not one for transformers", (*fw)->name, (*fw)->path);
    return FALSE;
  }
  *G = o->shard_group ? o->shard_group : dp;
  *pcie_Bps = 0;
  if (o->offload == SIM_OFFLOAD_NONE)
    return TRUE;
  if ((*fw)->host_adam_params_per_s <= 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--offload %s: framework %s (%s) states no "
                "host optimizer rate ([offload] host_adam_gparams_per_s)",
                sim_offload_name((sim_offload)o->offload), (*fw)->name, (*fw)->path);
    return FALSE;
  }
  const comm_system *sys = comm_topology_system(topo);
  if (!sys || !sys->pcie) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--offload %s: the system has no PCIe fabric "
                "between its devices and the host", sim_offload_name((sim_offload)o->offload));
    return FALSE;
  }
  *pcie_Bps = sys->pcie->bandwidth_GBps * 1e9 * (sys->pcie->efficiency > 0 ? sys->pcie->efficiency : 1);
  return TRUE;
}

gboolean sim__3d_per_block(const sim_3d_opts *o, const wl_framework *fw, uint32_t G)
{
  return fw->gather_per_block && o->zero >= 2 && G > 1;
}

void sim__3d_offload_memory(unsigned offload, uint64_t params, uint32_t G, unsigned zero,
                            sim_3d_metrics *m)
{
  m->host_bytes = 0;
  if (offload == SIM_OFFLOAD_NONE)
    return;
  uint64_t shard = zero >= 1 ? (params + G - 1) / MAX(G, 1u) : params;
  m->host_bytes = m->optimizer_bytes + shard * 4;
  m->optimizer_bytes = 0;
  if (offload == SIM_OFFLOAD_GRADIENTS)
    m->gradients_bytes = 0;
}

void sim__3d_framework_values(const sim_search_ctx *c, GPtrArray *out)
{
  (void)c;
  sim_search_add_value(out, "framework=megatron");
  sim_search_add_value(out, "framework=fsdp-compile");
}

void sim__3d_shard_group_values(const sim_search_ctx *c, GPtrArray *out)
{
  g_ptr_array_add(out, g_strdup(""));   /* the whole data-parallel group */
  if (c->nodes > 1)
    sim_search_add_value(out, "shard-group=%" G_GUINT64_FORMAT, c->devices_per_node);
}

void sim__3d_offload_values(const sim_search_ctx *c, GPtrArray *out)
{
  (void)c;
  g_ptr_array_add(out, g_strdup(""));   /* none */
  sim_search_add_value(out, "offload=optimizer");
}

#define SIM_DROP_FRAMEWORK_ZERO "a per-block framework without ZeRO 2-3 gathers nothing per block"

#define SIM_DROP_SHARD_CHUNK "the search tries sharding groups with per-block frameworks (HSDP)"

/* Whether the framework `name` gathers parameters per block: 1 or 0, -1 when it does not load.
 * Remembered by name for the life of the process (a catalog entry or a file, which does not
 * change while dtsim runs): the search asks it of every combination that passes the checks,
 * tens of thousands, and reading the file each time was 40% of the search's enumeration. */
static int gathers_per_block(const char *name)
{
  static GMutex lock;
  static GHashTable *memo;   /* name -> 1 + gathers per block */
  g_mutex_lock(&lock);
  if (!memo)
    memo = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  int known = GPOINTER_TO_INT(g_hash_table_lookup(memo, name)) - 1;
  g_mutex_unlock(&lock);
  if (known >= 0)
    return known;
  g_autoptr(wl_framework) fw = wl_framework_load(name, "--framework", NULL);
  if (!fw)
    return -1;
  int per_block = fw->gather_per_block ? 1 : 0;
  g_mutex_lock(&lock);
  g_hash_table_insert(memo, g_strdup(name), GINT_TO_POINTER(1 + per_block));
  g_mutex_unlock(&lock);
  return per_block;
}

const char *sim__3d_framework_bound(const sim_framework_opts *fo, unsigned zero)
{
  if (!fo->framework)
    return NULL;
  int per_block = gathers_per_block(fo->framework);
  if (per_block < 0)
    return NULL;
  if (per_block && zero < 2)
    return SIM_DROP_FRAMEWORK_ZERO;
  if (!per_block && fo->shard_group)
    return SIM_DROP_SHARD_CHUNK;
  return NULL;
}
