//===- consumer.cpp - a C++ program built against an installed attnc ------===//
//
// Built by scripts/install-check.sh with only the installed tree: its
// include dir and libattnc.so, found through find_package(attnc) or
// pkg-config. It uses attnc.h's classes across the library's boundary
// without a GPU, and names every out-of-line member of attnc.h so that the
// link fails if libattnc.so stops exporting one. Exits 0 when all is well,
// 1 with a line on stderr naming what is not.
//
//===----------------------------------------------------------------------===//

#include "attnc/attnc.h"

#include <cstdio>
#include <string>

namespace {

int failures = 0;

void expect(bool ok, const std::string &what) {
  if (!ok) {
    std::fprintf(stderr, "consumer.cpp: %s\n", what.c_str());
    ++failures;
  }
}

} // namespace

/// Calls every out-of-line member of attnc.h and Status.h, so that the link
/// fails if libattnc.so stops exporting one. Never run; external, so that
/// the compiler emits it and its references.
void linkEveryMember(const attnc::Variant &variant, attnc::Kernel &kernel,
                     attnc::Plan &plan, const attnc::Batch &batch) {
  (void)attnc::Variant::fromMlir("", "");
  (void)attnc::Variant::fromSpec({});
  (void)attnc::Kernel::compile(variant, {});
  attnc::Kernel movedKernel(std::move(kernel));
  kernel = std::move(movedKernel);
  attnc::Plan movedPlan(std::move(plan));
  plan = std::move(movedPlan);
  (void)kernel.inputs();
  (void)kernel.outputs();
  (void)kernel.cudaSource();
  (void)kernel.cubin();
  (void)kernel.fromCache();
  (void)kernel.plan(batch);
  (void)kernel.run(plan, {}, {});
  (void)plan.splits();
  (void)attnc::toString(attnc::ErrorCode::Ok);
  (void)attnc::Status().toString();
}

int main() {
  attnc::VariantSpec spec;
  spec.queryHeads = 32;
  spec.kvHeads = 8;
  spec.headDim = 128;
  spec.causal = true;
  attnc::StatusOr<attnc::Variant> variant = attnc::Variant::fromSpec(spec);
  expect(variant.ok(), "fromSpec failed: " + variant.status().toString());
  if (variant.ok())
    expect(variant->mlir().find("attn.") != std::string::npos,
           "fromSpec's MLIR has no attn op:\n" + variant->mlir());

  // Errors come back as values with the library's messages.
  attnc::StatusOr<attnc::Variant> bad = attnc::Variant::fromMlir("no IR");
  expect(!bad.ok() && bad.status().code() == attnc::ErrorCode::ParseError &&
             !bad.status().message().empty(),
         "fromMlir took text that is no IR");
  spec.kvHeads = 7; // 32 query heads do not share 7 KV heads evenly
  attnc::StatusOr<attnc::Variant> uneven = attnc::Variant::fromSpec(spec);
  expect(!uneven.ok() &&
             uneven.status().code() == attnc::ErrorCode::InvalidArgument,
         "fromSpec took 32 query heads over 7 KV heads");

  if (variant.ok()) {
    attnc::Target target;
    target.arch = "sm_1";
    attnc::StatusOr<attnc::Kernel> kernel =
        attnc::Kernel::compile(*variant, target);
    expect(!kernel.ok() &&
               kernel.status().code() == attnc::ErrorCode::InvalidArgument &&
               kernel.status().toString().find("sm_1") != std::string::npos,
           "Kernel::compile took arch sm_1");
  }
  expect(std::string(attnc::toString(attnc::ErrorCode::NotFound)) != "",
         "toString(ErrorCode) is empty");

  if (failures)
    return 1;
  std::printf("attnc C++ consumer: ok (%zu bytes of MLIR from a spec)\n",
              variant->mlir().size());
  return 0;
}
