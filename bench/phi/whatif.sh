#!/bin/sh
# What-if predictions of the CHAOS model beyond the 244 threads of a Xeon Phi 7120P: the same
# Knights Corner core (issue rules, clock, coherence latency) on a card with 2x, 4x and 8x the
# cores (and the memory bandwidth in proportion), as Viebke et al. asked of their models; then
# the Knights Landing 7250 and two-socket Xeons with the catalog as it is.
#
#   bench/phi/whatif.sh [DTSIM]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dtsim=${1:-build/dtsim}
dir=$(mktemp -d "${TMPDIR:-/tmp}/dtsim-whatif-XXXXXX")
trap 'rm -rf "$dir"' EXIT
for k in 2 4 8; do
  cores=$((61 * k))
  sed -e "s/^cores = 61$/cores = $cores/" \
      -e "s/^memory_bandwidth_GBps = 352$/memory_bandwidth_GBps = $((352 * k))/" \
      "$root/devices/catalog/xeon-phi-7120p.ini" > "$dir/knc-$cores-cores.ini"
  t=$((244 * k))
  "$here/chaos.sh" "$dtsim" --device "$dir/knc-$cores-cores.ini" \
    --threads "1 $((t / 8)) $((t / 4)) $((t / 2)) $t" | sed -n '1,5p'
  echo
done
"$here/chaos.sh" "$dtsim" --device xeon-phi-7250 --threads "1 17 34 68 136 204 272" | sed -n '1,5p'
echo
for cpu in xeon-gold-6148-2s xeon-platinum-8124m-2s xeon-e5-2686v4-2s; do
  "$here/chaos.sh" "$dtsim" --device "$cpu" --threads "1 2 4 8 16 32 64 72 80" | sed -n '1,5p'
  echo
done
