"""Symbolic values: what a traced score_mod or mask_mod computes on. Each
operation records the region ops that compute it, with torch's meaning
(type promotion, floor division, a remainder with the divisor's sign).

Types are the region's: f32 (scores), i1 (booleans), index (the
positions), i32 and i64 (integers read from captures)."""

import builtins
import math
import numbers

from .builder import INTEGERS
from .errors import refuse

# Integer ranks for promotion: i32 widens to the 64-bit types; index and
# i64 meet at index, the positions' type.
_INT_RANK = {"i32": 0, "i64": 1, "index": 2}


class Symbolic:
    """A value of the traced function: a block argument or an op's result.
    Python's operators and the methods torch tensors have (exp, clamp,
    where...) record ops; what has no region equivalent is refused with
    the line that asked for it."""

    __slots__ = ("builder", "name", "type")
    __hash__ = object.__hash__

    def __init__(self, builder, name, type_):
        self.builder, self.name, self.type = builder, name, type_

    def __repr__(self):
        return f"<attnc symbolic {self.type} {self.name}>"

    # Python needs a concrete value here: a region has none to give.
    def __bool__(self):
        raise refuse(
            "bool() of a symbolic value: a Python `if`, `while`, `and`, "
            "`or`, `not` or chained comparison needs to know the value "
            "while tracing; write conditions with `&`, `|`, `~` and "
            "torch.where (or attnc.where)")

    def __index__(self):
        raise refuse(
            "index() of a symbolic value: only captured tensors can be "
            "indexed by symbolic values (a Python list or tuple cannot); "
            "make the table a tensor (torch.tensor(...)) the function "
            "reads from its closure or globals")

    def __int__(self):
        raise refuse("int() of a symbolic value: its value is known only "
                     "in the kernel; use `//` or torch.floor")

    def __float__(self):
        raise refuse("float() of a symbolic value: Python's math module "
                     "needs a number; use torch's functions (torch.exp, "
                     "torch.tanh...) or attnc's (attnc.exp...)")

    def __iter__(self):
        raise refuse("iterating over a symbolic value: it is one scalar")

    __complex__ = __float__

    # Arithmetic.
    def __add__(self, other): return arithmetic("add", self, other)
    def __radd__(self, other): return arithmetic("add", other, self)
    def __sub__(self, other): return arithmetic("sub", self, other)
    def __rsub__(self, other): return arithmetic("sub", other, self)
    def __mul__(self, other): return arithmetic("mul", self, other)
    def __rmul__(self, other): return arithmetic("mul", other, self)
    def __truediv__(self, other): return true_divide(self, other)
    def __rtruediv__(self, other): return true_divide(other, self)
    def __floordiv__(self, other): return floor_divide(self, other)
    def __rfloordiv__(self, other): return floor_divide(other, self)
    def __mod__(self, other): return remainder(self, other)
    def __rmod__(self, other): return remainder(other, self)
    def __pow__(self, other): return power(self, other)
    def __rpow__(self, other): return power(other, self)
    def __neg__(self): return negate(self)
    def __pos__(self): return self
    def __abs__(self): return abs_(self)
    def __invert__(self): return invert(self)

    # Bitwise and boolean logic.
    def __and__(self, other): return bitwise("andi", self, other)
    def __rand__(self, other): return bitwise("andi", other, self)
    def __or__(self, other): return bitwise("ori", self, other)
    def __ror__(self, other): return bitwise("ori", other, self)
    def __xor__(self, other): return bitwise("xori", self, other)
    def __rxor__(self, other): return bitwise("xori", other, self)
    def __lshift__(self, other): return shift("shli", self, other)
    def __rlshift__(self, other): return shift("shli", other, self)
    def __rshift__(self, other): return shift("shrsi", self, other)
    def __rrshift__(self, other): return shift("shrsi", other, self)

    # Comparisons: Python reflects them itself (5 < x is x > 5).
    def __lt__(self, other): return compare("lt", self, other)
    def __le__(self, other): return compare("le", self, other)
    def __gt__(self, other): return compare("gt", self, other)
    def __ge__(self, other): return compare("ge", self, other)
    def __eq__(self, other): return compare("eq", self, other)
    def __ne__(self, other): return compare("ne", self, other)

    # The methods of torch tensors that mods use.
    def exp(self): return exp(self)
    def exp2(self): return exp2(self)
    def log(self): return log(self)
    def log2(self): return log2(self)
    def sqrt(self): return sqrt(self)
    def rsqrt(self): return rsqrt(self)
    def tanh(self): return tanh(self)
    def sigmoid(self): return sigmoid(self)
    def floor(self): return floor(self)
    def ceil(self): return ceil(self)
    def abs(self): return abs_(self)
    def clamp(self, min=None, max=None): return clamp(self, min, max)
    clip = clamp
    def minimum(self, other): return minimum(self, other)
    def maximum(self, other): return maximum(self, other)
    def logical_not(self): return invert(as_bool(self))
    def logical_and(self, other): return bitwise("andi", as_bool(self),
                                                 as_bool(other))
    def logical_or(self, other): return bitwise("ori", as_bool(self),
                                                as_bool(other))

    def float(self): return convert(self, "f32")
    def int(self): return convert(self, "i32")
    def long(self): return convert(self, "i64")
    def bool(self): return as_bool(self)

    def to(self, dtype):
        return convert(self, dtype_type(dtype))

    def new_ones(self, size=(), dtype=None):
        return self._new(1, size, dtype)

    def new_zeros(self, size=(), dtype=None):
        return self._new(0, size, dtype)

    def _new(self, value, size, dtype):
        # FlexAttention's and_masks / or_masks start from b.new_ones((),
        # dtype=torch.bool): one scalar, which a region holds.
        if tuple(size) != ():
            raise refuse(f"new tensor of shape {tuple(size)}: a region "
                         f"computes one scalar per score; give shape ()")
        type_ = self.type if dtype is None else dtype_type(dtype)
        return self.builder.constant(value, type_)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        from .torch_functions import call
        return call(func, args, kwargs or {})


