//===- Hash.h - content hashes for cache keys -------------------*- C++ -*-===//

#ifndef ATTNC_RUNTIME_SUPPORT_HASH_H
#define ATTNC_RUNTIME_SUPPORT_HASH_H

#include <string>
#include <string_view>

namespace attnc {

/// The SHA-256 of `data` as 64 hex digits: the key of cache entries. A
/// cryptographic hash, so that no one can make a variant whose key is that
/// of another (FNV-1a, used before, offers no such guarantee).
std::string contentKey(std::string_view data);

} // namespace attnc

#endif // ATTNC_RUNTIME_SUPPORT_HASH_H
