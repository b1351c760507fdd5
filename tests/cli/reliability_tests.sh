#!/bin/sh
# Command-line tests of hostile sizes and shapes (issue 30): deep nesting, unbounded work and
# memory, decimal-comma locales, outputs that would overwrite inputs or each other, control
# characters written into files, errors reported before the long work and blamed on the right
# option. Usage: reliability_tests.sh PATH/TO/dtsim. Each check prints one line; the last counts.
DTSIM=${1:?usage: reliability_tests.sh DTSIM}
case $DTSIM in /*) ;; *) DTSIM=$(pwd)/$DTSIM ;; esac
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
. "$(dirname "$0")/lib.sh"

# err_has NAME PATTERN: the last message matches the fixed string PATTERN.
err_has() {
  if grep -qF -- "$2" "$TMP/err"; then ok "$1"; else bad "$1: $(head -c 300 "$TMP/err")"; fi
}
# Two measured rows for calibrate (fast with --generations 5 --no-loo).
printf 'model,framework,precision,device,system,nodes,devices_per_node,batch_per_device,strategy,ps_placement,measured,unit,source\nresnet50,x,fp32,v100-sxm2-16gb,dgx1-v100,1,1,32,fwd+bwd,none,110,ms,test\nvgg16,x,fp32,v100-sxm2-16gb,dgx1-v100,1,1,32,fwd+bwd,none,190,ms,test\n' >"$TMP/m.csv"
nest() { # N: N nested arrays around nothing
  awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "["; for (i = 0; i < n; i++) printf "]" }'
}

# --- 1. deep nesting -----------------------------------------------------------------------------
# json-glib recurses once per level; 100 000 levels overflowed the stack (status 139).
nest 100000 >"$TMP/deep.json"
expect_error "100000 nested arrays: describe" 2 describe "$TMP/deep.json"
# The 65th '[' opens level 65: line 1, column 65.
err_has "deep: file, line, column and the limit" "deep.json:1:65: not JSON: objects and arrays nested deeper than 64 levels"
expect_error "100000 nested arrays: run --model" 2 run --model "$TMP/deep.json"
nest 64 >"$TMP/deep64.json"
expect_error "64 levels pass the scan (and are no workload)" 2 describe "$TMP/deep64.json"
err_has "64 levels: not refused for depth" "deep64.json: not a JSON object"

# --- 3. work and memory bounded before the build --------------------------------------------------
# 3d, 2 devices as --pp 2, a global batch of 2^40 samples in micro-batches of 1: m = 2^40
# micro-batches, units = 2 m x 1 chunk x 2 stages = 2^42, each 3 tasks (compute, tensor-parallel
# part, send), plus 3 per chunk and stage (6), one update per stage (2) and the embedding
# allreduce (1), plus the embedding's and the LM head's two passes per micro-batch (4 m):
# 3 x 2^42 + 9 + 2^42 = 17592186044425 tasks in one iteration, past the 2^31 - 2 ids of one
# run. (It tried to allocate 8 TiB and aborted.)
expect_error "global batch 2^40 refused before the build" 2 run --strategy 3d --model gpt3-1.7b \
  --global-batch 1099511627776 --pp 2 --micro-batch 1 --devices-per-node 2 --iterations 1
err_has "the task count, worked out by hand" "17592186044425 tasks, more than the 2147483646"
# The same with 65536 samples: 3 x 2^18 + 9 + 2^18 = 1048585 tasks, at 128 bytes each 128.0 MiB.
expect_error "3d graph over --max-memory 10M" 2 run --strategy 3d --model gpt3-1.7b \
  --global-batch 65536 --pp 2 --micro-batch 1 --devices-per-node 2 --max-memory 10M --iterations 1
err_has "estimate and limit" "1048585 tasks would take about 128.0 MiB of memory, more than the limit of 10.0 MiB (--max-memory)"
# pp, LeNet-5 on 4 stages, 100000 micro-batches: per device 2M + 2 tasks, one input copy, 2M
# transfers on each of 3 links, one allreduce per stage: 4 (200002) + 1 + 600000 + 4 = 1400013
# tasks, 170.9 MiB.
expect_error "pp graph over --max-memory 64M" 2 run --model lenet5 --strategy pp --batch 100000 \
  --micro-batches 100000 --devices-per-node 4 --max-memory 64M --iterations 1
err_has "pp estimate" "1400013 tasks would take about 170.9 MiB"
# dp unfolded, LeNet-5 (13 layers, 5 of them with weights: conv1, conv2, fc1, fc2, fc3) on 8000
# devices: per device 13 forward + 13 backward-data + 5 backward-weights + step + update = 33
# tasks, 264000 in all, 32.2 MiB.
expect_error "unfolded dp over --max-memory 16M" 2 run --model lenet5 --nodes 1000 --symmetry off \
  --max-memory 16M --iterations 1
err_has "dp estimate" "264000 tasks would take about 32.2 MiB"
expect_error "--max-memory below 1 MiB" 2 run --model lenet5 --max-memory 1000
err_has "--max-memory named" "--max-memory"
# ps, LeNet-5 on 4 devices: at least (2 x 13 + 2) x 4 = 112 tasks a iteration, x 10000 iterations
# = 1120000 tasks, 136.7 MiB.
expect_error "ps graph over --max-memory 64M" 2 run --model lenet5 --strategy ps --devices-per-node 4 \
  --iterations 10000 --max-memory 64M
err_has "ps estimate" "1120000 tasks would take about 136.7 MiB"
# A scenario's list of 1 500 000 items (3 MB; a 60 MB one took 1.5 GB) is refused before it is
# split, by its count.
awk 'BEGIN { printf "[scenario]\nmodel = lenet5\nstrategy = pp\nsplit = 1"; for (i = 1; i < 1500000; i++) printf ",1"; printf "\n" }' >"$TMP/split.ini"
expect_error "1.5 million list items refused by count" 2 run "$TMP/split.ini"
err_has "the count and the bound" "a list of 1500000 items, more than the 1000001 a list may hold"

# A search's whole time is bounded (--max-time, default 600 s): LeNet-5 on 125000 nodes has
# some 440 candidates of a million devices each (seconds apiece on the analytic network); it
# once ran past 300 s. It stops after its first evaluations with the estimate, writing nothing.
mkdir "$TMP/srch"
expect_error "search estimated past --max-time 5" 2 search --model lenet5 --nodes 125000 \
  --global-batch 1000000 --net-model analytic --max-time 5 --csv "$TMP/srch/s.csv"
err_has "the estimate and the limit" "more than the limit of 5 s (--max-time)"
[ -z "$(ls -A "$TMP/srch")" ] && ok "search past its time: no CSV" || bad "left: $(ls -A "$TMP/srch")"
expect_error "--max-time below 0" 2 search --model lenet5 --max-time -1
err_has "--max-time named" "--max-time"
# The same search with no limit is accepted (its first evaluations only: timeout's 124).
timeout 3 "$DTSIM" search --model lenet5 --nodes 125000 --global-batch 1000000 \
  --net-model analytic --max-time 0 >/dev/null 2>&1
[ $? -eq 124 ] && ok "--max-time 0: no limit" || bad "--max-time 0 ended early"

# A graph no builder sizes beforehand (one weird trick, owt) stops at the limit: one line, exit
# 1, no temporary output left behind.
mkdir "$TMP/mem"
expect_error "owt graph past --max-memory 1M" 1 run --model resnet50 --strategy hybrid --hybrid owt \
  --iterations 2000 --max-memory 1M --csv "$TMP/mem/t.csv"
err_has "out of memory, the limit" "out of memory allocating"
[ -z "$(ls -A "$TMP/mem")" ] && ok "nothing left in the output folder" || bad "left: $(ls -A "$TMP/mem")"

# --- 4. decimal-comma locales ----------------------------------------------------------------------
# A German locale compiled into $TMP (localedef needs the locale sources of Debian's `locales`
# package, not root). Every file read by programs is the same byte for byte as in the C locale;
# a decimal comma once split CSV fields (0,000000000000) and SVG attributes (x="80,0").
mkdir "$TMP/loc"
if localedef -i de_DE -f UTF-8 "$TMP/loc/de_DE.UTF-8" >/dev/null 2>&1 &&
   [ "$(LOCPATH=$TMP/loc LC_ALL=de_DE.UTF-8 locale decimal_point 2>/dev/null)" = "," ]; then
  for lang in C de; do
    if [ $lang = C ]; then set -- env LC_ALL=C; else set -- env LOCPATH="$TMP/loc" LC_ALL=de_DE.UTF-8; fi
    "$@" "$DTSIM" run --model lenet5 --csv "$TMP/run-$lang.csv" >/dev/null 2>&1
    "$@" "$DTSIM" sweep --model lenet5 --devices 1,2 --csv "$TMP/sweep-$lang.csv" \
      --plot "$TMP/sweep-$lang.svg" >/dev/null 2>&1
    "$@" "$DTSIM" search --model lenet5 --top 2 --csv "$TMP/search-$lang.csv" \
      --plot "$TMP/search-$lang.svg" >/dev/null 2>&1
    "$@" "$DTSIM" calibrate "$TMP/m.csv" --generations 5 --no-loo -o "$TMP/cal-$lang.ini" >/dev/null 2>&1
  done
  # The sweep's last column is the wall-clock time of each point.
  for lang in C de; do sed 's/,[^,]*$//' "$TMP/sweep-$lang.csv" >"$TMP/sweepnw-$lang.csv"; done
  for f in run.csv sweepnw.csv sweep.svg search.csv search.svg cal.ini; do
    a=$TMP/${f%.*}-C.${f#*.}; b=$TMP/${f%.*}-de.${f#*.}
    [ -s "$a" ] && cmp -s "$a" "$b" && ok "de_DE: $f as in the C locale" ||
      bad "de_DE: $f differs: $(diff "$a" "$b" 2>&1 | head -3)"
  done
  # Every row of the run's CSV has its 11 columns.
  awk -F, 'NF != 11 { bad = 1 } END { exit bad }' "$TMP/run-de.csv" &&
    ok "de_DE: 11 fields in every CSV row" || bad "de_DE: $(sed -n 2p "$TMP/run-de.csv")"
  LOCPATH=$TMP/loc LC_ALL=de_DE.UTF-8 "$DTSIM" run --model lenet5 --batch 32 --json >"$TMP/out" 2>&1 &&
    ok "de_DE: options read as before" || bad "de_DE run: $(cat "$TMP/out")"
else
  echo "skip decimal-comma locale (localedef or the de_DE locale sources missing)"
fi

# --- 5. outputs that would overwrite inputs or each other ------------------------------------------
F=$TMP/files
mkdir "$F"
printf '[scenario]\nmodel = lenet5\ncsv = %s/s.ini\n' "$F" >"$F/s.ini"
cp "$F/s.ini" "$F/s.orig"
expect_error "scenario whose csv is itself" 2 run "$F/s.ini"
err_has "names the key and the scenario file" "s.ini:3: [scenario] csv:"
cmp -s "$F/s.ini" "$F/s.orig" && ok "the scenario file is untouched" || bad "scenario file changed"
expect_error "--trace and --csv the same file" 2 run --model lenet5 --trace "$F/x" --csv "$F/x"
err_has "names both" "--csv: $F/x is also the output of --trace"
expect_error "sweep --csv and --plot the same file" 2 sweep --model lenet5 --devices 1,2 \
  --csv "$F/p" --plot "$F/p"
# The same file by another name: a symbolic link to the model.
"$DTSIM" describe lenet5 --export "$F/m.json" >/dev/null
ln -s m.json "$F/link.json"
expect_error "--csv is the --model file through a link" 2 run --model "$F/m.json" --csv "$F/link.json"
err_has "names --model" "is also --model"
expect_error "describe --export onto its model" 2 describe "$F/m.json" --export "$F/m.json"
expect_error "calibrate -o onto its measurements" 2 calibrate "$TMP/m.csv" -o "$TMP/m.csv"
(cd "$F" && "$DTSIM" describe lenet5 --export --json >/dev/null 2>"$TMP/err"; echo $? >"$TMP/st")
[ "$(cat "$TMP/st")" = 2 ] && [ ! -e "$F/--json" ] && ok "describe --export --json writes no file named --json" ||
  bad "--export --json: status $(cat "$TMP/st"), $(ls "$F")"
err_has "says it looks like an option" "--export: '--json' looks like an option"
"$DTSIM" run --model lenet5 --csv /dev/null --trace /dev/null >/dev/null 2>&1 &&
  ok "/dev/null may take two outputs" || bad "/dev/null twice refused"
# Outputs replace their old versions together: a run refused after simulating (--strict: VGG-16
# at 1024 samples needs far more than a V100's 16 GiB) leaves both old files.
printf 'old\n' >"$F/t.json"; printf 'old\n' >"$F/a.csv"
expect_error "--strict refusal after the simulation" 2 run --model vgg16 --batch 1024 --strict \
  --trace "$F/t.json" --csv "$F/a.csv"
[ "$(cat "$F/t.json")" = old ] && [ "$(cat "$F/a.csv")" = old ] && ok "both old outputs kept" ||
  bad "outputs replaced: $(head -c 40 "$F/t.json")"
ls "$F" | grep -q '\.tmp-' && bad "temporary files left: $(ls "$F")" || ok "no temporary file left"
"$DTSIM" run --model lenet5 --trace "$F/t.json" --csv "$F/a.csv" >/dev/null 2>&1
grep -q traceEvents "$F/t.json" && head -n 1 "$F/a.csv" | grep -q '^task,' &&
  ok "a successful run replaces both" || bad "not replaced: $(head -c 40 "$F/a.csv")"

# --- 7. control characters in written values -------------------------------------------------------
# A newline in --stack once added a [device] group to the overlay (ResNet-50: 214.7 -> 134.0 ms).
expect_error "newline in calibrate --stack" 2 calibrate "$TMP/m.csv" --generations 5 --no-loo \
  -o "$TMP/inj.ini" --stack "$(printf 'x\n[device]\npeak_tflops_fp32 = 1000\n[calibration]')"
err_has "names --stack" "--stack: 'x\\n[device]"
[ ! -e "$TMP/inj.ini" ] && ok "no overlay written" || bad "overlay written: $(cat "$TMP/inj.ini")"
# A layer whose name holds a newline, a comma and a quote: the CSV stays 11 fields a row for a
# CSV reader, the JSON and the trace parse, and the name comes back whole.
printf '{"format":"dtsim-workload","version":1,"name":"inj","input":[1,4,4],"layers":[{"name":"a\\nb,\\"c","type":"fc","parents":["input"],"out_features":4}]}' >"$TMP/inj.json"
"$DTSIM" run --model "$TMP/inj.json" --csv "$TMP/inj.csv" --trace "$TMP/inj-trace.json" --json \
  >"$TMP/inj.out" 2>"$TMP/err" || bad "run of inj.json: $(cat "$TMP/err")"
python3 - "$TMP/inj.csv" "$TMP/inj-trace.json" "$TMP/inj.out" <<'PY' && ok "CSV, trace and JSON read back, the name whole" || bad "injected name broke a file"
import csv, json, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
assert all(len(r) == 11 for r in rows), [r for r in rows if len(r) != 11]
assert any(r[1] == 'a\nb,"c' for r in rows), "name not found"
names = [e.get("name") for e in json.load(open(sys.argv[2]))["traceEvents"]]
assert 'a\nb,"c' in names
json.loads(open(sys.argv[3]).read())
PY

# --- 8. errors before the long work, blamed on what was given ---------------------------------------
expect_error "calibrate -o into a missing folder" 2 calibrate "$TMP/m.csv" -o "$TMP/no/dir/x.ini"
err_has "named as --output, before the fit" "--output: cannot write $TMP/no/dir/x.ini: no folder"
expect_error "search --plot into a missing folder" 2 search --model lenet5 --nodes 4 --plot "$TMP/no/x.svg"
err_has "named as --plot, before the search" "--plot: cannot write $TMP/no/x.svg: no folder"
expect_error "--calibration of a missing file" 2 run --model lenet5 --calibration "$TMP/nope"
err_has "blamed on --calibration" "dtsim run: --calibration: $TMP/nope: no such file"
expect_error "--calibration missing, 3d" 2 run --strategy 3d --model gpt3-1.7b --calibration "$TMP/nope"
err_has "blamed on --calibration (3d)" "--calibration: $TMP/nope: no such file"
printf '[calibration]\nbogus = 1\n' >"$TMP/bad-overlay.ini"
expect_error "an overlay with an unknown key" 2 run --model lenet5 --calibration "$TMP/bad-overlay.ini"
err_has "the overlay's key under --calibration" "dtsim run: --calibration: $TMP/bad-overlay.ini:2: [calibration] bogus: unknown key"
expect_error "calibrate from a bad overlay" 2 calibrate "$TMP/m.csv" --calibration "$TMP/bad-overlay.ini"
err_has "not prefixed by the measurements' line" "dtsim calibrate: --calibration: $TMP/bad-overlay.ini:2:"
# dgx1-v100's hybrid cube wires 8 devices: 10 is the option's fault, not the catalog file's.
expect_error "--devices-per-node 10 on dgx1-v100" 2 run --model lenet5 --devices-per-node 10
err_has "blamed on --devices-per-node" "dtsim run: --devices-per-node: the nvlink-hybrid-cube layout wires at most 8 devices, not 10"
# A value of 100 000 characters is echoed as its first 48 and last 32 around "...".
long=$(awk 'BEGIN { for (i = 0; i < 100000; i++) printf "x" }')
expect_error "a 100000-character --model" 2 run --model "$long"
w=$(grep -o "'x*\.\.\.x*'" "$TMP/err")
[ ${#w} -eq 83 ] && ok "echoed as 83 characters (quote and 47 x, ..., 31 x and quote)" ||
  bad "echoed ${#w} characters: $(head -c 200 "$TMP/err")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
