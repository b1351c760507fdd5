#!/bin/sh
# Command-line tests of what a careful user or a hostile file can do with files: output targets
# of every kind, non-ASCII and non-UTF-8 names, inputs that never end or never arrive, size
# limits, one-line messages, signals. Special files are made in a temporary folder (mkfifo,
# ln -s, mknod when allowed); the real /dev is only ever read.
# Usage: files_tests.sh PATH/TO/dtsim. Each check prints one line; the last counts them.
DTSIM=${1:?usage: files_tests.sh DTSIM}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
. "$(dirname "$0")/lib.sh"

no_tmp_left() { # NAME DIR: no temporary output file in DIR
  if ls "$2" | grep -q '\.tmp-'; then bad "$1: temporary files left: $(ls "$2")"; else ok "$1"; fi
}
json_num() { sed -n "s/.*\"$1\":\([-0-9.eE+]*\).*/\1/p"; }

RUN="run --model lenet5 --iterations 1"

# --- 1. output targets ---------------------------------------------------------------------------
O=$TMP/out.d
mkdir "$O"
printf 'old\n' >"$O/reg.csv"
chmod 640 "$O/reg.csv"
"$DTSIM" $RUN --csv "$O/reg.csv" >/dev/null 2>&1
head -n 1 "$O/reg.csv" | grep -q '^task' && ok "regular file replaced" || bad "regular file: $(head -n 1 "$O/reg.csv")"
[ "$(stat -c %a "$O/reg.csv")" = 640 ] && ok "replaced file keeps mode 640" || bad "mode $(stat -c %a "$O/reg.csv")"
printf 'old\n' >"$O/target.csv"
ln -s target.csv "$O/link.csv"
"$DTSIM" $RUN --csv "$O/link.csv" >/dev/null 2>&1
[ -L "$O/link.csv" ] && head -n 1 "$O/target.csv" | grep -q '^task' && ok "symbolic link followed, link kept" ||
  bad "symbolic link: $(ls -l "$O")"
ln -s missing/x.csv "$O/dangling.csv"
expect_error "link to a missing file refused" 2 $RUN --csv "$O/dangling.csv"
mkfifo "$O/fifo"
expect_error "FIFO without a reader refused" 2 $RUN --trace "$O/fifo"
cat "$O/fifo" >"$O/from-fifo" &
reader=$!
# Until cat has the FIFO open, the run is refused as above: try again for up to 10 s.
i=0
while :; do
  "$DTSIM" $RUN --trace "$O/fifo" >/dev/null 2>"$TMP/err"
  st=$?
  [ $st -eq 2 ] && grep -q "no process reads" "$TMP/err" && [ $i -lt 100 ] || break
  sleep 0.1; i=$((i + 1))
done
# A reader still waiting for a writer (every try refused) would block the script.
[ "$st" -eq 0 ] || kill $reader 2>/dev/null
wait $reader
[ "$st" -eq 0 ] && [ -p "$O/fifo" ] && grep -q traceEvents "$O/from-fifo" &&
  ok "FIFO written in place, still a FIFO" || bad "FIFO: status $st, $(ls -l "$O/fifo")"
mkdir "$O/dir.json"
expect_error "folder as output refused" 2 $RUN --trace "$O/dir.json"
# A character device like /dev/null, made here (root only): written, not replaced.
if mknod "$O/null" c 1 3 2>/dev/null; then
  "$DTSIM" $RUN --csv "$O/null" >/dev/null 2>&1 && [ -c "$O/null" ] &&
    ok "character device written in place, still a device" || bad "character device: $(ls -l "$O/null")"
else
  echo "skip character device (mknod not allowed)"
fi
no_tmp_left "no temporary file left by the output tests" "$O"

