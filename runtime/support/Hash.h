//===- Hash.h - content hashes for cache keys -------------------*- C++ -*-===//

#ifndef ATTNC_RUNTIME_SUPPORT_HASH_H
#define ATTNC_RUNTIME_SUPPORT_HASH_H

#include <cstdint>
#include <string>
#include <string_view>

namespace attnc {

/// 64-bit FNV-1a of `data`, continuing from `seed`.
uint64_t fnv1a64(std::string_view data, uint64_t seed = 0xcbf29ce484222325ull);

/// A 128-bit content hash as 32 hex digits: the key of cache entries.
std::string contentKey(std::string_view data);

} // namespace attnc

#endif // ATTNC_RUNTIME_SUPPORT_HASH_H