class Position(Symbolic):
    """q_idx: the query's position in the sequence, qi + kv_len - q_len
    (docs/regions.md), computed on first use so that a function that does
    not read it costs nothing."""

    __slots__ = ("_parts",)

    def __init__(self, builder, qi, kv_len, q_len):
        super().__init__(builder, None, "index")
        self._parts = (qi, kv_len, q_len)

    def materialize(self):
        if self.name is None:
            qi, kv_len, q_len = self._parts
            end = self.builder.op("index", "arith.addi {}, {} : index", qi,
                                  kv_len)
            self.builder.define(self, "arith.subi {}, {} : index",
                                (end, q_len))


def dtype_type(dtype):
    """The region type of a torch dtype (or its name)."""
    name = str(dtype).replace("torch.", "")
    types = {"float32": "f32", "float": "f32", "int32": "i32", "int": "i32",
             "int64": "i64", "long": "i64", "bool": "i1"}
    if name not in types:
        raise refuse(f"dtype {name}: regions compute on float32, int32, "
                     f"int64 and bool")
    return types[name]


def _builder(*values):
    for v in values:
        if isinstance(v, Symbolic):
            return v.builder
    return None


def _constant_type(value):
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, numbers.Integral):
        return "index"
    if isinstance(value, numbers.Real):
        return "f32"
    return None


def _kind(type_):
    return "f32" if type_ == "f32" else "i1" if type_ == "i1" else "int"


def common_type(a, b):
    """torch's promotion on two operands: booleans < integers < floats;
    a Python number takes the other operand's type within its kind (a
    Python int with an i32 stays i32, with f32 becomes f32)."""
    ta = a.type if isinstance(a, Symbolic) else _constant_type(a)
    tb = b.type if isinstance(b, Symbolic) else _constant_type(b)
    for value, type_ in ((a, ta), (b, tb)):
        if type_ is None:
            raise refuse(_not_a_value(value))
    order = {"i1": 0, "int": 1, "f32": 2}
    ka, kb = _kind(ta), _kind(tb)
    if ka != kb:
        return ta if order[ka] > order[kb] else tb
    if ka != "int":
        return ta
    # Two integers: a constant adopts the symbolic one's type.
    if not isinstance(a, Symbolic):
        return tb
    if not isinstance(b, Symbolic):
        return ta
    return ta if _INT_RANK[ta] >= _INT_RANK[tb] else tb


