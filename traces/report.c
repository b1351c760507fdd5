/* Printing the breakdown of an iteration: the table and the JSON object (see report.h). */
#include "report.h"

#include "util.h"

#include <string.h>

static void json_double(GString *o, const char *key, double v)
{
  g_string_append_printf(o, "\"%s\":", key);
  dt_json_double(o, v);
  g_string_append_c(o, ',');
}

void sim_report_print_json(FILE *out, const sim_report *r, const char *extra_json)
{
  g_autoptr(GString) o = g_string_new(NULL);
  sim_report_append_json(o, r, extra_json);
  g_string_append_c(o, '\n');
  fputs(o->str, out);
}

void sim_report_append_json(GString *o, const sim_report *r, const char *extra_json)
{
  g_string_append_c(o, '{');
  json_double(o, "iteration_time_s", r->iteration_time_s);
  json_double(o, "throughput_samples_per_s", r->throughput_samples_per_s);
  json_double(o, "compute_time_s", r->compute_time_s);
  json_double(o, "comm_time_s", r->comm_time_s);
  json_double(o, "exposed_comm_time_s", r->exposed_comm_time_s);
  json_double(o, "forward_time_s", r->forward_time_s);
  json_double(o, "backward_time_s", r->backward_time_s);
  json_double(o, "update_time_s", r->update_time_s);
  g_string_append_printf(o, "\"memory_per_device_bytes\":%" G_GUINT64_FORMAT ",",
                         r->memory_per_device_bytes);
  g_string_append_printf(o, "\"devices\":%u,", r->devices);
  g_string_append_printf(o, "\"events\":%" G_GUINT64_FORMAT ",", r->events);
  json_double(o, "sim_wall_s", r->sim_wall_s);
  json_double(o, "idle_time_s", r->idle_time_s);
  g_string_append_printf(o, "\"samples_per_iteration\":%" G_GUINT64_FORMAT ",",
                         r->samples_per_iteration);
  g_string_append_printf(o, "\"memory_capacity_bytes\":%" G_GUINT64_FORMAT ",",
                         r->memory_capacity_bytes);
  /* Only where it was measured (against one device): never a speedup of 0. */
  if (r->speedup > 0) {
    json_double(o, "speedup", r->speedup);
    json_double(o, "scaling_efficiency", r->scaling_efficiency);
  }
  if (r->threads > 0)
    g_string_append_printf(o, "\"threads\":%u,", r->threads);
  if (r->transformer) {
    json_double(o, "tokens_per_s", r->tokens_per_s);
    json_double(o, "model_tflops_per_device", r->model_tflops_per_device);
    json_double(o, "mfu", r->mfu);
    g_string_append_printf(o, "\"memory_breakdown_bytes\":{\"weights\":%" G_GUINT64_FORMAT
                           ",\"gradients\":%" G_GUINT64_FORMAT ",\"optimizer\":%" G_GUINT64_FORMAT
                           ",\"activations\":%" G_GUINT64_FORMAT ",\"other\":%" G_GUINT64_FORMAT
                           ",\"framework_reserved\":%" G_GUINT64_FORMAT,
                           r->memory_weights_bytes, r->memory_gradients_bytes,
                           r->memory_optimizer_bytes, r->memory_activations_bytes,
                           r->memory_other_bytes, r->memory_framework_reserved_bytes);
    /* Offloaded bytes live in host memory, outside memory_per_device_bytes. */
    if (r->memory_host_bytes)
      g_string_append_printf(o, ",\"host\":%" G_GUINT64_FORMAT, r->memory_host_bytes);
    if (r->has_activations_cp)
      g_string_append_printf(o, ",\"activations_cp\":%" G_GUINT64_FORMAT,
                             r->memory_activations_cp_bytes);
    g_string_append(o, "},");
    if (r->has_tokens_dropped)
      json_double(o, "tokens_dropped", r->tokens_dropped);
  }
  if (r->ps_busiest_share > 0)
    json_double(o, "ps_busiest_share", r->ps_busiest_share);
  if (r->symmetry_note[0]) {
    g_string_append(o, "\"symmetry\":");
    dt_json_string(o, r->symmetry_note);
    g_string_append_c(o, ',');
  }
  if (r->has_train) {
    const sim_trainrun *t = &r->train;
    g_string_append_printf(o, "\"train_iterations\":%" G_GUINT64_FORMAT ",", t->iterations);
    json_double(o, "train_time_s", t->train_time_s);
    if (t->has_cost)
      json_double(o, "train_cost_usd", t->train_cost_usd);
    json_double(o, "expected_failures", t->expected_failures);
    json_double(o, "goodput", t->goodput);
    json_double(o, "checkpoint_interval_s", t->checkpoint_interval_s);
  }
  if (extra_json && *extra_json)
    g_string_append_printf(o, "%s,", extra_json);
  g_string_truncate(o, o->len - 1);
  g_string_append_c(o, '}');
}

static void row_ms(FILE *out, const char *label, double s, double total)
{
  fprintf(out, "  %-28s %12.3f ms %6.1f%%\n", label, s * 1e3, total > 0 ? 100.0 * s / total : 0);
}

/* A duration in the unit that reads best: "12.3 s", "4.56 min", "7.89 h", "10.1 days". */
static const char *duration(char buf[32], double s)
{
  if (s < 60)
    g_snprintf(buf, 32, "%.3g s", s);
  else if (s < 3600)
    g_snprintf(buf, 32, "%.3g min", s / 60);
  else if (s < 86400)
    g_snprintf(buf, 32, "%.3g h", s / 3600);
  else
    g_snprintf(buf, 32, "%.4g days", s / 86400);
  return buf;
}

