//===- AttnGPUInterfaces.td - attn_gpu op interfaces -------*- tablegen -*-===//

#ifndef ATTNC_DIALECT_ATTNGPU_INTERFACES_TD
#define ATTNC_DIALECT_ATTNGPU_INTERFACES_TD

include "mlir/IR/OpBase.td"

def AttnGPU_CtaCallOpInterface : OpInterface<"CtaCallOpInterface"> {
  let cppNamespace = "::mlir::attn_gpu";
  let description = [{
    A device op that runs as one call of a member function of the kernel's
    CTA object, the class the plan's schedule names (`ctaClass` in
    device/attnc/device/schedules.h): `cta.<library call><template
    arguments>(<operands>)`, whose value, if the op has one, is the op's
    result. The op names its function, as Linalg's `library_call` does, so
    that the EmitC lowering has one case for every device op and every
    CTA class implements the same member functions; no table of names sits
    between the two.
  }];
  let methods = [
    InterfaceMethod<
      "The CTA member function the op calls.",
      "::llvm::StringRef", "getLibraryCall", (ins), [{}],
      [{ return ConcreteOp::kLibraryCall; }]>,
    InterfaceMethod<
      [{The call's template arguments, with their angle brackets
        (`<true>`), from the op's attributes; empty for none.}],
      "std::string", "getTemplateArguments", (ins), [{}],
      [{ return ""; }]>,
    InterfaceMethod<
      [{Whether the call takes the kernel's parameters and its dynamic
        shared memory before the op's operands (the CTA's setup).}],
      "bool", "bindsKernelArguments", (ins), [{}],
      [{ return false; }]>,
  ];
}

#endif // ATTNC_DIALECT_ATTNGPU_INTERFACES_TD
