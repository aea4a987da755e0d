//===- ConcurrencyGpuTest.cpp - compile, plan and run from many threads ---===//
//
// The run side of the load test: threads compile, plan and run variants
// through the C++ API on one GPU at once, each on a stream of its own,
// against one disk cache that a saboteur keeps breaking, while `attnc run
// --check` processes use the same cache and GPU. Every thread's outputs
// must equal the single-threaded run of the same variant on the same
// inputs.
//
// Equal within one unit in the last place, not bitwise: decode kernels
// (warps = 1 x 4) merge their warps' partial outputs with atomicAdd on
// shared memory, whose order varies from run to run, so the float sums may
// differ in their last bits and round to neighbouring bf16/f16 values.
// Everything else (split-KV merges, softmax statistics, LSE) is ordered. A
// torn or wrongly reused cubin, a race on a plan's scratch memory or a
// kernel run in the wrong context is far beyond that bound.
//
//===----------------------------------------------------------------------===//

#include "../unit/CacheTestSupport.h"

#include "attnc/Driver/Compile.h"
#include "attnc/attnc.h"
#include "cuda/CudaDriver.h"
#include "support/DynamicLibrary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <limits.h>
#include <mutex>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace attnc {
namespace {

using test::freshDirectory;
using test::readFile;
using test::writeFile;

/// Streams are not part of attnc's driver subset: the test looks them up in
/// the libcuda the driver already loaded.
struct Streams {
  using CUstream = cuda::CUstream;
  int (*create)(CUstream *, unsigned) = nullptr;
  int (*synchronize)(CUstream) = nullptr;
  int (*destroy)(CUstream) = nullptr;

  Status load() {
    StatusOr<DynamicLibrary> library = DynamicLibrary::open(
        {"libcuda.so.1", "libcuda.so"}, ErrorCode::NoDevice);
    if (!library.ok())
      return library.status();
    if (Status s = lookupFunction(*library, "cuStreamCreate", create); !s.ok())
      return s;
    if (Status s = lookupFunction(*library, "cuStreamSynchronize", synchronize);
        !s.ok())
      return s;
    return lookupFunction(*library, "cuStreamDestroy_v2", destroy);
  }
};

/// One variant and the requests it runs on.
struct GpuCase {
  std::string name;
  VariantSpec spec;
  std::vector<int> qLens, kvLens; // per request
};

std::vector<GpuCase> gpuCases() {
  std::vector<GpuCase> cases;
  {
    GpuCase c{"prefill_gqa_causal_dense", {}, {192, 192}, {192, 192}};
    c.spec.queryHeads = 8;
    c.spec.kvHeads = 2;
    c.spec.headDim = 128;
    c.spec.causal = true;
    c.spec.returnLse = true;
    cases.push_back(c);
  }
  {
    // Split-KV and a merge; warps 1 x 4, whose epilogue adds atomically.
    GpuCase c{"decode_gqa_paged16", {}, {1, 1, 1}, {300, 517, 64}};
    c.spec.queryHeads = 32;
    c.spec.kvHeads = 8;
    c.spec.headDim = 128;
    c.spec.queriesPerRequest = 1;
    c.spec.kvLayout = TokenLayout::Paged;
    c.spec.pageSize = 16;
    c.spec.returnLse = true;
    cases.push_back(c);
  }
  {
    GpuCase c{"ragged_window_sinks_f16", {}, {100, 37}, {100, 37}};
    c.spec.queryHeads = 4;
    c.spec.kvHeads = 4;
    c.spec.headDim = 64;
    c.spec.dtype = DType::F16;
    c.spec.queryLayout = TokenLayout::Ragged;
    c.spec.kvLayout = TokenLayout::Ragged;
    c.spec.causal = true;
    c.spec.window = {{64, 0}};
    c.spec.sinks = 4;
    cases.push_back(c);
  }
  {
    GpuCase c{"softcap_dense_d64", {}, {96, 96}, {160, 160}};
    c.spec.queryHeads = 4;
    c.spec.kvHeads = 4;
    c.spec.headDim = 64;
    c.spec.softcap = 20.0f;
    cases.push_back(c);
  }
  for (GpuCase &c : cases)
    c.spec.name = c.name;
  return cases;
}

/// Random 16-bit floats of moderate size (never zero, never special).
uint16_t randomHalf(DType dtype, uint64_t &state) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  uint32_t r = uint32_t(state >> 33);
  uint16_t sign = (r & 1) << 15;
  if (dtype == DType::BF16) // exponents 120..126: magnitudes in [2^-7, 1)
    return sign | uint16_t((120 + (r >> 1) % 7) << 7) | uint16_t(r >> 8 & 0x7f);
  // f16 exponents 8..14: magnitudes in [2^-7, 1)
  return sign | uint16_t((8 + (r >> 1) % 7) << 10) | uint16_t(r >> 8 & 0x3ff);
}

