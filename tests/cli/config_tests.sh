#!/bin/sh
# Command-line checks of the shared configuration and of the defects of issue 12, item 4:
# every catalog entry runs or describes, precisions a device lacks are refused naming it,
# micro-batches that do not divide the batch are refused, `--optimizer sgd` is plain SGD in run
# and describe alike, `dtsim collective` takes a scenario file, --device and --precision, keys
# and options that do not apply are refused naming FILE:LINE or the option, and
# `sweep --strict` exits 2 on a point that does not fit.
# Usage: config_tests.sh PATH/TO/dtsim. Each check prints one line; the last counts them.
DTSIM=${1:?usage: config_tests.sh DTSIM}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

. "$(dirname "$0")/lib.sh"

# json_num KEY < json : the value of a numeric key of a one-line JSON object (first match)
json_num() { sed -n "s/.*\"$1\":\([-0-9.eE+]*\).*/\1/p" | head -1; }

# --- every catalog entry, from the command line ---------------------------------------------
# Systems: each runs one iteration of LeNet-5 on one node, the header naming it.
systems=$("$DTSIM" list systems | awk 'NR > 1 { print $1 }')
n=0
for s in $systems; do
  n=$((n + 1))
  "$DTSIM" run --model lenet5 --system "$s" --nodes 1 >"$TMP/out" 2>"$TMP/err" \
    && grep -qF "of $s)" "$TMP/out" || bad "run --system $s: $(cat "$TMP/err")"
done
[ "$n" -ge 23 ] && ok "run --system: all $n listed systems run" || bad "only $n systems listed"
# Devices (the catalog's, not the device models listed after them): each runs LeNet-5.
devices=$("$DTSIM" list devices --json | sed -n 's/^{"kind":"device","name":"\([^"]*\)".*/\1/p')
n=0
for d in $devices; do
  n=$((n + 1))
  "$DTSIM" run --model lenet5 --device "$d" --nodes 1 >"$TMP/out" 2>"$TMP/err" \
    || bad "run --device $d: $(cat "$TMP/err")"
done
[ "$n" -ge 26 ] && ok "run --device: all $n listed devices run" || bad "only $n devices listed"
# Models: each describes, and describe's total equals the count `list models` prints.
n=0
"$DTSIM" list models --json | sed -n 's/^{"name":"\([^"]*\)".*"params":\([0-9]*\).*/\1 \2/p' >"$TMP/models"
while read -r m p; do
  n=$((n + 1))
  got=$("$DTSIM" describe "$m" --json 2>"$TMP/err" | json_num total_params)
  [ "$got" = "$p" ] || bad "describe $m: total_params '$got', list models says $p; $(cat "$TMP/err")"
done <"$TMP/models"
[ "$n" -ge 18 ] && ok "describe: all $n zoo models, totals as listed" || bad "only $n models listed"

# --- --system dgx2 (it once named a device the catalog lacked) -------------------------------
# A DGX-2 holds 16 V100 SXM3 32 GB behind NVSwitches (NVIDIA DGX-2 datasheet).
runs "run --system dgx2" "16 devices (1 node of dgx2)" run --model resnet50 --system dgx2 --nodes 1

# --- precisions the device lacks, named --------------------------------------------------------
# Volta (V100) has fp16 tensor cores but neither tf32 nor bf16 (both arrived with Ampere).
for p in tf32 bf16; do
  refused "run --precision $p on V100" "v100-sxm2-16gb has no $p" run --model lenet5 --precision $p
  refused "sweep --precision $p on V100" "v100-sxm2-16gb has no $p" sweep --model lenet5 --nodes 1,2 --precision $p
  refused "collective --precision $p on V100" "v100-sxm2-16gb has no $p" collective --bytes 1M --precision $p
  refused "run --precision $p on dgx2" "v100-sxm3-32gb has no $p" run --model lenet5 --system dgx2 --precision $p
  runs "run --precision $p on A100" "$p, 8 devices" run --model lenet5 --system dgx-a100 --nodes 1 --precision $p
done

# --- micro-batches must divide the batch --------------------------------------------------------
refused "pp: 5 micro-batches of a batch of 64" "--micro-batches" run --model lenet5 --batch 64 --micro-batches 5 --strategy pp
out=$("$DTSIM" run --model lenet5 --batch 64 --micro-batches 4 --strategy pp --nodes 1 --json 2>&1 | json_num samples_per_iteration)
[ "$out" = 64 ] && ok "pp: 4 micro-batches of 64 simulate 64 samples" || bad "pp 64/4: samples_per_iteration '$out'"

