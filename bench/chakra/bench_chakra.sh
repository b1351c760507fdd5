#!/bin/sh
# Importing and simulating a Chakra trace of a 3-D job of 1024 ranks (tensor 8 x pipeline 8 x
# data 16; 32 micro-batches through 8 layers per stage: 1.12 million nodes) on 128 DGX A100.
# Usage: sh bench/chakra/bench_chakra.sh [build/dtsim [build/chakra_gen]]
# Prints the size of the trace and, per network model, the wall time of `dtsim run --chakra`
# (reading, building the graph and simulating), its CPU time (which the load of a shared machine
# does not change) and its peak memory. Target: 10 s (analytic).
DTSIM=${1:-build/dtsim}
GEN=${2:-build/chakra_gen}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
now() { date +%s.%N; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }

t0=$(now)
"$GEN" 3d "$TMP/job" 8 8 16 8 32 || exit 1
t1=$(now)
echo "trace: $(ls "$TMP/job" | grep -c '\.et$') ranks, $(du -sk "$TMP/job" | cut -f1) KiB, written in $(minus "$t1" "$t0") s"
for model in analytic flow; do
  t0=$(now)
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%M %U %S" -o "$TMP/rss" "$DTSIM" run --system dgx-a100 --nodes 128 --net-model $model \
      --chakra "$TMP/job" --json >"$TMP/out" || exit 1
    rss=$(awk '{ printf "%d KiB, CPU %.2f s", $1, $2 + $3 }' "$TMP/rss")
  else
    "$DTSIM" run --system dgx-a100 --nodes 128 --net-model $model --chakra "$TMP/job" --json >"$TMP/out" || exit 1
    rss="?"
  fi
  t1=$(now)
  it=$(sed -n 's/.*"iteration_time_s":\([-0-9.eE+]*\).*/\1/p' "$TMP/out")
  ev=$(sed -n 's/.*"events":\([0-9]*\).*/\1/p' "$TMP/out")
  wall=$(minus "$t1" "$t0")
  echo "net-model $model: import and simulation $wall s (target 10 s), peak $rss, $ev events, iteration $it s"
done
