#!/bin/sh
# Command-line tests of the strategy interface (sim/strategies/strategy.h): keys refused by the flags a
# strategy lacks, the transformer form, the checks `run` and `search` share, and titles built
# from what was simulated. Usage: strategy_tests.sh PATH/TO/dtsim
DTSIM=${1:?usage: strategy_tests.sh DTSIM}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
. "$(dirname "$0")/lib.sh"

# expect_error NAME WORDS ARGS... : status 2, one line on stderr holding WORDS, nothing on stdout
expect_error() {
  name=$1; words=$2; shift 2
  "$DTSIM" "$@" >"$TMP/out" 2>"$TMP/err"
  got=$?
  lines=$(wc -l <"$TMP/err")
  if [ "$got" -eq 2 ] && [ "$lines" -eq 1 ] && [ ! -s "$TMP/out" ] &&
     grep -q -- "$words" "$TMP/err"; then
    ok "$name ($(cat "$TMP/err"))"
  else
    bad "$name: status $got, $lines stderr lines ($(cat "$TMP/err")), want '$words'"
  fi
}

# Keys name the flag a strategy needs; the message lists the registry's strategies that have it.
expect_error "micro-batches need a micro-batched strategy" \
  "--micro-batches: applies to --strategy pp,hybrid, not mp" \
  run --model lenet5 --strategy mp --micro-batches 2
expect_error "servers need the ps strategy" "--ps-count: applies to --strategy ps, not dp" \
  run --model lenet5 --ps-count 2
expect_error "--symmetry needs a foldable strategy" "--symmetry: applies to --strategy dp,3d, not pp" \
  run --model lenet5 --strategy pp --symmetry off
"$DTSIM" run --help-all >"$TMP/out" 2>&1
grep -q "Options of --strategy pp|hybrid:" "$TMP/out" &&
  ok "help names the strategies of a key group" || bad "help: no 'Options of --strategy pp|hybrid:'"
# hybrid's keys apply whatever its kind; only its flags for the cost table change.
"$DTSIM" run --model lenet5 --strategy hybrid --hybrid owt --nodes 1 --devices-per-node 2 \
  --micro-batches 2 >/dev/null 2>"$TMP/err" && ok "hybrid owt takes --micro-batches" ||
  bad "hybrid owt --micro-batches: $(cat "$TMP/err")"

# A transformer trains with the transformer strategy or its one-rank form (dp), nothing else.
expect_error "pp does not train transformers" "trains transformers with --strategy 3d (or dp" \
  run --model gpt3-1.7b --strategy pp --system dgx-a100
# dp of a transformer is 3d with tp = pp = 1: the same iteration time (8 GPUs x 8 sequences).
a=$("$DTSIM" run --model gpt3-1.7b --system dgx-a100 --batch 8 --json |
    sed 's/.*"iteration_time_s":\([0-9.e+-]*\).*/\1/')
b=$("$DTSIM" run --model gpt3-1.7b --system dgx-a100 --global-batch 64 --strategy 3d --tp 1 \
    --pp 1 --json | sed 's/.*"iteration_time_s":\([0-9.e+-]*\).*/\1/')
[ -n "$a" ] && [ "$a" = "$b" ] && ok "dp of a transformer is 3d tp 1 pp 1 ($a s)" ||
  bad "dp form $a s, 3d tp 1 pp 1 $b s"

# The 3-D checks run before anything is built, in run as in search. 8 GPUs of one DGX A100:
# tp 8 x pp 8 = 64 does not divide 8; llama3-8b has 32 heads, 8 key/value heads.
expect_error "3d: tp x pp must divide the devices" "--tp 8 x --pp 8 does not divide the 8" \
  run --model llama3-8b --system dgx-a100 --strategy 3d --tp 8 --pp 8 --global-batch 64
expect_error "3d: tp must divide the key/value heads" "--tp 16 does not divide the 32 attention heads (8" \
  run --model llama3-8b --system dgx-a100 --nodes 2 --strategy 3d --tp 16 --global-batch 64
