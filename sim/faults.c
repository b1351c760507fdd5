/* Stragglers and failed links (see faults.h; docs/faults.md). */
#include "faults.h"
#include "strategy.h"

#include "util.h"

#include <math.h>
#include <string.h>

/* "DEVICE:FACTOR": a rank or nodeN/devK, and a factor in [1, 1000]. */
static gboolean parse_straggler(const char *item, const char *where, void *out, GError **error)
{
  sim_straggler *st = out;
  memset(st, 0, sizeof *st);
  g_strlcpy(st->text, item, sizeof st->text);
  const char *colon = strrchr(item, ':');
  if (!colon || colon == item) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' is not DEVICE:FACTOR (e.g. 5:1.3 or "
                "node1/dev3:1.3)", where, item);
    return FALSE;
  }
  g_autofree char *device = g_strndup(item, (gsize)(colon - item));
  if (!dt_parse_double(colon + 1, where, 1, 1000, &st->factor, error))
    return FALSE;
  unsigned node, local;
  char tail;
  if (g_ascii_isdigit(device[0])) {
    if (!dt_parse_int64(device, where, 0, INT32_MAX, &st->rank, error))
      return FALSE;
  } else if (sscanf(device, "node%u/dev%u%c", &node, &local, &tail) == 2) {
    st->rank = -1;
    st->node = node;
    st->local = local;
  } else {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' is not a device (a rank such as 5, "
                "or nodeN/devK as traces name it)", where, device);
    return FALSE;
  }
  return TRUE;
}

/* "A-B": two vertex names (which hold no '-'). */
static gboolean parse_link(const char *item, const char *where, void *out, GError **error)
{
  comm_link_name *l = out;
  memset(l, 0, sizeof *l);
  const char *dash = strchr(item, '-');
  if (!dash || dash == item || dash[1] == '\0' || strchr(dash + 1, '-') ||
      (gsize)(dash - item) >= sizeof l->a || strlen(dash + 1) >= sizeof l->b) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' is not A-B, two vertices as traces "
                "name them (e.g. node0/nic0-leaf0, leaf0-spine3, node0/dev0-node0/dev1)", where,
                item);
    return FALSE;
  }
  memcpy(l->a, item, (gsize)(dash - item));
  g_strlcpy(l->b, dash + 1, sizeof l->b);
  return TRUE;
}

static const sim_key faults_keys[] = {
    {"straggler", SIM_KEY_ITEM_LIST, SIM_KEY_OFF(stragglers), .parse = parse_straggler,
     .item_size = sizeof(sim_straggler), .commands = SIM_OPTS_RUN, .arg = "DEVICE:FACTOR",
     .help = "repeatable: that device (rank or nodeN/devK) computes FACTOR times slower "
             "(1.1 = 10% slower)"},
    {"link-down", SIM_KEY_ITEM_LIST, SIM_KEY_OFF(links_down), .parse = parse_link,
     .item_size = sizeof(comm_link_name), .commands = SIM_OPTS_CLUSTER, .arg = "A-B",
     .help = "repeatable: the link between vertices A and B (as --trace names them: "
             "node0/nic0-leaf0, leaf0-spine3...) has failed; routes avoid it"},
};
const sim_key_group sim_keys_faults = SIM_KEY_GROUP("faults", 0, faults_keys);

gboolean sim_faults_check(const sim_scenario *s, GError **error)
{
  if (s->links_down && s->net_model == COMM_NET_ANALYTIC) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: the analytic network times collectives in "
                "closed form and sees no route; failed links need --net-model flow",
                sim_scenario_where(s, "link-down"));
    return FALSE;
  }
  const sim_strategy *st = s->strategy ? sim_strategy_for_scenario(s, NULL) : NULL;
  unsigned flags = st ? sim_strategy_flags_for(st, s) : 0;
  if (s->links_down && (flags & SIM_STRATEGY_TRANSFORMER) && s->symmetry &&
      sim_scenario_given(s, "symmetry")) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: a folded --strategy 3d run simulates one "
                "pipeline and times its collectives on the groups of its first stage, so it "
                "would miss a failed link elsewhere: leave --symmetry out or give it off (every "
                "device simulated)", sim_scenario_where(s, "link-down"));
    return FALSE;
  }
  if (s->stragglers && (flags & SIM_STRATEGY_THREADS)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: --strategy chaos trains on the threads of "
                "one device; a straggler is a device of a cluster",
                sim_scenario_where(s, "straggler"));
    return FALSE;
  }
  return TRUE;
}

gboolean sim_faults_unfold(const sim_scenario *s)
{
  return s->stragglers != NULL && s->stragglers->len > 0;
}

