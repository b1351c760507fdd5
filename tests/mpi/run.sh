#!/bin/sh
# Launch tests of dtsim-mpi, run by ctest (label mpi):
#   run.sh CASE RANKS
# with MPIEXEC, MPIEXEC_NUMPROC_FLAG, DTSIM_MPI (the binary), SYSLOAD (the system-file checker)
# and WORKDIR (scratch folder) in the environment. Every launch is bounded by `timeout`, so a
# hang fails the test instead of blocking the suite. Exit 77 means skipped.
set -eu

case_=$1
n=$2
: "${MPIEXEC:?}" "${MPIEXEC_NUMPROC_FLAG:?}" "${DTSIM_MPI:?}" "${DTSIM:?}" "${WORKDIR:?}"
mkdir -p "$WORKDIR"
out=$WORKDIR/$case_-$n
LIMIT=${DTSIM_MPI_TEST_TIMEOUT:-120}

fail() { echo "FAIL: $*" >&2; exit 1; }

# As root, Open MPI wants --allow-run-as-root (the environment also allows it): given here so
# that the launches are the ones the README shows.
ROOT_FLAG=
[ "$(id -u)" -eq 0 ] && ROOT_FLAG=--allow-run-as-root

launch() { # launch RANKS ARGS...: mpirun with the test's options; stdout/stderr to $out.*
  r=$1; shift
  timeout "$LIMIT" "$MPIEXEC" $ROOT_FLAG "$MPIEXEC_NUMPROC_FLAG" "$r" --oversubscribe \
    "$DTSIM_MPI" "$@" >"$out.stdout" 2>"$out.stderr"
}

# A bad launch must end with a non-zero status within the time limit (timeout's 124 is a hang)
# and print the expected message exactly once.
expect_one_message() { # STATUS PATTERN
  status=$1 pattern=$2
  [ "$status" -ne 0 ] || fail "bad launch exited 0"
  [ "$status" -ne 124 ] || fail "bad launch hung (killed after ${LIMIT}s)"
  count=$(grep -c -- "$pattern" "$out.stderr" || true)
  [ "$count" -eq 1 ] || { cat "$out.stderr" >&2; fail "expected one message '$pattern', got $count"; }
  echo "ok: exit $status, one message: $(grep -- "$pattern" "$out.stderr")"
}

# The replay printed ROWS iteration rows, each with a positive measured and simulated time.
check_replay_rows() { # ROWS
  awk -v want="$1" '/^iteration +measured_ms/ { on = 1; next }
       on && /^[0-9]+ / { rows++; if (!($2 > 0 && $3 > 0)) { print "bad row: " $0; bad = 1 } }
       END { if (rows != want) print rows + 0 " iteration rows, expected " want; exit bad || rows != want }' \
    "$out.stdout" || fail "iteration rows"
  grep -q '^last iteration: measured [0-9.]* ms, simulated [0-9.]* ms' "$out.stdout" \
    || fail "no last-iteration line"
}

# json_has FILE PHASE NAME [THREAD]: the Chrome trace FILE holds an event of phase PHASE whose
# name (or, for metadata, whose args.name) starts with NAME, on a thread whose name starts with
# THREAD. Parses the file, so it also fails on invalid JSON.
json_has() {
  python3 - "$@" <<'PY'
import json, sys
path, ph, name = sys.argv[1:4]
thread = sys.argv[4] if len(sys.argv) > 4 else None
events = json.load(open(path))["traceEvents"]
threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
           if e.get("ph") == "M" and e.get("name") == "thread_name"}
def label(e):
    return e.get("args", {}).get("name", "") if ph == "M" else e.get("name", "")
sys.exit(0 if any(e.get("ph") == ph and label(e).startswith(name) and
                  (thread is None or threads.get((e["pid"], e.get("tid")), "").startswith(thread))
                  for e in events) else 1)
PY
}

# Both traces written and valid JSON.
check_traces() {
  for t in sim meas; do
    [ -s "$out.$t.json" ] || fail "no $t trace"
    python3 -m json.tool "$out.$t.json" >/dev/null || fail "$t trace is not valid JSON"
    grep -q '"traceEvents"' "$out.$t.json" || fail "$t trace is not a trace"
  done
}

