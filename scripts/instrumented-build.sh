#!/usr/bin/env bash
# Configures and builds an instrumented build of attnc with clang-22:
#   instrumented-build.sh DIR CMAKE-OPTION TARGET...
# e.g. build-fuzz -DATTNC_FUZZ=ON attnc-fuzz (scripts/fuzz.sh) or
# build-asan -DATTNC_SANITIZE=address,undefined attnc-api-tests
# (scripts/sanitize.sh). Uses ccache when it is installed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$1" option="$2"
shift 2
"$root/scripts/bootstrap.sh" --packages-only
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -G Ninja -S "$root" -B "$root/$dir" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  "${launcher[@]}" "$option" >/dev/null
cmake --build "$root/$dir" --target "$@"
