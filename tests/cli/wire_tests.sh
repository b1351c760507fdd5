#!/bin/sh
# Command-line tests of "every rank on the wire": the whole training run (--train-tokens,
# --train-samples, --gpu-hour-cost, --mtbf-hours, checkpoints and restarts), topologies,
# stragglers and failed links. Usage: wire_tests.sh PATH/TO/dtsim
# Each check prints one line; the last line counts passes and failures.
DTSIM=${1:?usage: wire_tests.sh DTSIM}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

. "$(dirname "$0")/lib.sh"

# calc EXPR : the value of an awk expression
calc() { awk "BEGIN { printf \"%.17g\", $1 }"; }


# check NAME GOT WANT RELTOL
check() {
  if [ -n "$2" ] && near "$2" "$3" "$4"; then ok "$1 ($2, want $3)"; else bad "$1: got '$2', want $3"; fi
}

# --- the whole training run ----------------------------------------------------------------------
# demo on one dgx1-v100: 8 devices x 64 samples = 512 samples per iteration; 1e6 samples is
# ceil(1953.125) = 1954 iterations. Checkpoints every 60 min of 60 s, no failures: the wall
# time is the work x 61/60 and the goodput 60/61 = 0.98360656.
out=$("$DTSIM" run --model demo --train-samples 1000000 --checkpoint-interval-min 60 \
      --checkpoint-write-s 60 --json 2>"$TMP/err")
it=$(printf '%s' "$out" | json_num iteration_time_s)
check "train_iterations = ceil(1e6 / 512)" "$(printf '%s' "$out" | json_num train_iterations)" 1954 0
check "train_time_s = 1954 x iteration x 61/60" "$(printf '%s' "$out" | json_num train_time_s)" \
  "$(calc "1954 * $it * 61 / 60")" 1e-9
check "goodput with checkpoints only = 60/61" "$(printf '%s' "$out" | json_num goodput)" 0.98360656 1e-7
check "no failures without an MTBF" "$(printf '%s' "$out" | json_num expected_failures)" 0 0

# Failures: 8 devices of 80 h fail as a job every 10 h = 36000 s; with checkpoints of 60 s
# every 59 min (3540 s; t + d = 3600 s = M/10) and no restart cost, Daly's wall time is
# 36000 (e^0.1 - 1) Ts / 3540 = 1.0695 Ts (e^0.1 - 1 = 0.10517092): goodput 0.93498597;
# failures = wall / 36000; at 3 USD per device-hour the cost is 8 x wall / 3600 x 3.
out=$("$DTSIM" run --model demo --train-samples 1000000 --mtbf-hours 80 \
      --checkpoint-interval-min 59 --checkpoint-write-s 60 --gpu-hour-cost 3 --json 2>"$TMP/err")
it=$(printf '%s' "$out" | json_num iteration_time_s)
wall=$(printf '%s' "$out" | json_num train_time_s)
check "Daly wall time" "$wall" "$(calc "1954 * $it * 36000 * 0.10517091807564763 / 3540")" 1e-9
check "goodput with failures" "$(printf '%s' "$out" | json_num goodput)" 0.9349859746 1e-9
check "expected failures = wall / job MTBF" "$(printf '%s' "$out" | json_num expected_failures)" \
  "$(calc "$wall / 36000")" 1e-9
check "train_cost_usd = 8 x hours x 3" "$(printf '%s' "$out" | json_num train_cost_usd)" \
  "$(calc "8 * $wall / 3600 * 3")" 1e-9
# No interval: Daly's optimum for d = 60 s, M = 36000 s is 2038.6534 s (tests/sim/test_trainrun.c).
out=$("$DTSIM" run --model demo --train-samples 1000000 --mtbf-hours 80 --checkpoint-write-s 60 --json)
check "Daly's optimum interval" "$(printf '%s' "$out" | json_num checkpoint_interval_s)" 2038.653419 1e-8
"$DTSIM" run --model demo --train-samples 1000000 --mtbf-hours 80 --checkpoint-write-s 60 \
  --gpu-hour-cost 3 >"$TMP/out" 2>&1 && grep -q "training run" "$TMP/out" &&
  grep -q "training cost" "$TMP/out" && grep -q "goodput" "$TMP/out" &&
  ok "the table shows the run" || bad "table: $(cat "$TMP/out")"

