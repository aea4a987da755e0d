#!/usr/bin/env bash
# Builds attnc and runs every test: the lit suite, then the remaining ctest
# tests (unit tests, generated-docs checks; GPU tests skip without a GPU).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh" || exit 1

status=0
echo "== lit"
/usr/lib/llvm-22/bin/lit -sv "$root/build/test" || status=1
echo "== ctest"
ctest --test-dir "$root/build" --output-on-failure -LE lit || status=1
exit $status
