#!/bin/sh
# Runs every row of the published collective measurements through `dtsim collective
# --algorithm nccl` and prints measured, predicted, error per row and the mean absolute
# percentage error (MAPE) of each file:
#   reference/collectives.csv          NCCL allreduce on one DGX A100, bus bandwidth by size
#   reference/collectives-systems.csv  DGX H100 and Azure NDm A100 v4 (1 and 2 nodes), bus
#                                      bandwidth (busbw_GBps) or time (time_us)
#   bench/collective/published.csv     further published rows (DGX-1V, p2.8xlarge, PCIe hosts
#                                      without peer-to-peer, ...), reported separately
# The prediction uses the catalog as it is and the one fitted slice (bench/collective/fit.sh). The model
# (channels, protocols, NCCL's tuning constants) is described in docs/nccl.md. Last, the
# leave-one-system-out figures of that fit (fit.sh; DTSIM_REFERENCE_NO_FIT=1 leaves them out).
#
# Usage: bench/collective/reference.sh [DTSIM] [REFERENCE_DIR]
# REFERENCE_DIR defaults to the repository's copy of the tables, bench/reference/data.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dtsim=${1:-$here/../../build/dtsim}
ref=${2:-$here/../reference/data}
[ -x "$dtsim" ] || { echo "reference.sh: no dtsim binary at $dtsim (build first)" >&2; exit 2; }
export DTSIM_DATA_DIR=${DTSIM_DATA_DIR:-$here/../..}

# predict OP BYTES SYSTEM NODES DPN UNIT [ALGORITHM] -> busbw in GB/s or time in us; ALGORITHM
# is nccl (NCCL's choice, the default) or nccl:ALGO/PROTO/CHANNELS where the measurement forced
# NCCL's choice (NCCL_MAX_NCHANNELS, NCCL_MIN_NCHANNELS, NCCL_ALGO).
predict() {
  json=$("$dtsim" collective --op "$1" --bytes "$2" --system "$3" --nodes "$4" \
    --devices-per-node "$5" --algorithm "${7:-nccl}" --json)
  if [ "$6" = time_us ]; then
    printf '%s\n' "$json" | sed -n 's/.*"time_s":\([0-9.eE+-]*\).*/\1/p' | awk '{ print $1 * 1e6 }'
  else
    printf '%s\n' "$json" | sed -n 's/.*"busbw_Bps":\([0-9.eE+-]*\).*/\1/p' | awk '{ print $1 / 1e9 }'
  fi
  printf '%s\n' "$json" | sed -n 's/.*"algorithm":"\([^"]*\)".*/\1/p'
}

header() {
  printf '\n== %s\n' "$1"
  printf '%-5s %-10s %-14s %5s %12s %-11s %10s %10s %8s  %s\n' id op system ranks bytes unit \
    measured predicted error_% choice
}

row() {   # id op bytes system nodes dpn measured unit [algorithm]
  out=$(predict "$2" "$3" "$4" "$5" "$6" "$8" "${9:-nccl}")
  p=$(printf '%s\n' "$out" | sed -n 1p)
  c=$(printf '%s\n' "$out" | sed -n 2p)
  awk -v id="$1" -v op="$2" -v b="$3" -v sys="$4" -v r=$(($5 * $6)) -v m="$7" -v u="$8" \
      -v p="$p" -v c="$c" 'BEGIN {
    e = 100 * (p - m) / m;
    printf "%-5s %-10s %-14s %5d %12s %-11s %10.2f %10.2f %8.1f  %s\n", id, op, sys, r, b, u, m, p, e, c }'
}

mape() { awk '{ print; if ($9 != "") { s += ($9 < 0 ? -$9 : $9); n++ } }
  END { if (n) printf "MAPE %.1f%% over %d rows\n", s / n, n }'; }

header "reference/collectives.csv"
tail -n +2 "$ref/collectives.csv" | while IFS=, read -r op library device system nodes dpn bytes busbw source; do
  row "-" "$op" "$bytes" "$system" "$nodes" "$dpn" "$busbw" busbw_GBps
done | mape

header "reference/collectives-systems.csv"
tail -n +2 "$ref/collectives-systems.csv" | while IFS=, read -r id op bytes system nodes dpn algo measured unit source; do
  row "$id" "$op" "$bytes" "$system" "$nodes" "$dpn" "$measured" "$unit"
done | mape

if [ -r "$here/published.csv" ]; then
  header "bench/collective/published.csv (not in reference/)"
  grep -v '^#' "$here/published.csv" | tail -n +2 | while IFS=, read -r id op bytes system nodes dpn measured unit algorithm source; do
    row "$id" "$op" "$bytes" "$system" "$nodes" "$dpn" "$measured" "$unit" "$algorithm"
  done | mape
fi

if [ -z "${DTSIM_REFERENCE_NO_FIT:-}" ]; then
  printf '\n== leave one system out (bench/collective/fit.sh: the slice fitted without the system)\n'
  DTSIM_REFERENCE_NO_FIT=1 sh "$here/fit.sh" "$dtsim" "$ref" | sed -n '/^held_out/,$p'
fi
