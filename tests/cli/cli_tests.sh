#!/bin/sh
# Command-line tests of dtsim. Usage: cli_tests.sh PATH/TO/dtsim
# Each check prints one line; the last line counts passes and failures.
DTSIM=${1:?usage: cli_tests.sh DTSIM}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

. "$(dirname "$0")/lib.sh"


# expect_value NAME KEY WANT RELTOL ARGS... : a key of `run --json`
expect_value() {
  name=$1; key=$2; want=$3; tol=$4; shift 4
  got=$("$DTSIM" "$@" --json 2>"$TMP/err" | json_num "$key")
  if [ -n "$got" ] && near "$got" "$want" "$tol"; then
    ok "$name ($key = $got)"
  else
    bad "$name: $key = '$got', want $want; stderr: $(cat "$TMP/err")"
  fi
}

# --- front door --------------------------------------------------------------------------------
"$DTSIM" --help >"$TMP/out" 2>&1 && grep -q "describe" "$TMP/out" && ok "--help lists commands" || bad "--help"
for c in run list; do
  "$DTSIM" $c --help >"$TMP/out" 2>&1 && grep -qi "usage" "$TMP/out" && ok "$c --help" || bad "$c --help"
done
expect_error "no command" 2
expect_error "unknown command" 2 frobnicate
expect_error "unknown option" 2 run --frobnicate
# An option given without its value takes the next option as its value: that is named, not
# the argument left over ("ring: no such file").
expect_error "option without its value" 2 run --strategy 3d --model gpt3-1.7b --sequence-parallel --allreduce ring
grep -q -- "--sequence-parallel: no value given ('--allreduce' is the next option)" "$TMP/err" &&
  ok "option without its value: names both" || bad "option without its value: $(cat "$TMP/err")"
expect_error "batch 0" 2 run --model demo --batch 0
expect_error "negative nodes" 2 run --model demo --nodes -1
expect_error "huge nodes" 2 run --model demo --nodes 99999999999999999999
expect_error "unknown strategy" 2 run --model demo --strategy magic
expect_error "unknown precision" 2 run --model demo --precision fp7
expect_error "bad overlap" 2 run --model demo --overlap maybe
expect_error "stray argument" 2 run a.ini b.ini
expect_error "missing scenario file" 2 run "$TMP/none.ini"
printf '[scenario]\nmodel = demo\nbatch = 12x\n' >"$TMP/bad.ini"
expect_error "bad scenario value" 2 run "$TMP/bad.ini"
grep -q "bad.ini:3: \[scenario\] batch" "$TMP/err" && ok "error names file:line and key" || bad "error location: $(cat "$TMP/err")"
printf '[scenario]\nmodle = demo\n' >"$TMP/typo.ini"
expect_error "unknown scenario key" 2 run "$TMP/typo.ini"
printf '[scenario\nmodel = demo\n' >"$TMP/syntax.ini"
expect_error "scenario syntax error" 2 run "$TMP/syntax.ini"
expect_error "unwritable trace" 2 run --model demo --trace "$TMP/no/such/dir/t.json"
expect_error "list without kind" 2 list
expect_error "list unknown kind" 2 list gadgets

# A scenario file sets the same keys as the options; options override it.
printf '[scenario]\nmodel = demo\ndevices-per-node = 2\nbatch = 16\n' >"$TMP/s.ini"
d=$("$DTSIM" run "$TMP/s.ini" --json | json_num devices)
[ "$d" = "2" ] && ok "scenario file applies (2 devices)" || bad "scenario file: devices '$d'"
d=$("$DTSIM" run "$TMP/s.ini" --devices-per-node 4 --json | json_num devices)
[ "$d" = "4" ] && ok "option overrides the scenario file (4 devices)" || bad "override: devices '$d'"

