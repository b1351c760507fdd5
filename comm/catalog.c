/* Reading the network catalogs: fabrics and networks (comm/catalog/fabrics/NAME.ini) and node
 * presets (comm/catalog/systems/NAME.ini). The schema is in docs/network.md. Every value is
 * checked here, once, so the topology builder can trust the structs it gets. */
#include "comm_internal.h"

#include <string.h>

static const char *const fabric_keys[] = {
    "description", "scope", "bandwidth_GBps", "latency_ns", "efficiency", "links_per_device",
    "switch_radix", "nic_bandwidth_GBps", "small_message_bytes", "small_message_latency_ns",
    "nvls_efficiency", "collnet_sharp", "in_order_writes", NULL};

static const char *const system_keys[] = {
    "description", "device", "devices_per_node", "layout", "intra", "inter", "pcie",
    "nics_per_node", "sockets", "pcie_switches_per_socket", "socket_link_GBps",
    "socket_link_latency_ns", "topology", "nvlink_pairs", "switch_bandwidth_GBps", "p2p_level",
    "gpudirect_rdma", "host_memory_GBps", "rail_optimized", "pxn", "nvlink_domain_nodes",
    "nvlink_forwarding", NULL};

static const char *const layouts[] = {"nvlink-hybrid-cube", "nvswitch", "pcie-tree", "single",
                                      "host", NULL};

void comm_fabric_free(comm_fabric *f)
{
  if (!f)
    return;
  g_free(f->name);
  g_free(f->path);
  g_free(f->description);
  g_free(f);
}

static gboolean get_u32(const dt_ini *ini, const char *group, const char *key, gboolean required,
                        int64_t min, int64_t max, uint32_t *out, GError **error)
{
  int64_t v = *out;
  if (!dt_ini_int64(ini, group, key, required, min, max, &v, error))
    return FALSE;
  *out = (uint32_t)v;
  return TRUE;
}

/* An optional yes/no key (also true/false); `out` keeps its value when the key is absent. */
static gboolean get_bool(const dt_ini *ini, const char *group, const char *key, gboolean *out,
                         GError **error)
{
  if (!dt_ini_has(ini, group, key))
    return TRUE;
  g_autofree char *v = dt_ini_string(ini, group, key, TRUE, error);
  if (!v)
    return FALSE;
  if (g_ascii_strcasecmp(v, "yes") == 0 || g_ascii_strcasecmp(v, "true") == 0)
    *out = TRUE;
  else if (g_ascii_strcasecmp(v, "no") == 0 || g_ascii_strcasecmp(v, "false") == 0)
    *out = FALSE;
  else
    return dt_ini_error(ini, group, key, error, "'%s' is not yes or no", v);
  return TRUE;
}

/* Reads the [fabric] keys from `group` of `ini`. `scope_required` is FALSE for the inline
 * [intra] / [inter] groups of a system file, whose scope follows from the group name. */