float halfToFloat(DType dtype, uint16_t h) {
  if (dtype == DType::BF16) {
    uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float value = exponent == 0 ? std::ldexp(float(mantissa), -24)
                : exponent == 31
                    ? (mantissa ? NAN : INFINITY)
                    : std::ldexp(float(mantissa + 1024), exponent - 25);
  return (h & 0x8000) ? -value : value;
}

/// Host inputs of one case for one seed, in the kernel's layouts.
struct HostProblem {
  std::vector<uint16_t> q, k, v;
  std::vector<int32_t> qIndptr, kvIndptr, pageIndices, lastPageLen;
  Batch batch; // device pointers filled by DeviceProblem
  int64_t outElements = 0, lseElements = 0;
};

HostProblem makeProblem(const GpuCase &c, unsigned seed) {
  const VariantSpec &s = c.spec;
  HostProblem p;
  uint64_t state = 0x9e3779b97f4a7c15ull * (seed + 1);
  int batch = int(c.qLens.size());
  int maxQ = *std::max_element(c.qLens.begin(), c.qLens.end());
  int maxKV = *std::max_element(c.kvLens.begin(), c.kvLens.end());
  int64_t qTokens = 0, kvTokens = 0, pages = 0;
  p.qIndptr = {0};
  p.kvIndptr = {0};
  for (int b = 0; b < batch; ++b) {
    qTokens += c.qLens[b];
    kvTokens += c.kvLens[b];
    p.qIndptr.push_back(int32_t(qTokens));
    if (s.kvLayout == TokenLayout::Paged) {
      int n = (c.kvLens[b] + int(s.pageSize) - 1) / int(s.pageSize);
      pages += n;
      p.kvIndptr.push_back(int32_t(pages));
      p.lastPageLen.push_back(c.kvLens[b] - (n - 1) * int(s.pageSize));
    } else {
      p.kvIndptr.push_back(int32_t(kvTokens));
    }
  }
  int64_t kvRows = kvTokens;
  if (s.kvLayout == TokenLayout::Paged) {
    // Shuffled pages with a few unused ones, as in a real pool.
    int64_t poolPages = pages + 3;
    std::vector<int32_t> all(poolPages);
    for (int64_t i = 0; i < poolPages; ++i)
      all[i] = int32_t(i);
    for (int64_t i = poolPages - 1; i > 0; --i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      std::swap(all[i], all[(state >> 33) % (i + 1)]);
    }
    p.pageIndices.assign(all.begin(), all.begin() + pages);
    kvRows = poolPages * s.pageSize;
  }
  for (int64_t i = 0; i < qTokens * s.queryHeads * s.headDim; ++i)
    p.q.push_back(randomHalf(s.dtype, state));
  for (std::vector<uint16_t> *kv : {&p.k, &p.v})
    for (int64_t i = 0; i < kvRows * s.kvHeads * s.headDim; ++i)
      kv->push_back(randomHalf(s.dtype, state));
  p.batch.batch = batch;
  p.batch.maxQueryLen = maxQ;
  p.batch.maxKVLen = maxKV;
  p.batch.queryTokens = qTokens;
  p.outElements = qTokens * s.queryHeads * s.headDim;
  p.lseElements = s.returnLse ? qTokens * s.queryHeads : 0;
  return p;
}

/// What one run produced.
struct Outputs {
  std::vector<uint16_t> out;
  std::vector<float> lse;
};

/// Uploads a problem, runs the kernel on `stream` and reads the outputs.
StatusOr<Outputs> runOnce(const Kernel &kernel, const HostProblem &host,
                          cuda::CUstream stream, const Streams &streams) {
  StatusOr<cuda::Driver *> driver = cuda::Driver::get();
  if (!driver.ok())
    return driver.status();
  std::vector<cuda::DeviceBuffer> buffers;
  auto upload = [&](const void *data, size_t bytes, uint64_t &ptr) -> Status {
    StatusOr<cuda::DeviceBuffer> buffer =
        cuda::DeviceBuffer::allocate(**driver, std::max<size_t>(bytes, 4));
    if (!buffer.ok())
      return buffer.status();
    if (bytes)
      if (Status s = (*driver)->copyToDevice(buffer->get(), data, bytes);
          !s.ok())
        return s;
    ptr = buffer->get();
    buffers.push_back(std::move(*buffer));
    return Status();
  };
  Batch batch = host.batch;
  uint64_t q = 0, k = 0, v = 0, out = 0, lse = 0;
  for (auto [vec, ptr] :
       {std::pair{&host.q, &q}, std::pair{&host.k, &k}, std::pair{&host.v, &v}})
    if (Status s = upload(vec->data(), vec->size() * 2, *ptr); !s.ok())
      return s;
  for (auto [vec, ptr] : {std::pair{&host.qIndptr, &batch.qIndptr},
                          std::pair{&host.kvIndptr, &batch.kvIndptr},
                          std::pair{&host.pageIndices, &batch.pageIndices},
                          std::pair{&host.lastPageLen, &batch.lastPageLen}})
    if (!vec->empty())
      if (Status s = upload(vec->data(), vec->size() * 4, *ptr); !s.ok())
        return s;
  // Outputs start as NaN (all ones): a row the kernel skips shows.
  std::vector<uint8_t> poison(
      std::max<size_t>(host.outElements * 2, host.lseElements * 4), 0xff);
  if (Status s = upload(poison.data(), host.outElements * 2, out); !s.ok())
    return s;
  if (host.lseElements)
    if (Status s = upload(poison.data(), host.lseElements * 4, lse); !s.ok())
      return s;
  StatusOr<Plan> plan = kernel.plan(batch);
  if (!plan.ok())
    return plan.status();
  std::vector<uint64_t> outputs = {out};
  if (host.lseElements)
    outputs.push_back(lse);
  if (Status s = kernel.run(*plan, {q, k, v}, outputs, stream); !s.ok())
    return s;
  if (stream) {
    if (int r = streams.synchronize(stream); r != 0)
      return Status::error(ErrorCode::CudaError,
                           "cuStreamSynchronize failed with " +
                               std::to_string(r));
  } else if (Status s = (*driver)->synchronize(); !s.ok()) {
    return s;
  }
  Outputs result;
  result.out.resize(host.outElements);
  if (Status s =
          (*driver)->copyToHost(result.out.data(), out, result.out.size() * 2);
      !s.ok())
    return s;
  result.lse.resize(host.lseElements);
  if (host.lseElements)
    if (Status s = (*driver)->copyToHost(result.lse.data(), lse,
                                         result.lse.size() * 4);
        !s.ok())
      return s;
  return result;
}

/// "" when `got` equals `want` within one unit in the last place (see the
/// file comment); else where it differs. `bitwise` counts exact equality.
std::string compare(DType dtype, const Outputs &want, const Outputs &got,
                    bool &bitwise) {
  bitwise = want.out == got.out && want.lse == got.lse;
  double ulp =
      dtype == DType::BF16 ? std::ldexp(1.0, -7) : std::ldexp(1.0, -10);
  for (size_t i = 0; i < want.out.size(); ++i) {
    double a = halfToFloat(dtype, want.out[i]),
           b = halfToFloat(dtype, got.out[i]);
    if (!(std::fabs(a - b) <=
          ulp * std::max(std::fabs(a), std::fabs(b)) + 1e-6))
      return "out[" + std::to_string(i) + "]: " + std::to_string(b) +
             " instead of " + std::to_string(a);
  }
  for (size_t i = 0; i < want.lse.size(); ++i) {
    double a = want.lse[i], b = got.lse[i];
    if (!(std::fabs(a - b) <=
          1e-5 * std::max(std::fabs(a), std::fabs(b)) + 1e-6))
      return "lse[" + std::to_string(i) + "]: " + std::to_string(b) +
             " instead of " + std::to_string(a);
  }
  return "";
}

/// The attnc binary beside this test binary (both in build/bin).
std::string attncTool() {
  char self[PATH_MAX] = {0};
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string dir = n > 0 ? std::string(self, size_t(n)) : "";
  dir = dir.substr(0, dir.rfind('/'));
  return dir + "/attnc";
}

/// Runs `attnc run FILE --check` on the shared cache; "" or what failed.
std::string runChecker(const std::string &tool, const std::string &file,
                       const std::string &dir, const std::string &log) {
  std::vector<std::string> args = {
      tool, "run",         file, "--check", "--iterations",
      "2",  "--cache-dir", dir,  "--shape", "batch=3,q=96,kv=400"};
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  int error =
      posix_spawn(&pid, tool.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0)
    return "cannot start " + tool + ": " + strerror(error);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return "";
  return "attnc run " + file + " failed (status " + std::to_string(status) +
         "):\n" + readFile(log);
}

TEST(ConcurrentGpu, ThreadsAndProcessesCompilePlanAndRunAgainstOneCache) {
  StatusOr<cuda::Driver *> driver = cuda::Driver::get();
  if (!driver.ok())
    GTEST_SKIP() << "no GPU: " << driver.status().message();
  Streams streams;
  ASSERT_TRUE(streams.load().ok());
  test::Watchdog watchdog(900, "the concurrent GPU test");
  std::vector<GpuCase> cases = gpuCases();
  constexpr unsigned kSeeds = 2;
  int numCases = int(cases.size());

  // Single-threaded, uncached, on the default stream: the expected outputs.
  std::vector<Variant> variants;
  std::vector<std::vector<HostProblem>> problems(numCases);
  std::vector<std::vector<Outputs>> expected(numCases);
  for (int c = 0; c < numCases; ++c) {
    StatusOr<Variant> variant = Variant::fromSpec(cases[c].spec);
    ASSERT_TRUE(variant.ok()) << variant.status().toString();
    variants.push_back(*variant);
    Target uncached;
    uncached.cacheDir = "-";
    StatusOr<Kernel> kernel = Kernel::compile(*variant, uncached);
    ASSERT_TRUE(kernel.ok())
        << cases[c].name << ": " << kernel.status().toString();
    for (unsigned seed = 0; seed < kSeeds; ++seed) {
      problems[c].push_back(makeProblem(cases[c], seed));
      StatusOr<Outputs> out =
          runOnce(*kernel, problems[c].back(), nullptr, streams);
      ASSERT_TRUE(out.ok()) << cases[c].name << ": " << out.status().toString();
      for (uint16_t h : out->out)
        ASSERT_FALSE(std::isnan(halfToFloat(cases[c].spec.dtype, h)))
            << cases[c].name << ": a row was not written";
      expected[c].push_back(std::move(*out));
    }
  }
  forgetCompiledVariants();

  std::string root = freshDirectory();
  std::string dir = root + "/cache";
  std::mutex failureMutex;
  std::vector<std::string> failures;
  auto fail = [&](std::string what) {
    std::lock_guard<std::mutex> lock(failureMutex);
    failures.push_back(std::move(what));
  };

  // Processes: `attnc run --check` of the same variants on the same cache.
  std::string tool = attncTool();
  ASSERT_EQ(access(tool.c_str(), X_OK), 0)
      << "no attnc beside the test: " << tool;
  std::vector<std::string> files;
  for (int c = 0; c < numCases; ++c) {
    files.push_back(root + "/" + cases[c].name + ".mlir");
    writeFile(files.back(), variants[c].mlir());
  }
  std::vector<std::thread> processes;
  for (int p = 0; p < 2; ++p)
    processes.emplace_back([&, p] {
      for (int r = 0; r < numCases; ++r) {
        std::string log = root + "/run-" + std::to_string(p) + "-" +
                          std::to_string(r) + ".log";
        if (std::string error =
                runChecker(tool, files[(p + r) % numCases], dir, log);
            !error.empty())
          fail(error);
      }
    });

  // Threads: compile (through both caches), plan and run, each on its own
  // stream; every other round empties the in-process cache first.
  constexpr int kThreads = 6, kRounds = 8;
  std::atomic<int> rounds{0}, bitwiseRuns{0}, nearRuns{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      cuda::CUstream stream = nullptr;
      for (int r = 0; r < kRounds; ++r, ++rounds) {
        int c = (t + r) % numCases;
        unsigned seed = unsigned(t + r / numCases) % kSeeds;
        std::string where = "thread " + std::to_string(t) + " round " +
                            std::to_string(r) + " " + cases[c].name + ": ";
        if (r % 2 == t % 2)
          forgetCompiledVariants();
        Target target;
        target.cacheDir = dir;
        StatusOr<Kernel> kernel = Kernel::compile(variants[c], target);
        if (!kernel.ok()) {
          fail(where + kernel.status().toString());
          continue;
        }
        // The first round runs on the default stream, from a thread that
        // never made a context current (the driver must); the others on
        // this thread's own stream.
        StatusOr<Outputs> out =
            runOnce(*kernel, problems[c][seed], stream, streams);
        if (out.ok() && !stream) {
          if (int e = streams.create(&stream, 0); e != 0)
            fail(where + "cuStreamCreate failed with " + std::to_string(e));
        }
        if (!out.ok()) {
          fail(where + out.status().toString());
          continue;
        }
        bool bitwise = false;
        if (std::string why =
                compare(cases[c].spec.dtype, expected[c][seed], *out, bitwise);
            !why.empty())
          fail(where + why);
        ++(bitwise ? bitwiseRuns : nearRuns);
      }
      if (stream)
        streams.destroy(stream);
    });

  // The saboteur, paced by the threads' progress.
  for (int act = 0; act < 12; ++act) {
    int due = (act + 1) * kThreads * kRounds / 14;
    while (rounds < due)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::vector<std::string> entries;
    if (DIR *d = opendir(dir.c_str())) {
      while (dirent *item = readdir(d)) {
        std::string name = item->d_name;
        if (name.size() > 6 && name.substr(name.size() - 6) == ".entry")
          entries.push_back(dir + "/" + name);
      }
      closedir(d);
    }
    if (entries.empty())
      continue;
    std::sort(entries.begin(), entries.end());
    const std::string &target = entries[act % entries.size()];
    const std::string &other = entries[(act + 1) % entries.size()];
    switch (act % 3) {
    case 0: // garbage, atomically
      writeFile(target + ".saboteur", std::string(4096, '\x5a'));
      rename((target + ".saboteur").c_str(), target.c_str());
      break;
    case 1: // another variant's valid entry under this one's name
      writeFile(target + ".saboteur", readFile(other));
      rename((target + ".saboteur").c_str(), target.c_str());
      break;
    case 2:
      unlink(target.c_str());
      break;
    }
  }
  for (std::thread &t : threads)
    t.join();
  for (std::thread &t : processes)
    t.join();
  std::cout << "[ concurrent ] " << kThreads << " threads x " << kRounds
            << " compile+plan+run rounds and " << 2 * numCases
            << " attnc run --check processes: " << bitwiseRuns
            << " runs bitwise equal to the single-threaded one, " << nearRuns
            << " within one unit in the last place\n";
  for (const std::string &failure : failures)
    ADD_FAILURE() << failure;
}

} // namespace
} // namespace attnc