# --- limits: refused with one line, or simulated correctly -----------------------------------
expect_error "over a million devices" 2 run --nodes 125001 --net-model analytic
expect_error "flow model beyond its size" 2 run --nodes 125001 --net-model flow
expect_error "collective size over 16 EiB" 2 collective --bytes 17E
expect_error "collective time overflowing the clock" 2 collective --bytes 15E --nodes 2
expect_error "NaN bucket" 2 run --bucket-mib nan
expect_error "infinite bucket" 2 run --bucket-mib inf
expect_error "negative threads" 2 run --threads -4
expect_error "pipeline with more micro-batches than samples" 2 run --strategy pp --micro-batches 65
printf '{"name":"empty","input":[3,32,32],"layers":[]}' >"$TMP/empty.json"
expect_error "empty model" 2 run --model "$TMP/empty.json"
printf '{"format": "dtsim-workload"}\n{"layers": []}\n' >"$TMP/two.json"
expect_error "two JSON documents in a model file" 2 run --model "$TMP/two.json"
expect_error "impossible torus" 2 run --nodes 4 --topology torus2d:3x3
expect_error "more threads than a Xeon Phi 7250 has (272)" 2 run --system stampede2-knl --threads 273
expect_error "threads on a GPU" 2 run --threads 4
t=$("$DTSIM" run --system stampede2-knl --model chaos-large --batch 272 --threads 272 --json 2>"$TMP/err" | json_num iteration_time_s)
awk -v t="$t" 'BEGIN { exit !(t > 0) }' && ok "272 threads on a Xeon Phi 7250 ($t s)" || bad "phi threads: '$t' $(cat "$TMP/err")"
expect_error "chaos on a GPU" 2 run --strategy chaos --device v100-sxm2-16gb --model chaos-small
expect_error "chaos with a batch" 2 run --strategy chaos --device xeon-phi-7120p --model chaos-small --batch 8
expect_error "chaos beyond 244 threads of a 7120P" 2 run --strategy chaos --device xeon-phi-7120p --model chaos-small --threads 245
expect_value "chaos on one thread is its own baseline" speedup 1 1e-9 run --strategy chaos --device xeon-phi-7120p --model chaos-small --threads 1
# A million devices with the analytic network is simulated (one device stands for all).
t=$("$DTSIM" run --nodes 125000 --net-model analytic --json 2>"$TMP/err" | json_num devices)
[ "$t" = "1000000" ] && ok "a million devices simulate" || bad "a million devices: '$t' $(cat "$TMP/err")"
# A run that fails after its trace was opened leaves no file behind (the clock overflows).
expect_error "clock overflow" 2 run --model vgg19 --batch 16777216 --iterations 100000 --devices-per-node 1 --trace "$TMP/ovf.json"
[ ! -e "$TMP/ovf.json" ] && [ "$(ls "$TMP" | grep -c tmp-)" -eq 0 ] && ok "failed run leaves no trace" || bad "partial trace left: $(ls "$TMP")"
# Large traces are sampled and capped, and say so.
"$DTSIM" run --nodes 16 --trace "$TMP/big.json" --trace-devices 4 --trace-limit 500 >/dev/null 2>"$TMP/err"
grep -q "first 4 devices" "$TMP/err" && grep -q "cut after 500 events" "$TMP/err" && grep -q '"truncated":"yes"' "$TMP/big.json" &&
  ok "large trace sampled and capped, with notes" || bad "trace sampling: $(cat "$TMP/err")"

