#!/bin/sh
# Command-line checks of what a new user hit (issue 28, item 5) and of silent switches and
# ignored values (issue 30, item 6): every one either works as documented or is refused with one
# line naming the option or FILE:LINE, exit status 2, nothing on stdout.
# Usage: users_tests.sh PATH/TO/dtsim. Each check prints one line; the last counts them.
DTSIM=${1:?usage: users_tests.sh DTSIM}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

. "$(dirname "$0")/lib.sh"

# json_num KEY < json : the value of a numeric key of a one-line JSON object (first match)
json_num() { sed -n "s/.*\"$1\":\([-0-9.eE+]*\).*/\1/p" | head -1; }

# --- boolean option values (issue 30) ---------------------------------------------------------
runs "--json=yes prints JSON" '"iteration_time_s":' run --model lenet5 --json=yes
"$DTSIM" run --model lenet5 --json=no >"$TMP/out" 2>&1
grep -q '^{' "$TMP/out" && bad "--json=no printed JSON" || ok "--json=no prints the table"
refusedv=""
for v in on off yes no true false 1 0; do
  "$DTSIM" run --model lenet5 --json="$v" >"$TMP/out" 2>"$TMP/err" || refusedv="$refusedv $v"
  case $v in on|yes|true|1) head -c 1 "$TMP/out" | grep -q '{' || refusedv="$refusedv $v(table)" ;;
             *) head -c 1 "$TMP/out" | grep -q '{' && refusedv="$refusedv $v(json)" ;; esac
done
[ -z "$refusedv" ] && ok "--json takes on/off/yes/no/true/false/1/0" || bad "--json values:$refusedv"
refused "--json=maybe" "--json: 'maybe'" run --model lenet5 --json=maybe
# The commands with their own options parse them the same way.
"$DTSIM" describe lenet5 --json=no >"$TMP/out" 2>&1
head -1 "$TMP/out" | grep -q '^model lenet5' && ok "describe --json=no prints the table" \
  || bad "describe --json=no: $(head -c 200 "$TMP/out")"
runs "describe --json=yes prints JSON" '{"model":"lenet5"' describe lenet5 --json=yes
"$DTSIM" list systems --json=off >"$TMP/out" 2>&1
grep -q '^{' "$TMP/out" && bad "list --json=off printed JSON" || ok "list --json=off prints the table"
refused "list --json=maybe" "--json: 'maybe'" list systems --json=maybe
# LeNet-5 at batch 2^20 per device needs far more than a V100's 16 GiB: with --strict=off it
# is a warning in the report, not an error.
runs "--strict=off is off" "iteration time" run --model lenet5 --batch 1048576 --strict=off
refused "--strict=on is on" "--strict" run --model lenet5 --batch 1048576 --strict=on

# --strict refuses before writing: no trace, no CSV left behind.
refused "--strict with outputs" "does not fit" run --model lenet5 --batch 1048576 --strict \
  --trace strict.json --csv strict.csv
[ ! -e "$TMP/strict.json" ] && [ ! -e "$TMP/strict.csv" ] && ok "--strict failure writes no outputs" \
  || bad "--strict failure left $(ls "$TMP"/strict.* 2>/dev/null)"

# --- the default dp trace (issue 28) ----------------------------------------------------------
# Two dgx1-v100 nodes: 16 GPUs, each a process of the trace, and the ring's transfers between
# them as flow events (arrows), 2 per transfer.
(cd "$TMP" && "$DTSIM" run --nodes 2 --iterations 2 --trace t.json >/dev/null 2>"$TMP/err")
gpus=$(grep -o '"name":"process_name","pid":[0-9]*,"args":{"name":"gpu[0-9]* ' "$TMP/t.json" | wc -l)
arrows=$(grep -c '"ph":"[sf]"' "$TMP/t.json")
[ "$gpus" -eq 16 ] && [ "$arrows" -gt 0 ] && ok "dp trace: 16 GPUs, $arrows flow events" \
  || bad "dp trace: $gpus GPU processes (want 16), $arrows flow events; $(cat "$TMP/err")"
(cd "$TMP" && "$DTSIM" run --nodes 2 --trace t1.json --symmetry on >/dev/null 2>"$TMP/err")
gpus=$(grep -o '"name":"process_name","pid":[0-9]*,"args":{"name":"gpu[0-9]* ' "$TMP/t1.json" | wc -l)
[ "$gpus" -eq 1 ] && grep -q "one device standing for all 16" "$TMP/err" \
  && ok "dp trace with --symmetry on: one GPU, and a note" || bad "symmetry on: $gpus GPUs; $(cat "$TMP/err")"