def _not_a_value(value):
    if getattr(type(value), "_attnc_tensor", False):
        what = f"captured tensor {value.name}"
    elif hasattr(value, "data_ptr") and hasattr(value, "shape"):
        what = "a tensor"
    else:
        return (f"{type(value).__name__} value {value!r:.60}: regions "
                f"compute on symbolic values and Python numbers")
    return (f"{what} used as a value: a region reads captured tensors one "
            f"element at a time, indexed by symbolic values (table[h], "
            f"bias[q_idx, kv_idx])")


def convert(value, type_, builder=None):
    """`value` (symbolic or a Python number) as `type_`, by the casts the
    verifier admits (index reaches f32 through i64; i1 converts unsigned,
    true is 1)."""
    if not isinstance(value, Symbolic):
        if _constant_type(value) is None:
            raise refuse(_not_a_value(value))
        if type_ in INTEGERS and isinstance(value, numbers.Real) and \
                not isinstance(value, numbers.Integral):
            raise refuse(f"float constant {value} where an integer is "
                         f"needed")
        try:
            return builder.constant(value, type_)
        except OverflowError as error:
            raise refuse(f"constant {error}") from None
    if isinstance(value, Position):  # defined where first used
        value.materialize()
    source = value.type
    b = value.builder
    if source == type_:
        return value
    if type_ == "i1":
        return compare("ne", value, 0)
    if source == "i1":
        op = {"f32": "uitofp", "index": "index_castui"}.get(type_, "extui")
        return b.op(type_, f"arith.{op} {{}} : i1 to {type_}", value)
    if source == "f32":
        if type_ == "index":
            wide = b.op("i64", "arith.fptosi {} : f32 to i64", value)
            return convert(wide, "index")
        return b.op(type_, f"arith.fptosi {{}} : f32 to {type_}", value)
    if type_ == "f32":
        if source == "index":
            value = convert(value, "i64")
        return b.op("f32", f"arith.sitofp {{}} : {value.type} to f32", value)
    if "index" in (source, type_):
        return b.op(type_, f"arith.index_cast {{}} : {source} to {type_}",
                    value)
    op = "extsi" if _INT_RANK[type_] > _INT_RANK[source] else "trunci"
    return b.op(type_, f"arith.{op} {{}} : {source} to {type_}", value)


def _operands(a, b, type_=None):
    """a and b, converted to their common type (or `type_`)."""
    type_ = type_ or common_type(a, b)
    builder = _builder(a, b)
    return convert(a, type_, builder), convert(b, type_, builder), type_


def _binary(op, a, b, type_):
    return a.builder.op(type_, f"arith.{op} {{}}, {{}} : {type_}", a, b)


def arithmetic(op, a, b):
    """+, - and *: on booleans as on integers (torch refuses bool - bool;
    a sum of conditions is a count)."""
    type_ = common_type(a, b)
    if type_ == "i1":
        type_ = "index"
    a, b, type_ = _operands(a, b, type_)
    return _binary(op + ("f" if type_ == "f32" else "i"), a, b, type_)


def true_divide(a, b):
    """`/` is true division, integers included (torch's)."""
    a, b, _ = _operands(a, b, "f32")
    return _binary("divf", a, b, "f32")


def _integer_divisor(b):
    if not isinstance(b, Symbolic) and b == 0:
        raise refuse("integer division by the constant 0: its result is "
                     "undefined in a region")


def floor_divide(a, b):
    type_ = common_type(a, b)
    if type_ == "f32":
        return floor(true_divide(a, b))
    _integer_divisor(b)
    a, b, type_ = _operands(a, b, _integer(type_))
    return _binary("floordivsi", a, b, type_)


def _integer(type_):
    return "index" if type_ == "i1" else type_


def remainder(a, b):
    """Python's and torch's `%`: the result has the divisor's sign (C's
    remainder has the dividend's), so a negative remainder of a positive
    divisor is moved up by the divisor."""
    type_ = common_type(a, b)
    if type_ != "f32":
        _integer_divisor(b)
        type_ = _integer(type_)
    divisor_sign = None if isinstance(b, Symbolic) else b > 0
    a, b, type_ = _operands(a, b, type_)
    floating = type_ == "f32"
    r = _binary("remf" if floating else "remsi", a, b, type_)
    negative = compare("lt", r, 0)
    if divisor_sign is True:
        wrong_sign = negative
    elif divisor_sign is False:
        wrong_sign = compare("gt", r, 0)
    else:
        wrong_sign = compare("ne", r, 0) & (negative ^ compare("lt", b, 0))
    return where(wrong_sign, arithmetic("add", r, b), r)


