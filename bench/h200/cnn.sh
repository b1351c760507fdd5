#!/bin/sh
# Compares dtsim with CNN training measured on one H200 (bench/h200/README.md):
#   1. fp32 steps (TF32 off): every steps.csv row against `dtsim run` on one H200 with
#      synthetic input; measured and predicted step (ms), error, MAPE;
#   2. bf16 steps (autocast, channels_last): the step itself, which PyTorch's eager dispatch
#      leaves host-bound (the GPU idles between kernels), and, at the profiled batch, dtsim's
#      compute time (its kernels alone) against the measured GPU-busy time of profile.csv;
#   3. by kind, at the profiled batch of each network and precision: dtsim's per-task times
#      (`run --csv`) summed by the task's name (conv and fc GEMMs, batch norm `/bn`,
#      element-wise `relu`, `add`, `softmax`, `drop`, `concat`, pooling, the update) against
#      the kernel time of the same kinds in profile.csv (conv = conv_gemm + fft + winograd +
#      layout; element-wise = elementwise + concat; other = other + reduce + memcpy).
# Prints figures; not a test. Errors are (predicted - measured) / measured.
#
# Usage: sh bench/h200/cnn.sh [DTSIM] [DATA_DIR]    (defaults build/dtsim, bench/h200)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dtsim=${1:-$here/../../build/dtsim}
data=${2:-$here}
[ -x "$dtsim" ] || { echo "cnn.sh: no dtsim binary at $dtsim (build first)" >&2; exit 2; }
for f in steps.csv profile.csv; do
  [ -r "$data/$f" ] || { echo "cnn.sh: cannot read $data/$f" >&2; exit 2; }
done
export DTSIM_DATA_DIR="${DTSIM_DATA_DIR:-$here/../..}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dtsim-h200cnn-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

device=h200-sxm-141gb
system=workstation-1gpu

# run MODEL PRECISION BATCH [CSV] -> "iteration_s compute_s" of one H200, synthetic input.
run() {
  if [ $# -ge 4 ]; then
    json=$("$dtsim" run --model "$1" --device $device --system $system --batch "$3" \
      --precision "$2" --synthetic --iterations 1 --csv "$4" --json </dev/null)
  else
    json=$("$dtsim" run --model "$1" --device $device --system $system --batch "$3" \
      --precision "$2" --synthetic --json </dev/null)
  fi
  it=$(printf '%s\n' "$json" | sed -n 's/.*"iteration_time_s":\([0-9.eE+-]*\).*/\1/p')
  co=$(printf '%s\n' "$json" | sed -n 's/.*"compute_time_s":\([0-9.eE+-]*\).*/\1/p')
  echo "$it $co"
}

# Every steps.csv row: model precision batch measured_ms predicted_ms compute_ms
tail -n +2 "$data/steps.csv" | while IFS=, read -r model prec batch med rest; do
  # shellcheck disable=SC2046  # the two numbers run prints
  set -- $(run "$model" "$prec" "$batch")
  echo "$model $prec $batch $med $1 $2"
done >"$tmp/steps"

# The profiled rows: model precision batch step_ms busy_ms
tail -n +2 "$data/profile.csv" | awk -F, '{ print $1, $2, $3, $4, $6 }' | sort -u >"$tmp/prof"

# fp32 (TF32 off) and tf32 (TF32 tensor cores, fp32 tensors) steps keep the GPU busy.
for prec in fp32 tf32; do
  grep -q " $prec " "$tmp/steps" || continue
  if [ "$prec" = fp32 ]; then
    echo "fp32 training steps (TF32 off), one H200, synthetic input, ms"
  else
    echo "tf32 training steps (TF32 tensor cores, NCHW), one H200, synthetic input, ms"
  fi
  awk -v want="$prec" '$2 == want {
    p = $5 * 1e3; e = (p - $4) / $4 * 100; s += (e < 0 ? -e : e); n++
    printf "  %-13s b%-4d measured %8.2f  predicted %8.2f  error %+6.1f%%\n", $1, $3, $4, p, e
  } END { if (n) printf "  MAPE %s steps: %.1f%% over %d rows\n", want, s / n, n }' "$tmp/steps"
  echo
