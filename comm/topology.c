/* The cluster graph and its routing.
 *
 * Every node (worker or extra) has the same local graph: devices, host sockets, PCIe switches,
 * an NVSwitch when the layout has one, and NICs, joined by full-duplex links. Shortest paths
 * inside that graph are computed once per topology (a few dozen vertices), and every node
 * reuses them by offsetting link ids. Between nodes the route follows the closed form of the
 * inter-node topology, so nothing is stored per pair of ranks and memory is linear in nodes.
 *
 * Link ids: undirected link e joins vertices a and b; its directed link 2e runs a -> b and
 * 2e + 1 runs b -> a. Undirected links are numbered node-local links first (node n's local
 * link l is n * LL + l), then one link per NIC to the network (NIC side is a), then the links
 * inside the network. */
#include "comm_internal.h"

#include <math.h>
#include <string.h>

typedef enum { NET_SWITCH, NET_FATTREE, NET_RING, NET_TORUS2D, NET_TORUS3D, NET_DRAGONFLY } net_kind;

#define NO_VERTEX UINT32_MAX

struct comm_topology {
  comm_system *sys;        /* owned; intra / inter replaced by --intra / --inter */
  char *kind_text;         /* topology as given */
  uint32_t nodes, extra, total_nodes;
  uint32_t G;              /* devices per node */
  char *G_where;           /* where G was given when not the system's ("--devices-per-node") */
  gboolean host_layout;    /* devices are the sockets */

  /* Node-local vertices: [devices][sockets][PCIe switches][NVSwitch][NICs]. */
  uint32_t V, sock_base, sw_base, nvs, nic_base;
  uint32_t S, P, N;

  /* Node-local undirected links. */
  uint32_t LL;
  uint32_t switch_link;    /* the NVSwitch's own capacity (a loop on its vertex), or NO_VERTEX */
  uint32_t mem_link;       /* socket 0's host memory (a loop on its vertex; socket k's is
                            * mem_link + k), or NO_VERTEX */
  uint32_t port_link;      /* the first root port's host-memory DMA (a loop on the port's
                            * vertex: a PCIe switch, or the device itself without switches;
                            * port_link + w for switch w, + d for device d), or NO_VERTEX */
  uint32_t *dev_socket;    /* per local device: the socket its PCIe tree hangs off */
  uint32_t *nic_socket;    /* per local NIC: likewise */
  GArray *la, *lb;         /* of uint32_t: endpoints */
  GArray *lclass;          /* of uint8_t: class index */

  /* Shortest local paths: for each ordered pair (u, v), path_len[u*V+v] directed local link
   * ids starting at path_pool[path_off[u*V+v]]. */
  uint32_t *path_off;
  uint8_t *path_len;
  GArray *path_pool;       /* of uint32_t */
  uint32_t local_max;
  uint32_t *nic_of;        /* per local vertex: local NIC index used to leave the node */
  uint8_t *pclass;         /* V x V: comm_path_class of the hardware path (devices and NICs) */
  uint8_t *bounce;         /* V x V: the route goes through host memory */
  uint32_t *pxn_via;       /* G x N: the local device through which device u reaches the NIC
                            * of rail k (NCCL's PXN), or NO_VERTEX: u uses its own NIC */

  GArray *classes;         /* of comm__link_class */
  uint8_t nic_class, net_class;

  net_kind net;
  uint32_t ft_down, ft_up, ft_leaves;      /* fat tree */
  gboolean ft_rails;                       /* rail-optimized: leaf (node / down) N + rail */
  uint32_t dims[3], ndims;                 /* ring / torus */
  uint32_t df_p, df_a, df_h, df_g;         /* dragonfly */
  uint64_t base_nic, base_net, n_links;    /* undirected link counts */
  /* A multi-node NVLink domain (docs/network.md, "NVLink domains"): `domain` consecutive worker
   * nodes reach each other's devices through their NVSwitch vertices, each joined to the
   * domain's switches by one link (base_dom + node) of class dom_class. 0: none. */
  uint32_t domain;
  uint64_t base_dom;
  uint8_t dom_class;
  uint32_t net_max;
  uint32_t route_max;

  char **names;            /* lazily filled endpoint names, per node vertex */
  GHashTable *down;        /* failed undirected links (--link-down), keys id + 1; or NULL */
  uint8_t *nvl;            /* G x G NVLink ports between local devices (point-to-point wiring) */
};

/* ---- Link classes ------------------------------------------------------------------------ */

/* `f` gives the class its small-message regime (NULL: none). */
static uint8_t add_class(comm_topology *t, double GBps, double efficiency, double latency_ns,
                         const comm_fabric *f, const char *kind)
{
  comm__link_class c = {GBps * 1e9 * efficiency, (sim_time_ps)llround(latency_ns * 1000.0), kind,
                        0, 0};
  if (f && f->small_message_bytes > 0) {
    c.small_bytes = f->small_message_bytes;
    c.small_latency_ps = (sim_time_ps)llround(f->small_message_latency_ns * 1000.0);
  }
  for (guint i = 0; i < t->classes->len; i++) {
    comm__link_class *o = &g_array_index(t->classes, comm__link_class, i);
    if (o->Bps == c.Bps && o->latency_ps == c.latency_ps && strcmp(o->kind, kind) == 0 &&
        o->small_bytes == c.small_bytes && o->small_latency_ps == c.small_latency_ps)
      return (uint8_t)i;
  }
  g_assert(t->classes->len < 255);
  g_array_append_val(t->classes, c);
  return (uint8_t)(t->classes->len - 1);
}

static void add_local_link(comm_topology *t, uint32_t a, uint32_t b, uint8_t cls)
{
  g_array_append_val(t->la, a);
  g_array_append_val(t->lb, b);
  g_array_append_val(t->lclass, cls);
  t->LL++;
}

/* ---- Node graph -------------------------------------------------------------------------- */

/* The DGX-1 hybrid cube mesh: two fully connected quads plus i -- i+4. With six NVLink ports
 * per GPU (V100) eight of the sixteen pairs carry two links; the wiring is the one NCCL's
 * topology dump and `nvidia-smi topo -m` show on a DGX-1V. */
