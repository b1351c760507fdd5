/* The strategy interface: everything the rest of dtsim may know of a parallel strategy.
 *
 * A strategy is one file (sim/strategies/strategy_*.c) that defines one `sim_strategy` and one line in the
 * registry (sim/strategies/plan.c). It declares:
 *   - its flags: what kind of plan it builds (costed per micro-batch, a transformer's, with
 *     parameter servers, foldable, replayable under MPI...) and which shared keys it takes
 *     (--allreduce, --overlap, --schedule...); the keys of its own option group are refused
 *     with any other strategy;
 *   - check(): its feasibility rules on a cluster shape, which `run` applies before building
 *     and `search` applies to every candidate instead of repeating them;
 *   - build(): the task graph of its plan from the cost table (or, for a transformer strategy,
 *     from the model's hyper-parameters), on the topology and network the driver made;
 *   - its search families: the axes `search` tries and how a candidate's dependent keys follow.
 *
 * Nothing outside a strategy's file compares strategy names: callers ask the flags. */
#ifndef DTSIM_STRATEGY_H
#define DTSIM_STRATEGY_H

#include <glib.h>
#include <stdint.h>

#include "devices.h"
#include "plan.h"
#include "report.h"
#include "scenario.h"

/* ---- Search axes ----------------------------------------------------------------------------- */

/* What the axes' values depend on: the cluster and the job. */
typedef struct {
  uint64_t devices, nodes, devices_per_node;
  uint64_t global_batch;      /* samples per iteration over the whole job */
  uint32_t layers, heads;     /* transformer blocks and attention heads (0: not a transformer) */
  uint64_t capacity_bytes;    /* memory of one device (0: unknown) */
  wl_tf tf;                   /* the transformer (zeroed when the model is not one) */
  const comm_topology *topology;  /* the cluster, built once for the whole search (time_bound) */
  const dev_device *device;       /* its device kind with the calibration, loaded once */
  /* Collective timers on the analytic network (sim_coll_timer, keyed by the --allreduce
   * algorithm's name) that time bounds keep from one candidate to the next, so that each
   * collective is timed once per search; the search frees them. NULL: none kept. */
  GHashTable *coll_timers;
} sim_search_ctx;

/* An axis: the scenario keys it sets ('|'-separated; the user giving one fixes the axis) and
 * its values on this cluster, each a setting "key=value[ key=value...]" appended to `out`. */
typedef struct {
  const char *keys;
  void (*values)(const sim_search_ctx *c, GPtrArray *out);
} sim_search_axis;

/* A family of candidates of one strategy: settings every candidate has (or NULL), the axes, and
 * derive(), which sets the keys that follow from the others (appending " key=value" to
 * `derived`) or returns why the combination cannot divide (a short reason, counted by the
 * search; "" with *error set for an internal error). */
typedef struct {
  const char *fixed;
  const sim_search_axis *axes;
  size_t n_axes;
  const char *(*derive)(sim_scenario *s, const sim_search_ctx *c, GString *derived,
                        GError **error);
  /* After the strategy's check: a bound that drops candidates before they are simulated (a
   * memory lower bound), or NULL. */
  const char *(*bound)(const sim_scenario *s, const sim_search_ctx *c);
  /* A lower bound of a candidate's iteration time on the analytic network, from the costs its
   * plan would have, before building the plan; 0 when there is none. The search simulates
   * candidates in the order of their bounds and skips those that cannot enter its top --top
   * (docs/search.md). *memory_bytes: the memory per device the plan will report (0: not
   * known); a candidate above the device's is not simulated. Called on one thread; NULL: no
   * bound. */
  sim_time_ps (*time_bound)(const sim_scenario *s, const sim_search_ctx *c,
                            uint64_t *memory_bytes);
} sim_search_family;

#define SIM_SEARCH_FAMILY(fixed_settings, axes_table, derive_fn) \
  {fixed_settings, axes_table, G_N_ELEMENTS(axes_table), derive_fn, NULL, NULL}