done

echo "bf16 training steps (autocast, channels_last), ms: at small batches host-bound (PyTorch"
echo "eager dispatch leaves the GPU idle between kernels); GPU busy from profile.csv"
awk 'NR == FNR { busy[$1 " " $2 " " $3] = $5; next }
$2 == "bf16" {
  p = $5 * 1e3; c = $6 * 1e3; e = (p - $4) / $4 * 100; s += (e < 0 ? -e : e); n++
  printf "  %-13s b%-4d step measured %7.2f  predicted %7.2f  error %+6.1f%%", $1, $3, $4, p, e
  k = $1 " " $2 " " $3
  if (k in busy) {
    ec = (c - busy[k]) / busy[k] * 100; sc += (ec < 0 ? -ec : ec); nc++
    printf " | GPU busy %6.2f  compute %6.2f  error %+6.1f%%", busy[k], c, ec
  }
  printf "\n"
} END {
  if (n) printf "  MAPE bf16 steps (host dispatch not modelled): %.1f%% over %d rows\n", s / n, n
  if (nc) printf "  MAPE bf16 GPU busy vs dtsim compute: %.1f%% over %d rows\n", sc / nc, nc
}' "$tmp/prof" "$tmp/steps"

echo
echo "kernel time by kind at the profiled batch, ms: measured (profile.csv) / dtsim (run --csv)"
printf '  %-13s %-4s %5s %15s %15s %15s %15s %15s %15s\n' model prec batch conv "batch norm" \
  element-wise pool update other
while read -r model prec batch _; do
  run "$model" "$prec" "$batch" "$tmp/tasks.csv" >/dev/null
  # dtsim's tasks of the device, summed by kind from their names: the last part of the name
  # (after the final '/', without " dX" or " dW") says the layer kind.
  awk -F, 'NR > 1 && $4 != "host" && $4 != "copy" {
    n = $2; sub(/ d[XW]$/, "", n); sub(/.*\//, "", n)
    if (n == "bn") k = "bn"
    else if (n == "update") k = "update"
    else if (n ~ /^(relu|add|softmax|flatten|concat)$/ || n ~ /^drop/) k = "elt"
    else if (n ~ /^(max|avg)?pool[0-9]*$/ || n ~ /_avg$/ || n ~ /^maxpool/) k = "pool"
    else k = "conv"
    t[k] += $9 * 1e3
  } END { printf "%.3f %.3f %.3f %.3f %.3f 0\n", t["conv"], t["bn"], t["elt"], t["pool"], t["update"] }' \
    "$tmp/tasks.csv" >"$tmp/sim"
  awk -F, -v m="$model" -v p="$prec" '$1 == m && $2 == p {
    k = $7
    if (k == "conv_gemm" || k == "fft" || k == "winograd" || k == "layout") t["conv"] += $9
    else if (k == "batchnorm") t["bn"] += $9
    else if (k == "elementwise" || k == "concat") t["elt"] += $9
    else if (k == "pool") t["pool"] += $9
    else if (k == "optimizer") t["update"] += $9
    else t["other"] += $9
  } END { printf "%.3f %.3f %.3f %.3f %.3f %.3f\n", t["conv"], t["bn"], t["elt"], t["pool"], t["update"], t["other"] }' \
    "$data/profile.csv" >"$tmp/meas"
  paste -d' ' "$tmp/meas" "$tmp/sim" | awk -v m="$model" -v p="$prec" -v b="$batch" '{
    printf "  %-13s %-4s %5d", m, p, b
    for (i = 1; i <= 6; i++) printf " %7.2f/%-7.2f", $i, $(i + 6)
    printf "\n"
  }'
done <"$tmp/prof"
