#!/bin/sh
# Fits the one free parameter of the nccl model, the largest slice a channel forwards whole
# before the next stage starts (DTSIM_NCCL_SLICE_BYTES, docs/nccl.md "Pipeline fill"), over the
# rows of reference/collectives.csv and collectives-systems.csv together, and prints for each
# candidate slice the MAPE over all rows, then the leave-one-system-out errors: the slice fitted
# on the other systems, and the MAPE it gives on the system held out.
#
# Usage: bench/collective/fit.sh [DTSIM] [REFERENCE_DIR]
# REFERENCE_DIR defaults to the repository's copy of the tables, bench/reference/data.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dtsim=${1:-$here/../../build/dtsim}
ref=${2:-$here/../reference/data}
[ -x "$dtsim" ] || { echo "fit.sh: no dtsim binary at $dtsim (build first)" >&2; exit 2; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for kib in 64 96 128 160 192 224 256 320 384 512; do
  DTSIM_REFERENCE_NO_FIT=1 DTSIM_NCCL_SLICE_BYTES=$((kib * 1024)) sh "$here/reference.sh" "$dtsim" "$ref" |
    awk -v s="$kib" '/^== / { file = $2 } /^== bench/ { file = "" }
      file != "" && $9 ~ /^-?[0-9.]+$/ { printf "%s %s %s\n", s, $3, ($9 < 0 ? -$9 : $9) }' >>"$tmp"
done
awk '{ sum[$1] += $3; n[$1]++; ss[$1 " " $2] += $3; ns[$1 " " $2]++; sys[$2] = 1; sl[$1] = 1 }
  END {
    printf "%-10s %10s\n", "slice_KiB", "MAPE_%";
    best = ""; for (s in sl) { printf "%-10s %10.2f\n", s, sum[s] / n[s];
      if (best == "" || sum[s] / n[s] < sum[best] / n[best]) best = s }
    printf "fitted slice %s KiB: MAPE %.2f%% over %d rows\n", best, sum[best] / n[best], n[best];
    printf "%-12s %14s %18s\n", "held_out", "slice_KiB", "held_out_MAPE_%";
    for (h in sys) {
      b = ""; for (s in sl) { e = (sum[s] - ss[s " " h]) / (n[s] - ns[s " " h]);
        if (b == "" || e < be) { b = s; be = e } }
      printf "%-12s %14s %18.2f\n", h, b, ss[b " " h] / ns[b " " h];
      lo += ss[b " " h]; lon += ns[b " " h] }
    printf "leave-one-system-out MAPE %.2f%% over %d rows\n", lo / lon, lon }' "$tmp"
