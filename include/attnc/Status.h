//===- Status.h - error values of the C++ API and the runtime ---*- C++ -*-===//
//
// The runtime reports every failure as a value (never an abort): a Status,
// or a StatusOr<T> holding either a result or the Status that explains why
// there is none. The runtime has no LLVM dependency, so this is our own.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_STATUS_H
#define ATTNC_STATUS_H

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace attnc {

enum class ErrorCode {
  Ok,
  InvalidArgument,
  OutOfMemory,
  NotFound,
  Unsupported,
  ParseError,
  Internal,
  NoDevice,
  CudaError,
  CompileError,
};

const char *toString(ErrorCode code);

class [[nodiscard]] Status {
public:
  Status() = default;
  static Status error(ErrorCode code, std::string message) {
    assert(code != ErrorCode::Ok && "an error needs an error code");
    return Status(code, std::move(message));
  }

  bool ok() const { return code_ == ErrorCode::Ok; }
  ErrorCode code() const { return code_; }
  const std::string &message() const { return message_; }
  /// "out of memory: the pool has 3 free pages, 5 are needed".
  std::string toString() const;

private:
  Status(ErrorCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  ErrorCode code_ = ErrorCode::Ok;
  std::string message_;
};

template <typename T> class [[nodiscard]] StatusOr {
public:
  StatusOr(T value) : value_(std::move(value)) {}
  StatusOr(Status status) : value_(std::move(status)) {
    assert(!std::get<Status>(value_).ok() && "StatusOr needs a value or error");
  }

  bool ok() const { return std::holds_alternative<T>(value_); }
  Status status() const { return ok() ? Status() : std::get<Status>(value_); }

  T &value() & { return std::get<T>(value_); }
  const T &value() const & { return std::get<T>(value_); }
  T &&value() && { return std::get<T>(std::move(value_)); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T &&operator*() && { return std::move(*this).value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

private:
  std::variant<T, Status> value_;
};

} // namespace attnc

#endif // ATTNC_STATUS_H
