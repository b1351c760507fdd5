# Helpers shared by the command-line test scripts (sourced; POSIX sh). Each script sets
# pass=0 fail=0 first; ok and bad count and print one line per check.
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

# json_num KEY < json : the value of a numeric key of each JSON object, one per line
json_num() { sed -n "s/.*\"$1\":\([-0-9.eE+]*\).*/\1/p"; }

# near A B RELTOL : |A-B| <= RELTOL*|B|
near() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b; exit !(d <= t * m) }'; }
