#!/bin/sh
# bench/mpi: the validation table of dtsim-mpi on this machine (shared memory) and on the
# one-machine namespace cluster (TCP over links shaped by dtsim-netwire or tc; needs root),
# with the error figures. Prints the markdown reports and leaves them, with the CSVs, in $OUT.
#   sh bench/mpi/run.sh [BUILD_DIR]      (default build/; OUT defaults to BUILD_DIR/bench-mpi)
# RANKS (2) ranks share the machine's memory; HOSTS (2) namespaces form the cluster;
# CLUSTER=0 skips the cluster (bench/run-all.sh does, with SIZES=1K..64K).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
OUT=${OUT:-$build/bench-mpi}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=$build/dtsim-mpi
export DTSIM_NETWIRE=$build/dtsim-netwire
RANKS=${RANKS:-2}
SIZES=${SIZES:-1K..64M}

echo "== shared memory, $RANKS ranks on one node"
mpirun -np "$RANKS" --oversubscribe "$mpi" calibrate -o "$OUT/shm.ini" --csv "$OUT/shm-points.csv"
mpirun -np "$RANKS" --oversubscribe "$mpi" validate --system "$OUT/shm.ini" --sizes "$SIZES" \
  --csv "$OUT/shm.csv" --report "$OUT/shm.md" >/dev/null
cat "$OUT/shm.md"

if [ "${CLUSTER:-1}" = 0 ]; then
  echo "== namespace cluster: skipped (CLUSTER=0)"
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
  echo "== namespace cluster: skipped (needs root and iproute2)"
  exit 0
fi
HOSTS=${HOSTS:-2}
echo
echo "== namespace cluster: $HOSTS hosts, 1 Gbit/s and 100 us links (TCP)"
export OUT mpi HOSTS root
# Small messages with no delay, 100 us and 200 us of delay on the same cluster: the latency the
# shaping adds is the difference (tests/mpi/netns.sh says why 100 to 200 us is the fair one). Then the whole calibration (sizes on both sides of Open
# MPI's TCP eager limit, 64 KiB) and the validation.
sh "$root/scripts/netns-cluster.sh" run "$HOSTS" 1gbit 100us -- sh -c '
  sh "$root/scripts/netns-cluster.sh" shape "$HOSTS" 1gbit 0 2>/dev/null
  mpirun $DTSIM_MPIRUN_ARGS -np "$HOSTS" "$mpi" calibrate --sizes 8,64,512,4K --reps 21 \
    -o "$OUT/netns-base.ini" | grep other-node | sed "s/^/small messages, no delay: /"
  sh "$root/scripts/netns-cluster.sh" shape "$HOSTS" 1gbit 100us 2>/dev/null
  mpirun $DTSIM_MPIRUN_ARGS -np "$HOSTS" "$mpi" calibrate --sizes 8,64,512,4K --reps 21 \
    -o "$OUT/netns-small.ini" | grep other-node | sed "s/^/small messages, 100 us: /"
  sh "$root/scripts/netns-cluster.sh" shape "$HOSTS" 1gbit 200us 2>/dev/null
  mpirun $DTSIM_MPIRUN_ARGS -np "$HOSTS" "$mpi" calibrate --sizes 8,64,512,4K --reps 21 \
    -o "$OUT/netns-small-200.ini" | grep other-node | sed "s/^/small messages, 200 us: /"
  sh "$root/scripts/netns-cluster.sh" shape "$HOSTS" 1gbit 100us 2>/dev/null
  mpirun $DTSIM_MPIRUN_ARGS -np "$HOSTS" "$mpi" calibrate \
    --sizes 8,64,512,4K,16K,32K,128K,256K,1M,4M,8M --reps 7 -o "$OUT/netns.ini" \
    --csv "$OUT/netns-points.csv" | grep other-node | sed "s/^/all sizes, 100 us: /"
  mpirun $DTSIM_MPIRUN_ARGS -np "$HOSTS" "$mpi" validate --system "$OUT/netns.ini" \
    --sizes 256K..16M --reps 5 --csv "$OUT/netns.csv" --report "$OUT/netns.md" >/dev/null
  echo "shaping: $DTSIM_NETNS_RATE, delay $DTSIM_NETNS_DELAY, by $DTSIM_NETNS_SHAPER"
  # One training iteration replayed on the cluster: ResNet-18 gradients (47 MB) over 1 Gbit/s,
  # data parallel (ring allreduce of the buckets) and one parameter server; compute sleeps
  # (--sleep) so that the ranks leave the cores to their communication threads.
  for s in dp ps; do
    mpirun $DTSIM_MPIRUN_ARGS -np "$HOSTS" "$mpi" replay --fitted "$OUT/netns.ini" \
      --model resnet18 --batch 16 --system dgx1-v100 --strategy $s --iterations 3 --sleep \
      --trace "$OUT/replay-$s-sim.json" --measured-trace "$OUT/replay-$s-real.json" |
      grep "^last iteration" | sed "s/^/replay $s: /"
  done'
cat "$OUT/netns.md"
