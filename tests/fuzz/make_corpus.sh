#!/bin/sh
# Regenerates the seed corpora of the fuzz harnesses that come from the project's own data:
#   corpus/workload   every zoo model as `dtsim describe MODEL --export` writes it, and the
#                     Paleo and workload files of tests/workloads/data
#   corpus/device     devices/catalog
#   corpus/fabric     comm/catalog/fabrics
#   corpus/system     comm/catalog/systems, bench/reference/systems, tests/cli/data
# corpus/scenario and corpus/options are written by hand and kept as they are.
#
# Usage: tests/fuzz/make_corpus.sh [DTSIM]   (DTSIM: a built dtsim, default build/dtsim)
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
dtsim=${1:-$top/build/dtsim}
out=$top/tests/fuzz/corpus
[ -x "$dtsim" ] || { echo "make_corpus: no dtsim at $dtsim (run make first)" >&2; exit 2; }

mkdir -p "$out/workload" "$out/device" "$out/fabric" "$out/system"
rm -f "$out/workload"/zoo-*.json "$out/device"/*.ini "$out/fabric"/*.ini "$out/system"/*.ini
for model in $(DTSIM_DATA_DIR=$top "$dtsim" list models --json |
               sed -n 's/.*"name" *: *"\([^"]*\)".*/\1/p'); do
  # Transformers have no layer file (their specs are corpus/transformer's seeds): skipped.
  if ! DTSIM_DATA_DIR=$top "$dtsim" describe "$model" --export "$out/workload/zoo-$model.json" \
    >/dev/null 2>"$out/workload/.err"; then
    grep -q "transformers are described by their spec" "$out/workload/.err" ||
      { cat "$out/workload/.err" >&2; exit 1; }
    rm -f "$out/workload/zoo-$model.json"
  fi
done
rm -f "$out/workload/.err"
cp "$top"/tests/workloads/data/*.json "$out/workload/"
cp "$top"/devices/catalog/*.ini "$out/device/"
cp "$top"/comm/catalog/fabrics/*.ini "$out/fabric/"
cp "$top"/comm/catalog/systems/*.ini "$out/system/"
for f in "$top"/bench/reference/systems/*.ini "$top"/tests/cli/data/*.ini; do
  cp "$f" "$out/system/$(basename "$(dirname "$f")")-$(basename "$f")"
done
echo "make_corpus: $(ls "$out/workload" | wc -l) workloads, $(ls "$out/device" | wc -l) devices," \
     "$(ls "$out/fabric" | wc -l) fabrics, $(ls "$out/system" | wc -l) systems"
