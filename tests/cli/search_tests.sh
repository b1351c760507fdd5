#!/bin/sh
# Command-line tests of `dtsim search`. Usage: search_tests.sh PATH/TO/dtsim
# Each check prints one line; the last line counts passes and failures.
DTSIM=${1:?usage: search_tests.sh DTSIM}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
PAIR="$(dirname "$0")/data/pair.ini"

. "$(dirname "$0")/lib.sh"


"$DTSIM" search --help-all >"$TMP/out" 2>&1 && grep -q -- "--top" "$TMP/out" && grep -q -- "--jobs" "$TMP/out" &&
  ok "search --help lists --top and --jobs" || bad "search --help"
"$DTSIM" --help | grep -q "^  search" && ok "dtsim --help lists search" || bad "dtsim --help"
expect_error "top 0" 2 search --model demo --top 0
expect_error "trace refused" 2 search --model demo --trace "$TMP/t.json"
expect_error "sweep axis refused" 2 search --model demo --devices 1,2
expect_error "stray argument" 2 search a.ini b.ini
expect_error "missing scenario" 2 search "$TMP/none.ini"
expect_error "unknown model" 2 search --model nosuchmodel
expect_error "precision the device lacks" 2 search --model resnet18 --precision bf16
expect_error "key of another strategy" 2 search --model demo --strategy dp --ps-count 2
printf '[scenario]\nmodel = demo\ntop = many\n' >"$TMP/bad.ini"
expect_error "bad scenario value" 2 search "$TMP/bad.ini"

# Keys given fix their axes: dp ring with overlap off leaves the 4 bucket sizes; --top 3 prints
# 3 rows; the CSV has one row per configuration (4) after its header.
"$DTSIM" search --model demo --system "$PAIR" --strategy dp --allreduce ring --overlap off \
  --batch 32 --top 3 --json --csv "$TMP/s.csv" --plot "$TMP/s.svg" >"$TMP/out" 2>"$TMP/err"
[ "$(wc -l <"$TMP/out")" -eq 3 ] && ok "--top 3 --json prints 3 rows" || bad "json rows: $(cat "$TMP/out" "$TMP/err")"
[ "$(wc -l <"$TMP/s.csv")" -eq 5 ] && ok "--csv: a header and 4 configurations" || bad "csv: $(cat "$TMP/s.csv")"
# Best by hand (tests/sim/test_search.c): 25 MiB buckets, two of them, 26.349 ms.
head -1 "$TMP/out" | grep -q '"rank":1,"configuration":"dp bucket-mib=25 batch=32"' &&
  head -1 "$TMP/out" | grep -q '"analytic_iteration_time_s":0.0263492441' &&
  ok "best configuration as worked out by hand" || bad "best: $(head -1 "$TMP/out")"
grep -q "<svg" "$TMP/s.svg" && grep -q "memory per device" "$TMP/s.svg" && grep -q "best: dp bucket-mib=25" "$TMP/s.svg" &&
  ok "--plot: throughput against memory, the best marked" || bad "svg"
grep -q "4 configurations: 4 ranked, 0 dropped" "$TMP/err" && grep -q "Kendall tau" "$TMP/err" &&
  ok "summary on stderr with --json" || bad "summary: $(cat "$TMP/err")"

# One and two threads give the same bytes (table, JSON and CSV).
for fmt in "" "--json"; do
  "$DTSIM" search --model resnet50 --system dgx1-v100 --nodes 2 --top 5 $fmt --jobs 1 --csv "$TMP/1.csv" >"$TMP/1" 2>/dev/null
  "$DTSIM" search --model resnet50 --system dgx1-v100 --nodes 2 --top 5 $fmt --jobs 2 --csv "$TMP/2.csv" >"$TMP/2" 2>/dev/null
  [ -s "$TMP/1" ] && cmp -s "$TMP/1" "$TMP/2" && cmp -s "$TMP/1.csv" "$TMP/2.csv" &&
    ok "search ${fmt:-table}: --jobs 1 and 2 give the same bytes" || bad "search ${fmt:-table} differs between 1 and 2 threads"
done