static const struct {
  uint8_t a, b, links_v100;
} hybrid_cube[] = {
    {0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {1, 2, 2}, {1, 3, 1}, {2, 3, 2}, {4, 5, 1}, {4, 6, 1},
    {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}, {0, 4, 2}, {1, 5, 2}, {2, 6, 1}, {3, 7, 1},
};

static gboolean system_error(const comm_system *s, const char *key, GError **error,
                             const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static gboolean system_error(const comm_system *s, const char *key, GError **error,
                             const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: [system] %s: %s", s->path, key, msg);
  return FALSE;
}

/* A devices-per-node count the system cannot take: blamed on the option or key that gave it,
 * or on the system file's own devices_per_node. */
static gboolean devices_error(const comm_topology *t, GError **error, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static gboolean devices_error(const comm_topology *t, GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (!t->G_where)
    return system_error(t->sys, "devices_per_node", error, "%s", msg);
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s (system %s)", t->G_where, msg,
              t->sys->path);
  return FALSE;
}

/* Counts NVLink ports between local devices a and b (both directions). */
static void add_nvl(comm_topology *t, uint32_t a, uint32_t b, uint32_t n)
{
  if (!t->nvl)
    t->nvl = g_new0(uint8_t, (gsize)t->G * t->G);
  uint32_t sum = MIN(t->nvl[a * t->G + b] + n, 255u);
  t->nvl[a * t->G + b] = t->nvl[b * t->G + a] = (uint8_t)sum;
}

static gboolean add_nvlink_pairs(comm_topology *t, GError **error)
{
  const comm_system *s = t->sys;
  const comm_fabric *f = s->intra;
  if (s->nvlink_pairs) {
    g_auto(GStrv) items = g_strsplit(s->nvlink_pairs, ",", -1);
    for (char **it = items; *it; it++) {
      unsigned a, b, n = 1;
      char tail;
      char *item = g_strstrip(*it);
      int got = sscanf(item, "%u-%u:%u%c", &a, &b, &n, &tail);
      if (got != 3 && !(got == 2 && strchr(item, ':') == NULL))
        return system_error(s, "nvlink_pairs", error, "'%s' is not A-B:N", item);
      if (a >= t->G || b >= t->G || a == b || n == 0 || n > 64)
        return system_error(s, "nvlink_pairs", error,
                            "'%s' needs two different devices below %u and 1 to 64 links", item,
                            t->G);
      add_local_link(t, a, b, add_class(t, f->bandwidth_GBps * n, f->efficiency, f->latency_ns,
                                        f, "nvlink"));
      add_nvl(t, a, b, n);
    }
    return TRUE;
  }
  if (t->G > 8)
    return devices_error(t, error,
                         "the nvlink-hybrid-cube layout wires at most 8 devices, not %u", t->G);
  for (gsize i = 0; i < G_N_ELEMENTS(hybrid_cube); i++) {
    if (hybrid_cube[i].a >= t->G || hybrid_cube[i].b >= t->G)
      continue;
    uint32_t n = f->links_per_device >= 6 ? hybrid_cube[i].links_v100 : 1;
    add_local_link(t, hybrid_cube[i].a, hybrid_cube[i].b,
                   add_class(t, f->bandwidth_GBps * n, f->efficiency, f->latency_ns, f, "nvlink"));
    add_nvl(t, hybrid_cube[i].a, hybrid_cube[i].b, n);
  }
  return TRUE;
}

static gboolean build_node(comm_topology *t, GError **error)
{
  const comm_system *s = t->sys;
  t->S = s->sockets;
  t->P = s->sockets * s->pcie_switches_per_socket;
  t->N = s->nics_per_node;
  uint32_t dev_vertices = t->host_layout ? 0 : t->G;
  t->sock_base = dev_vertices;
  t->sw_base = t->sock_base + t->S;
  gboolean nvswitch = strcmp(s->layout, "nvswitch") == 0;
  t->nvs = nvswitch ? t->sw_base + t->P : NO_VERTEX;
  t->nic_base = t->sw_base + t->P + (nvswitch ? 1 : 0);
  t->V = t->nic_base + t->N;
  if (t->V > 65535)
    return devices_error(t, error, "a node of %u vertices is too large", t->V);

  /* Device-to-device fabric first, so that breadth-first search meets NVLink before PCIe
   * among paths of equal length. */
  if (strcmp(s->layout, "nvlink-hybrid-cube") == 0 || (s->nvlink_pairs && !nvswitch)) {
    if (!add_nvlink_pairs(t, error))
      return FALSE;
  } else if (nvswitch) {
    const comm_fabric *f = s->intra;
    uint8_t c = add_class(t, f->bandwidth_GBps * f->links_per_device, f->efficiency,
                          f->latency_ns, f, "nvswitch");
    for (uint32_t d = 0; d < t->G; d++)
      add_local_link(t, d, t->nvs, c);
  }
  /* A switch that cannot carry every port at full rate (a node's memory system standing for
   * the switch, as in dtsim-mpi's calibrated systems) is one more link, a loop on the switch
   * vertex that every path through the switch crosses in its forward direction: whatever the
   * directions of the flows, max-min sharing divides its bandwidth among them. Breadth-first
   * search never takes it (its far end is the vertex it leaves); build_paths inserts it. */
  t->switch_link = NO_VERTEX;
  if (nvswitch && s->switch_GBps > 0) {
    t->switch_link = t->LL;
    add_local_link(t, t->nvs, t->nvs, add_class(t, s->switch_GBps, 1.0, 0, NULL, "nvswitch"));
  }
  const comm_fabric *pcie = s->pcie;
  uint8_t pc = add_class(t, pcie->bandwidth_GBps, pcie->efficiency, pcie->latency_ns, pcie,
                         "pcie");
  /* Devices and NICs spread evenly and contiguously over the PCIe switches, or over the
   * sockets when there are none. Devices sit in the preset's slots: with fewer devices than the
   * preset has (--devices-per-node), the node's first devices, so that two K80 dies stay on
   * their board's switch. */
  uint32_t slots = MAX(t->G, s->devices_per_node);
  if (!t->host_layout) {
    t->dev_socket = g_new(uint32_t, t->G);
    for (uint32_t d = 0; d < t->G; d++) {
      uint32_t w = (uint32_t)((uint64_t)d * t->P / slots);
      uint32_t up = t->P ? t->sw_base + w
                         : t->sock_base + (uint32_t)((uint64_t)d * t->S / slots);
      t->dev_socket[d] = t->P ? w / s->pcie_switches_per_socket : up - t->sock_base;
      add_local_link(t, d, up, pc);
    }
  }
  for (uint32_t w = 0; w < t->P; w++)
    add_local_link(t, t->sw_base + w, t->sock_base + w / s->pcie_switches_per_socket, pc);
  uint8_t sc = add_class(t, s->socket_link_GBps, 1.0, s->socket_link_latency_ns, NULL, "socket");
  for (uint32_t a = 0; a < t->S; a++)
    for (uint32_t b = a + 1; b < t->S; b++)
      add_local_link(t, t->sock_base + a, t->sock_base + b, sc);
  t->nic_socket = g_new(uint32_t, MAX(t->N, 1));
  for (uint32_t k = 0; k < t->N; k++) {
    uint32_t w = (uint32_t)((uint64_t)k * t->P / t->N);
    uint32_t up = t->P ? t->sw_base + w : t->sock_base + (uint32_t)((uint64_t)k * t->S / t->N);
    t->nic_socket[k] = t->P ? w / s->pcie_switches_per_socket : up - t->sock_base;
    add_local_link(t, t->nic_base + k, up, pc);
  }
  /* Host-memory DMA of each root port (a PCIe switch's uplink, or a device's own link when it
   * hangs off the socket): the reads and writes that devices below the port make of host
   * memory share the port's one-way rate, as if the link were half duplex for them
   * (docs/nccl.md, "Copies through host memory"). A loop on the port's vertex that every
   * bounce between two devices crosses at each device end, whatever its direction. */
  t->port_link = NO_VERTEX;
  if (!t->host_layout) {
    t->port_link = t->LL;
    uint8_t hc = add_class(t, pcie->bandwidth_GBps, pcie->efficiency, 0, NULL, "pcie");
    uint32_t ports = t->P ? t->P : t->G;
    for (uint32_t w = 0; w < ports; w++) {
      uint32_t x = t->P ? t->sw_base + w : w;
      add_local_link(t, x, x, hc);
    }
  }
  /* Host memory, crossed by bounces through it (NCCL's SHM transport, network traffic staged
   * without GPUDirect RDMA): a loop on each socket's vertex, like the NVSwitch's. A bounce
   * writes every byte into memory and reads it out again, so the loop carries half the memory
   * bandwidth. */
  t->mem_link = NO_VERTEX;
  if (s->host_memory_GBps > 0) {
    t->mem_link = t->LL;
    uint8_t mc = add_class(t, s->host_memory_GBps / 2.0, 1.0, 0, NULL, "memory");
    for (uint32_t a = 0; a < t->S; a++)
      add_local_link(t, t->sock_base + a, t->sock_base + a, mc);
  }
  return TRUE;
}

static inline gboolean is_device_vertex(const comm_topology *t, uint32_t v)
{
  return !t->host_layout && v < t->G;
}

static inline gboolean is_nic_vertex(const comm_topology *t, uint32_t v)
{
  return v >= t->nic_base;
}

/* Inside a node a path crosses the best grade of link it can: device fabric (NVLink,
 * NVSwitch) before PCIe before the socket-to-socket link, and among paths of that grade the
 * fewest links; this is NCCL's order of path types (NVL, PIX/PXB, SYS), so GPUs of a hybrid
 * cube mesh talk over two NVLink hops rather than through the host. */
#define LINK_GRADE_MAX 2

static inline int link_grade(const comm_topology *t, uint32_t l)
{
  const char *kind = g_array_index(t->classes, comm__link_class,
                                   g_array_index(t->lclass, uint8_t, l)).kind;
  if (kind[0] == 'n')      /* nvlink, nvswitch */
    return 0;
  return kind[0] == 'p' ? 1 : 2;  /* pcie, socket */
}

/* Breadth-first search from `src` over the links of grade <= max_grade, in link order, so
 * the results are deterministic. Devices forward traffic only between two devices (NVLink forwarding as NCCL
 * does it); NICs never forward. Fills dist (UINT32_MAX: unreachable) and pred (directed local
 * link id that reached each vertex). */
static void local_bfs(const comm_topology *t, const uint32_t *adj_off, const uint32_t *adj,
                      uint32_t src, gboolean device_transit, int max_grade, uint32_t *dist,
                      uint32_t *pred, uint32_t *queue)
{
  for (uint32_t v = 0; v < t->V; v++)
    dist[v] = UINT32_MAX;
  dist[src] = 0;
  uint32_t head = 0, tail = 0;
  queue[tail++] = src;
  while (head < tail) {
    uint32_t u = queue[head++];
    if (u != src && (is_nic_vertex(t, u) || (is_device_vertex(t, u) && !device_transit)))
      continue;
    for (uint32_t i = adj_off[u]; i < adj_off[u + 1]; i++) {
      uint32_t dl = adj[i];
      uint32_t l = dl / 2;
      uint32_t w = (dl & 1) ? g_array_index(t->la, uint32_t, l) : g_array_index(t->lb, uint32_t, l);
      if (dist[w] != UINT32_MAX || link_grade(t, l) > max_grade)
        continue;
      dist[w] = dist[u] + 1;
      pred[w] = dl;
      queue[tail++] = w;
    }
  }
}

static gboolean build_paths(comm_topology *t, GError **error)
{
  uint32_t V = t->V, LL = t->LL;
  /* Adjacency in link order: directed local link ids leaving each vertex. */
  g_autofree uint32_t *deg = g_new0(uint32_t, V + 1);
  for (uint32_t l = 0; l < LL; l++) {
    deg[g_array_index(t->la, uint32_t, l)]++;
    deg[g_array_index(t->lb, uint32_t, l)]++;
  }
  g_autofree uint32_t *adj_off = g_new0(uint32_t, V + 1);
  for (uint32_t v = 0; v < V; v++)
    adj_off[v + 1] = adj_off[v] + deg[v];
  g_autofree uint32_t *fill = g_memdup2(adj_off, sizeof(uint32_t) * (V + 1));
  g_autofree uint32_t *adj = g_new(uint32_t, 2 * (size_t)LL + 1);
  for (uint32_t l = 0; l < LL; l++) {
    adj[fill[g_array_index(t->la, uint32_t, l)]++] = 2 * l;
    adj[fill[g_array_index(t->lb, uint32_t, l)]++] = 2 * l + 1;
  }

  t->path_off = g_new(uint32_t, (size_t)V * V);
  t->path_len = g_new0(uint8_t, (size_t)V * V);
  t->nic_of = g_new(uint32_t, V);
  g_autofree uint32_t *dist = g_new(uint32_t, V);
  g_autofree uint32_t *pred = g_new(uint32_t, V);
  g_autofree uint32_t *queue = g_new(uint32_t, V);
  g_autofree uint32_t *rev = g_new(uint32_t, V);
  g_autofree gboolean *assigned = g_new(gboolean, V);
  for (uint32_t u = 0; u < V; u++) {
    /* From a device, paths to other devices may forward through devices (pass 0; not on a
     * system without NVLink forwarding); every other path may not (pass 1). */
    gboolean udev = is_device_vertex(t, u);
    gboolean forward = !t->sys || t->sys->nvlink_forwarding;
    for (int pass = udev ? 0 : 1; pass < 2; pass++) {
      for (uint32_t v = 0; v < V; v++)
        assigned[v] = FALSE;
      for (int grade = 0; grade <= LINK_GRADE_MAX; grade++) {
        local_bfs(t, adj_off, adj, u, pass == 0 && forward, grade, dist, pred, queue);
        for (uint32_t v = 0; v < V; v++) {
          if ((udev && (pass == 0) != is_device_vertex(t, v)) || assigned[v])
            continue;
          size_t idx = (size_t)u * V + v;
          t->path_off[idx] = UINT32_MAX;
          if (dist[v] == UINT32_MAX)
            continue;
          assigned[v] = TRUE;
          t->path_off[idx] = t->path_pool->len;
          if (v == u)
            continue;
          if (dist[v] > 255)
            return system_error(t->sys, "layout", error, "node graph too deep");
          uint32_t n = 0;
          for (uint32_t w = v; w != u;) {
            uint32_t dl = pred[w];
            rev[n++] = dl;
            uint32_t l = dl / 2;
            w = (dl & 1) ? g_array_index(t->lb, uint32_t, l) : g_array_index(t->la, uint32_t, l);
          }
          uint32_t len = n;
          for (uint32_t i = 0; i < n; i++) {
            uint32_t dl = rev[n - 1 - i];
            g_array_append_val(t->path_pool, dl);
            uint32_t l = dl / 2;
            uint32_t head = (dl & 1) ? g_array_index(t->la, uint32_t, l)
                                     : g_array_index(t->lb, uint32_t, l);
            if (head == t->nvs && i + 1 < n && t->switch_link != NO_VERTEX) {
              uint32_t through = 2 * t->switch_link;
              g_array_append_val(t->path_pool, through);
              len++;
            }
          }
          if (len > 255)
            return system_error(t->sys, "layout", error, "node graph too deep");
          t->path_len[idx] = (uint8_t)len;
          t->local_max = MAX(t->local_max, len);
        }
      }
    }
    /* Nearest NIC; ties go round-robin by the vertex's index so that, say, two GPUs on a
     * PCIe switch with two NICs use one each. */
    t->nic_of[u] = NO_VERTEX;
    if (t->N > 0) {
      local_bfs(t, adj_off, adj, u, FALSE, LINK_GRADE_MAX, dist, pred, queue);
      uint32_t best = UINT32_MAX, ties = 0;
      for (uint32_t k = 0; k < t->N; k++) {
        uint32_t d = dist[t->nic_base + k];
        if (d < best) {
          best = d;
          ties = 1;
        } else if (d == best && d != UINT32_MAX) {
          ties++;
        }
      }
      if (best != UINT32_MAX) {
        uint32_t pick = u % ties;
        for (uint32_t k = 0; k < t->N; k++)
          if (dist[t->nic_base + k] == best && pick-- == 0) {
            t->nic_of[u] = k;
            break;
          }
      }
    }
  }
  return TRUE;
}

/* The vertex a directed local link leads to. */
static inline uint32_t link_head(const comm_topology *t, uint32_t dl)
{
  uint32_t l = dl / 2;
  return (dl & 1) ? g_array_index(t->la, uint32_t, l) : g_array_index(t->lb, uint32_t, l);
}

/* NCCL's class of the stored path u -> v: SYS when it crosses the socket link, PHB when it
 * passes through a socket, PXB through several PCIe switches, PIX through one, NVL over NVLink
 * and NVSwitch only. */
static comm_path_class path_class_of(const comm_topology *t, uint32_t u, uint32_t v)
{
  if (u == v)
    return COMM_PATH_LOC;
  size_t idx = (size_t)u * t->V + v;
  if (t->path_off[idx] == UINT32_MAX)
    return COMM_PATH_SYS;
  const uint32_t *p = &g_array_index(t->path_pool, uint32_t, t->path_off[idx]);
  uint32_t n = t->path_len[idx], switches = 0;
  gboolean host = FALSE, nvlink_only = TRUE;
  for (uint32_t i = 0; i < n; i++) {
    const char *kind = g_array_index(t->classes, comm__link_class,
                                     g_array_index(t->lclass, uint8_t, p[i] / 2)).kind;
    if (kind[0] == 's')
      return COMM_PATH_SYS;
    if (kind[0] != 'n')
      nvlink_only = FALSE;
    uint32_t w = link_head(t, p[i]);
    if (i + 1 < n && w >= t->sock_base && w < t->sw_base)
      host = TRUE;
    if (i + 1 < n && w >= t->sw_base && w < t->sw_base + t->P)
      switches++;
  }
  if (nvlink_only)
    return COMM_PATH_NVL;
  return host ? COMM_PATH_PHB : switches > 1 ? COMM_PATH_PXB : COMM_PATH_PIX;
}

/* Appends the stored path a -> b to the pool; returns its length. */
static uint32_t append_path(comm_topology *t, uint32_t a, uint32_t b)
{
  size_t idx = (size_t)a * t->V + b;
  uint32_t n = t->path_len[idx];
  for (uint32_t i = 0; i < n; i++) {
    uint32_t dl = g_array_index(t->path_pool, uint32_t, t->path_off[idx] + i);
    g_array_append_val(t->path_pool, dl);
  }
  return n;
}

/* The host-memory DMA loop of device d's root port (build_node), or NO_VERTEX for a vertex
 * that is not a device. */
static uint32_t port_loop(const comm_topology *t, uint32_t d)
{
  if (t->port_link == NO_VERTEX || !is_device_vertex(t, d))
    return NO_VERTEX;
  if (!t->P)
    return t->port_link + d;
  uint32_t slots = MAX(t->G, t->sys->devices_per_node);
  return t->port_link + (uint32_t)((uint64_t)d * t->P / slots);
}

/* Replaces the path u -> v by a bounce through the host memory of socket `sock`: u to the
 * socket, into and out of its memory, the socket to v. With `dma` (two devices talking through
 * host memory, NCCL's SHM transport) each device end crosses its root port's DMA loop too (the
 * write of u, the read of v): two devices below the same port cross it twice, as the port
 * carries the byte up and down. */
static gboolean set_bounce(comm_topology *t, uint32_t u, uint32_t v, uint32_t sock,
                           gboolean dma, GError **error)
{
  uint32_t sv = t->sock_base + sock;
  size_t idx = (size_t)u * t->V + v;
  uint32_t off = t->path_pool->len;
  uint32_t len = append_path(t, u, sv);
  uint32_t pu = dma ? port_loop(t, u) : NO_VERTEX, pv = dma ? port_loop(t, v) : NO_VERTEX;
  if (pu != NO_VERTEX) {
    uint32_t through = 2 * pu;
    g_array_append_val(t->path_pool, through);
    len++;
  }
  if (t->mem_link != NO_VERTEX) {
    uint32_t through = 2 * (t->mem_link + sock);
    g_array_append_val(t->path_pool, through);
    len++;
  }
  if (pv != NO_VERTEX) {
    uint32_t through = 2 * pv;
    g_array_append_val(t->path_pool, through);
    len++;
  }
  len += append_path(t, sv, v);
  if (len > 255)
    return system_error(t->sys, "layout", error, "node graph too deep");
  t->path_off[idx] = off;
  t->path_len[idx] = (uint8_t)len;
  t->bounce[idx] = 1;
  t->local_max = MAX(t->local_max, len);
  return TRUE;
}

/* Path classes of every pair of devices and NICs, then the bounces through host memory: GPUs
 * farther apart than the system's p2p_level (NCCL's SHM transport, through the memory of the
 * receiver's socket), and GPU-NIC traffic without GPUDirect RDMA or farther than PXB (NCCL's
 * default GDR level; staged in the memory of the GPU's socket). */
static gboolean build_bounces(comm_topology *t, GError **error)
{
  uint32_t V = t->V;
  t->pclass = g_new0(uint8_t, (size_t)V * V);
  t->bounce = g_new0(uint8_t, (size_t)V * V);
  for (uint32_t u = 0; u < V; u++)
    for (uint32_t v = 0; v < V; v++)
      t->pclass[(size_t)u * V + v] = (uint8_t)path_class_of(t, u, v);
  if (t->host_layout)
    return TRUE;
  const comm_system *s = t->sys;
  for (uint32_t u = 0; u < t->G; u++) {
    for (uint32_t v = 0; v < t->G; v++) {
      comm_path_class c = t->pclass[(size_t)u * V + v];
      if (u != v && c > COMM_PATH_NVL && c > s->p2p_level &&
          !set_bounce(t, u, v, t->dev_socket[v], TRUE, error))
        return FALSE;
    }
    for (uint32_t k = 0; k < t->N; k++) {
      uint32_t nic = t->nic_base + k;
      gboolean stage = !s->gpudirect_rdma || t->pclass[(size_t)u * V + nic] > COMM_PATH_PXB;
      if (stage && (!set_bounce(t, u, nic, t->dev_socket[u], FALSE, error) ||
                    !set_bounce(t, nic, u, t->dev_socket[u], FALSE, error)))
        return FALSE;
    }
  }
  /* Last (the bounces above are made of these paths as they were): traffic that ends or starts
   * at a socket, as a parameter server on the host CPU receives and sends it, is a DMA into or
   * out of that socket's memory, and the CPU reads each pushed byte again to aggregate it and
   * writes each pulled byte when it updates: two passes through memory per byte, like a bounce,
   * so these paths cross the socket's memory loop too. */
  if (t->mem_link != NO_VERTEX)
    for (uint32_t a = 0; a < t->S; a++) {
      uint32_t sv = t->sock_base + a;
      for (uint32_t u = 0; u < V; u++)
        if ((is_device_vertex(t, u) || is_nic_vertex(t, u)) &&
            (!set_bounce(t, u, sv, a, FALSE, error) || !set_bounce(t, sv, u, a, FALSE, error)))
          return FALSE;
    }
  return TRUE;
}

/* NCCL's PXN (src/graph/paths.cc, ncclTopoGetNetDev with NCCL_P2P_PXN_LEVEL=2, its default):
 * a GPU sending to a GPU of another node uses the NIC the receiver uses (the receiver's rail),
 * reached through the GPU local to that NIC when the two GPUs are joined by NVLink (NVLink or
 * NVSwitch only, no GPU between them: NCCL's PATH_NVL) and that GPU reaches the NIC within
 * PXB without a bounce through host memory. The GPU local to NIC k is the first whose nearest
 * NIC is k (ncclTopoGetLocalGpu). Only for a sender whose own NIC is on another rail, and only
 * on a rail-optimized fat tree, where crossing rails costs a trip through the spine: NCCL's
 * point-to-point transfers keep to one rail by PXN and its rings and trees by their graph
 * search (one NIC per channel and node), and on the other networks the NIC a transfer leaves
 * by changes nothing beyond the NICs' own load, which the model keeps on the sender's NIC. */
static void build_pxn(comm_topology *t)
{
  if (t->host_layout || !t->sys->pxn || t->N < 2 || !t->ft_rails)
    return;
  uint32_t V = t->V;
  t->pxn_via = g_new(uint32_t, (size_t)t->G * t->N);
  for (uint32_t k = 0; k < t->N; k++) {
    uint32_t p = NO_VERTEX;
    for (uint32_t d = 0; d < t->G && p == NO_VERTEX; d++)
      if (t->nic_of[d] == k)
        p = d;
    uint32_t nic = t->nic_base + k;
    gboolean near = p != NO_VERTEX && t->pclass[(size_t)p * V + nic] <= COMM_PATH_PXB &&
                    !t->bounce[(size_t)p * V + nic];
    for (uint32_t u = 0; u < t->G; u++) {
      uint32_t via = NO_VERTEX;
      size_t idx = (size_t)u * V + (near ? p : 0);
      if (near && u != p && t->nic_of[u] != k && t->pclass[idx] == COMM_PATH_NVL &&
          !t->bounce[idx]) {
        /* NVLink or NVSwitch only, without forwarding through a third GPU. */
        const uint32_t *path = &g_array_index(t->path_pool, uint32_t, t->path_off[idx]);
        gboolean direct = TRUE;
        for (uint32_t i = 0; i + 1 < t->path_len[idx]; i++)
          if (is_device_vertex(t, link_head(t, path[i])))
            direct = FALSE;
        if (direct)
          via = p;
      }
      t->pxn_via[(size_t)u * t->N + k] = via;
    }
  }
}

/* Every device and socket must reach every other one and, when there are several nodes, a NIC. */
static gboolean check_connected(const comm_topology *t, GError **error)
{
  uint32_t ends = t->sw_base; /* devices and sockets */
  for (uint32_t u = 0; u < ends; u++) {
    for (uint32_t v = 0; v < ends; v++)
      if (u != v && t->path_off[(size_t)u * t->V + v] == UINT32_MAX)
        return system_error(t->sys, "layout", error,
                            "vertex %u of a node cannot reach vertex %u (disconnected node graph)",
                            u, v);
    if (t->total_nodes > 1 && t->nic_of[u] == NO_VERTEX)
      return system_error(t->sys, "nics_per_node", error,
                          "the cluster has %u nodes but a node has no NIC to reach them",
                          t->total_nodes);
  }
  return TRUE;
}

/* ---- Inter-node topology -------------------------------------------------------------------- */

static gboolean topo_error(GError **error, const char *text, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static gboolean topo_error(GError **error, const char *text, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--topology: '%s': %s", text, msg);
  return FALSE;
}

/* The largest divisor of n not above n^(1/k), for the most nearly cubic factorisation. */
static uint32_t divisor_near_root(uint32_t n, int k)
{
  uint32_t best = 1;
  for (uint64_t d = 1;; d++) {
    uint64_t p = k == 2 ? d * d : d * d * d;
    if (p > n)
      break;
    if (n % d == 0)
      best = (uint32_t)d;
  }
  return best;
}

static gboolean parse_dims(const char *text, const char *arg, uint32_t want, uint32_t *dims,
                           uint32_t total, GError **error)
{
  g_auto(GStrv) parts = g_strsplit(arg, "x", -1);
  if (g_strv_length(parts) != want)
    return topo_error(error, text, "expected %u sizes joined by 'x'", want);
  uint64_t prod = 1;
  for (uint32_t i = 0; i < want; i++) {
    int64_t v;
    g_autoptr(GError) local = NULL;
    if (!dt_parse_int64(parts[i], "--topology", 1, 1 << 20, &v, &local))
      return topo_error(error, text, "'%s' is not a size", parts[i]);
    dims[i] = (uint32_t)v;
    prod *= (uint64_t)v;
  }
  if (prod != total)
    return topo_error(error, text, "has %" G_GUINT64_FORMAT " routers but the cluster has %u nodes",
                      prod, total);
  return TRUE;
}

/* The links of a multi-node NVLink domain, after the network's: one per worker node from its
 * NVSwitch vertex to the domain's switches, as fast as all its devices' NVLink together (the
 * domain is non-blocking: the NVL72's switch trays give every GPU its full NVLink bandwidth to
 * every other), with no latency of its own (one switch hop, as inside a node). */
static gboolean build_domain(comm_topology *t, GError **error)
{
  const comm_system *s = t->sys;
  t->domain = s->nvlink_domain_nodes > 1 && t->nvs != NO_VERTEX && t->nodes > 1
                  ? s->nvlink_domain_nodes : 0;
  if (!t->domain)
    return TRUE;
  if (!s->intra)
    return system_error(s, "nvlink_domain_nodes", error, "needs an intra-node fabric");
  const comm_fabric *f = s->intra;
  t->base_dom = t->n_links;
  t->n_links += t->nodes;
  t->dom_class = add_class(t, f->bandwidth_GBps * f->links_per_device * t->G, f->efficiency, 0,
                           NULL, "nvswitch");
  return TRUE;
}

/* Whether endpoints a and b are devices of different nodes of one NVLink domain. */
static gboolean same_domain(const comm_topology *t, comm_ep a, comm_ep b)
{
  uint32_t na = a / t->V, nb = b / t->V;
  return t->domain && na != nb && na < t->nodes && nb < t->nodes &&
         na / t->domain == nb / t->domain && is_device_vertex(t, a % t->V) &&
         is_device_vertex(t, b % t->V);
}

static gboolean build_network(comm_topology *t, GError **error)
{
  const char *text = t->kind_text;
  g_auto(GStrv) parts = g_strsplit(text, ":", 2);
  const char *name = parts[0];
  const char *arg = parts[1];
  const comm_fabric *inter = t->sys->inter;
  uint32_t n = t->total_nodes;
  uint64_t nics = (uint64_t)n * t->N;
  t->base_nic = (uint64_t)n * t->LL;
  t->base_net = t->base_nic + nics;
  uint64_t net_links = 0;
  if (strcmp(name, "switch") == 0) {
    if (arg)
      return topo_error(error, text, "switch takes no argument");
    t->net = NET_SWITCH;
    t->net_max = 0;
  } else if (strcmp(name, "fat-tree") == 0 || strcmp(name, "rail") == 0) {
    double over = 1.0;
    if (arg) {
      g_autoptr(GError) local = NULL;
      if (!dt_parse_double(arg, "--topology", 1.0, 1000.0, &over, &local))
        return topo_error(error, text, "oversubscription '%s' is not a number >= 1", arg);
    }
    uint32_t radix = inter->switch_radix;
    uint32_t down = (uint32_t)floor(radix * over / (1.0 + over) + 1e-9);
    if (down < 1 || down >= radix)
      return topo_error(error, text,
                        "oversubscription %g leaves no up or down port on a %u-port switch "
                        "(switch_radix of %s)", over, radix, inter->path);
    t->net = NET_FATTREE;
    t->ft_down = down;
    t->ft_up = radix - down;
    /* Rail-optimized (docs/network.md): NIC k of each group of `down` nodes on the group's
     * leaf of rail k, N leaves per group; `rail` asks for it on any system, `fat-tree` where
     * the system says its fabric is wired so. Otherwise the NICs fill the leaves in order. */
    t->ft_rails = (name[0] == 'r' || t->sys->rail_optimized) && t->N > 1;
    t->ft_leaves = t->ft_rails ? (uint32_t)((n + down - 1) / down) * t->N
                               : (uint32_t)((nics + down - 1) / down);
    net_links = (uint64_t)t->ft_leaves * t->ft_up;
    t->net_max = 2;
  } else if (strcmp(name, "ring") == 0 || strcmp(name, "torus2d") == 0 ||
             strcmp(name, "torus3d") == 0) {
    uint32_t want = name[0] == 'r' ? 1 : (name[5] == '2' ? 2 : 3);
    t->net = want == 1 ? NET_RING : (want == 2 ? NET_TORUS2D : NET_TORUS3D);
    t->ndims = want;
    if (want == 1) {
      if (arg)
        return topo_error(error, text, "ring takes no argument");
      t->dims[0] = n;
    } else if (arg) {
      if (!parse_dims(text, arg, want, t->dims, n, error))
        return FALSE;
    } else if (want == 2) {
      t->dims[1] = divisor_near_root(n, 2);
      t->dims[0] = n / t->dims[1];
    } else {
      t->dims[2] = divisor_near_root(n, 3);
      uint32_t rest = n / t->dims[2];
      t->dims[1] = divisor_near_root(rest, 2);
      t->dims[0] = rest / t->dims[1];
    }
    net_links = (uint64_t)n * t->ndims;
    t->net_max = 0;
    for (uint32_t d = 0; d < t->ndims; d++)
      t->net_max += t->dims[d] / 2;
  } else if (strcmp(name, "dragonfly") == 0) {
    if (arg)
      return topo_error(error, text, "dragonfly takes no argument");
    /* Balanced dragonfly (Kim, Dally, Scott, Abts, ISCA 2008): a = 2p = 2h. */
    uint32_t p = 1;
    for (;; p++) {
      uint32_t a = 2 * p;
      uint32_t g = (n + a * p - 1) / (a * p);
      if (g <= a * p + 1)
        break;
    }
    t->net = NET_DRAGONFLY;
    t->df_p = p;
    t->df_a = 2 * p;
    t->df_h = p;
    t->df_g = (n + t->df_a * p - 1) / (t->df_a * p);
    net_links = (uint64_t)t->df_g * t->df_a * (t->df_a - 1) / 2 +
                (uint64_t)t->df_g * (t->df_g - 1) / 2;
    t->net_max = 3;
  } else {
    return topo_error(error, text,
                      "unknown topology (known: switch, fat-tree[:OVERSUB], rail[:OVERSUB], ring, "
                      "torus2d[:XxY], torus3d[:XxYxZ], dragonfly)");
  }
  t->n_links = t->base_net + net_links;
  if (!build_domain(t, error))
    return FALSE;
  if (t->n_links * 2 >= UINT32_MAX)
    return topo_error(error, text, "too many links (%" G_GUINT64_FORMAT ")", t->n_links);
  double nic_GBps = inter->nic_bandwidth_GBps > 0 ? inter->nic_bandwidth_GBps
                                                   : inter->bandwidth_GBps;
  t->nic_class = add_class(t, nic_GBps, inter->efficiency, inter->latency_ns, inter, "nic");
  t->net_class = add_class(t, inter->bandwidth_GBps, inter->efficiency, inter->latency_ns, inter,
                           "net");
  /* Two paths inside the sending node with PXN (to the relaying GPU, then to its NIC). */
  t->route_max = 3 * t->local_max + t->net_max + 2;
  return TRUE;
}

/* ---- Building ------------------------------------------------------------------------------- */

static gboolean build_failures(comm_topology *t, const comm_cluster_spec *spec, GError **error);

comm_topology *comm_topology_build(const comm_cluster_spec *spec, GError **error)
{
  g_return_val_if_fail(spec != NULL, NULL);
  if (spec->system == NULL || *spec->system == '\0') {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--system: a system preset is required");
    return NULL;
  }
  if (spec->nodes < 1) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--nodes: must be at least 1");
    return NULL;
  }
  if ((uint64_t)spec->nodes + spec->extra_nodes > (1u << 24)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--nodes: %u nodes is more than supported (%u)",
                spec->nodes + spec->extra_nodes, 1u << 24);
    return NULL;
  }
  g_autoptr(comm_topology) t = g_new0(comm_topology, 1);
  t->la = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  t->lb = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  t->lclass = g_array_new(FALSE, FALSE, sizeof(uint8_t));
  t->path_pool = g_array_new(FALSE, FALSE, sizeof(uint32_t));
  t->classes = g_array_new(FALSE, FALSE, sizeof(comm__link_class));
  const char *intra_where = spec->intra_where ? spec->intra_where : "--intra";
  const char *inter_where = spec->inter_where ? spec->inter_where : "--inter";
  t->sys = comm_system_load(spec->system, spec->system_where ? spec->system_where : "--system",
                            error);
  if (!t->sys)
    return NULL;
  comm_system *s = t->sys;
  if (spec->intra) {
    comm_fabric *f = comm_fabric_load(spec->intra, intra_where, error);
    if (!f)
      return NULL;
    if (f->inter) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: '%s' is an inter-node network, not an intra-node fabric", intra_where,
                  spec->intra);
      comm_fabric_free(f);
      return NULL;
    }
    comm_fabric_free(s->intra);
    s->intra = f;
  }
  if (spec->inter) {
    comm_fabric *f = comm_fabric_load(spec->inter, inter_where, error);
    if (!f)
      return NULL;
    if (!f->inter) {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                  "%s: '%s' is an intra-node fabric, not an inter-node network", inter_where,
                  spec->inter);
      comm_fabric_free(f);
      return NULL;
    }
    comm_fabric_free(s->inter);
    s->inter = f;
  }
  t->nodes = spec->nodes;
  t->extra = spec->extra_nodes;
  t->total_nodes = spec->nodes + spec->extra_nodes;
  t->G = spec->devices_per_node ? spec->devices_per_node : s->devices_per_node;
  if (spec->devices_per_node)
    t->G_where = g_strdup(spec->devices_per_node_where ? spec->devices_per_node_where
                                                       : "--devices-per-node");
  t->host_layout = strcmp(s->layout, "host") == 0;
  if (t->G > 4096) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--devices-per-node: %u is more than 4096", t->G);
    return NULL;
  }
  if (t->host_layout && t->G != s->sockets) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "--devices-per-node: %s makes each of its %u sockets a device, so it takes %u "
                "devices per node, not %u", s->path, s->sockets, s->sockets, t->G);
    return NULL;
  }
  if ((uint64_t)t->G * t->nodes > UINT32_MAX / 2) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "--nodes: too many devices");
    return NULL;
  }
  t->kind_text = g_strdup(spec->topology && *spec->topology ? spec->topology : s->topology);
  if (!build_node(t, error) || !build_paths(t, error) || !check_connected(t, error) ||
      !build_bounces(t, error) ||
      !build_network(t, error))
    return NULL;
  build_pxn(t);
  if (!build_failures(t, spec, error))
    return NULL;
  return g_steal_pointer(&t);
}

