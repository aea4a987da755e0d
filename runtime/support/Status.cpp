//===- Status.cpp - error values for the runtime --------------------------===//

#include "attnc/Status.h"

namespace attnc {

const char *toString(ErrorCode code) {
  switch (code) {
  case ErrorCode::Ok:
    return "ok";
  case ErrorCode::InvalidArgument:
    return "invalid argument";
  case ErrorCode::OutOfMemory:
    return "out of memory";
  case ErrorCode::NotFound:
    return "not found";
  case ErrorCode::Unsupported:
    return "unsupported";
  case ErrorCode::ParseError:
    return "parse error";
  case ErrorCode::Internal:
    return "internal error";
  case ErrorCode::NoDevice:
    return "no GPU";
  case ErrorCode::CudaError:
    return "CUDA error";
  case ErrorCode::CompileError:
    return "compile error";
  }
  return "unknown error";
}

std::string Status::toString() const {
  if (ok())
    return "ok";
  return std::string(attnc::toString(code_)) + ": " + message_;
}

} // namespace attnc