def power(a, b):
    """A float power is math.powf; an integer to a constant power of 0 or
    more is its product (torch keeps it an integer)."""
    type_ = common_type(a, b)
    if type_ == "f32":
        a, b, _ = _operands(a, b, "f32")
        return a.builder.op("f32", "math.powf {}, {} : f32", a, b)
    if isinstance(b, Symbolic) or b < 0:
        raise refuse("an integer to a symbolic or negative power: make "
                     "the base a float (x.float() ** y)")
    result = convert(1, _integer(type_), a.builder)
    for _ in range(b):
        result = arithmetic("mul", result, a)
    return result


def negate(a):
    if a.type == "i1":
        raise refuse("`-` on a boolean: use `~` (torch refuses it too)")
    if a.type == "f32":
        return a.builder.op("f32", "arith.negf {} : f32", a)
    return arithmetic("sub", 0, a)


def invert(a):
    if a.type == "f32":
        raise refuse("`~` on a float: `~` inverts booleans and integers")
    return bitwise("xori", a, True if a.type == "i1" else -1)


def bitwise(op, a, b):
    """&, | and ^: logic on booleans, bitwise on integers."""
    type_ = common_type(a, b)
    if type_ == "f32":
        raise refuse(f"`{ {'andi': '&', 'ori': '|', 'xori': '^'}[op]}` on "
                     f"a float: it combines booleans (comparisons) or "
                     f"integers")
    a, b, type_ = _operands(a, b, type_)
    return _binary(op, a, b, type_)


def shift(op, a, b):
    type_ = common_type(a, b)
    if type_ in ("f32", "i1"):
        raise refuse(f"a shift of a {'float' if type_ == 'f32' else 'bool'}"
                     f": shifts take integers")
    a, b, type_ = _operands(a, b, type_)
    return _binary(op, a, b, type_)


_FLOAT_PREDICATES = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge",
                     "eq": "oeq", "ne": "une"}
# Booleans compare unsigned: false < true, as in torch and C++.
_BOOL_PREDICATES = {"lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge",
                    "eq": "eq", "ne": "ne"}
_INT_PREDICATES = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge",
                   "eq": "eq", "ne": "ne"}


def compare(predicate, a, b):
    a, b, type_ = _operands(a, b)
    if type_ == "f32":
        op, predicate = "cmpf", _FLOAT_PREDICATES[predicate]
    else:
        table = _BOOL_PREDICATES if type_ == "i1" else _INT_PREDICATES
        op, predicate = "cmpi", table[predicate]
    return a.builder.op("i1", f"arith.{op} {predicate}, {{}}, {{}} : "
                        f"{type_}", a, b)


def as_bool(value):
    if isinstance(value, Symbolic):
        return convert(value, "i1")
    return bool(value)


# Functions on symbolic values and Python numbers alike: attnc.where,
# attnc.exp... for mods written without torch, and torch's, dispatched here.

def where(condition, a, b):
    """torch.where: a where the condition holds, else b."""
    if not isinstance(condition, Symbolic):
        return a if condition else b
    if condition.type != "i1":
        raise refuse(f"where's condition is {condition.type}: it must be a "
                     f"boolean (a comparison)")
    builder = condition.builder
    type_ = common_type(a, b)
    a, b = convert(a, type_, builder), convert(b, type_, builder)
    return builder.op(type_, f"arith.select {{}}, {{}}, {{}} : {type_}",
                      condition, a, b)


def _min_max(a, b, smaller):
    if _builder(a, b) is None:
        return builtins.min(a, b) if smaller else builtins.max(a, b)
    a, b, type_ = _operands(a, b)
    if type_ == "f32":
        # minimumf / maximumf propagate NaN, as torch.minimum does.
        op = "minimumf" if smaller else "maximumf"
    elif type_ == "i1":
        op = "andi" if smaller else "ori"
    else:
        op = "minsi" if smaller else "maxsi"
    return _binary(op, a, b, type_)


def minimum(a, b):
    return _min_max(a, b, True)


def maximum(a, b):
    return _min_max(a, b, False)


def clamp(x, min=None, max=None):
    """torch.clamp: max(x, min), then min(., max); either may be None."""
    if min is None and max is None:
        raise refuse("clamp needs min or max")
    if min is not None:
        x = maximum(x, min)
    if max is not None:
        x = minimum(x, max)
    return x


