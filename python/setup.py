"""Bundles the build tree's libattnc.so into the package when pip installs
it (`pip install ./python` after scripts/bootstrap.sh)."""

import shutil
from pathlib import Path

from setuptools import setup

here = Path(__file__).resolve().parent
built = here.parent / "build" / "lib" / "libattnc.so"
if built.is_file():
    shutil.copy2(built, here / "attnc" / "libattnc.so")
elif not (here / "attnc" / "libattnc.so").is_file():
    raise SystemExit("attnc: build libattnc.so first (scripts/bootstrap.sh)")

setup()
