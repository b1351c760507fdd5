/* A scenario: everything `dtsim run`, `sweep`, `collective`, `search`, `describe`, `calibrate`
 * and the `dtsim-mpi` commands need to know, parsed once into typed values from defaults, a
 * scenario INI file (group [scenario]) and command-line options with the same names, in that
 * order. This header is the typed configuration every layer of sim/ reads (strategies, driver,
 * application); its parsing is sim/app/scenario.c.
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
#include "devices.h"

typedef struct sim_strategy sim_strategy;

/* What a strategy is and which shared keys it takes (sim/strategies/strategy.h). A key or key group that
 * needs a flag is refused with a strategy that lacks it. */
typedef enum {
  SIM_STRATEGY_STAGED = 1u << 0,        /* a replica's devices hold consecutive layers: --batch
                                         * is a pipeline's */
  SIM_STRATEGY_PIPELINED = 1u << 1,     /* passes are costed per micro-batch */
  SIM_STRATEGY_TRANSFORMER = 1u << 2,   /* plans a transformer from its hyper-parameters */
  SIM_STRATEGY_TRANSFORMER_FORM = 1u << 3, /* a transformer trains as the transformer strategy
                                            * with one tensor and one pipeline rank */
  SIM_STRATEGY_SERVERS = 1u << 4,       /* parameter servers (dedicated ones add nodes) */
  SIM_STRATEGY_FOLDABLE = 1u << 5,      /* --symmetry on: one device stands for all */
  SIM_STRATEGY_REPLAYABLE = 1u << 6,    /* dtsim-mpi replay runs its plan for real */
  SIM_STRATEGY_ONE_DEVICE = 1u << 7,    /* speedups are over its own one-device form (else
                                         * over plain training on one device) */
  SIM_STRATEGY_THREADS = 1u << 8,       /* the threads of one device train: speedup over one
                                         * thread */
  SIM_STRATEGY_ALLREDUCE = 1u << 9,     /* takes --allreduce */
  SIM_STRATEGY_OVERLAP = 1u << 10,      /* takes --overlap and --bucket-mib */
  SIM_STRATEGY_MICRO_BATCHES = 1u << 11, /* takes --micro-batches and --stages */
  SIM_STRATEGY_SCHEDULE = 1u << 12,     /* takes --schedule */
  SIM_STRATEGY_SPLIT = 1u << 13,        /* takes --split */
  SIM_STRATEGY_KINDS = 1u << 14,        /* takes --hybrid */
} sim_strategy_flags;

typedef enum { SIM_SCALING_WEAK, SIM_SCALING_STRONG } sim_scaling;

