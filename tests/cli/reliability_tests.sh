#!/bin/sh
# Command-line tests of hostile sizes and shapes (issue 30): deep nesting, unbounded work and
# memory, decimal-comma locales, outputs that would overwrite inputs or each other, control
# characters written into files, errors reported before the long work and blamed on the right
# option. Usage: reliability_tests.sh PATH/TO/dtsim. Each check prints one line; the last counts.
DTSIM=${1:?usage: reliability_tests.sh DTSIM}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); printf 'ok   %s\n' "$1"; }
bad() { fail=$((fail + 1)); printf 'FAIL %s\n' "$1"; }

# expect_error NAME STATUS ARGS...: that status, one line on stderr, nothing on stdout, bounded
# by timeout so that a hang fails (status 124).
expect_error() {
  name=$1; want=$2; shift 2
  timeout 60 "$DTSIM" "$@" >"$TMP/out" 2>"$TMP/err"
  got=$?
  lines=$(wc -l <"$TMP/err")
  if [ "$got" -eq "$want" ] && [ "$lines" -eq 1 ] && [ ! -s "$TMP/out" ]; then
    ok "$name (status $got: $(cat "$TMP/err"))"
  else
    bad "$name: status $got (want $want), $lines stderr lines: $(head -c 300 "$TMP/err"), stdout: $(head -c 200 "$TMP/out")"
  fi
}
# err_has NAME PATTERN: the last message matches the fixed string PATTERN.
err_has() {
  if grep -qF -- "$2" "$TMP/err"; then ok "$1"; else bad "$1: $(head -c 300 "$TMP/err")"; fi
}
nest() { # N: N nested arrays around nothing
  awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "["; for (i = 0; i < n; i++) printf "]" }'
}

# --- 1. deep nesting -----------------------------------------------------------------------------
# json-glib recurses once per level; 100 000 levels overflowed the stack (status 139).
nest 100000 >"$TMP/deep.json"
expect_error "100000 nested arrays: describe" 2 describe "$TMP/deep.json"
# The 65th '[' opens level 65: line 1, column 65.
err_has "deep: file, line, column and the limit" "deep.json:1:65: not JSON: objects and arrays nested deeper than 64 levels"
expect_error "100000 nested arrays: run --model" 2 run --model "$TMP/deep.json"
nest 64 >"$TMP/deep64.json"
expect_error "64 levels pass the scan (and are no workload)" 2 describe "$TMP/deep64.json"
err_has "64 levels: not refused for depth" "deep64.json: not a JSON object"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