void comm_topology_free(comm_topology *t)
{
  if (!t)
    return;
  g_free(t->G_where);
  if (t->names) {
    for (uint64_t i = 0; i < (uint64_t)t->total_nodes * t->V; i++)
      g_free(t->names[i]);
    g_free(t->names);
  }
  comm_system_free(t->sys);
  g_free(t->kind_text);
  g_array_free(t->la, TRUE);
  g_array_free(t->lb, TRUE);
  g_array_free(t->lclass, TRUE);
  g_array_free(t->path_pool, TRUE);
  g_array_free(t->classes, TRUE);
  g_free(t->path_off);
  g_free(t->path_len);
  g_free(t->nic_of);
  g_free(t->pclass);
  g_free(t->bounce);
  g_free(t->pxn_via);
  g_free(t->dev_socket);
  g_free(t->nic_socket);
  g_free(t->nvl);
  if (t->down)
    g_hash_table_unref(t->down);
  g_free(t);
}

/* ---- Queries ------------------------------------------------------------------------------- */

uint32_t comm_topology_nodes(const comm_topology *t) { return t->nodes; }
uint32_t comm_topology_devices_per_node(const comm_topology *t) { return t->G; }
uint32_t comm_topology_devices(const comm_topology *t) { return t->G * t->nodes; }
uint32_t comm_topology_sockets(const comm_topology *t) { return t->S; }
uint32_t comm_topology_extra_nodes(const comm_topology *t) { return t->extra; }
const comm_system *comm_topology_system(const comm_topology *t) { return t->sys; }
const char *comm_topology_device_kind(const comm_topology *t) { return t->sys->device; }
const char *comm_topology_kind(const comm_topology *t) { return t->kind_text; }
uint64_t comm_topology_links(const comm_topology *t) { return 2 * t->n_links; }
uint32_t comm__route_max(const comm_topology *t) { return t->route_max; }
uint32_t comm__nics_per_node(const comm_topology *t) { return t->N; }
uint32_t comm__total_nodes(const comm_topology *t) { return t->total_nodes; }
uint64_t comm__endpoints(const comm_topology *t) { return (uint64_t)t->total_nodes * t->V; }

