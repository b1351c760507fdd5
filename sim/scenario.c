/* Scenario options and files (see scenario.h). One table describes every key: its name (the
 * same in INI files and on the command line), its type and range, and which commands take it.
 * Both the INI reader and the option parser go through the same validators. */
#include "scenario.h"

#include "util.h"

#include <stddef.h>
#include <string.h>

typedef enum { K_STRING, K_INT, K_DOUBLE, K_ONOFF, K_FLAG, K_CHOICE } key_kind;

typedef struct {
  const char *name;        /* option --name and INI key name */
  key_kind kind;
  size_t offset;           /* into sim_scenario */
  int64_t min, max;        /* K_INT; K_DOUBLE uses them as bounds too */
  const char *choices;     /* K_CHOICE: '|'-separated */
  sim_opts_set set;
  const char *arg;         /* argument name in --help */
  const char *help;
} key_spec;

#define OFF(f) offsetof(sim_scenario, f)
#define ALL (SIM_OPTS_RUN | SIM_OPTS_SWEEP | SIM_OPTS_COLLECTIVE)
#define RS (SIM_OPTS_RUN | SIM_OPTS_SWEEP)
#define MAX_DEVICES 1000000

static const key_spec keys[] = {
    {"model", K_STRING, OFF(model), 0, 0, NULL, RS, "NAME|FILE", "zoo model or workload file"},
    {"batch", K_INT, OFF(batch), 1, 1 << 24, NULL, RS, "N", "per-device mini-batch, samples"},
    {"precision", K_CHOICE, OFF(precision), 0, 0, "fp32|tf32|fp16|bf16|amp", RS, "P",
     "arithmetic precision of compute"},
    {"system", K_STRING, OFF(system), 0, 0, NULL, ALL, "NAME|FILE", "catalog node preset"},
    {"device", K_STRING, OFF(device), 0, 0, NULL, ALL, "NAME|FILE", "device kind, overriding the preset"},
    {"nodes", K_INT, OFF(nodes), 1, MAX_DEVICES, NULL, ALL, "N", "number of nodes"},
    {"devices-per-node", K_INT, OFF(devices_per_node), 1, 4096, NULL, ALL, "G",
     "devices per node (default: the system's)"},
    {"intra", K_STRING, OFF(intra), 0, 0, NULL, ALL, "NAME|FILE", "intra-node fabric"},
    {"inter", K_STRING, OFF(inter), 0, 0, NULL, ALL, "NAME|FILE", "inter-node network"},
    {"topology", K_STRING, OFF(topology), 0, 0, NULL, ALL, "NAME",
     "switch, fat-tree[:OVERSUB], ring, torus2d, torus3d, dragonfly"},
    {"strategy", K_CHOICE, OFF(strategy), 0, 0, "dp|ps|mp|pp|hybrid", SIM_OPTS_RUN, "S",
     "dp, ps, mp, pp or hybrid"},
    {"allreduce", K_STRING, OFF(allreduce), 0, 0, NULL, SIM_OPTS_RUN, "NAME",
     "allreduce algorithm (see 'dtsim list algorithms')"},
    {"ps-count", K_INT, OFF(ps_count), 1, MAX_DEVICES, NULL, RS, "K", "parameter servers"},
    {"ps-placement", K_CHOICE, OFF(ps_placement), 0, 0, "cpu|gpu|colocated|dedicated", RS, "P",
     "where parameter servers run"},
    {"overlap", K_ONOFF, OFF(overlap), 0, 0, NULL, RS, "on|off",
     "gradient buckets overlap backward compute"},
    {"net-model", K_CHOICE, OFF(net_model), 0, 0, "analytic|flow", ALL, "M", "network fidelity"},
    {"iterations", K_INT, OFF(iterations), 1, 100000, NULL, RS, "N", "iterations to simulate"},
    {"threads", K_INT, OFF(threads), 1, 1 << 20, NULL, RS, "N",
     "hardware threads used on a Xeon Phi or CPU device"},
    {"calibration", K_STRING, OFF(calibration), 0, 0, NULL, RS, "FILE",
     "overlay of fitted model parameters"},
    {"optimizer", K_CHOICE, OFF(optimizer), 0, 0, "sgd|adam", RS, "O", "sgd (momentum) or adam"},
    {"bucket-mib", K_DOUBLE, OFF(bucket_mib), 0, 1 << 20, NULL, RS, "MIB",
     "gradient bucket size in MiB"},
    {"micro-batches", K_INT, OFF(micro_batches), 1, 1 << 20, NULL, RS, "M",
     "pipeline micro-batches per iteration"},
    {"schedule", K_CHOICE, OFF(schedule), 0, 0, "gpipe|1f1b", RS, "S", "pipeline schedule"},
    {"stages", K_INT, OFF(stages), 1, MAX_DEVICES, NULL, RS, "P", "pipeline stages per replica"},
    {"split", K_STRING, OFF(split), 0, 0, NULL, RS, "L1,L2,...",
     "mp/pp: first layer index of each stage after the first (default: balanced)"},
    {"hybrid", K_CHOICE, OFF(hybrid), 0, 0, "dp-pp|owt", RS, "H",
     "hybrid kind: dp over pipelines, or one-weird-trick"},
    {"strict", K_FLAG, OFF(strict), 0, 0, NULL, RS, NULL,
     "a configuration that does not fit in device memory is an error"},
    {"synthetic", K_FLAG, OFF(synthetic), 0, 0, NULL, RS, NULL,
     "synthetic input data: no host-to-device copy of batches"},
    {"symmetry", K_ONOFF, OFF(symmetry), 0, 0, NULL, RS, "on|off",
     "dp on the analytic network: simulate one device for all (exact)"},
    {"json", K_FLAG, OFF(json), 0, 0, NULL, ALL, NULL, "print JSON instead of a table"},
    {"trace", K_STRING, OFF(trace), 0, 0, NULL, ALL, "FILE", "write a Chrome trace"},
    {"trace-limit", K_INT, OFF(trace_limit), 1, INT64_C(1) << 40, NULL, ALL, "N",
     "most events written to the trace (about 150 bytes each)"},
    {"trace-devices", K_INT, OFF(trace_procs), 1, 1000000, NULL, ALL, "N",
     "trace only the first N devices (and N of each other process kind)"},
    {"csv", K_STRING, OFF(csv), 0, 0, NULL, ALL, "FILE", "per-task or per-point rows"},
    {"devices", K_STRING, OFF(devices_list), 0, 0, NULL, SIM_OPTS_SWEEP, "LIST",
     "device counts, e.g. 1,2,4,8 or 1..64"},
    {"nodes-list", K_STRING, OFF(nodes_list), 0, 0, NULL, SIM_OPTS_SWEEP, "LIST",
     "node counts to sweep"},
    {"strategies", K_STRING, OFF(strategy_list), 0, 0, NULL, SIM_OPTS_SWEEP, "LIST",
     "strategies to sweep"},
    {"allreduces", K_STRING, OFF(allreduce_list), 0, 0, NULL, SIM_OPTS_SWEEP, "LIST",
     "allreduce algorithms to sweep"},
    {"batches", K_STRING, OFF(batch_list), 0, 0, NULL, SIM_OPTS_SWEEP, "LIST",
     "per-device batches to sweep"},
    {"scaling", K_CHOICE, OFF(scaling), 0, 0, "weak|strong", SIM_OPTS_SWEEP, "S",
     "weak: fixed per-device batch; strong: fixed global batch"},
    {"plot", K_STRING, OFF(plot), 0, 0, NULL, SIM_OPTS_SWEEP, "FILE.svg",
     "plot throughput and scaling efficiency"},
};

