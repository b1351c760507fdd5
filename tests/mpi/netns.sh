#!/bin/sh
# The one-machine cluster test (labels mpi, netns): two network namespaces whose data links are
# shaped to 1 Gbit/s and 100 us one way (by dtsim-netwire, or netem, see
# scripts/netns-cluster.sh), Open MPI over TCP between them.
#
# Checked on every attempt: mpirun launches across the namespaces and every rank sees the other
# on another node; the calibration file loads in dtsim; every validation row of the ring
# allreduce is measured, predicted and run with the forced algorithm. Checked on the best of up
# to three attempts (each calibrates the cluster with no delay, then with the shaping, then
# validates):
#   - the fitted bandwidth within 10% of the shaping;
#   - the latency the shaping adds within 10% of the delay: the fitted latency of small
#     messages with 200 us of delay minus that with 100 us, calibrated alternately on the same
#     cluster, median of five pairs. The end-to-end latency also holds the software stack's
#     own and the wire's own cost of holding packets at all (10-20 us on a 2-core machine,
#     most likely its polling preempting a spinning rank), neither of which the shaping
#     sets; the difference from no delay to 100 us is printed too;
#   - the ring allreduce prediction within 15% of the measurement for 256 KiB and more
#     (geometric mean of the rows).
# The emulated links run on the same cores as the ranks, so a machine loaded by other work
# delays them by whole milliseconds: DTSIM_NETNS_STRICT=0 turns the accuracy failures into
# warnings there (bench/mpi prints the same figures), and so does shaping by tbf, the fallback
# without tun devices and netem (a token bucket bursts, and adds no delay). Needs root and
# ip netns; exits 77 (skipped) without them. The cluster is always removed (netns-cluster.sh
# traps EXIT).
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
# Sizes on both sides of Open MPI's TCP eager limit (64 KiB): below it a message is one
# transfer, above it a rendezvous adds a round trip, and the calibration fits both regimes.
SIZES=8,64,512,4K,16K,32K,128K,256K,1M,4M,8M
export OUT=$out MPIEXEC DTSIM_MPI SIZES

# One attempt (files $out.*, each attempt's replacing the last's) and the checks that hold on
# every attempt. The latency the shaping adds is read from calibrations of small messages with
# no delay, 100 us and 200 us, alternately on the same cluster (the wire restarted in
# between), five rounds, so that both sides of each difference see the same machine.
attempt() {
  status=0
  timeout 600 sh "$SCRIPTS/netns-cluster.sh" run 2 1gbit 100us -- sh -c '
    set -e
    echo "$DTSIM_NETNS_SHAPER $DTSIM_NETNS_DELAY" > "$OUT.shaper"
    for k in 1 2 3 4 5; do
      for d in 100us 200us 0; do
        sh "$SCRIPTS/netns-cluster.sh" shape 2 1gbit $d 2>/dev/null
        # Small messages on a loaded machine can time out of order (calibrate then refuses
        # to fit a bandwidth): measure again, up to three times.
        for try in 1 2 3; do
          timeout 100 "$MPIEXEC" $DTSIM_MPIRUN_ARGS -np 2 "$DTSIM_MPI" calibrate \
            --sizes 8,64,512,4K --reps 21 -o "$OUT.lat-$d.$k.ini" >/dev/null 2>"$OUT.err" && break
          [ "$try" -lt 3 ] || { cat "$OUT.err" >&2; exit 1; }
        done
      done
    done
    sh "$SCRIPTS/netns-cluster.sh" shape 2 1gbit 100us 2>/dev/null
    timeout 200 "$MPIEXEC" $DTSIM_MPIRUN_ARGS -np 2 "$DTSIM_MPI" calibrate \
      --sizes "$SIZES" --reps 7 -o "$OUT.ini" --csv "$OUT.points.csv"
    timeout 200 "$MPIEXEC" $DTSIM_MPIRUN_ARGS -np 2 "$DTSIM_MPI" validate --system "$OUT.ini" \
      --ops allreduce --algorithms ring --sizes 256K..8M --reps 5 --csv "$OUT.csv"
  ' || status=$?
  [ "$status" -eq 0 ] || { echo "the namespace cluster run failed ($status)"; return 1; }
  read -r shaper applied <"$out.shaper"
  "$SYSLOAD" "$out.ini" 1 || { echo "FAIL: the calibration file does not load"; exit 1; }
  grep -q "other-node" "$out.points.csv" || { echo "FAIL: the ranks were not on different nodes"; exit 1; }
  awk -F, 'NR > 1 && !($8 > 0 && $9 > 0 && $11 == "yes") { bad++ } END { exit bad > 0 }' "$out.csv" \
    || { echo "FAIL: validation rows not measured, predicted and forced"; exit 1; }
}