/* Which commands take a key. */
typedef enum {
  SIM_OPTS_RUN = 1 << 0,        /* run, and every command that simulates iterations */
  SIM_OPTS_SWEEP = 1 << 1,      /* sweep axes */
  SIM_OPTS_COLLECTIVE = 1 << 2, /* one collective */
  SIM_OPTS_SEARCH = 1 << 3,     /* search over configurations */
  SIM_OPTS_CLUSTER = 1 << 4,    /* describes the cluster and device: every command above */
  SIM_OPTS_DESCRIBE = 1 << 5,   /* dtsim describe: the model's shapes, counts and memory */
  SIM_OPTS_CALIBRATE = 1 << 6,  /* dtsim calibrate: fitting the device models */
} sim_opts_set;
/* What each command takes. */
#define SIM_CMD_RUN (SIM_OPTS_RUN | SIM_OPTS_CLUSTER)
#define SIM_CMD_SWEEP (SIM_OPTS_RUN | SIM_OPTS_CLUSTER | SIM_OPTS_SWEEP)
#define SIM_CMD_SEARCH (SIM_OPTS_RUN | SIM_OPTS_CLUSTER | SIM_OPTS_SEARCH)
#define SIM_CMD_COLLECTIVE (SIM_OPTS_COLLECTIVE | SIM_OPTS_CLUSTER)
#define SIM_CMD_DESCRIBE SIM_OPTS_DESCRIBE
#define SIM_CMD_CALIBRATE SIM_OPTS_CALIBRATE

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
  /* Chakra execution traces (chakra.c). */
  char *chakra;                 /* folder of traces that is the workload, or NULL */
  char *chakra_out;             /* folder to write the job's traces to, or NULL */
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
  comm_ps_workers ps_workers;   /* a worker per device, or per node with replicas */
  comm_ps_sharding ps_sharding; /* tensors on servers by bytes, or per variable in turn */
  /* pp, mp and hybrid (strategy_pp.c, strategy_hybrid.c). */
  int64_t micro_batches;        /* pipeline micro-batches per iteration */
  wl_schedule schedule;
  int64_t stages;               /* pipeline stages per replica (0: all devices of a replica) */
  GArray *split;                /* int64_t first layer index of stages 2.., or NULL */
  /* 3d (tensor x pipeline x data parallel). */
  int64_t tp, pp, dp;           /* degrees; dp 0: devices / (tp pp) */
  int64_t global_batch;         /* samples per iteration over the whole job (0: batch x dp) */
  int64_t micro_batch;          /* samples per micro-batch (0: 1) */
  int64_t interleave;           /* model chunks per device (interleaved schedule) */
  gboolean sequence_parallel;
  gboolean tp_overlap;          /* tensor-parallel collectives beside the GEMMs */
  wl_attention attention;       /* flash or unfused */
  wl_recompute recompute;
  int64_t zero;                 /* ZeRO stage 0..3 */
  int64_t ep;                   /* expert-parallel degree (1: none) */
  int64_t etp;                  /* expert tensor-parallel degree (1: whole experts) */
  int64_t cp;                   /* context-parallel degree (1: none) */
  int cp_comm;                  /* sim_cp_comm: p2p, all-gather or a2a */
  double moe_capacity;          /* expert capacity factor (0: dropless) */
  double moe_imbalance;         /* busiest expert's tokens over the mean (>= 1) */
  char *pp_layout;              /* Megatron-Core's pipeline layout string, or NULL */
  gboolean embedding_in_split;  /* the embedding counts as a block when spreading blocks */
  gboolean loss_in_split;       /* the loss (LM head) likewise */
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
  /* The whole training run (trainrun_keys.c): 0 where not given. */
  int64_t train_tokens, train_samples;
  double gpu_hour_cost;         /* USD per device-hour (0 and not given: no cost reported) */
  double mtbf_hours;            /* mean time between failures of one device, hours */
  double checkpoint_interval_min, checkpoint_write_s, restart_s;
  /* Stragglers and failed links (faults.c): NULL when none. */
  GArray *stragglers;           /* sim_straggler */
  GArray *links_down;           /* comm_link_name */
  /* Views of link load (linkviews.c). */
  int64_t trace_links;          /* busiest links shown as counters in --trace */
  char *link_heatmap;           /* SVG output, or NULL */
  /* Search (search.c). */
  int rank_by;                  /* sim_search_rank_by */
  int64_t top;                  /* rows printed */
  int64_t jobs;                 /* threads simulating candidates (0: one per processor) */
  double max_time_s;            /* wall-clock seconds a search may take (0: no limit) */
  /* Where each key's value came from: key name -> "--key" or "FILE:LINE: [scenario] key";
   * and the set of keys the user gave (the others are at their defaults). */
  GHashTable *origin, *given;
  /* The values of key groups that keep their own typed struct (sim_key_group.own_size), by
   * the group's place in the scenario's list; see sim_scenario_own(). */
  gpointer own[32];
  /* The scenario file when it holds [job NAME] groups (sim/app/jobs.h), else NULL. */
  char *jobs_file;
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
  SIM_KEY_ITEM_LIST,  /* GArray of `item_size` records, each item parsed by `parse`; the
                       * option is repeatable (each adds), a file gives a comma-separated list */
} sim_key_kind;

/* Finds a registry entry by name; `where` names the option or file:line:key in the error. */
typedef const void *(*sim_key_resolve_fn)(const char *name, const char *where, GError **error);
/* Parses one item of an ITEM_LIST into `out` (item_size bytes). */
typedef gboolean (*sim_key_parse_fn)(const char *item, const char *where, void *out,
                                     GError **error);