# --- --optimizer sgd is plain SGD in run and describe ------------------------------------------
# ResNet-50 has 25,557,032 parameters (He et al. 2016, as torchvision builds it). Momentum keeps
# one fp32 velocity per parameter, Adam two moments, plain SGD none: each step up adds
# 4 B x 25,557,032 = 102,228,128 B.
P=25557032
step=$((4 * P))
got=$("$DTSIM" describe resnet50 --json | json_num total_params)
[ "$got" = "$P" ] && ok "describe resnet50: $P parameters (published)" || bad "resnet50 total_params '$got', want $P"
for cmd in describe run; do
  for o in sgd momentum adam; do
    if [ $cmd = describe ]; then
      v=$("$DTSIM" describe resnet50 --optimizer $o --json | sed -n 's/.*"memory":{\(.*\)}.*/\1/p' | json_num total_bytes)
    else
      v=$("$DTSIM" run --model resnet50 --nodes 1 --optimizer $o --json | json_num memory_per_device_bytes)
    fi
    eval "${cmd}_$o=\$v"
  done
done
d1=$((describe_momentum - describe_sgd)); d2=$((describe_adam - describe_momentum))
[ "$d1" -eq $step ] && [ "$d2" -eq $step ] && ok "describe: sgd < momentum < adam by $step B each" \
  || bad "describe memory: momentum - sgd = $d1, adam - momentum = $d2, want $step"
r1=$((run_momentum - run_sgd)); r2=$((run_adam - run_momentum))
[ "$r1" -eq $step ] && [ "$r2" -eq $step ] && ok "run: sgd < momentum < adam by $step B each" \
  || bad "run memory: momentum - sgd = $r1, adam - momentum = $r2, want $step"
sgd_opt=$("$DTSIM" describe resnet50 --optimizer sgd --json | sed -n 's/.*"memory":{\(.*\)}.*/\1/p' | json_num optimizer_bytes)
[ "$sgd_opt" = 0 ] && ok "describe --optimizer sgd: no optimizer state" || bad "sgd optimizer_bytes '$sgd_opt'"

# --- dtsim collective: scenario file, --device, --precision ------------------------------------
printf '[scenario]\nsystem = dgx1-v100\nnodes = 2\nbytes = 1M\nalgorithm = ring\n' >"$TMP/coll.ini"
runs "collective coll.ini" "on 16 ranks (2 nodes x 8)" collective coll.ini
runs "collective coll.ini: bytes from the file" "1048576  ring" collective coll.ini
runs "collective --device" "allreduce" collective --bytes 1M --device a100-sxm4-80gb
runs "collective --device --precision bf16" "allreduce" collective --bytes 1M --device a100-sxm4-80gb --precision bf16
runs "collective: option over the file" "on 24 ranks (3 nodes x 8)" collective coll.ini --nodes 3

# --- keys and options that do not apply, named -----------------------------------------------
printf '[scenario]\nmodel = lenet5\nstrategy = dp\nps-count = 3\n' >"$TMP/ps-key.ini"
refused "scenario: a ps key with dp" "ps-key.ini:4: [scenario] ps-count" run ps-key.ini
printf '[scenario]\nnodes = 2\n\nmodel = lenet5\n' >"$TMP/model-key.ini"
refused "scenario: collective takes no model" "model-key.ini:4: [scenario] model" collective model-key.ini
printf '[scenario]\nmodel = lenet5\nnodes-list = 1,2\n' >"$TMP/sweep-key.ini"
refused "scenario: a sweep key in run" "sweep-key.ini:3: [scenario] nodes-list" run sweep-key.ini
printf '[scenario]\nmodel = lenet5\nstrategy = pp\nmicro-batches = 5\n' >"$TMP/mb.ini"
refused "scenario: micro-batches that do not divide, named by line" "mb.ini:4: [scenario] micro-batches" run mb.ini
refused "run --ps-count with dp" "--ps-count: applies to --strategy ps, not dp" run --ps-count 3
refused "run --micro-batches with dp" "--micro-batches" run --model lenet5 --micro-batches 4
refused "run --hybrid with dp" "--hybrid" run --model lenet5 --hybrid owt
refused "collective --model" "--model" collective --model lenet5
refused "sweep --op" "--op" sweep --op allreduce

# --- sweep --strict ------------------------------------------------------------------------------
# ResNet-50 keeps about 84.5 MB of activations per sample in fp32 (describe), 40 GiB at a
# batch of 512: it does not fit a 16 GiB V100.
refused "sweep --strict: a point that does not fit" "does not fit" sweep --model resnet50 --batch 512 --nodes 1 --strict
runs "sweep without --strict marks it" "does not fit" sweep --model resnet50 --batch 512 --nodes 1
runs "sweep --strict: points that fit" "lenet5 dp" sweep --model lenet5 --nodes 1,2 --strict

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