/* The reasons a combination is dropped before it is simulated (shared by the strategies'
 * checks and derive functions, counted by the search). */
#define SIM_DROP_NOT_MULTIPLE_DEVICES "global batch not a multiple of the devices"
#define SIM_DROP_NOT_MULTIPLE_REPLICAS "global batch not a multiple of the data-parallel replicas"
#define SIM_DROP_MICRO_BATCHES "micro-batches do not divide the batch of a replica"

/* Appends "value" formatted to `out` (an axis's values). */
void sim_search_add_value(GPtrArray *out, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* Sets a derived key of a candidate and records it in `derived`. */
gboolean sim_search_derive(sim_scenario *s, GString *derived, const char *key, uint64_t value,
                           GError **error);

/* derive() of families where every device trains global batch / devices samples. */
const char *sim_search_per_device(sim_scenario *s, const sim_search_ctx *c, GString *derived,
                                  GError **error);

/* Axes shared by the pipelined strategies (sim/strategies/strategy_pp.c): micro-batches per iteration,
 * and the GPipe and 1F1B schedules. */
void sim__pp_micro_batches_values(const sim_search_ctx *c, GPtrArray *out);
void sim__pp_schedule_values(const sim_search_ctx *c, GPtrArray *out);

/* ---- The interface --------------------------------------------------------------------------- */

/* The shape of the cluster a strategy is checked against. */
typedef struct {
  uint64_t devices, nodes, devices_per_node;
} sim_shape;

struct sim_strategy {
  const char *name;
  const char *description;
  unsigned flags;             /* sim_strategy_flags */
  /* Flags that depend on the scenario's own keys (hybrid's kind), or NULL. */
  unsigned (*scenario_flags)(const sim_scenario *s);
  /* Its own option group, or NULL: refused with the strategies lacking the group's flags
   * (needs), or with every other strategy when the group needs none. */
  const sim_key_group *keys;
  /* Its cost table when not the common one (sim_costs_build), or NULL. */
  sim_costs *(*costs)(const sim_scenario *s, const char *device, uint64_t batch, GError **error);
  /* Feasibility on a cluster shape: NULL when the scenario can run, else a short reason (for
   * the search's tallies) with *error set to the full message naming the options. NULL
   * function: every shape can run. */
  const char *(*check)(const sim_scenario *s, const sim_shape *shape, GError **error);
  /* The task graph (costs is NULL for SIM_STRATEGY_TRANSFORMER strategies). */
  sim_plan *(*build)(const sim_costs *costs, const sim_plan_opts *opts, GError **error);
  /* Adds the strategy's own figures (kept in plan->extra) to a measured report, or NULL. */
  void (*report)(const sim_plan *plan, sim_report *r);
  /* Search families, tried for transformer models when the strategy has
   * SIM_STRATEGY_TRANSFORMER, for the other models otherwise. */
  const sim_search_family *search;
  size_t n_search;
};

/* The strategy's flags for a scenario (its own and those its keys add). */
unsigned sim_strategy_flags_for(const sim_strategy *st, const sim_scenario *s);
/* The strategy that plans transformers (SIM_STRATEGY_TRANSFORMER). */
const sim_strategy *sim_strategy_transformer(void);
/* The strategy a scenario runs: its own, or the transformer strategy when the model is a
 * transformer and the strategy's form of it is that (SIM_STRATEGY_TRANSFORMER_FORM); an error
 * naming --strategy when the strategy cannot train the model. */
const sim_strategy *sim_strategy_for_scenario(const sim_scenario *s, GError **error);
/* Names of the registered strategies having every flag of `flags`, joined by `sep`. */
char *sim_strategy_names_with(unsigned flags, const char *sep);

/* The cost table of --strategy chaos (sim/strategies/strategy_chaos.c): one sample's passes on one of
 * --threads concurrent threads of the device, and each layer's shared-weights cost. */
sim_costs *sim_chaos_costs_build(const sim_scenario *s, const char *device_name, GError **error);

#endif
