//===- JitTest.cpp - kernel cache, program text, driver errors ------------===//

#include "cuda/CudaDriver.h"
#include "exec/Program.h"
#include "jit/DiskCache.h"
#include "jit/Nvrtc.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <unistd.h>

namespace attnc {
namespace {

std::string freshDirectory() {
  char pattern[] = "/tmp/attnc-cache-test-XXXXXX";
  return mkdtemp(pattern);
}

TEST(DiskCache, StoresAndReturnsPayloads) {
  jit::DiskCache cache(freshDirectory() + "/nested/dir");
  EXPECT_FALSE(cache.get("abc").has_value());
  std::string payload("cubin\0with\nbytes", 16);
  ASSERT_TRUE(cache.put("abc", payload).ok());
  ASSERT_TRUE(cache.get("abc").has_value());
  EXPECT_EQ(*cache.get("abc"), payload);
  auto entries = cache.list();
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_TRUE((*entries)[0].valid);
}

TEST(DiskCache, CorruptEntryIsAMissNotTrusted) {
  jit::DiskCache cache(freshDirectory());
  ASSERT_TRUE(cache.put("key", "0123456789").ok());
  {
    // Flip one payload byte: the checksum no longer matches.
    std::fstream file(cache.directory() + "/key.entry",
                      std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-1, std::ios::end);
    file.put('X');
  }
  EXPECT_FALSE(cache.get("key").has_value());
  auto entries = cache.list();
  ASSERT_TRUE(entries.ok());
  EXPECT_FALSE((*entries)[0].valid);
  // Recompiling overwrites it.
  ASSERT_TRUE(cache.put("key", "0123456789").ok());
  EXPECT_EQ(*cache.get("key"), "0123456789");
}

TEST(DiskCache, ClearRemovesEverything) {
  jit::DiskCache cache(freshDirectory());
  ASSERT_TRUE(cache.put("a", "1").ok());
  ASSERT_TRUE(cache.put("b", "2").ok());
  auto removed = cache.clear();
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 2);
  EXPECT_FALSE(cache.get("a").has_value());
}

TEST(DiskCache, DefaultDirectoryFollowsXdg) {
  setenv("XDG_CACHE_HOME", "/somewhere", 1);
  EXPECT_EQ(jit::DiskCache::defaultDirectory(), "/somewhere/attnc");
}

TEST(Program, TextFormRoundTrips) {
  Program p;
  ValueSpec q;
  q.kind = ValueSpec::Kind::Query;
  q.heads = 32;
  q.dim = 128;
  q.layout = TokenLayout::Ragged;
  ValueSpec buffer;
  buffer.kind = ValueSpec::Kind::Buffer;
  buffer.dtype = DType::I32;
  buffer.shape = {-1, 64};
  p.values = {q, buffer};
  LaunchSpec l;
  l.kernel = "attention_0";
  l.kvSplits = 16;
  l.args = {0, 1};
  l.results = {1};
  l.splitResults = true;
  // Neighbouring flags alternate, so a swap in the text form shows.
  l.mergesInSecondLaunch = true;
  l.overlapsPreviousLaunch = false;
  l.claimsItems = true;
  l.clusterCtas = 2;
  l.schedule = Schedule::Latent;
  // Floats no decimal form of 6 digits round-trips.
  l.values = {1000, 0, 4, 0.0883883476f, 30.000002f};
  p.launches = {l};
  p.inputs = {0, 1};
  p.outputs = {1};
  StatusOr<Program> back = Program::deserialize(p.serialize());
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_EQ(back->serialize(), p.serialize());
  EXPECT_EQ(back->values[1].shape, (std::vector<int64_t>{-1, 64}));
  EXPECT_TRUE(back->launches[0].splitResults);
  EXPECT_TRUE(back->launches[0].mergesInSecondLaunch);
  EXPECT_EQ(back->launches[0].schedule, Schedule::Latent);
  // A schedule past the table is bad text, not an enumerator of nothing.
  std::string text = p.serialize();
  size_t at = text.find(" 2 3 ");
  ASSERT_NE(at, std::string::npos) << text;
  text.replace(at, 5, " 2 99 ");
  EXPECT_FALSE(Program::deserialize(text).ok());
  EXPECT_FALSE(back->launches[0].overlapsPreviousLaunch);
  EXPECT_TRUE(back->launches[0].claimsItems);
  EXPECT_EQ(back->launches[0].clusterCtas, 2);
  const VariantValues &values = back->launches[0].values;
  EXPECT_EQ(values.window_left, 1000);
  EXPECT_EQ(values.window_right, 0);
  EXPECT_EQ(values.sinks, 4);
  EXPECT_EQ(values.scale, 0.0883883476f);
  EXPECT_EQ(values.softcap, 30.000002f);
}

TEST(Program, BadTextIsAnError) {
  StatusOr<Program> p = Program::deserialize("program 1 0\nvalue x\n");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ErrorCode::ParseError);
}

TEST(CudaDriver, MissingGpuIsAnErrorValue) {
  StatusOr<cuda::Driver *> driver = cuda::Driver::get();
  if (driver.ok())
    GTEST_SKIP() << "this machine has a GPU: " << (*driver)->device().name;
  EXPECT_EQ(driver.status().code(), ErrorCode::NoDevice);
  EXPECT_FALSE(driver.status().message().empty());
}

// A compile that bypasses the CUDA driver's compute cache (what `--no-cache`
// asks for) is accepted by NVRTC and gives the same code as one that may use
// it: the bypass changes where the time goes, never the kernel.
TEST(Nvrtc, BypassingTheDriverCacheGivesTheSameCubin) {
  StatusOr<jit::Nvrtc *> nvrtc = jit::Nvrtc::get();
  if (!nvrtc.ok())
    GTEST_SKIP() << "no NVRTC: " << nvrtc.status().message();
  std::string source = "extern \"C\" __global__ void twice(float *x) {\n"
                       "  x[threadIdx.x] *= 2.0f;\n"
                       "}\n";
  StatusOr<jit::CompiledCode> cached =
      (*nvrtc)->compile(source, "sm_90a", /*ptx=*/false, /*driverCache=*/true);
  StatusOr<jit::CompiledCode> cold =
      (*nvrtc)->compile(source, "sm_90a", /*ptx=*/false, /*driverCache=*/false);
  ASSERT_TRUE(cached.ok()) << cached.status().toString();
  ASSERT_TRUE(cold.ok()) << cold.status().toString();
  EXPECT_FALSE(cold->image.empty());
  EXPECT_EQ(cold->image, cached->image);
}

} // namespace
} // namespace attnc
