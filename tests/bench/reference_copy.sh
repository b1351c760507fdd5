#!/bin/sh
# The benchmarks read the published measurements from the repository's copy,
# bench/reference/data/ (the tables and their README). This check says when that copy is no
# longer the same as the shared folder it was taken from, ../shared/reference/ beside the source
# tree: a file that differs, one missing from the copy, one the shared folder no longer has.
# Without the shared folder (a checkout on its own) there is nothing to compare: the check is
# skipped (exit 77, which ctest reports as skipped) with a message.
#
#   sh tests/bench/reference_copy.sh [COPY_DIR [SHARED_DIR]]
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
copy=${1:-$top/bench/reference/data}
shared=${2:-$top/../shared/reference}
if [ ! -d "$shared" ]; then
  echo "reference_copy: skipped: no shared folder $shared to compare bench/reference/data with"
  exit 77
fi
if [ ! -d "$copy" ]; then
  echo "reference_copy: the copy $copy is missing"
  exit 1
fi
status=0
for f in "$shared"/*; do
  name=$(basename "$f")
  if [ ! -f "$copy/$name" ]; then
    echo "reference_copy: $name is in $shared but not in the copy"
    status=1
  elif ! cmp -s "$f" "$copy/$name"; then
    echo "reference_copy: $name differs from $shared/$name"
    status=1
  fi
done
for f in "$copy"/*; do
  name=$(basename "$f")
  if [ ! -e "$shared/$name" ]; then
    echo "reference_copy: $name is in the copy but no longer in $shared"
    status=1
  fi
done
if [ "$status" -ne 0 ]; then
  echo "reference_copy: bring the copy in step (cp $shared/* $copy/, removing what the shared"
  echo "reference_copy: folder dropped), run the accuracy benchmarks, and commit both"
  exit 1
fi
echo "reference_copy: the $(ls "$copy" | wc -l) files of bench/reference/data are those of $shared"