# Tokens of a transformer: 16 sequences of 2048 tokens = 32768 per iteration; 1e6 tokens is
# ceil(30.52) = 31 iterations.
out=$("$DTSIM" run --strategy 3d --model llama3-8b --system dgx-a100 --nodes 2 --tp 2 --pp 2 \
      --global-batch 16 --seq-len 2048 --precision bf16 --train-tokens 1000000 --json 2>"$TMP/err")
it=$(printf '%s' "$out" | json_num iteration_time_s)
check "tokens: ceil(1e6 / 32768) iterations" "$(printf '%s' "$out" | json_num train_iterations)" 31 0
check "tokens: wall = 31 iterations" "$(printf '%s' "$out" | json_num train_time_s)" \
  "$(calc "31 * $it")" 1e-9

# The same keys from a scenario file.
printf '[scenario]\nmodel = demo\ntrain-samples = 1000000\ngpu-hour-cost = 2\n' >"$TMP/run.ini"
"$DTSIM" run "$TMP/run.ini" --json | grep -q '"train_cost_usd"' && ok "scenario file keys" ||
  bad "scenario file keys"
printf '[scenario]\nmodel = demo\ntrain-samples = 1000000\nmtbf-hours = 0\n' >"$TMP/bad.ini"
expect_error "zero MTBF in a file" 2 run "$TMP/bad.ini"
grep -q "bad.ini:4" "$TMP/err" && ok "the file's line is named" || bad "no line: $(cat "$TMP/err")"

expect_error "both targets" 2 run --model demo --train-samples 10 --train-tokens 10
expect_error "price without a run" 2 run --model demo --gpu-hour-cost 2
expect_error "MTBF without a run" 2 run --model demo --mtbf-hours 100
expect_error "restart without a run" 2 run --model demo --restart-s 100
expect_error "zero MTBF" 2 run --model demo --train-samples 10 --mtbf-hours 0
expect_error "zero interval" 2 run --model demo --train-samples 10 --checkpoint-interval-min 0
expect_error "negative samples" 2 run --model demo --train-samples -5
expect_error "negative price" 2 run --model demo --train-samples 5 --gpu-hour-cost -1
expect_error "tokens of a CNN" 2 run --model demo --train-tokens 1000000
expect_error "a run that never ends" 2 run --model demo --nodes 1000 --train-samples 1000 \
  --mtbf-hours 0.001 --checkpoint-write-s 3600

# Sweeps: each point its own run; the cost is devices x hours x price on every line.
"$DTSIM" sweep --model demo --nodes 1,2,4 --train-samples 1000000 --gpu-hour-cost 2 --json >"$TMP/sweep" 2>"$TMP/err"
n=0; good=0
while read -r line; do
  n=$((n + 1))
  d=$(printf '%s' "$line" | json_num devices); w=$(printf '%s' "$line" | json_num train_time_s)
  c=$(printf '%s' "$line" | json_num train_cost_usd)
  near "$c" "$(calc "$d * $w / 3600 * 2")" 1e-9 && good=$((good + 1))
done <"$TMP/sweep"
[ "$n" -eq 3 ] && [ "$good" -eq 3 ] && ok "sweep: cost on every point" || bad "sweep: $n lines, $good good"

# Search: --rank-by cost orders the rows by train_cost_usd, cheapest first.
"$DTSIM" search --model demo --nodes 2 --global-batch 256 --train-samples 10000000 \
  --gpu-hour-cost 3 --rank-by cost --top 4 --json >"$TMP/search" 2>"$TMP/err"
json_num train_cost_usd <"$TMP/search" >"$TMP/costs"
[ "$(wc -l <"$TMP/costs")" -eq 4 ] && sort -g -c "$TMP/costs" && ok "search --rank-by cost: cheapest first" ||
  bad "search --rank-by cost: $(cat "$TMP/costs" "$TMP/err")"
"$DTSIM" search --model demo --nodes 2 --global-batch 256 --train-samples 10000000 \
  --rank-by time --top 4 --json >"$TMP/search" 2>"$TMP/err"
json_num train_time_s <"$TMP/search" >"$TMP/times"
[ "$(wc -l <"$TMP/times")" -eq 4 ] && sort -g -c "$TMP/times" && ok "search --rank-by time: shortest first" ||
  bad "search --rank-by time: $(cat "$TMP/times" "$TMP/err")"
