/* The options of the engine around a model (see framework_keys.h): which framework runs it
 * (--framework), how wide its ZeRO/FSDP sharding group is (--shard-group, HSDP), what it
 * offloads to the host (--offload) and whether it overlaps the expert-parallel all-to-alls with
 * another micro-batch (--ep-overlap). All but the framework, and the framework of a
 * transformer, are applied by --strategy 3d (strategy_3d.c, fsdp.c), and `search` takes them
 * as axes; a CNN on a CPU or Xeon Phi takes the framework's CPU efficiency (sim/costs.c) under
 * any strategy. */
#include "framework_keys.h"

#include "strategy.h"

static const char *const offload_names[] = {"none", "optimizer", "optimizer+gradients"};

const char *sim_offload_name(sim_offload o)
{
  return (unsigned)o < G_N_ELEMENTS(offload_names) ? offload_names[o] : "?";
}

SIM_CHOICES_OF(sim_offload_name, sim_offload)

static const sim_key framework_keys[] = {
    {"framework", SIM_KEY_STRING, SIM_KEY_OWN_OFF(sim_framework_opts, framework), "megatron",
     .commands = SIM_OPTS_RUN, .arg = "NAME|FILE",
     .help = "the engine around the model, a catalog file: transformers megatron, fsdp "
             "(PyTorch FSDP2, eager), fsdp-compile (torch.compile), fsdp-te (FSDP2 with "
             "Transformer Engine), deepspeed; CNNs on CPUs and Xeon Phi: intel-caffe (a CNN "
             "without it runs at the device model's rate)"},
    {"shard-group", SIM_KEY_INT, SIM_KEY_OWN_OFF(sim_framework_opts, shard_group), NULL, 1,
     1 << 24, .commands = SIM_OPTS_RUN, .needs = SIM_STRATEGY_TRANSFORMER, .arg = "G",
     .help = "--strategy 3d: ZeRO/FSDP sharding group: shard over G data-parallel ranks, "
             "replicate over dp / G (HSDP; default dp)"},
    {"offload", SIM_KEY_CHOICE, SIM_KEY_OWN_OFF(sim_framework_opts, offload), "none",
     .choice_name = sim_offload_name_choice, .n_choices = SIM_OFFLOAD_GRADIENTS + 1,
     .commands = SIM_OPTS_RUN, .needs = SIM_STRATEGY_TRANSFORMER,
     .help = "--strategy 3d: optimizer states (and gradients) in host memory, the optimizer "
             "step on the host CPUs, transfers over PCIe (ZeRO-Offload)"},
    {"ep-overlap", SIM_KEY_ONOFF, SIM_KEY_OWN_OFF(sim_framework_opts, ep_overlap), "off",
     .commands = SIM_OPTS_RUN, .needs = SIM_STRATEGY_TRANSFORMER, .arg = "on|off",
     .help = "--strategy 3d: expert-parallel dispatch and combine run under another "
             "micro-batch's compute, on the framework's ep_comm_sms SMs (Megatron-Core's "
             "--overlap-moe-expert-parallel-comm, DeepSeek's DualPipe)"},
};
const sim_key_group sim_keys_framework =
    SIM_KEY_OWN_GROUP("framework", 0, framework_keys, sim_framework_opts);

sim_framework_opts sim_framework_opts_of(const sim_scenario *s)
{
  const sim_framework_opts *o = sim_scenario_own(s, &sim_keys_framework);
  sim_framework_opts none = {.framework = (char *)"megatron"};
  return o ? *o : none;
}