# --- repeated options and duplicate keys (issue 30) ------------------------------------------
refused "--batch given twice" "--batch: given twice" run --model lenet5 --batch 8 --batch 16
refused "--bytes given twice" "--bytes: given twice" collective --bytes 1M --bytes=2M
refused "describe --json twice" "--json: given twice" describe lenet5 --json --json
printf '[scenario]\nmodel = lenet5\nbatch = 4\n# comment\nbatch = 8\n' >"$TMP/dup.ini"
refused "INI key given twice" "dup.ini:5: [scenario] batch: given twice (first on line 3)" run dup.ini
printf '[scenario]\nmodel = lenet5\ngarbage line here\n' >"$TMP/garbage.ini"
refused "INI garbage line has its line" "garbage.ini:3:" run garbage.ini

cat >"$TMP/dup.json" <<'JSON'
{
  "format": "dtsim-workload",
  "input": [1, 8, 8],
  "layers": [
    {"name": "fc", "type": "fc", "parents": ["input"], "out_features": 10, "out_features": 20},
    {"name": "loss", "type": "softmax", "parents": ["fc"]}
  ]
}
JSON
refused "JSON member given twice" 'dup.json:5:76: member "out_features" given twice' describe dup.json
# The same name in two objects is fine: each layer has its own "name".
sed 's/, "out_features": 20//' "$TMP/dup.json" >"$TMP/ok.json"
runs "JSON names repeated across objects" "fc" describe ok.json

# --- decimal numbers (issue 30) ----------------------------------------------------------------
# LeNet-5's conv1: 6 x 28 x 28 outputs of 5 x 5 multiply-adds and a bias each: 4704 x 51 =
# 239904 FLOPs per sample, 2399040 for ten (octal 010 would be eight: 1919232).
got=$("$DTSIM" describe lenet5 --batch 010 --json | grep -o '"forward_flops":[0-9]*' | head -1)
[ "$got" = '"forward_flops":2399040' ] && ok "describe --batch 010 is ten (conv1 2399040 FLOPs)" \
  || bad "describe --batch 010: conv1 $got, want 10 x 239904"

# --- describe and calibrate read the shared keys through the one front end ----------------------
# describe's own default batch is one sample (run's is 64): conv1 239904 FLOPs; -b and -p are
# still its short names (3 samples: 719712 FLOPs); the keys' validators refuse what run refuses.
got=$("$DTSIM" describe lenet5 --json | grep -o '"forward_flops":[0-9]*' | head -1)
[ "$got" = '"forward_flops":239904' ] && ok "describe: one sample by default (conv1 239904 FLOPs)" \
  || bad "describe default batch: conv1 $got, want 239904"
runs "describe -b 3 -p fp16" "batch 3, precision fp16" describe lenet5 -b 3 -p fp16
refused "describe --batch 0" "--batch: " describe lenet5 --batch 0
refused "describe --precision fp7" "--precision: unknown value 'fp7'" describe lenet5 --precision fp7
refused "describe takes no cluster keys" "--nodes" describe lenet5 --nodes 2
refused "describe --optimizer given twice" "--optimizer: given twice" describe lenet5 --optimizer sgd --optimizer adam
printf 'model,framework,precision,device,system,nodes,devices_per_node,batch_per_device,strategy,ps_placement,measured,unit,source\nresnet50,x,fp32,v100-sxm2-16gb,dgx1-v100,1,1,32,fwd+bwd,none,110,ms,test\n' >"$TMP/m.csv"
refused "calibrate --device picks the rows" "no single-device rows for device a100-sxm4-40gb" \
  calibrate m.csv --device a100-sxm4-40gb --generations 5 --no-loo
refused "calibrate --device ''" "--device: empty value" calibrate m.csv --device ''
refused "calibrate takes no run keys" "--strategy" calibrate m.csv --strategy dp
refused "calibrate -o onto the measurements" "the measurements" calibrate m.csv -o m.csv

# describe gpt3-175b (h = 12288, s = 2048, b = 1, causal): a block's GEMMs 24 b s h^2 =
# 7421703487488 FLOPs and causal flash attention 2 b s^2 h = 103079215104: 7524782702592
# forward; backward 48 b s h^2 + 5 b s^2 h = 15101105012736. The kernel table's row is what
# FlashAttention runs: 16 tiles of 128 a side, 16 x 17 / 2 of the 256 computed, 17/16 of the
# masked half: 109521666048.
"$DTSIM" describe gpt3-175b --json >"$TMP/d.json" 2>&1
if grep -q '"name":"block0","type":"transformer","params":[0-9]*,"active_params":[0-9]*,"forward_flops":7524782702592,"backward_flops":15101105012736' "$TMP/d.json" &&
   "$DTSIM" describe gpt3-175b | grep -q "^  attention .* 109521666048 "; then
  ok "describe gpt3-175b: block row and kernel table both causal"