typedef struct {
  const char *name;             /* --name on the command line, key in [scenario] */
  sim_key_kind kind;
  size_t offset;                /* of the field in sim_scenario */
  const char *def;              /* default, parsed like any value; NULL: zero */
  int64_t min, max;             /* INT, SIZE, MIB, DOUBLE and list bounds */
  const char *choices;          /* CHOICE: '|'-separated, or NULL with choice_name: */
  const char *(*choice_name)(int i); /* CHOICE: the owning module's name of enum value i */
  int n_choices;                /* CHOICE with choice_name: the values 0 .. n_choices - 1 */
  sim_key_resolve_fn resolve;   /* REF, REF_LIST */
  sim_key_parse_fn parse;       /* ITEM_LIST */
  size_t item_size;             /* ITEM_LIST: bytes of one parsed item */
  unsigned commands;            /* sim_opts_set: the commands that take it */
  unsigned needs;               /* sim_strategy_flags a strategy needs to take it; 0: the
                                 * group's */
  const char *arg;              /* argument name in --help */
  const char *help;
} sim_key;

typedef struct {
  const char *name;             /* e.g. "ps" */
  size_t own_size;              /* > 0: the keys' offsets are into a struct of this size that
                                 * the scenario keeps for the group (a strategy's own options,
                                 * sim_scenario_own); 0: into sim_scenario */
  unsigned needs;               /* sim_strategy_flags a strategy needs to take the keys; 0:
                                 * every strategy takes them */
  const sim_key *keys;
  size_t n_keys;
} sim_key_group;

#define SIM_KEY_OFF(field) offsetof(sim_scenario, field)
/* A CHOICE key's names from the module that owns the enumeration: defines NAME_choice(int)
 * from `const char *fn(type)`, for .choice_name. */
#define SIM_CHOICES_OF(fn, type) \
  static const char *fn##_choice(int i) { return fn((type)i); }
#define SIM_KEY_GROUP(gname, gneeds, table) \
  {.name = gname, .needs = gneeds, .keys = table, .n_keys = G_N_ELEMENTS(table)}
/* A group whose keys fill a typed struct of its own (offsets from SIM_KEY_OWN_OFF). */
#define SIM_KEY_OWN_GROUP(gname, gneeds, table, type) \
  {.name = gname, .own_size = sizeof(type), .needs = gneeds, .keys = table, \
   .n_keys = G_N_ELEMENTS(table)}
#define SIM_KEY_OWN_OFF(type, field) offsetof(type, field)

/* The groups, declared beside their consumers (each strategy's own group is its
 * sim_strategy.keys, sim/strategies/strategy.h). */
extern const sim_key_group sim_keys_model, sim_keys_cluster, sim_keys_run, sim_keys_output,
    sim_keys_sweep, sim_keys_collective, sim_keys_search, sim_keys_chakra, sim_keys_trainrun,
    sim_keys_faults, sim_keys_links;

/* ---- The scenario ---------------------------------------------------------------------------- */

/* Every key at its default. */
void sim_scenario_init(sim_scenario *s);
void sim_scenario_clear(sim_scenario *s);
/* A deep copy; clear it with sim_scenario_clear(). */
void sim_scenario_copy(sim_scenario *dst, const sim_scenario *src);
/* Gives one key of dst the value, origin and given state it has in src (a scratch scenario
 * reused for many settings goes back to its template: sim/app/search.c). */
void sim_scenario_copy_key(sim_scenario *dst, const sim_scenario *src, const char *key);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(sim_scenario, sim_scenario_clear)

/* The typed struct of a group declared with SIM_KEY_OWN_GROUP (a strategy's own options). */
gconstpointer sim_scenario_own(const sim_scenario *s, const sim_key_group *group);

/* Where the value of `key` came from: "FILE:LINE: [scenario] key" or "--key". */
const char *sim_scenario_where(const sim_scenario *s, const char *key);
/* TRUE when the user gave `key` (in the file or as an option). */
gboolean sim_scenario_given(const sim_scenario *s, const char *key);
/* Sets a key from text as the program would from an option (the origin becomes `where`, or
 * "--key" when NULL). For programs that build scenarios (sweeps, searches, benchmarks, tests). */
gboolean sim_scenario_set(sim_scenario *s, const char *key, const char *value, const char *where,
                          GError **error);

/* TRUE when some group declares `key` (a program that reads tables of options checks a column
 * it may not know before it sets it). */
gboolean sim_scenario_has_key(const char *key);

/* TRUE when the scalar `key` (int, choice, on/off or registry entry) holds `value`. */
gboolean sim_scenario_key_equals(const sim_scenario *s, const char *key, const char *value);