uint32_t comm_topology_node_of(const comm_topology *t, uint32_t rank)
{
  g_return_val_if_fail(rank < t->G * t->nodes, 0);
  return rank / t->G;
}

comm_ep comm_topology_device(const comm_topology *t, uint32_t rank)
{
  g_return_val_if_fail(rank < t->G * t->nodes, 0);
  uint32_t node = rank / t->G, local = rank % t->G;
  return node * t->V + (t->host_layout ? t->sock_base + local : local);
}

comm_ep comm_topology_host(const comm_topology *t, uint32_t node, uint32_t socket)
{
  g_return_val_if_fail(node < t->total_nodes && socket < t->S, 0);
  return node * t->V + t->sock_base + socket;
}

uint32_t comm__ep_node(const comm_topology *t, comm_ep ep) { return ep / t->V; }

comm_ep comm_topology_nvswitch(const comm_topology *t, uint32_t node)
{
  g_return_val_if_fail(node < t->nodes, UINT32_MAX);
  return t->nvs == NO_VERTEX ? UINT32_MAX : node * t->V + t->nvs;
}

uint32_t comm_topology_nvlinks(const comm_topology *t, uint32_t a, uint32_t b)
{
  g_return_val_if_fail(a < t->G && b < t->G, 0);
  return t->nvl && !t->host_layout ? t->nvl[a * t->G + b] : 0;
}

