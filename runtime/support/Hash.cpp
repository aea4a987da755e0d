//===- Hash.cpp - content hashes for cache keys ---------------------------===//

#include "support/Hash.h"

#include <cstdio>

namespace attnc {

uint64_t fnv1a64(std::string_view data, uint64_t seed) {
  uint64_t hash = seed;
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string contentKey(std::string_view data) {
  // Two FNV streams from different seeds; the second also mixes the length.
  uint64_t a = fnv1a64(data);
  uint64_t b = fnv1a64(data, 0x84222325cbf29ce4ull ^ data.size());
  char hex[33];
  std::snprintf(hex, sizeof(hex), "%016llx%016llx",
                static_cast<unsigned long long>(a),
                static_cast<unsigned long long>(b));
  return hex;
}

} // namespace attnc
