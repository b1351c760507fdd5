#!/bin/sh
# A trace of every strategy, and of one collective, through the strict checker (trace_check.c).
# Usage: check_traces.sh DTSIM TRACE_CHECK
DTSIM=${1:?usage: check_traces.sh DTSIM TRACE_CHECK}
CHECK=${2:?usage: check_traces.sh DTSIM TRACE_CHECK}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
run() {
  name=$1; shift
  if "$DTSIM" "$@" --trace "$TMP/$name.json" >"$TMP/out" 2>"$TMP/err" &&
     "$CHECK" "$TMP/$name.json" >"$TMP/check"; then
    pass=$((pass + 1)); echo "ok   $name: $(cat "$TMP/check")"
  else
    fail=$((fail + 1)); echo "FAIL $name: $(cat "$TMP/err") $(cat "$TMP/check" 2>/dev/null)"
  fi
}
M="--model alexnet --batch 32"
run dp run $M --nodes 2 --iterations 2
run dp-analytic run $M --nodes 2 --net-model analytic --symmetry off
run ps run $M --strategy ps --nodes 2 --ps-count 2
run mp run --model vgg16 --batch 16 --strategy mp --devices-per-node 4
run gpipe run --model vgg16 --batch 32 --strategy pp --schedule gpipe --micro-batches 8 --devices-per-node 4
run 1f1b run --model vgg16 --batch 32 --strategy pp --schedule 1f1b --micro-batches 8 --devices-per-node 4
run hybrid run --model vgg16 --batch 32 --strategy hybrid --stages 4 --nodes 2 --micro-batches 4
run owt run --model alexnet_owt --batch 128 --strategy hybrid --hybrid owt
run chaos run --strategy chaos --device xeon-phi-7120p --threads 16 --model chaos-small --iterations 2
run 3d run --strategy 3d --model transformer:layers=8,hidden=1024,heads=16,seq=1024,vocab=1000 --system dgx-a100 --nodes 2 --tp 2 --pp 2 --schedule interleaved --interleave 2 --global-batch 32 --zero 3 --sequence-parallel on --tp-overlap on
run collective collective --bytes 64M --nodes 2
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
