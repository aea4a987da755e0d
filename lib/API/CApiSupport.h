//===- CApiSupport.h - what the C API's files share -------------*- C++ -*-===//
//
// Internal to libattnc.so: the handle registries, the calling thread's last
// error and the guard that keeps exceptions from crossing the C boundary,
// shared by CApi.cpp (variants, kernels, plans) and ServingCApi.cpp (pools,
// radix caches, schedulers, steps).
//
// Handles are not pointers to the objects: each is a number drawn once from
// one counter for every type and looked up in its type's registry on every
// call, so that a destroyed, foreign or made-up handle is an error value
// rather than a dereference, even after its memory has been reused.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_LIB_API_CAPISUPPORT_H
#define ATTNC_LIB_API_CAPISUPPORT_H

#include "attnc/Status.h"
#include "attnc/attnc_c.h"

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

namespace attnc::capi {

/// Sets the calling thread's attnc_last_error and returns `code`.
attnc_status fail(attnc_status code, std::string message);
/// The message of the calling thread's last failure.
const char *lastErrorMessage();
/// A handle value never handed out before: they start far above any
/// address a process maps, so that no pointer to real memory is ever
/// mistaken for a handle.
uintptr_t drawHandle();

inline attnc_status fail(const Status &status) {
  return fail(static_cast<attnc_status>(status.code()), status.message());
}

inline attnc_status invalid(std::string message) {
  return fail(ATTNC_INVALID_ARGUMENT, std::move(message));
}

/// The C boundary: nothing may unwind through it.
template <typename F> attnc_status guarded(F &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(ATTNC_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception &e) {
    return fail(ATTNC_INTERNAL, e.what());
  }
}

/// The live handles of one type and the objects they stand for. Calls hold
/// a reference to the object while they use it, so destroying a handle
/// while another thread uses it frees the object after that call.
template <typename Handle, typename Object> class Registry {
public:
  explicit Registry(const char *typeName) : typeName_(typeName) {}

  Handle add(Object object) {
    return add(std::make_shared<Object>(std::move(object)));
  }

  /// Registers an object that others may share (a pool its caches use).
  Handle add(std::shared_ptr<Object> shared) {
    uintptr_t id = drawHandle();
    std::lock_guard<std::mutex> lock(mutex_);
    live_.emplace(id, std::move(shared));
    return reinterpret_cast<Handle>(id);
  }

  /// The object of `handle`, or null with the reason in attnc_last_error.
  std::shared_ptr<Object> find(Handle handle, const char *argument) {
    if (!handle) {
      fail(ATTNC_INVALID_ARGUMENT, std::string(argument) + " is null");
      return nullptr;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(reinterpret_cast<uintptr_t>(handle));
    if (it == live_.end()) {
      fail(ATTNC_INVALID_ARGUMENT, notLive(argument));
      return nullptr;
    }
    return it->second;
  }

  /// Forgets `handle`; its object goes when the last call (or other
  /// object) using it lets go.
  attnc_status remove(Handle handle, const char *argument) {
    if (!handle)
      return ATTNC_OK; // like free(NULL)
    std::shared_ptr<Object> object;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = live_.find(reinterpret_cast<uintptr_t>(handle));
      if (it == live_.end())
        return fail(ATTNC_INVALID_ARGUMENT, notLive(argument));
      object = std::move(it->second);
      live_.erase(it);
    }
    object.reset(); // outside the lock: freeing may call the CUDA driver
    return ATTNC_OK;
  }

private:
  std::string notLive(const char *argument) const {
    return std::string(argument) + " is not a live " + typeName_ +
           " (destroyed, or not made by attnc)";
  }

  const char *typeName_;
  std::mutex mutex_;
  std::unordered_map<uintptr_t, std::shared_ptr<Object>> live_;
};

/// A C flag: 0 or 1, so that garbage in a struct (one not filled by its
/// _init function, or of another API version) is not read as true.
inline bool isFlag(int value) { return value == 0 || value == 1; }

/// The int a C caller stored in an enum field. C lets it be any int, while
/// C++ may assume an unscoped enum holds only its enumerators' range, so the
/// field is read as the bytes of an int, never as the enum.
template <typename Enum> int enumBits(const Enum &field) {
  static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized here");
  int value;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

} // namespace attnc::capi

#endif // ATTNC_LIB_API_CAPISUPPORT_H