void sim_report_print_table(FILE *out, const sim_report *r, const char *title)
{
  double it = r->iteration_time_s;
  fprintf(out, "%s\n", title);
  fprintf(out, "  %-28s %12.3f ms\n", "iteration time", it * 1e3);
  row_ms(out, "  compute", r->compute_time_s, it);
  row_ms(out, "  exposed communication", r->exposed_comm_time_s, it);
  row_ms(out, "  idle (bubbles, waits)", r->idle_time_s, it);
  fprintf(out, "  %-28s %12.3f ms\n", "communication (total)", r->comm_time_s * 1e3);
  fprintf(out, "  %-28s %12.3f ms\n", "forward", r->forward_time_s * 1e3);
  fprintf(out, "  %-28s %12.3f ms\n", "backward", r->backward_time_s * 1e3);
  fprintf(out, "  %-28s %12.3f ms\n", "optimizer update", r->update_time_s * 1e3);
  fprintf(out, "  %-28s %12.1f samples/s (%" G_GUINT64_FORMAT " samples per iteration)\n",
          "throughput", r->throughput_samples_per_s, r->samples_per_iteration);
  fprintf(out, "  %-28s %12.2f GiB", "memory per device",
          (double)r->memory_per_device_bytes / (1 << 30));
  if (r->memory_capacity_bytes) {
    fprintf(out, " of %.2f GiB%s", (double)r->memory_capacity_bytes / (1 << 30),
            r->memory_per_device_bytes > r->memory_capacity_bytes ? "  ** DOES NOT FIT **" : "");
  }
  fputc('\n', out);
  if (r->transformer) {
    fprintf(out, "  %-28s %12.4g tokens/s, %.1f model TFLOP/s per device, MFU %.1f%%\n",
            "throughput (tokens)", r->tokens_per_s, r->model_tflops_per_device, 100.0 * r->mfu);
    fprintf(out, "  %-28s weights %.2f, gradients %.2f, optimizer %.2f, activations %.2f, "
            "other %.2f, framework reserved %.2f GiB\n", "memory breakdown",
            (double)r->memory_weights_bytes / (1 << 30),
            (double)r->memory_gradients_bytes / (1 << 30),
            (double)r->memory_optimizer_bytes / (1 << 30),
            (double)r->memory_activations_bytes / (1 << 30),
            (double)r->memory_other_bytes / (1 << 30),
            (double)r->memory_framework_reserved_bytes / (1 << 30));
    if (r->memory_host_bytes)
      fprintf(out, "  %-28s %.2f GiB per device (offloaded optimizer states and gradients)\n",
              "host memory", (double)r->memory_host_bytes / (1 << 30));
    if (r->has_activations_cp)
      fprintf(out, "  %-28s %.2f GiB of keys and values of the other ranks\n",
              "context parallelism", (double)r->memory_activations_cp_bytes / (1 << 30));
    if (r->has_tokens_dropped)
      fprintf(out, "  %-28s %.4g routed token copies dropped per iteration\n", "expert capacity",
              r->tokens_dropped);
  }
  if (r->speedup > 0 && r->threads > 0)
    fprintf(out, "  %-28s %12.2fx on %u threads (efficiency %.1f%%)\n",
            "speedup over one thread", r->speedup, r->threads, 100.0 * r->scaling_efficiency);
  else if (r->speedup > 0)
    fprintf(out, "  %-28s %12.2fx on %u devices (scaling efficiency %.1f%%)\n",
            "speedup over one device", r->speedup, r->devices, 100.0 * r->scaling_efficiency);
  if (r->ps_busiest_share > 0)
    fprintf(out, "  %-28s busiest server holds %.2fx the mean\n", "parameter servers",
            r->ps_busiest_share);
  if (r->symmetry_note[0])
    fprintf(out, "  %-28s %s\n", "symmetry", r->symmetry_note);
  if (r->has_train) {
    const sim_trainrun *t = &r->train;
    char wall[32], work[32], every[32];
    fprintf(out, "  %-28s %15s (%" G_GUINT64_FORMAT " iterations, %s of work)\n", "training run",
            duration(wall, t->train_time_s), t->iterations, duration(work, t->solve_time_s));
    if (t->has_cost)
      fprintf(out, "  %-28s %15.2f USD (%u devices for %.4g hours)\n", "training cost",
              t->train_cost_usd, r->devices, t->train_time_s / 3600);
    if (t->job_mtbf_s > 0)
      fprintf(out, "  %-28s %15.2f (the job fails every %s on average)\n", "expected failures",
              t->expected_failures, duration(every, t->job_mtbf_s));
    if (t->checkpoint_interval_s > 0)
      fprintf(out, "  %-28s %15s of training between checkpoints%s\n", "checkpoint interval",
              duration(every, t->checkpoint_interval_s),
              t->job_mtbf_s > 0 ? "" : " (no failures)");
    fprintf(out, "  %-28s %14.2f%% of the wall time trains\n", "goodput", 100 * t->goodput);
  }
  fprintf(out, "  %-28s %12" G_GUINT64_FORMAT " in %.3f s (%.3g events/s)\n", "simulated events",
          r->events, r->sim_wall_s, r->sim_wall_s > 0 ? (double)r->events / r->sim_wall_s : 0.0);
}
