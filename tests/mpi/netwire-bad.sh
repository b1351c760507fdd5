#!/bin/sh
# dtsim-netwire refuses bad options and names with one line naming the option or the
# namespace, exit status 2, before it touches any device.
set -u
: "${NETWIRE:?}"
fail=0
check() {
  want=$1; shift
  out=$("$NETWIRE" "$@" 2>&1 >/dev/null); status=$?
  lines=$(printf '%s\n' "$out" | grep -c .)
  if [ "$status" -ne 2 ] || [ "$lines" -ne 1 ] || ! printf '%s' "$out" | grep -q -- "$want"; then
    echo "FAIL: dtsim-netwire $*: status $status, $lines lines: $out"; fail=1
  fi
}
ok="--rate-Bps 125000000 --delay-ns 100000 --subnet 198.18.72.0"
check "are required" --delay-ns 100000 --subnet 198.18.72.0 a b
check "rate-Bps" --rate-Bps -5 --delay-ns 100000 --subnet 198.18.72.0 a b
check "rate-Bps" --rate-Bps 1e99 --delay-ns 100000 --subnet 198.18.72.0 a b
check "delay-ns" --rate-Bps 125000000 --delay-ns 100us --subnet 198.18.72.0 a b
check "subnet" --rate-Bps 125000000 --delay-ns 0 --subnet 198.18.72.5 a b
check "subnet" --rate-Bps 125000000 --delay-ns 0 --subnet not-an-address a b
# shellcheck disable=SC2086
check "2 to 254 namespace names" $ok only-one
# shellcheck disable=SC2086
check "namespace dtsim-no-such-ns" $ok dtsim-no-such-ns dtsim-no-such-ns2
# shellcheck disable=SC2086
check "queue-limit" --queue-limit 12Q $ok a b
check "bogus" --bogus
[ "$fail" -eq 0 ] && echo ok
exit "$fail"
