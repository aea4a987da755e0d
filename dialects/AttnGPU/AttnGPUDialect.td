//===- AttnGPUDialect.td - the tiled-kernel dialect --------*- tablegen -*-===//

#ifndef ATTNC_DIALECT_ATTNGPU_DIALECT_TD
#define ATTNC_DIALECT_ATTNGPU_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def AttnGPU_Dialect : Dialect {
  let name = "attn_gpu";
  let cppNamespace = "::mlir::attn_gpu";
  let summary = "tiled attention kernels: one CTA's walk over KV tiles";
  let description = [{
    `attn_gpu` is the level between a variant (`attn`) and CUDA C++. A
    `attn_gpu.kernel` is one CTA of a FlashAttention-style kernel: its launch
    geometry and target, a loop over KV tiles whose bounds come from mask
    analysis, asynchronous loads of contiguous, ragged or paged K/V tiles,
    the two tensor-core products, score modifiers and masks (the mask only on
    partial tiles), the online-softmax update and the store of the output and
    its log-sum-exp. Host-side `attn_gpu.launch` ops say which kernels run in
    which order on which buffers. Each device op maps to one building block
    of the device tile library (device/).
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect"];
  let useDefaultAttributePrinterParser = 1;
  // The pipeline annotates attn ops and the module with `attn_gpu.*`
  // attributes; only the known ones, of their attribute types, verify.
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The target on the module (set by attn-plan).
    static constexpr ::llvm::StringLiteral kTargetAnnotation = "attn_gpu.target";
    /// The plan and mask analysis on each attn.attention.
    static constexpr ::llvm::StringLiteral kPlanAnnotation = "attn_gpu.plan";
    static constexpr ::llvm::StringLiteral kMasksAnnotation = "attn_gpu.masks";
  }];
}

class AttnGPU_Op<string mnemonic, list<Trait> traits = []>
    : Op<AttnGPU_Dialect, mnemonic, traits>;

class AttnGPU_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<AttnGPU_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // ATTNC_DIALECT_ATTNGPU_DIALECT_TD
