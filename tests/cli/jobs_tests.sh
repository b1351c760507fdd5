#!/bin/sh
# Command-line tests of shared clusters: [job NAME] groups of a scenario file simulated
# together on one network (docs/shared-clusters.md). Usage: jobs_tests.sh PATH/TO/dtsim
# Each check prints one line; the last line counts passes and failures.
DTSIM=${1:?usage: jobs_tests.sh DTSIM}
case $DTSIM in /*) ;; *) DTSIM=$(pwd)/$DTSIM ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

. "$HERE/lib.sh"

# check NAME GOT WANT RELTOL
check() {
  if [ -n "$2" ] && near "$2" "$3" "$4"; then ok "$1 ($2, want $3)"; else bad "$1: got '$2', want $3"; fi
}
calc() { awk "BEGIN { printf \"%.17g\", $1 }"; }
# nth N : line N of stdin
nth() { sed -n "$1p"; }
# per_job : a run's JSON with each element of its jobs array on a line of its own
per_job() { sed 's/},{"iteration_time_s"/}\
{"iteration_time_s"/g'; }

LEAVES=$HERE/data/leaves.ini
# Two identical data-parallel jobs of the demo model (84 MiB of gradients: 4 + 16 + 64 MiB, one
# V100 per node, 64 samples each) with ring allreduces on 10 GB/s links. Job a on nodes 0 and
# 2, job b on 1 and 3: on a fat tree of 3-port switches at 2:1 (two nodes a leaf, one spine up)
# both rings cross the one spine link of each leaf; at 1:1 (one node a leaf, two spines) the
# destination picks the spine: a's traffic (to nodes 0 and 2) takes spine 0, b's (to 1 and 3)
# spine 1, and nothing is shared.
jobs_file() {   # jobs_file FILE TOPOLOGY OVERLAP
  cat >"$1" <<EOF
[scenario]
system = $LEAVES
nodes = 4
topology = $2

[job a]
model = demo
allreduce = ring
overlap = $3
node-list = 0,2

[job b]
model = demo
allreduce = ring
overlap = $3
node-list = 1,3
EOF
}
alone() {   # alone TOPOLOGY OVERLAP : one such job on two nodes by itself
  "$DTSIM" run --system "$LEAVES" --nodes 2 --topology "$1" --model demo --allreduce ring \
    --overlap "$2" --json | json_num iteration_time_s
}

# --- (a) disjoint links: each job as fast as alone ----------------------------------------------
jobs_file "$TMP/free.ini" fat-tree off
out=$("$DTSIM" run "$TMP/free.ini" --json)
t1=$(alone fat-tree off)
check "1:1 fat tree: job a as alone" "$(printf '%s' "$out" | per_job | json_num iteration_time_s | nth 1)" "$t1" 0.005
check "1:1 fat tree: job b as alone" "$(printf '%s' "$out" | per_job | json_num iteration_time_s | nth 2)" "$t1" 0.005

# Two 3-D jobs (TP 4 x PP 2 on two DGX H100 each) on a non-blocking fat tree: each as the same
# job alone with every device simulated.
TF='transformer:layers=8,hidden=2048,heads=16,seq=2048,vocab=32000'
printf '[scenario]\nsystem = dgx-h100\nnodes = 4\ntopology = fat-tree\n' >"$TMP/tf.ini"
for job in a b; do
  printf '[job %s]\nmodel = %s\nstrategy = 3d\nprecision = bf16\ntp = 4\npp = 2\nglobal-batch = 16\nnodes = 2\n' \
    "$job" "$TF" >>"$TMP/tf.ini"
done
out=$("$DTSIM" run "$TMP/tf.ini" --json)
t3=$("$DTSIM" run --system dgx-h100 --nodes 2 --topology fat-tree --strategy 3d --model "$TF" \
     --precision bf16 --tp 4 --pp 2 --global-batch 16 --symmetry off --json | json_num iteration_time_s)
check "3-D job a as alone" "$(printf '%s' "$out" | per_job | json_num iteration_time_s | nth 1)" "$t3" 0.005
check "3-D job b as alone" "$(printf '%s' "$out" | per_job | json_num iteration_time_s | nth 2)" "$t3" 0.005
printf '%s' "$out" | grep -q '"jobs":\[{.*"tokens_per_s"' && ok "3-D jobs report tokens_per_s" \
  || bad "3-D jobs: no tokens_per_s"

# Two pipelines (3-D, PP 2) whose stages sit under different leaves, job a on nodes 0 and 2, b
# on 1 and 3: at 1:1 their activations and gradients take spines of their own, and each job
# is as fast as alone (every device simulated); at 2:1 they share the spine link and are slower.
PP='transformer:layers=4,hidden=1024,heads=16,seq=1024,vocab=32000'
pp_file() {   # pp_file FILE TOPOLOGY
  printf '[scenario]\nsystem = %s\nnodes = 4\ntopology = %s\n' "$LEAVES" "$2" >"$1"
  for job in a:0,2 b:1,3; do
    printf '[job %s]\nmodel = %s\nstrategy = 3d\nprecision = fp16\npp = 2\nglobal-batch = 8\nnode-list = %s\n' \
      "${job%%:*}" "$PP" "${job#*:}" >>"$1"
  done
}
for topo in fat-tree fat-tree:2; do
  pp_file "$TMP/pp.ini" $topo
  got=$("$DTSIM" run "$TMP/pp.ini" --json | per_job | json_num iteration_time_s | nth 2)
  t=$("$DTSIM" run --system "$LEAVES" --nodes 2 --topology $topo --strategy 3d --model "$PP" \
      --precision fp16 --pp 2 --global-batch 8 --symmetry off --json | json_num iteration_time_s)
  if [ $topo = fat-tree ]; then
    check "pipelines across leaves at 1:1: job b as alone" "$got" "$t" 0.005
  else
    awk -v a="$got" -v b="$t" 'BEGIN { exit !(a > b * 1.01) }' \
      && ok "pipelines across leaves at 2:1: job b slower than alone ($got > $t)" \
      || bad "pipelines at 2:1: $got not slower than alone $t"
  fi
done

# --- (b) a shared spine link: slower, by the closed form -----------------------------------------
# Without overlap every allreduce follows the backward pass and both jobs run theirs at once. A
# ring of two moves each bucket's S bytes as two steps of S/2 each way; alone a step's flow has
# the 10 GB/s of its links, shared it has half the spine link: every byte of the 84 MiB takes
# 1/5e9 s instead of 1/1e10 s, so the iteration is longer by 88080384 / 1e10 s = 8.808 ms. The
# job alone on two nodes has them under one leaf (two a leaf at 2:1): shared, each of the four
# steps (two a bucket, two buckets) also crosses the two spine links, 4 x 2 x 1 us = 8 us.
jobs_file "$TMP/shared.ini" fat-tree:2 off
out=$("$DTSIM" run "$TMP/shared.ini" --json)
t=$(alone fat-tree:2 off)
want=$(calc "$t + 88080384 / 1e10 + 8e-6")
for k in 1 2; do
  got=$(printf '%s' "$out" | per_job | json_num iteration_time_s | nth $k)
  awk -v a="$got" -v b="$t" 'BEGIN { exit !(a > b) }' && ok "2:1 job $k slower than alone ($got > $t)" \
    || bad "2:1 job $k: $got not slower than alone $t"
  check "2:1 job $k: alone + 84 MiB / 10 GB/s + 8 us" "$got" "$want" 1e-9
done
# With overlap the first bucket (the 64 MiB of fc, ready 2.2 ms into the 20.2 ms backward pass)
# takes 13.4 ms shared and still ends under the backward pass; only the last bucket (conv1 and
# conv2: 20 MiB) follows it, and it takes 20971520 / 1e10 s = 2.097 ms longer (and its two
# steps 2 x 2 x 1 us of spine links).
jobs_file "$TMP/shared-on.ini" fat-tree:2 on
got=$("$DTSIM" run "$TMP/shared-on.ini" --json | per_job | json_num iteration_time_s | nth 1)
t=$(alone fat-tree:2 on)
check "2:1 with overlap: alone + 20 MiB / 10 GB/s + 4 us" "$got" "$(calc "$t + 20971520 / 1e10 + 4e-6")" 1e-9
awk -v a="$got" -v b="$t" 'BEGIN { exit !(a <= b + 88080384 / 1e10) }' \
  && ok "2:1 with overlap: at most alone + 84 MiB / 10 GB/s" || bad "2:1 with overlap: $got too slow"

# --- (d) the JSON jobs array, the text sections and the trace ------------------------------------
out=$("$DTSIM" run "$TMP/shared.ini" --json)
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && ok "--json: one object" || bad "--json: not one line"
printf '%s' "$out" | grep -q '^{"jobs":\[{"iteration_time_s":' && ok "--json: a jobs array" \
  || bad "--json: no jobs array: $(printf '%s' "$out" | head -c 200)"
printf '%s' "$out" | grep -q '"name":"a","nodes":\[0,2\],"model":"demo","strategy":"dp"' \
  && ok "--json: job a's name, nodes, model, strategy" || bad "--json: job a's keys"
printf '%s' "$out" | grep -q '"name":"b","nodes":\[1,3\]' && ok "--json: job b's nodes" \
  || bad "--json: job b's nodes"
check "--json: devices of the cluster" "$(printf '%s' "$out" | sed 's/.*\],"devices":\([0-9]*\).*/\1/')" 4 0
check "--json: 2 devices a job" "$(printf '%s' "$out" | per_job | json_num devices | head -1)" 2 0
check "--json: 128 samples a job" "$(printf '%s' "$out" | per_job | json_num samples_per_iteration | nth 2)" 128 0
runs "text: a section per job" "job b: demo, dp, 2 devices on nodes 1,3 of 4" run "$TMP/shared.ini"
"$DTSIM" run "$TMP/shared.ini" --trace "$TMP/t1.json" >/dev/null 2>&1
cp "$TMP/t1.json" "$TMP/t0.json"
"$DTSIM" run "$TMP/shared.ini" --trace "$TMP/t1.json" >/dev/null 2>&1
grep -q '"name":"job a: gpu0 (node 0)"' "$TMP/t1.json" && grep -q '"name":"job b: gpu1 (node 1)"' "$TMP/t1.json" \
  && ok "trace: processes named after the jobs" || bad "trace: no job processes"