expect_error "rank by time without a run" 2 search --model demo --rank-by time
expect_error "rank by cost without a price" 2 search --model demo --rank-by cost --train-samples 100
"$DTSIM" search --help-all | grep -q -- "--rank-by=throughput|time|cost" && ok "search --help: --rank-by" ||
  bad "search --help: --rank-by"

# --- topologies -----------------------------------------------------------------------------------
"$DTSIM" collective --op allreduce --bytes 64M --system nd-h100-v5 --nodes 4 --topology rail:3 \
  --json >"$TMP/out" 2>"$TMP/err" && grep -q '"topology":"rail:3"' "$TMP/out" &&
  ok "collective on rail:3" || bad "collective on rail:3: $(cat "$TMP/err")"
expect_error "rail oversubscription below 1" 2 collective --op allreduce --bytes 1M --topology rail:0.5
"$DTSIM" run --help-all | grep -q "rail\[:OVERSUB\]" && ok "--help names rail" || bad "--help names rail"

# --- stragglers ----------------------------------------------------------------------------------
# demo, data parallel on one DGX-1: every device computes for C s and the last gradient bucket's
# allreduce is exposed for E s after backward. A device 1.5 times slower makes everyone wait:
# the iteration is 1.5 C + E (the allreduce starts when the straggler's last gradient is
# ready and takes as long as before).
out=$("$DTSIM" run --model demo --json)
C=$(printf '%s' "$out" | json_num compute_time_s); E=$(printf '%s' "$out" | json_num exposed_comm_time_s)
out=$("$DTSIM" run --model demo --straggler 3:1.5 --json 2>"$TMP/err")
check "straggler: 1.5 C + E" "$(printf '%s' "$out" | json_num iteration_time_s)" "$(calc "1.5 * $C + $E")" 1e-8
printf '%s' "$out" | grep -q '"symmetry":"unfolded: --straggler breaks the symmetry of the 8' &&
  ok "straggler: the run says it unfolded" || bad "no unfolded note: $out"
out2=$("$DTSIM" run --model demo --straggler node0/dev3:1.5 --symmetry off --json)
[ "$(printf '%s' "$out" | json_num iteration_time_s)" = "$(printf '%s' "$out2" | json_num iteration_time_s)" ] &&
  ok "straggler by name, unfolded by hand: the same" || bad "straggler by name: $out2"
printf '%s' "$out2" | grep -q '"symmetry"' && bad "note without folding" || ok "no note when nothing was folded"
# Two stragglers: the slowest sets the pace, 2 C + E.
out=$("$DTSIM" run --model demo --straggler 3:1.5 --straggler 5:2 --json)
check "two stragglers: 2 C + E" "$(printf '%s' "$out" | json_num iteration_time_s)" "$(calc "2 * $C + $E")" 1e-8
"$DTSIM" run --model demo --straggler 3:1.5 >"$TMP/out" && grep -q "^  symmetry  *unfolded" "$TMP/out" &&
  ok "the table says it unfolded" || bad "table: $(cat "$TMP/out")"
expect_error "straggler beyond the cluster" 2 run --model demo --straggler 8:2
expect_error "straggler node beyond the cluster" 2 run --model demo --straggler node1/dev0:2
expect_error "straggler faster" 2 run --model demo --straggler 3:0.5
expect_error "straggler without a factor" 2 run --model demo --straggler 3
expect_error "straggler not a device" 2 run --model demo --straggler gpu3:2
expect_error "straggler of chaos" 2 run --model demo --strategy chaos --device xeon-phi-7250 --straggler 0:2
# 3-D: 16 devices as tp 2 x pp 2 x dp 4; rank = stage x 8 + replica x 2 + tensor rank, so 4 is
# stage 0 of replica 2 and 13 stage 1 of replica 2: one replica, folded; 0 and 13 are not.
T3="--strategy 3d --model llama3-8b --system dgx-a100 --nodes 2 --tp 2 --pp 2 --global-batch 16 --seq-len 2048 --precision bf16"
base=$("$DTSIM" run $T3 --json | json_num iteration_time_s)
out=$("$DTSIM" run $T3 --straggler 4:1.2 --straggler 13:1.1 --json 2>"$TMP/err")
slow=$(printf '%s' "$out" | json_num iteration_time_s)
printf '%s' "$out" | grep -q '"symmetry":"folded: the stragglers are in data-parallel replica 2' &&
  awk -v a="$slow" -v b="$base" 'BEGIN { exit !(a > b) }' && ok "3d: one replica's stragglers, folded ($base -> $slow s)" ||
  bad "3d stragglers: $out $(cat "$TMP/err")"
