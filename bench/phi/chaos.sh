#!/bin/sh
# CHAOS thread scaling on the Xeon Phi 7120P: the speedup over one thread of a whole training
# run (data-set preparation once, then EPOCHS epochs of training, validation and testing) at
# 1, 15, 30, 60, 120, 180, 240 and 244 threads for the three CHAOS networks, with the default
# catalog and, with --measured, the measured-parameter model; then the error against the
# published speedups at 244 threads (bench/phi/chaos.csv).
#
#   bench/phi/chaos.sh [DTSIM] [--measured] [--calibration FILE] [--device NAME]
#                      [--threads "1 15 ..."] [--quiet]
# DTSIM defaults to build/dtsim. Any --device (xeon-phi-7250, xeon-gold-6148-2s, ...) gives the
# what-if curve of that device; thread counts beyond its hardware threads are skipped.
# --calibration adds an overlay of parameters (e.g. [software] chaos_efficiency); --quiet prints
# only the comparison lines (for bench/phi/fit.sh).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dtsim=build/dtsim
device=xeon-phi-7120p
threads="1 15 30 60 120 180 240 244"
measured=0
calibration=""
quiet=0
while [ $# -gt 0 ]; do
  case "$1" in
    --measured) measured=1 ;;
    --calibration) calibration=$2; shift ;;
    --device) device=$2; shift ;;
    --threads) threads=$2; shift ;;
    --quiet) quiet=1 ;;
    *) dtsim=$1 ;;
  esac
  shift
done
overlay=""
if [ "$measured" = 1 ] || [ -n "$calibration" ]; then
  overlay=$(mktemp "${TMPDIR:-/tmp}/dtsim-chaos-XXXXXX.ini")
  trap 'rm -f "$overlay"' EXIT
  [ -n "$calibration" ] && cat "$calibration" > "$overlay"
  [ "$measured" = 1 ] && printf '[device]\nmodel = xeon-phi-measured\n' >> "$overlay"
fi
epochs=15

# Seconds of one iteration (epoch) as run --json reports it for --iterations N.
epoch_s() { # model threads iterations
  "$dtsim" run --strategy chaos --device "$device" --model "$1" --threads "$2" \
    --iterations "$3" ${overlay:+--calibration "$overlay"} --json |
    sed 's/.*"iteration_time_s":\([^,]*\),.*/\1/'
}
# The whole run: the first epoch carries the preparation; the others are alike.
run_s() {
  first=$(epoch_s "$1" "$2" 1 2>/dev/null)
  later=$(epoch_s "$1" "$2" 2 2>/dev/null)
  # More threads than the device has: no figure.
  case "$first$later" in *[!0-9.e+-]*|"") return 1 ;; esac
  awk -v a="$first" -v b="$later" -v e="$epochs" 'BEGIN { printf "%.6f", a + (e - 1) * b }'
}

say() { [ "$quiet" = 1 ] || printf "$@"; }
[ "$measured" = 1 ] && what=" (measured-parameter model)" || what=""
say '== CHAOS on %s%s: speedup over one thread, %s epochs\n' "$device" "$what" "$epochs"
say '%-14s %10s' network t1_s
for t in $threads; do say ' %6s' "$t"; done
say '\n'
results=""
for m in chaos-small chaos-medium chaos-large; do
  t1=$(run_s "$m" 1)
  say '%-14s %10.1f' "$m" "$t1"
  for t in $threads; do
    tt=$(run_s "$m" "$t" 2>/dev/null) || { say ' %6s' -; continue; }
    s=$(awk -v a="$t1" -v b="$tt" 'BEGIN { printf "%.1f", a / b }')
    say ' %6s' "$s"
    results="$results$m,$t,$s
"
  done
  say '\n'
done

say '\n== published speedups (%s)\n' "$here/chaos.csv"
printf '%s' "$results" | awk -F, -v dev="$(basename "$device" .ini)" -v csv="$here/chaos.csv" '
  { s[$1 "," $2] = $3 }
  END {
    n = 0; sum = 0; worst = 0
    while ((getline line < csv) > 0) {
      split(line, f, ",")
      if (f[1] == "model" || f[2] != dev) continue
      key = f[1] "," f[3]
      if (!(key in s)) continue
      err = 100 * (s[key] - f[5]) / f[5]
      printf "%-14s %4d threads: measured %6.1f predicted %6.1f error %+6.1f%%\n", f[1], f[3], f[5], s[key], err
      n++; sum += (err < 0 ? -err : err); if ((err < 0 ? -err : err) > worst) worst = (err < 0 ? -err : err)
    }
    if (n) printf "MAPE %.1f%% over %d rows, worst %.1f%% (target: every row within 10%%)\n", sum / n, n, worst
  }'