# --- 2. locale and file names --------------------------------------------------------------------
L=$TMP/josé
mkdir "$L"
"$DTSIM" describe lenet5 --export "$L/josé.json" >/dev/null
for lang in unset C C.UTF-8; do
  if [ $lang = unset ]; then set -- env -u LANG -u LC_ALL -u LC_CTYPE; else set -- env -u LC_ALL LANG=$lang; fi
  "$@" "$DTSIM" run --model="$L/josé.json" --trace="$L/é.json" --json >"$TMP/out" 2>"$TMP/err" &&
    [ -s "$L/é.json" ] && ok "UTF-8 names with LANG $lang" || bad "LANG $lang: $(cat "$TMP/err")"
  rm -f "$L/é.json"
done
latin=$(printf '%s/lat\351.json' "$L")
cp "$L/josé.json" "$latin"
env -u LC_ALL LANG=C.UTF-8 "$DTSIM" run --model "$latin" --json >"$TMP/out" 2>"$TMP/err" &&
  ok "a name that is not UTF-8 is read as bytes" || bad "Latin-1 name: $(cat "$TMP/err")"
grep -q '"model":"[^"]*lat\\ufffd.json"' "$TMP/out" && ok "and shown in JSON as U+FFFD (JSON stays UTF-8)" ||
  bad "JSON model: $(grep -o '"model":"[^"]*"' "$TMP/out")"
expect_error "a missing non-UTF-8 name is escaped" 2 run --model "$(printf '%s/x\351.json' "$L")"
grep -q 'x\\xe9.json' "$TMP/err" && ok "byte shown as \\xe9" || bad "escape: $(cat "$TMP/err")"

# --- 3. sweep --csv: one row per point -----------------------------------------------------------
"$DTSIM" sweep --model lenet5 --devices 1,2,4 --csv "$TMP/sweep.csv" >/dev/null 2>&1
[ "$(wc -l <"$TMP/sweep.csv")" -eq 4 ] && head -n 1 "$TMP/sweep.csv" | grep -q '^variant,' &&
  ok "sweep --csv: a header and 3 point rows" || bad "sweep csv: $(wc -l <"$TMP/sweep.csv") lines"
printf 'keep me\n' >"$TMP/old.csv"
# The last point (12 devices: more than a node of 8 and not a multiple of it) is refused before
# the first is simulated, and the old file stays.
expect_error "sweep refused before simulating" 2 sweep --model lenet5 --devices 1,2,12 --csv "$TMP/old.csv"
[ "$(cat "$TMP/old.csv")" = "keep me" ] && ok "refused sweep leaves the old --csv" || bad "old csv replaced"

# --- 4. input limits -----------------------------------------------------------------------------
expect_error "--model /dev/zero" 2 run --model /dev/zero
grep -q "more than the 64 MiB" "$TMP/err" && ok "/dev/zero: size limit named" || bad "/dev/zero: $(cat "$TMP/err")"
expect_error "--calibration /dev/urandom" 2 run --model lenet5 --calibration /dev/urandom
expect_error "scenario /dev/zero" 2 run /dev/zero
expect_error "calibrate /dev/zero" 2 calibrate /dev/zero
truncate -s 65M "$TMP/huge.json"
expect_error "a 65 MiB workload refused by its size" 2 run --model "$TMP/huge.json"
grep -q "68157440 bytes is more than" "$TMP/err" && ok "size given" || bad "huge: $(cat "$TMP/err")"
mkfifo "$TMP/in.fifo"
expect_error "a FIFO without a writer does not block" 2 run --model "$TMP/in.fifo"
"$DTSIM" describe lenet5 --export "$TMP/lenet5.json" >/dev/null
cat "$TMP/lenet5.json" >"$TMP/in.fifo" &
writer=$!
# Until cat has the FIFO open the reader finds no writer and refuses (as above), and cat then
# waits for the next reader: try again for up to 10 s.
i=0
while :; do
  d=$(timeout 60 "$DTSIM" describe "$TMP/in.fifo" --json 2>/dev/null | json_num total_params)
  [ -z "$d" ] && [ $i -lt 100 ] || break
  sleep 0.1; i=$((i + 1))
done
[ "$d" = 61706 ] && ok "a workload read from a FIFO (61706 params)" || bad "FIFO input: '$d'"
# A writer still waiting for a reader (every try refused) would block the script.
kill $writer 2>/dev/null
wait

# --- 5. synthetic topologies ---------------------------------------------------------------------
sed 's/^topology = .*/topology = pack:64 core:64 pu:64/' "$DTSIM_DATA_DIR/devices/catalog/xeon-e5-2630v3-2s.ini" >"$TMP/cpu.ini"
expect_error "262144 hardware threads refused" 2 run --model lenet5 --device "$TMP/cpu.ini"
grep -q "cpu.ini:7: \[device\] topology" "$TMP/err" && ok "FILE:LINE of the topology" || bad "topology: $(cat "$TMP/err")"

# --- 6. 100 000 layers (the time is bench/fuzz/readers.sh's; a quadratic reader takes minutes,
# past ctest's limit) ------------------------------------------------------------------------------
awk 'BEGIN { n = 100000
  printf "{\"format\":\"dtsim-workload\",\"version\":1,\"name\":\"chain\",\"input\":[1,4,4],\"layers\":[\n"
  printf "{\"name\":\"l0\",\"type\":\"fc\",\"parents\":[\"input\"],\"out_features\":16}"
  for (i = 1; i < n; i++) printf ",\n{\"name\":\"l%d\",\"type\":\"relu\",\"parents\":[\"l%d\"]}", i, i - 1
  printf "\n]}\n" }' >"$TMP/chain.json"
