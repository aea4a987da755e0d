#!/usr/bin/env bash
# Builds the attnc wheel outside the checkout: stages python/,
# build/lib/libattnc.so and attnc-kernels.bin in a temporary directory and runs setuptools
# there, with the version CMakeLists.txt gives the CLI and the C API.
# Usage: scripts/build-wheel.sh [OUT_DIR] (default dist/); prints the
# wheel's path. Needs a built build/ (scripts/bootstrap.sh) and Debian's
# python3-setuptools and python3-wheel, which it installs if missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)"
library="$root/build/lib/libattnc.so"
[ -f "$library" ] || { echo "build-wheel: no $library (scripts/bootstrap.sh)" >&2; exit 1; }
python=/usr/bin/python3
if ! "$python" -c "import setuptools, wheel" 2>/dev/null; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends python3-setuptools python3-wheel >/dev/null
fi
version="$(sed -n 's/^project(attnc VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"
[ -n "$version" ] || { echo "build-wheel: no project(attnc VERSION ...) in CMakeLists.txt" >&2; exit 1; }
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp -r "$root/python/attnc" "$root/python/pyproject.toml" "$root/python/setup.py" \
  "$root/python/README.md" "$stage/"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
cp "$library" "$stage/attnc/libattnc.so"
# The prebuilt kernels (cmake/KernelLibrary.cmake), found beside
# libattnc.so; a build without them (no NVRTC) ships none.
kernels="$root/build/lib/attnc-kernels.bin"
[ -f "$kernels" ] && cp "$kernels" "$stage/attnc/attnc-kernels.bin"
(cd "$stage" && ATTNC_VERSION="$version" "$python" setup.py -q bdist_wheel \
  -d "$out" >"$stage.log" 2>&1) || { cat "$stage.log" >&2; rm -f "$stage.log"; exit 1; }
rm -f "$stage.log"
ls -t "$out"/attnc-"$version"-*.whl | head -n 1
