/* From a validated scenario to a report: build the cost table, the cluster, the strategy's
 * task graph, run it on the engine with the chosen network model, and measure. Shared by
 * `run`, `sweep` and the MPI driver. */
#ifndef DTSIM_SIMULATE_H
#define DTSIM_SIMULATE_H

#include "coll.h"
#include "devices.h"
#include "measure.h"
#include "scenario.h"
#include "strategy.h"

/* What a simulation built and ran, for callers that need more than the report (dtsim-mpi
 * replay reads the plan and every task's simulated times). */
typedef struct {
  sim_plan *plan;
  sim_exec *exec;             /* task start and end times */
  sim_engine *engine;
  comm_net *net;
  comm_topology *topology;
} sim_outcome;
void sim_outcome_clear(sim_outcome *o);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(sim_outcome, sim_outcome_clear)

typedef struct {
  gboolean with_speedup;      /* also simulate one device to report speedup and efficiency */
  const char *command_line;   /* recorded in the trace */
  sim_outcome *keep;          /* if set, receives the plan and timeline of the run */
  gboolean quiet;             /* no notes on stderr (a search's candidates: thousands of runs) */
} sim_run_opts;

/* The strategy's plan of a scenario: its checks, its cost table (kept in *costs_out, NULL for
 * transformer strategies) and its task graph on the cluster `topo` (`outputs`: the run writes
 * a trace, which unfolds small data-parallel runs). */
sim_plan *sim_scenario_plan(const sim_scenario *s, const comm_topology *topo,
                            comm_net_model net_model, const char *device, gboolean outputs,
                            const sim_strategy **strategy_out, sim_costs **costs_out,
                            GError **error);

/* --strict: a configuration that does not fit in device memory is an error. */
gboolean sim_check_strict(const sim_scenario *s, const sim_report *r, GError **error);

/* Simulates the scenario. Writes --trace and --csv if set. */
gboolean sim_simulate(const sim_scenario *s, const sim_run_opts *o, sim_report *out,
                      GError **error);

/* The cost table for a scenario's model, precision and optimizer at `batch` samples (the
 * per-device batch, or the micro-batch of a pipeline) on `device_name` (catalog name or INI
 * file; the scenario's calibration overlay applies). */
sim_costs *sim_costs_build(const sim_scenario *s, const char *device_name, uint64_t batch,
                           GError **error);

/* Aggregation rate of a parameter server, bytes of gradient per second: the device's reduction
 * rate for servers on a device (--ps-placement gpu), host memory speed otherwise. */
double sim_ps_server_reduce_Bps(comm_ps_placement placement, const sim_costs *costs);

/* The one-device run speedups are measured against: the same model, device, batch, precision
 * and strategy on one device (dp, ps and chaos keep their strategy; pipelines and model
 * parallelism become plain training of the whole mini-batch on one device). Clear it with
 * sim_scenario_clear. */
void sim_scenario_single_device(sim_scenario *one, const sim_scenario *s);

/* Refuses simulations the chosen network model cannot do in reasonable time and memory (the
 * flow model beyond SIM_FLOW_MAX_DEVICES devices), naming the option to change. */
#define SIM_FLOW_MAX_DEVICES 1000000
/* The most devices a scenario may name. */
#define SIM_MAX_DEVICES 1000000
gboolean sim_check_net_scale(uint64_t devices, gboolean flow, GError **error);
/* FALSE with an error when the engine met a scheduling error (sim_engine_error()) or its clock
 * saturated (see sim_engine_saturated()). */
gboolean sim_check_clock(const sim_engine *engine, GError **error);

#endif