comm_fabric *comm__fabric_from_group(const dt_ini *ini, const char *group, const char *name,
                                     gboolean scope_required, gboolean inter_default,
                                     GError **error)
{
  if (!dt_ini_check_keys(ini, group, fabric_keys, error))
    return NULL;
  g_autoptr(comm_fabric) f = g_new0(comm_fabric, 1);
  f->name = g_strdup(name);
  f->path = g_strdup(dt_ini_path(ini));
  f->efficiency = 1.0;
  f->links_per_device = 1;
  f->switch_radix = 36;
  f->inter = inter_default;
  /* Inline groups are often machine-written (dtsim-mpi): their description may be left out. */
  f->description = dt_ini_string(ini, group, "description", scope_required, error);
  if (!f->description && scope_required)
    return NULL;
  if (!f->description)
    f->description = g_strdup_printf("%s (inline)", name);
  g_autofree char *scope = NULL;
  if (scope_required || dt_ini_has(ini, group, "scope")) {
    scope = dt_ini_string(ini, group, "scope", TRUE, error);
    if (!scope)
      return NULL;
    if (strcmp(scope, "intra") == 0)
      f->inter = FALSE;
    else if (strcmp(scope, "inter") == 0)
      f->inter = TRUE;
    else {
      dt_ini_error(ini, group, "scope", error, "'%s' is not intra or inter", scope);
      return NULL;
    }
  }
  /* Bandwidths from 1 MB/s to 100 TB/s and latencies up to 1 s cover every real link and
   * keep picosecond arithmetic far from overflow. */
  if (!dt_ini_double(ini, group, "bandwidth_GBps", TRUE, 1e-3, 1e5, &f->bandwidth_GBps, error) ||
      !dt_ini_double(ini, group, "latency_ns", TRUE, 0.0, 1e9, &f->latency_ns, error) ||
      !dt_ini_double(ini, group, "efficiency", FALSE, 1e-3, 1.0, &f->efficiency, error) ||
      !get_u32(ini, group, "links_per_device", FALSE, 1, 64, &f->links_per_device, error) ||
      !get_u32(ini, group, "switch_radix", FALSE, 2, 100000, &f->switch_radix, error) ||
      !dt_ini_double(ini, group, "nvls_efficiency", FALSE, 0.0, 1.0, &f->nvls_efficiency, error) ||
      !get_bool(ini, group, "collnet_sharp", &f->collnet_sharp, error))
    return NULL;
  f->in_order_writes = TRUE;
  if (!get_bool(ini, group, "in_order_writes", &f->in_order_writes, error))
    return NULL;
  f->nic_bandwidth_GBps = f->bandwidth_GBps;
  if (!dt_ini_double(ini, group, "nic_bandwidth_GBps", FALSE, 1e-3, 1e5, &f->nic_bandwidth_GBps,
                     error))
    return NULL;
  /* A second, cheaper regime for small messages (an eager protocol): both keys or neither, and
   * a small message never starts later than a large one. */
  gboolean has_bytes = dt_ini_has(ini, group, "small_message_bytes");
  gboolean has_lat = dt_ini_has(ini, group, "small_message_latency_ns");
  if (has_bytes != has_lat) {
    dt_ini_error(ini, group, has_bytes ? "small_message_bytes" : "small_message_latency_ns", error,
                 "give small_message_bytes and small_message_latency_ns together");
    return NULL;
  }
  if (has_bytes &&
      (!dt_ini_size(ini, group, "small_message_bytes", TRUE, &f->small_message_bytes, error) ||
       !dt_ini_double(ini, group, "small_message_latency_ns", TRUE, 0.0, f->latency_ns,
                      &f->small_message_latency_ns, error)))
    return NULL;
  return g_steal_pointer(&f);
}

comm_fabric *comm_fabric_load(const char *name, const char *what, GError **error)
{
  g_autoptr(dt_ini) ini = dt_catalog_load("comm/catalog/fabrics", name, what, "fabric", error);
  if (!ini)
    return NULL;
  return comm__fabric_from_group(ini, "fabric", name, TRUE, FALSE, error);
}

void comm_system_free(comm_system *s)
{
  if (!s)
    return;
  g_free(s->name);
  g_free(s->path);
  g_free(s->description);
  g_free(s->device);
  g_free(s->layout);
  g_free(s->topology);
  g_free(s->nvlink_pairs);
  comm_fabric_free(s->intra);
  comm_fabric_free(s->inter);
  comm_fabric_free(s->pcie);
  g_free(s);
}

/* A fabric named by `key` of [system], or given inline in group `inline_group`. The fabric's
 * scope must match: an InfiniBand network is no intra-node fabric. */
