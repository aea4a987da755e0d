//===- Hash.cpp - content hashes for cache keys ---------------------------===//

#include "support/Hash.h"

#include "support/Sha256.h"

namespace attnc {

std::string contentKey(std::string_view data) { return Sha256::hex(data); }

} // namespace attnc