# --- results worked out by hand (demo workload, simple network until the network module) ----
# One device, batch 32: forward 2 + 3 + 1 + 0.1 = 6.1 ms; backward 2 + (3 + 3) + (1 + 1) + 0.1
# = 10.1 ms; update: (4 + 16 + 64) MiB x 4 / 300 GB/s = 1.17440512 ms. Total 17.37440512 ms.
expect_value "demo 1 device iteration" iteration_time_s 0.01737440512 1e-9 run --model demo --batch 32 --devices-per-node 1
expect_value "demo 1 device forward" forward_time_s 0.0061 1e-9 run --model demo --batch 32 --devices-per-node 1
expect_value "demo 1 device backward" backward_time_s 0.0101 1e-9 run --model demo --batch 32 --devices-per-node 1
expect_value "demo 1 device throughput" throughput_samples_per_s 1841.79 1e-4 run --model demo --batch 32 --devices-per-node 1
# Two devices through one switch (tests/cli/data/pair.ini: 10 GB/s and 2.5 us per hop), overlap
# off, one bucket: ring allreduce of 84 MiB = 88080384 B, segments of 44040192 B. Each of the
# 2(n-1) = 2 steps moves a segment over the two-hop route: 5 us + 44040192 B / 10 GB/s =
# 4409.0192 us; the reduce-scatter step also sums a segment at the demo's 300 GB/s: 146.80064 us.
# Allreduce: 8964.83904 us after the backward pass; iteration 6.1 + 10.1 + 8.96483904 +
# 1.17440512 = 26.33924416 ms.
PAIR="$(dirname "$0")/data/pair.ini"
expect_value "demo 2 devices no overlap" iteration_time_s 0.02633924416 1e-9 run --model demo --batch 32 --system "$PAIR" --overlap off --bucket-mib 1000 --net-model analytic --allreduce ring
expect_value "demo 2 devices exposed comm" exposed_comm_time_s 0.00896483904 1e-9 run --model demo --batch 32 --system "$PAIR" --overlap off --bucket-mib 1000 --net-model analytic --allreduce ring
expect_value "flow model agrees with analytic" iteration_time_s 0.02633924416 0.005 run --model demo --batch 32 --system "$PAIR" --overlap off --bucket-mib 1000 --net-model flow
# Overlap never makes an iteration slower.
t_off=$("$DTSIM" run --model demo --devices-per-node 8 --overlap off --json | json_num iteration_time_s)
t_on=$("$DTSIM" run --model demo --devices-per-node 8 --overlap on --json | json_num iteration_time_s)
awk -v a="$t_on" -v b="$t_off" 'BEGIN { exit !(a <= b) }' && ok "overlap on ($t_on s) <= off ($t_off s)" || bad "overlap on $t_on > off $t_off"

# One device standing for all (symmetric data parallel on the analytic network) is exact: the
# same iteration as simulating all 32 devices.
t_sym=$("$DTSIM" run --nodes 4 --net-model analytic --allreduce hierarchical --iterations 2 --json | json_num iteration_time_s)
t_all=$("$DTSIM" run --nodes 4 --net-model analytic --allreduce hierarchical --iterations 2 --symmetry off --json | json_num iteration_time_s)
[ -n "$t_sym" ] && [ "$t_sym" = "$t_all" ] && ok "symmetric run equals full run ($t_sym s)" || bad "symmetric $t_sym != full $t_all"

# Every strategy runs on the real stack and reports a positive iteration time.
for args in "--strategy dp" "--strategy ps --ps-placement cpu" "--strategy ps --ps-placement colocated --nodes 2 --ps-count 2" \
            "--strategy ps --ps-placement dedicated --ps-count 2 --nodes 2" "--strategy mp --split 50,100,150 --devices-per-node 4" \
            "--strategy pp --micro-batches 8 --schedule gpipe" "--strategy pp --schedule 1f1b --stages 4" \
            "--strategy hybrid --hybrid dp-pp --stages 4 --nodes 2" "--strategy hybrid --hybrid owt --model alexnet_owt --batch 128"; do
  t=$("$DTSIM" run $args --iterations 2 --json 2>"$TMP/err" | json_num iteration_time_s)
  awk -v t="$t" 'BEGIN { exit !(t > 0) }' && ok "run $args ($t s)" || bad "run $args: '$t' $(cat "$TMP/err")"
done