void sim_scenario_init(sim_scenario *s)
{
  memset(s, 0, sizeof *s);
  s->model = g_strdup("resnet50");
  s->batch = 64;
  s->precision = g_strdup("fp32");
  s->system = g_strdup("dgx1-v100");
  s->nodes = 1;
  s->strategy = g_strdup("dp");
  s->allreduce = g_strdup("ring");
  s->ps_count = 1;
  s->ps_placement = g_strdup("cpu");
  s->overlap = TRUE;
  s->symmetry = TRUE;
  s->net_model = g_strdup("flow");
  s->iterations = 1;
  s->optimizer = g_strdup("sgd");
  s->bucket_mib = 25.0;
  s->micro_batches = 4;
  s->schedule = g_strdup("1f1b");
  s->hybrid = g_strdup("dp-pp");
  s->trace_limit = 1000000;
  s->trace_procs = 64;
  s->scaling = g_strdup("weak");
}

void sim_scenario_clear(sim_scenario *s)
{
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
    if (keys[i].kind == K_STRING || keys[i].kind == K_CHOICE)
      g_clear_pointer((char **)((char *)s + keys[i].offset), g_free);
}

void sim_scenario_copy(sim_scenario *dst, const sim_scenario *src)
{
  *dst = *src;
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
    if (keys[i].kind == K_STRING || keys[i].kind == K_CHOICE) {
      char **f = (char **)((char *)dst + keys[i].offset);
      *f = g_strdup(*f);
    }
}

