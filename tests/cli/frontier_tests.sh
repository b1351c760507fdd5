#!/bin/sh
# Command-line checks of the frontier jobs (issue 26): mixture-of-experts models by describe
# against counts worked out by hand, uneven pipelines (spread, --split, --pp-layout) and their
# refusals, and the multi-node NVLink domain of gb200-nvl72.
# Usage: frontier_tests.sh PATH/TO/dtsim. Each check prints one line; the last counts them.
DTSIM=${1:?usage: frontier_tests.sh DTSIM}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

. "$(dirname "$0")/lib.sh"

# json_num KEY < json : the value of a numeric key of a one-line JSON object (first match)
json_num() { sed -n "s/.*\"$1\":\([-0-9.eE+]*\).*/\1/p" | head -1; }

# refused NAME PATTERN ARGS... : exit status 2, one line on stderr containing PATTERN (a fixed
# string), nothing on stdout
refused() {
  name=$1; want=$2; shift 2
  "$DTSIM" "$@" >"$TMP/out" 2>"$TMP/err"
  got=$?
  lines=$(wc -l <"$TMP/err")
  if [ "$got" -eq 2 ] && [ "$lines" -eq 1 ] && [ ! -s "$TMP/out" ] && grep -qF -- "$want" "$TMP/err"; then
    ok "$name ($(cat "$TMP/err"))"
  else
    bad "$name: status $got, stderr '$(cat "$TMP/err")', stdout $(wc -c <"$TMP/out") bytes"
  fi
}

# --- Mixtral 8x7B by hand (config.json): per block attention 2 h^2 + 2 h (8 x 128), eight
# experts of 3 h 14336, router h x 8, two rmsnorms of h; embedding and untied head V h; final
# norm h. Active: two of the eight experts. ------------------------------------------------------
h=4096
attn=$((2 * h * h + 2 * h * 1024)); expert=$((3 * h * 14336)); rest=$((8 * h + 2 * h))
total=$((32 * (attn + 8 * expert + rest) + 2 * 32000 * h + h))
active=$((32 * (attn + 2 * expert + rest) + 2 * 32000 * h + h))
"$DTSIM" describe mixtral-8x7b --json >"$TMP/m.json" 2>"$TMP/err"
got=$(json_num total_params <"$TMP/m.json"); got_a=$(json_num active_params <"$TMP/m.json")
[ "$got" = "$total" ] && [ "$got_a" = "$active" ] &&
  ok "describe mixtral-8x7b: $got parameters (46.70 B), $got_a active (12.9 B)" ||
  bad "describe mixtral-8x7b: '$got' / '$got_a', by hand $total / $active; $(cat "$TMP/err")"
"$DTSIM" describe mixtral-8x7b >"$TMP/m.txt" 2>&1
grep -q "46.70 B), 12879925248 active per token" "$TMP/m.txt" && grep -q "per token: forward" "$TMP/m.txt" &&
  ok "describe mixtral-8x7b: the table shows total and active parameters and FLOPs per token" ||
  bad "describe table: $(grep total "$TMP/m.txt")"

# --- Uneven pipelines --------------------------------------------------------------------------
# Llama 3 405B's 126 blocks on 8 stages were refused; they are spread (15, 16 x 6, 15).
"$DTSIM" run --strategy 3d --model llama3-405b --system dgx-h100 --nodes 16 --tp 8 --pp 8 \
  --global-batch 16 --json >"$TMP/out" 2>"$TMP/err" &&
  ok "126 blocks on 8 stages run" || bad "126 blocks on 8 stages: $(cat "$TMP/err")"
