//===- ParserStack.cpp - run MLIR's parser on a stack of known size -------===//

#include "attnc/Driver/ParserStack.h"

#include <pthread.h>

namespace attnc {

namespace {

void *runBody(void *body) {
  (*static_cast<llvm::function_ref<void()> *>(body))();
  return nullptr;
}

} // namespace

void runOnParserStack(llvm::function_ref<void()> body, size_t stackBytes) {
  pthread_attr_t attributes;
  if (pthread_attr_init(&attributes) != 0) {
    body();
    return;
  }
  pthread_t thread;
  bool started = pthread_attr_setstacksize(&attributes, stackBytes) == 0 &&
                 pthread_create(&thread, &attributes, runBody, &body) == 0;
  pthread_attr_destroy(&attributes);
  if (!started) {
    // Out of threads or address space: the nesting limit still holds, and
    // the caller's stack is what attnc had before it had this thread.
    body();
    return;
  }
  pthread_join(thread, nullptr);
}

} // namespace attnc
