/* Searches: every parallel configuration of a job (model, global batch, cluster) that the
 * strategies allow, ranked by throughput.
 *
 * The space is data: each strategy family lists its axes (scenario keys and the values worth
 * trying on this cluster) and a check that derives the dependent keys (per-device batch, data-
 * parallel degree) or names why a combination cannot divide. A key the user gives fixes its
 * axis. Every candidate is simulated on the analytic network; those that do not fit in device
 * memory or that the strategy refuses are dropped and counted by reason; the best K are
 * simulated again on the flow network and ranked by that.
 *
 * The evaluations are independent and their results are kept by candidate index, so the ranking
 * is the same byte for byte whether they ran on one thread, on a thread pool or on MPI ranks
 * (sim_search_evaluate() runs any share of them). */
#ifndef DTSIM_SEARCH_H
#define DTSIM_SEARCH_H

#include <stdio.h>

#include "measure.h"
#include "scenario.h"
#include "search_out.h"

typedef struct sim_search sim_search;

/* --rank-by: what "best" means (the scenario's rank_by). */
typedef enum {
  SIM_SEARCH_RANK_THROUGHPUT,   /* highest throughput */
  SIM_SEARCH_RANK_TIME,         /* shortest whole run (train_time_s) */
  SIM_SEARCH_RANK_COST,         /* cheapest whole run (train_cost_usd) */
} sim_search_rank_by;

/* Called on the calling thread as evaluations finish. */
typedef void (*sim_search_progress_fn)(guint done, guint total, gpointer data);

/* The command line of `dtsim search` (and `dtsim-mpi search`): an optional SCENARIO.ini, then
 * options. --global-batch is the job's batch for every family; keys of a strategy apply when
 * the search covers that strategy. */
gboolean sim_search_parse_args(sim_scenario *s, int argc, char **argv, GError **error);
/* The check of a scenario read by a front end that parsed the options itself. */
gboolean sim_search_check(sim_scenario *s, GError **error);

/* Enumerates the space of `base`; errors name the option (no family applies, a global batch
 * that no strategy can split...). */
sim_search *sim_search_new(const sim_scenario *base, GError **error);
void sim_search_free(sim_search *S);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sim_search, sim_search_free)

guint sim_search_n_candidates(const sim_search *S);
/* The lower bound of candidate i's analytic iteration time its family gives, picoseconds (0:
 * none), and in *memory_bytes the memory per device its plan will have (0: not known). */
int64_t sim_search_bound_ps(const sim_search *S, guint i, uint64_t *memory_bytes);
const char *sim_search_label(const sim_search *S, guint i);
/* Evaluations per second are only measured by front ends; threads used by sim_search_run. */
guint sim_search_jobs(const sim_search *S);

/* Simulates candidates which[first], which[first + stride], ... (which NULL: candidate j is j)
 * of the n listed, on the analytic network (flow FALSE) or the flow network, on `jobs` threads;
 * out[j] receives the result of the j-th listed. A refusal is a result; other failures end the
 * evaluation with the error of the lowest such j. */
gboolean sim_search_evaluate(const sim_search *S, gboolean flow, const guint *which, guint n,
                             guint first, guint stride, guint jobs, sim_search_progress_fn progress,
                             gpointer data, sim_search_result *out, GError **error);

/* The phases, for front ends that spread the work themselves:
 * 1. the analytic phase, in waves: simulate the n candidates sim_search_next_wave() lists
 *    and hand their results (out[j] for which[j]) to sim_search_wave_done(), until a wave is
 *    empty; then sim_search_rank(). Candidates with a time bound (sim_search_family) go by
 *    bound, and those whose bound cannot reach the best --top, or whose plan's memory is
 *    known to be above the device's, are left out (counted as dropped); without bounds the first wave is every candidate. (Filling
 *    sim_search_analytic(S) for every candidate instead is the same search without pruning.)
 * 2. fill sim_search_flow(S) (one result per finalist, in the order of sim_search_finalists()),
 *    then sim_search_finish(). */
guint sim_search_next_wave(sim_search *S, const guint **which);
void sim_search_wave_done(sim_search *S, const sim_search_result *out);
sim_search_result *sim_search_analytic(sim_search *S);
/* Drops the candidates left out by their bound (sim_search_n_candidates() then counts the
 * simulated ones) and ranks the rest. */
void sim_search_rank(sim_search *S);
/* Whether the waves leave out candidates by their bound (default TRUE): FALSE simulates every
 * candidate, for tests that compare the two. */
void sim_search_set_pruning(sim_search *S, gboolean on);
/* The best K by the analytic ranking, best first; NULL and 0 when the flow phase is skipped. */
const guint *sim_search_finalists(const sim_search *S, guint *n);
sim_search_result *sim_search_flow(sim_search *S);
void sim_search_finish(sim_search *S);

/* Both phases on the search's threads (--jobs), with a progress callback. */
gboolean sim_search_run(sim_search *S, sim_search_progress_fn progress, gpointer data,
                        GError **error);

/* The ranking, after sim_search_finish(): the rows printed (at most --top), best first, each
 * a candidate index and its result on the ranking network (flow, or analytic when the flow
 * phase was skipped). */
guint sim_search_n_rows(const sim_search *S);
guint sim_search_row(const sim_search *S, guint k, const sim_search_result **result);
/* Combinations enumerated before any was dropped, and the drops found before simulating: the
 * k-th reason (in the order first met) and its count; NULL past the last. */
uint64_t sim_search_n_combinations(const sim_search *S);
const char *sim_search_drop(const sim_search *S, guint k, guint *count);

/* The search as its outputs show it (traces/search_out.h: table, JSON, CSV, SVG), after
 * sim_search_finish(); it points into S, which must outlive it. */
trace_search_table *sim_search_table(const sim_search *S);

/* Kendall's tau-b of two scores of n items (higher is better in both): concordant minus
 * discordant pairs over the geometric mean of the pairs untied in each; 1 when nothing can be
 * compared. */
double sim_search_kendall_tau(const double *a, const double *b, guint n);

#endif
