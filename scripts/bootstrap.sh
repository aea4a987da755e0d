#!/usr/bin/env bash
# Installs what attnc needs from Debian's packages (only what is missing) and
# builds it in Release mode into build/ (not with --packages-only). Safe to
# run again: a second run installs nothing and rebuilds only what changed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

packages=(
  cmake ninja-build g++ python3
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  libzstd-dev zlib1g-dev libfmt-dev libcli11-dev googletest libgtest-dev
  # The fuzz and sanitizer builds (scripts/fuzz.sh, scripts/sanitize.sh):
  # clang with libFuzzer and the ASan/UBSan runtimes.
  clang-22 libclang-rt-22-dev
)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null |
    grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "attnc: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi

# The instrumented builds' scripts want the packages, not this build.
[ "${1:-}" = "--packages-only" ] && exit 0

cmake -G Ninja -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build"
