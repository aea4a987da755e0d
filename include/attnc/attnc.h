//===- attnc.h - the JIT API for host code ----------------------*- C++ -*-===//
//
// Build an attention variant (from MLIR text or from a VariantSpec), compile
// it once for a target (through the in-process and on-disk caches), plan a
// batch once (its layout, KV-split decisions and scratch memory) and run
// the kernel on device pointers as many times as the model has layers:
//
//   attnc::VariantSpec spec;
//   spec.queryHeads = 32; spec.kvHeads = 8; spec.headDim = 128;
//   spec.causal = true;
//   auto variant = attnc::Variant::fromSpec(spec);
//   auto kernel = attnc::Kernel::compile(*variant);
//   auto plan = kernel->plan(batch);          // may allocate, never in run
//   for (layer : layers)
//     kernel->run(*plan, {q, k, v}, {out}, stream);
//
// Inputs are q, k, v, then (fp8 caches) k_scale and v_scale, then the
// buffers the regions capture.
//
// Every failure is a value (Status / StatusOr), never an abort. `run` neither
// allocates nor synchronizes, so it may be captured in a CUDA graph.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_ATTNC_H
#define ATTNC_ATTNC_H

#include "attnc/Status.h"
#include "attnc/attnc_variant_fields.h"
#include "attnc/device/abi.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// libattnc.so exports these classes as built against libstdc++ (its
// std::string, std::vector, std::optional and std::function are in their
// members and signatures). Another standard library, libstdc++'s debug
// containers or its old string ABI lays them out differently, and
// VariantSpec would still link: refuse them here. attnc_c.h has no such
// tie.
#if defined(_LIBCPP_VERSION)
#error "attnc.h needs libstdc++, libattnc.so's C++ library; use attnc_c.h"
#endif
#if defined(_GLIBCXX_DEBUG)
#error "attnc.h cannot be used with _GLIBCXX_DEBUG: libattnc.so is not"
#endif
#if defined(_GLIBCXX_USE_CXX11_ABI) && !_GLIBCXX_USE_CXX11_ABI
#error "attnc.h needs _GLIBCXX_USE_CXX11_ABI=1, as libattnc.so has"
#endif

namespace attnc {

/// The builder's description of a single-attention variant. Tensors are
/// row-major: dense queries [batch, qLen, heads, dim], ragged queries
/// [tokens, heads, dim]; dense and ragged keys likewise; paged keys
/// [pages, pageSize, heads, dim] (NHD) or [pages, heads, pageSize, dim] (HND).
///
/// The members are generated from ATTNC_VARIANT_SPEC
/// (attnc/attnc_variant_fields.h), the one list of the spec's fields, which
/// generates the C struct attnc_variant_spec too: there is each member's
/// name (queryHeads, kvDtype, window, captureTypes, ...), type, default and
/// meaning.
struct VariantSpec {
  ATTNC_VARIANT_SPEC(ATTNC_VARIANT_CXX, ~)
};

/// A verified variant: one function of the attn dialect.
class Variant {
public:
  static StatusOr<Variant> fromMlir(std::string text,
                                    std::string fileName = "<variant>");
  static StatusOr<Variant> fromSpec(const VariantSpec &spec);
  const std::string &mlir() const { return text_; }
  const std::string &fileName() const { return fileName_; }

private:
  std::string text_, fileName_;
};

/// What to compile for. An empty arch means the current GPU's (its SM count
/// and shared memory too), which needs a GPU.
struct Target {
  std::string arch;
  int64_t multiprocessors = 0;
  /// "" for the default cache ($XDG_CACHE_HOME/attnc), "-" for none.
  std::string cacheDir;
  /// Told what a compile that misses the kernel caches is doing, a line at
  /// a time on the compiling thread: NVRTC takes a second or more there.
  /// It must not throw.
  std::function<void(const std::string &line)> progress;
};

/// One value of a compiled variant's function, in argument order.
struct TensorSpec {
  enum class Role { Query, KV, Output, Lse, Buffer } role = Role::Query;
  int64_t heads = 0, dim = 0;
  DType dtype = DType::BF16;
  TokenLayout layout = TokenLayout::Dense;
  int64_t seqLen = -1; // per request; -1 when any
};

/// Where a batch's requests are. The index arrays are device pointers of
/// int32: qIndptr [batch + 1] for ragged queries; kvIndptr [batch + 1] in
/// tokens (ragged) or pages (paged); pageIndices and lastPageLen [batch] for
/// paged keys. The lengths are maxima over the batch; `queryTokens` counts
/// every request's queries (the rows of q, out and lse).
struct Batch {
  int batch = 1;
  int maxQueryLen = 1;
  int maxKVLen = 0;
  int64_t queryTokens = 0;
  uint64_t qIndptr = 0, kvIndptr = 0, pageIndices = 0, lastPageLen = 0;
  /// Elements between consecutive pages of K and V; 0 when pages are
  /// packed (a cache that interleaves K and V per page sets them).
  int64_t kPageStride = 0, vPageStride = 0;
  /// Keys of all requests: the rows of ragged keys and values (the last
  /// kv_indptr), the sum of the paged requests' lengths. 0 when unknown: a
  /// kernel that loads ragged keys through tensor maps then reads it from
  /// the device in `plan` (a synchronous copy). Decode splits a ragged
  /// batch's long requests further when it is given.
  int64_t kvTokens = 0;
};

class Plan;

/// A compiled variant: its cubin, loaded on first use.
class Kernel {
public:
  static StatusOr<Kernel> compile(const Variant &variant,
                                  const Target &target = {});
  ~Kernel();
  Kernel(Kernel &&) noexcept;
  Kernel &operator=(Kernel &&) noexcept;

  const std::vector<TensorSpec> &inputs() const;
  const std::vector<TensorSpec> &outputs() const;
  const std::string &cudaSource() const;
  const std::string &cubin() const;
  bool fromCache() const;

  /// Checks `batch`, loads the kernel, chooses KV splits and allocates the
  /// scratch memory split-KV needs (and the counters with which persistent
  /// prefill CTAs claim their work). Reuse the plan for every layer; a plan
  /// serves one launch at a time, so runs on several streams at once take
  /// a plan each.
  StatusOr<Plan> plan(const Batch &batch) const;
  /// Launches on `stream` (a CUstream; null for the default stream). Inputs
  /// and outputs are device pointers in the function's order. No
  /// allocation, no synchronization.
  Status run(const Plan &plan, const std::vector<uint64_t> &inputs,
             const std::vector<uint64_t> &outputs, void *stream = nullptr,
             const std::vector<std::vector<int64_t>> &bufferSizes = {}) const;

  struct State;

private:
  explicit Kernel(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

class Plan {
public:
  ~Plan();
  Plan(Plan &&) noexcept;
  Plan &operator=(Plan &&) noexcept;
  /// KV splits of each attention launch.
  const std::vector<int> &splits() const;

  struct State;

private:
  friend class Kernel;
  explicit Plan(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

} // namespace attnc

#endif // ATTNC_ATTNC_H