# Stage 0's forward time follows its blocks: 10 blocks on 2 stages are 5 + 5 by default and
# 2 + 8 with --split 2, so stage 0 runs 2/5 of the blocks (its embedding gather is under 1%).
spec=transformer:family=llama,layers=10,hidden=2048,heads=16,seq=2048,vocab=1000
base="run --strategy 3d --model $spec --system dgx-h100 --nodes 1 --tp 1 --pp 2 --global-batch 8 --json"
f5=$("$DTSIM" $base | json_num forward_time_s)
f2=$("$DTSIM" $base --split 2 | json_num forward_time_s)
fl=$("$DTSIM" $base --pp-layout 'Ett|t*8L' | json_num forward_time_s)
awk -v a="$f2" -v b="$f5" 'BEGIN { r = a / b; exit !(r > 0.39 && r < 0.42) }' && [ "$fl" = "$f2" ] &&
  ok "--split 2 and --pp-layout 'Ett|t*8L': stage 0 forward $f2 s, 2/5 of the default $f5 s" ||
  bad "stage 0 forward: split $f2, layout $fl, default $f5"
refused "--split of the wrong length" "--split" $base --split 2,4
refused "--split not increasing" "--split" run --strategy 3d --model $spec --system dgx-h100 \
  --nodes 1 --pp 4 --global-batch 8 --split 5,3,8
refused "--pp-layout with too few blocks" "--pp-layout" $base --pp-layout 'Et|tL'
refused "--pp-layout: embedding on the last stage" "--pp-layout" $base --pp-layout 't*5|Et*5L'
refused "--pp-layout: bad letter" "--pp-layout" $base --pp-layout 'Et*5|x*5L'
refused "--split and --pp-layout" "--pp-layout" $base --split 5 --pp-layout 'Et*5|t*5L'
refused "more stages than blocks" "--pp" run --strategy 3d --model $spec --system dgx-h100 \
  --nodes 2 --pp 16 --global-batch 16
refused "--pp-layout for another strategy" "--pp-layout" run --strategy dp --model $spec --pp-layout 'Et'
# Multi-token prediction (mtp=1): one module adds its block (attention 4 h^2, swiglu MLP 12 h^2,
# two norms 2h), its projection 2 h^2 and three norms 3h: 18 h^2 + 5 h = 75507712 at h 2048. It
# goes with the loss on the last stage, where a layout's m must put it (after the last block).
"$DTSIM" describe $spec --json >"$TMP/d0.json" 2>"$TMP/err"
"$DTSIM" describe $spec,mtp=1 --json >"$TMP/d1.json" 2>>"$TMP/err"
p0=$(json_num total_params <"$TMP/d0.json"); p1=$(json_num total_params <"$TMP/d1.json")
[ -n "$p0" ] && [ $((p1 - p0)) -eq $((18 * 2048 * 2048 + 5 * 2048)) ] &&
  ok "describe mtp=1: $((p1 - p0)) more parameters, 18 h^2 + 5 h by hand" ||
  bad "describe mtp=1: '$p0' -> '$p1'; $(cat "$TMP/err")"
mbase="run --strategy 3d --model $spec,mtp=1 --system dgx-h100 --nodes 1 --tp 1 --pp 2 --global-batch 8 --json"
i0=$("$DTSIM" $base | json_num iteration_time_s)
i1=$("$DTSIM" $mbase | json_num iteration_time_s)
il=$("$DTSIM" $mbase --pp-layout 'Et*5|t*5mL' | json_num iteration_time_s)
awk -v a="$i1" -v b="$i0" 'BEGIN { exit !(a > b) }' && [ "$il" = "$i1" ] &&
  ok "mtp=1: iteration $i0 -> $i1 s, the same with its m on the last stage" ||
  bad "mtp=1: $i0 -> $i1 s, with the layout $il s"
# Its stage holds its parameters and a copy of the embedding: with 'Et|t*9mL' the last stage
# (the larger) holds 9 blocks (16 h^2 + 2h each), the module, the embedding copy and head
# (V h each) and the final norm h, 4-byte weights: 4 x 683622400 bytes.
w=$("$DTSIM" $mbase --pp-layout 'Et|t*9mL' | json_num weights)
[ "$w" = $((4 * (9 * (16 * 2048 * 2048 + 2 * 2048) + 18 * 2048 * 2048 + 5 * 2048 + 2 * 1000 * 2048 + 2048))) ] &&
  ok "mtp=1 on the last stage: $w weight bytes, by hand" || bad "mtp=1 weights: '$w'"