void sim_faults_spec(const sim_scenario *s, comm_cluster_spec *spec)
{
  if (!s->links_down)
    return;
  spec->links_down = (const comm_link_name *)(gconstpointer)s->links_down->data;
  spec->n_links_down = s->links_down->len;
  spec->links_down_where = sim_scenario_where(s, "link-down");
}

/* The global rank of a straggler on this cluster, or -1 with an error. */
static int64_t straggler_rank(const sim_scenario *s, const sim_straggler *st,
                              const comm_topology *topo, GError **error)
{
  uint32_t G = comm_topology_devices_per_node(topo), n = comm_topology_nodes(topo);
  int64_t rank = st->rank >= 0 ? st->rank : st->node * G + st->local;
  if ((st->rank < 0 && (st->node >= n || st->local >= G)) ||
      rank >= (int64_t)comm_topology_devices(topo)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s': the cluster has %u devices (%u nodes "
                "of %u)", sim_scenario_where(s, "straggler"), st->text,
                comm_topology_devices(topo), n, G);
    return -1;
  }
  return rank;
}

gboolean sim_faults_apply(const sim_scenario *s, const comm_topology *topo, sim_plan *plan,
                          gboolean folded_3d, uint32_t tp, uint32_t pp, char *note,
                          size_t note_size, GError **error)
{
  note[0] = '\0';
  /* A 3-D plan left folded under --symmetry on was unfolded by its builder for a failed link
   * (sim_3d_opts_from_scenario). */
  const sim_strategy *strategy = sim_strategy_for_scenario(s, NULL);
  unsigned flags = strategy ? sim_strategy_flags_for(strategy, s) : 0;
  if ((flags & SIM_STRATEGY_TRANSFORMER) && !folded_3d && s->symmetry && s->links_down &&
      s->links_down->len)
    g_snprintf(note, note_size, "unfolded: %s breaks the symmetry of the pipelines and their "
               "groups; every device is simulated", sim_scenario_where(s, "link-down"));
  if (!sim_faults_unfold(s))
    return TRUE;
  uint32_t n = s->stragglers->len;
  /* The slowest factor of each unit, over the stragglers it stands for. */
  g_autofree double *factor = g_new0(double, MAX(sim_graph_n_units(plan->graph), 1));
  int64_t replica = -1;
  for (uint32_t i = 0; i < n; i++) {
    const sim_straggler *st = &g_array_index(s->stragglers, sim_straggler, i);
    int64_t rank = straggler_rank(s, st, topo, error);
    if (rank < 0)
      return FALSE;
    int64_t target = rank;
    if (folded_3d) {
      /* Megatron's ranks: tensor rank fastest, then replica, then stage. A straggler slows its
       * tensor-parallel group (whose collectives wait for it after every layer) and its replica
       * (every replica waits for the slowest at each gradient collective), so stage s of the
       * simulated replica stands for it exactly when all stragglers are in one replica. */
      uint32_t per_stage = plan->devices / pp, D = per_stage / tp;
      int64_t d = (rank / tp) % D;
      if (replica >= 0 && d != replica) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: stragglers in data-parallel replicas "
                    "%" G_GINT64_FORMAT " and %" G_GINT64_FORMAT ": --strategy 3d simulates one "
                    "replica for all, which holds for stragglers of one replica only",
                    sim_scenario_where(s, "straggler"), replica, d);
        return FALSE;
      }
      replica = d;
      target = rank / per_stage * per_stage;
    }
    gboolean found = FALSE;
    for (guint u = 0; u < plan->units->len; u++) {
      const sim_unit_info *ui = &g_array_index(plan->units, sim_unit_info, u);
      if (ui->role == SIM_UNIT_DEVICE && ui->index == (uint32_t)target) {
        factor[u] = MAX(factor[u], st->factor);
        found = TRUE;
      }
    }
    if (!found) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: device %" G_GINT64_FORMAT " is not "
                  "simulated by --strategy %s", sim_scenario_where(s, "straggler"), rank,
                  sim_scenario_strategy_name(s));
      return FALSE;
    }
  }
  for (guint u = 0; u < plan->units->len; u++)
    if (factor[u] > 0)
      sim_graph_scale_unit_compute(plan->graph, u, factor[u]);
  gboolean foldable = (flags & SIM_STRATEGY_FOLDABLE) && !(flags & SIM_STRATEGY_TRANSFORMER);
  if (folded_3d && plan->devices > pp)
    g_snprintf(note, note_size, "folded: the stragglers are in data-parallel replica %"
               G_GINT64_FORMAT ", which the simulated replica stands for (every replica waits "
               "for the slowest at each gradient collective)", replica);
  else if (!folded_3d && s->symmetry && foldable && plan->devices > 1)
    g_snprintf(note, note_size, "unfolded: %s breaks the symmetry of the %u data-parallel "
               "devices; every device is simulated", sim_scenario_where(s, "straggler"),
               plan->devices);
  return TRUE;
}
