#!/bin/sh
# Runs every libFuzzer harness of tests/fuzz for a fixed time and prints, per harness, the
# executions, executions per second, coverage (libFuzzer's cov: edges and ft: features at the
# end) and findings (crash, leak, timeout and out-of-memory reproducers written).
#
#   bench/fuzz/run.sh [SECONDS] [HARNESS...]     SECONDS per harness, default 60
#
# Builds build-fuzz/ with clang (-DDTSIM_ENABLE_FUZZ=ON). Each harness starts from its seed
# corpus (tests/fuzz/corpus/NAME) and the regression inputs (tests/fuzz/regressions/NAME);
# new inputs go to build-fuzz/fuzz-out/NAME/corpus, findings to build-fuzz/fuzz-out/NAME/
# findings, the log to build-fuzz/fuzz-out/NAME/log. Copy a finding into
# tests/fuzz/regressions/NAME/ once it is fixed. Exits 1 if anything was found.
# Needs clang and libclang-rt-14-dev (DTSIM_FUZZ_DEPS=1 scripts/install-deps.sh).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-60}
[ $# -gt 0 ] && shift
harnesses=${*:-workload scenario device fabric system options calibration args transformer}
build=$top/build-fuzz
jobs=${JOBS:-2}

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
found=0
printf '%-10s %12s %10s %8s %8s %8s %9s\n' harness executions exec/s cov ft corpus findings
for h in $harnesses; do
  out=$build/fuzz-out/$h
  mkdir -p "$out/corpus" "$out/findings"
  rm -f "$out/findings"/*
  status=0
  # Keywords of the format (tests/fuzz/dict) let mutations reach past the key checks.
  case $h in fabric|system) dict=catalog ;; *) dict=$h ;; esac
  dict=$top/tests/fuzz/dict/$dict.dict
  # -timeout: an input taking 10 s is a hang; -rss_limit_mb: 2 GB is an out-of-memory finding.
  "$build/fuzz_$h" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
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
  [ "$n" -gt 0 ] && found=1
  printf '%-10s %12s %10s %8s %8s %8s %9s\n' "$h" "${execs:-?}" "${rate:-?}" "${cov:-?}" \
    "${ft:-?}" "${corp:-?}" "$n"
  if [ "$n" -gt 0 ] || [ "$status" -ne 0 ]; then
    find "$out/findings" -type f | sed 's/^/           finding: /'
    grep -a -m 3 -E 'ERROR|invariant failed|runtime error' "$out/log" | sed 's/^/           /' || true
  fi
done
exit $found
