//===- Request.cpp - a generation request ---------------------------------===//

#include "sched/Request.h"

namespace attnc {

Token outputToken(RequestId request, int64_t position) {
  // splitmix64 of (request, position), folded into [2^20, 2^31).
  uint64_t x = static_cast<uint64_t>(request) * 0x9E3779B97F4A7C15ull +
               static_cast<uint64_t>(position);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<Token>((1u << 20) + x % ((1u << 31) - (1u << 20)));
}

std::vector<Token> fullSequence(const TracedRequest &request) {
  std::vector<Token> tokens = request.prompt;
  for (int64_t i = 0; i < request.outputLen; ++i)
    tokens.push_back(outputToken(request.id, i));
  return tokens;
}

std::vector<Token> computedSequence(const TracedRequest &request) {
  std::vector<Token> tokens = fullSequence(request);
  tokens.pop_back();
  return tokens;
}

} // namespace attnc