expect_error "3d: stragglers of two replicas" 2 run $T3 --straggler 0:1.2 --straggler 13:1.2

# --- failed links -------------------------------------------------------------------------------
# One DGX-1 (hybrid cube mesh): GPU 0 - GPU 1 is one NVLink; with it down the ring's routes
# change and the allreduce cannot be faster.
up=$("$DTSIM" run --model demo --json | json_num iteration_time_s)
down=$("$DTSIM" run --model demo --link-down node0/dev0-node0/dev1 --json 2>"$TMP/err" | json_num iteration_time_s)
awk -v a="$down" -v b="$up" 'BEGIN { exit !(a >= b) }' && ok "NVLink down: $up -> $down s" || bad "NVLink down: '$down' $(cat "$TMP/err")"
"$DTSIM" collective --op allreduce --bytes 64M --system nd-h100-v5 --nodes 2 --topology fat-tree \
  --link-down node0/nic0-leaf0 --link-down leaf0-node1/nic3 --json >"$TMP/out" 2>"$TMP/err" &&
  ok "collective with two NIC links down" || bad "collective with links down: $(cat "$TMP/err")"
printf '[scenario]\nmodel = demo\nlink-down = node0/dev0-node0/dev1, node0/dev0-node0/dev2\n' >"$TMP/ld.ini"
"$DTSIM" run "$TMP/ld.ini" --json >/dev/null 2>"$TMP/err" && ok "link-down list in a file" || bad "file: $(cat "$TMP/err")"
expect_error "link-down: no such vertex" 2 run --model demo --link-down node0/dev9-node0/dev1
expect_error "link-down: not A-B" 2 run --model demo --link-down node0/dev0
expect_error "link-down: no such link" 2 run --model demo --link-down node0/dev0-node0/dev7
expect_error "link-down: analytic" 2 run --model demo --link-down node0/dev0-node0/dev1 --net-model analytic
# 3d folds one pipeline's groups for all, which a failed link breaks: left to itself the run
# unfolds and says so, the same plan as --symmetry off; --symmetry on is refused.
expect_error "link-down: 3d folded on request" 2 run $T3 --link-down node0/nic0-leaf0 --symmetry on
auto=$("$DTSIM" run $T3 --link-down node0/nic0-leaf0 --json 2>"$TMP/err" | tee "$TMP/ld.json" | json_num iteration_time_s)
off=$("$DTSIM" run $T3 --link-down node0/nic0-leaf0 --symmetry off --json 2>>"$TMP/err" | json_num iteration_time_s)
whole=$("$DTSIM" run $T3 --symmetry off --json 2>>"$TMP/err" | json_num iteration_time_s)
[ -n "$auto" ] && [ "$auto" = "$off" ] && grep -q '"symmetry":"unfolded: --link-down breaks' "$TMP/ld.json" &&
  awk -v a="$auto" -v w="$whole" 'BEGIN { exit !(a >= w) }' &&
  ok "link-down: 3d unfolds by itself and says so ($auto s, $whole s without it)" ||
  bad "link-down 3d unfold: $auto / $off / $whole: $(cat "$TMP/err")"
expect_error "link-down: a node cut off" 2 run --model demo --nodes 2 --topology fat-tree \
  --link-down node0/nic0-leaf0 --link-down node0/nic1-leaf0 --link-down node0/nic2-leaf0 \
  --link-down node0/nic3-leaf0
grep -q "reaches no NIC" "$TMP/err" && ok "cut off: says why" || bad "cut off: $(cat "$TMP/err")"

