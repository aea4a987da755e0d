"""torch's functions on symbolic values, reached through
Symbolic.__torch_function__ (torch calls it for any argument that defines
it, no Tensor subclass needed): each maps to the symbolic function of the
same meaning; the rest are refused by name."""

from . import values as v
from .errors import TraceError, refuse

_TABLE = None


def _binary_min_max(fold, name):
    def reduce_or_fold(x, other=None, *rest, **kwargs):
        if other is None or rest or kwargs:
            raise refuse(f"torch.{name} with one argument reduces a tensor: "
                         f"a region has one score; give two values "
                         f"(torch.{name}imum(a, b))")
        return fold(x, other)
    return reduce_or_fold


def _div(a, b, rounding_mode=None):
    if rounding_mode is None:
        return v.true_divide(a, b)
    if rounding_mode == "floor":
        return v.floor_divide(a, b)
    raise refuse(f"torch.div with rounding_mode={rounding_mode!r}: traced "
                 f"are None and 'floor'")


def _table():
    import torch
    T = torch.Tensor
    functions = {
        "where": v.where, "minimum": v.minimum, "maximum": v.maximum,
        "clamp": v.clamp, "clip": v.clamp, "abs": v.abs_,
        "absolute": v.abs_, "exp": v.exp, "exp2": v.exp2, "log": v.log,
        "log2": v.log2, "sqrt": v.sqrt, "rsqrt": v.rsqrt, "tanh": v.tanh,
        "sigmoid": v.sigmoid, "floor": v.floor, "ceil": v.ceil,
        "min": _binary_min_max(v.minimum, "min"),
        "max": _binary_min_max(v.maximum, "max"),
        "remainder": v.remainder, "floor_divide": v.floor_divide,
        "div": _div, "true_divide": v.true_divide,
        "logical_and": lambda a, b: v.bitwise("andi", v.as_bool(a),
                                              v.as_bool(b)),
        "logical_or": lambda a, b: v.bitwise("ori", v.as_bool(a),
                                             v.as_bool(b)),
        "logical_not": lambda a: v.invert(v.as_bool(a)),
        "add": lambda a, b: v.arithmetic("add", a, b),
        "sub": lambda a, b: v.arithmetic("sub", a, b),
        "mul": lambda a, b: v.arithmetic("mul", a, b),
    }
    functions.update(v.OTHER_MATH)
    table = {}
    for name, function in functions.items():
        for owner in (torch, T):
            found = getattr(owner, name, None)
            if found is not None:
                table[found] = function
    table[torch.special.expit] = v.sigmoid
    return table


def call(func, args, kwargs):
    """torch's `func` on arguments of which some are symbolic."""
    global _TABLE
    if _TABLE is None:
        _TABLE = _table()
    function = _TABLE.get(func)
    if function is None:
        name = getattr(func, "__qualname__", None) or repr(func)
        if name.startswith(("Tensor.", "TensorBase.", "_TensorBase.")):
            raise refuse(f"a torch tensor used with a symbolic value "
                         f"({name}): attnc reads the tensors of the "
                         f"function's closure, globals and defaults, "
                         f"indexed by symbolic values; bind this one to a "
                         f"name the function reads (e.g. bias = self.bias)")
        raise refuse(f"torch.{getattr(func, '__name__', name)} is not "
                     f"traced: regions have arithmetic, comparisons, "
                     f"&, |, ~, where, minimum, maximum, clamp, abs, "
                     f"floor, ceil, // and %, and the math functions of "
                     f"docs/regions.md (exp, log, tanh, sigmoid...)")
    try:
        return function(*args, **kwargs)
    except TypeError as error:
        if isinstance(error, TraceError):
            raise
        raise refuse(f"torch.{getattr(func, '__name__', func)} called with "
                     f"arguments it does not take here: {error}") from None