void sim_scenario_set_string(char **field, const char *value)
{
  g_free(*field);
  *field = g_strdup(value);
}

/* Validates one textual value and stores it. `where` prefixes messages ("--batch" or
 * "FILE:LINE: [scenario] batch"). */
static gboolean set_value(sim_scenario *s, const key_spec *k, const char *value,
                          const char *where, GError **error)
{
  void *field = (char *)s + k->offset;
  switch (k->kind) {
  case K_STRING:
    if (*value == '\0') {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: empty value", where);
      return FALSE;
    }
    g_free(*(char **)field);
    *(char **)field = g_strdup(value);
    return TRUE;
  case K_INT:
    return dt_parse_int64(value, where, k->min, k->max, field, error);
  case K_DOUBLE:
    return dt_parse_double(value, where, (double)k->min, (double)k->max, field, error);
  case K_ONOFF:
  case K_FLAG:
    if (!strcmp(value, "on") || !strcmp(value, "true") || !strcmp(value, "yes") ||
        !strcmp(value, "1")) {
      *(gboolean *)field = TRUE;
    } else if (!strcmp(value, "off") || !strcmp(value, "false") || !strcmp(value, "no") ||
               !strcmp(value, "0")) {
      *(gboolean *)field = FALSE;
    } else {
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: '%s' is not on or off", where, value);
      return FALSE;
    }
    return TRUE;
  case K_CHOICE: {
    g_auto(GStrv) choices = g_strsplit(k->choices, "|", -1);
    if (!g_strv_contains((const char *const *)choices, value)) {
      g_autofree char *list = g_strjoinv(", ", choices);
      g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: unknown value '%s' (one of: %s)", where,
                  value, list);
      return FALSE;
    }
    g_free(*(char **)field);
    *(char **)field = g_strdup(value);
    return TRUE;
  }
  }
  return FALSE;
}

gboolean sim_scenario_load(sim_scenario *s, const char *path, sim_opts_set set, GError **error)
{
  g_autoptr(dt_ini) ini = dt_ini_load(path, error);
  if (!ini)
    return FALSE;
  GKeyFile *kf = dt_ini_keyfile(ini);
  if (!g_key_file_has_group(kf, "scenario")) {
    g_set_error(error, DT_ERROR, DT_ERROR_INPUT, "%s: no [scenario] group", path);
    return FALSE;
  }
  g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
  for (char **gp = groups; *gp; gp++)
    if (strcmp(*gp, "scenario") != 0)
      return dt_ini_error(ini, *gp, NULL, error, "unknown group (only [scenario] is read)");
  g_auto(GStrv) names = g_key_file_get_keys(kf, "scenario", NULL, NULL);
  for (char **kp = names; kp && *kp; kp++) {
    const key_spec *k = NULL;
    for (gsize i = 0; i < G_N_ELEMENTS(keys) && !k; i++)
      if (strcmp(keys[i].name, *kp) == 0)
        k = &keys[i];
    if (!k || !(k->set & set))
      return dt_ini_error(ini, "scenario", *kp, error,
                          k ? "not used by this command" : "unknown key");
    g_autofree char *value = dt_ini_string(ini, "scenario", *kp, TRUE, error);
    if (!value)
      return FALSE;
    int line = dt_ini_line(ini, "scenario", *kp);
    g_autofree char *where = g_strdup_printf("%s:%d: [scenario] %s", path, line, *kp);
    if (!set_value(s, k, value, where, error))
      return FALSE;
  }
  return TRUE;
}

