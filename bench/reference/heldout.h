/* dtsim-reference-run --heldout FILE [--check]: published runs that no parameter is fitted to,
 * run through the whole simulator with measured, predicted, error and MAPE per group
 * (bench/reference/heldout-tf.csv: TensorFlow's 2017 K80 runs on AWS, single instance and
 * distributed, and the batch-32 rows of GCE and the DGX-1). */
#ifndef DTSIM_BENCH_HELDOUT_H
#define DTSIM_BENCH_HELDOUT_H

#include <glib.h>

/* Runs (or with check_only, parses and checks) every row of `path`; returns the exit status: 0,
 * 2 for a bad file (one line on stderr naming the file, line and column), 1 for other failures. */
int ref_heldout(const char *path, gboolean check_only);

#endif
