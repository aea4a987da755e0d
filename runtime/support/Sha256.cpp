//===- Sha256.cpp - SHA-256 (FIPS 180-4) ----------------------------------===//
//
// Section numbers below are FIPS 180-4's.
//
//===----------------------------------------------------------------------===//

#include "support/Sha256.h"

#include <algorithm>
#include <cstring>

namespace attnc {

namespace {
/// 4.2.2: the first 32 bits of the fractional parts of the cube roots of
/// the first 64 primes.
constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

/// 5.3.3: the first 32 bits of the fractional parts of the square roots of
/// the first 8 primes.
constexpr uint32_t kInitial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                  0xa54ff53a, 0x510e527f, 0x9b05688c,
                                  0x1f83d9ab, 0x5be0cd19};

constexpr uint32_t rotr(uint32_t x, int n) {
  return (x >> n) | (x << (32 - n));
}
// 4.1.2.
constexpr uint32_t ch(uint32_t x, uint32_t y, uint32_t z) {
  return (x & y) ^ (~x & z);
}
constexpr uint32_t maj(uint32_t x, uint32_t y, uint32_t z) {
  return (x & y) ^ (x & z) ^ (y & z);
}
constexpr uint32_t bigSigma0(uint32_t x) {
  return rotr(x, 2) ^ rotr(x, 13) ^ rotr(x, 22);
}
constexpr uint32_t bigSigma1(uint32_t x) {
  return rotr(x, 6) ^ rotr(x, 11) ^ rotr(x, 25);
}
constexpr uint32_t smallSigma0(uint32_t x) {
  return rotr(x, 7) ^ rotr(x, 18) ^ (x >> 3);
}
constexpr uint32_t smallSigma1(uint32_t x) {
  return rotr(x, 17) ^ rotr(x, 19) ^ (x >> 10);
}
} // namespace

Sha256::Sha256() { std::memcpy(state_, kInitial, sizeof(state_)); }

/// 6.2.2: one 512-bit block into the state. Words are big-endian (3.1).
void Sha256::compress(const uint8_t *block) {
  uint32_t w[64];
  for (int t = 0; t < 16; ++t)
    w[t] = uint32_t(block[4 * t]) << 24 | uint32_t(block[4 * t + 1]) << 16 |
           uint32_t(block[4 * t + 2]) << 8 | uint32_t(block[4 * t + 3]);
  for (int t = 16; t < 64; ++t)
    w[t] =
        smallSigma1(w[t - 2]) + w[t - 7] + smallSigma0(w[t - 15]) + w[t - 16];
  uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3],
           e = state_[4], f = state_[5], g = state_[6], h = state_[7];
  for (int t = 0; t < 64; ++t) {
    uint32_t t1 = h + bigSigma1(e) + ch(e, f, g) + kRound[t] + w[t];
    uint32_t t2 = bigSigma0(a) + maj(a, b, c);
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
  state_[5] += f;
  state_[6] += g;
  state_[7] += h;
}

Sha256 &Sha256::update(std::string_view data) {
  const auto *bytes = reinterpret_cast<const uint8_t *>(data.data());
  size_t left = data.size();
  length_ += left;
  // Top up a partial block first; whole blocks then go straight from the
  // input, without a copy.
  if (buffered_ > 0) {
    size_t take = std::min(left, sizeof(buffer_) - buffered_);
    std::memcpy(buffer_ + buffered_, bytes, take);
    buffered_ += take;
    bytes += take;
    left -= take;
    if (buffered_ < sizeof(buffer_))
      return *this;
    compress(buffer_);
    buffered_ = 0;
  }
  for (; left >= sizeof(buffer_); bytes += 64, left -= 64)
    compress(bytes);
  std::memcpy(buffer_, bytes, left);
  buffered_ = left;
  return *this;
}

Sha256::Digest Sha256::digest() const {
  // 5.1.1: a 1 bit, zeros up to 448 bits modulo 512, then the message's
  // length in bits as a 64-bit big-endian number. Padded on a copy, so
  // that this hasher can go on.
  Sha256 last = *this;
  uint64_t bits = length_ * 8;
  uint8_t padding[72] = {0x80};
  size_t zeros = (buffered_ < 56 ? 56 : 120) - buffered_;
  for (int i = 0; i < 8; ++i)
    padding[zeros + i] = uint8_t(bits >> (56 - 8 * i));
  last.update(
      std::string_view(reinterpret_cast<const char *>(padding), zeros + 8));
  Digest out;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j)
      out[4 * i + j] = uint8_t(last.state_[i] >> (24 - 8 * j));
  return out;
}

std::string Sha256::hexDigest() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(64);
  for (uint8_t byte : digest()) {
    hex += kDigits[byte >> 4];
    hex += kDigits[byte & 15];
  }
  return hex;
}

std::string Sha256::hex(std::string_view data) {
  return Sha256().update(data).hexDigest();
}

} // namespace attnc