static gboolean system_fabric(const dt_ini *ini, const char *sysname, const char *key,
                              const char *inline_group, gboolean want_inter, gboolean required,
                              comm_fabric **out, GError **error)
{
  GKeyFile *kf = dt_ini_keyfile(ini);
  if (inline_group && g_key_file_has_group(kf, inline_group)) {
    if (dt_ini_has(ini, "system", key))
      return dt_ini_error(ini, "system", key, error,
                          "given both here and as group [%s]; keep one", inline_group);
    /* Named after the system (not its path) so that listings do not depend on the folder. */
    g_autofree char *inline_name = g_strdup_printf("%s[%s]", sysname, inline_group);
    *out = comm__fabric_from_group(ini, inline_group, inline_name, FALSE, want_inter, error);
    if (!*out)
      return FALSE;
    if ((*out)->inter != want_inter)
      return dt_ini_error(ini, inline_group, "scope", error, "must be %s here",
                          want_inter ? "inter" : "intra");
    return TRUE;
  }
  g_autofree char *name = dt_ini_string(ini, "system", key, required, error);
  if (!name)
    return !required;
  g_autofree char *what = g_strdup_printf("%s:%d: [system] %s", dt_ini_path(ini),
                                          dt_ini_line(ini, "system", key), key);
  *out = comm_fabric_load(name, what, error);
  if (!*out)
    return FALSE;
  if ((*out)->inter != want_inter)
    return dt_ini_error(ini, "system", key, error, "'%s' is an %s fabric; an %s one is needed",
                        name, (*out)->inter ? "inter-node" : "intra-node",
                        want_inter ? "inter-node" : "intra-node");
  return TRUE;
}

