//===- Choices.h - fuzz bytes read as a sequence of choices -----*- C++ -*-===//
//
// Each choice takes one byte. When the bytes run out every choice is the
// first option, which the generators make the plainest valid one, so a
// short input is a simple variant and the fuzzer grows it choice by choice.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TEST_FUZZ_CHOICES_H
#define ATTNC_TEST_FUZZ_CHOICES_H

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace attnc::fuzz {

class Choices {
public:
  Choices(const uint8_t *data, size_t size) : data_(data), size_(size) {}

  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  /// One of `options`, the first when the bytes are spent.
  template <typename T> T pick(std::initializer_list<T> options) {
    return options.begin()[byte() % options.size()];
  }
  std::string pick(std::initializer_list<const char *> options) {
    return options.begin()[byte() % options.size()];
  }
  /// True with about `percent` percent chance; false when spent: a feature
  /// the plainest variant leaves out.
  bool chance(int percent) { return byte() >= 256 - percent * 256 / 100; }
  /// True with about `percent` percent chance; true when spent: the usual
  /// value rather than an edge case.
  bool usual(int percent) { return byte() < 256 - (100 - percent) * 256 / 100; }
  /// A number in [0, n).
  int below(int n) { return byte() % n; }

private:
  const uint8_t *data_;
  size_t size_, at_ = 0;
};

} // namespace attnc::fuzz

#endif // ATTNC_TEST_FUZZ_CHOICES_H
