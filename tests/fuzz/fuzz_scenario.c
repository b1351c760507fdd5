/* Fuzz harness for the scenario INI reader, sim_scenario_load(). It reads a path, so each input
 * is written to a temporary file first; the file is read with every command's keys.
 *
 * Invariants: a scenario that loads holds values inside the ranges the key table promises
 * (checked against the documented limits, not the table itself), non-empty strings, and
 * survives a deep copy; a refusal is a DT_ERROR that names the file. */
#include "fuzz.h"

#include "scenario.h"
#include "util.h"

#include <math.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  fuzz_init();
  return 0;
}

static void check_string(const char *name, const char *value, const char *const *choices)
{
  FUZZ_CHECK(value != NULL && *value != '\0', "%s is empty", name);
  if (choices)
    FUZZ_CHECK(g_strv_contains(choices, value), "%s is '%s'", name, value);
}

static void check_scenario(const sim_scenario *s)
{
  static const char *const precisions[] = {"fp32", "tf32", "fp16", "bf16", "amp", NULL};
  static const char *const strategies[] = {"dp", "ps", "mp", "pp", "hybrid", NULL};
  static const char *const placements[] = {"cpu", "gpu", "colocated", "dedicated", NULL};
  static const char *const nets[] = {"analytic", "flow", NULL};
  FUZZ_CHECK(s->batch >= 1 && s->batch <= (1 << 24), "batch %lld", (long long)s->batch);
  FUZZ_CHECK(s->nodes >= 1 && s->nodes <= 1000000, "nodes %lld", (long long)s->nodes);
  FUZZ_CHECK(s->devices_per_node >= 0 && s->devices_per_node <= 4096, "devices-per-node %lld",
             (long long)s->devices_per_node);
  FUZZ_CHECK(s->iterations >= 1 && s->iterations <= 100000, "iterations %lld",
             (long long)s->iterations);
  FUZZ_CHECK(s->ps_count >= 1 && s->ps_count <= 1000000, "ps-count");
  FUZZ_CHECK(s->threads >= 0 && s->threads <= (1 << 20), "threads");
  FUZZ_CHECK(s->micro_batches >= 1 && s->micro_batches <= (1 << 20), "micro-batches");
  FUZZ_CHECK(s->stages >= 0 && s->stages <= 1000000, "stages");
  FUZZ_CHECK(s->trace_limit >= 1, "trace-limit");
  FUZZ_CHECK(isfinite(s->bucket_mib) && s->bucket_mib >= 0 && s->bucket_mib <= (1 << 20),
             "bucket-mib %g", s->bucket_mib);
  check_string("model", s->model, NULL);
  check_string("system", s->system, NULL);
  check_string("precision", s->precision, precisions);
  check_string("strategy", s->strategy, strategies);
  check_string("ps-placement", s->ps_placement, placements);
  check_string("net-model", s->net_model, nets);
  const char *const optional[] = {s->device, s->intra, s->inter, s->topology, s->calibration,
                                  s->split, s->trace, s->csv, s->devices_list, s->plot};
  for (gsize i = 0; i < G_N_ELEMENTS(optional); i++)
    FUZZ_CHECK(optional[i] == NULL || *optional[i] != '\0', "an optional string is empty");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = fuzz_temp_file(".ini", data, size);
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  g_autoptr(GError) error = NULL;
  if (!sim_scenario_load(&s, path, SIM_OPTS_RUN | SIM_OPTS_SWEEP | SIM_OPTS_COLLECTIVE,
                         &error)) {
    fuzz_check_error(error, path);
    return 0;
  }
  check_scenario(&s);
  g_auto(sim_scenario) copy;
  sim_scenario_copy(&copy, &s);
  check_scenario(&copy);
  FUZZ_CHECK(copy.model != s.model && strcmp(copy.model, s.model) == 0, "copy is not deep");
  fuzz_accepted();
  return 0;
}