else
  bad "describe gpt3-175b: $(grep -o '"name":"block0"[^}]*' "$TMP/d.json")"
fi

# run --csv: LeNet-5's conv1 at batch 64 runs 64 x 239904 = 15353856 FLOPs forward and as many
# for its weight gradient (it has no data gradient); conv1/relu's data gradient 64 x 4704 =
# 301056 (one per element, as forward).
(cd "$TMP" && "$DTSIM" run --model lenet5 --iterations 1 --csv r.csv >/dev/null 2>&1)
if [ "$(grep ',conv1 dW,' "$TMP/r.csv" | cut -d, -f11)" = 15353856 ] &&
   [ "$(grep ',conv1/relu dX,' "$TMP/r.csv" | cut -d, -f11)" = 301056 ]; then
  ok "run --csv: conv1 dW 15353856 FLOPs, conv1/relu dX 301056"
else
  bad "run --csv: $(grep -E ',conv1 dW,|,conv1/relu dX,' "$TMP/r.csv")"
fi

# --- unknown models, help (issue 28) ---------------------------------------------------------
refused "unknown model lists transformers" "gpt3-175b" run --model nosuchnet
"$DTSIM" run --help >"$TMP/out" 2>&1
lacks=""
for o in --nodes --system --strategy --model --json; do
  grep -q -- "^  $o" "$TMP/out" || lacks="$lacks $o"
done
[ -z "$lacks" ] && ok "run --help shows --nodes, --system, --strategy, --model, --json" \
  || bad "run --help lacks$lacks"

# --- dtsim collective (issues 28 and 30) -------------------------------------------------------
refused "collective --bytes 0" "--bytes" collective --bytes 0
refused "collective --bytes 0 in a list" "--bytes" collective --bytes 1K,0
for o in launch-us=5 step-us=1 reduce-GBps=10 chunk=64K; do
  refused "collective --$o under nccl" "--${o%%=*}: changes nothing under nccl" \
    collective --bytes 1M --algorithm nccl --"$o"
done
runs "collective --launch-us with ring" "ring" collective --bytes 1M --algorithm ring --launch-us 5
# --csv: one row per size, the sizes given.
(cd "$TMP" && "$DTSIM" collective --bytes 1K,1M --algorithm ring --csv c.csv >/dev/null 2>&1)
if [ "$(sed -n 1p "$TMP/c.csv" | cut -d, -f3)" = bytes ] && [ "$(wc -l <"$TMP/c.csv")" -eq 3 ] &&
   [ "$(sed -n 2p "$TMP/c.csv" | cut -d, -f3)" = 1024 ] &&
   [ "$(sed -n 3p "$TMP/c.csv" | cut -d, -f3)" = 1048576 ]; then
  ok "collective --csv writes a row per size"
else
  bad "collective --csv: $(cat "$TMP/c.csv" 2>&1 | head -3)"
