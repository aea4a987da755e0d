//===- ParserStack.h - the parser on a stack of known size ----*- C++ -*-===//
//
// MLIR's parser recurses once per nesting level. attnc limits the nesting
// it lets through (ParserHazards.h), but the stack that limit needs must
// not depend on the caller's thread: attnc runs inside other people's
// processes, on Python threads and worker threads with stacks as small as a
// few hundred kilobytes. So the parser runs on a thread of its own whose
// stack is sized for kMaxParserNesting levels with a wide margin.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DRIVER_PARSERSTACK_H
#define ATTNC_DRIVER_PARSERSTACK_H

#include "attnc/Driver/ParserHazards.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstddef>

namespace attnc {

/// The parser's stack: measured at up to 1.4 KiB per nesting level in a
/// Release build (ParserStackTest prints it: 353 KiB at 254 levels of
/// dictionaries); 64 KiB per level covers debug and sanitizer builds too.
/// Reserved, not committed, until used.
constexpr size_t kParserStackBytes = size_t(kMaxParserNesting) * (64 << 10);

/// Runs `body` on a thread with a stack of `stackBytes` and waits for it.
/// Where no such thread can be started, runs it on the caller's thread.
void runOnParserStack(llvm::function_ref<void()> body,
                      size_t stackBytes = kParserStackBytes);

} // namespace attnc

#endif // ATTNC_DRIVER_PARSERSTACK_H
