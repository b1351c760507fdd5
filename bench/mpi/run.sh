#!/bin/sh
# bench/mpi: the validation table of dtsim-mpi on this machine (shared memory) and on the
# one-machine namespace cluster (TCP over shaped veth links; needs root), with the error
# figures. Prints the markdown reports and leaves them, with the CSVs, in $OUT.
#   sh bench/mpi/run.sh [BUILD_DIR]      (default build/; OUT defaults to BUILD_DIR/bench-mpi)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
OUT=${OUT:-$build/bench-mpi}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=$build/dtsim-mpi
RANKS=${RANKS:-2}
SIZES=${SIZES:-1K..64M}

echo "== shared memory, $RANKS ranks on one node"
mpirun -np "$RANKS" --oversubscribe "$mpi" calibrate -o "$OUT/shm.ini" --csv "$OUT/shm-points.csv"
mpirun -np "$RANKS" --oversubscribe "$mpi" validate --system "$OUT/shm.ini" --sizes "$SIZES" \
  --csv "$OUT/shm.csv" --report "$OUT/shm.md" >/dev/null
cat "$OUT/shm.md"

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
  echo "== namespace cluster: skipped (needs root and iproute2)"
  exit 0
fi
echo
echo "== namespace cluster: 2 hosts, 1 Gbit/s links (TCP)"
export OUT mpi
sh "$root/scripts/netns-cluster.sh" run 2 1gbit 100us -- sh -c '
  mpirun $DTSIM_MPIRUN_ARGS -np 2 "$mpi" calibrate --sizes 8,64,512,1M,2M,4M,8M --reps 5 \
    -o "$OUT/netns.ini" --csv "$OUT/netns-points.csv"
  mpirun $DTSIM_MPIRUN_ARGS -np 2 "$mpi" validate --system "$OUT/netns.ini" --sizes 256K..16M \
    --reps 5 --csv "$OUT/netns.csv" --report "$OUT/netns.md" >/dev/null
  echo "shaping: $DTSIM_NETNS_RATE, delay $DTSIM_NETNS_DELAY"'
cat "$OUT/netns.md"