refused "--pp-layout: m without mtp" "--pp-layout" $base --pp-layout 'Et*5|t*5mL'
refused "--pp-layout: two m for mtp=1" "--pp-layout" $mbase --pp-layout 'Et*5|t*5mmL'
refused "--pp-layout: m before the last block" "--pp-layout" $mbase --pp-layout 'Et*5m|t*5L'
refused "mtp above layers" "mtp" describe "transformer:layers=2,hidden=64,heads=4,seq=8,vocab=10,mtp=3"
# The embedding on the first stage and the LM head on the last are tasks of the schedule.
"$DTSIM" $base --trace "$TMP/t.json" >/dev/null 2>"$TMP/err"
grep -q '"F mb0 c0 embedding"' "$TMP/t.json" && grep -q '"B mb0 c0 lm_head"' "$TMP/t.json" &&
  ok "the trace shows the embedding and LM head passes" || bad "trace: no embedding or LM head task; $(cat "$TMP/err")"
# Spec keys are refused naming the key.
refused "topk above experts" "topk" describe "transformer:layers=2,hidden=64,heads=4,seq=8,vocab=10,experts=4,topk=8"
refused "unknown family" "family" describe "transformer:layers=2,hidden=64,heads=4,seq=8,vocab=10,family=t5"

# --- Reserved memory: a data-parallel job on one node belongs to one NCCL communicator: the
# CUDA context (512 MiB) and 32 channels of NCCL buffers of 4 MiB (Simple) + 120 x 640 x 8 x 8
# (LL128) + 8 x 512 x 8 x 16 (LL) bytes, plus 5% of the activations and other transient bytes;
# the breakdown sums to the memory per device. -------------------------------------------------
"$DTSIM" run --strategy 3d --model gpt3-1.7b --system dgx-a100 --nodes 1 --global-batch 16 \
  --precision bf16 --json >"$TMP/r.json" 2>"$TMP/err"
fr=$(json_num framework_reserved <"$TMP/r.json"); act=$(json_num activations <"$TMP/r.json")
other=$(json_num other <"$TMP/r.json"); total=$(json_num memory_per_device_bytes <"$TMP/r.json")
sum=$(( $(json_num weights <"$TMP/r.json") + $(json_num gradients <"$TMP/r.json") + $(json_num optimizer <"$TMP/r.json") + act + other + fr ))
want=$((536870912 + 32 * (4194304 + 4915200 + 524288) + (act + other) / 100 * 5))
[ "$fr" = "$want" ] && [ "$sum" = "$total" ] &&
  ok "framework_reserved $fr bytes as worked out by hand; the breakdown sums to $total" ||
  bad "framework_reserved '$fr', by hand $want; breakdown sum $sum, memory per device $total"
# The plan search ranked first at 79.86 of 80 GiB (GPT-3 175B, 1024 A100) does not fit with it.
refused "--strict: the 79.86 GiB plan" "--strict" run --strategy 3d --model gpt3-175b \
  --system dgx-a100 --nodes 128 --tp 2 --pp 8 --micro-batch 1 --schedule interleaved \
  --interleave 6 --zero 2 --global-batch 1536 --precision bf16 --strict

