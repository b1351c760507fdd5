#!/bin/sh
# The default scenario `make demo` runs after building: a small data-parallel scaling study
# whose table, CSV, plot and Chrome trace show what dtsim is for.
set -eu
cd "$(dirname "$0")/.."
DTSIM=./build/dtsim
echo "== dtsim demo: data parallel on the built-in demo workload, 8 GPUs on 2 nodes =="
$DTSIM run --model demo --nodes 2 --devices-per-node 4 --iterations 2 \
  --trace demo-trace.json --csv demo.csv
echo
echo "Wrote demo-trace.json (open it in https://ui.perfetto.dev or chrome://tracing) and demo.csv"