comm_path_class comm_topology_path_class(const comm_topology *t, comm_ep a, comm_ep b)
{
  if (same_domain(t, a, b))
    return COMM_PATH_NVL;
  if (a / t->V != b / t->V)
    return COMM_PATH_NET;
  return (comm_path_class)t->pclass[(size_t)(a % t->V) * t->V + b % t->V];
}

gboolean comm_topology_bounces(const comm_topology *t, comm_ep a, comm_ep b)
{
  if (same_domain(t, a, b))
    return FALSE;
  if (a / t->V != b / t->V) {
    uint32_t ua = a % t->V, ub = b % t->V, ka = t->nic_of[ua], kb = t->nic_of[ub];
    gboolean recv = t->bounce[(size_t)(t->nic_base + kb) * t->V + ub];
    /* A PXN relay reaches its NIC without a bounce (build_pxn). */
    if (t->pxn_via && is_device_vertex(t, ua) && is_device_vertex(t, ub) && ka != kb &&
        t->pxn_via[(size_t)ua * t->N + kb] != NO_VERTEX)
      return recv;
    return t->bounce[(size_t)ua * t->V + t->nic_base + ka] || recv;
  }
  return t->bounce[(size_t)(a % t->V) * t->V + b % t->V] != 0;
}

uint32_t comm__ep_nic(const comm_topology *t, comm_ep ep) { return t->nic_of[ep % t->V]; }

const char *comm_topology_endpoint_name(const comm_topology *t, comm_ep ep)
{
  uint64_t count = (uint64_t)t->total_nodes * t->V;
  g_return_val_if_fail(ep < count, "?");
  comm_topology *mt = (comm_topology *)t; /* the name cache is filled lazily */
  if (!mt->names)
    mt->names = g_new0(char *, count);
  if (!mt->names[ep]) {
    uint32_t node = ep / t->V, v = ep % t->V;
    const char *prefix = node < t->nodes ? "node" : "extra";
    uint32_t idx = node < t->nodes ? node : node - t->nodes;
    if (is_device_vertex(t, v))
      mt->names[ep] = g_strdup_printf("%s%u/dev%u", prefix, idx, v);
    else if (v < t->sw_base)
      mt->names[ep] = g_strdup_printf("%s%u/cpu%u", prefix, idx, v - t->sock_base);
    else if (v < t->sw_base + t->P)
      mt->names[ep] = g_strdup_printf("%s%u/pcie%u", prefix, idx, v - t->sw_base);
    else if (v == t->nvs)
      mt->names[ep] = g_strdup_printf("%s%u/nvswitch", prefix, idx);
    else
      mt->names[ep] = g_strdup_printf("%s%u/nic%u", prefix, idx, v - t->nic_base);
  }
  return mt->names[ep];
}

const comm__link_class *comm__link_class_of(const comm_topology *t, uint32_t dlink)
{
  uint64_t e = dlink / 2;
  uint8_t c;
  if (e < t->base_nic)
    c = g_array_index(t->lclass, uint8_t, e % t->LL);
  else if (e < t->base_net)
    c = t->nic_class;
  else if (t->domain && e >= t->base_dom)
    c = t->dom_class;
  else
    c = t->net_class;
  return &g_array_index(t->classes, comm__link_class, c);
}

