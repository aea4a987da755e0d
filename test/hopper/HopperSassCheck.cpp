//===- HopperSassCheck.cpp - the Hopper blocks' SASS, without a GPU -------===//
//
// Compiles every instance of the test kernel (HopperBlocksKernel.cuh)
// through NVRTC for sm_90a and reads the cubin's SASS with nvdisasm. Each
// kernel must hold exactly the tensor-core and copy instructions its
// shapes call for: D/16 SS plus N/16 RS HGMMA (the k16 steps, unrolled;
// the KV-tile loop is not), one UTMALDG.2D per column block of Q and one
// UTMALDG.3D per column block of K and V; no local memory (LDL/STL, a
// stack frame or spills in ptxas's report); no warning that setmaxnreg was
// ignored or that the wgmmas were serialized. Then every wgmma width of
// wgmma_widths.h must assemble (the widths probe).
//
// Exit 0 when all hold, 1 when any fails, 77 (skipped) without NVRTC or
// nvdisasm. nvdisasm is looked up in $ATTNC_EXTRA_TOOL_DIRS (colon-
// separated; ctest points it at build/cuda-tools, where scripts/test.sh
// installs PyPI's nvidia-cuda-nvdisasm when the toolkit lacks it), $PATH,
// $CUDA_HOME/bin and /usr/local/cuda/bin.
//
//===----------------------------------------------------------------------===//

#include "HopperBlocks.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace attnc;
using namespace attnc::hopper_test;

namespace {

bool isExecutable(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

void appendDirs(std::vector<std::string> &dirs, const char *list) {
  if (!list)
    return;
  std::stringstream in(list);
  std::string dir;
  while (std::getline(in, dir, ':'))
    if (!dir.empty())
      dirs.push_back(dir);
}

std::string findTool(const std::string &name) {
  std::vector<std::string> dirs;
  appendDirs(dirs, std::getenv("ATTNC_EXTRA_TOOL_DIRS"));
  appendDirs(dirs, std::getenv("PATH"));
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *root = std::getenv(var); root && *root)
      dirs.push_back(std::string(root) + "/bin");
  dirs.push_back("/usr/local/cuda/bin");
  for (const std::string &dir : dirs)
    if (isExecutable(dir + "/" + name))
      return dir + "/" + name;
  return "";
}

/// Runs `command`, returning its standard output and exit status.
std::string run(const std::string &command, int &status) {
  std::string output;
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe) {
    status = -1;
    return output;
  }
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    output.append(buffer, got);
  status = pclose(pipe);
  return output;
}

/// The SASS of each kernel of a cubin: opcode (with its modifiers, the
/// predicate dropped) -> count.
using OpcodeCounts = std::map<std::string, int>;

StatusOr<std::map<std::string, OpcodeCounts>>
disassemble(const std::string &nvdisasm, const std::string &cubin) {
  char path[] = "/tmp/attnc-hopper-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return Status::error(ErrorCode::Internal, "cannot create a temporary file");
  close(fd);
  {
    std::ofstream out(path, std::ios::binary);
    out.write(cubin.data(), std::streamsize(cubin.size()));
  }
  int status = 0;
  std::string sass = run("'" + nvdisasm + "' '" + path + "' 2>&1", status);
  unlink(path);
  if (status != 0)
    return Status::error(ErrorCode::Internal, "nvdisasm failed:\n" + sass);
  std::map<std::string, OpcodeCounts> kernels;
  std::regex section(R"(^\s*\.section\s+\.text\.([A-Za-z0-9_]+),)");
  std::regex instruction(
      R"(^\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P[0-9T]+\s+)?([A-Z][A-Z0-9_.]*))");
  std::stringstream in(sass);
  std::string line;
  OpcodeCounts *current = nullptr;
  std::smatch match;
  while (std::getline(in, line)) {
    if (std::regex_search(line, match, section)) {
      current = &kernels[match[1]];
      continue;
    }
    if (line.find(".section") != std::string::npos)
      current = nullptr;
    if (current && std::regex_search(line, match, instruction))
      ++(*current)[match[1]];
  }
  return kernels;
}

/// Instructions whose opcode starts with `prefix` ("HGMMA", "UTMALDG.3D").
int count(const OpcodeCounts &counts, const std::string &prefix) {
  int total = 0;
  for (const auto &[opcode, n] : counts)
    if (opcode.compare(0, prefix.size(), prefix) == 0 &&
        (opcode.size() == prefix.size() || opcode[prefix.size()] == '.'))
      total += n;
  return total;
}

/// ptxas's report of one kernel in NVRTC's log.
struct PtxasReport {
  int registers = -1;
  int stack = -1, spillStores = -1, spillLoads = -1;
};

