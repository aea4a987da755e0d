"""The attnc wheel: the Python package with libattnc.so inside (the device
headers NVRTC compiles against are embedded in the library), tagged for
the platform the library was built for. scripts/build-wheel.sh builds it
outside the checkout, from a staged copy it puts libattnc.so into, and
passes the version the CLI and the C API carry (CMakeLists.txt's
project(attnc VERSION ...))."""

import os
import sysconfig
from pathlib import Path

from setuptools import Distribution, setup

try:  # setuptools >= 70.1 has it; before, the wheel package does
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

here = Path(__file__).resolve().parent
if (here.parent / "CMakeLists.txt").is_file():
    raise SystemExit("attnc: build the wheel with scripts/build-wheel.sh, "
                     "which builds it outside the checkout (a build here "
                     "would write libattnc.so, build/ and egg-info into it)")
if not (here / "attnc" / "libattnc.so").is_file():
    raise SystemExit("attnc: no attnc/libattnc.so in the staged package")
version = os.environ.get("ATTNC_VERSION")
if not version:
    raise SystemExit("attnc: ATTNC_VERSION is not set (scripts/build-wheel.sh "
                     "sets it from CMakeLists.txt)")


class NativeDistribution(Distribution):
    """A distribution with a native library: its files go to the platform's
    site-packages (the wheel's root), not a pure one."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """Any Python 3, no Python ABI (ctypes loads the library), but this
    platform: the wheel carries a native library."""

    def get_tag(self):
        platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
        return "py3", "none", platform


setup(version=version, distclass=NativeDistribution,
      cmdclass={"bdist_wheel": PlatformWheel})
