#!/usr/bin/env bash
# test-shellcheck.sh - shellcheck: the install script and these tests at every
# severity, every other tracked shell script for errors.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
cd "$src" || exit 1
command -v shellcheck >/dev/null || { echo "test-shellcheck: skipped: shellcheck not installed (scripts/install-deps.sh)"; exit 77; }
strict=(scripts/install-vectorflow-gx.sh tests/tools/*.sh)
if git rev-parse --git-dir >/dev/null 2>&1; then
	mapfile -t all < <(git ls-files '*.sh')
else
	mapfile -t all < <(find scripts tests -name '*.sh')
fi
rc=0
shellcheck "${strict[@]}" || rc=1
((${#all[@]} == 0)) || shellcheck -S error "${all[@]}" || rc=1
if ((rc == 0)); then
	echo "test-shellcheck: ${#strict[@]} scripts clean, ${#all[@]} scripts free of errors"
fi
exit "$rc"
