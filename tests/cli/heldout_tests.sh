#!/bin/sh
# The held-out runner (dtsim-reference-run --heldout FILE): it reads every row of
# bench/reference/heldout-tf.csv, and a bad row stops it with one line naming the file, the line
# and the column, exit status 2 and nothing on stdout.
# Usage: heldout_tests.sh PATH/TO/dtsim-reference-run PATH/TO/heldout-tf.csv
RUNNER=${1:?usage: heldout_tests.sh RUNNER HELDOUT.csv}
CSV=${2:?usage: heldout_tests.sh RUNNER HELDOUT.csv}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

. "$(dirname "$0")/lib.sh"

# The page's synthetic tables, counted by hand: AWS p2.8xlarge one instance, 5 models x 4 die
# counts + the batch-32 table (2 models x 4); AWS distributed, 3 models + 2 batch-32 columns, x 5
# GPU counts (1, 8, 16, 32, 64); GCE, the 2- and 4-die rows of ResNet-152, AlexNet and VGG16
# (3 x 2) + the batch-32 table (2 x 4); DGX-1 batch 32, InceptionV3, ResNet-50 and VGG16 at 2 and
# 4 GPUs (3 x 2) + ResNet-152 at 1-8 (4). training.csv holds the rest.
"$RUNNER" --heldout "$CSV" --check >"$TMP/out" 2>"$TMP/err"
st=$?
grep -qF "77 rows: aws-single 28; aws-distributed 25; gce 14; dgx1 10" "$TMP/out" && [ $st -eq 0 ] &&
  ok "heldout-tf.csv: 77 rows in four groups" ||
  bad "heldout-tf.csv --check: status $st, $(cat "$TMP/out" "$TMP/err")"

# A file of the header and one good row, then one line made bad.
grep -v "^#" "$CSV" | head -1 >"$TMP/head.csv"
good=$(grep '^aws-single,resnet50,' "$CSV" | head -1)
# bad_row NAME PATTERN LINE: the file is the header, the good row, then LINE (line 3).
bad_row() {
  { cat "$TMP/head.csv"; echo "$good"; echo "$3"; } >"$TMP/bad.csv"
  "$RUNNER" --heldout "$TMP/bad.csv" >"$TMP/out" 2>"$TMP/err"
  got=$?
  lines=$(wc -l <"$TMP/err")
  if [ $got -eq 2 ] && [ "$lines" -eq 1 ] && [ ! -s "$TMP/out" ] &&
     grep -qF "$TMP/bad.csv:3: $2" "$TMP/err"; then
    ok "$1 ($(cat "$TMP/err"))"
  else
    bad "$1: status $got (want 2), $lines stderr lines (want 1 with 'bad.csv:3: $2'): $(cat "$TMP/err"); stdout: $(head -c 200 "$TMP/out")"
  fi
}
bad_row "a field missing" "18 fields where the header has 19" "${good%,*}"
bad_row "nodes negative" "column nodes" "$(echo "$good" | sed 's/,p2.8xlarge,1,/,p2.8xlarge,-1,/')"
bad_row "batch not a number" "column batch_per_device" "$(echo "$good" | sed 's/,1,1,64,/,1,1,lots,/')"
bad_row "measured not a number" "column measured" "$(echo "$good" | sed 's/,51.5,/,fast,/')"
bad_row "unknown system" "column system" "$(echo "$good" | sed 's/,p2.8xlarge,/,p9.huge,/')"
bad_row "unknown strategy" "column strategy" "$(echo "$good" | sed 's/,ps,gpu,/,zz,gpu,/')"
bad_row "servers on a dp row" "column ps_placement" "$(echo "$good" | sed 's/,ps,gpu,/,dp,gpu,/')"
bad_row "ps count zero" "column ps_count" "$(echo "$good" | sed 's/,ps,gpu,1,/,ps,gpu,0,/')"
bad_row "unknown ps workers" "column ps_workers" "$(echo "$good" | sed 's/,device,/,rack,/')"
bad_row "unknown ps sharding" "column ps_sharding" "$(echo "$good" | sed 's/,device,,/,device,greedy,/')"
bad_row "sharding on a dp row" "column ps_sharding: only rows of strategy ps" \
  "$(echo "$good" | sed 's/,ps,gpu,1,device,,/,dp,,,,round-robin,/')"
bad_row "unknown model" "unknown model 'nosuchnet'" "$(echo "$good" | sed 's/,resnet50,/,nosuchnet,/')"

# TensorFlow's replica_device_setter placed the variables of the distributed_replicated rows
# (round-robin), and of no other row.
awk -F, '/^#/ || $1 == "group" { next }
  ($15 == "distributed_replicated") != ($14 == "round-robin") { bad = 1; next }
  $15 == "distributed_replicated" { n++ }
  END { exit bad || n != 25 }' "$CSV" &&
  ok "ps_sharding round-robin on the 25 distributed_replicated rows only" ||
  bad "ps_sharding: not round-robin exactly on the distributed_replicated rows"

# A header without a needed column: the header's line.
{ sed 's/ps_count/servers/' "$TMP/head.csv"; echo "$good"; } >"$TMP/hdr.csv"
"$RUNNER" --heldout "$TMP/hdr.csv" >"$TMP/out" 2>"$TMP/err"
st=$?
[ $st -eq 2 ] && [ ! -s "$TMP/out" ] && grep -qF "$TMP/hdr.csv:1: the header has no column ps_count" "$TMP/err" &&
  ok "header without ps_count ($(cat "$TMP/err"))" ||
  bad "header without ps_count: status $st, $(cat "$TMP/err")"

# Comments and blank lines are skipped; one good row prints one row and its group's MAPE, and
# the error column is (predicted - measured) / measured of the two printed figures.
{ echo "# a comment"; cat "$TMP/head.csv"; echo; echo "$good"; } >"$TMP/one.csv"
"$RUNNER" --heldout "$TMP/one.csv" >"$TMP/out" 2>"$TMP/err"
st=$?
row=$(grep '^aws-single ' "$TMP/out")
m=$(echo "$row" | awk '{print $10}'); p=$(echo "$row" | awk '{print $11}'); e=$(echo "$row" | awk '{print $12}')
want=$(awk -v m="$m" -v p="$p" 'BEGIN { printf "%+.1f", (p - m) / m * 100 }')
[ $st -eq 0 ] && [ "$m" = 51.5 ] && [ "$e" = "$want" ] &&
  grep -q "MAPE over all 1 held-out rows" "$TMP/out" &&
  ok "one row: measured $m, predicted $p, error $e%" ||
  bad "one row: status $st, measured $m (want 51.5), error $e (want $want): $(cat "$TMP/out" "$TMP/err")"

echo "heldout: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
