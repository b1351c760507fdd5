#!/bin/sh
# The default scenario `make demo` runs after building: a data-parallel scaling study of
# ResNet-50 on DGX-1 (V100) nodes joined by InfiniBand EDR, 1 to 64 GPUs, ring against
# hierarchical allreduce, gradient buckets overlapping backward; then one 16-GPU iteration
# as a Chrome trace.
set -eu
cd "$(dirname "$0")/.."
DTSIM=./build/dtsim
COMMON="--model resnet50 --batch 64 --system dgx1-v100 --inter ib-edr --strategy dp --overlap on"
echo "== ResNet-50, data parallel, dgx1-v100 nodes with InfiniBand EDR: 1 to 64 GPUs =="
$DTSIM sweep $COMMON --devices 1,2,4,8,16,32,64 --allreduces ring,hierarchical \
  --csv demo.csv --plot demo.svg
echo
echo "== One iteration on 16 GPUs (2 nodes), hierarchical allreduce =="
$DTSIM run $COMMON --nodes 2 --allreduce hierarchical --trace demo-trace.json
echo
echo "Wrote demo.csv (one row per point), demo.svg (throughput and scaling efficiency; open it"
echo "in a browser) and demo-trace.json (open it in Perfetto or chrome://tracing)."
