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
  FUZZ_CHECK(s->bucket_bytes <= (UINT64_C(1) << 40), "bucket %" G_GUINT64_FORMAT,
             s->bucket_bytes);
  /* Enums and registry entries are typed once parsed: every value is one of the known ones. */
  FUZZ_CHECK((unsigned)s->precision < WL_PREC_COUNT, "precision %d", (int)s->precision);
  FUZZ_CHECK(s->strategy != NULL && s->allreduce != NULL, "strategy or allreduce unset");
  FUZZ_CHECK((unsigned)s->ps_placement <= COMM_PS_DEDICATED, "ps-placement");
  FUZZ_CHECK(s->net_model == COMM_NET_FLOW || s->net_model == COMM_NET_ANALYTIC, "net-model");
  check_string("model", s->model, NULL);
  check_string("system", s->system, NULL);
  const char *const optional[] = {s->device, s->intra, s->inter, s->topology, s->calibration,
                                  s->trace, s->csv, s->plot};
  for (gsize i = 0; i < G_N_ELEMENTS(optional); i++)
    FUZZ_CHECK(optional[i] == NULL || *optional[i] != '\0', "an optional string is empty");
  const GArray *lists[] = {s->split, s->devices_list, s->nodes_list, s->batch_list};
  for (gsize i = 0; i < G_N_ELEMENTS(lists); i++)
    FUZZ_CHECK(lists[i] == NULL || lists[i]->len > 0, "an empty list");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const char *path = fuzz_temp_file(".ini", data, size);
  g_auto(sim_scenario) s;
  sim_scenario_init(&s);
  g_autoptr(GError) error = NULL;
  if (!sim_scenario_load(&s, path, SIM_CMD_SWEEP | SIM_CMD_COLLECTIVE | SIM_CMD_SEARCH,
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
