#!/bin/sh
# The flow network's speed-ups change nothing that users see: every case runs twice, as it is
# and with DTSIM_NET_PLAIN=1 (the plain solver of comm/comm_net.h: no reserved transfers, no
# route memo, no heap, no global fill, no log to resume from, no collectives computed without
# flows), and the two outputs (standard output, standard error, exit status, and the files a
# case writes) must be the same bytes. Masked before comparing: wall-clock seconds and event
# rates, and the engine's event count (with the padding before it, which follows its digits),
# which the speed-ups lower on purpose (a reserved transfer is one event instead of two). A Chrome trace is compared as the sorted list of its
# spans, without their lanes (tid): flows that end at the same instant may be written in
# another order and so take other lanes of their track, and the NIC rate
# counters are stamped where each solver computes rates (a flow alone on its links stamps them
# as it starts; the plain solver in the recompute after), with the same values.
#
# The cases: every golden case of tests/cli/golden, data-parallel runs folded (symmetry on, the
# ring and NCCL's channels) and unfolded (every device built, every transfer a flow, large
# enough that recomputes fill globally and resume from their log), a parameter-server incast,
# a pipeline, a 3-D GPT-3 run, and a traced run whose timeline files are compared too.
#
# Usage: plain_tests.sh DTSIM
set -u
DTSIM=$1
case $DTSIM in */*) DTSIM=$(cd "$(dirname "$DTSIM")" && pwd)/$(basename "$DTSIM") ;; esac
if [ -n "${DTSIM_DATA_DIR:-}" ]; then
  DTSIM_DATA_DIR=$(cd "$DTSIM_DATA_DIR" && pwd)
  export DTSIM_DATA_DIR
fi
here=$(cd "$(dirname "$0")" && pwd)
golden=$here/golden
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset DTSIM_NET_PLAIN

mask() {
  sed -e 's/ in [0-9.][0-9.]* s ([0-9.e+-]* events\/s)/ in WALL s (RATE events\/s)/' \
      -e 's/"sim_wall_s":[0-9.e+-]*/"sim_wall_s":WALL/g' \
      -e 's/"events":[0-9]*/"events":N/g' \
      -e 's/^\( *simulated events\) *[0-9][0-9]*/\1 N/'
}

# run_case NAME DIR ARGS...: runs dtsim in DIR (in a fresh copy of it for each mode, so that
# files a case writes are compared too) with and without the plain solver.
fail=0
cases=0
run_case() {
  name=$1
  dir=$2
  shift 2
  for mode in fast plain; do
    rm -rf "$tmp/$mode"
    mkdir -p "$tmp/$mode/work"
    if [ "$mode" = plain ]; then
      (cd "$tmp/$mode/work" && DTSIM_NET_PLAIN=1 "$DTSIM" "$@" >"../out" 2>"../err")
    else
      (cd "$tmp/$mode/work" && "$DTSIM" "$@" >"../out" 2>"../err")
    fi
    echo "status $?" >"$tmp/$mode/status"
    for t in "$tmp/$mode"/work/*.json; do
      [ -f "$t" ] || continue
      grep '"ph":"X"' "$t" | sed 's/"tid":[0-9]*,//' | LC_ALL=C sort >"$t.spans"
      rm "$t"
    done
    mask <"$tmp/$mode/out" >"$tmp/$mode/out.masked"
    mask <"$tmp/$mode/err" >"$tmp/$mode/err.masked"
    rm "$tmp/$mode/out" "$tmp/$mode/err"
  done
  cases=$((cases + 1))
  if diff -r "$tmp/fast" "$tmp/plain" >"$tmp/diff"; then
    echo "$name: same"
  else
    echo "$name: DIFFERENT with DTSIM_NET_PLAIN=1 (first the output as it is, then plain)"
    head -c 4000 "$tmp/diff"
    fail=1
  fi
}

# The golden cases, with their own arguments (paths in them are relative to golden/).
for file in "$golden"/*.golden; do
  name=$(basename "$file" .golden)
  args=$(sed -n 's/^\$ //p' "$file")
  eval "set -- $args"
  # Arguments that name files of golden/ are made absolute: the case runs in a fresh folder.
  i=0
  for a in "$@"; do
    [ -e "$golden/$a" ] && a=$golden/$a
    set -- "$@" "$a"
    i=$((i + 1))
  done
  shift "$i"
  run_case "golden $name" "$golden" "$@"
done

run_case "dp folded, ring" . run --model resnet50 --nodes 16 --strategy dp --allreduce ring --json
run_case "dp folded, nccl" . run --model resnet50 --nodes 16 --strategy dp --json
run_case "dp unfolded, ring" . run --model resnet50 --nodes 8 --strategy dp --symmetry off \
  --allreduce ring --json
run_case "dp unfolded, nccl" . run --model resnet50 --nodes 16 --strategy dp --symmetry off
run_case "ps incast" . run --model resnet50 --nodes 4 --strategy ps --json
run_case "pp" . run --model resnet50 --nodes 4 --strategy pp --micro-batches 16 --batch 64 --json
run_case "3d GPT-3" . run --strategy 3d --model gpt3-175b --precision fp16 --system dgx-a100 \
  --nodes 8 --tp 8 --pp 8 --schedule interleaved --interleave 4 --global-batch 64 \
  --micro-batch 1 --net-model flow --json
run_case "dp unfolded, traced" . run --model resnet50 --nodes 2 --strategy dp --symmetry off \
  --trace trace.json --csv tasks.csv

echo "$cases cases"
exit $fail