# --- every device of a 3-D run -----------------------------------------------------------------
# --symmetry off simulates every device and every transfer and collective of every group as
# flows; where nothing contends it equals the folded run within 0.5% (the contract's bound):
# the same tasks (embedding and LM head passes, gradient buckets closed by pieces of the last
# backward), blocks spread unevenly over the stages, and mixture-of-experts blocks with and
# without expert parallelism (the all-to-alls over groups of ep consecutive devices, the
# experts' gradients over their expert-data-parallel groups: with --ep 2 and overlap they meet
# the backward's all-to-alls, so that case is on the analytic network, where nothing shares);
# context parallelism: the p2p ring's attention blocks and key/value sends as tasks and flows,
# the all-gather and a2a forms' collectives over each context-parallel group.
for cfg in "--model gpt3-1.7b --system dgx-a100 --nodes 1 --pp 2 --global-batch 16" \
           "--model gpt3-1.7b --system dgx-a100 --nodes 2 --pp 2 --global-batch 32 --schedule interleaved --interleave 2" \
           "--model gpt3-1.7b --system dgx-a100 --nodes 1 --pp 2 --global-batch 16 --zero 1 --overlap off" \
           "--model llama3-8b --system dgx-h100 --nodes 2 --pp 4 --global-batch 32 --seq-len 2048" \
           "--model gpt3-1.7b --system dgx-a100 --nodes 1 --tp 4 --global-batch 16 --overlap off" \
           "--model gpt3-1.7b --system dgx-a100 --nodes 1 --tp 8 --global-batch 16" \
           "--model gpt3-1.7b --system dgx-a100 --nodes 2 --tp 2 --pp 2 --global-batch 32 --sequence-parallel on" \
           "--model gpt3-1.7b --system dgx-a100 --nodes 1 --tp 2 --pp 2 --global-batch 16 --tp-overlap on" \
           "--model gpt3-1.7b --system dgx-a100 --nodes 1 --pp 2 --global-batch 16 --split 14" \
           "--model gpt3-1.7b --system dgx-a100 --nodes 1 --pp 4 --global-batch 16 --embedding-in-split on --loss-in-split on" \
           "--model mixtral-8x7b --system dgx-h100 --nodes 2 --tp 2 --pp 2 --global-batch 16 --sequence-parallel on" \
           "--model mixtral-8x7b --system dgx-h100 --nodes 2 --tp 2 --pp 2 --global-batch 16 --sequence-parallel on --ep 8" \
           "--model mixtral-8x7b --system dgx-h100 --nodes 2 --tp 2 --pp 2 --global-batch 16 --sequence-parallel on --ep 4 --overlap off" \
           "--model mixtral-8x7b --system dgx-h100 --nodes 2 --tp 2 --pp 2 --global-batch 16 --sequence-parallel on --ep 2 --net-model analytic" \
           "--model llama3-8b --system dgx-h100 --nodes 1 --tp 2 --cp 2 --global-batch 8" \
           "--model llama3-8b --system dgx-h100 --nodes 2 --tp 2 --cp 4 --pp 2 --global-batch 8" \
           "--model llama3-8b --system dgx-h100 --nodes 1 --tp 2 --cp 4 --global-batch 4 --recompute selective --overlap off" \
           "--model llama3-8b --system dgx-h100 --nodes 1 --tp 2 --cp 2 --cp-comm all-gather --global-batch 8" \
           "--model llama3-8b --system dgx-h100 --nodes 1 --tp 1 --cp 4 --cp-comm a2a --global-batch 8" \
           "--model llama3-8b --system dgx-h100 --nodes 2 --tp 2 --cp 4 --global-batch 8 --net-model analytic" \
           "--model gpt3-1.7b --system dgx-a100 --nodes 1 --global-batch 16 --zero 3" \
           "--model gpt3-1.7b --system dgx-a100 --nodes 1 --pp 2 --global-batch 16 --zero 3 --overlap off" \
           "--model gpt3-1.7b --system dgx-a100 --nodes 2 --tp 2 --pp 2 --global-batch 32 --zero 3" \
           "--model gpt3-1.7b --system dgx-a100 --nodes 2 --pp 2 --global-batch 32 --schedule interleaved --interleave 2 --zero 3" \
           "--model mixtral-8x7b --system dgx-h100 --nodes 2 --tp 2 --pp 2 --global-batch 16 --sequence-parallel on --ep 8 --zero 3" \
           "--model mixtral-8x7b --system dgx-h100 --nodes 2 --tp 2 --pp 2 --global-batch 16 --sequence-parallel on --ep 4 --overlap off --zero 3" \
           "--model llama3-8b --system dgx-h100 --nodes 1 --tp 2 --cp 2 --global-batch 8 --zero 3"; do
  f=$("$DTSIM" run --strategy 3d --precision bf16 $cfg --json)
  u=$("$DTSIM" run --strategy 3d --precision bf16 $cfg --symmetry off --json 2>"$TMP/err")
  fi=$(printf '%s' "$f" | json_num iteration_time_s); ui=$(printf '%s' "$u" | json_num iteration_time_s)
  fe=$(printf '%s' "$f" | json_num events); ue=$(printf '%s' "$u" | json_num events)
  if [ -n "$ui" ] && near "$ui" "$fi" 0.005 && [ "$ue" -gt "$fe" ]; then
    ok "3d every device = folded within 0.5% ($fi vs $ui s; $fe vs $ue events): $cfg"
  else
    bad "3d every device: '$fi' vs '$ui' ($fe vs $ue events) $(cat "$TMP/err"): $cfg"
  fi
