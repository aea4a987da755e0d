#!/usr/bin/env bash
# The Python wheel, built and used the way a user gets it: built outside
# the checkout (scripts/build-wheel.sh) with a platform tag and
# libattnc.so inside, unpacked where nothing of the checkout is on the
# path, imported there, its version the CLI's; the checkout unchanged by
# the build, and a build inside it refused by name; the prebuilt kernels
# inside where the build made them. One summary line.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
start=$SECONDS
fail() { echo "wheel-check: FAILED: $*"; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
before="$(git -C "$root" status --porcelain -- python 2>/dev/null)"
wheel="$("$root/scripts/build-wheel.sh" "$work/dist")" || fail "build-wheel.sh failed"
case "$(basename "$wheel")" in
  attnc-*-py3-none-linux_*.whl) ;;
  *) fail "$(basename "$wheel") is not tagged for a Linux platform" ;;
esac
python=/usr/bin/python3
listing="$("$python" -m zipfile -l "$wheel")"
for member in attnc/libattnc.so attnc/__init__.py attnc/cascade.py \
  attnc/trace/__init__.py; do
  grep -q " *$member " <<<"$listing" || grep -q "^$member " <<<"$listing" ||
    fail "the wheel has no $member"
done
# The prebuilt kernels travel beside libattnc.so when the build made them.
if [ -f "$root/build/lib/attnc-kernels.bin" ]; then
  grep -q "attnc/attnc-kernels.bin " <<<"$listing" ||
    fail "the build has attnc-kernels.bin, the wheel does not"
fi
"$python" -m zipfile -e "$wheel" "$work/site" || fail "the wheel does not unpack"
version="$(cd "$work" && PYTHONPATH="$work/site" "$python" -c "
import attnc, os, sys
here = os.path.dirname(attnc.__file__)
assert here.startswith(sys.argv[1]), here
print(attnc.__version__)" "$work/site")" || fail "the unpacked wheel does not import"
cli="$("$root/build/bin/attnc" --version | sed -n 's/^attnc \([0-9.]*\).*/\1/p')"
[ "$version" = "$cli" ] || fail "Python says $version, the CLI $cli"
[ "$(git -C "$root" status --porcelain -- python 2>/dev/null)" = "$before" ] ||
  fail "building the wheel changed the checkout's python/"
refusal="$(cd "$root/python" && "$python" setup.py -q bdist_wheel 2>&1)" &&
  fail "setup.py built inside the checkout"
grep -q "build the wheel with scripts/build-wheel.sh" <<<"$refusal" ||
  fail "setup.py in the checkout said: $refusal"
[ "$(git -C "$root" status --porcelain -- python 2>/dev/null)" = "$before" ] ||
  fail "the refused build changed the checkout's python/"
echo "wheel-check: ok: $(basename "$wheel"), $(($(stat -c %s "$wheel") / 1024)) KiB," \
  "imported outside the checkout as attnc $version, in $((SECONDS - start)) s"