case "$case_" in
  calibrate)
    launch "$n" calibrate --sizes 64,4K,64K,1M --reps 5 --warmup 1 -o "$out.ini" --csv "$out.csv" \
      || { cat "$out.stderr" >&2; fail "calibrate failed"; }
    cat "$out.stdout"
    # One CSV row per pair and size (n(n-1)/2 pairs, 4 sizes), and one per size for the
    # exchanges of all ranks at once (every rank runs on this one machine).
    rows=$(($(wc -l <"$out.csv") - 1))
    want=$(((n * (n - 1) / 2 + 1) * 4))
    [ "$rows" -eq "$want" ] || fail "$rows measured points, expected $want"
    [ "$(grep -c ',exchange$' "$out.csv")" -eq 4 ] || fail "expected 4 exchange points"
    # Only rank 0 prints the table.
    [ "$(grep -c '^locality' "$out.stdout")" -eq 1 ] || fail "the table was printed more than once"
    "$SYSLOAD" "$out.ini" "$n" || fail "the calibration file does not load"
    # And dtsim itself simulates a collective on it.
    "$DTSIM" collective --system "$out.ini" --nodes 2 --algorithm ring --bytes 1M --json \
      || fail "dtsim collective does not load the calibration file"
    ;;
  validate)
    launch "$n" validate --sizes 4K,64K,1M --reps 3 --warmup 1 --csv "$out.csv" --report "$out.md" \
      || { cat "$out.stderr" "$out.stdout" >&2; fail "validate failed"; }
    cat "$out.stdout"
    # Rows expected: the 12 algorithms of the table times 3 sizes (with a power-of-two rank
    # count; otherwise the recursive-doubling allgather is skipped).
    algos=12
    case "$n" in 2|4|8|16) ;; *) algos=11 ;; esac
    rows=$(($(wc -l <"$out.csv") - 1))
    [ "$rows" -eq $((algos * 3)) ] || fail "$rows rows, expected $((algos * 3))"
    # Every row measured and predicted (positive times) and run with the forced algorithm.
    awk -F, 'NR > 1 && !($8 > 0 && $9 > 0 && $11 == "yes") { bad++; print "bad row: " $0 }
             END { exit bad > 0 }' "$out.csv" || fail "rows not measured, not predicted or not forced"
    grep -q '^| all | all |' "$out.md" || fail "the report has no summary"
    ;;
  sweep)
    # The points spread over the ranks come back in order, the same as `dtsim sweep` prints
    # them (all but sim_wall_s, the wall-clock time of each simulation).
    launch "$n" sweep --model resnet50 --system dgx1-v100 --devices 1,2,4,8,16 \
      --strategies dp,ps --json || { cat "$out.stderr" >&2; fail "sweep failed"; }
    "$DTSIM" sweep --model resnet50 --system dgx1-v100 --devices 1,2,4,8,16 --strategies dp,ps \
      --json >"$out.ref" 2>/dev/null || fail "dtsim sweep failed"
    [ "$(wc -l <"$out.stdout")" -eq 10 ] || { cat "$out.stdout"; fail "expected 10 points"; }
    strip() { sed 's/"sim_wall_s":[0-9.e+-]*,\{0,1\}//' "$1"; }
    strip "$out.stdout" >"$out.a"
    strip "$out.ref" >"$out.b"
    cmp -s "$out.a" "$out.b" || { diff "$out.a" "$out.b" | head -5; fail "differs from dtsim sweep"; }
    echo "ok: 10 points in order, the same as dtsim sweep"
    ;;
  search)
    # The candidates spread over the ranks come back in order: the same ranking, JSON rows and
    # CSV, byte for byte, as `dtsim search` on two threads.
    args="--model resnet50 --system dgx1-v100 --nodes 2 --top 6 --json"
    launch "$n" search $args --csv "$out.csv" || { cat "$out.stderr" >&2; fail "search failed"; }
    "$DTSIM" search $args --jobs 2 --csv "$out.ref.csv" >"$out.ref" 2>/dev/null || fail "dtsim search failed"
    [ "$(wc -l <"$out.stdout")" -eq 6 ] || { cat "$out.stdout"; fail "expected 6 rows"; }
    cmp -s "$out.stdout" "$out.ref" || { diff "$out.stdout" "$out.ref" | head -5; fail "ranking differs from dtsim search"; }
    cmp -s "$out.csv" "$out.ref.csv" || { diff "$out.csv" "$out.ref.csv" | head -5; fail "csv differs from dtsim search"; }
    echo "ok: 6 rows and $(($(wc -l <"$out.csv") - 1)) csv rows, the same as dtsim search"
    # A transformer: the 3d candidates spread alike (one node: its frameworks and offload axes,
    # no sharding groups).
    args="--model gpt3-1.7b --system dgx-a100 --nodes 1 --global-batch 32 --precision bf16 --top 4 --json"
    launch "$n" search $args || { cat "$out.stderr" >&2; fail "3d search failed"; }
    "$DTSIM" search $args >"$out.ref" 2>/dev/null || fail "dtsim search (3d) failed"
    [ "$(wc -l <"$out.stdout")" -eq 4 ] || { cat "$out.stdout"; fail "expected 4 rows of the 3d search"; }
    cmp -s "$out.stdout" "$out.ref" || { diff "$out.stdout" "$out.ref" | head -5; fail "3d ranking differs from dtsim search"; }
    echo "ok: 4 rows of a 3d search, the same as dtsim search"
    ;;
  readme)
    # The README's launches. Arrays of 512 KiB and more were grown with mremap, which Open MPI
    # 4.1's memory hooks break (exit 139, as root in particular): 65536 micro-batches make the
    # pipeline's task arrays that big. The points and the ranking are dtsim's, byte for byte.
    strip() { sed 's/"sim_wall_s":[0-9.e+-]*,\{0,1\}//' "$1"; }
    args="--model lenet5 --strategy pp --batch 65536 --micro-batches 65536 --devices 2,4 --json"
    launch "$n" sweep $args || { cat "$out.stderr" >&2; fail "sweep of 65536 micro-batches failed"; }
    "$DTSIM" sweep $args >"$out.ref" 2>/dev/null || fail "dtsim sweep failed"
    [ "$(wc -l <"$out.stdout")" -eq 2 ] || { cat "$out.stdout"; fail "expected 2 points"; }
    strip "$out.stdout" >"$out.a"
    strip "$out.ref" >"$out.b"
    cmp -s "$out.a" "$out.b" || { diff "$out.a" "$out.b" | head -5; fail "differs from dtsim sweep"; }
    echo "ok: sweep of 65536 micro-batches on 2 and 4 devices, the same as dtsim sweep"
    args="--model resnet50 --nodes 16 --json"
    launch "$n" search $args || { cat "$out.stderr" >&2; fail "search --nodes 16 failed"; }
    "$DTSIM" search $args --jobs 2 >"$out.ref" 2>/dev/null || fail "dtsim search failed"
    [ "$(wc -l <"$out.stdout")" -eq 10 ] || { cat "$out.stdout"; fail "expected the top 10 rows"; }
    cmp -s "$out.stdout" "$out.ref" || { diff "$out.stdout" "$out.ref" | head -5; fail "ranking differs from dtsim search"; }
    echo "ok: search of ResNet-50 on 16 nodes, 10 rows, the same as dtsim search"
    ;;
  stopped-rank)
    # A rank stopped by SIGSTOP once left the others waiting in a collective forever. With
    # DTSIM_MPI_TIMEOUT_S=10 the running rank ends the job after 10 s with one line (the
    # stopped rank, continued by mpirun to be ended, may print its own too).
    DTSIM_MPI_TIMEOUT_S=10 timeout "$LIMIT" "$MPIEXEC" $ROOT_FLAG "$MPIEXEC_NUMPROC_FLAG" "$n" \
      --oversubscribe "$DTSIM_MPI" replay --model resnet18 --batch 16 --iterations 300 \
      >"$out.stdout" 2>"$out.stderr" &
    tp=$!
    sleep 3
    mp=$(ps -o pid= --ppid "$tp" | tr -d ' ')
    victim=$(ps -o pid= --ppid "${mp:-0}" | tail -n 1 | tr -d ' ')
    [ -n "$victim" ] || { wait "$tp"; fail "no rank found under mpirun"; }
    kill -STOP "$victim"
    t0=$(date +%s)
    status=0; wait "$tp" || status=$?
    kill -KILL "$victim" 2>/dev/null
    t=$(($(date +%s) - t0))
    [ "$status" -ne 0 ] || fail "the job exited 0"
    [ "$status" -ne 124 ] || fail "the job hung: killed after ${LIMIT}s"
    [ "$t" -le 40 ] || fail "the job took $t s to end after the stop"
    count=$(grep -c "the job is still running after 10 s (DTSIM_MPI_TIMEOUT_S)" "$out.stderr" || true)
    [ "$count" -ge 1 ] && [ "$count" -le "$n" ] ||
      { cat "$out.stderr" >&2; fail "expected a timeout line per rank at most, got $count"; }
    echo "ok: a stopped rank ended the job after $t s, status $status: $(grep -m 1 DTSIM_MPI_TIMEOUT_S "$out.stderr")"
    ;;
  sweep-nodes)
    # A list of node counts, as `dtsim sweep --nodes 1,2` takes it (issue 12: dtsim-mpi once
    # refused it): the same points, in the same order.
    launch "$n" sweep --model lenet5 --system dgx1-v100 --nodes 1,2 --json \
      || { cat "$out.stderr" >&2; fail "sweep --nodes 1,2 failed"; }
    "$DTSIM" sweep --model lenet5 --system dgx1-v100 --nodes 1,2 --json >"$out.ref" 2>/dev/null \
      || fail "dtsim sweep --nodes 1,2 failed"
    [ "$(wc -l <"$out.stdout")" -eq 2 ] || { cat "$out.stdout"; fail "expected 2 points"; }
    grep -q '"nodes":2' "$out.stdout" || fail "no 2-node point"
    strip() { sed 's/"sim_wall_s":[0-9.e+-]*,\{0,1\}//' "$1"; }
    strip "$out.stdout" >"$out.a"
    strip "$out.ref" >"$out.b"
    cmp -s "$out.a" "$out.b" || { diff "$out.a" "$out.b" | head -5; fail "differs from dtsim sweep"; }
    echo "ok: 2 points (1 and 2 nodes), the same as dtsim sweep"
    ;;
  replay)
    launch "$n" replay --model resnet18 --batch 16 --system dgx1-v100 --iterations 2 \
      --bucket-mib 10 --sleep --trace "$out.sim.json" --measured-trace "$out.meas.json" \
      || { cat "$out.stderr" >&2; fail "replay failed"; }
    cat "$out.stdout"
    # Both timelines written, with the buckets' collectives in them.
    check_traces
    for t in sim meas; do
      json_has "$out.$t.json" X 'allreduce bucket 0' comm || fail "$t trace has no bucket collective"
    done
    # Two iteration rows, and the measured iteration cannot be shorter than the compute it
    # waited through.
    check_replay_rows 2
    awk '/compute tasks/ { for (i = 1; i <= NF; i++) if ($i ~ /^\(/) c = substr($i, 2) }
         /^last iteration/ { m = $4 }
         END { if (!(m + 0 >= 0.999 * c)) { print "measured " m " ms < compute " c " ms"; exit 1 } }' \
      "$out.stdout" || fail "measured iteration shorter than its compute"
    ;;
  replay-ps)
    # Parameter servers on the host of node 0 (--ps-placement cpu): rank 0 plays the server and
    # a worker; every worker pushes each layer's gradient to it and pulls the parameters back.
    launch "$n" replay --model resnet18 --batch 16 --system dgx1-v100 --strategy ps \
      --iterations 2 --sleep --trace "$out.sim.json" --measured-trace "$out.meas.json" \
      || { cat "$out.stderr" >&2; fail "ps replay failed"; }
    cat "$out.stdout"
    check_replay_rows 2
    check_traces
    # The push/pull tasks on the workers' comm tracks, the server's aggregations, in the
    # measured trace; the aggregations in the simulated one.
    json_has "$out.meas.json" X 'push/pull fc' comm || fail "no push/pull of fc on a comm track"
    json_has "$out.meas.json" X 'aggregate fc' 'aggregate and update' \
      || fail "no aggregation on the measured server"
    json_has "$out.sim.json" X aggregate 'aggregate and update' \
      || fail "no aggregation in the simulated trace"
    # Every worker's 41 push/pull tasks per iteration (ResNet-18's 21 weight layers and 20
    # batch norms) are in the measured trace: n ranks x 41 x 2 iterations.
    pushes=$(grep -o '"name":"push/pull [^"]*"' "$out.meas.json" | wc -l)
    [ "$pushes" -eq $((n * 41 * 2)) ] || fail "$pushes push/pull spans, expected $((n * 41 * 2))"
    # The first iteration starts from nothing: it cannot be shorter than its compute.
    awk '/compute tasks/ { for (i = 1; i <= NF; i++) if ($i ~ /^\(/) c = substr($i, 2) }
         /^0 / { m = $2 }
         END { if (!(m + 0 >= 0.999 * c)) { print "measured " m " ms < compute " c " ms"; exit 1 } }' \
      "$out.stdout" || fail "measured first iteration shorter than its compute"
    ;;
  replay-ps-dedicated)
    # Dedicated servers: the last rank serves, the ranks before it are the workers.
    launch "$n" replay --model resnet18 --batch 16 --system dgx1-v100 --strategy ps \
      --ps-placement dedicated --iterations 2 --sleep --measured-trace "$out.meas.json" \
      || { cat "$out.stderr" >&2; fail "ps replay with a dedicated server failed"; }
    cat "$out.stdout"
    check_replay_rows 2
    grep -q "($((n - 1)) worker(s) on 1 node(s))" "$out.stdout" || fail "expected $((n - 1)) workers"
    grep -q "^server 0 on rank $((n - 1)):" "$out.stdout" || fail "the server is not the last rank"
    json_has "$out.meas.json" X 'push/pull fc' comm || fail "no push/pull of fc on a comm track"
    # The server rank plays no worker: no process of its own but the server's.
    ! json_has "$out.meas.json" M "rank $((n - 1)) (measured)" || fail "the server rank replayed compute"
    ;;
  replay-refused)
    # A strategy whose communication has no counterpart: one line naming the task.
    status=0; launch "$n" replay --model resnet18 --strategy pp || status=$?
    expect_one_message "$status" "task 'activations mb0' (transfer, stream 'send activations' of gpu0 (stage 0)) cannot be replayed"
    # Dedicated servers need ranks of their own besides the workers.
    status=0; launch "$n" replay --model resnet18 --strategy ps --ps-placement dedicated \
      --ps-count "$n" || status=$?
    expect_one_message "$status" "launch W + $n ranks for W workers (at least $((n + 1)); got $n)"
    # Keys replay would ignore are refused by name.
    status=0; launch "$n" replay --model resnet18 --nodes 4 || status=$?
    expect_one_message "$status" "--nodes: dtsim-mpi replay takes its ranks and nodes from mpirun"
    status=0; launch "$n" replay --model resnet18 --json || status=$?
    expect_one_message "$status" "--json: dtsim-mpi replay writes a table"
    ;;
  one-rank)
    status=0; launch 1 calibrate || status=$?
    expect_one_message "$status" "needs at least 2 ranks"
    ;;
  mismatch)
    # MPMD launch: rank 0 and the others get different options.
    status=0
    timeout "$LIMIT" "$MPIEXEC" --oversubscribe "$MPIEXEC_NUMPROC_FLAG" 1 "$DTSIM_MPI" calibrate --reps 3 : \
      "$MPIEXEC_NUMPROC_FLAG" $((n - 1)) "$DTSIM_MPI" calibrate --reps 4 \
      >"$out.stdout" 2>"$out.stderr" || status=$?
    expect_one_message "$status" "was started with other arguments than rank 0"
    ;;
  unknown-algorithm)
    status=0; launch "$n" validate --ops allreduce --algorithms ring,butterfly-of-doom || status=$?
    expect_one_message "$status" "unknown allreduce algorithm 'butterfly-of-doom'"
    ;;
  bad-option)
    status=0; launch "$n" calibrate --sizes 1K,banana || status=$?
    expect_one_message "$status" "banana"
    # Bad input ends every rank cleanly: exit status 2 and no MPI_ABORT banner; with mpirun
    # --quiet (which drops mpirun's own note on the status), stderr is that one line.
    [ "$status" -eq 2 ] || fail "status $status, expected 2"
    grep -q MPI_ABORT "$out.stderr" && { cat "$out.stderr" >&2; fail "MPI_ABORT banner printed"; }
    status=0
    timeout "$LIMIT" "$MPIEXEC" $ROOT_FLAG --quiet "$MPIEXEC_NUMPROC_FLAG" "$n" --oversubscribe \
      "$DTSIM_MPI" calibrate --sizes 1K,banana >"$out.stdout" 2>"$out.stderr" || status=$?
    [ "$status" -eq 2 ] && [ "$(wc -l <"$out.stderr")" -eq 1 ] && [ ! -s "$out.stdout" ] ||
      { cat "$out.stderr" >&2; fail "--quiet: status $status, $(wc -l <"$out.stderr") lines"; }
    echo "ok: status 2, one line: $(cat "$out.stderr")"
    ;;
  files)
    # Options refused before anything is measured (the calibration takes minutes).
    status=0; launch "$n" validate --sizes 0 || status=$?
    expect_one_message "$status" "--sizes: 0 bytes is too small"
    [ "$status" -ne 2 ] && fail "validate --sizes 0: status $status, expected 2"
    status=0; launch "$n" validate --net-model x || status=$?
    expect_one_message "$status" "--net-model: unknown value 'x'"
    grep -q "calibrating" "$out.stdout" && fail "--net-model x was refused after calibrating"
    # The shared cluster keys validate cannot take are refused by name.
    status=0; launch "$n" validate --nodes 2 || status=$?
    expect_one_message "$status" "--nodes: dtsim-mpi validate takes its ranks and nodes from mpirun"
    status=0; launch "$n" validate --report "$WORKDIR/no/such/dir/r.md" || status=$?
    expect_one_message "$status" "--report: cannot write"
    status=0; launch "$n" calibrate -o "$WORKDIR/no/such/dir/s.ini" || status=$?
    expect_one_message "$status" "--output: cannot write"
    [ -s "$out.stdout" ] && fail "calibrate printed measurements before refusing -o"
    # A failing replay removes every rank's scratch folder.
    scratch=$out.tmp
    rm -rf "$scratch"; mkdir -p "$scratch"
    status=0; TMPDIR=$scratch launch "$n" replay --model resnet18 --strategy pp || status=$?
    expect_one_message "$status" "cannot be replayed"
    [ -z "$(ls "$scratch")" ] || fail "scratch folders left: $(ls "$scratch")"
    # ... and one that fails after the scratch folder is made (too few ranks for the servers).
    status=0
    TMPDIR=$scratch launch "$n" replay --model resnet18 --strategy ps --ps-placement dedicated \
      --ps-count "$n" || status=$?
    expect_one_message "$status" "launch W + $n ranks"
    [ -z "$(ls "$scratch")" ] || fail "scratch folders left: $(ls "$scratch")"
    echo "ok: no scratch folder left"
    # One rank dies while every rank holds its scratch folder (a replay calibrating): Open MPI
    # ends the others with SIGTERM, and no folder is left. A rank killed by SIGKILL cannot
    # clean up: the next dtsim-mpi started removes its folder.
    for sig in TERM KILL; do
      rm -rf "$scratch"; mkdir -p "$scratch"
      (
        status=0
        TMPDIR=$scratch launch "$n" replay --model resnet18 --strategy dp || status=$?
        echo "$status" >"$out.status"
      ) &
      job=$!
      # The folders are $TMPDIR/dtsim-mpi-HOST-PID-XXXXXX, one per rank.
      tries=0
      while [ "$(ls "$scratch" | grep -c '^dtsim-mpi-')" -lt "$n" ]; do
        tries=$((tries + 1))
        [ "$tries" -le 600 ] || { kill "$job"; fail "no $n scratch folders after 60 s"; }
        sleep 0.1
      done
      victim=$(ls "$scratch" | grep '^dtsim-mpi-' | head -n 1 |
        sed 's/^dtsim-mpi-.*-\([0-9][0-9]*\)-[^-]*$/\1/')
      kill -"$sig" "$victim"
      wait "$job"
      status=$(cat "$out.status")
      [ "$status" -ne 0 ] || fail "replay whose rank got SIG$sig exited 0"
      [ "$status" -ne 124 ] || fail "replay whose rank got SIG$sig hung"
      left=$(ls "$scratch" | grep '^dtsim-mpi-' || true)
      if [ "$sig" = KILL ]; then
        # Only the killed rank's folder; the next start removes it.
        [ "$(echo "$left" | grep -c -- "-$victim-")" -eq 1 ] && [ "$(echo "$left" | wc -l)" -eq 1 ] ||
          fail "after SIGKILL of rank pid $victim: folders left: $left"
        TMPDIR=$scratch launch 1 validate --sizes 0 || true
        left=$(ls "$scratch" | grep '^dtsim-mpi-' || true)
      fi
      [ -z "$left" ] || fail "a rank got SIG$sig: scratch folders left: $left"
      echo "ok: a rank got SIG$sig (exit $status), no scratch folder left"
    done
    # COMMAND --help works without mpirun.
    for c in calibrate validate replay sweep; do
      timeout "$LIMIT" "$DTSIM_MPI" $c --help >"$out.stdout" 2>"$out.stderr" || fail "$c --help: status $?"
      grep -q "^Usage:" "$out.stdout" || fail "$c --help printed no usage"
    done
    echo "ok: COMMAND --help without mpirun"
    ;;
  *)
    fail "unknown case $case_"
    ;;
esac
