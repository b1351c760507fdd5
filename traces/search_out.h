/* The outputs of a search: the ranking table (or JSON rows) with its summary, the CSV of every
 * candidate and the SVG scatter of throughput against memory. The search itself (its space,
 * evaluations and rankings) is sim/app/search.c's; sim_search_table() describes a finished one in
 * the terms below. */
#ifndef DTSIM_TRACES_SEARCH_OUT_H
#define DTSIM_TRACES_SEARCH_OUT_H

#include <glib.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"

typedef enum {
  SIM_SEARCH_OK,        /* simulated, fits in memory */
  SIM_SEARCH_NO_FIT,    /* simulated, needs more memory than the device has */
  SIM_SEARCH_REFUSED,   /* the strategy refused it (reason holds the message) */
  SIM_SEARCH_NOT_RUN,   /* not simulated (the flow network is out of reach) */
} sim_search_status;

/* One evaluation: plain numbers and text of fixed size, so ranks can exchange it as bytes. */
typedef struct {
  sim_report report;    /* sim_wall_s is 0: results do not depend on the machine's speed */
  int32_t status;       /* sim_search_status */
  char reason[160];     /* SIM_SEARCH_REFUSED: the strategy's message */
} sim_search_result;

/* One candidate configuration. */
typedef struct {
  const char *label;                  /* "dp allreduce=ring bucket-mib=25 batch=64" */
  const char *strategy;               /* its strategy's name */
  const char *settings_json;          /* its settings as JSON members: "strategy":"dp",... */
  const char *model;
  int64_t batch;                      /* per-device batch, samples */
  const sim_search_result *analytic;  /* on the analytic network */
  guint analytic_rank;                /* 1-based; 0: not ranked */
  const sim_search_result *flow;      /* on the flow network, or NULL: not a finalist */
  guint flow_rank;                    /* 1-based among the finalists; 0: not a finalist */
} trace_search_candidate;

/* A finished search. The arrays and strings belong to the search it describes, except
 * `candidates` and `rows`, which trace_search_table_free() frees with the table. */
typedef struct {
  const char *title;        /* "resnet50, 2 x dgx1-v100 (16 devices), global batch 1024" */
  gboolean flow;            /* the rows are ranked on the flow network (else the analytic) */
  uint64_t seq;             /* tokens per sample of a transformer (0: not one) */
  uint64_t global_batch;    /* samples per iteration */
  double flops_per_sample;  /* model FLOPs of one sample's forward and backward (0: unknown) */
  double peak_flops;        /* of one device at the precision, FLOP/s (0: unknown) */
  gboolean train, cost;     /* the whole run's columns; its cost */
  trace_search_candidate *candidates;
  guint n_candidates;
  const guint *ranked;      /* candidate indices, feasible, best first on the analytic network */
  guint n_ranked;
  guint *rows;              /* the rows printed (at most --top): candidate indices, best first */
  guint n_rows;
  /* The summary: combinations enumerated, those dropped before simulating by reason, why the
   * flow phase did not run (or NULL), and the agreement of the two rankings of the finalists. */
  uint64_t combinations;
  const char *const *drops;
  const guint *drop_counts;
  guint n_drops;
  const char *flow_skipped;
  guint n_finalists;
  double tau;               /* Kendall tau-b of the analytic and flow orders */
  gboolean top1_same;       /* the flow network's best is the analytic best */
} trace_search_table;

void trace_search_table_free(trace_search_table *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(trace_search_table, trace_search_table_free)

/* The table, or with json one JSON object per row, to `out`; the summary (space, drops,
 * agreement of the two rankings) to `summary`. */
void trace_search_print(const trace_search_table *t, gboolean json, FILE *out, FILE *summary);
gboolean trace_search_write_csv(const trace_search_table *t, const char *path, GError **error);
gboolean trace_search_write_svg(const trace_search_table *t, const char *path, GError **error);

#endif
