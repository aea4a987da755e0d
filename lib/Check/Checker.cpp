//===- Checker.cpp - run a variant on the GPU against the reference -------===//

#include "attnc/Check/Checker.h"

#include "attnc/Check/Halves.h"
#include "attnc/Check/InputNoise.h"
#include "attnc/Check/Reference.h"
#include "attnc/Check/RegionInterpreter.h"
#include "attnc/Dialect/Attn/AttnDialect.h"
#include "attnc/device/params.h"
#include "exec/Executor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/SourceMgr.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

using namespace mlir;

namespace attnc {
namespace {

void storeElement(DType type, std::vector<uint8_t> &bytes, size_t index,
                  double value) {
  switch (type) {
  case DType::BF16: {
    uint16_t v = toBF16(float(value));
    std::memcpy(&bytes[index * 2], &v, 2);
    break;
  }
  case DType::F16: {
    uint16_t v = toF16(float(value));
    std::memcpy(&bytes[index * 2], &v, 2);
    break;
  }
  case DType::F32: {
    float v = float(value);
    std::memcpy(&bytes[index * 4], &v, 4);
    break;
  }
  case DType::I32: {
    int32_t v = int32_t(value);
    std::memcpy(&bytes[index * 4], &v, 4);
    break;
  }
  case DType::F8E4M3:
    bytes[index] = toF8E4M3(float(value));
    break;
  case DType::F8E5M2:
    bytes[index] = toF8E5M2(float(value));
    break;
  default:
    break;
  }
}

double loadElement(DType type, const std::vector<uint8_t> &bytes,
                   size_t index) {
  switch (type) {
  case DType::BF16: {
    uint16_t v;
    std::memcpy(&v, &bytes[index * 2], 2);
    return fromBF16(v);
  }
  case DType::F16: {
    uint16_t v;
    std::memcpy(&v, &bytes[index * 2], 2);
    return fromF16(v);
  }
  case DType::F32: {
    float v;
    std::memcpy(&v, &bytes[index * 4], 4);
    return v;
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, &bytes[index * 4], 4);
    return v;
  }
  case DType::F8E4M3:
    return fromF8E4M3(bytes[index]);
  case DType::F8E5M2:
    return fromF8E5M2(bytes[index]);
  default:
    break;
  }
  return 0;
}

/// Every element of `bytes` NaN (all bits set: a negative quiet NaN in
/// each type), or +Inf (e4m3, which has none: NaN).
void fillNonFinite(DType type, std::vector<uint8_t> &bytes, bool inf) {
  if (!inf) {
    std::fill(bytes.begin(), bytes.end(), uint8_t(0xff));
    return;
  }
  uint32_t bits = 0;
  switch (type) {
  case DType::BF16:
    bits = 0x7f80;
    break;
  case DType::F16:
    bits = 0x7c00;
    break;
  case DType::F32:
    bits = 0x7f800000u;
    break;
  case DType::F8E4M3:
    bits = 0x7f;
    break;
  case DType::F8E5M2:
    bits = 0x7c;
    break;
  default:
    std::fill(bytes.begin(), bytes.end(), uint8_t(0xff));
    return;
  }
  size_t size = bytesOf(type);
  for (size_t i = 0; i + size <= bytes.size(); i += size)
    std::memcpy(&bytes[i], &bits, size); // little-endian, as the GPU
}

/// Logical data of one value on the host: per request [len][heads][dim]
/// (lse: [len][heads]), or a buffer.
struct HostValue {
  std::vector<std::vector<double>> requests;
  HostBuffer buffer;
};

struct Problem {
  int batch = 0;
  std::vector<int> qLens, kvLens, qOffsets, kvOffsets, pageOffsets;
  std::vector<int32_t> pageIndices, lastPageLen;
  int64_t qTokens = 0, kvTokens = 0, numPages = 0;
  int64_t kvTailRows = 0; // a ragged key buffer's rows past the last request
  int pageSize = 0;
};

class Run {
public:
  Run(const CompiledVariant &compiled, const RunShape &shape,
      cuda::Driver &driver)
      : compiled(compiled), program(compiled.program), shape(shape),
        driver(driver), rng(shape.seed), normal(shape.seed),
        filler(~uint64_t(shape.seed)) {}

