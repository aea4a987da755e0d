//===- KernelLibraryTest.cpp - the prebuilt kernel library file -----------===//
//
// A library written is read back entry for entry; a key it lacks is a
// miss; every malformed file (bad magic, another format version, cut short
// or extended, an index that does not fit, is not sorted or fails its
// checksum, an entry outside the file) is refused with the reason, and a
// payload changed under its checksum is a miss, never a crash.
//
//===----------------------------------------------------------------------===//

#include "CacheTestSupport.h"

#include "jit/KernelLibrary.h"
#include "support/Hash.h"
#include "support/Sha256.h"

#include <gtest/gtest.h>

#include <cstring>

namespace attnc {
namespace {

using jit::KernelLibrary;
using test::freshDirectory;
using test::readFile;
using test::writeFile;

std::map<std::string, std::string> sampleEntries() {
  std::map<std::string, std::string> entries;
  for (int i = 0; i < 5; ++i)
    entries[contentKey("key " + std::to_string(i))] =
        std::to_string(i) + "\nlog" + std::string(1000 + 37 * i, char('a' + i));
  entries[contentKey("empty payload")] = "";
  return entries;
}

/// The message of opening `path`'s library, "" when it opened.
std::string openProblem(const std::string &path) {
  StatusOr<std::unique_ptr<KernelLibrary>> library = KernelLibrary::open(path);
  return library.ok() ? "" : library.status().message();
}

/// Rewrites the index checksum of a library image, as a writer with a bug
/// (or a hostile one) would, so that only the flaw under test remains.
void resealIndex(std::string &image) {
  uint32_t count = 0;
  std::memcpy(&count, image.data() + 12, 4);
  std::string_view index(image.data() + KernelLibrary::kHeaderBytes,
                         size_t(count) * KernelLibrary::kRecordBytes);
  Sha256::Digest hash = Sha256().update(index).digest();
  std::memcpy(image.data() + 24, hash.data(), hash.size());
}

TEST(KernelLibrary, RoundTrip) {
  std::string path = freshDirectory() + "/lib.bin";
  std::map<std::string, std::string> entries = sampleEntries();
  ASSERT_TRUE(KernelLibrary::write(path, entries).ok());
  StatusOr<std::unique_ptr<KernelLibrary>> library = KernelLibrary::open(path);
  ASSERT_TRUE(library.ok()) << library.status().toString();
  EXPECT_EQ((*library)->size(), entries.size());
  for (const auto &[key, payload] : entries) {
    std::optional<std::string_view> found = (*library)->find(key);
    ASSERT_TRUE(found.has_value()) << key;
    EXPECT_EQ(*found, payload);
  }
}

TEST(KernelLibrary, LookupMiss) {
  std::string path = freshDirectory() + "/lib.bin";
  ASSERT_TRUE(KernelLibrary::write(path, sampleEntries()).ok());
  StatusOr<std::unique_ptr<KernelLibrary>> library = KernelLibrary::open(path);
  ASSERT_TRUE(library.ok()) << library.status().toString();
  bool corrupt = true;
  EXPECT_FALSE((*library)->find(contentKey("not there"), &corrupt));
  EXPECT_FALSE(corrupt);
  EXPECT_FALSE((*library)->find("short"));
  EXPECT_FALSE((*library)->find(""));
  // An empty library opens, and has nothing.
  std::string empty = freshDirectory() + "/empty.bin";
  ASSERT_TRUE(KernelLibrary::write(empty, {}).ok());
  StatusOr<std::unique_ptr<KernelLibrary>> none = KernelLibrary::open(empty);
  ASSERT_TRUE(none.ok()) << none.status().toString();
  EXPECT_FALSE((*none)->find(contentKey("key 0")));
}

TEST(KernelLibrary, WriteRefusesKeysThatAreNotHex) {
  std::string path = freshDirectory() + "/lib.bin";
  Status status = KernelLibrary::write(path, {{"../escape", "x"}});
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("64 lower-case hex digits"),
            std::string::npos)
      << status.message();
}

TEST(KernelLibrary, MalformedFilesAreRefusedByName) {
  std::string dir = freshDirectory();
  std::string good = dir + "/good.bin";
  ASSERT_TRUE(KernelLibrary::write(good, sampleEntries()).ok());
  std::string image = readFile(good);
  size_t indexEnd = KernelLibrary::kHeaderBytes +
                    sampleEntries().size() * KernelLibrary::kRecordBytes;

  struct Case {
    std::string name, bytes, message;
  };
  std::vector<Case> cases;
  cases.push_back({"empty", "", "less than a header"});
  cases.push_back({"short", image.substr(0, 40), "less than a header"});
  {
    std::string bad = image;
    bad[0] = 'X';
    cases.push_back({"bad magic", bad, "bad magic"});
  }
  {
    std::string bad = image;
    bad[8] = 2;
    cases.push_back({"version", bad, "format version 2"});
  }
  cases.push_back({"truncated", image.substr(0, image.size() - 1),
                   "truncated or extended"});
  cases.push_back({"extended", image + "x", "truncated or extended"});
  {
    std::string bad = image;
    bad[12] = char(0xff); // more entries than the file holds
    bad[13] = char(0xff);
    cases.push_back({"count", bad, "does not fit"});
  }
  {
    std::string bad = image;
    bad[KernelLibrary::kHeaderBytes + 70] ^= 1; // an offset, not resealed
    cases.push_back({"index checksum", bad, "checksum does not match"});
  }
  {
    std::string bad = image; // entry 1's offset past the end
    size_t at = KernelLibrary::kHeaderBytes + KernelLibrary::kRecordBytes + 64;
    for (int i = 0; i < 8; ++i)
      bad[at + i] = char(0x7f);
    resealIndex(bad);
    cases.push_back({"offset", bad, "lies outside the file"});
  }
  {
    std::string bad = image; // entry 0's size runs past the end
    size_t at = KernelLibrary::kHeaderBytes + 72;
    for (int i = 0; i < 8; ++i)
      bad[at + i] = char(0xff);
    resealIndex(bad);
    cases.push_back({"size", bad, "lies outside the file"});
  }
  {
    std::string bad = image; // entry 0's payload inside the index
    size_t at = KernelLibrary::kHeaderBytes + 64;
    std::memset(bad.data() + at, 0, 8);
    resealIndex(bad);
    cases.push_back({"offset in the index", bad, "lies outside the file"});
  }
  {
    std::string bad = image; // two records swapped
    std::string first =
        bad.substr(KernelLibrary::kHeaderBytes, KernelLibrary::kRecordBytes);
    std::string second =
        bad.substr(KernelLibrary::kHeaderBytes + KernelLibrary::kRecordBytes,
                   KernelLibrary::kRecordBytes);
    bad.replace(KernelLibrary::kHeaderBytes, KernelLibrary::kRecordBytes,
                second);
    bad.replace(KernelLibrary::kHeaderBytes + KernelLibrary::kRecordBytes,
                KernelLibrary::kRecordBytes, first);
    resealIndex(bad);
    cases.push_back({"unsorted", bad, "not sorted"});
  }
  {
    std::string bad = image; // a key that is no hex
    bad[KernelLibrary::kHeaderBytes] = 'Z';
    resealIndex(bad);
    cases.push_back({"key", bad, "bad key"});
  }
  for (const Case &c : cases) {
    std::string path = dir + "/" + c.name + ".bin";
    writeFile(path, c.bytes);
    std::string problem = openProblem(path);
    EXPECT_NE(problem.find(c.message), std::string::npos)
        << c.name << ": " << problem;
    EXPECT_NE(problem.find(path), std::string::npos) << c.name;
  }
  EXPECT_NE(openProblem(dir + "/missing.bin").find("cannot open"),
            std::string::npos);
  EXPECT_NE(openProblem(dir).find("not a regular file"), std::string::npos);
  ASSERT_GT(image.size(), indexEnd);
}

TEST(KernelLibrary, PayloadChangedUnderItsChecksumIsAMiss) {
  std::string path = freshDirectory() + "/lib.bin";
  std::map<std::string, std::string> entries = sampleEntries();
  ASSERT_TRUE(KernelLibrary::write(path, entries).ok());
  std::string image = readFile(path);
  // The last byte belongs to the last payload.
  image.back() ^= 1;
  writeFile(path, image);
  StatusOr<std::unique_ptr<KernelLibrary>> library = KernelLibrary::open(path);
  ASSERT_TRUE(library.ok()) << library.status().toString();
  int corrupted = 0, found = 0;
  for (const auto &[key, payload] : entries) {
    bool corrupt = false;
    std::optional<std::string_view> got = (*library)->find(key, &corrupt);
    corrupted += corrupt;
    found += got.has_value();
    if (got)
      EXPECT_EQ(*got, payload);
    else
      EXPECT_TRUE(corrupt) << key;
  }
  EXPECT_EQ(corrupted, 1);
  EXPECT_EQ(found, int(entries.size()) - 1);
}

} // namespace
} // namespace attnc
