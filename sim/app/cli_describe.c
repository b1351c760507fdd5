/* `dtsim describe MODEL`: the per-layer table of a model (shapes, parameters, FLOPs, bytes,
 * saved activations) with totals and the per-device memory footprint; `--json` for scripts;
 * `--export FILE` writes the model in our JSON workload format. Also `dtsim list models`. */
#include "cli.h"
#include "scenario.h"
#include "util.h"
#include "workloads.h"
#include "strategy_3d.h"

#include <inttypes.h>

/* A byte count with a decimal unit (B, kB, MB, GB, TB) for the human table. */
static const char *human_bytes(char buf[32], uint64_t bytes)
{
  static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1000.0 && u < 4)
    v /= 1000.0, u++;
  g_snprintf(buf, 32, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

static void print_table(FILE *out, const wl_net *net, wl_optimizer opt)
{
  const wl_model *m = wl_net_model(net);
  uint32_t c, h, w;
  wl_model_input_shape(m, &c, &h, &w);
  fprintf(out, "model %s: input %ux%ux%u, batch %u, precision %s\n\n", wl_model_name(m), c, h, w,
          wl_net_batch(net), wl_precision_name(wl_net_precision(net)));
  fprintf(out, "%-4s %-36s %-13s %-16s %12s %16s %16s %16s %16s %14s\n", "#", "layer", "type",
          "output CxHxW", "params", "fwd FLOPs", "bwd FLOPs", "fwd bytes", "bwd bytes",
          "saved bytes");
  for (size_t i = 0; i < wl_net_n_layers(net); i++) {
    const wl_layer *L = wl_net_layer(net, i);
    const wl_op_cost *k = L->cost;
    char shape[48];
    g_snprintf(shape, sizeof(shape), "%ux%ux%u", L->out_c, L->out_h, L->out_w);
    uint64_t bwd = k[WL_PASS_BACKWARD_DATA].flops + k[WL_PASS_BACKWARD_WEIGHTS].flops;
    uint64_t fb = k[WL_PASS_FORWARD].bytes_read + k[WL_PASS_FORWARD].bytes_written;
    uint64_t bb = k[WL_PASS_BACKWARD_DATA].bytes_read + k[WL_PASS_BACKWARD_DATA].bytes_written +
                  k[WL_PASS_BACKWARD_WEIGHTS].bytes_read +
                  k[WL_PASS_BACKWARD_WEIGHTS].bytes_written;
    fprintf(out,
            "%-4zu %-36s %-13s %-16s %12" PRIu64 " %16" PRIu64 " %16" PRIu64 " %16" PRIu64
            " %16" PRIu64 " %14" PRIu64 "\n",
            i, L->name, wl_layer_kind_name(L->kind), shape, L->params, k[WL_PASS_FORWARD].flops,
            bwd, fb, bb, L->saved_bytes);
  }
  wl_totals t;
  wl_net_totals(net, &t);
  wl_memory mem;
  wl_net_memory(net, opt, &mem);
  char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
  fprintf(out, "\ntotal: %zu layers, %" PRIu64 " params, %.4f G forward multiply-adds per batch\n",
          wl_net_n_layers(net), t.params, t.macs / 1e9);
  fprintf(out, "  forward  %.4f GFLOP, %s moved\n", t.forward_flops / 1e9,
          human_bytes(b1, t.forward_bytes));
  fprintf(out, "  backward %.4f GFLOP, %s moved\n", t.backward_flops / 1e9,
          human_bytes(b1, t.backward_bytes));
  fprintf(out, "  activations saved for backward %s\n", human_bytes(b1, t.saved_bytes));
  fprintf(out,
          "memory per device (%s): weights %s, gradients %s, optimizer %s, activations %s, "
          "workspace %s, total %s\n",
          wl_optimizer_name(opt), human_bytes(b1, mem.weights_bytes),
          human_bytes(b2, mem.gradients_bytes), human_bytes(b3, mem.optimizer_bytes),
          human_bytes(b4, mem.activations_bytes), human_bytes(b5, mem.workspace_bytes),
          human_bytes(b6, mem.total_bytes));
}

static void member_u64(GString *o, const char *key, uint64_t v)
{
  dt_json_key(o, key);
  dt_json_int(o, (int64_t)v);
}

static void member_string(GString *o, const char *key, const char *v)
{
  dt_json_key(o, key);
  dt_json_string(o, v);
}

static char *describe_json(const wl_net *net, wl_optimizer opt)
{
  const wl_model *m = wl_net_model(net);
  GString *o = g_string_new("{");
  member_string(o, "model", wl_model_name(m));
  member_u64(o, "batch", wl_net_batch(net));
  member_string(o, "precision", wl_precision_name(wl_net_precision(net)));
  dt_json_key(o, "layers");
  g_string_append_c(o, '[');
  for (size_t i = 0; i < wl_net_n_layers(net); i++) {
    const wl_layer *L = wl_net_layer(net, i);
    const wl_op_cost *k = L->cost;
    dt_json_next(o);
    g_string_append_c(o, '{');
    member_string(o, "name", L->name);
    member_string(o, "type", wl_layer_kind_name(L->kind));
    dt_json_key(o, "parents");
    g_string_append_c(o, '[');
    for (int j = 0; j < L->n_parents; j++) {
      dt_json_next(o);
      dt_json_string(o, L->parents[j] < 0 ? "input" : wl_net_layer(net, (size_t)L->parents[j])->name);
    }
    g_string_append_c(o, ']');
    dt_json_key(o, "output");
    g_string_append_printf(o, "[%u,%u,%u]", L->out_c, L->out_h, L->out_w);
    member_u64(o, "params", L->params);
    member_u64(o, "forward_flops", k[WL_PASS_FORWARD].flops);
    member_u64(o, "backward_data_flops", k[WL_PASS_BACKWARD_DATA].flops);
    member_u64(o, "backward_weights_flops", k[WL_PASS_BACKWARD_WEIGHTS].flops);
    member_u64(o, "backward_flops",
               k[WL_PASS_BACKWARD_DATA].flops + k[WL_PASS_BACKWARD_WEIGHTS].flops);
    member_u64(o, "forward_bytes", k[WL_PASS_FORWARD].bytes_read + k[WL_PASS_FORWARD].bytes_written);
    member_u64(o, "backward_bytes",
               k[WL_PASS_BACKWARD_DATA].bytes_read + k[WL_PASS_BACKWARD_DATA].bytes_written +
                   k[WL_PASS_BACKWARD_WEIGHTS].bytes_read +
                   k[WL_PASS_BACKWARD_WEIGHTS].bytes_written);
    member_u64(o, "activation_bytes", L->saved_bytes);
    g_string_append_c(o, '}');
  }
  g_string_append_c(o, ']');
  wl_totals t;
  wl_net_totals(net, &t);
  wl_memory mem;
  wl_net_memory(net, opt, &mem);
  member_u64(o, "total_params", t.params);
  member_u64(o, "total_forward_macs", t.macs);
  member_u64(o, "total_forward_flops", t.forward_flops);
  member_u64(o, "total_backward_flops", t.backward_flops);
  member_u64(o, "total_forward_bytes", t.forward_bytes);
  member_u64(o, "total_backward_bytes", t.backward_bytes);
  member_u64(o, "total_activation_bytes", t.saved_bytes);
  dt_json_key(o, "memory");
  g_string_append_c(o, '{');
  member_string(o, "optimizer", wl_optimizer_name(opt));
  member_u64(o, "weights_bytes", mem.weights_bytes);
  member_u64(o, "gradients_bytes", mem.gradients_bytes);
  member_u64(o, "optimizer_bytes", mem.optimizer_bytes);
  member_u64(o, "activations_bytes", mem.activations_bytes);
  member_u64(o, "workspace_bytes", mem.workspace_bytes);
  member_u64(o, "total_bytes", mem.total_bytes);
  g_string_append(o, "}}");
  return g_string_free(o, FALSE);
}

static gboolean export_model(const wl_model *m, const char *path, GError **error)
{
  g_autoptr(dt_outfile) out = dt_outfile_open(path, error);
  if (out == NULL)
    return FALSE;
  if (!wl_model_write_json(m, dt_outfile_stream(out), error))
    return FALSE;
  return dt_outfile_commit(out, error);
}

int dtsim_cmd_describe(int argc, char **argv)
{
  /* The model's keys (--batch, --precision, --optimizer, --seq-len) and --json come from the
   * shared groups; one sample per device is describe's own default batch. */
  static const sim_key_use uses[] = {
      {"batch", "1", 'b', NULL}, {"precision", NULL, 'p', NULL}, {NULL, NULL, 0, NULL}};
  g_autofree char *export_path = NULL;
  GOptionEntry entries[] = {
      {"export", 0, 0, G_OPTION_ARG_FILENAME, &export_path,
       "also write the model in dtsim's JSON workload format", "FILE"},
      {NULL}};
  g_auto(GStrv) args = NULL;
  sim_command_line cl = {.set = SIM_CMD_DESCRIBE,
                         .parameter = "MODEL - describe a model layer by layer",
                         .entries = entries,
                         .uses = uses,
                         .args = &args};
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  g_autoptr(GError) error = NULL;
  if (!sim_scenario_parse_args(&s, &cl, argc, argv, &error))
    return dtsim_cli_fail("describe", error);
  if (g_strv_length(args) != 1) {
    g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                "expected one MODEL (a zoo name or a workload file; see 'dtsim list models')");
    return dtsim_cli_fail("describe", error);
  }
  const char *model = args[0];
  /* The export can be written and does not replace the model it describes. */
  const dt_file_role files[] = {{model, "the model", FALSE}, {export_path, "--export", TRUE}};
  if (export_path && (!dt_outfile_check(export_path, "--export", &error) ||
                      !dt_files_distinct(files, G_N_ELEMENTS(files), &error)))
    return dtsim_cli_fail("describe", error);
  /* Transformers: parameters and FLOPs per block, from the hyper-parameters. */
  if (wl_tf_is_transformer(model)) {
    if (export_path) {
      g_set_error(&error, DT_ERROR, DT_ERROR_INPUT,
                  "--export: transformers are described by their spec, not a layer file");
      return dtsim_cli_fail("describe", error);
    }
    int st = sim_3d_describe(stdout, model, (uint32_t)s.batch, (uint32_t)s.seq_len, s.precision,
                             s.json, &error);
    return st ? dtsim_cli_fail("describe", error) : 0;
  }
  g_autoptr(wl_model) m = wl_model_load(model, &error);
  if (m == NULL)
    return dtsim_cli_fail("describe", error);
  g_autoptr(wl_net) net = wl_net_new(m, (uint32_t)s.batch, s.precision, &error);
  if (net == NULL)
    return dtsim_cli_fail("describe", error);
  if (export_path && !export_model(m, export_path, &error))
    return dtsim_cli_fail("describe", error);
  if (s.json) {
    g_autofree char *text = describe_json(net, s.optimizer);
    printf("%s\n", text);
  } else {
    print_table(stdout, net, s.optimizer);
  }
  return 0;
}

