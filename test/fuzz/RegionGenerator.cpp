//===- RegionGenerator.cpp - random score_mod / mask_mod bodies -----------===//
//
// A straight-line body over a pool of typed values: the block arguments,
// then constants, arith and math ops, casts and loads from the captures.
// Every op is well typed, so the region parses and reaches the verifier,
// the region interpreter's and the C++ emitter's handling of each op.
//
//===----------------------------------------------------------------------===//

#include "RegionGenerator.h"

#include <vector>

namespace attnc::fuzz {

namespace {

struct Value {
  std::string name, type;
};

class Body {
public:
  Body(Choices &c, std::vector<Value> pool) : c_(c), pool_(std::move(pool)) {}

  /// Adds one op and returns its result.
  void step(const std::vector<Capture> &captures) {
    switch (c_.below(12)) {
    case 0:
      return add("arith.constant " +
                     c_.pick({"1.0", "0.0", "-2.5", "3.0e+38", "1.0e-40",
                              "0x7FC00000", "0x7F800000", "0xFF800000"}) +
                     " : f32",
                 "f32");
    case 1:
      return add("arith.constant " +
                     c_.pick({"1", "0", "7", "-1", "64", "9223372036854775807",
                              "-9223372036854775808"}) +
                     " : index",
                 "index");
    case 2: {
      Value a = any("f32"), b = any("f32");
      return add(
          c_.pick({"arith.addf", "arith.subf", "arith.mulf", "arith.divf",
                   "arith.maximumf", "arith.minimumf", "arith.remf",
                   "math.powf", "math.atan2", "math.copysign"}) +
              " " + a.name + ", " + b.name + " : f32",
          "f32");
    }
    case 3:
      return add(
          c_.pick({"math.tanh", "math.exp", "math.exp2", "math.log",
                   "math.log2", "math.sqrt", "math.rsqrt", "math.absf",
                   "math.floor", "math.ceil", "math.sin", "math.cos",
                   "math.erf", "arith.negf", "math.round", "math.trunc"}) +
              " " + any("f32").name + " : f32",
          "f32");
    case 4: {
      Value a = any("index"), b = any("index");
      return add(
          c_.pick({"arith.addi",       "arith.subi",     "arith.muli",
                   "arith.divui",      "arith.divsi",    "arith.remui",
                   "arith.remsi",      "arith.minui",    "arith.maxui",
                   "arith.minsi",      "arith.maxsi",    "arith.shli",
                   "arith.shrui",      "arith.shrsi",    "arith.andi",
                   "arith.ori",        "arith.xori",     "arith.ceildivsi",
                   "arith.floordivsi", "arith.ceildivui"}) +
              " " + a.name + ", " + b.name + " : index",
          "index");
    }
    case 5: {
      Value a = any("index"), b = any("index");
      return add("arith.cmpi " +
                     c_.pick({"eq", "ne", "slt", "sle", "sgt", "sge", "ult",
                              "ule", "ugt", "uge"}) +
                     ", " + a.name + ", " + b.name + " : index",
                 "i1");
    }
    case 6: {
      Value a = any("f32"), b = any("f32");
      return add("arith.cmpf " +
                     c_.pick({"olt", "oeq", "ogt", "ole", "oge", "one", "ord",
                              "ueq", "ult", "ugt", "ule", "uge", "une", "uno",
                              "true", "false"}) +
                     ", " + a.name + ", " + b.name + " : f32",
                 "i1");
    }
    case 7: {
      std::string type = c_.pick({"f32", "index", "i1", "i32"});
      Value condition = any("i1"), a = any(type), b = any(type);
      return add("arith.select " + condition.name + ", " + a.name + ", " +
                     b.name + " : " + a.type,
                 a.type);
    }
    case 8: {
      Value a = any("i1"), b = any("i1");
      return add(c_.pick({"arith.andi", "arith.ori", "arith.xori"}) + " " +
                     a.name + ", " + b.name + " : i1",
                 "i1");
    }
    case 9:
      return cast();
    case 10:
      return load(captures);
    default:
      return add("math.fma " + any("f32").name + ", " + any("f32").name + ", " +
                     any("f32").name + " : f32",
                 "f32");
    }
  }

  /// A value of `type` from the pool, made if there is none.
  Value any(const std::string &type) {
    std::vector<Value> found;
    for (const Value &v : pool_)
      if (v.type == type)
        found.push_back(v);
    if (!found.empty())
      return found[c_.below(found.size())];
    if (type == "f32")
      add("arith.constant 0.5 : f32", "f32");
    else if (type == "index")
      add("arith.constant 3 : index", "index");
    else if (type == "i1")
      add("arith.constant true", "i1");
    else if (type == "i32")
      add("arith.constant 5 : i32", "i32");
    else
      add("arith.constant 0.0 : " + type, type);
    return pool_.back();
  }

  std::string text;

private:
  void add(const std::string &op, const std::string &type) {
    std::string name = "%r" + std::to_string(next_++);
    text += "        " + name + " = " + op + "\n";
    pool_.push_back({name, type});
  }

  void cast() {
    switch (c_.below(7)) {
    case 0:
      return add("arith.index_cast " + any("index").name + " : index to i32",
                 "i32");
    case 1:
      return add("arith.sitofp " + any("i32").name + " : i32 to f32", "f32");
    case 2:
      return add("arith.uitofp " + any("i32").name + " : i32 to f32", "f32");
    case 3:
      return add("arith.fptosi " + any("f32").name + " : f32 to i32", "i32");
    case 4:
      return add("arith.fptoui " + any("f32").name + " : f32 to i32", "i32");
    case 5: {
      // Regions compute on f32, i1, i32, i64 and index (RegionOps.h).
      add("arith.extsi " + any("i32").name + " : i32 to i64", "i64");
      std::string wide = pool_.back().name;
      return add("arith.trunci " + wide + " : i64 to i32", "i32");
    }
    default:
      return add("arith.index_cast " + any("i32").name + " : i32 to index",
                 "index");
    }
  }

  void load(const std::vector<Capture> &captures) {
    if (captures.empty())
      return cast();
    const Capture &capture = captures[c_.below(captures.size())];
    std::string indices;
    for (int i = 0; i < capture.rank; ++i)
      indices += (i ? ", " : "") + any("index").name;
    add("memref.load " + capture.name + "[" + indices + "] : " + capture.type,
        capture.element);
  }

  Choices &c_;
  std::vector<Value> pool_;
  int next_ = 0;
};

} // namespace

std::string generateRegion(Choices &c, bool score,
                           const std::vector<Capture> &captures,
                           const std::string &yieldOp) {
  std::vector<Value> pool;
  std::string args;
  if (score)
    pool.push_back({"%score", "f32"});
  for (const char *name : {"%b", "%h", "%qi", "%kvi", "%q_len", "%kv_len"})
    pool.push_back({name, "index"});
  for (const Value &v : pool)
    args += (args.empty() ? "" : ", ") + v.name + ": " + v.type;
  for (const Capture &capture : captures)
    args += ", " + capture.name + ": " + capture.type;

  Body body(c, pool);
  int ops = c.below(16);
  for (int i = 0; i < ops; ++i)
    body.step(captures);
  std::string yielded = score ? "f32" : "i1";
  // Now and then a wrong yield, for the verifier.
  if (c.chance(3))
    yielded = score ? "i1" : "f32";
  std::string value = body.any(yielded).name;
  return std::string(score ? "score_mod" : "mask_mod") + " {\n      ^bb0(" +
         args + "):\n" + body.text + "        " + yieldOp + " " + value +
         " : " + yielded + "\n      }\n";
}

} // namespace attnc::fuzz
