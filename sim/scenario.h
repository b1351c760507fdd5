/* A scenario: everything `dtsim run`, `sweep`, `collective`, `search` and the `dtsim-mpi`
 * commands need to know, parsed once into typed values from defaults, a scenario INI file
 * (group [scenario]) and command-line options with the same names, in that order.
 *
 * Every key is declared once, with its default, its range and its help text, in a table beside
 * the code that reads it (the cluster's in simulate.c, the model's in costs.c, each strategy's
 * in its strategy_*.c, the sweep's in sweep.c, the collective's in collective.c). The tables are
 * option groups: scenario.c collects them, builds the GOptionContext entries of the commands
 * that take them and reads INI files through the same validators. A key of a strategy's group
 * given with another strategy is refused, never ignored. Each value remembers where it came
 * from, so a problem found later (a fabric of the wrong scope, a device that does not load) is
 * reported as "FILE:LINE: [scenario] key" or "--key". */
#ifndef DTSIM_SCENARIO_H
#define DTSIM_SCENARIO_H

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#include "workloads.h"
#include "wl_transformer.h"
#include "comm_net.h"
#include "coll.h"

typedef struct sim_strategy sim_strategy;

typedef enum { SIM_SCHEDULE_GPIPE, SIM_SCHEDULE_1F1B, SIM_SCHEDULE_INTERLEAVED } sim_schedule;
typedef enum { SIM_HYBRID_DP_PP, SIM_HYBRID_OWT } sim_hybrid_kind;
typedef enum { SIM_SCALING_WEAK, SIM_SCALING_STRONG } sim_scaling;
typedef enum { SIM_RECOMPUTE_NONE, SIM_RECOMPUTE_SELECTIVE, SIM_RECOMPUTE_FULL } sim_recompute;

/* Which commands take a key. */
typedef enum {
  SIM_OPTS_RUN = 1 << 0,        /* run, and every command that simulates iterations */
  SIM_OPTS_SWEEP = 1 << 1,      /* sweep axes */
  SIM_OPTS_COLLECTIVE = 1 << 2, /* one collective */
  SIM_OPTS_SEARCH = 1 << 3,     /* search over configurations */
  SIM_OPTS_CLUSTER = 1 << 4,    /* describes the cluster and device: every command above */
} sim_opts_set;
/* What each command takes. */
#define SIM_CMD_RUN (SIM_OPTS_RUN | SIM_OPTS_CLUSTER)
#define SIM_CMD_SWEEP (SIM_OPTS_RUN | SIM_OPTS_CLUSTER | SIM_OPTS_SWEEP)
#define SIM_CMD_SEARCH (SIM_OPTS_RUN | SIM_OPTS_CLUSTER | SIM_OPTS_SEARCH)
#define SIM_CMD_COLLECTIVE (SIM_OPTS_COLLECTIVE | SIM_OPTS_CLUSTER)