  StatusOr<RunReport> run(func::FuncOp reference);

private:
  Status planLengths();
  Status upload(const std::vector<uint8_t> &bytes, cuda::CUdeviceptr &ptr);
  void fillInput(int id, HostValue &host, std::vector<uint8_t> &bytes,
                 std::vector<int64_t> &sizes, bool querySegments,
                 bool keySegments, bool isScale);
  Status evaluateReference(func::FuncOp func,
                           llvm::DenseMap<Value, HostValue> &values);

  const CompiledVariant &compiled;
  const Program &program;
  RunShape shape;
  cuda::Driver &driver;
  std::mt19937 rng;     // lengths and page orders
  NormalSamples normal; // input values
  RandomBits filler;    // rows and pages no request reads
  Problem problem;
  std::vector<cuda::DeviceBuffer> buffers;
};

Status Run::upload(const std::vector<uint8_t> &bytes, cuda::CUdeviceptr &ptr) {
  StatusOr<cuda::DeviceBuffer> buffer =
      cuda::DeviceBuffer::allocate(driver, bytes.size());
  if (!buffer.ok())
    return buffer.status();
  if (Status s = driver.copyToDevice(buffer->get(), bytes.data(), bytes.size());
      !s.ok())
    return s;
  ptr = buffer->get();
  buffers.push_back(std::move(*buffer));
  return Status();
}

Status Run::planLengths() {
  const ValueSpec *query = nullptr;
  bool anyDenseKV = false, pagedKV = false, raggedKV = false;
  int64_t kvStatic = -1;
  for (const ValueSpec &v : program.values) {
    if (v.kind == ValueSpec::Kind::Query && !query)
      query = &v;
    if (v.kind == ValueSpec::Kind::KV) {
      anyDenseKV |= v.layout == TokenLayout::Dense;
      pagedKV |= v.layout == TokenLayout::Paged;
      raggedKV |= v.layout == TokenLayout::Ragged;
      if (v.seqLen > 0)
        kvStatic = v.seqLen;
      if (v.layout == TokenLayout::Paged) {
        if (problem.pageSize && problem.pageSize != v.pageSize)
          return Status::error(ErrorCode::Unsupported,
                               "attnc run needs one page size per function");
        problem.pageSize = int(v.pageSize);
      }
    }
  }
  if (!query)
    return Status::error(ErrorCode::InvalidArgument, "no query argument");
  if (pagedKV && raggedKV)
    return Status::error(ErrorCode::Unsupported,
                         "attnc run cannot mix ragged and paged keys");
  problem.batch = shape.batch;
  int qLen = query->seqLen > 0 ? int(query->seqLen)
                               : (shape.qLen > 0 ? shape.qLen : 64);
  int kvLen = kvStatic > 0 ? int(kvStatic) : shape.kvLen;
  bool qVaries = shape.varyLengths && query->layout == TokenLayout::Ragged &&
                 query->seqLen < 0;
  bool kvVaries = shape.varyLengths && !anyDenseKV && kvStatic < 0;
  auto pick = [&](int len, bool varies) {
    if (!varies || len <= 1)
      return len;
    return std::uniform_int_distribution<int>(std::max(1, len / 2), len)(rng);
  };
  for (int b = 0; b < problem.batch; ++b) {
    problem.qOffsets.push_back(int(problem.qTokens));
    problem.kvOffsets.push_back(int(problem.kvTokens));
    problem.qLens.push_back(pick(qLen, qVaries));
    problem.kvLens.push_back(pick(kvLen, kvVaries));
    problem.qTokens += problem.qLens.back();
    problem.kvTokens += problem.kvLens.back();
  }
  problem.qOffsets.push_back(int(problem.qTokens));
  problem.kvOffsets.push_back(int(problem.kvTokens));
  if (raggedKV)
    problem.kvTailRows = std::max(0, shape.kvTailRows);
  if (pagedKV) {
    int P = problem.pageSize;
    problem.pageOffsets.push_back(0);
    for (int b = 0; b < problem.batch; ++b) {
      int pages = (problem.kvLens[b] + P - 1) / P;
      problem.pageOffsets.push_back(problem.pageOffsets.back() + pages);
      problem.lastPageLen.push_back(problem.kvLens[b] - (pages - 1) * P);
    }
    // Shuffled pages, with a few unused ones, as a real pool has.
    problem.numPages = problem.pageOffsets.back() + 3;
    std::vector<int32_t> all(problem.numPages);
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    problem.pageIndices.assign(all.begin(),
                               all.begin() + problem.pageOffsets.back());
  }
  return Status();
}

void Run::fillInput(int id, HostValue &host, std::vector<uint8_t> &bytes,
                    std::vector<int64_t> &sizes, bool querySegments,
                    bool keySegments, bool isScale) {
  const ValueSpec &spec = program.values[id];
  // Dequantization scales differ per head, so that using the wrong one shows.
  std::uniform_real_distribution<double> scales(0.25, 2.0);
  // Stored values are the ones the reference sees: round through the type
  // (one element's bytes, allocated once: this runs per element).
  std::vector<uint8_t> one(bytesOf(spec.dtype));
  auto rounded = [&](double v) {
    storeElement(spec.dtype, one, 0, v);
    return loadElement(spec.dtype, one, 0);
  };
  if (spec.kind == ValueSpec::Kind::Buffer) {
    int64_t maxLen = 0;
    for (int b = 0; b < problem.batch; ++b)
      maxLen = std::max<int64_t>(maxLen,
                                 std::max(problem.qLens[b], problem.kvLens[b]));
    sizes.clear();
    for (size_t d = 0; d < spec.shape.size(); ++d) {
      int64_t size = spec.shape[d];
      if (size < 0)
        size = querySegments                        ? problem.qTokens
               : keySegments                        ? problem.kvTokens
               : (spec.shape.size() == 2 && d == 0) ? problem.batch
                                                    : maxLen;
      sizes.push_back(size);
    }
    int64_t count = 1;
    for (int64_t s : sizes)
      count *= s;
    host.buffer.sizes = sizes;
    host.buffer.data.resize(count);
    bytes.assign(count * bytesOf(spec.dtype), 0);
    for (int64_t i = 0; i < count; ++i) {
      double v;
      if (querySegments || keySegments) {
        // Documents of 37 positions, in bottom-right aligned positions.
        int b = 0;
        const std::vector<int> &offsets =
            querySegments ? problem.qOffsets : problem.kvOffsets;
        while (offsets[b + 1] <= i)
          ++b;
        int64_t local = i - offsets[b];
        int64_t pos = querySegments
                          ? local + problem.kvLens[b] - problem.qLens[b]
                          : local;
        v = double(pos / 37);
      } else if (spec.dtype == DType::I32) {
        v = double((i % sizes.back()) / 37); // document ids along a row
      } else if (isScale) {
        v = rounded(scales(rng));
      } else {
        v = rounded(normal.next());
      }
      host.buffer.data[i] = v;
      storeElement(spec.dtype, bytes, i, v);
    }
    return;
  }
  bool isQuery = spec.kind == ValueSpec::Kind::Query;
  const std::vector<int> &lens = isQuery ? problem.qLens : problem.kvLens;
  int64_t rowElems = spec.heads * spec.dim;
  int64_t totalRows;
  if (spec.layout == TokenLayout::Paged)
    totalRows = problem.numPages * problem.pageSize;
  else if (spec.layout == TokenLayout::Ragged)
    totalRows =
        isQuery ? problem.qTokens : problem.kvTokens + problem.kvTailRows;
  else
    totalRows =
        int64_t(problem.batch) * *std::max_element(lens.begin(), lens.end());
  bytes.assign(totalRows * rowElems * bytesOf(spec.dtype), 0);
  // Unused rows and pages hold random data too, so that reading them shows
  // (uniform in (-4, 4): what they hold needs no distribution), or NaN or
  // +Inf in every element (RunShape::unread).
  if (shape.unread == RunShape::Unread::Random)
    for (int64_t i = 0; i < totalRows * rowElems; ++i)
      storeElement(spec.dtype, bytes, i, 8.0 * filler.open01() - 4.0);
  else
    fillNonFinite(spec.dtype, bytes, shape.unread == RunShape::Unread::Inf);
  host.requests.resize(problem.batch);
  for (int b = 0; b < problem.batch; ++b) {
    std::vector<double> &logical = host.requests[b];
    logical.resize(int64_t(lens[b]) * rowElems);
    for (int j = 0; j < lens[b]; ++j)
      for (int64_t h = 0; h < spec.heads; ++h)
        for (int64_t d = 0; d < spec.dim; ++d) {
          double v = rounded(normal.next());
          logical[(j * spec.heads + h) * spec.dim + d] = v;
          int64_t index;
          if (spec.layout == TokenLayout::Paged) {
            int P = problem.pageSize;
            int64_t page = problem.pageIndices[problem.pageOffsets[b] + j / P];
            int slot = j % P;
            // The layout as the device reads it (params.h), one formula.
            index = page * P * spec.heads * spec.dim +
                    pagedSlotOffset(spec.pageOrder, int(h), slot, P,
                                    int(spec.heads), int(spec.dim)) +
                    d;
          } else {
            int64_t row =
                spec.layout == TokenLayout::Ragged
                    ? (isQuery ? problem.qOffsets[b] : problem.kvOffsets[b]) + j
                    : int64_t(b) * lens[b] + j;
            index = (row * spec.heads + h) * spec.dim + d;
          }
          storeElement(spec.dtype, bytes, index, v);
        }
  }
}

reference::Variant variantOf(attn::AttentionOp op, std::string &error,
                             std::vector<const HostBuffer *> captures) {
  reference::Variant v;
  v.qHeads = op.getQuery().getType().getNumHeads();
  v.kvHeads = op.getNumKVHeads();
  v.qkDim = op.getQKHeadDim();
  v.vDim = op.getVHeadDim();
  v.causal = op.getCausal();
  if (auto window = op.getWindowAttr()) {
    v.windowLeft = window.getLeft();
    v.windowRight = window.getRight();
  }
  v.sinks = op.getSinks().value_or(0);
  v.scale = op.getEffectiveScale();
  if (op.getSoftcap())
    v.softcap = op.getSoftcap()->convertToDouble();
  v.alibi = op.getAlibi();
  v.segments = op.getQuerySegments() != nullptr;
  Operation *raw = op.getOperation();
  auto indices = [](const reference::Position &at) {
    return std::vector<double>{double(at.batch), double(at.head),
                               double(at.query), double(at.key),
                               double(at.qLen),  double(at.kvLen)};
  };
  if (!op.getScoreMod().empty())
    v.scoreMod = [raw, captures, indices,
                  &error](double s, const reference::Position &at) {
      std::vector<double> scalars = indices(at);
      scalars.insert(scalars.begin(), s);
      auto r = evaluateRegion(cast<attn::AttentionOp>(raw).getScoreMod(),
                              scalars, captures, error);
      return r ? *r : s;
    };
  if (!op.getMaskMod().empty())
    v.maskMod = [raw, captures, indices,
                 &error](const reference::Position &at) {
      auto r = evaluateRegion(cast<attn::AttentionOp>(raw).getMaskMod(),
                              indices(at), captures, error);
      return r && *r != 0;
    };
  return v;
}

Status Run::evaluateReference(func::FuncOp func,
                              llvm::DenseMap<Value, HostValue> &values) {
  std::string error;
  for (Operation &op : func.getBody().front()) {
    if (auto attention = dyn_cast<attn::AttentionOp>(op)) {
      std::vector<const HostBuffer *> captures;
      for (Value c : attention.getCaptures())
        captures.push_back(&values[c].buffer);
      reference::Variant variant = variantOf(attention, error, captures);
      HostValue &out = values[attention.getOutput()];
      HostValue lse;
      for (int b = 0; b < problem.batch; ++b) {
        reference::Request request;
        request.qLen = problem.qLens[b];
        request.kvLen = problem.kvLens[b];
        request.q = values[attention.getQuery()].requests[b];
        request.k = values[attention.getKey()].requests[b];
        if (attention.isLatent()) {
          // The values are the leading (latent) columns of each key row.
          for (int j = 0; j < request.kvLen; ++j)
            request.v.insert(
                request.v.end(), request.k.begin() + j * variant.qkDim,
                request.k.begin() + j * variant.qkDim + variant.vDim);
        } else {
          request.v = values[attention.getValue()].requests[b];
        }
        if (attention.getKeyScale()) {
          // The reference attends over the dequantized cache.
          // x is [kvLen][kvHeads][dim]; a scale per tensor or per head.
          auto dequantize = [&](std::vector<double> &x, Value scale,
                                int64_t dim) {
            const std::vector<double> &s = values[scale].buffer.data;
            for (size_t i = 0; i < x.size(); ++i)
              x[i] *= s.size() == 1 ? s[0] : s[(i / dim) % variant.kvHeads];
          };
          dequantize(request.k, attention.getKeyScale(), variant.qkDim);
          dequantize(request.v, attention.getValueScale(), variant.vDim);
        }
        if (attention.getQuerySegments()) {
          const auto &qs = values[attention.getQuerySegments()].buffer.data;
          const auto &ks = values[attention.getKeySegments()].buffer.data;
          for (int i = 0; i < request.qLen; ++i)
            request.qSegments.push_back(int32_t(qs[problem.qOffsets[b] + i]));
          for (int j = 0; j < request.kvLen; ++j)
            request.kvSegments.push_back(int32_t(ks[problem.kvOffsets[b] + j]));
        }
        reference::State state = reference::attention(variant, request, b);
        out.requests.push_back(std::move(state.out));
        lse.requests.push_back(std::move(state.lse));
      }
      if (attention.getLse())
        values[attention.getLse()] = std::move(lse);
      if (!error.empty())
        return Status::error(ErrorCode::Unsupported, error);
      continue;
    }
    if (auto merge = dyn_cast<attn::MergeStatesOp>(op)) {
      HostValue out, lse;
      int64_t vDim = merge.getOutput().getType().getHeadDim();
      for (int b = 0; b < problem.batch; ++b) {
        std::vector<reference::State> states;
        for (auto [o, l] : llvm::zip(merge.getOutputs(), merge.getLses()))
          states.push_back({values[o].requests[b], values[l].requests[b]});
        reference::State merged = reference::mergeStates(states, vDim);
        out.requests.push_back(std::move(merged.out));
        lse.requests.push_back(std::move(merged.lse));
      }
      values[merge.getOutput()] = std::move(out);
      values[merge.getLse()] = std::move(lse);
      continue;
    }
    if (isa<func::ReturnOp>(op))
      continue;
    return Status::error(ErrorCode::Unsupported,
                         "the reference cannot run " +
                             op.getName().getStringRef().str());
  }
  return Status();
}

StatusOr<RunReport> Run::run(func::FuncOp reference) {
  if (Status s = planLengths(); !s.ok())
    return s;
  if (reference.getNumArguments() != program.inputs.size())
    return Status::error(ErrorCode::Internal, "program and function differ");
  // Which arguments are document segments.
  llvm::DenseSet<Value> querySegments, keySegments, scales;
  reference.walk([&](attn::AttentionOp op) {
    if (op.getQuerySegments()) {
      querySegments.insert(op.getQuerySegments());
      keySegments.insert(op.getKeySegments());
    }
    if (op.getKeyScale()) {
      scales.insert(op.getKeyScale());
      scales.insert(op.getValueScale());
    }
  });
  Binding binding;
  binding.values.assign(program.values.size(), 0);
  binding.bufferSizes.assign(program.values.size(), {});
  llvm::DenseMap<Value, HostValue> host;
  for (auto [arg, id] : llvm::zip(reference.getArguments(), program.inputs)) {
    std::vector<uint8_t> bytes;
    fillInput(id, host[arg], bytes, binding.bufferSizes[id],
              querySegments.contains(arg), keySegments.contains(arg),
              scales.contains(arg));
    if (Status s = upload(bytes, binding.values[id]); !s.ok())
      return s;
  }
  BatchLayout layout;
  layout.batch = problem.batch;
  layout.qLen = *std::max_element(problem.qLens.begin(), problem.qLens.end());
  layout.kvLen =
      *std::max_element(problem.kvLens.begin(), problem.kvLens.end());
  layout.qTokens = problem.qTokens;
  // The keys of all requests, as a serving engine's plan passes them: a
  // ragged batch's splits follow them. With a tail, the buffer's rows.
  layout.kvTokens = problem.kvTokens + problem.kvTailRows;
  auto uploadInts = [&](const std::vector<int> &ints, cuda::CUdeviceptr &ptr) {
    std::vector<uint8_t> bytes(ints.size() * 4);
    std::memcpy(bytes.data(), ints.data(), bytes.size());
    return upload(bytes, ptr);
  };
  if (Status s = uploadInts(problem.qOffsets, layout.qIndptr); !s.ok())
    return s;
  if (problem.pageSize) {
    std::vector<int> indices(problem.pageIndices.begin(),
                             problem.pageIndices.end());
    std::vector<int> last(problem.lastPageLen.begin(),
                          problem.lastPageLen.end());
    if (Status s = uploadInts(problem.pageOffsets, layout.kvIndptr); !s.ok())
      return s;
    if (Status s = uploadInts(indices, layout.pageIndices); !s.ok())
      return s;
    if (Status s = uploadInts(last, layout.lastPageLen); !s.ok())
      return s;
  } else if (Status s = uploadInts(problem.kvOffsets, layout.kvIndptr);
             !s.ok()) {
    return s;
  }
  StatusOr<LoadedModule> module = LoadedModule::load(driver, compiled.cubin);
  if (!module.ok())
    return module.status();
  Executor executor(driver, program, *module);
  if (Status s = executor.resolveKVTokens(layout); !s.ok())
    return s;
  // Outputs start as NaN: a row the kernels forget to write fails. Twice,
  // poisoned before each launch: state a launch leaves in its workspace
  // (split-KV arrival counters, item-claim counters) must not change the
  // next launch's output.
  struct Poisoned {
    cuda::CUdeviceptr allocation;
    std::vector<uint8_t> bytes;
  };
  std::vector<Poisoned> poisoned;
  for (int id : program.outputs) {
    const ValueSpec &spec = program.values[id];
    Poisoned output{0,
                    std::vector<uint8_t>(shape.outputOffsetBytes +
                                             problem.qTokens * spec.heads *
                                                 spec.dim * bytesOf(spec.dtype),
                                         0xff)};
    if (Status s = upload(output.bytes, output.allocation); !s.ok())
      return s;
    binding.values[id] = output.allocation + shape.outputOffsetBytes;
    poisoned.push_back(std::move(output));
  }
  for (int launch = 0; launch < 2; ++launch) {
    if (launch > 0)
      for (const Poisoned &output : poisoned)
        if (Status s = driver.copyToDevice(
                output.allocation, output.bytes.data(), output.bytes.size());
            !s.ok())
          return s;
    if (Status s = executor.run(layout, binding, nullptr, shape.splits,
                                shape.gridCtas);
        !s.ok())
      return s;
    if (Status s = driver.synchronize(); !s.ok())
      return s;
  }

  RunReport report;
  report.layoutSummary =
      "batch " + std::to_string(problem.batch) + ", " +
      std::to_string(problem.qTokens) + " query tokens, " +
      std::to_string(problem.kvTokens) + " keys" +
      (problem.pageSize
           ? ", " + std::to_string(problem.numPages) + " shuffled pages of " +
                 std::to_string(problem.pageSize)
           : std::string()) +
      (problem.kvTailRows
           ? ", " + std::to_string(problem.kvTailRows) + " rows past the keys"
           : std::string()) +
      (shape.unread == RunShape::Unread::NaN   ? ", unread rows NaN"
       : shape.unread == RunShape::Unread::Inf ? ", unread rows +Inf"
                                               : "");
  if (shape.timingIterations > 0) {
    StatusOr<cuda::CUevent> begin = driver.createEvent();
    StatusOr<cuda::CUevent> end = driver.createEvent();
    if (!begin.ok() || !end.ok())
      return begin.ok() ? end.status() : begin.status();
    (void)driver.record(*begin, nullptr);
    for (int i = 0; i < shape.timingIterations; ++i)
      if (Status s = executor.run(layout, binding, nullptr, shape.splits,
                                  shape.gridCtas);
          !s.ok())
        return s;
    (void)driver.record(*end, nullptr);
    StatusOr<float> ms = driver.elapsed(*begin, *end);
    if (!ms.ok())
      return ms.status();
    report.milliseconds = *ms / shape.timingIterations;
  }

  if (!shape.compare)
    return report;
  if (Status s = evaluateReference(reference, host); !s.ok())
    return s;
  auto returned = cast<func::ReturnOp>(reference.getBody().front().back());
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(returned.getOperands(), program.outputs))) {
    auto [value, id] = pair;
    const ValueSpec &spec = program.values[id];
    std::vector<uint8_t> bytes(problem.qTokens * spec.heads * spec.dim *
                               bytesOf(spec.dtype));
    if (Status s =
            driver.copyToHost(bytes.data(), binding.values[id], bytes.size());
        !s.ok())
      return s;
    std::vector<double> got, want;
    const HostValue &expected = host[value];
    int64_t rowElems = spec.heads * spec.dim;
    for (int b = 0; b < problem.batch; ++b)
      for (int i = 0; i < problem.qLens[b]; ++i) {
        int64_t row = spec.layout == TokenLayout::Ragged
                          ? problem.qOffsets[b] + i
                          : int64_t(b) * problem.qLens[b] + i;
        for (int64_t e = 0; e < rowElems; ++e) {
          got.push_back(loadElement(spec.dtype, bytes, row * rowElems + e));
          want.push_back(expected.requests[b][i * rowElems + e]);
        }
      }
    double error = reference::relativeError(got, want);
    report.maxError = std::max(report.maxError, error);
    char line[96];
    std::snprintf(line, sizeof(line), "%s %zu: relative error %.3g",
                  spec.kind == ValueSpec::Kind::Lse ? "lse" : "out", index,
                  error);
    report.outputErrors.push_back(line);
  }
  return report;
}

} // namespace

