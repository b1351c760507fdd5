#!/bin/sh
# Installs the project's git hooks (scripts/hooks/) into the repository's hooks folder, each
# only where no hook of that name is there yet (a hook of one's own is left alone). Does
# nothing outside a git checkout. Run by `make` and `make build`.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
[ -e "$top/.git" ] || exit 0
command -v git >/dev/null 2>&1 || exit 0
hooks=$(cd "$top" && git rev-parse --path-format=absolute --git-path hooks 2>/dev/null) || exit 0
mkdir -p "$hooks"
for hook in "$top"/scripts/hooks/*; do
  name=$(basename "$hook")
  if [ ! -e "$hooks/$name" ]; then
    cp "$hook" "$hooks/$name"
    chmod +x "$hooks/$name"
    echo "installed the $name hook into $hooks"
  fi
done