comm_system *comm_system_load(const char *name, const char *what, GError **error)
{
  g_autoptr(dt_ini) ini = dt_catalog_load("comm/catalog/systems", name, what, "system", error);
  if (!ini)
    return NULL;
  const char *path = dt_ini_path(ini);
  GKeyFile *kf = dt_ini_keyfile(ini);
  g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
  for (char **g = groups; *g; g++)
    if (strcmp(*g, "system") != 0 && strcmp(*g, "intra") != 0 && strcmp(*g, "inter") != 0) {
      dt_ini_error(ini, *g, NULL, error, "unknown group (expected [system], [intra], [inter])");
      return NULL;
    }
  if (!dt_ini_check_keys(ini, "system", system_keys, error))
    return NULL;

  g_autoptr(comm_system) s = g_new0(comm_system, 1);
  s->name = g_strdup(name);
  s->path = g_strdup(path);
  s->nics_per_node = 1;
  s->sockets = 1;
  s->socket_link_GBps = 19.2;
  s->socket_link_latency_ns = 100.0;
  if (!(s->description = dt_ini_string(ini, "system", "description", TRUE, error)) ||
      !(s->device = dt_ini_string(ini, "system", "device", TRUE, error)) ||
      !(s->layout = dt_ini_string(ini, "system", "layout", TRUE, error)))
    return NULL;
  if (!g_strv_contains(layouts, s->layout)) {
    g_autofree char *list = g_strjoinv(", ", (char **)layouts);
    dt_ini_error(ini, "system", "layout", error, "unknown layout '%s' (known: %s)", s->layout,
                 list);
    return NULL;
  }
  if (!get_u32(ini, "system", "devices_per_node", TRUE, 1, 4096, &s->devices_per_node, error) ||
      !get_u32(ini, "system", "nics_per_node", FALSE, 0, 64, &s->nics_per_node, error) ||
      !get_u32(ini, "system", "sockets", FALSE, 1, 16, &s->sockets, error) ||
      !get_u32(ini, "system", "pcie_switches_per_socket", FALSE, 0, 64,
               &s->pcie_switches_per_socket, error) ||
      !dt_ini_double(ini, "system", "socket_link_GBps", FALSE, 1e-3, 1e5, &s->socket_link_GBps,
                     error) ||
      !dt_ini_double(ini, "system", "socket_link_latency_ns", FALSE, 0.0, 1e9,
                     &s->socket_link_latency_ns, error) ||
      !dt_ini_double(ini, "system", "switch_bandwidth_GBps", FALSE, 1e-3, 1e6, &s->switch_GBps,
                     error))
    return NULL;
  if (!get_u32(ini, "system", "nvlink_domain_nodes", FALSE, 0, 4096, &s->nvlink_domain_nodes,
               error))
    return NULL;
  if (s->nvlink_domain_nodes > 1 && strcmp(s->layout, "nvswitch") != 0) {
    dt_ini_error(ini, "system", "nvlink_domain_nodes", error,
                 "only the nvswitch layout spans nodes (layout here: %s)", s->layout);
    return NULL;
  }
  if (s->switch_GBps > 0 && strcmp(s->layout, "nvswitch") != 0) {
    dt_ini_error(ini, "system", "switch_bandwidth_GBps", error,
                 "only the nvswitch layout has a switch (layout here: %s)", s->layout);
    return NULL;
  }
  s->p2p_level = COMM_PATH_PXB;   /* NCCL's default: no peer-to-peer through a CPU */
  s->gpudirect_rdma = TRUE;
  s->pxn = TRUE;   /* NCCL 2.12 and later: NCCL_PXN_DISABLE=0 */
  s->nvlink_forwarding = TRUE;   /* NCCL 2's NVLink paths through an intermediate GPU */
  if (!dt_ini_double(ini, "system", "host_memory_GBps", FALSE, 1e-3, 1e6, &s->host_memory_GBps,
                     error))
    return NULL;
  if (dt_ini_has(ini, "system", "p2p_level")) {
    static const char *const levels[] = {"NVL", "PIX", "PXB", "PHB", "SYS", NULL};
    g_autofree char *lv = dt_ini_string(ini, "system", "p2p_level", TRUE, error);
    if (!lv)
      return NULL;
    int found = -1;
    for (int i = 0; levels[i]; i++)
      if (g_ascii_strcasecmp(lv, levels[i]) == 0)
        found = i;
    if (found < 0) {
      dt_ini_error(ini, "system", "p2p_level", error,
                   "'%s' is not a path class (NVL, PIX, PXB, PHB, SYS)", lv);
      return NULL;
    }
    s->p2p_level = (uint8_t)(COMM_PATH_NVL + found);
  }
  if (!get_bool(ini, "system", "gpudirect_rdma", &s->gpudirect_rdma, error) ||
      !get_bool(ini, "system", "rail_optimized", &s->rail_optimized, error) ||
      !get_bool(ini, "system", "pxn", &s->pxn, error) ||
      !get_bool(ini, "system", "nvlink_forwarding", &s->nvlink_forwarding, error))
    return NULL;
  s->topology = dt_ini_string(ini, "system", "topology", FALSE, NULL);
  if (s->topology && *s->topology == '\0') {
    /* An empty value would reach the topology builder as no topology name at all. */
    dt_ini_error(ini, "system", "topology", error, "empty value");
    return NULL;
  }
  if (!s->topology)
    s->topology = g_strdup("switch");
  s->nvlink_pairs = dt_ini_string(ini, "system", "nvlink_pairs", FALSE, NULL);

  gboolean needs_intra = strcmp(s->layout, "nvlink-hybrid-cube") == 0 ||
                         strcmp(s->layout, "nvswitch") == 0 || s->nvlink_pairs != NULL;
  g_autofree char *base = g_path_get_basename(name);
  if (g_str_has_suffix(base, ".ini"))
    base[strlen(base) - 4] = '\0';
  if (!system_fabric(ini, base, "intra", "intra", FALSE, needs_intra, &s->intra, error) ||
      !system_fabric(ini, base, "inter", "inter", TRUE, TRUE, &s->inter, error) ||
      !system_fabric(ini, base, "pcie", NULL, FALSE, TRUE, &s->pcie, error))
    return NULL;
  if (strcmp(s->layout, "host") == 0 && s->devices_per_node != s->sockets) {
    dt_ini_error(ini, "system", "devices_per_node", error,
                 "layout host makes each socket a device, so devices_per_node (%u) must equal "
                 "sockets (%u)", s->devices_per_node, s->sockets);
    return NULL;
  }
  return g_steal_pointer(&s);
}
