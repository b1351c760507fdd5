# Helpers shared by the command-line test scripts (sourced; POSIX sh). Each script sets
# pass=0 fail=0 first; ok and bad count and print one line per check.
# printf, not echo: dash's echo would turn the \n of an escaped message into a line break.
ok() { pass=$((pass + 1)); printf 'ok   %s\n' "$1"; }
bad() { fail=$((fail + 1)); printf 'FAIL %s\n' "$1"; }

# json_num KEY < json : the value of a numeric key of each JSON object, one per line
json_num() { sed -n "s/.*\"$1\":\([-0-9.eE+]*\).*/\1/p"; }

# near A B RELTOL : |A-B| <= RELTOL*|B|
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; exit !(d <= t * m) }'; }

# expect_error NAME STATUS ARGS...: that status, one line on stderr, nothing on stdout. Bounded
# by timeout so that a hang fails (status 124). Runs "$DTSIM" where the script stands.
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

# The two below run "$DTSIM" inside "$TMP" (the script sets both).
# refused NAME PATTERN ARGS... : exit status 2, one line on stderr containing PATTERN (a fixed
# string), nothing on stdout
refused() {
  name=$1; want=$2; shift 2
  (cd "$TMP" && "$DTSIM" "$@") >"$TMP/out" 2>"$TMP/err"
  got=$?
  lines=$(wc -l <"$TMP/err")
  if [ "$got" -eq 2 ] && [ "$lines" -eq 1 ] && [ ! -s "$TMP/out" ] && grep -qF -- "$want" "$TMP/err"; then
    ok "$name ($(cat "$TMP/err"))"
  else
    bad "$name: status $got (want 2), $lines stderr lines (want 1 with '$want'): $(head -c 300 "$TMP/err"); stdout: $(head -c 200 "$TMP/out")"
  fi
}

# runs NAME PATTERN ARGS... : exit status 0 and PATTERN (fixed string) on stdout
runs() {
  name=$1; want=$2; shift 2
  (cd "$TMP" && "$DTSIM" "$@") >"$TMP/out" 2>"$TMP/err"
  got=$?
  if [ "$got" -eq 0 ] && grep -qF -- "$want" "$TMP/out"; then
    ok "$name"
  else
    bad "$name: status $got, '$want' not in stdout: $(head -c 300 "$TMP/out") stderr: $(head -c 300 "$TMP/err")"
  fi
}