# --- Steady state and bucketed overlap: GPT 1.7B on two DGX A100 (DP 16, one micro-batch of 4
# per replica). Without overlap the whole reduction follows the backward; with it, buckets of
# max(40M, 16M) parameters close as the backward goes and only the last one's reduction is left
# exposed, and smaller buckets (--bucket-mib 10) leave less; two iterations are simulated by
# default and the last is reported. ------------------------------------------------------------
g17="run --strategy 3d --model gpt3-1.7b --system dgx-a100 --nodes 2 --global-batch 64 --precision fp16 --json"
"$DTSIM" $g17 --overlap on >"$TMP/on.json"; "$DTSIM" $g17 --overlap off >"$TMP/off.json"
"$DTSIM" $g17 --bucket-mib 10 >"$TMP/b10.json"; "$DTSIM" $g17 --iterations 1 >"$TMP/i1.json"
x_on=$(json_num exposed_comm_time_s <"$TMP/on.json"); x_off=$(json_num exposed_comm_time_s <"$TMP/off.json")
x_b10=$(json_num exposed_comm_time_s <"$TMP/b10.json")
awk -v a="$x_on" -v b="$x_off" -v c="$x_b10" 'BEGIN { exit !(a < 0.1 * b && c < a) }' &&
  ok "3d overlap: exposed communication $x_on s with buckets, $x_off s without, $x_b10 s with 10 MiB buckets" ||
  bad "3d overlap: exposed $x_on (on), $x_off (off), $x_b10 (10 MiB)"
e2=$(json_num events <"$TMP/on.json"); e1=$(json_num events <"$TMP/i1.json")
[ "$e2" -gt "$e1" ] && ok "two iterations by default ($e2 events, $e1 with --iterations 1)" ||
  bad "default iterations: $e2 events, $e1 with --iterations 1"
"$DTSIM" run --help-all | grep -q "the last one is reported" && ok "--help says how the iteration is measured" ||
  bad "--help: --iterations does not say what is reported"

# --- Expert parallelism: Mixtral 8x7B on 8 DGX H100 (PP 4, DP 16). With EP 8 each device holds
# one whole expert per block instead of all eight: the weights of a stage's 8 blocks drop from
# (8 x 8 experts x 3 h 14336 + the rest) x 2 bytes to a eighth of the experts' share. -----------
mx="run --strategy 3d --model mixtral-8x7b --system dgx-h100 --nodes 8 --pp 4 --global-batch 256 --precision bf16 --zero 1 --json"
w1=$("$DTSIM" $mx | json_num weights); w8=$("$DTSIM" $mx --ep 8 | json_num weights)
experts=$((8 * 8 * 3 * 4096 * 14336 * 2))
d1=$((w1 - w8)); want=$((experts - experts / 8))
[ "$d1" = "$want" ] && ok "--ep 8: weights $w1 -> $w8 bytes, 7/8 of the stage's expert bytes gone" ||
  bad "--ep 8: weights $w1 -> $w8 (difference $d1, by hand $want)"
refused "--ep without experts" "no experts" run --strategy 3d --model llama3-8b --system dgx-h100 --ep 2 --global-batch 8
refused "--ep not dividing the experts" "--ep 3" run --strategy 3d --model mixtral-8x7b --system dgx-h100 --ep 3 --global-batch 8
refused "--ep with tp needs sequence parallelism" "--sequence-parallel" run --strategy 3d \
  --model mixtral-8x7b --system dgx-h100 --tp 2 --ep 4 --global-batch 8

# --- One NVLink domain of 18 GB200 trays: 72 GPUs allreduce over NVLink, two racks over IB. ---
bw18=$("$DTSIM" collective --system gb200-nvl72 --nodes 18 --op allreduce --bytes 1G --algorithm ring --json | json_num busbw_Bps)
bw36=$("$DTSIM" collective --system gb200-nvl72 --nodes 36 --op allreduce --bytes 1G --algorithm ring --json | json_num busbw_Bps)
awk -v a="$bw18" -v b="$bw36" 'BEGIN { exit !(a > 5e11 && b < 1e11) }' &&
  ok "gb200-nvl72 allreduce busbw: 18 trays $bw18 B/s (NVLink), 36 trays $bw36 B/s (IB)" ||
  bad "gb200-nvl72 busbw: 18 trays $bw18, 36 trays $bw36"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
