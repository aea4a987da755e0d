//===- DynamicLibrary.cpp - dlopen with error values ----------------------===//

#include "support/DynamicLibrary.h"

#include <dlfcn.h>

namespace attnc {

StatusOr<DynamicLibrary>
DynamicLibrary::open(const std::vector<std::string> &names,
                     ErrorCode missingCode) {
  std::string tried;
  for (const std::string &name : names) {
    if (void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      DynamicLibrary library;
      library.handle_ = handle;
      library.path_ = name;
      return library;
    }
    const char *why = dlerror();
    tried += "\n  " + name + ": " + (why ? why : "not found");
  }
  return Status::error(missingCode, "cannot load any of:" + tried);
}

Status DynamicLibrary::lookup(const char *symbol, void **address) const {
  dlerror();
  *address = dlsym(handle_, symbol);
  if (!*address)
    return Status::error(ErrorCode::Unsupported,
                         path_ + " has no symbol " + symbol);
  return Status();
}

} // namespace attnc