def _math(op, x, fallback):
    """math.<op> on f32 (an integer or boolean is converted first, as
    torch's float functions do); a Python number gets Python's answer."""
    if not isinstance(x, Symbolic):
        if _constant_type(x) is None:
            raise refuse(_not_a_value(x))
        return fallback(x)
    x = convert(x, "f32")
    return x.builder.op("f32", f"math.{op} {{}} : f32", x)


def exp(x): return _math("exp", x, math.exp)
def exp2(x): return _math("exp2", x, lambda v: 2.0 ** v)
def log(x): return _math("log", x, math.log)
def log2(x): return _math("log2", x, math.log2)
def sqrt(x): return _math("sqrt", x, math.sqrt)
def rsqrt(x): return _math("rsqrt", x, lambda v: 1 / math.sqrt(v))
def tanh(x): return _math("tanh", x, math.tanh)


def _unary(op, fallback):
    return lambda x: _math(op, x, fallback)


def _binary_math(op, fallback):
    def function(a, b):
        if _builder(a, b) is None:
            return fallback(a, b)
        a, b, _ = _operands(a, b, "f32")
        return a.builder.op("f32", f"math.{op} {{}}, {{}} : f32", a, b)
    return function


# The other math functions regions have (RegionOps.h), by torch's names:
# traced from torch (torch.sin) and as tensor methods (x.sin()).
OTHER_MATH = {
    name: _unary(op, fallback) for name, op, fallback in (
        ("sin", "sin", math.sin), ("cos", "cos", math.cos),
        ("tan", "tan", math.tan), ("asin", "asin", math.asin),
        ("acos", "acos", math.acos), ("atan", "atan", math.atan),
        ("sinh", "sinh", math.sinh), ("cosh", "cosh", math.cosh),
        ("asinh", "asinh", math.asinh), ("acosh", "acosh", math.acosh),
        ("atanh", "atanh", math.atanh), ("erf", "erf", math.erf),
        ("erfc", "erfc", math.erfc), ("expm1", "expm1", math.expm1),
        ("log10", "log10", math.log10), ("log1p", "log1p", math.log1p),
        ("trunc", "trunc", math.trunc),
        # torch.round rounds halves to even, as rintf does.
        ("round", "roundeven", round))}
OTHER_MATH["atan2"] = _binary_math("atan2", math.atan2)
OTHER_MATH["copysign"] = _binary_math("copysign", math.copysign)
OTHER_MATH["pow"] = power
for _name, _function in OTHER_MATH.items():
    setattr(Symbolic, _name, _function)


def sigmoid(x):
    """1 / (1 + exp(-x)): exp overflowing to inf gives 0, as it should."""
    if not isinstance(x, Symbolic):
        return 1 / (1 + math.exp(-x))
    return true_divide(1.0, arithmetic("add", 1.0, exp(negate(
        convert(x, "f32")))))


def _rounding(op, x, fallback):
    # Integers are whole already (torch returns them as they are).
    if isinstance(x, Symbolic) and x.type != "f32":
        return x
    return _math(op, x, fallback)


def floor(x): return _rounding("floor", x, math.floor)
def ceil(x): return _rounding("ceil", x, math.ceil)


def abs_(x):
    if not isinstance(x, Symbolic):
        return builtins.abs(x)
    if x.type == "i1":
        return x
    if x.type == "f32":
        return x.builder.op("f32", "math.absf {} : f32", x)
    return x.builder.op(x.type, f"math.absi {{}} : {x.type}", x)


def _folded(fold, name):
    def python_builtin(*args, **kwargs):
        """Python's min / max, folding symbolic values with torch's
        minimum / maximum (a Python comparison would need bool())."""
        values = args[0] if len(args) == 1 else args
        if kwargs or not isinstance(values, (list, tuple)) or \
                not any(isinstance(v, Symbolic) for v in values):
            return getattr(builtins, name)(*args, **kwargs)
        result = values[0]
        for v in values[1:]:
            result = fold(result, v)
        return result
    python_builtin.__name__ = name
    return python_builtin


# Python's builtins as a traced function sees them.
BUILTINS = dict(builtins.__dict__, min=_folded(minimum, "min"),
                max=_folded(maximum, "max"))
