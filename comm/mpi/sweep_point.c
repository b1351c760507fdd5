/* PROVISIONAL dtsim_sweep_point (see sweep_point.h): sweeps the devices axis only (--devices
 * LIST; weak scaling, the per-device batch fixed), until sim/ provides the full sweep of
 * `dtsim sweep` with the same function. Then delete this file and its line in
 * comm/mpi/CMakeLists.txt; nothing else in dtsim-mpi changes. */
#include "sweep_point.h"

#include "comm_net.h"
#include "simulate.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

int dtsim_sweep_point(const sim_scenario *sweep, int index, GString *json_line, GError **error)
{
  if (sweep->nodes_list || sweep->strategy_list || sweep->allreduce_list || sweep->batch_list ||
      g_strcmp0(sweep->scaling, "weak") != 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "this build sweeps --devices only (weak scaling); the other axes come with "
                "dtsim sweep");
    return -1;
  }
  g_autoptr(GArray) devices =
      dt_parse_int_list(sweep->devices_list ? sweep->devices_list : "1", "--devices", 1,
                        1000000, error);
  if (devices == NULL)
    return -1;
  int count = (int)devices->len;
  if (index < 0 || index >= count)
    return count;

  /* D devices fill nodes of the preset's size: one node of D when D fits in one, else D / G
   * full nodes. */
  int64_t d = g_array_index(devices, int64_t, index);
  uint32_t per_node = (uint32_t)sweep->devices_per_node;
  if (per_node == 0) {
    comm_cluster_spec spec = {.system = sweep->system, .nodes = 1};
    g_autoptr(comm_topology) topo = comm_topology_build(&spec, error);
    if (topo == NULL)
      return -1;
    per_node = comm_topology_devices_per_node(topo);
  }
  /* A shallow copy of the sweep's settings with this point's cluster: the strings stay the
   * sweep's and nothing is freed here. */
  sim_scenario s = *sweep;
  s.trace = NULL;
  s.csv = NULL;
  s.plot = NULL;
  s.nodes = d <= per_node ? 1 : d / per_node;
  s.devices_per_node = d <= per_node ? d : per_node;
  if (d > per_node && d % per_node != 0) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT,
                "--devices: %" G_GINT64_FORMAT " is not a whole number of %u-device nodes", d,
                per_node);
    return -1;
  }
  sim_report rep;
  if (!sim_simulate(&s, NULL, &rep, error))
    return -1;
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  g_autofree char *extra = g_strdup_printf("\"point\":%d", index);
  sim_report_print_json(mem, &rep, extra);
  fclose(mem);
  g_string_append_len(json_line, buf, (gssize)(len && buf[len - 1] == '\n' ? len - 1 : len));
  free(buf);
  return count;
}