typedef struct {
  /* What is trained (costs.c). */
  char *model;                  /* zoo name, workload file or transformer: spec */
  int64_t batch;                /* per-device mini-batch, samples */
  wl_precision precision;
  wl_optimizer optimizer;
  char *calibration;            /* overlay INI, or NULL */
  int64_t threads;              /* hardware threads of a Phi or CPU (0: the device's all) */
  gboolean synthetic;           /* input already on the device */
  int64_t seq_len;              /* sequence length override, tokens (0: the model's) */
  /* The cluster (simulate.c). */
  char *system;                 /* system preset name or INI file */
  char *device;                 /* device override, or NULL */
  int64_t nodes;
  int64_t devices_per_node;     /* 0: the preset's */
  char *intra, *inter;          /* fabric overrides, or NULL */
  char *topology;               /* inter-node topology, or NULL for the preset's */
  comm_net_model net_model;
  /* The run (simulate.c). */
  const sim_strategy *strategy;
  int64_t iterations;
  gboolean strict;              /* a configuration that does not fit in memory is an error */
  uint64_t max_memory;          /* bytes this process may take (0: half the physical memory) */
  /* dp and the data-parallel part of hybrid and 3d (strategy_dp.c). */
  const comm_coll_algorithm *allreduce;
  gboolean overlap;
  uint64_t bucket_bytes;        /* gradient bucket size, bytes */
  gboolean symmetry;            /* dp: one device stands for all (exact on both networks) */
  /* ps (strategy_ps.c). */
  int64_t ps_count;
  comm_ps_placement ps_placement;
  /* pp, mp and hybrid (strategy_pp.c, strategy_hybrid.c). */
  int64_t micro_batches;        /* pipeline micro-batches per iteration */
  sim_schedule schedule;
  int64_t stages;               /* pipeline stages per replica (0: all devices of a replica) */
  GArray *split;                /* int64_t first layer index of stages 2.., or NULL */
  sim_hybrid_kind hybrid;
  /* 3d (tensor x pipeline x data parallel). */
  int64_t tp, pp, dp;           /* degrees; dp 0: devices / (tp pp) */
  int64_t global_batch;         /* samples per iteration over the whole job (0: batch x dp) */
  int64_t micro_batch;          /* samples per micro-batch (0: 1) */
  int64_t interleave;           /* model chunks per device (interleaved schedule) */
  gboolean sequence_parallel;
  gboolean tp_overlap;          /* tensor-parallel collectives beside the GEMMs */
  wl_attention attention;       /* flash or unfused */
  sim_recompute recompute;
  int64_t zero;                 /* ZeRO stage 0..3 */
  /* Outputs (simulate.c). */
  gboolean json;
  char *trace, *csv;
  int64_t trace_limit;          /* most trace events written */
  int64_t trace_procs;          /* most trace processes of each kind (devices, links...) */
  /* Sweep axes (sweep.c): NULL when the axis is not swept. */
  GArray *devices_list;         /* int64_t device counts */
  GArray *nodes_list;           /* int64_t node counts */
  GPtrArray *strategy_list;     /* const sim_strategy * */
  GPtrArray *allreduce_list;    /* const comm_coll_algorithm * */
  GArray *batch_list;           /* int64_t batches */
  sim_scaling scaling;
  char *plot;                   /* SVG output */
  /* One collective (collective.c). */
  comm_coll_op coll_op;
  GArray *coll_bytes;           /* uint64_t sizes, bytes */
  const comm_coll_algorithm *coll_algorithm;
  double reduce_GBps;           /* reduction rate, 1e9 bytes/s; < 0: the device's */
  uint64_t chunk_bytes;         /* pipeline chunk of chains and trees (0: best for the size) */
  double launch_us, step_us;    /* software costs, microseconds */
  int64_t root;
  gboolean steps;               /* rings step by step */
  /* Search (search.c). */
  int64_t top;                  /* rows printed */
  int64_t jobs;                 /* threads simulating candidates (0: one per processor) */
  /* Where each key's value came from: key name -> "--key" or "FILE:LINE: [scenario] key";
   * and the set of keys the user gave (the others are at their defaults). */
  GHashTable *origin, *given;
} sim_scenario;

/* ---- Keys and groups ----------------------------------------------------------------------- */

typedef enum {
  SIM_KEY_STRING,     /* char *, non-empty */
  SIM_KEY_INT,        /* int64_t in [min, max] */
  SIM_KEY_SIZE,       /* uint64_t bytes with K/M/G suffixes, in [min, max] */
  SIM_KEY_MIB,        /* uint64_t bytes given as a (fractional) number of MiB */
  SIM_KEY_DOUBLE,     /* double in [min, max] */
  SIM_KEY_ONOFF,      /* gboolean: on|off */
  SIM_KEY_FLAG,       /* gboolean set by the bare option */
  SIM_KEY_CHOICE,     /* an enum: the index of the value in `choices` ("a|b|c") */
  SIM_KEY_REF,        /* const void *: a registry entry found by `resolve` */
  SIM_KEY_INT_LIST,   /* GArray of int64_t in [min, max] (a,b,c; a..b doubles) */
  SIM_KEY_SIZE_LIST,  /* GArray of uint64_t bytes (a,b,c; a..b doubles) */
  SIM_KEY_REF_LIST,   /* GPtrArray of registry entries */
} sim_key_kind;

/* Finds a registry entry by name; `where` names the option or file:line:key in the error. */
typedef const void *(*sim_key_resolve_fn)(const char *name, const char *where, GError **error);

