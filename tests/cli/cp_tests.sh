#!/bin/sh
# Command-line checks of context parallelism (--cp, --cp-comm), expert tensor parallelism
# (--etp) and expert capacity (--moe-capacity, --moe-imbalance): values worked out by hand and
# one clear line for each refusal.
# Usage: cp_tests.sh PATH/TO/dtsim. Each check prints one line; the last counts them.
DTSIM=${1:?usage: cp_tests.sh DTSIM}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

. "$(dirname "$0")/lib.sh"

L7="--strategy 3d --model llama2-7b --seq-len 32768 --precision bf16 --system dgx-h100 --nodes 4 --tp 2 --global-batch 128 --micro-batch 1"

# --- Activations over cp: with one micro-batch in flight (no pipeline), cp 2 keeps half of cp
# 1's. ZeRO 1 shards the optimizer over dp x cp: 16 ranks either way, the same bytes. p2p's
# buffers: 4 x a rank's keys and values, 16384 tokens x 32 heads x 256 / 2 x 2 bytes x 4. --------
"$DTSIM" run $L7 --zero 1 --json >"$TMP/c1.json" 2>"$TMP/err"
"$DTSIM" run $L7 --zero 1 --cp 2 --json >"$TMP/c2.json" 2>>"$TMP/err"
a1=$(json_num activations <"$TMP/c1.json" | head -1); a2=$(json_num activations <"$TMP/c2.json" | head -1)
o1=$(json_num optimizer <"$TMP/c1.json" | head -1); o2=$(json_num optimizer <"$TMP/c2.json" | head -1)
acp=$(json_num activations_cp <"$TMP/c2.json" | head -1)
[ -n "$a1" ] && [ "$a1" = "$((2 * a2))" ] && ok "activations at cp 2 are half of cp 1's ($a2 x 2 = $a1)" ||
  bad "activations cp 1 '$a1', cp 2 '$a2' ($(cat "$TMP/err"))"
[ -n "$o1" ] && [ "$o1" = "$o2" ] && ok "ZeRO 1 shards over dp x cp: optimizer $o1 = $o2" ||
  bad "optimizer cp 1 '$o1', cp 2 '$o2'"
[ "$acp" = "$((16384 * 32 * 256 / 2 * 2 * 4))" ] && ok "activations_cp of p2p: $acp" ||
  bad "activations_cp '$acp'"
grep -q activations_cp "$TMP/c1.json" && bad "activations_cp without --cp" ||
  ok "no activations_cp without --cp"

# --- The three forms run, each its own time; all-gather exposes its gathers, so it is not
# faster than p2p, which hides its steps behind the attention blocks. --------------------------
for c in p2p all-gather a2a; do
  "$DTSIM" run $L7 --cp 2 --cp-comm $c --json >"$TMP/$c.json" 2>"$TMP/err" &&
    ok "--cp-comm $c runs ($(json_num iteration_time_s <"$TMP/$c.json") s)" ||
    bad "--cp-comm $c: $(cat "$TMP/err")"
done
tp2p=$(json_num iteration_time_s <"$TMP/p2p.json"); tag=$(json_num iteration_time_s <"$TMP/all-gather.json")
awk -v a="$tp2p" -v b="$tag" 'BEGIN { exit !(a <= b) }' && ok "p2p ($tp2p s) <= all-gather ($tag s)" ||
  bad "p2p $tp2p s slower than all-gather $tag s"

# --- Expert capacity: Mixtral 8x7B, top 2, 32 expert blocks, 16 sequences of 4096 tokens;
# imbalance 1.4 with capacity 1.0 drops (1.4 - 1)^2 / (4 x 0.4) = 0.1 of the copies:
# 0.1 x 16 x 4096 x 2 x 32 = 419430.4. Experts over ep x etp devices: ep 4 x etp 2 and ep 8
# hold the same expert weights. -----------------------------------------------------------------
MX="--strategy 3d --model mixtral-8x7b --seq-len 4096 --precision bf16 --system dgx-h100 --nodes 2 --tp 2 --pp 2 --sequence-parallel on --global-batch 16"
"$DTSIM" run $MX --ep 8 --moe-capacity 1.0 --moe-imbalance 1.4 --json >"$TMP/d.json" 2>"$TMP/err"
got=$(json_num tokens_dropped <"$TMP/d.json")
near "$got" 419430.4 1e-9 && ok "tokens_dropped $got" || bad "tokens_dropped '$got' ($(cat "$TMP/err"))"
"$DTSIM" run $MX --ep 8 --json >"$TMP/e8.json" 2>"$TMP/err"
"$DTSIM" run $MX --ep 4 --etp 2 --json >"$TMP/e4.json" 2>>"$TMP/err"
w8=$(json_num weights <"$TMP/e8.json"); w4=$(json_num weights <"$TMP/e4.json")
[ -n "$w8" ] && [ "$w8" = "$w4" ] && ok "ep 4 x etp 2 holds ep 8's weights ($w8)" ||
  bad "weights ep 8 '$w8', ep 4 etp 2 '$w4' ($(cat "$TMP/err"))"
