//===- DynamicLibrary.h - dlopen with error values --------------*- C++ -*-===//
//
// libcuda and libnvrtc are loaded at run time, so attnc starts (and compiles,
// lists its cache, runs the simulator) on machines without them.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_RUNTIME_SUPPORT_DYNAMICLIBRARY_H
#define ATTNC_RUNTIME_SUPPORT_DYNAMICLIBRARY_H

#include "attnc/Status.h"

#include <string>
#include <vector>

namespace attnc {

class DynamicLibrary {
public:
  /// Opens the first of `names` that loads; the error lists every attempt.
  static StatusOr<DynamicLibrary> open(const std::vector<std::string> &names,
                                       ErrorCode missingCode);
  /// Looks up `symbol`, or returns an error naming it.
  Status lookup(const char *symbol, void **address) const;
  const std::string &path() const { return path_; }

private:
  void *handle_ = nullptr;
  std::string path_;
};

/// Looks up a function with its signature's type.
template <typename FnPtr>
Status lookupFunction(const DynamicLibrary &library, const char *symbol,
                      FnPtr &function) {
  void *address = nullptr;
  Status status = library.lookup(symbol, &address);
  function = reinterpret_cast<FnPtr>(address);
  return status;
}

/// The one instance of `T`, a wrapper over a library loaded at run time:
/// created and loaded (`T::load()`) on first use; a failed load is kept and
/// returned to every caller.
template <typename T> StatusOr<T *> loadOnce() {
  static Status failure;
  static T *instance = [] {
    T *candidate = new T();
    failure = candidate->load();
    if (failure.ok())
      return candidate;
    delete candidate;
    return static_cast<T *>(nullptr);
  }();
  if (!instance)
    return failure;
  return instance;
}

} // namespace attnc

#endif // ATTNC_RUNTIME_SUPPORT_DYNAMICLIBRARY_H