# A sweep takes --nodes as a list: one row per point.
n=$("$DTSIM" sweep --nodes 1,2 --net-model analytic --json 2>"$TMP/err" | wc -l)
[ "$n" -eq 2 ] && ok "sweep --nodes 1,2 gives 2 points" || bad "sweep --nodes list: $n rows $(cat "$TMP/err")"
n=$("$DTSIM" sweep --devices 1..8 --allreduces ring,tree --json 2>"$TMP/err" | wc -l)
[ "$n" -eq 8 ] && ok "sweep 4 device counts x 2 algorithms gives 8 points" || bad "sweep axes: $n rows $(cat "$TMP/err")"
expect_error "sweep device count not a multiple of a node" 2 sweep --devices 12
"$DTSIM" sweep --devices 1,2 --plot "$TMP/p.svg" --csv "$TMP/p.csv" >/dev/null 2>"$TMP/err" &&
  grep -q "<svg" "$TMP/p.svg" && grep -q "samples/s" "$TMP/p.svg" && [ "$(wc -l <"$TMP/p.csv")" -eq 3 ] &&
  ok "sweep writes an SVG plot with labelled axes and a CSV row per point" || bad "sweep outputs: $(cat "$TMP/err")"

# Parameter servers: any count, several per socket or device (docs/collectives.md).
for args in "--ps-count 8 --ps-placement cpu" "--ps-count 8 --ps-placement gpu" \
            "--ps-count 24 --ps-placement colocated" "--system piz-daint --ps-count 2 --ps-placement colocated"; do
  if "$DTSIM" run --model lenet5 --strategy ps --nodes 8 $args --iterations 1 --json >"$TMP/ps.json" 2>"$TMP/err" &&
     grep -q '"iteration_time_s"' "$TMP/ps.json"; then
    ok "ps $args on 8 nodes"
  else
    bad "ps $args on 8 nodes: $(cat "$TMP/err")"
  fi
done

# nccl:ALGO[/PROTO[/CHANNELS]] forces NCCL's algorithm (docs/nccl.md, "Forcing"); an algorithm
# the system cannot run is refused in one line.
expect_error "nccl:nvls without NVLink SHARP" 2 collective --system dgx-a100 --bytes 1M --algorithm nccl:nvls
expect_error "nccl:collnet-direct without SHARP" 2 collective --system dgx-a100 --nodes 2 --bytes 1M --algorithm nccl:collnet-direct
expect_error "unknown NCCL algorithm" 2 collective --system dgx-a100 --bytes 1M --algorithm nccl:bogus
expect_error "NCCL channels out of range" 2 collective --system dgx-a100 --bytes 1M --algorithm nccl:ring/simple/0
expect_error "run --allreduce nccl:nvls on A100" 2 run --model resnet50 --system dgx-a100 --nodes 2 --allreduce nccl:nvls --iterations 1
out=$("$DTSIM" collective --system dgx-a100 --bytes 64M --algorithm nccl:ring/ll128/4 --json 2>&1)
case $out in
  *'"algorithm":"nccl:ring/LL128/4"'*) ok "nccl:ring/ll128/4 runs 4 LL128 rings" ;;
  *) bad "nccl:ring/ll128/4: $out" ;;
esac

# --- outputs ----------------------------------------------------------------------------------
"$DTSIM" run --model demo --devices-per-node 4 --iterations 2 --trace "$TMP/t.json" --csv "$TMP/t.csv" >/dev/null 2>"$TMP/err" &&
  head -c 16 "$TMP/t.json" | grep -q '{"traceEvents":' && ok "trace written" || bad "trace: $(cat "$TMP/err")"
[ "$(ls "$TMP" | grep -c tmp-)" -eq 0 ] && ok "no temporary files left" || bad "temporary files left: $(ls "$TMP")"
head -1 "$TMP/t.csv" | grep -q "^task,name,kind" && ok "csv header" || bad "csv header"
cp "$TMP/t.json" "$TMP/t1.json"
"$DTSIM" run --model demo --devices-per-node 4 --iterations 2 --trace "$TMP/t.json" --csv "$TMP/t.csv" >/dev/null 2>&1
cmp -s "$TMP/t.json" "$TMP/t1.json" && ok "two runs give byte-identical traces" || bad "traces differ"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
