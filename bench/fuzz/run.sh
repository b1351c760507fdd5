#!/bin/sh
# Runs every libFuzzer harness of tests/fuzz for a fixed time or a fixed number of executions
# and prints, per harness, the executions, executions per second, coverage (libFuzzer's cov:
# edges and ft: features at the end) and findings (crash, leak, timeout and out-of-memory
# reproducers written).
#
#   bench/fuzz/run.sh [SECONDS] [HARNESS...]     SECONDS per harness, default 60
#   DTSIM_FUZZ_RUNS=10000000 bench/fuzz/run.sh 0 [HARNESS...]
#                                                N executions per harness (-runs=N), no time
#                                                limit when SECONDS is 0
#   JOBS=2 (the default)                         harnesses run at a time, taken in the order
#                                                given (put the fastest first); also the
#                                                build's -j
#
# Builds build-fuzz/ with clang (-DDTSIM_ENABLE_FUZZ=ON). Each harness starts from its seed
# corpus (tests/fuzz/corpus/NAME), the regression inputs (tests/fuzz/regressions/NAME) and the
# corpus of its earlier runs; new inputs go to build-fuzz/fuzz-out/NAME/corpus, findings to
# build-fuzz/fuzz-out/NAME/findings, the log to build-fuzz/fuzz-out/NAME/log (libFuzzer's
# "#N pulse ... exec/s: R" lines show the progress of a long run). Copy a finding into
# tests/fuzz/regressions/NAME/ once it is fixed. Exits 1 if anything was found.
# Needs clang and libclang-rt-14-dev (DTSIM_FUZZ_DEPS=1 scripts/install-deps.sh).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-60}
[ $# -gt 0 ] && shift
harnesses=${*:-transformer options fabric scenario system calibration device args workload}
build=$top/build-fuzz
jobs=${JOBS:-2}
runs=${DTSIM_FUZZ_RUNS:-}

command -v "${CC:-clang}" >/dev/null 2>&1 || {
  echo "bench/fuzz: ${CC:-clang} not found; run: DTSIM_FUZZ_DEPS=1 sh scripts/install-deps.sh" >&2
  exit 2
}
mkdir -p "$build"
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=${CC:-clang} cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DDTSIM_ENABLE_FUZZ=ON -DDTSIM_EVENT_POOL=OFF -DDTSIM_BUILD_MPI=OFF \
    -DDTSIM_BUILD_BENCH=OFF >"$build/fuzz-build.log" 2>&1 ||
    { cat "$build/fuzz-build.log" >&2; exit 2; }
fi
targets=""
for h in $harnesses; do targets="$targets fuzz_$h"; done
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" --target $targets >"$build/fuzz-build.log" 2>&1 ||
  { cat "$build/fuzz-build.log" >&2; exit 2; }

export DTSIM_DATA_DIR="$top"
# GLib hands out slice allocations (GSList, GArray, JsonNode...) from its own slabs unless told
# to use malloc; LeakSanitizer then cannot see them leak (a leak of JSON nodes went unreported
# until this was set: docs/fuzzing.md).
export G_SLICE=always-malloc
limit="-max_total_time=$seconds"
[ -n "$runs" ] && limit="-max_total_time=$seconds -runs=$runs"
echo "bench/fuzz: $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?') $limit," \
  "$jobs at a time, started $(date -u '+%Y-%m-%d %H:%M UTC')"

# One harness: libFuzzer, then its summary line.
run_one() {
  h=$1
  out=$build/fuzz-out/$h
  mkdir -p "$out/corpus" "$out/findings"
  rm -f "$out/findings"/*
  status=0
  # Keywords of the format (tests/fuzz/dict) let mutations reach past the key checks.
  case $h in fabric|system) dict=catalog ;; *) dict=$h ;; esac
  dict=$top/tests/fuzz/dict/$dict.dict
  # -timeout: an input taking 10 s is a hang; -rss_limit_mb: 2 GB is an out-of-memory finding.
  # shellcheck disable=SC2086
  "$build/fuzz_$h" $limit -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$out/findings/" -dict="$dict" \
    "$out/corpus" "$top/tests/fuzz/corpus/$h" "$top/tests/fuzz/regressions/$h" \
    >"$out/log" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/log" | tail -n 1)
  # The last status line: "#N  DONE  cov: C ft: F corp: K/S ..." (or the last pulse/NEW).
  last=$(grep -E '^#[0-9]+.*cov: ' "$out/log" | tail -n 1)
  cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
  ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
  corp=$(echo "$last" | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
  n=$(find "$out/findings" -type f | wc -l)
  printf '%-11s %12s %10s %8s %8s %8s %9s  %s\n' "$h" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
    "${ft:-?}" "${corp:-?}" "$n" "$(date -u +%H:%M)"
  if [ "$n" -gt 0 ] || [ "$status" -ne 0 ]; then
    find "$out/findings" -type f | sed 's/^/           finding: /'
    grep -a -m 3 -E 'ERROR|invariant failed|runtime error' "$out/log" | sed 's/^/           /' || true
  fi
}

# JOBS workers take the harnesses in order from a queue file (a mkdir lock guards it).
queue=$build/fuzz-out/queue.$$
lock=$build/fuzz-out/queue.$$.lock
mkdir -p "$build/fuzz-out"
for h in $harnesses; do echo "$h"; done >"$queue"
trap 'rm -rf "$queue" "$lock"' EXIT
next() {
  while ! mkdir "$lock" 2>/dev/null; do sleep 1; done
  h=$(head -n 1 "$queue")
  sed -i 1d "$queue"
  rmdir "$lock"
  [ -n "$h" ] && echo "$h"
}
worker() {
  while h=$(next); do run_one "$h"; done
}
printf '%-11s %12s %10s %8s %8s %8s %9s  %s\n' harness executions exec/s cov ft corpus findings \
  ended
i=0
while [ "$i" -lt "$jobs" ]; do
  worker &
  i=$((i + 1))
done
wait
found=0
for h in $harnesses; do
  [ -n "$(find "$build/fuzz-out/$h/findings" -type f 2>/dev/null)" ] && found=1
done
exit $found
