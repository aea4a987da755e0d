//===- Sha256Test.cpp - SHA-256 against FIPS 180-4's test vectors ---------===//
//
// The kernel cache trusts an entry only when its SHA-256 matches: a wrong
// implementation would still agree with itself, so these check it against
// NIST's published digests, and check that hashing in pieces (split at and
// across block boundaries) gives the digest of the whole.
//
//===----------------------------------------------------------------------===//

#include "support/Sha256.h"
#include "support/Hash.h"

#include <gtest/gtest.h>

#include <string>

namespace attnc {
namespace {

TEST(Sha256, NistVectors) {
  // FIPS 180-4's examples (NIST CSRC "SHA256.pdf", "SHA2_Additional.pdf").
  EXPECT_EQ(Sha256::hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256::hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // 448 bits: the length no longer fits the first block's padding.
  EXPECT_EQ(
      Sha256::hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(
      Sha256::hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijk"
                  "lmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  EXPECT_EQ(Sha256::hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, LengthsAroundThePaddingBoundaries) {
  // 55 bytes leave room for the 0x80 byte and the length in one block; 56
  // do not; 64 fill a block exactly; 119 and 120 are the same in the second.
  struct Case {
    size_t length;
    const char *digest;
  };
  for (const Case &c : {
           Case{55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e91"
                    "0f734318"},
           Case{56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef797068"
                    "6ec6738a"},
           Case{63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da45"
                    "7ddc2f34"},
           Case{64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df"
                    "154668eb"},
           Case{119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7e"
                     "a6584dcfb"},
           Case{120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55"
                     "af904c21c"},
       })
    EXPECT_EQ(Sha256::hex(std::string(c.length, 'a')), c.digest) << c.length;
}

TEST(Sha256, PiecesGiveTheDigestOfTheWhole) {
  // Bytes of every value, so that a byte-order or sign slip shows.
  std::string message;
  for (int i = 0; i < 300; ++i)
    message += char((i * 131 + 7) & 0xff);
  std::string whole = Sha256::hex(message);
  // Every split into three pieces whose first cut falls anywhere in the
  // first two blocks and whose pieces span zero to two blocks.
  for (size_t first = 0; first <= 130; ++first)
    for (size_t second : {size_t(0), size_t(1), size_t(63), size_t(64),
                          size_t(65), size_t(127), size_t(128), size_t(129)}) {
      if (first + second > message.size())
        continue;
      Sha256 hasher;
      hasher.update(std::string_view(message).substr(0, first));
      hasher.update(std::string_view(message).substr(first, second));
      hasher.update(std::string_view(message).substr(first + second));
      ASSERT_EQ(hasher.hexDigest(), whole)
          << "pieces of " << first << ", " << second << " and the rest";
    }
  // One byte at a time, across the million-'a' vector's 15625 blocks.
  Sha256 bytewise;
  for (int i = 0; i < 1000000; ++i)
    bytewise.update("a");
  EXPECT_EQ(bytewise.hexDigest(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, DigestDoesNotEndTheHasher) {
  Sha256 hasher;
  hasher.update("ab");
  EXPECT_EQ(hasher.hexDigest(), Sha256::hex("ab"));
  hasher.update("c");
  EXPECT_EQ(hasher.hexDigest(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, CacheKeysAreSha256Hex) {
  EXPECT_EQ(contentKey("abc"), Sha256::hex("abc"));
  EXPECT_EQ(contentKey("").size(), 64u);
}

} // namespace
} // namespace attnc
