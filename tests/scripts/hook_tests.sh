#!/bin/sh
# The commit-msg hook (scripts/hooks/commit-msg) on messages whose verdict is known: in a
# scratch git repository holding sim/engine/engine.c and README.md, subjects of 72 and 73
# columns, with and without a module prefix naming its paths, a second line that is not blank,
# git's own merge subjects, comment lines, and the warning for a change of more than 20 lines
# with no body. Then scripts/install-hooks.sh installs the hook once and leaves it alone after.
#
#   sh tests/scripts/hook_tests.sh
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
hook=$top/scripts/hooks/commit-msg
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dtsim-hook-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0
cd "$tmp" || exit 1
git init -q repo && cd repo || exit 1
mkdir -p sim/engine && echo x > sim/engine/engine.c && echo x > README.md
git add . || exit 1

# expect STATUS MESSAGE [TEXT]: the hook exits STATUS on MESSAGE (printf format), and its
# standard error holds TEXT when given (nothing when TEXT is "-").
expect() {
  want=$1 text=$2 err=${3:-}
  printf "$text" > msg
  sh "$hook" msg 2> stderr
  got=$?
  if [ "$got" -ne "$want" ]; then
    echo "FAIL: exit $got, not $want, for: $(head -1 msg)"; cat stderr
    failures=$((failures + 1))
  elif [ "$err" = "-" ] && [ -s stderr ]; then
    echo "FAIL: unexpected output for: $(head -1 msg)"; cat stderr
    failures=$((failures + 1))
  elif [ -n "$err" ] && [ "$err" != "-" ] && ! grep -qF "$err" stderr; then
    echo "FAIL: no \"$err\" for: $(head -1 msg)"; cat stderr
    failures=$((failures + 1))
  fi
}

# "sim/engine: " is 12 columns: 60 more make 72, 61 make 73.
s60=$(printf '%060d' 0 | tr 0 a)
expect 0 "sim/engine: $s60\n\nWhy.\n" -
expect 1 "sim/engine: ${s60}b\n\nWhy.\n" "the subject is 73 columns, more than 72"
expect 0 "sim/engine, README: two modules\n\nWhy.\n" -
expect 0 "sim: a folder above\n\nWhy.\n" -
expect 1 "no prefix at all\n\nWhy.\n" "needs a module prefix"
expect 1 "Tidying: a word, not a path\n\nWhy.\n" "\"Tidying\" in the subject's prefix is no file"
expect 1 "sim/engine:no space\n\nWhy.\n" "needs a module prefix"
expect 1 "sim/engine: subject\nno blank line\n" "the second line must be blank"
expect 0 "Merge branch 'habits'\n" -
expect 0 "fixup! sim/engine: subject\n" -
expect 0 "# a comment git drops\nsim/engine: after the comment\n\nWhy.\n" -
# 31 changed lines staged (30 added, 1 removed) and no body: accepted with a warning; with a body, silently.
seq 1 30 > sim/engine/engine.c && git add sim/engine/engine.c
expect 0 "sim/engine: thirty lines\n" "31 lines change and the message has no body"
expect 0 "sim/engine: thirty lines\n\nWhy.\n" -

# The installer: into an empty hooks folder once, then nothing.
mkdir -p scripts/hooks && cp "$hook" scripts/hooks/ && cp "$top/scripts/install-hooks.sh" scripts/
rm -f .git/hooks/commit-msg
out=$(sh scripts/install-hooks.sh)
if [ ! -x .git/hooks/commit-msg ] || ! cmp -s .git/hooks/commit-msg "$hook"; then
  echo "FAIL: install-hooks.sh did not install the hook ($out)"
  failures=$((failures + 1))
fi
echo "# my own" > .git/hooks/commit-msg
out=$(sh scripts/install-hooks.sh)
if [ -n "$out" ] || [ "$(cat .git/hooks/commit-msg)" != "# my own" ]; then
  echo "FAIL: install-hooks.sh replaced a hook that was there ($out)"
  failures=$((failures + 1))
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures failures"
  exit 1
fi
echo "commit-msg hook: all cases as expected"
