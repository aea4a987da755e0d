//===- Program.cpp - text form of a compiled program ----------------------===//

#include "exec/Program.h"

#include <cstring>
#include <sstream>

namespace attnc {

namespace {
/// Floats travel as their bits: the text form round-trips them exactly.
uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

template <typename T>
void writeList(std::ostream &os, const std::vector<T> &v) {
  os << v.size();
  for (const T &x : v)
    os << " " << x;
}
template <typename T> bool readList(std::istream &is, std::vector<T> &v) {
  size_t n = 0;
  if (!(is >> n) || n > 4096)
    return false;
  v.resize(n);
  for (T &x : v)
    if (!(is >> x))
      return false;
  return true;
}
} // namespace

std::string Program::serialize() const {
  std::ostringstream os;
  os << "program " << values.size() << " " << launches.size() << "\n";
  for (const ValueSpec &v : values) {
    os << "value " << int(v.kind) << " " << v.seqLen << " " << v.heads << " "
       << v.dim << " " << int(v.dtype) << " " << int(v.layout) << " "
       << v.pageSize << " " << int(v.pageOrder) << " ";
    writeList(os, v.shape);
    os << "\n";
  }
  for (const LaunchSpec &l : launches) {
    os << "launch " << int(l.kind) << " " << l.kernel << " " << l.threads << " "
       << l.smem << " " << l.blockM << " " << l.kvSplits << " " << l.group
       << " " << l.kvHeads << " " << l.hasLse << " " << l.segments << " "
       << l.splitResults << " " << l.packedHeads << " " << l.qBoxRows << " "
       << l.kvBoxRows << " " << l.blockN << " " << l.kvScales << " "
       << l.mergesSplits << " " << l.mergesInSecondLaunch << " "
       << l.overlapsPreviousLaunch << " " << l.claimsItems << " "
       << l.clusterCtas << " " << int(l.schedule) << " " << l.values.window_left
       << " " << l.values.window_right << " " << l.values.sinks << " "
       << floatBits(l.values.scale) << " " << floatBits(l.values.softcap)
       << " ";
    writeList(os, l.args);
    os << " ";
    writeList(os, l.results);
    os << "\n";
  }
  os << "io ";
  writeList(os, inputs);
  os << " ";
  writeList(os, outputs);
  os << "\n";
  return os.str();
}

StatusOr<Program> Program::deserialize(const std::string &text) {
  std::istringstream is(text);
  Program program;
  std::string word;
  size_t numValues = 0, numLaunches = 0;
  auto bad = [](const std::string &what) {
    return Status::error(ErrorCode::ParseError, "bad program text: " + what);
  };
  if (!(is >> word >> numValues >> numLaunches) || word != "program")
    return bad("header");
  for (size_t i = 0; i < numValues; ++i) {
    ValueSpec v;
    int kind, dtype, layout, order;
    if (!(is >> word >> kind >> v.seqLen >> v.heads >> v.dim >> dtype >>
          layout >> v.pageSize >> order) ||
        word != "value" || !readList(is, v.shape))
      return bad("value " + std::to_string(i));
    v.kind = ValueSpec::Kind(kind);
    v.dtype = DType(dtype);
    v.layout = TokenLayout(layout);
    v.pageOrder = PageOrder(order);
    program.values.push_back(v);
  }
  for (size_t i = 0; i < numLaunches; ++i) {
    LaunchSpec l;
    int kind, schedule;
    uint32_t scaleBits, softcapBits;
    if (!(is >> word >> kind >> l.kernel >> l.threads >> l.smem >> l.blockM >>
          l.kvSplits >> l.group >> l.kvHeads >> l.hasLse >> l.segments >>
          l.splitResults >> l.packedHeads >> l.qBoxRows >> l.kvBoxRows >>
          l.blockN >> l.kvScales >> l.mergesSplits >> l.mergesInSecondLaunch >>
          l.overlapsPreviousLaunch >> l.claimsItems >> l.clusterCtas >>
          schedule >> l.values.window_left >> l.values.window_right >>
          l.values.sinks >> scaleBits >> softcapBits) ||
        word != "launch" || schedule < 0 || schedule >= kNumSchedules ||
        !readList(is, l.args) || !readList(is, l.results))
      return bad("launch " + std::to_string(i));
    l.kind = LaunchSpec::Kind(kind);
    l.schedule = Schedule(schedule);
    l.values.scale = bitsFloat(scaleBits);
    l.values.softcap = bitsFloat(softcapBits);
    l.values = withScoreFactors(l.values);
    program.launches.push_back(l);
  }
  if (!(is >> word) || word != "io" || !readList(is, program.inputs) ||
      !readList(is, program.outputs))
    return bad("inputs and outputs");
  return program;
}

} // namespace attnc
