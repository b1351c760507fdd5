#!/bin/sh
# Runs every row of the published collective measurements (reference/collectives.csv: NCCL
# allreduce on one DGX A100, bus bandwidth by size) through `dtsim collective` and prints
# measured, predicted, error per row and the mean absolute percentage error (MAPE).
#
# The prediction uses the catalog as it is (no fitting): the system and node count of the row,
# the ring algorithm NCCL runs inside an NVSwitch node, the flow network model, and no
# separate reduction cost (NCCL reduces inside its copy kernel, at HBM speed, hidden behind the
# NVLink transfer). NCCL's software costs are the ones its own tuning model publishes for the
# ring with the Simple protocol (nccl src/graph/tuning.cc: baseLat 8.4 us per collective,
# hwLat 3.4 us per step over NVLink), passed as --launch-us and --step-us.
#
# Usage: bench/collective/reference.sh [DTSIM] [COLLECTIVES.csv]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dtsim=${1:-$here/../../build/dtsim}
csv=${2:-$here/../../../shared/reference/collectives.csv}
[ -x "$dtsim" ] || { echo "reference.sh: no dtsim binary at $dtsim (build first)" >&2; exit 2; }
[ -r "$csv" ] || { echo "reference.sh: cannot read $csv" >&2; exit 2; }
export DTSIM_DATA_DIR=${DTSIM_DATA_DIR:-$here/../..}

printf '%-10s %-16s %-9s %5s %12s %12s %12s %8s\n' op device system ranks bytes \
  measured_GBps predicted_GBps error_%
tail -n +2 "$csv" | while IFS=, read -r op library device system nodes dpn bytes busbw source; do
  json=$("$dtsim" collective --op "$op" --bytes "$bytes" --system "$system" --nodes "$nodes" \
    --devices-per-node "$dpn" --algorithm ring --reduce-GBps 0 --launch-us 8.4 --step-us 3.4 --json)
  pred=$(printf '%s\n' "$json" | sed -n 's/.*"busbw_Bps":\([0-9.eE+-]*\).*/\1/p')
  awk -v op="$op" -v dev="$device" -v sys="$system" -v r=$((nodes * dpn)) -v b="$bytes" \
      -v m="$busbw" -v p="$pred" 'BEGIN {
    p = p / 1e9; e = 100 * (p - m) / m;
    printf "%-10s %-16s %-9s %5d %12s %12.2f %12.2f %8.1f\n", op, dev, sys, r, b, m, p, e }'
done | awk '{ print; s += ($8 < 0 ? -$8 : $8); n++ }
  END { if (n) printf "MAPE %.1f%% over %d rows\n", s / n, n }'
