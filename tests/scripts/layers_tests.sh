#!/bin/sh
# The layers of docs/architecture.md, checked on the #include lines: a file may include headers
# of its own layer and the layers below it, never above.
#   util, sim/kernel, workloads, devices, comm, traces   nothing of sim/ (kernel aside)
#   sim/strategies                                      of sim/ only scenario.h (the typed
#                                                       configuration), nothing of sim/app
#   sim (the driver)                                    nothing of sim/app
# Then the same check on a scratch copy where a strategy includes search.h must fail, so the
# check is known to see a violation.
#
#   sh tests/scripts/layers_tests.sh
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
failures=0

# headers DIR: the names of the headers directly in DIR.
headers() { (cd "$1" && ls -- *.h 2>/dev/null); }

# check ROOT: prints each include that crosses a layer upwards; status 1 if any.
check() {
  root=$1
  bad=0
  app=$( { headers "$root/sim/app"; headers "$root/sim/app/mpi"; } | sort -u)
  driver=$(headers "$root/sim" | grep -vx 'scenario.h')
  strategies=$(headers "$root/sim/strategies")
  # above FILE LIST...: the includes of FILE that name a header of LIST.
  above() {
    file=$1
    shift
    for h in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file"); do
      for name in "$@"; do
        if [ "$h" = "$name" ]; then
          echo "${file#"$root"/}: includes $h"
          bad=1
        fi
      done
    done
  }
  for f in "$root"/util/*.[ch] "$root"/sim/kernel/*.[ch] "$root"/workloads/*.[ch] \
           "$root"/devices/*.[ch] "$root"/comm/*.[ch] "$root"/comm/coll/*.[ch] \
           "$root"/traces/*.[ch]; do
    [ -f "$f" ] && above "$f" $app $driver $strategies scenario.h
  done
  for f in "$root"/sim/strategies/*.[ch]; do
    [ -f "$f" ] && above "$f" $app $driver
  done
  for f in "$root"/sim/*.[ch]; do
    [ -f "$f" ] && above "$f" $app
  done
  return $bad
}

if check "$top"; then
  echo "ok   no include crosses a layer upwards"
else
  echo "FAIL includes that cross a layer upwards (above)"
  failures=$((failures + 1))
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dtsim-layers-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/sim/strategies" "$tmp/sim/app/mpi"
cp "$top"/sim/*.h "$tmp/sim/"
cp "$top"/sim/strategies/*.[ch] "$tmp/sim/strategies/"
cp "$top"/sim/app/*.h "$tmp/sim/app/"
printf '#include "search.h"\n' >>"$tmp/sim/strategies/strategy_dp.c"
if check "$tmp" >"$tmp/out"; then
  echo "FAIL a strategy including search.h passed the check"
  failures=$((failures + 1))
elif grep -q 'sim/strategies/strategy_dp.c: includes search.h' "$tmp/out"; then
  echo "ok   a strategy including search.h is refused"
else
  echo "FAIL the check named something else: $(cat "$tmp/out")"
  failures=$((failures + 1))
fi
[ "$failures" -eq 0 ]
