#!/usr/bin/env bash
# `make test` as on a fresh machine without the system tools .ci/run installs, on a machine that
# has them: in a private mount namespace (root) each tool of .ci/run's TOOLS list (and the
# optional browsers) is covered by /dev/null, which is not executable, so every lookup
# (PATH, /usr/sbin) misses it; the machine itself and its other users see no change.
#   sudo tests/without_tools.sh [PYTEST_ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
tools=$(sed -n 's/^TOOLS=(\(.*\))$/\1/p' .ci/run)
hide=()
for tool in $tools chromium chromium-browser; do
  [ "$tool" = make ] && continue
  for dir in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
    [ -x "$dir/$tool" ] && [ ! -L "$dir" ] && hide+=("$dir/$tool")
  done
done
echo "hiding: ${hide[*]:-(none installed)}" >&2
export PYTEST_ARGS="$*"
exec unshare -m --propagation private bash -c '
  for f in "$@"; do mount --bind /dev/null "$f"; done
  make test' _ "${hide[@]}"