typedef struct {
  const char *name;             /* --name on the command line, key in [scenario] */
  sim_key_kind kind;
  size_t offset;                /* of the field in sim_scenario */
  const char *def;              /* default, parsed like any value; NULL: zero */
  int64_t min, max;             /* INT, SIZE, MIB, DOUBLE and list bounds */
  const char *choices;          /* CHOICE: '|'-separated */
  sim_key_resolve_fn resolve;   /* REF, REF_LIST */
  unsigned commands;            /* sim_opts_set: the commands that take it */
  const char *strategies;       /* '|'-separated strategies it applies to; NULL: the group's */
  const char *arg;              /* argument name in --help */
  const char *help;
} sim_key;

typedef struct {
  const char *name;             /* e.g. "ps" */
  const char *strategies;       /* '|'-separated strategies the keys apply to; NULL: all */
  const sim_key *keys;
  size_t n_keys;
} sim_key_group;

#define SIM_KEY_OFF(field) offsetof(sim_scenario, field)
#define SIM_KEY_GROUP(gname, gstrategies, table) \
  {.name = gname, .strategies = gstrategies, .keys = table, .n_keys = G_N_ELEMENTS(table)}

/* The groups, declared beside their consumers. */
extern const sim_key_group sim_keys_model, sim_keys_cluster, sim_keys_run, sim_keys_output,
    sim_keys_dp, sim_keys_ps, sim_keys_pp, sim_keys_hybrid, sim_keys_3d, sim_keys_sweep,
    sim_keys_collective, sim_keys_search;

/* ---- The scenario ---------------------------------------------------------------------------- */

/* Every key at its default. */
void sim_scenario_init(sim_scenario *s);
void sim_scenario_clear(sim_scenario *s);
/* A deep copy; clear it with sim_scenario_clear(). */
void sim_scenario_copy(sim_scenario *dst, const sim_scenario *src);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(sim_scenario, sim_scenario_clear)

/* Where the value of `key` came from: "FILE:LINE: [scenario] key" or "--key". */
const char *sim_scenario_where(const sim_scenario *s, const char *key);
/* TRUE when the user gave `key` (in the file or as an option). */
gboolean sim_scenario_given(const sim_scenario *s, const char *key);
/* Sets a key from text as the program would from an option (the origin becomes `where`, or
 * "--key" when NULL). For programs that build scenarios (sweeps, searches, benchmarks, tests). */
gboolean sim_scenario_set(sim_scenario *s, const char *key, const char *value, const char *where,
                          GError **error);

/* Every output (--trace, --csv, --plot) can be written, and none is the same file as an input
 * (`scenario_file` or NULL, --model, --calibration, --system, --device, --intra, --inter) or
 * another output: checked before any work, errors name the keys. */
gboolean sim_scenario_check_files(const sim_scenario *s, const char *scenario_file,
                                  GError **error);

/* Reads [scenario] of an INI file into s; keys the commands in `set` do not take are refused. */
gboolean sim_scenario_load(sim_scenario *s, const char *path, unsigned set, GError **error);

/* Adds the options of the commands in `set` to ctx (one GOptionGroup per key group, all shown
 * by --help); after g_option_context_parse(), sim_scenario_apply_options() validates them into
 * s. */
typedef struct sim_scenario_opts sim_scenario_opts;
sim_scenario_opts *sim_scenario_opts_new(GOptionContext *ctx, unsigned set);
gboolean sim_scenario_apply_options(sim_scenario *s, const sim_scenario_opts *o, GError **error);
void sim_scenario_opts_free(sim_scenario_opts *o);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sim_scenario_opts, sim_scenario_opts_free)

/* Refuses keys given for a strategy they do not apply to (with a sweep or search, for none of
 * the strategies it covers), and combinations no strategy can simulate. Call once after the
 * file and the options are in. */
gboolean sim_scenario_check(const sim_scenario *s, GError **error);

/* A command line: an optional positional SCENARIO.ini, then options (which override it); with
 * SIM_OPTS_SWEEP a --nodes list is the --nodes-list axis. Ends with sim_scenario_check(). */
gboolean sim_scenario_parse_args(sim_scenario *s, unsigned set, const char *summary, int argc,
                                 char **argv, GError **error);

/* The arguments of a sweep with a `--nodes LIST` rewritten as `--nodes-list LIST` (a NULL-
 * terminated vector of copies, argc + 1 entries at most); sim_scenario_parse_args() does this
 * itself. */
GPtrArray *sim_scenario_sweep_args(int argc, char **argv);

/* The strategy's name, for reports. */
const char *sim_scenario_strategy_name(const sim_scenario *s);

#endif
