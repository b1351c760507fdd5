/* dtsim search: every feasible parallel configuration of a job on a cluster, ranked. */
#include "scenario.h"

#include "util.h"

static const sim_key search_keys[] = {
    {"top", SIM_KEY_INT, SIM_KEY_OFF(top), "10", 1, 1 << 20, .commands = SIM_OPTS_SEARCH,
     .arg = "K", .help = "rows printed, best first; the best K are simulated again on the flow network"},
};
const sim_key_group sim_keys_search = SIM_KEY_GROUP("search", NULL, search_keys);
