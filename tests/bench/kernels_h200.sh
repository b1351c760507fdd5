#!/bin/sh
# dtsim-kernels-h200 on the repository's copy of reference/h200-kernels.csv: every row runs and
# the summary counts them; two rows worked by hand through the h200-sxm-141gb catalog entry
# (memory 4800 GB/s x efficiency 0.80 = 3.84e12 B/s, launch 6 us): a copy of 2^28 bf16
# elements moves 2 x 2^29 bytes, 279.62 us + 6 = 285.62 us; a fill writes 2^29 bytes,
# 139.81 + 6 = 145.81 us. A table with an unknown kernel family, or none, is refused with exit
# status 2 and one line naming the file and line.
#
#   sh tests/bench/kernels_h200.sh BIN DATA_DIR
set -u
bin=$1
data=$2
fail() {
  echo "kernels_h200: $*"
  exit 1
}
out=$("$bin" "$data") || fail "exit $? on $data"
echo "$out" | grep -q "^MAPE all 518 rows" || fail "no summary of 518 rows"
echo "$out" | grep -Eq "^hbm-copy-512MiB +one-kernel +263.06 +285.62 " || fail "copy row"
echo "$out" | grep -Eq "^hbm-fill-512MiB +one-kernel +174.35 +145.81 " || fail "fill row"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kernels-h200-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
head -1 "$data/h200-kernels.csv" > "$tmp/h200-kernels.csv"
echo 'x,conv,bf16,1,1,1,1,,,,,,,,fwd,none,1.0,,,' >> "$tmp/h200-kernels.csv"
"$bin" "$tmp" > "$tmp/out" 2> "$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "unknown family: exit $rc, expected 2"
[ ! -s "$tmp/out" ] || fail "unknown family: output on stdout"
[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "unknown family: not one line"
grep -q "h200-kernels.csv:2: kernel: unknown family 'conv'" "$tmp/err" || fail "message: $(cat "$tmp/err")"
rm "$tmp/h200-kernels.csv"
"$bin" "$tmp" > "$tmp/out" 2> "$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "missing table: exit $rc, expected 2"
echo "kernels_h200: ok"
