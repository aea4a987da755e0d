"""The ops a trace records, in the order the function ran them, and their
text: the body of a score_mod or mask_mod region (docs/regions.md)."""

import math
import struct

INTEGERS = ("i32", "i64", "index")
_BOUNDS = {"i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1),
           "index": (-2**63, 2**63 - 1)}


class Op:
    """One region op: `text` with a `{}` per operand (Symbolic values, or
    a capture, whose block argument is known only when the region is
    written), and the value it defines."""

    __slots__ = ("result", "text", "operands")

    def __init__(self, result, text, operands):
        self.result, self.text, self.operands = result, text, operands


def f32_literal(value):
    """An f32 constant's MLIR spelling: the float rounded to f32 as the
    kernel would hold it (finite values in decimal, exact at 9 digits;
    infinities and NaN as their bits, which decimal cannot spell)."""
    try:
        value = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:  # finite, but beyond f32: torch rounds it to inf
        value = math.copysign(math.inf, value)
    if math.isfinite(value):
        return f"{value:.9e}"
    return "0x%08X" % struct.unpack("I", struct.pack("f", value))[0]


class Builder:
    """Records ops; block arguments and constants are values too. Values
    are made by `op` (and `argument`, `constant`), never by hand."""

    def __init__(self, value_class):
        self._value = value_class
        self.ops = []
        self._constants = {}
        self._count = 0

    def argument(self, name, type_):
        return self._value(self, "%" + name, type_)

    def op(self, type_, text, *operands):
        """A new value of `type_` defined by `text` over `operands`."""
        return self.define(self._value(self, None, type_), text, operands)

    def define(self, result, text, operands):
        """Defines `result`, a value made without a definition (one made on
        first use), by `text` over `operands`."""
        for operand in operands:
            # The type's attribute: a capture's stand-in refuses others.
            materialize = getattr(type(operand), "materialize", None)
            if materialize is not None:
                materialize(operand)
        result.name = f"%v{self._count}"
        self._count += 1
        self.ops.append(Op(result, text, operands))
        return result

    def constant(self, value, type_):
        """One value per (type, value): a constant used twice is defined
        once. Ints must fit the type (the caller says which one)."""
        if type_ == "i1":
            key, text = bool(value), "true" if value else "false"
        elif type_ == "f32":
            text = f32_literal(float(value))
            key = text
        else:
            lo, hi = _BOUNDS[type_]
            if not lo <= value <= hi:
                raise OverflowError(f"{value} does not fit {type_}")
            key = text = str(int(value))
        found = self._constants.get((type_, key))
        if found is None:
            suffix = "" if type_ == "i1" else f" : {type_}"
            found = self.op(type_, f"arith.constant {text}{suffix}")
            self._constants[(type_, key)] = found
        return found

    def live_ops(self, result):
        """The ops `result` depends on, in their order: what the function
        computed and did not use is left out of the region."""
        live = {id(result)}
        kept = []
        for op in reversed(self.ops):
            if id(op.result) in live:
                kept.append(op)
                live.update(id(o) for o in op.operands)
        kept.reverse()
        return kept
