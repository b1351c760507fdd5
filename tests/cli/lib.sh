# Helpers shared by the command-line test scripts (sourced; POSIX sh). Each script sets
# pass=0 fail=0 first; ok and bad count and print one line per check.
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

# json_num KEY < json : the value of a numeric key of each JSON object, one per line
json_num() { sed -n "s/.*\"$1\":\([-0-9.eE+]*\).*/\1/p"; }

# near A B RELTOL : |A-B| <= RELTOL*|B|
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; exit !(d <= t * m) }'; }

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