"$DTSIM" describe "$TMP/chain.json" --json >"$TMP/chain.out" 2>"$TMP/err"
# 16 inputs x 16 outputs + 16 biases = 272 parameters; the relus have none.
p=$(json_num total_params <"$TMP/chain.out")
n=$(grep -o '"type":"relu"' "$TMP/chain.out" | wc -l)
[ "$p" = 272 ] && [ "$n" -eq 99999 ] && ok "100000 layers read (272 params, 99999 relu)" ||
  bad "100000 layers: params '$p', relus $n, $(cat "$TMP/err")"
sed 's/"l99998"\]}/"l99998"],"bogus":1}/' "$TMP/chain.json" >"$TMP/chain-bad.json"
expect_error "error in the last of 100000 layers" 2 describe "$TMP/chain-bad.json"
grep -q "chain-bad.json:100001: layer 'l99999'" "$TMP/err" && ok "its line, 100001" || bad "line: $(cat "$TMP/err")"

# The same for a Paleo file: 99 999 1x1 convolutions of 4 to 4 channels with bias (Paleo's
# default when no normalizer is named) hold 99 999 x (4 x 4 + 4) = 1 999 980 parameters; line 1
# is the name, 2 "layers", 3 the input, 3 + i layer ci.
paleo_chain() { # BAD: 1 makes the last layer's type unknown
  awk -v n=100000 -v bad="$1" 'BEGIN {
    printf "{\"name\": \"chain\",\n \"layers\": {\n"
    printf "  \"data\": {\"parents\": [], \"type\": \"Input\", \"tensor\": [1, 4, 4, 4]}"
    for (i = 1; i < n; i++)
      printf ",\n  \"c%d\": {\"parents\": [\"%s\"], \"type\": \"%s\", \"filter\": [1, 1, 4, 4], \"strides\": [1, 1, 1, 1], \"padding\": \"SAME\"}", i, i == 1 ? "data" : "c" (i - 1), bad && i == n - 1 ? "Warp" : "Convolution"
    printf "\n }\n}\n" }'
}
paleo_chain 0 >"$TMP/paleo-chain.json"
p=$("$DTSIM" describe "$TMP/paleo-chain.json" --json 2>"$TMP/err" | json_num total_params)
[ "$p" = 1999980 ] && ok "100000 Paleo layers read (1999980 params)" ||
  bad "100000 Paleo layers: params '$p', $(cat "$TMP/err")"
