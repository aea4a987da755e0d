//===- Sha256.h - SHA-256 (FIPS 180-4) --------------------------*- C++ -*-===//
//
// The kernel cache names and checks its entries with SHA-256: a collision
// of a weaker hash (FNV) could be searched for, so a crafted variant could
// share a key with another. The runtime has no LLVM dependency, so this is
// our own, written from FIPS 180-4 and checked against its test vectors.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_SUPPORT_SHA256_H
#define ATTNC_RUNTIME_SUPPORT_SHA256_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace attnc {

/// An incremental SHA-256: update() any number of times with pieces of the
/// message, then digest(). Hashing in pieces gives the digest of the pieces
/// joined, without joining them (a cache entry's payload is up to 256 MiB).
class Sha256 {
public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  Sha256 &update(std::string_view data);
  /// The digest of everything so far; the hasher may keep being updated.
  Digest digest() const;
  /// digest() as 64 lower-case hex digits.
  std::string hexDigest() const;

  /// The hex digest of `data`.
  static std::string hex(std::string_view data);

private:
  void compress(const uint8_t *block);

  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  /// Bytes so far; the padding records it in bits, modulo 2^64.
  uint64_t length_ = 0;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_SUPPORT_SHA256_H