done
U3="--strategy 3d --model gpt3-1.7b --system dgx-a100 --nodes 1 --pp 2 --global-batch 16 --precision bf16 --symmetry off"
base=$("$DTSIM" run $U3 --json | json_num iteration_time_s)
slow=$("$DTSIM" run $U3 --straggler 0:1.2 --straggler 5:1.1 --json 2>"$TMP/err" | json_num iteration_time_s)
awk -v a="$slow" -v b="$base" 'BEGIN { exit !(a > b) }' && ok "3d every device: stragglers of two replicas ($base -> $slow s)" ||
  bad "3d every device stragglers: '$slow' $(cat "$TMP/err")"
# GPU 0's NVSwitch port down: its pipeline and data-parallel traffic goes over PCIe and the
# host instead, which is slower.
cut=$("$DTSIM" run $U3 --link-down node0/dev0-node0/nvswitch --json 2>"$TMP/err" | json_num iteration_time_s)
awk -v a="$cut" -v b="$base" 'BEGIN { exit !(a > b) }' && ok "3d every device: NVSwitch port down ($base -> $cut s)" ||
  bad "3d every device: NVSwitch port down: '$cut' $(cat "$TMP/err")"
"$DTSIM" run --strategy 3d --model gpt3-1.7b --system dgx-a100 --nodes 2 --pp 2 --global-batch 32 \
  --precision bf16 --symmetry off --link-down node0/nic0-leaf0 --json >/dev/null 2>"$TMP/err" &&
  ok "3d every device: a failed NIC link" || bad "3d link down: $(cat "$TMP/err")"
# ZeRO 3 gathers every pass's parameters over the data-parallel group. With micro-batches of one sequence of 256 tokens on tp 2 x dp 4 the gathers (prefetched during
# the previous pass) take longer than a pass's compute and meet its tensor-parallel allreduces
# on the NVSwitch ports: slower than the folded run on flows, equal on the analytic network,
# where nothing shares.
Z3="--strategy 3d --model gpt3-1.7b --system dgx-a100 --nodes 1 --tp 2 --global-batch 16 --micro-batch 1 --seq-len 256 --precision bf16 --zero 3"
f=$("$DTSIM" run $Z3 --json | json_num iteration_time_s)
u=$("$DTSIM" run $Z3 --symmetry off --json 2>"$TMP/err" | json_num iteration_time_s)
awk -v a="$u" -v b="$f" 'BEGIN { exit !(a > b * 1.005) }' && ok "3d every device, ZeRO 3: gathers meet the tp allreduces ($f -> $u s)" ||
  bad "3d every device ZeRO 3 contention: $f vs '$u' $(cat "$TMP/err")"
f=$("$DTSIM" run $Z3 --net-model analytic --json | json_num iteration_time_s)
u=$("$DTSIM" run $Z3 --net-model analytic --symmetry off --json | json_num iteration_time_s)
[ -n "$u" ] && [ "$u" = "$f" ] && ok "3d every device, ZeRO 3, analytic: the folded time ($u s)" ||
  bad "3d every device ZeRO 3 analytic: $f vs '$u'"