# Transformers: the 3d family, rows in tokens per second with the run object's MFU.
T="transformer:layers=4,hidden=64,heads=4,seq=32,vocab=128"
"$DTSIM" search --model "$T" --system dgx-a100 --nodes 2 --devices-per-node 4 --global-batch 16 \
    --precision bf16 --top 2 --json >"$TMP/t.json" 2>"$TMP/err" &&
    [ "$(wc -l <"$TMP/t.json")" -eq 2 ] && head -1 "$TMP/t.json" | grep -q '"configuration":"3d tp=' &&
    head -1 "$TMP/t.json" | grep -q '"tokens_per_s":' && head -1 "$TMP/t.json" | grep -q '"mfu":' &&
    ok "transformer search: 3d rows with tokens/s and MFU" || bad "transformer search: $(cat "$TMP/t.json" "$TMP/err" | head -c 400)"
"$DTSIM" search --model "$T" --system dgx-a100 --nodes 2 --devices-per-node 4 --global-batch 16 \
    --precision bf16 --top 2 2>/dev/null | head -1 | grep -q "tokens_per_s" &&
    ok "transformer search table in tokens/s" || bad "transformer search table"

# The 3d axes reach sequence parallelism and every even chunk count. GPT 1.7B has 24 blocks; with
# tp 2 and pp 2 fixed (12 blocks a stage), the schedule axis holds 1f1b and interleave 2, 3, 4,
# 6, 8, 12 and 24 (the divisors of 24), times sequence parallelism off and on: 16 combinations.
# Interleave 8 makes chunks of 24 / 16 blocks (uneven: dropped, 2) and 24 leaves chunks without
# a block (2): 12 ranked, interleave 12 with sequence parallelism among them. The framework and
# offload axes are fixed.
"$DTSIM" search --model gpt3-1.7b --system dgx-a100 --nodes 1 --strategy 3d --tp 2 --pp 2 \
    --micro-batch 1 --recompute none --zero 0 --global-batch 16 --precision bf16 --top 100 \
    --framework megatron --offload none --json >"$TMP/sp.json" 2>"$TMP/sp.err"
grep -q "16 configurations: 12 ranked, 4 dropped" "$TMP/sp.err" &&
  grep -q "2  model chunks of unequal blocks" "$TMP/sp.err" &&
  grep -q '"configuration":"3d schedule=interleaved interleave=12 sequence-parallel=on ' "$TMP/sp.json" &&
  ok "3d search: sequence parallelism and interleave 12 are axes" ||
  bad "3d search axes: $(cat "$TMP/sp.err" | head -c 400)"

# Time bounds: a 3d search simulates only the candidates that can reach the best --top (the
# rest counted as dropped), the same on one thread and two (the rows are compared with the
# exhaustive search in test_search).
B="transformer:layers=8,hidden=1024,heads=16,seq=1024,vocab=32000"
for j in 1 2; do
  "$DTSIM" search --model "$B" --system dgx-a100 --nodes 2 --global-batch 64 --precision bf16 \
      --top 5 --offload none --jobs $j --json --csv "$TMP/b$j.csv" >"$TMP/b$j.json" 2>"$TMP/b$j.err"
  grep -v "simulations in" "$TMP/b$j.err" >"$TMP/b$j.sum"
done
grep -q "cannot reach the best --top (lower bound of its time)" "$TMP/b1.sum" &&
  [ "$(wc -l <"$TMP/b1.json")" -eq 5 ] && cmp -s "$TMP/b1.json" "$TMP/b2.json" &&
  cmp -s "$TMP/b1.sum" "$TMP/b2.sum" && cmp -s "$TMP/b1.csv" "$TMP/b2.csv" &&
  ok "3d search pruned by time bounds, the same on 1 and 2 threads" ||
  bad "time bounds: $(head -c 600 "$TMP/b1.err")"

# A scenario file works like the options.
printf '[scenario]\nmodel = demo\nsystem = %s\nstrategy = dp\nallreduce = ring\noverlap = off\nbatch = 32\ntop = 1\n' "$PAIR" >"$TMP/s.ini"
"$DTSIM" search "$TMP/s.ini" --json 2>/dev/null | grep -q '"configuration":"dp bucket-mib=25 batch=32"' &&
  ok "scenario file" || bad "scenario file"
# --net-model analytic given: ranked on the analytic network only.
"$DTSIM" search --model demo --system "$PAIR" --strategy dp --net-model analytic --top 2 >"$TMP/out" 2>&1 &&
  grep -q "analytic network only" "$TMP/out" && ok "--net-model analytic skips the flow phase" || bad "analytic only: $(cat "$TMP/out")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
