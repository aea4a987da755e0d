//===- CubinCacheTest.cpp - variants that emit one CUDA share one cubin ---===//
//
// The caches have two levels: a variant's entry (its program, its CUDA and
// its cubin's key) and a cubin's entry (ptxas's log and the cubin) keyed by
// the CUDA. Two MLIR texts that emit the same CUDA run NVRTC once; a
// variant's entry holds no cubin bytes; a broken cubin entry is compiled
// again. Skipped without NVRTC.
//
//===----------------------------------------------------------------------===//

#include "CacheTestSupport.h"

#include "attnc/Driver/Compile.h"
#include "jit/CubinCache.h"
#include "jit/DiskCache.h"
#include "jit/Nvrtc.h"

#include <gtest/gtest.h>

namespace attnc {
namespace {

using test::freshDirectory;
using test::readFile;
using test::writeFile;

std::string example() {
  return readFile(std::string(ATTNC_EXAMPLES_DIR) + "/gqa_paged_decode.mlir");
}

/// The example with a comment, its SSA values and its function renamed: a
/// different text (and variant key) that emits the same CUDA.
std::string renamed(const std::string &source, const std::string &tag) {
  std::string text = "// " + tag + "\n" + source;
  for (auto [from, to] : {std::pair<std::string, std::string>{"%out", "%o"},
                          {"@gqa_paged_decode", "@" + tag}}) {
    for (size_t at = 0; (at = text.find(from, at)) != std::string::npos;
         at += to.size())
      text.replace(at, from.size(), to);
  }
  return text;
}

// The key of a cubin depends on the CUDA and the arch (and attnc's
// version, the device library and NVRTC's options), nothing else.
TEST(CubinKey, DependsOnTheCudaAndTheArch) {
  std::string key = jit::cubinKey("__global__ void k() {}", "sm_90a");
  EXPECT_EQ(key.size(), 64u);
  EXPECT_TRUE(jit::DiskCache::isValidKey(key));
  EXPECT_EQ(jit::cubinKey("__global__ void k() {}", "sm_90a"), key);
  EXPECT_NE(jit::cubinKey("__global__ void k() {}", "sm_80"), key);
  EXPECT_NE(jit::cubinKey("__global__ void k2() {}", "sm_90a"), key);
}

TEST(CubinKey, EntriesRoundTripAndRefuseWhatDoesNotFit) {
  jit::CubinEntry entry{"ptxas info: 0 bytes stack frame\n",
                        std::string{'\x7f', 'E', 'L', 'F', '\0', '\1'}};
  std::optional<jit::CubinEntry> back =
      jit::decodeCubinEntry(jit::encodeCubinEntry(entry));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->ptxasLog, entry.ptxasLog);
  EXPECT_EQ(back->cubin, entry.cubin);
  // An empty log is fine; an empty cubin is not.
  EXPECT_TRUE(jit::decodeCubinEntry("0\ncubin"));
  for (const char *bad : {"", "\n", "3\nlog", "4\nlog", "x\nlog cubin",
                          "12345678901234567890\nlog", "3 log cubin"})
    EXPECT_FALSE(jit::decodeCubinEntry(bad)) << bad;
}

class CubinCache : public ::testing::Test {
protected:
  void SetUp() override {
    StatusOr<jit::Nvrtc *> nvrtc = jit::Nvrtc::get();
    if (!nvrtc.ok())
      GTEST_SKIP() << "no NVRTC: " << nvrtc.status().message();
    forgetCompiledVariants();
    source = example();
    ASSERT_FALSE(source.empty());
  }
  StatusOr<CompiledVariant> compile(const std::string &text,
                                    const std::string &dir) {
    return compileVariant(text, "variant.mlir", CompileOptions(), dir);
  }
  std::string source;
};

TEST_F(CubinCache, VariantsThatEmitTheSameCudaCompileOnce) {
  std::string dir = freshDirectory();
  std::string other = renamed(source, "other");
  ASSERT_NE(other, source);
  StatusOr<CompiledVariant> first = compile(source, dir);
  ASSERT_TRUE(first.ok()) << first.status().toString();
  EXPECT_EQ(first->cubinSource, CubinSource::Compiled);
  EXPECT_FALSE(first->fromCache);
  EXPECT_GT(first->nvrtcMs, 0);

  // Another text, the same CUDA: the pipeline runs, NVRTC does not.
  StatusOr<CompiledVariant> second = compile(other, dir);
  ASSERT_TRUE(second.ok()) << second.status().toString();
  ASSERT_EQ(second->cuda, first->cuda) << "the texts should emit one CUDA";
  EXPECT_EQ(second->cubinSource, CubinSource::Memory);
  EXPECT_TRUE(second->fromCache);
  EXPECT_GT(second->frontendMs, 0);
  EXPECT_EQ(second->nvrtcMs, 0);
  EXPECT_EQ(second->cubin, first->cubin);
  EXPECT_EQ(second->cubinKey, first->cubinKey);
  EXPECT_EQ(second->ptxasLog, first->ptxasLog);

  // A fresh process (an empty memory): a third text finds the cubin on
  // disk, and the second's own entry skips the pipeline too.
  forgetCompiledVariants();
  StatusOr<CompiledVariant> third = compile(renamed(source, "third"), dir);
  ASSERT_TRUE(third.ok()) << third.status().toString();
  EXPECT_EQ(third->cubinSource, CubinSource::Disk);
  EXPECT_GT(third->frontendMs, 0);
  EXPECT_EQ(third->cubin, first->cubin);
  forgetCompiledVariants();
  StatusOr<CompiledVariant> hit = compile(other, dir);
  ASSERT_TRUE(hit.ok()) << hit.status().toString();
  EXPECT_EQ(hit->cubinSource, CubinSource::Disk);
  EXPECT_EQ(hit->frontendMs, 0) << "the variant's entry was not used";
  EXPECT_EQ(hit->cubin, first->cubin);
  EXPECT_EQ(hit->cuda, first->cuda);
  EXPECT_EQ(hit->program.serialize(), second->program.serialize());

  // Three variant entries and one cubin entry.
  StatusOr<std::vector<jit::DiskCache::Entry>> entries =
      jit::DiskCache(dir).list();
  ASSERT_TRUE(entries.ok()) << entries.status().toString();
  EXPECT_EQ(entries->size(), 4u);
}

TEST_F(CubinCache, VariantEntryHoldsNoCubinBytes) {
  std::string dir = freshDirectory();
  StatusOr<CompiledVariant> compiled = compile(source, dir);
  ASSERT_TRUE(compiled.ok()) << compiled.status().toString();
  jit::DiskCache disk(dir);
  StatusOr<std::vector<jit::DiskCache::Entry>> entries = disk.list();
  ASSERT_TRUE(entries.ok()) << entries.status().toString();
  ASSERT_EQ(entries->size(), 2u);
  int variants = 0;
  for (const jit::DiskCache::Entry &entry : *entries) {
    std::optional<std::string> payload = disk.get(entry.key);
    ASSERT_TRUE(payload.has_value()) << entry.key;
    if (entry.key == compiled->cubinKey) {
      std::optional<jit::CubinEntry> cubin = jit::decodeCubinEntry(*payload);
      ASSERT_TRUE(cubin.has_value());
      EXPECT_EQ(cubin->cubin, compiled->cubin);
      EXPECT_EQ(cubin->ptxasLog, compiled->ptxasLog);
      continue;
    }
    ++variants;
    // The program, the CUDA and the cubin's key: a few kilobytes.
    EXPECT_EQ(payload->find(compiled->cubin), std::string::npos);
    EXPECT_LT(payload->size(), compiled->cubin.size());
    EXPECT_NE(payload->find(compiled->cuda), std::string::npos);
    EXPECT_EQ(payload->substr(payload->size() - 64), compiled->cubinKey);
  }
  EXPECT_EQ(variants, 1);
}

TEST_F(CubinCache, BrokenCubinEntryIsCompiledAgain) {
  std::string dir = freshDirectory();
  StatusOr<CompiledVariant> reference = compile(source, dir);
  ASSERT_TRUE(reference.ok()) << reference.status().toString();
  jit::DiskCache disk(dir);
  std::string path = dir + "/" + reference->cubinKey + ".entry";
  std::string whole = readFile(path);
  ASSERT_GT(whole.size(), 1000u);
  std::string garbled = whole;
  garbled[garbled.size() / 2] ^= 0x5a;
  // Each with a valid checksum but the last two: no cubin, a log longer
  // than the payload, a log size that is no number, then bytes changed
  // under the checksum and a file cut short.
  struct Case {
    std::string name, payload, file;
  };
  std::vector<Case> cases = {
      {"no cubin", "3\nlog", ""},
      {"log past the end", "99999\nlog and a little", ""},
      {"no size", "log\ncubin", ""},
      {"garbled", "", garbled},
      {"truncated", "", whole.substr(0, whole.size() - 100)},
  };
  for (const Case &c : cases) {
    if (c.file.empty())
      ASSERT_TRUE(disk.put(reference->cubinKey, c.payload).ok()) << c.name;
    else
      writeFile(path, c.file);
    forgetCompiledVariants();
    StatusOr<CompiledVariant> got = compile(source, dir);
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status().toString();
    EXPECT_EQ(got->cubinSource, CubinSource::Compiled) << c.name;
    EXPECT_FALSE(got->fromCache) << c.name;
    EXPECT_EQ(got->cubin, reference->cubin) << c.name;
    EXPECT_EQ(got->cuda, reference->cuda) << c.name;
    // The recompile put the entry back: the next compile hits both levels.
    forgetCompiledVariants();
    StatusOr<CompiledVariant> again = compile(source, dir);
    ASSERT_TRUE(again.ok()) << c.name;
    EXPECT_EQ(again->cubinSource, CubinSource::Disk) << c.name;
    EXPECT_EQ(again->frontendMs, 0) << c.name;
    EXPECT_EQ(again->cubin, reference->cubin) << c.name;
  }
}

// A variant's entry whose cubin is gone (pruned) runs the pipeline and
// NVRTC again rather than fail.
TEST_F(CubinCache, VariantEntryWithoutItsCubinIsCompiledAgain) {
  std::string dir = freshDirectory();
  StatusOr<CompiledVariant> reference = compile(source, dir);
  ASSERT_TRUE(reference.ok()) << reference.status().toString();
  ASSERT_EQ(unlink((dir + "/" + reference->cubinKey + ".entry").c_str()), 0);
  forgetCompiledVariants();
  StatusOr<CompiledVariant> got = compile(source, dir);
  ASSERT_TRUE(got.ok()) << got.status().toString();
  EXPECT_EQ(got->cubinSource, CubinSource::Compiled);
  EXPECT_EQ(got->cubin, reference->cubin);
}

// A cold compile ("-") neither reads nor writes any cache.
TEST_F(CubinCache, NoCacheCompilesEveryTimeInANewProcess) {
  StatusOr<CompiledVariant> first = compile(source, "-");
  ASSERT_TRUE(first.ok()) << first.status().toString();
  EXPECT_EQ(first->cubinSource, CubinSource::Compiled);
  forgetCompiledVariants();
  StatusOr<CompiledVariant> again = compile(renamed(source, "again"), "-");
  ASSERT_TRUE(again.ok()) << again.status().toString();
  EXPECT_EQ(again->cubinSource, CubinSource::Compiled);
  EXPECT_EQ(again->cubin, first->cubin);
}

} // namespace
} // namespace attnc