gboolean comm__nic_uplink(const comm_topology *t, uint32_t dlink, uint32_t *node, uint32_t *nic)
{
  uint64_t e = dlink / 2;
  if ((dlink & 1) || e < t->base_nic || e >= t->base_net)
    return FALSE;
  uint64_t k = e - t->base_nic;
  *node = (uint32_t)(k / t->N);
  *nic = (uint32_t)(k % t->N);
  return TRUE;
}

/* ---- Routing ------------------------------------------------------------------------------- */

static inline uint32_t local_path(const comm_topology *t, uint32_t node, uint32_t u, uint32_t v,
                                  uint32_t *out)
{
  size_t idx = (size_t)u * t->V + v;
  uint32_t n = t->path_len[idx];
  if (n == 0)
    return 0;
  const uint32_t *p = &g_array_index(t->path_pool, uint32_t, t->path_off[idx]);
  uint32_t base = 2 * node * t->LL;
  for (uint32_t i = 0; i < n; i++)
    out[i] = base + p[i];
  return n;
}

/* Directed link from a to b over undirected link e whose `a` side is `from_a`. */
static inline uint32_t dir(uint64_t e, gboolean from_a) { return (uint32_t)(2 * e + (from_a ? 0 : 1)); }

/* Moves along one dimension of a ring or torus of routers (a router per node); returns hops. */
static uint32_t torus_dim(const comm_topology *t, uint32_t *r, uint32_t d, uint32_t stride,
                          uint32_t to, uint32_t *out)
{
  uint32_t size = t->dims[d];
  uint32_t from = (*r / stride) % size;
  uint32_t fwd = (to + size - from) % size;
  uint32_t n = 0;
  if (fwd == 0)
    return 0;
  gboolean up = fwd <= size - fwd;
  uint32_t steps = up ? fwd : size - fwd;
  uint32_t c = from;
  uint32_t rest = *r - from * stride;
  for (uint32_t s = 0; s < steps; s++) {
    if (up) {
      out[n++] = dir(t->base_net + (uint64_t)(rest + c * stride) * t->ndims + d, TRUE);
      c = (c + 1) % size;
    } else {
      uint32_t prev = (c + size - 1) % size;
      out[n++] = dir(t->base_net + (uint64_t)(rest + prev * stride) * t->ndims + d, FALSE);
      c = prev;
    }
  }
  *r = rest + c * stride;
  return n;
}

static inline uint64_t pair_index(uint32_t i, uint32_t j, uint32_t n)
{
  /* i < j < n: index of (i, j) among the n(n-1)/2 unordered pairs. */
  return (uint64_t)i * n - (uint64_t)i * (i + 1) / 2 + (j - i - 1);
}

/* The router of group `g` that holds its global link to group `other`. */
static inline uint32_t df_gateway(const comm_topology *t, uint32_t g, uint32_t other)
{
  uint32_t slot = (other + t->df_g - g - 1) % t->df_g;
  return g * t->df_a + slot / t->df_h;
}

static uint32_t df_local(const comm_topology *t, uint32_t ra, uint32_t rb, uint32_t *out)
{
  if (ra == rb)
    return 0;
  uint32_t g = ra / t->df_a, i = ra % t->df_a, j = rb % t->df_a;
  uint64_t base = t->base_net + (uint64_t)g * t->df_a * (t->df_a - 1) / 2;
  out[0] = i < j ? dir(base + pair_index(i, j, t->df_a), TRUE)
                 : dir(base + pair_index(j, i, t->df_a), FALSE);
  return 1;
}

/* The leaf switch of the NIC with global index x (node x / N, local NIC x % N). */
static inline uint32_t ft_leaf(const comm_topology *t, uint32_t x)
{
  if (!t->ft_rails)
    return x / t->ft_down;
  return (x / t->N) / t->ft_down * t->N + x % t->N;
}

/* Links between the NICs with global indices x and y (x != y), excluding the NIC links. */
static uint32_t net_path(const comm_topology *t, uint32_t x, uint32_t y, uint32_t *out)
{
  switch (t->net) {
  case NET_SWITCH:
    return 0;
  case NET_FATTREE: {
    uint32_t lx = ft_leaf(t, x), ly = ft_leaf(t, y);
    if (lx == ly)
      return 0;
    /* Destination-mod-k: the up port (and spine) is chosen by the destination's port on its
     * leaf. With the NICs in order that port is y mod d, and y mod u is the same port mod u
     * (u divides d at 1:1); in rails it is the node's place in its leaf group: NIC k of every
     * node is y = node N + k, and y mod u would send a leaf's traffic to a rail up through
     * only u / gcd(N, u) of its spines (4 of 32 with 8 rails). */
    uint32_t spine = t->ft_rails ? (y / t->N) % t->ft_down % t->ft_up : y % t->ft_up;
    out[0] = dir(t->base_net + (uint64_t)lx * t->ft_up + spine, TRUE);
    out[1] = dir(t->base_net + (uint64_t)ly * t->ft_up + spine, FALSE);
    return 2;
  }
  case NET_RING:
  case NET_TORUS2D:
  case NET_TORUS3D: {
    uint32_t r = x / t->N, to = y / t->N;
    uint32_t n = 0, stride = 1;
    for (uint32_t d = 0; d < t->ndims; d++) {
      n += torus_dim(t, &r, d, stride, (to / stride) % t->dims[d], out + n);
      stride *= t->dims[d];
    }
    return n;
  }
  case NET_DRAGONFLY: {
    uint32_t rs = (x / t->N) / t->df_p, rd = (y / t->N) / t->df_p;
    uint32_t gs = rs / t->df_a, gd = rd / t->df_a;
    if (gs == gd)
      return df_local(t, rs, rd, out);
    uint32_t ga = df_gateway(t, gs, gd), gb = df_gateway(t, gd, gs);
    uint32_t n = df_local(t, rs, ga, out);
    uint64_t gbase = t->base_net + (uint64_t)t->df_g * t->df_a * (t->df_a - 1) / 2;
    out[n++] = gs < gd ? dir(gbase + pair_index(gs, gd, t->df_g), TRUE)
                       : dir(gbase + pair_index(gd, gs, t->df_g), FALSE);
    n += df_local(t, gb, rd, out + n);
    return n;
  }
  }
  return 0;
}

static uint32_t route_avoiding(const comm_topology *t, comm_ep src, comm_ep dst, uint32_t *out);

/* The route with every link up. */
static uint32_t route_default(const comm_topology *t, comm_ep src, comm_ep dst, uint32_t *out)
{
  uint32_t ns = src / t->V, nd = dst / t->V;
  uint32_t us = src % t->V, ud = dst % t->V;
  if (ns == nd)
    return src == dst ? 0 : local_path(t, ns, us, ud, out);
  if (same_domain(t, src, dst)) {
    uint32_t n = local_path(t, ns, us, t->nvs, out);
    out[n++] = dir(t->base_dom + ns, TRUE);
    out[n++] = dir(t->base_dom + nd, FALSE);
    return n + local_path(t, nd, t->nvs, ud, out + n);
  }
  uint32_t ks = t->nic_of[us], kd = t->nic_of[ud];
  /* A host process (a parameter server) talking to a device uses the NIC of the device's rail
   * when that NIC hangs off the host's socket, as NCCL's rings keep every channel on one rail:
   * a server's traffic spreads over its socket's NICs instead of crowding the nearest one. */
  if (t->N > 1 && !t->host_layout) {
    gboolean hs = us >= t->sock_base && us < t->sw_base, hd = ud >= t->sock_base && ud < t->sw_base;
    if (hs && is_device_vertex(t, ud) && t->nic_socket[kd] == us - t->sock_base)
      ks = kd;
    else if (hd && is_device_vertex(t, us) && t->nic_socket[ks] == ud - t->sock_base)
      kd = ks;
  }
  uint32_t n = 0;
  /* PXN: a device whose NIC is on another rail than the receiver's hands the data over NVLink
   * to the device beside the receiver's NIC (build_pxn), so the network part stays on one
   * rail. */
  if (t->pxn_via && is_device_vertex(t, us) && is_device_vertex(t, ud) && ks != kd) {
    uint32_t via = t->pxn_via[(size_t)us * t->N + kd];
    if (via != NO_VERTEX) {
      n = local_path(t, ns, us, via, out);
      us = via;
      ks = kd;
    }
  }
  n += local_path(t, ns, us, t->nic_base + ks, out + n);
  uint32_t x = ns * t->N + ks, y = nd * t->N + kd;
  out[n++] = dir(t->base_nic + x, TRUE);
  n += net_path(t, x, y, out + n);
  out[n++] = dir(t->base_nic + y, FALSE);
  n += local_path(t, nd, t->nic_base + kd, ud, out + n);
  return n;
}

uint32_t comm__route(const comm_topology *t, comm_ep src, comm_ep dst, uint32_t *out)
{
  if (G_UNLIKELY(t->down != NULL))
    return route_avoiding(t, src, dst, out);
  return route_default(t, src, dst, out);
}

/* ---- Failed links (--link-down) -------------------------------------------------------------
 *
 * A failed link is an undirected link id in t->down. The default routes stand where they cross
 * no failed link; the others are found again: inside a node by breadth-first search that skips
 * the node's failed links (NVLink and NVSwitch paths first, then PCIe, then the socket link, as
 * build_paths ranks them), to another node through the sender's NIC if it still reaches the
 * network and otherwise the nearest one that does (the same on the receiving side, without
 * PXN), and through the first spine, counting up from the default one, whose two links are up.
 * build_failures() refuses a set of failures that leaves some pair without a route. */

static inline gboolean link_down(const comm_topology *t, uint64_t e)
{
  return g_hash_table_contains(t->down, GSIZE_TO_POINTER((gsize)e + 1));
}

static gboolean route_up(const comm_topology *t, const uint32_t *route, uint32_t n)
{
  for (uint32_t i = 0; i < n; i++)
    if (link_down(t, route[i] / 2))
      return FALSE;
  return TRUE;
}

/* A path u -> v inside `node` over links that are up, written to out (global directed ids);
 * UINT32_MAX when none is left. As local_bfs: NICs never forward, devices only between two
 * devices. */
