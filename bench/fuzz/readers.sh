#!/bin/sh
# Reading speed of the workload readers on long chains of layers: our JSON format (an fc layer,
# then relus) and Paleo network files (1x1 convolutions, each checking its declared input
# channels). Prints format, layers, file size, the CPU time of reading alone (a file whose last
# layer is bad: an unknown key in ours, an unknown type in Paleo's; every layer before it is read
# and checked, nothing is built) and the CPU time (user + system, which a loaded machine disturbs
# less than the wall time) of `dtsim describe FILE --json`, best of 3, so a reader that turns
# quadratic again shows as time growing faster than the layer count. Not a test: the figures
# depend on the machine (tests/cli/files_tests.sh checks 100 000 layers are read correctly,
# tests/workloads test_paleo_lines the lines reported deep in a long Paleo file).
#
#   bench/fuzz/readers.sh [DTSIM] [LAYERS...]     default build/dtsim, 10000 100000 400000
#   PALEO_LAYERS="20000 100000" (the default) sets the Paleo chains
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
dtsim=${1:-$top/build/dtsim}
[ $# -gt 0 ] && shift
counts=${*:-10000 100000 400000}
paleo_counts=${PALEO_LAYERS:-20000 100000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export DTSIM_DATA_DIR="$top"
printf '%6s %10s %8s %10s %14s %14s\n' format layers MB read_cpu_s describe_cpu_s us_per_layer
format=ours
for n in $counts paleo $paleo_counts; do
  if [ "$n" = paleo ]; then
    format=paleo
    continue
  fi
  f=$tmp/chain-$n.json
  if [ "$format" = paleo ]; then
    for bad in 0 1; do
      awk -v n="$n" -v bad="$bad" 'BEGIN {
        printf "{\"name\": \"chain\",\n \"layers\": {\n"
        printf "  \"data\": {\"parents\": [], \"type\": \"Input\", \"tensor\": [1, 4, 4, 4]}"
        for (i = 1; i < n; i++)
          printf ",\n  \"c%d\": {\"parents\": [\"%s\"], \"type\": \"%s\", \"filter\": [1, 1, 4, 4], \"strides\": [1, 1, 1, 1], \"padding\": \"SAME\"}", i, i == 1 ? "data" : "c" (i - 1), bad && i == n - 1 ? "Warp" : "Convolution"
        printf "\n }\n}\n" }' >"$tmp/paleo-$bad.json"
    done
    mv "$tmp/paleo-0.json" "$f"
    mv "$tmp/paleo-1.json" "$tmp/bad.json"
  else
    awk -v n="$n" 'BEGIN {
      printf "{\"format\":\"dtsim-workload\",\"version\":1,\"name\":\"chain\",\"input\":[1,4,4],\"layers\":[\n"
      printf "{\"name\":\"l0\",\"type\":\"fc\",\"parents\":[\"input\"],\"out_features\":16}"
      for (i = 1; i < n; i++) printf ",\n{\"name\":\"l%d\",\"type\":\"relu\",\"parents\":[\"l%d\"]}", i, i - 1
      printf "\n]}\n" }' >"$f"
    sed 's/"l'$((n - 2))'"\]}$/"l'$((n - 2))'"],"bogus":1}/' "$f" >"$tmp/bad.json"
  fi
  best=""
  read_best=""
  for rep in 1 2 3; do
    /usr/bin/time -o "$tmp/t" -f '%U %S' "$dtsim" describe "$f" --json >/dev/null
    cpu=$(tail -n 1 "$tmp/t")
    best=$(echo "$cpu" | awk -v best="$best" '{ d = $1 + $2; if (best == "" || d < best) best = d; print best }')
    if "$dtsim" describe "$tmp/bad.json" >/dev/null 2>&1; then
      echo "bench/fuzz/readers.sh: the bad $format file of $n layers was accepted" >&2
      exit 1
    fi
    /usr/bin/time -o "$tmp/t" -f '%U %S' "$dtsim" describe "$tmp/bad.json" >/dev/null 2>&1 || true
    cpu=$(tail -n 1 "$tmp/t")
    read_best=$(echo "$cpu" | awk -v best="$read_best" '{ d = $1 + $2; if (best == "" || d < best) best = d; print best }')
  done
  mb=$(awk -v b="$(wc -c <"$f")" 'BEGIN { printf "%.1f", b / 1e6 }')
  awk -v fmt="$format" -v n="$n" -v mb="$mb" -v r="$read_best" -v s="$best" \
    'BEGIN { printf "%6s %10d %8s %10.3f %14.3f %14.2f\n", fmt, n, mb, r, s, s * 1e6 / n }'
done
