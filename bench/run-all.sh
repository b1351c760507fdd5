#!/bin/sh
# Runs every benchmark under bench/ once, with small sizes, and prints their figures: the
# accuracy benchmarks on the published tables (bench/reference/data) and the speed benchmarks
# of the engine, the network, collectives, whole runs and the search. Meant to finish in a few
# minutes on a 2-core machine (`make bench` runs it after building); each benchmark's own
# defaults (larger sizes, often many minutes) are in its usage line and in README.md.
#
#   sh bench/run-all.sh [BUILD_DIR]          (default build/)
#   FUZZ=SECONDS sh bench/run-all.sh         also runs bench/fuzz/run.sh for SECONDS per
#                                            harness (it first builds build-fuzz/ with clang)
#
# Each benchmark's output is printed under a "==== name: command" header, then its wall time.
# Exits 1 if any benchmark failed (the others still run), naming them at the end.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd) || exit 2
cd "$top" || exit 2
if [ ! -x "$build/dtsim" ]; then
  echo "run-all.sh: no dtsim in $build: build first (make build)" >&2
  exit 2
fi
export DTSIM_DATA_DIR="${DTSIM_DATA_DIR:-$top}"
failed=""
total_start=$(date +%s)

run() {
  name=$1
  shift
  echo
  echo "==== $name: $*"
  start=$(date +%s)
  "$@"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "==== $name: FAILED (exit $rc)"
    failed="$failed $name"
  fi
  echo "==== $name: $(($(date +%s) - start)) s"
}

skip() {
  echo
  echo "==== $1: skipped ($2)"
}

# Accuracy against the published measurements (every row: they are few).
run reference "$build/dtsim-reference"
run kernels-h200 "$build/dtsim-kernels-h200"
run reference-run "$build/dtsim-reference-run"
run llm "$build/dtsim-llm"
run collective-reference sh bench/collective/reference.sh "$build/dtsim"
run collective-fit sh bench/collective/fit.sh "$build/dtsim"
run h200-cnn sh bench/h200/cnn.sh "$build/dtsim"
run phi-chaos sh bench/phi/chaos.sh "$build/dtsim" --threads "1 15 60 120 244"
run phi-fit sh bench/phi/fit.sh "$build/dtsim"
run phi-whatif sh bench/phi/whatif.sh "$build/dtsim"
run phi-cpu-frameworks sh bench/phi/cpu-frameworks.sh "$build/dtsim"

# Speed, at small sizes.
run engine "$build/bench_engine" --dispatches 200000 1000 100000
run net "$build/bench_net" --nodes 32 --rounds 100
run collective "$build/bench_collective" --ranks 256,512
run scale "$build/bench_scale" 4096 256 1024
run scale-events "$build/bench_scale" --events
run scale-3d "$build/bench_scale" --3d
run search "$build/bench_search" 8 1
run chakra sh bench/chakra/bench_chakra.sh "$build/dtsim" "$build/chakra_gen"
run readers env PALEO_LAYERS=2000 sh bench/fuzz/readers.sh "$build/dtsim" 1000 10000
# Hostile inputs by category (some 6300 runs of dtsim: a few minutes).
if command -v python3 >/dev/null 2>&1; then
  run hostile python3 bench/hostile/hostile.py "$build/dtsim"
else
  skip hostile "needs python3"
fi
if [ -x "$build/dtsim-mpi" ] && command -v mpirun >/dev/null 2>&1; then
  mpi_out=$(mktemp -d "${TMPDIR:-/tmp}/dtsim-bench-mpi-XXXXXX")
  run mpi env CLUSTER=0 SIZES=1K..64K OUT="$mpi_out" sh bench/mpi/run.sh "$build"
  rm -rf "$mpi_out"
else
  skip mpi "needs dtsim-mpi and mpirun"
fi
if [ -n "${FUZZ:-}" ]; then
  run fuzz sh bench/fuzz/run.sh "$FUZZ"
else
  skip fuzz "builds build-fuzz/ with clang first; FUZZ=SECONDS runs each harness that long"
fi

echo
echo "==== all: $(($(date +%s) - total_start)) s"
if [ -n "$failed" ]; then
  echo "==== failed:$failed"
  exit 1
fi
