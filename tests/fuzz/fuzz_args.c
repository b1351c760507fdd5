/* Fuzz harness for the command line of the scenario commands: sim_scenario_parse_args() with
 * the option sets of run, sweep, collective and search (GOption, then every key's parser, then
 * the cross-key checks). Each line of the input is one argument.
 *
 * Invariants: a refusal is a DT_ERROR or a GOption error with a non-empty message, which
 * dt_escape() turns into one line; an accepted command line gives a scenario inside the key
 * table's documented ranges that survives a deep copy. Arguments that would print --help (and
 * exit) are left out, as is a positional scenario file (the INI reader has its own harness). */
#include "fuzz.h"

#include "scenario.h"
#include "util.h"

#include <string.h>

#define MAX_ARGS 64

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
  fuzz_init();
  return 0;
}

/* GOption prints its help and exits for these: -h, -?, --help, --help-all, --help-GROUP, and
 * short options grouped with h or ? ("-xh"). */
static gboolean asks_for_help(const char *arg)
{
  if (g_str_has_prefix(arg, "--help"))
    return TRUE;
  if (arg[0] == '-' && arg[1] != '-' && (strchr(arg, 'h') || strchr(arg, '?')))
    return TRUE;
  return FALSE;
}

static void check_scenario(const sim_scenario *s)
{
  FUZZ_CHECK(s->batch >= 1 && s->batch <= (1 << 24), "batch %lld", (long long)s->batch);
  FUZZ_CHECK(s->nodes >= 1 && s->nodes <= 1000000, "nodes %lld", (long long)s->nodes);
  FUZZ_CHECK(s->devices_per_node >= 0 && s->devices_per_node <= 4096, "devices-per-node %lld",
             (long long)s->devices_per_node);
  FUZZ_CHECK(s->iterations >= 1 && s->iterations <= 100000, "iterations %lld",
             (long long)s->iterations);
  FUZZ_CHECK(s->model != NULL && *s->model != '\0', "empty model");
  FUZZ_CHECK(s->strategy != NULL && s->allreduce != NULL, "strategy or allreduce unset");
  FUZZ_CHECK(s->net_model == COMM_NET_FLOW || s->net_model == COMM_NET_ANALYTIC, "net-model");
  const char *const optional[] = {s->device, s->intra, s->inter, s->topology, s->calibration,
                                  s->trace, s->csv, s->plot};
  for (gsize i = 0; i < G_N_ELEMENTS(optional); i++)
    FUZZ_CHECK(optional[i] == NULL || *optional[i] != '\0', "an optional string is empty");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  g_autofree char *text = fuzz_text(data, size);
  /* A final newline ends the last argument; it does not start an empty one. */
  gsize len = strlen(text);
  if (len > 0 && text[len - 1] == '\n')
    text[len - 1] = '\0';
  g_auto(GStrv) lines = g_strsplit(text, "\n", MAX_ARGS);
  g_autoptr(GPtrArray) args = g_ptr_array_new();
  g_ptr_array_add(args, "dtsim");
  for (char **l = lines; *l; l++) {
    if (asks_for_help(*l))
      return 0;
    g_ptr_array_add(args, *l);
  }
  g_ptr_array_add(args, NULL);
  static const unsigned sets[] = {SIM_CMD_RUN, SIM_CMD_SWEEP, SIM_CMD_COLLECTIVE, SIM_CMD_SEARCH};
  gboolean accepted = FALSE;
  for (gsize i = 0; i < G_N_ELEMENTS(sets); i++) {
    g_auto(sim_scenario) s;
    sim_scenario_init(&s);
    g_autoptr(GError) error = NULL;
    /* Parsing rearranges the vector: each command gets a fresh copy of the pointers. */
    g_autofree char **argv = g_memdup2(args->pdata, args->len * sizeof(char *));
    int argc = (int)args->len - 1;
    /* A positional argument would be read as a scenario file: only options are fuzzed here. */
    gboolean positional = FALSE;
    for (int a = 1; a < argc; a++)
      positional |= argv[a][0] != '-' && (a == 1 || argv[a - 1][0] != '-' ||
                                          strchr(argv[a - 1], '=') != NULL);
    if (positional)
      return 0;
    sim_command_line cl = {.set = sets[i], .summary = "fuzz"};
    if (!sim_scenario_parse_args(&s, &cl, argc, argv, &error)) {
      FUZZ_CHECK(error != NULL, "refused without an error");
      FUZZ_CHECK(error->domain == DT_ERROR || error->domain == G_OPTION_ERROR,
                 "error of domain %s: %s", g_quark_to_string(error->domain), error->message);
      FUZZ_CHECK(error->message[0] != '\0', "empty message");
      g_autofree char *line = dt_escape(error->message);
      FUZZ_CHECK(strchr(line, '\n') == NULL && strchr(line, '\r') == NULL,
                 "escaped message spans lines");
      continue;
    }
    check_scenario(&s);
    g_auto(sim_scenario) copy;
    sim_scenario_copy(&copy, &s);
    check_scenario(&copy);
    accepted = TRUE;
  }
  if (accepted)
    fuzz_accepted();
  return 0;
}
