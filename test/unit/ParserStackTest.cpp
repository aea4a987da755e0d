//===- ParserStackTest.cpp - the parser's stack against its deepest input -===//
//
// kParserStackBytes claims a margin over what MLIR's parser uses at the
// deepest nesting the guard lets through. This measures that use: the
// parse runs on a stack the test owns, painted beforehand, and the bytes
// no longer painted are what it touched.
//
//===----------------------------------------------------------------------===//

#include "attnc/Driver/ParserStack.h"
#include "attnc/Driver/Pipeline.h"

#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <pthread.h>

#include <cstring>
#include <vector>

using namespace attnc;

namespace {

constexpr unsigned char kPaint = 0xA5;

/// The most stack `body` touches, run on a painted stack of `bytes`.
size_t stackHighWater(void (*body)(void *), void *argument, size_t bytes) {
  std::vector<unsigned char> stack(bytes, kPaint);
  struct Call {
    void (*body)(void *);
    void *argument;
  } call{body, argument};
  pthread_attr_t attributes;
  EXPECT_EQ(pthread_attr_init(&attributes), 0);
  EXPECT_EQ(pthread_attr_setstack(&attributes, stack.data(), bytes), 0);
  pthread_t thread;
  EXPECT_EQ(pthread_create(
                &thread, &attributes,
                [](void *c) -> void * {
                  auto *call = static_cast<Call *>(c);
                  call->body(call->argument);
                  return nullptr;
                },
                &call),
            0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attributes);
  size_t untouched = 0; // the stack grows down, from the end
  while (untouched < bytes && stack[untouched] == kPaint)
    ++untouched;
  return bytes - untouched;
}

/// Parses the text at `argument` as a module, on the caller's stack.
void parseHere(void *argument) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  registerAttncDialects(context);
  const std::string &text = *static_cast<const std::string *>(argument);
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context, llvm::nulls());
  (void)mlir::parseSourceString<mlir::ModuleOp>(text,
                                                mlir::ParserConfig(&context));
}

std::string nested(const std::string &open, const std::string &inner,
                   const std::string &close, int depth) {
  std::string text;
  for (int i = 0; i < depth; ++i)
    text += open;
  text += inner;
  for (int i = 0; i < depth; ++i)
    text += close;
  return text;
}

// The deepest input of each bracket kind the guard admits, parsed, uses at
// most an eighth of kParserStackBytes.
TEST(ParserStack, TheDeepestAdmittedNestingFitsWithAMargin) {
  int depth = kMaxParserNesting - 2; // the function's brackets count too
  std::vector<std::string> texts = {
      "func.func @f() attributes {x = " + nested("[", "1", "]", depth) +
          "} { return }",
      "func.func @f() attributes {x = " + nested("{a = ", "1", "}", depth) +
          "} { return }",
      "func.func @f() -> " + nested("tuple<", "i32", ">", depth) + "\n",
      "func.func @f() attributes {x = dense<" + nested("[", "1.0", "]", depth) +
          "> : tensor<" + std::string("1x") + "f32>} { return }",
      // Two levels a region: `(` and `{`.
      nested("\"scf.execute_region\"() ({\n", "", "}) : () -> ()\n", depth / 2),
  };
  for (std::string &text : texts) {
    ASSERT_FALSE(findParserHazard(text)) << text.substr(0, 60);
    size_t used = stackHighWater(parseHere, &text, kParserStackBytes);
    EXPECT_LT(used, kParserStackBytes / 8) << text.substr(0, 60);
    // The figure the header quotes, per level.
    std::printf("parser stack at %d levels: %zu KiB (%zu B/level) for %s\n",
                depth, used >> 10, used / size_t(depth),
                text.substr(0, text.find_first_of("[{<(", 20) + 3).c_str());
  }
}

// runOnParserStack's thread has the stack it was asked for: a body that
// needs more than a small caller's stack runs.
TEST(ParserStack, RunsTheBodyOnItsOwnStack) {
  size_t used = 0;
  runOnParserStack([&] {
    volatile unsigned char buffer[1 << 20]; // more than a small thread has
    std::memset(const_cast<unsigned char *>(buffer), 1, sizeof buffer);
    used = sizeof buffer + buffer[12345];
  });
  EXPECT_EQ(used, (size_t(1) << 20) + 1);
}

} // namespace
