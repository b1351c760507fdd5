#!/bin/sh
# Every dtsim command the README shows runs: the lines of its ```sh blocks that start with
# `build/dtsim ` (continuation lines joined) or with `printf` (files the next command reads),
# in README order, in one temporary folder, `build/dtsim` replaced by the binary under test.
# Each must exit 0 and print something. Commands of other programs (make, mpirun, scripts/,
# the benchmarks) are left to their own tests.
# Usage: readme_tests.sh README.md PATH/TO/dtsim
README=${1:?usage: readme_tests.sh README.md DTSIM}
DTSIM=${2:?usage: readme_tests.sh README.md DTSIM}
case $DTSIM in /*) ;; *) DTSIM=$(pwd)/$DTSIM ;; esac
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

# One command per line of $TMP/commands.
awk '
  /^```sh/ { on = 1; next }
  /^```/ { on = 0; next }
  !on { next }
  {
    line = $0
    if (cont != "") { line = cont " " line; cont = "" }
    if (line ~ /\\$/) { sub(/\\$/, "", line); cont = line; next }
    if (line ~ /^(build\/dtsim |printf )/) print line
  }' "$README" >"$TMP/commands"

[ -s "$TMP/commands" ] || { echo "FAIL no command found in $README"; exit 1; }
cd "$TMP" || exit 1
while IFS= read -r cmd; do
  # A trailing comment (two spaces or more, then #) is the README's, not the command's.
  cmd=$(printf '%s' "$cmd" | sed 's/  *# .*$//')
  case $cmd in
    printf*) sh -c "$cmd" && continue ;;
  esac
  args=${cmd#build/dtsim }
  status=0
  # shellcheck disable=SC2086  # the README's words, split as a shell would
  eval "timeout 300 \"\$DTSIM\" $args" >out 2>err </dev/null || status=$?
  if [ "$status" -eq 0 ] && [ -s out ]; then
    pass=$((pass + 1)); printf 'ok   %s\n' "$cmd"
  else
    fail=$((fail + 1)); printf 'FAIL %s: status %s: %s\n' "$cmd" "$status" "$(head -c 300 err)"
  fi
done <"$TMP/commands"
printf '%d passed, %d failed\n' "$pass" "$fail"
[ "$fail" -eq 0 ] && [ "$pass" -ge 20 ]