static uint32_t local_path_up(const comm_topology *t, uint32_t node, uint32_t u, uint32_t v,
                              uint32_t *out)
{
  if (u == v)
    return 0;
  gboolean transit = is_device_vertex(t, u) && is_device_vertex(t, v);
  g_autofree uint32_t *dist = g_new(uint32_t, t->V);
  g_autofree uint32_t *pred = g_new(uint32_t, t->V);
  g_autofree uint32_t *queue = g_new(uint32_t, t->V);
  uint64_t base = (uint64_t)node * t->LL;
  for (int grade = 0; grade <= LINK_GRADE_MAX; grade++) {
    for (uint32_t w = 0; w < t->V; w++)
      dist[w] = UINT32_MAX;
    dist[u] = 0;
    uint32_t head = 0, tail = 0;
    queue[tail++] = u;
    while (head < tail && dist[v] == UINT32_MAX) {
      uint32_t x = queue[head++];
      if (x != u && (is_nic_vertex(t, x) || (is_device_vertex(t, x) && !transit)))
        continue;
      for (uint32_t l = 0; l < t->LL; l++) {
        uint32_t a = g_array_index(t->la, uint32_t, l), b = g_array_index(t->lb, uint32_t, l);
        if (a == b || (a != x && b != x) || link_grade(t, l) > grade || link_down(t, base + l))
          continue;
        uint32_t y = a == x ? b : a;
        if (dist[y] != UINT32_MAX)
          continue;
        dist[y] = dist[x] + 1;
        pred[y] = a == x ? 2 * l : 2 * l + 1;
        queue[tail++] = y;
      }
    }
    if (dist[v] == UINT32_MAX)
      continue;
    /* Walk back, then write forward; through the NVSwitch add its own capacity's loop. */
    uint32_t n = 0;
    for (uint32_t w = v; w != u; w = link_head(t, pred[w] ^ 1))
      queue[n++] = pred[w];
    uint32_t len = 0;
    for (uint32_t i = n; i-- > 0;) {
      out[len++] = (uint32_t)(2 * base) + queue[i];
      if (link_head(t, queue[i]) == t->nvs && i > 0 && t->switch_link != NO_VERTEX)
        out[len++] = (uint32_t)(2 * (base + t->switch_link));
    }
    return len;
  }
  return UINT32_MAX;
}

/* The NIC by which vertex u of `node` reaches the network: its own when its link to the network
 * is up and a path to it is left, else the nearest such NIC (lowest index among equals);
 * UINT32_MAX when none. The path from u to it (or from it to u, `to_nic` FALSE) goes to out. */
static uint32_t nic_up(const comm_topology *t, uint32_t node, uint32_t u, gboolean to_nic,
                       uint32_t *out, uint32_t *len)
{
  uint32_t best = UINT32_MAX, best_len = UINT32_MAX;
  g_autofree uint32_t *buf = g_new(uint32_t, 3 * (size_t)t->V + 2);
  for (uint32_t i = 0; i <= t->N; i++) {
    /* The vertex's own NIC first, then the others in order. */
    uint32_t k = i == 0 ? t->nic_of[u] : i - 1;
    if (k == NO_VERTEX || (i > 0 && k == t->nic_of[u]) ||
        link_down(t, t->base_nic + (uint64_t)node * t->N + k))
      continue;
    uint32_t nic = t->nic_base + k;
    uint32_t n = to_nic ? local_path_up(t, node, u, nic, buf) : local_path_up(t, node, nic, u, buf);
    if (n == UINT32_MAX || (i > 0 && n >= best_len))
      continue;
    best = k;
    best_len = n;
    memcpy(out, buf, n * sizeof *out);
    if (i == 0)
      break;
  }
  *len = best_len;
  return best;
}

/* Links between NICs x and y that are up: the fat tree's default spine or the next one up. */
static uint32_t net_path_up(const comm_topology *t, uint32_t x, uint32_t y, uint32_t *out)
{
  uint32_t n = net_path(t, x, y, out);
  if (route_up(t, out, n) || t->net != NET_FATTREE || n != 2)
    return route_up(t, out, n) ? n : UINT32_MAX;
  uint64_t lx = (out[0] / 2 - t->base_net) / t->ft_up, ly = (out[1] / 2 - t->base_net) / t->ft_up;
  uint32_t first = (uint32_t)((out[0] / 2 - t->base_net) % t->ft_up);
  for (uint32_t i = 1; i < t->ft_up; i++) {
    uint32_t spine = (first + i) % t->ft_up;
    out[0] = dir(t->base_net + lx * t->ft_up + spine, TRUE);
    out[1] = dir(t->base_net + ly * t->ft_up + spine, FALSE);
    if (route_up(t, out, 2))
      return 2;
  }
  return UINT32_MAX;
}

/* A route that avoids the failed links, or 0 links when none is left (build_failures refuses
 * such clusters, so a run never meets one). */
static uint32_t route_avoiding(const comm_topology *t, comm_ep src, comm_ep dst, uint32_t *out)
{
  uint32_t n = route_default(t, src, dst, out);
  if (route_up(t, out, n))
    return n;
  uint32_t ns = src / t->V, nd = dst / t->V, us = src % t->V, ud = dst % t->V;
  if (ns == nd) {
    n = local_path_up(t, ns, us, ud, out);
    return n == UINT32_MAX ? 0 : n;
  }
  uint32_t a, b;
  uint32_t ks = nic_up(t, ns, us, TRUE, out, &a);
  if (ks == UINT32_MAX)
    return 0;
  n = a;
  uint32_t x = ns * t->N + ks;
  out[n++] = dir(t->base_nic + x, TRUE);
  g_autofree uint32_t *tail = g_new(uint32_t, 3 * (size_t)t->V + 2);
  uint32_t kd = nic_up(t, nd, ud, FALSE, tail, &b);
  if (kd == UINT32_MAX)
    return 0;
  uint32_t y = nd * t->N + kd;
  uint32_t m = net_path_up(t, x, y, out + n);
  if (m == UINT32_MAX)
    return 0;
  n += m;
  out[n++] = dir(t->base_nic + y, FALSE);
  memcpy(out + n, tail, b * sizeof *out);
  return n + b;
}

/* The switches of the network by name: "switch", "leafN", "spineN". UINT32_MAX: not one. */
typedef enum { SW_NONE, SW_SWITCH, SW_LEAF, SW_SPINE } switch_kind;

static switch_kind parse_switch(const comm_topology *t, const char *name, uint32_t *index)
{
  unsigned v;
  char tail;
  if (t->net == NET_SWITCH && strcmp(name, "switch") == 0) {
    *index = 0;
    return SW_SWITCH;
  }
  if (t->net == NET_FATTREE && sscanf(name, "leaf%u%c", &v, &tail) == 1 && v < t->ft_leaves) {
    *index = v;
    return SW_LEAF;
  }
  if (t->net == NET_FATTREE && sscanf(name, "spine%u%c", &v, &tail) == 1 && v < t->ft_up) {
    *index = v;
    return SW_SPINE;
  }
  return SW_NONE;
}

/* A vertex of a node by its name ("node3/nic1"): FALSE when not one. */
static gboolean parse_vertex(const comm_topology *t, const char *name, uint32_t *node,
                             uint32_t *v)
{
  for (uint32_t k = 0; k < 2; k++) {
    const char *prefix = k == 0 ? "node" : "extra";
    size_t len = strlen(prefix);
    if (strncmp(name, prefix, len) != 0)
      continue;
    char *end = NULL;
    guint64 idx = g_ascii_strtoull(name + len, &end, 10);
    uint32_t limit = k == 0 ? t->nodes : t->extra;
    if (end == name + len || *end != '/' || idx >= limit)
      return FALSE;
    uint32_t nd = k == 0 ? (uint32_t)idx : t->nodes + (uint32_t)idx;
    for (uint32_t w = 0; w < t->V; w++)
      if (strcmp(comm_topology_endpoint_name(t, (comm_ep)((uint64_t)nd * t->V + w)), name) == 0) {
        *node = nd;
        *v = w;
        return TRUE;
      }
    return FALSE;
  }
  return FALSE;
}

/* Marks the link between the two named vertices as down. */
static gboolean mark_down(comm_topology *t, const comm_link_name *l, const char *where,
                          GError **error)
{
  uint32_t na, va, nb, vb, sa, sb;
  gboolean a_node = parse_vertex(t, l->a, &na, &va), b_node = parse_vertex(t, l->b, &nb, &vb);
  switch_kind ka = a_node ? SW_NONE : parse_switch(t, l->a, &sa);
  switch_kind kb = b_node ? SW_NONE : parse_switch(t, l->b, &sb);
  if ((!a_node && ka == SW_NONE) || (!b_node && kb == SW_NONE)) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' is not a vertex of this cluster "
                "(nodeN/devK, nodeN/nicK, nodeN/nvswitch, nodeN/cpuK, nodeN/pcieK; %s)", where,
                (!a_node && ka == SW_NONE) ? l->a : l->b,
                t->net == NET_FATTREE ? "leafN, spineN"
                : t->net == NET_SWITCH ? "switch" : "no network switch can fail on this topology");
    return FALSE;
  }
  gboolean found = FALSE;
  if (a_node && b_node) {
    for (uint32_t i = 0; na == nb && i < t->LL; i++) {
      uint32_t x = g_array_index(t->la, uint32_t, i), y = g_array_index(t->lb, uint32_t, i);
      if (x != y && ((x == va && y == vb) || (x == vb && y == va))) {
        g_hash_table_add(t->down, GSIZE_TO_POINTER((gsize)((uint64_t)na * t->LL + i) + 1));
        found = TRUE;
      }
    }
  } else if (a_node != b_node) {
    /* A NIC and the switch of the network it plugs into. */
    uint32_t node = a_node ? na : nb, v = a_node ? va : vb, sw = a_node ? sb : sa;
    switch_kind k = a_node ? kb : ka;
    if (is_nic_vertex(t, v)) {
      uint32_t x = node * t->N + (v - t->nic_base);
      if (k == SW_SWITCH || (k == SW_LEAF && ft_leaf(t, x) == sw)) {
        g_hash_table_add(t->down, GSIZE_TO_POINTER((gsize)(t->base_nic + x) + 1));
        found = TRUE;
      }
    }
  } else if ((ka == SW_LEAF && kb == SW_SPINE) || (ka == SW_SPINE && kb == SW_LEAF)) {
    uint32_t leaf = ka == SW_LEAF ? sa : sb, spine = ka == SW_LEAF ? sb : sa;
    g_hash_table_add(t->down,
                     GSIZE_TO_POINTER((gsize)(t->base_net + (uint64_t)leaf * t->ft_up + spine) + 1));
    found = TRUE;
  }
  if (!found) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: no link joins %s and %s", where, l->a, l->b);
    return FALSE;
  }
  return TRUE;
}