# An interleaved schedule needs a pipeline: with --pp 1 there are no stages to interleave.
expect_error "3d: interleaved needs pp > 1" "--schedule interleaved: needs --pp 2 or more" \
  run --model llama3-8b --system dgx-a100 --strategy 3d --schedule interleaved --interleave 2 \
  --pp 1 --global-batch 64
# 64 sequences over dp 8 with micro-batches of 3: 8 per replica, not a multiple of 3.
expect_error "3d: micro-batch divides a replica's batch" "--micro-batch 3" \
  run --model llama3-8b --system dgx-a100 --strategy 3d --global-batch 64 --micro-batch 3
# search counts the same rule among its refusals (tp 8 x pp of 2 or more never divides 8 GPUs
# on one node): the reason is the strategy check's.
"$DTSIM" search --model gpt3-1.7b --system dgx-a100 --global-batch 64 --top 1 >"$TMP/out" 2>&1 &&
  grep -q "tp x pp does not divide the devices" "$TMP/out" &&
  ok "search tallies the 3-D check's reasons" || bad "search: $(head -c 400 "$TMP/out")"

# Titles come from what was simulated: the preset's device (stampede2-knl: xeon-phi-7250).
"$DTSIM" run --model lenet5 --strategy chaos --system stampede2-knl --threads 4 >"$TMP/out" 2>&1
head -n 1 "$TMP/out" | grep -q "4 threads of xeon-phi-7250" &&
  ok "chaos title names the preset's device" || bad "chaos title: $(head -n 1 "$TMP/out")"

# A CPU-era framework on a CNN (--framework intel-caffe, [cpu] efficiency 0.44): every pass takes
# 1/0.44 of the device model's time, the 1 ms per-step host overhead stays. AlexNet at batch 256
# on one Xeon Phi 7250 node: (t_caffe - 0.001) * 0.44 = t_model - 0.001.
knl="run --model alexnet --batch 256 --system stampede2-knl --strategy dp --synthetic --json"
t0=$("$DTSIM" $knl | json_num iteration_time_s)
t1=$("$DTSIM" $knl --framework intel-caffe | json_num iteration_time_s)
x=$(awk -v a="$t1" 'BEGIN { print (a - 0.001) * 0.44 + 0.001 }')
[ -n "$t0" ] && near "$x" "$t0" 1e-6 && ok "intel-caffe: passes at 0.44 of the model ($t0 s -> $t1 s)" ||
  bad "intel-caffe: $t0 s, $t1 s"
expect_error "--framework on a GPU CNN is refused" "not the GPU p100-sxm2-16gb" run --model alexnet --system dgx1-p100 \
  --framework intel-caffe
expect_error "--framework with chaos is refused" "does not apply to --strategy chaos" run \
  --model lenet5 --system stampede2-knl --strategy chaos --threads 4 --framework intel-caffe
expect_error "a CNN framework on a transformer is refused" "a CNN framework on CPUs" run \
  --model llama3-8b --system dgx-a100 --strategy 3d --global-batch 16 --framework intel-caffe
expect_error "a transformer framework on a CNN is refused" "megatron states no .cpu. efficiency" run --model alexnet \
  --system stampede2-knl --framework megatron

# The P100 DGX-1 without NVLink forwarding (the libraries of 2016-2017): the plain ring of the 8
# GPUs in order crosses the socket link at 3 -> 4 and 7 -> 0 (6 GB/s each way), so its bus
# bandwidth is that link's; the ring 0-1-2-3 of 4 GPUs stays on single NVLink 1.0 links
# (20 GB/s x 0.92 = 18.4 GB/s).
b8=$("$DTSIM" collective --op allreduce --bytes 1G --system dgx1-p100 --algorithm ring --json |
  json_num busbw_Bps)
b4=$("$DTSIM" collective --op allreduce --bytes 1G --system dgx1-p100 --devices-per-node 4 \
  --algorithm ring --json | json_num busbw_Bps)
[ -n "$b8" ] && near "$b8" 6e9 0.02 && near "$b4" 18.4e9 0.08 &&
  ok "dgx1-p100 ring: 8 GPUs at the socket link ($b8 B/s), 4 on NVLink ($b4 B/s)" ||
  bad "dgx1-p100 ring: 8 GPUs $b8, 4 GPUs $b4 B/s"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