grep -q tokens_dropped "$TMP/e8.json" && bad "tokens_dropped without a capacity" ||
  ok "no tokens_dropped without --moe-capacity"

# --- Search: cp is an axis with the strategy's checks. -----------------------------------------
"$DTSIM" search --strategy 3d --model llama2-7b --seq-len 32768 --precision bf16 --system dgx-h100 \
  --nodes 2 --global-batch 32 --tp 2 --pp 1 --micro-batch 1 --recompute selective --zero 1 \
  --schedule 1f1b --top 20 >"$TMP/s.txt" 2>"$TMP/err"
grep -q 'cp=2' "$TMP/s.txt" && grep -q 'cp=4' "$TMP/s.txt" && ok "search ranks cp 2 and 4" ||
  bad "search: $(cat "$TMP/err") $(head -c 300 "$TMP/s.txt")"

# --- Refusals. -----------------------------------------------------------------------------------
refused "cp does not split the sequence" "2 x 3 equal chunks" run $L7 --cp 3
refused "tp x cp x dp not the devices" "--cp 2 x --dp 4" run $L7 --cp 2 --dp 4
refused "a2a needs tp x cp to divide the heads" "--cp-comm a2a" run --strategy 3d --model llama3-8b --system dgx-h100 --nodes 4 --tp 2 --cp 8 --cp-comm a2a
refused "cp needs flash attention" "--attention flash" run $L7 --cp 2 --attention unfused
refused "cp with dp" "--cp" run --model llama2-7b --strategy dp --cp 2
refused "unknown --cp-comm" "--cp-comm" run $L7 --cp 2 --cp-comm ring
refused "etp without ep" "--etp 2 needs --ep" run $MX --etp 2
refused "capacity without experts" "--moe-capacity" run $L7 --moe-capacity 1.25
refused "imbalance above 2" "--moe-imbalance" run $MX --ep 8 --moe-imbalance 2.5
refused "ep x etp does not fold" "--ep 8 x --etp 4" run $MX --ep 8 --etp 4

# --- A p2p ring across nodes sends point to point: one GPU's NIC per hop. 2 blocks of hidden
# 1024 at 65536 tokens, cp 16 over 2 DGX H100 (400 Gb/s, 50 GB/s a NIC): each step's keys and
# values are 2 x 4096 tokens x 1024 x 2 bytes = 16777216 bytes, 335.5 us a hop, longer than
# the step's attention block. Forward 15 steps, backward 15 of twice the bytes and the last
# gradients home: (15 + 30 + 1) x 335.5 us x 2 blocks = 30.9 ms at least. (A collective spread
# over the node's eight NICs made it 18.3 ms.) The folded ring waits for its slowest hop at every
# step, the unfolded one for its own hops: within 15% of each other on the analytic network. --
CPX="--strategy 3d --model transformer:layers=2,hidden=1024,heads=16,seq=65536,vocab=32000 --system dgx-h100 --nodes 2 --cp 16 --global-batch 1 --precision bf16 --net-model analytic"
tf=$("$DTSIM" run $CPX --json 2>"$TMP/err" | json_num iteration_time_s)
tu=$("$DTSIM" run $CPX --symmetry off --json 2>>"$TMP/err" | json_num iteration_time_s)
[ -n "$tf" ] && awk -v t="$tf" 'BEGIN { exit !(t >= 46 * 2 * 16777216 / 50e9) }' &&
  ok "p2p ring across nodes, one NIC a hop: $tf s >= 30.9 ms" ||
  bad "p2p ring across nodes: '$tf' s, under 30.9 ms ($(cat "$TMP/err"))"
[ -n "$tu" ] && near "$tf" "$tu" 0.15 && ok "folded $tf s, every device $tu s, within 15%" ||
  bad "folded '$tf' against every device '$tu'"

echo "cp: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
