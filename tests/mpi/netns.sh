#!/bin/sh
# The one-machine cluster test (labels mpi, netns): two network namespaces whose data links are
# shaped to 1 Gbit/s and 100 us one way (by dtsim-netwire, or netem, see
# scripts/netns-cluster.sh), Open MPI over TCP between them.
#
# Checked: mpirun launches across the namespaces and every rank sees the other on another node;
# the calibration file loads in dtsim; every validation row of the ring allreduce is measured,
# predicted and run with the forced algorithm. Printed, and enforced when DTSIM_NETNS_STRICT=1:
#   - the fitted bandwidth within 10% of the shaping;
#   - the latency the shaping added within 10% of the delay: the fitted latency of the shaped
#     cluster minus that of the same cluster calibrated with no delay (the end-to-end latency
#     also holds the software stack's, which no shaping sets);
#   - the ring allreduce prediction within 15% of the measurement for 256 KiB and more
#     (geometric mean of the rows, best of two tries).
# The emulated links run on the same 2 shared cores as the ranks: load from other processes
# (or an ASan build) delays them, so on a shared machine these figures are a benchmark
# (bench/mpi runs it), not a pass/fail property of the code.
# Needs root and ip netns; exits 77 (skipped) without them. The cluster is always removed
# (netns-cluster.sh traps EXIT).
set -eu
: "${MPIEXEC:?}" "${DTSIM_MPI:?}" "${WORKDIR:?}" "${SCRIPTS:?}" "${SYSLOAD:?}"
mkdir -p "$WORKDIR"
out=$WORKDIR/netns

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1; then
  echo "skipped: needs root, ip and tc"; exit 77
fi
if ! ip netns add dtsim-probe 2>/dev/null; then
  echo "skipped: network namespaces cannot be created here"; exit 77
fi
# Entering one needs a mount namespace of its own too (not possible in a chroot whose root is
# no mount point, for instance).
if ! ip netns exec dtsim-probe true 2>/dev/null; then
  ip netns del dtsim-probe
  echo "skipped: network namespaces cannot be entered here"; exit 77
fi
ip netns del dtsim-probe

RATE_BPS=125000000   # bytes/s of the shaping (1 Gbit/s)
DELAY_NS=100000      # 100 us
SIZES=8,64,512,1M,2M,4M,8M
export OUT=$out MPIEXEC DTSIM_MPI SIZES

# The same cluster with no delay: the software stack's own latency.
timeout 300 sh "$SCRIPTS/netns-cluster.sh" run 2 1gbit 0 -- sh -c '
  timeout 200 "$MPIEXEC" $DTSIM_MPIRUN_ARGS -np 2 "$DTSIM_MPI" calibrate \
    --sizes "$SIZES" --reps 7 -o "$OUT.base.ini"' >/dev/null \
  || { echo "FAIL: the namespace cluster run (no delay) failed"; exit 1; }

status=0
timeout 600 sh "$SCRIPTS/netns-cluster.sh" run 2 1gbit 100us -- sh -c '
  set -e
  echo "$DTSIM_NETNS_SHAPER $DTSIM_NETNS_DELAY" > "$OUT.shaper"
  timeout 200 "$MPIEXEC" $DTSIM_MPIRUN_ARGS -np 2 "$DTSIM_MPI" calibrate \
    --sizes "$SIZES" --reps 7 -o "$OUT.ini" --csv "$OUT.points.csv"
  # Two tries at most: the machine is shared, and a burst of load from elsewhere slows the
  # emulated links.
  for try in 1 2; do
    timeout 200 "$MPIEXEC" $DTSIM_MPIRUN_ARGS -np 2 "$DTSIM_MPI" validate --system "$OUT.ini" \
      --ops allreduce --algorithms ring --sizes 256K..8M --reps 5 --csv "$OUT.$try.csv"
  done
' || status=$?
[ "$status" -eq 0 ] || { echo "FAIL: the namespace cluster run failed ($status)"; exit 1; }
read -r shaper applied <"$out.shaper"
echo "shaped by $shaper"

"$SYSLOAD" "$out.ini" 1 || { echo "FAIL: the calibration file does not load"; exit 1; }
grep -q "other-node" "$out.points.csv" || { echo "FAIL: the ranks were not on different nodes"; exit 1; }
awk -F, 'NR > 1 && !($8 > 0 && $9 > 0 && $11 == "yes") { bad++ } END { exit bad > 0 }' "$out.1.csv" \
  || { echo "FAIL: validation rows not measured, predicted and forced"; exit 1; }

# The inter-node class of a calibration file: "B/s latency_ns".
fitted() {
  awk -F' = ' '
    /^\[inter\]/ { inter = 1 }
    inter && $1 == "bandwidth_GBps" { bw = $2 * 1e9 }
    inter && $1 == "description" { n = split($2, w, " "); for (i = 2; i <= n; i++) if (w[i] == "us") lat = w[i - 1] * 1e3 }
    END { printf "%.6g %.6g\n", bw, lat }' "$1"
}
read -r bw lat <<EOT
$(fitted "$out.ini")
EOT
read -r bw0 lat0 <<EOT
$(fitted "$out.base.ini")
EOT
strict=${DTSIM_NETNS_STRICT:-0}
shaping_ok=0
awk -v bw="$bw" -v lat="$lat" -v lat0="$lat0" -v rate="$RATE_BPS" -v delay="$DELAY_NS" \
    -v applied="$applied" 'BEGIN {
  printf "fitted bandwidth %.4g B/s (shaped %.4g, %+.1f%%)\n", bw, rate, 100 * (bw - rate) / rate
  bad = (bw < 0.9 * rate || bw > 1.1 * rate)
  if (bad) print "bandwidth not within 10% of the shaping"
  added = lat - lat0
  printf "fitted latency %.1f us end to end, %.1f us with no delay: the shaping added %.1f us (delay %.1f us, %+.1f%%)\n",
         lat / 1e3, lat0 / 1e3, added / 1e3, delay / 1e3, 100 * (added - delay) / delay
  if (applied ~ /none/)
    print "delay not applied (tbf: no wire and no netem): latency not checked"
  else if (added < 0.9 * delay || added > 1.1 * delay) {
    print "added latency not within 10% of the delay"; bad = 1
  }
  exit bad
}' || shaping_ok=1
if [ "$shaping_ok" -ne 0 ] && [ "$strict" = 1 ]; then echo "FAIL: fit not within 10% of the shaping"; exit 1; fi

best=""
for try in 1 2; do
  g=$(awk -F, 'NR > 1 && $7 >= 262144 { s += ($9 > $8 ? log($9 / $8) : log($8 / $9)); n++ }
               END { printf "%.4f", exp(s / n) - 1 }' "$out.$try.csv")
  echo "try $try: ring allreduce >= 256 KiB, geometric-mean error $(awk -v g="$g" 'BEGIN { printf "%.1f%%", 100 * g }')"
  if awk -v g="$g" 'BEGIN { exit !(g <= 0.15) }'; then best=$g; break; fi
done
if [ -z "$best" ]; then
  if [ "$strict" = 1 ]; then
    echo "FAIL: ring allreduce prediction not within 15%"; exit 1
  fi
  echo "warning: ring allreduce prediction not within 15% on this run (not enforced; set DTSIM_NETNS_STRICT=1)"
fi
[ "$shaping_ok" -eq 0 ] || echo "warning: fit not within 10% of the shaping on this run (not enforced; set DTSIM_NETNS_STRICT=1)"
echo "ok"