# The inter-node class of a calibration file: "B/s latency_ns" (latency of small messages).
fitted() {
  awk -F' = ' '
    /^\[inter\]/ { inter = 1 }
    inter && $1 == "bandwidth_GBps" { bw = $2 * 1e9 }
    inter && $1 == "description" {
      # "... X us end to end" or "... X us end to end from B B, Y us below": the latency of
      # the smallest messages, which carry no protocol round trip.
      n = split($2, w, " ")
      for (i = 2; i < n; i++) if (w[i] == "us" && (w[i + 1] == "below" || lat == "")) lat = w[i - 1] * 1e3
    }
    END { printf "%.6g %.6g\n", bw, lat }' "$1"
}

# The accuracy of the last attempt: prints the figures, returns 1 when one is off.
accuracy() {
  ok=0
  set -- $(fitted "$out.ini")
  bw=$1
  lats=""
  for k in 1 2 3 4 5; do
    for d in 0 100us 200us; do
      set -- $(fitted "$out.lat-$d.$k.ini")
      lats="$lats $2"
    done
  done
  awk -v bw="$bw" -v lats="$lats" -v rate="$RATE_BPS" -v delay="$DELAY_NS" \
      -v applied="$applied" '
    # Median of the K numbers a[1..K] (K odd), by insertion sort of a copy.
    function med(a, K,    b, i, j, t) {
      for (i = 1; i <= K; i++) b[i] = a[i]
      for (i = 2; i <= K; i++)
        for (j = i; j > 1 && b[j - 1] > b[j]; j--) { t = b[j]; b[j] = b[j - 1]; b[j - 1] = t }
      return b[(K + 1) / 2]
    }
    BEGIN {
    K = 5
    split(lats, l, " ")   # per pair k: l[3k-2] no delay, l[3k-1] 100 us, l[3k] 200 us
    for (k = 1; k <= K; k++) {
      up[k] = l[3 * k] - l[3 * k - 1]; from0[k] = l[3 * k - 1] - l[3 * k - 2]
      at0[k] = l[3 * k - 2]; at100[k] = l[3 * k - 1]; at200[k] = l[3 * k]
    }
    added = med(up, K); added0 = med(from0, K)
    printf "fitted bandwidth %.4g B/s (shaped %.4g, %+.1f%%)\n", bw, rate, 100 * (bw - rate) / rate
    bad = (bw < 0.9 * rate || bw > 1.1 * rate)
    if (bad) print "bandwidth not within 10% of the shaping"
    printf "fitted latency (small messages) %.1f us end to end at 100 us of delay, %.1f us at 200 us, %.1f us at none\n",
           med(at100, K) / 1e3, med(at200, K) / 1e3, med(at0, K) / 1e3
    printf "100 us more delay added %.1f us (%+.1f%%; pairs %.1f %.1f %.1f %.1f %.1f us); 100 us over none added %.1f us (the wire holding packets at all, not checked)\n",
           added / 1e3, 100 * (added - delay) / delay, up[1] / 1e3, up[2] / 1e3, up[3] / 1e3,
           up[4] / 1e3, up[5] / 1e3, added0 / 1e3
    if (applied ~ /none/)
      print "delay not applied (tbf: no wire and no netem): latency not checked"
    else if (added < 0.9 * delay || added > 1.1 * delay) {
      print "added latency not within 10% of the delay"; bad = 1
    }
    exit bad
  }' || ok=1
  g=$(awk -F, 'NR > 1 && $7 >= 262144 { s += ($9 > $8 ? log($9 / $8) : log($8 / $9)); n++ }
               END { printf "%.4f", exp(s / n) - 1 }' "$out.csv")
  echo "ring allreduce >= 256 KiB, geometric-mean error $(awk -v g="$g" 'BEGIN { printf "%.1f%%", 100 * g }')"
  awk -v g="$g" 'BEGIN { exit !(g <= 0.15) }' || { echo "ring allreduce prediction not within 15%"; ok=1; }
  return "$ok"
}

runs_failed=0
for a in 1 2 3; do
  echo "attempt $a"
  # A run that fails outright (a calibration that cannot fit on a loaded machine) counts as
  # a failed attempt; one that fails three times fails the test.
  if ! attempt; then runs_failed=$((runs_failed + 1)); continue; fi
  echo "shaped by $shaper"
  if accuracy; then echo "ok"; exit 0; fi
  # A token bucket is no alpha-beta link: its burst lets messages of some 100 KiB through
  # faster than the rate, and it adds no delay. Only the launch is checked then.
  if [ "$shaper" = tbf ]; then
    echo "warning: shaped by tbf (no /dev/net/tun or dtsim-netwire, no netem): accuracy not enforced"
    echo "ok"; exit 0
  fi
done
if [ "$runs_failed" -eq 3 ]; then
  echo "FAIL: the namespace cluster run failed in 3 attempts"; exit 1
fi
if [ "${DTSIM_NETNS_STRICT:-1}" = 0 ]; then
  echo "warning: accuracy not reached in 3 attempts (not enforced: DTSIM_NETNS_STRICT=0)"
  echo "ok"; exit 0
fi
echo "FAIL: accuracy not reached in 3 attempts (a loaded machine? DTSIM_NETNS_STRICT=0 makes it a warning)"
exit 1
