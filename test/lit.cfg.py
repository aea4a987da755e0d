# lit configuration for attnc's regression tests.

import glob
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "attnc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attnc_obj_root, "test")
# fuzz/ holds fuzz inputs, not lit tests.
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt", "gpu", "fuzz"]

config.substitutions.append(("%examples", os.path.join(config.attnc_src_root, "examples")))
config.substitutions.append(("%docs", os.path.join(config.attnc_obj_root, "docs")))

llvm_config.with_system_environment(["HOME", "TMPDIR", "XDG_CACHE_HOME"])
# Tests compile what they say: the prebuilt kernel library beside attnc
# (build/lib/attnc-kernels.bin) would answer some of their compiles. The
# library's own test names its file.
config.environment["ATTNC_KERNEL_LIBRARY"] = "-"
llvm_config.use_default_substitutions()

tool_dirs = [config.attnc_tools_dir, config.llvm_tools_dir]
tools = [ToolSubst("attn-opt", unresolved="fatal"), ToolSubst("attnc", unresolved="fatal"),
         ToolSubst("not", unresolved="fatal")]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# NVRTC (from the CUDA toolkit) compiles without a GPU; tests that go as far
# as a cubin need it.
if glob.glob("/usr/local/cuda/lib64/libnvrtc.so*") or glob.glob(
        "/usr/local/cuda/targets/*/lib/libnvrtc.so*"):
    config.available_features.add("nvrtc")
