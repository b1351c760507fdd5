/* A scenario: everything `dtsim run`, `sweep` and `collective` need to know, from a scenario
 * INI file (group [scenario]) and/or command-line options with the same names. The file is read
 * first; options override it. Every value is validated here, once, with messages that name the
 * option or FILE:LINE and key. */
#ifndef DTSIM_SCENARIO_H
#define DTSIM_SCENARIO_H

#include <glib.h>
#include <stdint.h>

typedef enum { SIM_NET_FLOW, SIM_NET_ANALYTIC } sim_net_fidelity;

typedef struct {
  char *model;             /* zoo name or workload file */
  int64_t batch;           /* per-device mini-batch, samples */
  char *precision;         /* fp32|tf32|fp16|bf16|amp */
  char *system;            /* system preset name or INI file */
  char *device;            /* device override, or NULL */
  int64_t nodes;
  int64_t devices_per_node; /* 0: the preset's */
  char *intra, *inter;     /* fabric overrides, or NULL */
  char *topology;          /* inter-node topology */
  char *strategy;          /* dp|ps|mp|pp|hybrid */
  char *allreduce;         /* algorithm name */
  int64_t ps_count;
  char *ps_placement;      /* cpu|gpu|colocated|dedicated */
  gboolean overlap;
  char *net_model;         /* analytic|flow */
  int64_t iterations;
  int64_t threads;         /* 0: the device's default */
  char *calibration;       /* overlay INI, or NULL */
  char *optimizer;         /* sgd|adam */
  double bucket_mib;       /* gradient bucket size, MiB */
  int64_t micro_batches;   /* pipeline micro-batches per iteration */
  char *schedule;          /* gpipe|1f1b */
  int64_t stages;          /* pipeline stages (0: all devices of a replica) */
  char *split;             /* stage boundaries (first layer index of stages 2..), or NULL */
  char *hybrid;            /* dp-pp|owt (one weird trick) */
  gboolean strict;         /* a configuration that does not fit in memory is an error */
  gboolean synthetic;      /* input already on the device (benchmarks' synthetic data) */
  gboolean symmetry;       /* simulate one device of a symmetric dp run */
  gboolean json;
  char *trace, *csv;
  int64_t trace_limit;     /* most trace events written */
  int64_t trace_procs;     /* most trace processes of each kind (devices, links...) */
  /* sweep axes */
  char *devices_list;      /* e.g. "1,2,4,8" or "1..64" */
  char *nodes_list;
  char *strategy_list, *allreduce_list, *batch_list;
  char *scaling;           /* weak|strong */
  char *plot;              /* SVG output */
} sim_scenario;

/* Defaults: the demo's single-node ResNet-50 data parallel on a dgx1-v100. */
void sim_scenario_init(sim_scenario *s);
void sim_scenario_clear(sim_scenario *s);
/* A deep copy (strings duplicated); clear it with sim_scenario_clear(). */
void sim_scenario_copy(sim_scenario *dst, const sim_scenario *src);
/* Replaces a string field of a scenario (frees the old value). */
void sim_scenario_set_string(char **field, const char *value);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(sim_scenario, sim_scenario_clear)

/* Which option groups a command accepts. */
typedef enum {
  SIM_OPTS_RUN = 1 << 0,
  SIM_OPTS_SWEEP = 1 << 1,
  SIM_OPTS_COLLECTIVE = 1 << 2,
} sim_opts_set;

/* Reads [scenario] of an INI file into s. */
gboolean sim_scenario_load(sim_scenario *s, const char *path, sim_opts_set set, GError **error);
/* Adds the scenario options to ctx; after g_option_context_parse(), call
 * sim_scenario_apply_options() to validate and copy them into s. */
typedef struct sim_scenario_opts sim_scenario_opts;
sim_scenario_opts *sim_scenario_opts_new(GOptionContext *ctx, sim_opts_set set);
gboolean sim_scenario_apply_options(sim_scenario *s, const sim_scenario_opts *o, GError **error);
void sim_scenario_opts_free(sim_scenario_opts *o);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sim_scenario_opts, sim_scenario_opts_free)


#endif
