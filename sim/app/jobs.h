/* Several jobs on one cluster: a scenario file whose [scenario] group describes the cluster
 * (system, nodes, topology, network model, device, iterations, outputs) and whose [job NAME]
 * groups each describe a job (model, strategy, degrees, batch... and `nodes = N` or
 * `node-list = 0-15,32-47`).
 *
 * The data flow: the file is read once into typed per-job scenarios (each a sim_scenario: the
 * cluster's keys, then the job's group read by the same parser as [scenario]); the jobs are
 * placed on the cluster's nodes (sim/placement.h); each job's plan is built by its strategy as
 * if the job ran alone on its nodes, every device unfolded; the plans are appended into one
 * task graph whose devices are the cluster's devices of the job's nodes, and that graph runs on
 * one engine and one network, so that the jobs' collectives share links. Each job is measured
 * on its own devices. */
#ifndef DTSIM_JOBS_H
#define DTSIM_JOBS_H

#include <glib.h>
#include <stdint.h>
#include <stdio.h>

#include "measure.h"
#include "scenario.h"

typedef struct {
  char *name;
  sim_scenario s;               /* the job's: the cluster's keys and its own, nodes = its */
  GArray *nodes;                /* uint32_t: the cluster node of each of its nodes, in order */
  sim_report report;            /* after sim_jobs_simulate() */
} sim_job;

typedef struct {
  char *path;                   /* the scenario file */
  GPtrArray *jobs;              /* sim_job *, in file order */
  uint32_t devices;             /* of the whole cluster */
  uint64_t events;              /* of the run together */
  double sim_wall_s;
} sim_jobs;

/* Reads the [job NAME] groups of cluster->jobs_file: refuses job keys in [scenario] (or given
 * as options), cluster keys in a job, unknown keys, --symmetry on in a job, strategies that
 * cannot share a cluster, and placements that do not fit (errors name file, line and key). */
sim_jobs *sim_jobs_load(const sim_scenario *cluster, GError **error);
void sim_jobs_free(sim_jobs *j);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sim_jobs, sim_jobs_free)

/* TRUE for the keys of [scenario] when a file holds jobs (the cluster, the outputs, the
 * iterations and the memory limit of the run, failed links). */
gboolean sim_jobs_cluster_key(const char *key);

/* Simulates the jobs together (writes the cluster's --trace and --csv) and fills each job's
 * report. */
gboolean sim_jobs_simulate(const sim_scenario *cluster, sim_jobs *j, const char *command_line,
                           GError **error);

/* A section per job, or (cluster->json) one object with a `jobs` array. */
void sim_jobs_print(FILE *out, const sim_scenario *cluster, const sim_jobs *j);

#endif
