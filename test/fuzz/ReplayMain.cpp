//===- ReplayMain.cpp - run fuzz inputs without libFuzzer -----------------===//
//
// `attnc-fuzz-replay FILE|DIR...` feeds every file to the fuzz target's
// entry, as libFuzzer would, in a build without libFuzzer: the regression
// tests run it (attnc-fuzz-replay-NAME for the other targets) on
// test/fuzz/regressions and regressions-NAME. A crash ends the process, which
// fails the test; so the name of each input is printed before it runs.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    fs::path path = argv[i];
    if (fs::is_directory(path)) {
      for (const fs::directory_entry &entry : fs::directory_iterator(path))
        if (entry.is_regular_file())
          inputs.push_back(entry.path());
    } else {
      inputs.push_back(path);
    }
  }
  // An empty run proves nothing: say so rather than pass.
  if (inputs.empty()) {
    std::fprintf(stderr, "attnc-fuzz-replay: no inputs given\n");
    return 2;
  }
  std::sort(inputs.begin(), inputs.end());
  for (const fs::path &path : inputs) {
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      std::fprintf(stderr, "attnc-fuzz-replay: cannot read %s\n", path.c_str());
      return 2;
    }
    std::string bytes((std::istreambuf_iterator<char>(file)),
                      std::istreambuf_iterator<char>());
    std::printf("replay %s\n", path.c_str());
    std::fflush(stdout);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                           bytes.size());
  }
  std::printf("attnc-fuzz-replay: %zu inputs, no crash\n", inputs.size());
  return 0;
}