fi
(cd "$TMP" && "$DTSIM" collective --bytes 1M --algorithm ring --trace ct.json >/dev/null 2>&1)
grep -qF '"command":"collective --bytes 1M --algorithm ring --trace ct.json"' "$TMP/ct.json" \
  && ok "collective trace records the arguments" || bad "collective trace: $(grep -o '"command":"[^"]*"' "$TMP/ct.json")"

# --- options that would change nothing or something else (issues 28 and 30) ------------------
refused "--seq-len on a CNN" "--seq-len: applies to transformers" run --model lenet5 --seq-len 128
refused "pp --schedule interleaved" "--schedule: interleaved needs --strategy 3d" \
  run --model lenet5 --strategy pp --schedule interleaved
refused "hybrid --schedule interleaved" "--schedule: interleaved needs --strategy 3d" \
  run --model lenet5 --strategy hybrid --nodes 2 --schedule interleaved
TF="transformer:layers=4,hidden=256,heads=16,seq=128,vocab=1000"
refused "--sequence-parallel on --tp 1" "--sequence-parallel on: needs --tp 2" \
  run --model "$TF" --strategy 3d --tp 1 --sequence-parallel on
refused "--zero 3 --dp 1" "--zero 3: shards over the data-parallel group" \
  run --model "$TF" --strategy 3d --tp 8 --dp 1 --zero 3
refused "interleaved --pp 1" "--schedule interleaved: needs --pp 2" \
  run --model "$TF" --strategy 3d --schedule interleaved --interleave 2 --pp 1
refused "interleaved without --interleave" "give --interleave V" \
  run --model "$TF" --strategy 3d --schedule interleaved --pp 2
# Two dgx-a100 nodes: 8 A100 each behind NVSwitch, InfiniBand between (DGX A100 datasheet).
refused "--tp 16 across two dgx-a100" "--tp 16: a tensor-parallel group stays within the NVLink domain" \
  run --model "$TF" --strategy 3d --system dgx-a100 --nodes 2 --tp 16
runs "--tp 8 --pp 2 --interleave 2 on two dgx-a100" "iteration time" \
  run --model "$TF" --strategy 3d --system dgx-a100 --nodes 2 --tp 8 --pp 2 \
  --schedule interleaved --interleave 2 --sequence-parallel on --global-batch 4

# 3d JSON: the global batch given, no per-device --batch, no speedup that was never measured.
"$DTSIM" run --model "$TF" --strategy 3d --tp 2 --pp 2 --global-batch 48 --json >"$TMP/3d.json" 2>"$TMP/err"
if [ "$(json_num global_batch <"$TMP/3d.json")" = 48 ] && ! grep -q '"batch":' "$TMP/3d.json" &&
   ! grep -q '"speedup":' "$TMP/3d.json"; then
  ok "3d JSON: global_batch 48, no batch, no speedup"
else
  bad "3d JSON: $(cat "$TMP/3d.json" "$TMP/err" | head -c 400)"
fi

# --- calibration overlays (issues 28 and 30) ---------------------------------------------------
refused "--calibration /dev/null" "an empty calibration overlay" run --model lenet5 --calibration /dev/null
printf '[calibration]\ndevice = p100-sxm2-16gb\n[efficiency]\nconv = 0.5\n' >"$TMP/p100.ini"
refused "overlay of a P100 on a V100" "fitted on p100-sxm2-16gb, not on v100-sxm2-16gb" \
  run --model lenet5 --system dgx1-v100 --calibration p100.ini
runs "overlay of a P100 on a P100" "iteration time" \
  run --model lenet5 --device p100-sxm2-16gb --calibration p100.ini

# --- search and auto (issues 28 and 30) --------------------------------------------------------
# VGG-16's 3x3 convolutions run as Winograd on a V100 in fp32 (a quarter of the direct
# multiplies): counted as direct FLOPs the utilization came out at 147.6%.
"$DTSIM" search --model vgg16 --nodes 4 --global-batch 2048 --strategy dp --json >"$TMP/s.json" 2>"$TMP/err"
mfu=$(head -1 "$TMP/s.json" | json_num mfu)
awk -v u="$mfu" 'BEGIN { exit !(u > 0 && u < 1) }' && ok "search vgg16 mfu $mfu is below 1" \
  || bad "search vgg16: mfu '$mfu' $(cat "$TMP/err")"
grep -q '"allreduce":"auto"' "$TMP/s.json" && bad "search tries allreduce=auto beside nccl" \
  || ok "search tries nccl once (not again as auto)"
refused "search: --tp on a CNN" "--tp: applies to --strategy 3d" search --model resnet50 --tp 2
refused "search: --zero on a CNN" "--zero: applies to --strategy 3d" search --model resnet50 --zero 1
# 8193 dgx-a100 nodes hold 65544 GPUs, past the 65536 ranks where auto was the ring.
runs "auto on 65544 GPUs is nccl" " nccl:" collective --system dgx-a100 --nodes 8193 --bytes 25M \
  --net-model analytic --algorithm auto
# Beyond 262144 GPUs nccl's model would take minutes per size: auto is the ring, and says so.
"$DTSIM" run --model lenet5 --nodes 40000 --net-model analytic --json >"$TMP/out" 2>"$TMP/err"
grep -q "on 320000 devices auto is ring without comparing" "$TMP/err" && grep -q '"devices":320000' "$TMP/out" \
  && ok "auto beyond 262144 GPUs says so" || bad "auto at 320000: $(cat "$TMP/err")"

# --- docs/devices.md names every catalog device (issue 28: it lacked the H200 and B200) -------
DOC=${DTSIM_DATA_DIR:-.}/docs/devices.md
missing=""
for d in $("$DTSIM" list devices --json | sed -n 's/^{"kind":"device","name":"\([^"]*\)".*/\1/p'); do
  grep -qF "\`$d\`" "$DOC" || missing="$missing $d"
done
[ -z "$missing" ] && ok "docs/devices.md names every catalog device" || bad "docs/devices.md lacks$missing"

# --- the host's memory is the same on every call (issue 28) ------------------------------------
a=$("$DTSIM" list devices --json | grep '"name":"host"')
b=$("$DTSIM" list devices --json | grep '"name":"host"')
[ -n "$a" ] && [ "$a" = "$b" ] && ok "list devices: the host line is the same twice" || bad "host: '$a' then '$b'"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