PtxasReport reportOf(const std::string &log, const std::string &kernel) {
  PtxasReport r;
  size_t at = log.find("Function properties for " + kernel + "\n");
  if (at == std::string::npos)
    return r;
  std::smatch match;
  std::string rest = log.substr(at);
  if (std::regex_search(rest, match,
                        std::regex(R"((\d+) bytes stack frame, (\d+) bytes )"
                                   R"(spill stores, (\d+) bytes spill loads)")))
    r.stack = std::stoi(match[1]), r.spillStores = std::stoi(match[2]),
    r.spillLoads = std::stoi(match[3]);
  if (std::regex_search(rest, match, std::regex(R"(Used (\d+) registers)")))
    r.registers = std::stoi(match[1]);
  return r;
}

int blocksOf(int cols) { return (cols + 63) / 64; }

} // namespace

int main() {
  StatusOr<jit::Nvrtc *> nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok()) {
    std::cout << "SKIPPED: no NVRTC: " << nvrtc.status().message() << "\n";
    return 77;
  }
  std::string nvdisasm = findTool("nvdisasm");
  if (nvdisasm.empty()) {
    std::cout << "SKIPPED: no nvdisasm (the CUDA toolkit's, or PyPI's "
                 "nvidia-cuda-nvdisasm in build/cuda-tools) to read SASS\n";
    return 77;
  }
  int passed = 0, failed = 0;
  auto judge = [&](bool ok, const std::string &what) {
    (ok ? passed : failed)++;
    if (!ok)
      std::cout << "FAILED: " << what << "\n";
  };

  std::vector<BlocksConfig> configs = testConfigs(sm90SharedOptin());
  StatusOr<jit::CompiledCode> code = compileKernels(**nvrtc, configs);
  if (!code.ok()) {
    std::cout << "FAILED: the test kernels do not compile:\n"
              << code.status().message() << "\n";
    return 1;
  }
  for (const char *warning : {"C7508", "setmaxnreg", "serialized"})
    judge(code->log.find(warning) == std::string::npos,
          std::string("ptxas warns (") + warning + "):\n" + code->log);
  StatusOr<std::map<std::string, OpcodeCounts>> kernels =
      disassemble(nvdisasm, code->image);
  if (!kernels.ok()) {
    std::cout << "FAILED: " << kernels.status().message() << "\n";
    return 1;
  }
  std::printf("%-42s %5s %5s %6s %6s %5s %5s\n", "kernel", "regs", "smem",
              "HGMMA", "UTMALDG", "SYNCS", "LDL/STL");
  for (const BlocksConfig &c : configs) {
    std::string name = c.name();
    auto it = kernels->find(name);
    judge(it != kernels->end(), name + " is missing from the cubin");
    if (it == kernels->end())
      continue;
    const OpcodeCounts &ops = it->second;
    PtxasReport r = reportOf(code->log, name);
    int hgmma = count(ops, "HGMMA"), tma2 = count(ops, "UTMALDG.2D"),
        tma3 = count(ops, "UTMALDG.3D"), syncs = count(ops, "SYNCS"),
        local = count(ops, "LDL") + count(ops, "STL");
    std::printf("%-42s %5d %5d %6d %3d+%-3d %5d %5d\n", name.c_str(),
                r.registers, c.smemBytes() / 1024, hgmma, tma2, tma3, syncs,
                local);
    judge(hgmma == c.d / 16 + c.n / 16,
          name + ": " + std::to_string(hgmma) + " HGMMA, expected " +
              std::to_string(c.d / 16) + " SS + " + std::to_string(c.n / 16) +
              " RS");
    judge(tma2 == blocksOf(c.d), name + ": " + std::to_string(tma2) +
                                     " UTMALDG.2D, expected one per Q block");
    judge(tma3 == blocksOf(c.d) + blocksOf(c.dv),
          name + ": " + std::to_string(tma3) +
              " UTMALDG.3D, expected one per K and V block");
    judge(syncs > 0, name + ": no SYNCS (mbarrier) instruction");
    judge(local == 0, name + ": " + std::to_string(local) + " LDL/STL");
    judge(r.registers > 0 && r.stack == 0 && r.spillStores == 0 &&
              r.spillLoads == 0,
          name + ": ptxas reports a stack frame or spills (or no report)");
  }

  StatusOr<jit::CompiledCode> probe =
      (*nvrtc)->compile(widthsProbeSource(), "sm_90a", /*ptx=*/false,
                        /*driverCache=*/true);
  judge(probe.ok(), "the wgmma widths probe does not compile:\n" +
                        (probe.ok() ? "" : probe.status().message()));
  if (probe.ok()) {
    StatusOr<std::map<std::string, OpcodeCounts>> probeSass =
        disassemble(nvdisasm, probe->image);
    int hgmma = probeSass.ok() && probeSass->count("wgmma_widths_probe")
                    ? count(probeSass->at("wgmma_widths_probe"), "HGMMA")
                    : -1;
    std::printf("%-42s %5s %5s %6d\n", "wgmma_widths_probe", "", "", hgmma);
    judge(hgmma == widthsProbeCount(),
          "widths probe: " + std::to_string(hgmma) + " HGMMA, expected " +
              std::to_string(widthsProbeCount()));
  }
  std::cout << passed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}
