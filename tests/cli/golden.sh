#!/bin/sh
# Golden-output tests of the command line: what users see, compared line by line.
#
# Each file tests/cli/golden/NAME.golden is one case:
#   # comment lines (kept as they are)
#   $ ARGS              the arguments of one dtsim command (shell words), run in golden/
#   ! status N          the exit status when it is not 0
#   > LINE              each line of standard output (">" alone for an empty line)
#   2> LINE             each line of standard error
# Figures that depend on the machine's speed (wall-clock seconds and event rates) are replaced
# by WALL and RATE before comparing.
#
# Usage: golden.sh DTSIM [NAME...]. With DTSIM_GOLDEN_UPDATE=1 every case's file is rewritten
# from what the program prints now; review the change with `git diff tests/cli/golden` before
# committing it.
set -u
DTSIM=$1
shift
# The cases run inside golden/: make relative paths absolute first.
case $DTSIM in */*) DTSIM=$(cd "$(dirname "$DTSIM")" && pwd)/$(basename "$DTSIM") ;; esac
if [ -n "${DTSIM_DATA_DIR:-}" ]; then
  DTSIM_DATA_DIR=$(cd "$DTSIM_DATA_DIR" && pwd)
  export DTSIM_DATA_DIR
fi
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/golden
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mask() {
  sed -e 's/ in [0-9.][0-9.]* s ([0-9.e+-]* events\/s)/ in WALL s (RATE events\/s)/' \
      -e 's/"sim_wall_s":[0-9.e+-]*/"sim_wall_s":WALL/g'
}

prefix() {
  awk -v p="$1" '{ if ($0 == "") print p; else print p " " $0 }'
}

if [ $# -eq 0 ]; then
  set -- $(cd "$dir" && ls *.golden | sed 's/\.golden$//')
fi
fail=0
for name in "$@"; do
  file=$dir/$name.golden
  if [ ! -f "$file" ]; then
    echo "$name: no file $file"
    fail=1
    continue
  fi
  args=$(sed -n 's/^\$ //p' "$file")
  if [ -z "$args" ]; then
    echo "$file: no '\$ ' line"
    fail=1
    continue
  fi
  (cd "$dir" && eval "\"\$DTSIM\" $args" >"$tmp/out" 2>"$tmp/err")
  status=$?
  {
    grep -E '^(#|\$ )' "$file"
    [ "$status" -ne 0 ] && echo "! status $status"
    mask <"$tmp/out" | prefix '>'
    mask <"$tmp/err" | prefix '2>'
  } >"$tmp/actual"
  if [ "${DTSIM_GOLDEN_UPDATE:-0}" = 1 ]; then
    cp "$tmp/actual" "$file"
    echo "$name: written"
  elif diff -u "$file" "$tmp/actual" >"$tmp/diff"; then
    echo "$name: ok"
  else
    echo "$name: FAILED (expected, then what dtsim prints now)"
    cat "$tmp/diff"
    fail=1
  fi
done
exit $fail