# Where links are shared it is slower, never faster: with overlap, each chunk's gradient
# reduction runs during the backward's tensor-parallel allreduces on the same NVSwitch ports,
# which the folded run times apart.
C3="--strategy 3d --model gpt3-1.7b --system dgx-a100 --nodes 1 --tp 4 --global-batch 16 --precision bf16"
f=$("$DTSIM" run $C3 --json | json_num iteration_time_s)
u=$("$DTSIM" run $C3 --symmetry off --json | json_num iteration_time_s)
awk -v a="$u" -v b="$f" 'BEGIN { exit !(a > b) }' && ok "3d every device: contention costs ($f -> $u s)" ||
  bad "3d every device contention: $f vs $u"
# Expert parallelism 2 on two DGX H100: the experts' gradient buckets (11 GB a device) are
# reduced during the backward's all-to-alls on the same NVSwitch ports.
E3="--strategy 3d --model mixtral-8x7b --system dgx-h100 --nodes 2 --tp 2 --pp 2 --global-batch 16 --sequence-parallel on --ep 2 --precision bf16"
f=$("$DTSIM" run $E3 --json | json_num iteration_time_s)
u=$("$DTSIM" run $E3 --symmetry off --json 2>"$TMP/err" | json_num iteration_time_s)
awk -v a="$u" -v b="$f" 'BEGIN { exit !(a > b) }' && ok "3d every device: expert gradients meet the all-to-alls ($f -> $u s)" ||
  bad "3d every device expert contention: $f vs '$u' $(cat "$TMP/err")"
expect_error "3d folded: failed link refused under --symmetry on" 2 run --strategy 3d --model gpt3-1.7b --system dgx-a100 --pp 2 --global-batch 16 --link-down node0/nic0-leaf0 --symmetry on

# --- link load -------------------------------------------------------------------------------------
# An unfolded data-parallel run on two DGX A100 (rails): the trace carries the rate of the 8
# busiest links as counters of a "busiest links" process, and the heat map has rows of the
# NVLink (NVSwitch) and rail tiers.
"$DTSIM" run --model resnet50 --system dgx-a100 --nodes 2 --batch 32 --symmetry off \
  --trace "$TMP/t.json" --link-heatmap "$TMP/h.svg" >/dev/null 2>"$TMP/err"
grep -q '"name":"busiest links"' "$TMP/t.json" 2>/dev/null && ok "trace: busiest links process" ||
  bad "trace: no busiest links: $(cat "$TMP/err")"
n=$(grep -o '"name":"[^"]*-[^"]* GB/s"' "$TMP/t.json" | sort -u | wc -l)
[ "$n" -eq 8 ] && ok "trace: 8 busiest link counters" || bad "trace: $n link counters"
grep -q '>nvlink<' "$TMP/h.svg" && grep -q '>rail<' "$TMP/h.svg" && grep -q '</svg>' "$TMP/h.svg" &&
  ok "heat map: nvlink and rail tiers" || bad "heat map: $(head -c 300 "$TMP/h.svg")"
"$DTSIM" run --model resnet50 --system dgx-a100 --nodes 2 --batch 32 --symmetry off \
  --trace "$TMP/t2.json" --trace-links 3 >/dev/null 2>&1
n=$(grep -o '"name":"[^"]*-[^"]* GB/s"' "$TMP/t2.json" | sort -u | wc -l)
[ "$n" -eq 3 ] && ok "trace: --trace-links 3" || bad "trace-links 3: $n counters"
expect_error "heat map of a folded run" 2 run --model demo --link-heatmap "$TMP/f.svg"
[ ! -e "$TMP/f.svg" ] && ok "no heat map file left" || bad "a heat map file was left"
expect_error "heat map on the analytic network" 2 run --model demo --symmetry off --net-model analytic --link-heatmap "$TMP/f.svg"
expect_error "heat map of 3d" 2 run $T3 --link-heatmap "$TMP/f.svg"
expect_error "heat map in a sweep" 2 sweep --model demo --nodes 1,2 --link-heatmap "$TMP/f.svg"
expect_error "heat map in a search" 2 search --model demo --link-heatmap "$TMP/f.svg"
expect_error "trace-links without a trace" 2 run --model demo --trace-links 4
expect_error "heat map into a folder" 2 run --model demo --symmetry off --link-heatmap "$TMP"

echo "passed $pass, failed $fail"
[ "$fail" -eq 0 ]