/* Marks the failed links and refuses a cluster they cut: every pair of devices of a node with a
 * failed link inside it must still be joined, every device of a node with a failed link must
 * still reach a NIC that reaches the network, and every leaf must still share a working spine
 * with every other leaf. */
static gboolean build_failures(comm_topology *t, const comm_cluster_spec *spec, GError **error)
{
  if (spec->n_links_down == 0)
    return TRUE;
  const char *where = spec->links_down_where ? spec->links_down_where : "--link-down";
  t->down = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (uint32_t i = 0; i < spec->n_links_down; i++)
    if (!mark_down(t, &spec->links_down[i], where, error))
      return FALSE;
  /* Rerouted paths inside a node may be longer than the stored ones. */
  t->route_max = 3 * MAX(t->local_max, 2 * t->V + 1) + t->net_max + 2;
  g_autofree uint32_t *buf = g_new(uint32_t, t->route_max);
  g_autoptr(GHashTable) nodes = g_hash_table_new(g_direct_hash, g_direct_equal);
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, t->down);
  while (g_hash_table_iter_next(&it, &key, NULL)) {
    uint64_t e = GPOINTER_TO_SIZE(key) - 1;
    if (e < t->base_nic)
      g_hash_table_add(nodes, GUINT_TO_POINTER((uint32_t)(e / t->LL) + 1));
    else if (e < t->base_net)
      g_hash_table_add(nodes, GUINT_TO_POINTER((uint32_t)((e - t->base_nic) / t->N) + 1));
  }
  g_hash_table_iter_init(&it, nodes);
  while (g_hash_table_iter_next(&it, &key, NULL)) {
    uint32_t node = GPOINTER_TO_UINT(key) - 1;
    uint32_t ends = t->sw_base;   /* devices and sockets */
    for (uint32_t u = 0; u < ends; u++) {
      for (uint32_t v = 0; v < ends; v++)
        if (u != v && local_path_up(t, node, u, v, buf) == UINT32_MAX) {
          g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: no route is left from %s to %s",
                      where, comm_topology_endpoint_name(t, node * t->V + u),
                      comm_topology_endpoint_name(t, node * t->V + v));
          return FALSE;
        }
      uint32_t len;
      if (t->total_nodes > 1 && nic_up(t, node, u, TRUE, buf, &len) == UINT32_MAX) {
        g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: %s reaches no NIC to the network",
                    where, comm_topology_endpoint_name(t, node * t->V + u));
        return FALSE;
      }
    }
  }
  if (t->net == NET_FATTREE) {
    for (uint32_t a = 0; a < t->ft_leaves; a++)
      for (uint32_t b = a + 1; b < t->ft_leaves; b++) {
        gboolean any = FALSE;
        for (uint32_t s = 0; s < t->ft_up && !any; s++)
          any = !link_down(t, t->base_net + (uint64_t)a * t->ft_up + s) &&
                !link_down(t, t->base_net + (uint64_t)b * t->ft_up + s);
        if (!any) {
          g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: no route is left between leaf%u and "
                      "leaf%u (no spine reaches both)", where, a, b);
          return FALSE;
        }
      }
  }
  return TRUE;
}

uint32_t comm_topology_links_down(const comm_topology *t)
{
  return t->down ? g_hash_table_size(t->down) : 0;
}

/* The network's switch at one end of a network link. */
static char *net_switch_name(const comm_topology *t, uint64_t e, gboolean a_side)
{
  uint64_t k = e - t->base_net;
  switch (t->net) {
  case NET_FATTREE:
    return a_side ? g_strdup_printf("leaf%" G_GUINT64_FORMAT, k / t->ft_up)
                  : g_strdup_printf("spine%" G_GUINT64_FORMAT, k % t->ft_up);
  case NET_RING:
  case NET_TORUS2D:
  case NET_TORUS3D: {
    uint32_t r = (uint32_t)(k / t->ndims), d = (uint32_t)(k % t->ndims), stride = 1;
    for (uint32_t i = 0; i < d; i++)
      stride *= t->dims[i];
    uint32_t c = (r / stride) % t->dims[d];
    uint32_t next = r - c * stride + ((c + 1) % t->dims[d]) * stride;
    return g_strdup_printf("router%u", a_side ? r : next);
  }
  case NET_SWITCH:
  case NET_DRAGONFLY:
  default:
    return g_strdup_printf("net%" G_GUINT64_FORMAT "%s", k, a_side ? "a" : "b");
  }
}

/* The vertex at the network's end of NIC x's link. */
static char *nic_switch_name(const comm_topology *t, uint32_t x)
{
  switch (t->net) {
  case NET_SWITCH:
    return g_strdup("switch");
  case NET_FATTREE:
    return g_strdup_printf("leaf%u", ft_leaf(t, x));
  case NET_RING:
  case NET_TORUS2D:
  case NET_TORUS3D:
    return g_strdup_printf("router%u", x / t->N);
  case NET_DRAGONFLY:
  default:
    return g_strdup_printf("router%u", (x / t->N) / t->df_p);
  }
}

char *comm_topology_link_name(const comm_topology *t, uint32_t dlink)
{
  uint64_t e = dlink / 2;
  gboolean fwd = (dlink & 1) == 0;
  g_autofree char *a = NULL, *b = NULL;
  if (e < t->base_nic) {
    uint32_t node = (uint32_t)(e / t->LL), l = (uint32_t)(e % t->LL);
    uint32_t x = g_array_index(t->la, uint32_t, l), y = g_array_index(t->lb, uint32_t, l);
    const char *xn = comm_topology_endpoint_name(t, (comm_ep)((uint64_t)node * t->V + x));
    if (x == y)
      return g_strdup_printf("%s (%s)", xn,
                             l == t->switch_link ? "switch"
                             : (t->port_link != NO_VERTEX && l >= t->port_link &&
                                (t->mem_link == NO_VERTEX || l < t->mem_link))
                                 ? "host DMA"
                                 : "memory");
    a = g_strdup(xn);
    b = g_strdup(comm_topology_endpoint_name(t, (comm_ep)((uint64_t)node * t->V + y)));
  } else if (e < t->base_net) {
    uint32_t x = (uint32_t)(e - t->base_nic);
    a = g_strdup(comm_topology_endpoint_name(t, (comm_ep)((uint64_t)(x / t->N) * t->V +
                                                          t->nic_base + x % t->N)));
    b = nic_switch_name(t, x);
  } else {
    a = net_switch_name(t, e, TRUE);
    b = net_switch_name(t, e, FALSE);
  }
  return fwd ? g_strdup_printf("%s-%s", a, b) : g_strdup_printf("%s-%s", b, a);
}

double comm_topology_link_Bps(const comm_topology *t, uint32_t dlink)
{
  return comm__link_class_of(t, dlink)->Bps;
}

const char *comm_topology_link_tier(const comm_topology *t, uint32_t dlink)
{
  uint64_t e = dlink / 2;
  if (e >= t->base_net)
    return t->net == NET_FATTREE ? "spine" : "network";
  if (e >= t->base_nic)
    return t->net != NET_FATTREE ? "nic" : t->ft_rails ? "rail" : "leaf";
  const char *kind = comm__link_class_of(t, dlink)->kind;
  if (kind[0] == 'n')
    return "nvlink";
  return kind[0] == 'p' ? "pcie" : "host";
}

/* Latency (sum, for a message of `bytes`) and bottleneck bandwidth (min) of a route. */
static void route_figures(const comm_topology *t, const uint32_t *route, uint32_t n, uint64_t bytes,
                          sim_time_ps *lat, double *Bps)
{
  *lat = 0;
  *Bps = 0.0;
  for (uint32_t i = 0; i < n; i++) {
    const comm__link_class *c = comm__link_class_of(t, route[i]);
    *lat = sim_time_add_sat(*lat, comm__link_latency(c, bytes));
    if (i == 0 || c->Bps < *Bps)
      *Bps = c->Bps;
  }
}

uint32_t comm_topology_hops(const comm_topology *t, comm_ep src, comm_ep dst)
{
  g_autofree uint32_t *buf = g_new(uint32_t, t->route_max);
  return comm__route(t, src, dst, buf);
}

double comm_topology_route_Bps(const comm_topology *t, comm_ep src, comm_ep dst)
{
  g_autofree uint32_t *buf = g_new(uint32_t, t->route_max);
  sim_time_ps lat;
  double bw;
  route_figures(t, buf, comm__route(t, src, dst, buf), 0, &lat, &bw);
  return bw;
}

sim_time_ps comm_topology_route_latency(const comm_topology *t, comm_ep src, comm_ep dst)
{
  g_autofree uint32_t *buf = g_new(uint32_t, t->route_max);
  sim_time_ps lat;
  double bw;
  route_figures(t, buf, comm__route(t, src, dst, buf), 0, &lat, &bw);
  return lat;
}

sim_time_ps comm__p2p_time_buf(const comm_topology *t, comm_ep src, comm_ep dst, uint64_t bytes,
                               uint32_t *buf)
{
  uint32_t n;
  return comm__p2p_time_route(t, src, dst, bytes, buf, &n);
}

sim_time_ps comm__p2p_time_route(const comm_topology *t, comm_ep src, comm_ep dst,
                                 uint64_t bytes, uint32_t *buf, uint32_t *hops)
{
  *hops = 0;
  if (src == dst)
    return 0;
  sim_time_ps lat;
  double bw;
  *hops = comm__route(t, src, dst, buf);
  route_figures(t, buf, *hops, bytes, &lat, &bw);
  return sim_time_add_sat(lat, sim_time_for_work((double)bytes, bw));
}

sim_time_ps comm_topology_p2p_time(const comm_topology *t, comm_ep src, comm_ep dst,
                                   uint64_t bytes)
{
  g_autofree uint32_t *buf = g_new(uint32_t, t->route_max);
  return comm__p2p_time_buf(t, src, dst, bytes, buf);
}