int dtsim_list_models(FILE *out, gboolean json)
{
  size_t n;
  const wl_zoo_entry *zoo = wl_zoo(&n);
  if (!json)
    fprintf(out, "%-14s %-12s %14s  %s\n", "name", "input", "params", "description");
  for (size_t i = 0; i < n; i++) {
    g_autoptr(wl_model) m = zoo[i].build();
    g_autoptr(wl_net) net = wl_net_new(m, 1, WL_PREC_FP32, NULL);
    wl_totals t;
    wl_net_totals(net, &t);
    uint32_t c, h, w;
    wl_model_input_shape(m, &c, &h, &w);
    if (json) {
      g_autoptr(GString) o = g_string_new("{");
      member_string(o, "name", zoo[i].name);
      dt_json_key(o, "input");
      g_string_append_printf(o, "[%u,%u,%u]", c, h, w);
      member_u64(o, "params", t.params);
      member_string(o, "description", zoo[i].description);
      g_string_append(o, "}\n");
      fputs(o->str, out);
    } else {
      char shape[32];
      g_snprintf(shape, sizeof(shape), "%ux%ux%u", c, h, w);
      fprintf(out, "%-14s %-12s %14" PRIu64 "  %s\n", zoo[i].name, shape, t.params,
              zoo[i].description);
    }
  }
  const wl_tf_zoo_entry *tz = wl_tf_zoo(&n);
  for (size_t i = 0; i < n; i++) {
    wl_tf tf;
    if (!wl_tf_parse(tz[i].name, &tf, NULL))
      continue;
    if (json) {
      g_autoptr(GString) o = g_string_new("{");
      member_string(o, "name", tz[i].name);
      dt_json_key(o, "input");
      g_string_append_printf(o, "[%u]", tf.seq);
      member_u64(o, "params", wl_tf_params(&tf));
      member_string(o, "description", tz[i].description);
      g_string_append(o, "}\n");
      fputs(o->str, out);
    } else {
      char shape[32];
      g_snprintf(shape, sizeof(shape), "%u tokens", tf.seq);
      fprintf(out, "%-14s %-12s %14" PRIu64 "  %s\n", tz[i].name, shape, wl_tf_params(&tf),
              tz[i].description);
    }
  }
  return 0;
}