/* Every output (--trace, --csv, --plot) can be written, and none is the same file as an input
 * (`scenario_file` or NULL, --model, --calibration, --system, --device, --intra, --inter) or
 * another output: checked before any work, errors name the keys. */
gboolean sim_scenario_check_files(const sim_scenario *s, const char *scenario_file,
                                  GError **error);

/* Reads [scenario] of an INI file into s; keys the commands in `set` do not take are refused.
 * A file with [job NAME] groups sets s->jobs_file (`run` only; other commands refuse them). */
gboolean sim_scenario_load(sim_scenario *s, const char *path, unsigned set, GError **error);
/* Reads the keys of `group` of a loaded INI file into s as sim_scenario_load() reads
 * [scenario] (values named "FILE:LINE: [group] key"), but for the keys in the NULL-terminated
 * `skip` (or NULL), which the caller reads. */
typedef struct dt_ini dt_ini;
gboolean sim_scenario_load_group(sim_scenario *s, const dt_ini *ini, const char *group,
                                 unsigned set, const char *const *skip, GError **error);
/* Every key group, in --help order (n receives how many). */
const sim_key_group *const *sim_scenario_key_groups(gsize *n);

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

/* How one command uses a shared key where it differs from the key's table: its own default
 * (describe's --batch is one sample, run's 64), a short option name, or what the value means
 * to it (calibrate's --device picks the measured rows to fit). */
typedef struct {
  const char *key;
  const char *def;              /* the command's default, parsed like any value (NULL: the
                                 * key's) */
  char short_name;              /* -X on this command's line (0: none); not for flags */
  const char *help;             /* the command's --help text (NULL: the key's) */
} sim_key_use;

/* The one command-line front end of the commands that take a scenario (dtsim run, sweep,
 * collective, search, describe, calibrate and the dtsim-mpi commands): an optional positional
 * SCENARIO.ini, then options (which override it); with SIM_OPTS_SWEEP a --nodes list is the
 * --nodes-list axis. */
typedef struct {
  unsigned set;                 /* sim_opts_set: the keys it takes */
  const char *summary;          /* --help's summary */
  const char *parameter;        /* --help's usage after the command (NULL: "[SCENARIO.ini]") */
  GOptionEntry *entries;        /* the command's own options, or NULL (their arg_data filled
                                 * by GOption as usual) */
  const sim_key_use *uses;      /* the command's defaults and short names of shared keys,
                                 * ended by {NULL}; or NULL */
  /* NULL: the positional argument is an optional SCENARIO.ini. Else the command reads its
   * positional arguments itself (describe MODEL, calibrate MEASURED.csv): they are returned
   * here as a NULL-terminated copy, no file is loaded, and the command checks its own input
   * and output files (sim_scenario_check_files is not called). */
  char ***args;
  /* Checks the scenario once the file and the options are in (NULL: sim_scenario_check). */
  gboolean (*check)(sim_scenario *s, GError **error);
  /* NULL: GOption prints --help and exits. Else --help in any form is not parsed: this gets
   * the text and parsing stops (dtsim-mpi prints it on one rank). */
  void (*help)(const char *text, gpointer data);
  gpointer help_data;
} sim_command_line;

/* Parses argv into s. FALSE with *error set on bad input; FALSE with no error when help was
 * given to cl->help. */
gboolean sim_scenario_parse_args(sim_scenario *s, const sim_command_line *cl, int argc,
                                 char **argv, GError **error);

/* The arguments of a sweep with a `--nodes LIST` rewritten as `--nodes-list LIST` (a NULL-
 * terminated vector of copies, argc + 1 entries at most); sim_scenario_parse_args() does this
 * itself. */
GPtrArray *sim_scenario_sweep_args(int argc, char **argv);

/* What a scenario names, made from the catalogs (sim/simulate.c, sim/costs.c: the driver makes
 * them; strategies that build without the driver's topology, and chaos's cost table, ask for
 * them here). */
/* The cluster of a scenario; errors name the key where its value came from. */
comm_topology *sim_scenario_topology(const sim_scenario *s, GError **error);

/* The device `device_name` (catalog name or INI file) of a scenario, with a calibration overlay
 * or NULL; errors name the key that chose it (--device or the system preset). */
dev_device *sim_scenario_device(const sim_scenario *s, const char *device_name,
                                const char *calibration, GError **error);

/* The strategy's name, for reports. */
const char *sim_scenario_strategy_name(const sim_scenario *s);

#endif