StatusOr<RunReport> runAndCheck(const std::string &source,
                                const std::string &fileName,
                                const CompileOptions &options,
                                const RunShape &shape,
                                const std::string &cacheDir) {
  StatusOr<cuda::Driver *> driver = cuda::Driver::get();
  if (!driver.ok())
    return driver.status();
  CompileOptions target = options;
  target.arch = (*driver)->device().arch();
  target.sms = (*driver)->device().multiprocessors;
  target.smem = (*driver)->device().sharedMemoryPerBlockOptin;
  StatusOr<CompiledVariant> compiled =
      compileVariant(source, fileName, target, cacheDir);
  if (!compiled.ok())
    return compiled.status();

  MLIRContext context(MLIRContext::Threading::DISABLED);
  registerAttncDialects(context);
  DiagnosticCollector diagnostics(context);
  OwningOpRef<ModuleOp> module = diagnostics.parse(source, fileName);
  if (!module || failed(lowerVariant(*module, options, Stage::Attn)))
    return Status::error(ErrorCode::ParseError, "cannot re-read " + fileName +
                                                    ": " + diagnostics.text());
  auto funcs = module->getOps<func::FuncOp>();
  if (funcs.empty())
    return Status::error(ErrorCode::InvalidArgument, "no function");
  Run run(*compiled, shape, **driver);
  return run.run(*funcs.begin());
}

} // namespace attnc