struct sim_scenario_opts {
  GOptionEntry *entries;
  char **values;           /* one per key, set by GOptionContext */
  gboolean *flags;         /* K_FLAG keys */
  sim_opts_set set;
  GPtrArray *strings;      /* owned descriptions */
};

sim_scenario_opts *sim_scenario_opts_new(GOptionContext *ctx, sim_opts_set set)
{
  sim_scenario_opts *o = g_new0(sim_scenario_opts, 1);
  gsize n = G_N_ELEMENTS(keys);
  o->entries = g_new0(GOptionEntry, n + 1);
  o->values = g_new0(char *, n);
  o->flags = g_new0(gboolean, n);
  o->set = set;
  o->strings = g_ptr_array_new_with_free_func(g_free);
  gsize e = 0;
  g_auto(sim_scenario) defaults;
  sim_scenario_init(&defaults);
  for (gsize i = 0; i < n; i++) {
    if (!(keys[i].set & set))
      continue;
    GOptionEntry *en = &o->entries[e++];
    en->long_name = keys[i].name;
    /* The help line ends with the default, read from sim_scenario_init() itself. */
    const void *field = (const char *)&defaults + keys[i].offset;
    g_autofree char *def = NULL;
    switch (keys[i].kind) {
    case K_STRING:
    case K_CHOICE:
      def = g_strdup(*(char *const *)field);
      break;
    case K_INT:
      def = *(const int64_t *)field ? g_strdup_printf("%" G_GINT64_FORMAT, *(const int64_t *)field)
                                    : NULL;
      break;
    case K_DOUBLE:
      def = g_strdup_printf("%g", *(const double *)field);
      break;
    case K_ONOFF:
      def = g_strdup(*(const gboolean *)field ? "on" : "off");
      break;
    case K_FLAG:
      break;
    }
    char *help = def ? g_strdup_printf("%s (default %s)", keys[i].help, def) : g_strdup(keys[i].help);
    g_ptr_array_add(o->strings, help);
    en->description = help;
    en->arg_description = keys[i].kind == K_CHOICE ? keys[i].choices : keys[i].arg;
    if (keys[i].kind == K_FLAG) {
      en->arg = G_OPTION_ARG_NONE;
      en->arg_data = &o->flags[i];
    } else {
      en->arg = G_OPTION_ARG_STRING;
      en->arg_data = &o->values[i];
    }
  }
  dt_option_entries_as_bytes(o->entries);
  g_option_context_add_main_entries(ctx, o->entries, NULL);
  return o;
}

void sim_scenario_opts_free(sim_scenario_opts *o)
{
  if (!o)
    return;
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++)
    g_free(o->values[i]);
  g_free(o->values);
  g_free(o->flags);
  g_free(o->entries);
  g_ptr_array_free(o->strings, TRUE);
  g_free(o);
}

gboolean sim_scenario_apply_options(sim_scenario *s, const sim_scenario_opts *o, GError **error)
{
  for (gsize i = 0; i < G_N_ELEMENTS(keys); i++) {
    if (!(keys[i].set & o->set))
      continue;
    g_autofree char *where = g_strconcat("--", keys[i].name, NULL);
    if (keys[i].kind == K_FLAG) {
      if (o->flags[i])
        *(gboolean *)((char *)s + keys[i].offset) = TRUE;
    } else if (o->values[i] && !set_value(s, &keys[i], o->values[i], where, error)) {
      return FALSE;
    }
  }
  return TRUE;
}