paleo_chain 1 >"$TMP/paleo-chain-bad.json"
expect_error "error in the last of 100000 Paleo layers" 2 describe "$TMP/paleo-chain-bad.json"
grep -q "paleo-chain-bad.json:100002: layer 'c99999': unknown layer type 'Warp'" "$TMP/err" &&
  ok "its line, 100002" || bad "line: $(cat "$TMP/err")"
rm -f "$TMP/paleo-chain.json" "$TMP/paleo-chain-bad.json" "$TMP/chain.json" "$TMP/chain-bad.json"

# --- 7. no infinity from calibrate ---------------------------------------------------------------
printf 'model,framework,precision,device,system,nodes,devices_per_node,batch_per_device,strategy,ps_placement,measured,unit,source\nlenet5,x,fp32,v100-sxm2-16gb,dgx1-v100,1,1,32,fwd+bwd,none,1e-320,ms,test\n' >"$TMP/tiny.csv"
expect_error "measured 1e-320 ms refused" 2 calibrate "$TMP/tiny.csv" --json -o "$TMP/overlay.ini"
[ ! -e "$TMP/overlay.ini" ] && ok "no overlay written" || bad "overlay: $(cat "$TMP/overlay.ini")"

# --- 9. outputs checked before simulating --------------------------------------------------------
expect_error "unwritable --csv of a sweep" 2 sweep --model lenet5 --devices 1,2 --csv "$TMP/no/dir/s.csv"
grep -q -- "--csv" "$TMP/err" && ok "names --csv" || bad "$(cat "$TMP/err")"
expect_error "unwritable --trace of run" 2 run --model lenet5 --trace "$TMP/no/dir/t.json"
grep -q -- "--trace" "$TMP/err" && ok "names --trace" || bad "$(cat "$TMP/err")"

# --- 10. one-line messages -----------------------------------------------------------------------
expect_error "newline in --model" 2 run --model "$(printf 'a\nb.json')"
printf '{"format":"dtsim-workload","version":1,"input":[1,4,4],"layers":[{"name":"x\\ny\\u001b","type":"warp","parents":["input"]}]}' >"$TMP/nl.json"
expect_error "newline and escape in a layer name" 2 describe "$TMP/nl.json"
printf '{"name":"p","layers":{"da\\nta":{"type":"Input","parents":[],"tensor":[1,8,8,3]},"x":{"type":"Warp\\n","parents":["da\\nta"]}}}' >"$TMP/paleo-nl.json"
expect_error "newline in a Paleo layer and type" 2 describe "$TMP/paleo-nl.json"
printf '[scenario]\nmodel = a\\nb\033\n' >"$TMP/nl.ini"
expect_error "escaped newline and ESC in a scenario value" 2 run "$TMP/nl.ini"

# --- 11. signals (the temporary file written at the end: tests/util's test_outfile_signals) ----
S=$TMP/sig
mkdir "$S"
"$DTSIM" run --model resnet50 --nodes 32 --iterations 200 --trace "$S/t.json" --csv "$S/t.csv" >/dev/null 2>&1 &
pid=$!
sleep 1
kill -TERM $pid
wait $pid
st=$?
[ $st -eq 143 ] && ok "SIGTERM ends the run (status 143)" || bad "SIGTERM: status $st"
[ -z "$(ls "$S")" ] && ok "SIGTERM leaves no file, temporary or partial" || bad "left: $(ls "$S")"

# --- 12. one-rank collective ---------------------------------------------------------------------
expect_error "collective over one rank" 2 collective --op allreduce --bytes 1M --nodes 1 --devices-per-node 1

echo "files tests: $pass passed, $fail failed"
[ $fail -eq 0 ]
