/* Placement of jobs on the nodes of one cluster (see placement.h). */
#include "placement.h"

#include "util.h"

#include <string.h>

/* One node number of a list: digits only, at most max_node. */
static gboolean parse_node(const char *text, const char *where, uint32_t max_node, uint32_t *out,
                           GError **error)
{
  g_autofree char *t = g_strstrip(g_strdup(text));
  char *end = NULL;
  if (!g_ascii_isdigit(t[0])) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' is not a node number", where, text);
    return FALSE;
  }
  guint64 v = g_ascii_strtoull(t, &end, 10);
  if (*end != '\0') {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' is not a node number", where, text);
    return FALSE;
  }
  if (v > max_node) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "%s: node %s is out of range: the cluster has %" G_GUINT64_FORMAT
                " node%s (0-%u)", where, t, (guint64)max_node + 1, max_node ? "s" : "",
                max_node);
    return FALSE;
  }
  *out = (uint32_t)v;
  return TRUE;
}

gboolean sim_place_parse_list(const char *text, const char *where, uint32_t max_node,
                              GArray **out, GError **error)
{
  g_autoptr(GArray) nodes = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_auto(GStrv) items = g_strsplit(text, ",", -1);
  for (char **it = items; *it; it++) {
    g_auto(GStrv) ends = g_strsplit(*it, "-", 3);
    uint32_t a, b;
    if (!ends[0] || (ends[1] && ends[2])) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: '%s' is not a node or a range A-B", where, *it);
      return FALSE;
    }
    if (!parse_node(ends[0], where, max_node, &a, error) ||
        !parse_node(ends[1] ? ends[1] : ends[0], where, max_node, &b, error))
      return FALSE;
    if (b < a) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: range %u-%u runs backwards", where, a,
                  b);
      return FALSE;
    }
    for (uint32_t v = a;; v++) {
      if (!g_hash_table_add(seen, GUINT_TO_POINTER(v + 1))) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: node %u is named twice", where, v);
        return FALSE;
      }
      g_array_append_val(nodes, v);
      if (v == b)
        break;
    }
  }
  if (nodes->len == 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: names no node", where);
    return FALSE;
  }
  *out = g_steal_pointer(&nodes);
  return TRUE;
}

gboolean sim_place_jobs(sim_place_request *reqs, guint n, uint32_t cluster_nodes,
                        const char *cluster_where, GError **error)
{
  /* owner[v]: 1 + the request that holds node v, 0 while free. */
  g_autofree guint *owner = g_new0(guint, cluster_nodes);
  for (guint i = 0; i < n; i++) {
    sim_place_request *r = &reqs[i];
    r->placed = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    if (!r->list)
      continue;
    for (guint k = 0; k < r->list->len; k++) {
      uint32_t v = g_array_index(r->list, uint32_t, k);
      if (v >= cluster_nodes) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "%s: node %u is out of range: the cluster has %u node%s (0-%u, %s)",
                    r->where, v, cluster_nodes, cluster_nodes == 1 ? "" : "s", cluster_nodes - 1,
                    cluster_where);
        return FALSE;
      }
      if (owner[v]) {
        const sim_place_request *o = &reqs[owner[v] - 1];
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                    "%s: node %u is also job %s's (%s): node lists must not overlap", r->where,
                    v, o->job, o->where);
        return FALSE;
      }
      owner[v] = i + 1;
      g_array_append_val(r->placed, v);
    }
  }
  uint32_t next = 0;   /* every node below is taken */
  for (guint i = 0; i < n; i++) {
    sim_place_request *r = &reqs[i];
    if (r->list)
      continue;
    uint32_t free_nodes = 0;
    for (uint32_t v = next; v < cluster_nodes; v++)
      free_nodes += owner[v] == 0;
    if (r->nodes > free_nodes) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: %u nodes, but %u of the cluster's %u are left (%s)", r->where, r->nodes,
                  free_nodes, cluster_nodes, cluster_where);
      return FALSE;
    }
    for (uint32_t k = 0; k < r->nodes; next++) {
      if (owner[next])
        continue;
      owner[next] = i + 1;
      g_array_append_val(r->placed, next);
      k++;
    }
  }
  return TRUE;
}

void sim_place_clear(sim_place_request *reqs, guint n)
{
  for (guint i = 0; i < n; i++)
    g_clear_pointer(&reqs[i].placed, g_array_unref);
}
