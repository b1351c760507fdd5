/* Strategy 3d: Megatron-style tensor x pipeline x data parallelism of transformer layers. */
#include "plan.h"

#include "util.h"

static const sim_key keys_3d[] = {
    {"tp", SIM_KEY_INT, SIM_KEY_OFF(tp), "1", 1, 1 << 20, .commands = SIM_OPTS_RUN, .arg = "T",
     .help = "tensor-parallel degree (within the NVLink domain)"},
    {"pp", SIM_KEY_INT, SIM_KEY_OFF(pp), "1", 1, 1 << 20, .commands = SIM_OPTS_RUN, .arg = "P",
     .help = "pipeline-parallel degree"},
    {"dp", SIM_KEY_INT, SIM_KEY_OFF(dp), NULL, 1, 1 << 24, .commands = SIM_OPTS_RUN, .arg = "D",
     .help = "data-parallel degree (default: devices / (tp x pp))"},
    {"global-batch", SIM_KEY_INT, SIM_KEY_OFF(global_batch), NULL, 1, INT64_C(1) << 40,
     .commands = SIM_OPTS_RUN, .arg = "B",
     .help = "samples per iteration over the whole job (default: --batch x dp)"},
    {"micro-batch", SIM_KEY_INT, SIM_KEY_OFF(micro_batch), "1", 1, 1 << 24,
     .commands = SIM_OPTS_RUN, .arg = "M", .help = "samples per micro-batch"},
    {"interleave", SIM_KEY_INT, SIM_KEY_OFF(interleave), "1", 1, 1 << 10,
     .commands = SIM_OPTS_RUN, .arg = "V",
     .help = "model chunks per device (--schedule interleaved)"},
    {"sequence-parallel", SIM_KEY_ONOFF, SIM_KEY_OFF(sequence_parallel), "off",
     .commands = SIM_OPTS_RUN, .arg = "on|off",
     .help = "all-gather/reduce-scatter in place of the tensor-parallel all-reduce"},
    {"recompute", SIM_KEY_CHOICE, SIM_KEY_OFF(recompute), "none",
     .choices = "none|selective|full", .commands = SIM_OPTS_RUN,
     .help = "activation recomputation"},
    {"zero", SIM_KEY_INT, SIM_KEY_OFF(zero), "0", 0, 3, .commands = SIM_OPTS_RUN, .arg = "0-3",
     .help = "ZeRO stage: optimizer (1), gradient (2), parameter (3) sharding over dp"},
};
const sim_key_group sim_keys_3d = SIM_KEY_GROUP("3d", "3d", keys_3d);
