#!/bin/sh
# CPU-era frameworks on Xeon: published forward+backward times of BVLC Caffe (MKL) on two Xeon
# E5-2699 v3 and of Torch7 on two Xeon E5-2630 v3 (bench/phi/cpu-frameworks.csv) against dtsim's
# forward and backward passes (no weight update, as `caffe time` and the Torch benchmark time
# them), without --framework (the device model alone) and with the framework's catalog file.
#
#   bench/phi/cpu-frameworks.sh [DTSIM]
#
# Per row: the device model's time, the share of it the framework reached (device model over
# published: the efficiency that row alone would give), dtsim with --framework and its error.
# Per framework: the spread of those shares, the mean absolute error with the catalog's
# efficiency over the rows it was not fitted on (`role` check; intel-caffe was fitted on a Xeon
# Phi, so all its rows here are checks), and leave-one-out: each row predicted with the
# geometric mean of the other rows' shares of that framework in this file.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dtsim=${1:-build/dtsim}
csv="$here/cpu-frameworks.csv"

# Forward + backward milliseconds of one iteration, from `run --json`.
fwd_bwd_ms() {
  "$dtsim" run --synthetic --json "$@" |
    sed -n 's/.*"forward_time_s":\([0-9.e+-]*\).*"backward_time_s":\([0-9.e+-]*\).*/\1 \2/p' |
    awk '{ printf "%.3f", ($1 + $2) * 1000 }'
}

rows=$(mktemp "${TMPDIR:-/tmp}/dtsim-cpufw-XXXXXX")
trap 'rm -f "$rows"' EXIT
tail -n +2 "$csv" | cut -d, -f1-7 | while IFS=, read -r fw model device batch threads published role; do
  base=$(fwd_bwd_ms --model "$model" --device "$device" --batch "$batch" --threads "$threads")
  with=$(fwd_bwd_ms --model "$model" --device "$device" --batch "$batch" --threads "$threads" \
    --framework "$fw")
  echo "$fw $model $device $batch $threads $published $base $with $role" >> "$rows"
done

awk '
{
  fw[NR] = $1; model[NR] = $2; dev[NR] = $3; batch[NR] = $4; thr[NR] = $5
  pub[NR] = $6; base[NR] = $7; with[NR] = $8; share[NR] = $7 / $6
  fit[NR] = $9 == "fit"
  if (!($1 in n)) order[++nfw] = $1
  n[$1]++; logsum[$1] += log(share[NR])
}
END {
  printf "%-11s %-9s %-18s %5s %4s %11s %11s %6s %11s %7s\n", "framework", "model", "device",
         "batch", "thr", "published", "device", "share", "dtsim", "error"
  for (i = 1; i <= NR; i++)
    printf "%-11s %-9s %-18s %5d %4d %9.1fms %9.1fms %6.3f %9.1fms %+6.1f%%%s\n", fw[i], model[i],
           dev[i], batch[i], thr[i], pub[i], base[i], share[i], with[i],
           (with[i] / pub[i] - 1) * 100, fit[i] ? "  (fitted)" : ""
  for (k = 1; k <= nfw; k++) {
    f = order[k]; lo = 1e9; hi = 0; abs = 0; loo = 0; m = 0
    for (i = 1; i <= NR; i++) {
      if (fw[i] != f) continue
      if (share[i] < lo) lo = share[i]
      if (share[i] > hi) hi = share[i]
      if (!fit[i]) { abs += (with[i] > pub[i] ? with[i] / pub[i] - 1 : 1 - with[i] / pub[i]); m++ }
      e = exp((logsum[f] - log(share[i])) / (n[f] - 1))
      err = base[i] / e / pub[i] - 1
      loo += err < 0 ? -err : err
    }
    printf "%s: share %.3f-%.3f (spread %.2fx); checks (rows other than the fitted one) mean |error| %.1f%%; leave-one-out %.1f%%\n",
           f, lo, hi, hi / lo, m ? abs / m * 100 : 0, loo / n[f] * 100
  }
}' "$rows"
