#!/bin/sh
# The one fitted parameter of the CHAOS model, software.chaos_efficiency (the rate CHAOS's own
# loops reach as a fraction of the [efficiency] rates of tuned libraries), fitted by a grid
# search to the three published speedups at 244 threads on the Xeon Phi 7120P
# (bench/phi/chaos.csv): the value of least mean absolute percentage error over all three
# rows, and the leave-one-out errors (fit on two networks, predict the third).
#
#   bench/phi/fit.sh [DTSIM] [--measured]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
args="$*"
grid="0.030 0.035 0.040 0.045 0.050 0.055 0.060 0.065 0.070 0.075 0.080 0.085 0.090 0.095 0.100 0.110 0.120 0.140 0.160"
table=$(mktemp "${TMPDIR:-/tmp}/dtsim-fit-XXXXXX")
overlay=$(mktemp "${TMPDIR:-/tmp}/dtsim-fit-XXXXXX.ini")
trap 'rm -f "$table" "$overlay"' EXIT
for e in $grid; do
  printf '[software]\nchaos_efficiency = %s\n' "$e" > "$overlay"
  # shellcheck disable=SC2086
  "$here/chaos.sh" $args --threads 244 --calibration "$overlay" --quiet |
    awk -v e="$e" '/threads:/ { sub(/%/, "", $NF); print e, $1, $NF }' >> "$table"
done
awk '
  { err[$1 "," $2] = $3; eff[$1] = 1; net[$2] = 1 }
  function absval(x) { return x < 0 ? -x : x }
  # Best efficiency over the networks other than `skip` ("" for all).
  function best(skip,   e, n, s, k, b, bs) {
    bs = -1
    for (e in eff) {
      s = 0; k = 0
      for (n in net) if (n != skip) { s += absval(err[e "," n]); k++ }
      if (bs < 0 || s / k < bs) { bs = s / k; b = e }
    }
    return b
  }
  END {
    b = best("")
    printf "fit on all three: chaos_efficiency = %s\n", b
    s = 0; k = 0
    for (n in net) { printf "  %-14s error %+6.1f%%\n", n, err[b "," n]; s += absval(err[b "," n]); k++ }
    printf "  MAPE %.1f%%\n", s / k
    s = 0
    printf "leave one out (fit on the other two, predict this one):\n"
    for (n in net) {
      e = best(n)
      printf "  %-14s chaos_efficiency = %s error %+6.1f%%\n", n, e, err[e "," n]
      s += absval(err[e "," n])
    }
    printf "  MAPE %.1f%%\n", s / k
  }' "$table"