grep -q '"name":"leaf0-spine0 GB/s"' "$TMP/t1.json" && ok "trace: the shared spine link's counter" \
  || bad "trace: no counter of the shared spine link"
(cd "$TMP" && "$DTSIM" run shared.ini --trace t3.json --trace-links 4 --csv tasks.csv \
  --link-heatmap links.svg >/dev/null 2>&1) && [ -s "$TMP/tasks.csv" ] && [ -s "$TMP/links.svg" ] \
  && ok "--csv and --link-heatmap of jobs" || bad "--csv and --link-heatmap of jobs"
cmp -s "$TMP/t0.json" "$TMP/t1.json" && ok "trace: the same twice" || bad "trace differs between runs"
runs "the example file runs" "job b: vgg16, dp, 256 devices on nodes 16-31,48-63 of 64" \
  run "$HERE/../../examples/shared-cluster.ini"

# --- (c) refusals: one line naming file, line and key, exit 2 ------------------------------------
base="[scenario]
system = $LEAVES
nodes = 4
"
jf() { printf '%s%s\n' "$base" "$2" >"$TMP/$1"; }
jf overlap.ini "[job a]
model = demo
node-list = 0-2
[job b]
model = demo
node-list = 2,3"
refused "overlapping node lists" "overlap.ini:9: [job b] node-list: node 2 is also job a's" run overlap.ini
jf many.ini "[job a]
model = demo
nodes = 3
[job b]
model = demo
nodes = 2"
refused "more nodes than the cluster" "many.ini:9: [job b] nodes: 2 nodes, but 1 of the cluster's 4 are left" run many.ini
jf range.ini "[job a]
model = demo
node-list = 0,4"
refused "node list out of range" "range.ini:6: [job a] node-list: node 4 is out of range" run range.ini
jf cluster-key.ini "[job a]
model = demo
nodes = 2
topology = fat-tree:2"
refused "a cluster key in a job" "cluster-key.ini:7: [job a] topology: belongs to [scenario]" run cluster-key.ini
jf job-key.ini "model = demo
[job a]
model = demo
nodes = 2"
refused "a job key in [scenario]" "job-key.ini:4: [scenario] model: describes a job" run job-key.ini
refused "a job option" "--batch: describes a job" run "$TMP/shared.ini" --batch 8
jf unknown.ini "[job a]
model = demo
nodes = 2
colour = red"
refused "an unknown key in a job" "unknown.ini:7: [job a] colour: unknown key" run unknown.ini
jf symmetry.ini "[job a]
model = demo
nodes = 2
symmetry = on"
refused "symmetry on in a job" "symmetry.ini:7: [job a] symmetry: on folds" run symmetry.ini
refused "--symmetry on with jobs" "--symmetry: the jobs of" run "$TMP/shared.ini" --symmetry on
jf nonodes.ini "[job a]
model = demo"
refused "a job without nodes" "nonodes.ini:4: [job a]: give the job's nodes" run nonodes.ini
jf ps.ini "[job a]
model = demo
nodes = 2
strategy = ps"
refused "parameter servers on a shared cluster" "ps.ini:7: [job a] strategy: ps does not share" run ps.ini
refused "jobs in a sweep" "[job a]: several jobs on one cluster are simulated by \`dtsim run\` only" \
  sweep "$TMP/shared.ini" --nodes 1,2
refused "jobs in a search" "(sweep, search and collective take the one job of [scenario])" \
  search "$TMP/shared.ini"

echo "passed $pass, failed $fail"
[ "$fail" -eq 0 ]
