"""A Python score_mod or mask_mod, traced once into the text of its
region; traces are cached by what the function reads (environment.py), so
a call with the same function, or the same lambda made again, traces
nothing."""

import inspect
import types
from collections import OrderedDict

from .._tensors import dtype_name
from .._values import as_text
from .builder import Builder
from .captures import ELEMENTS, CapturedTensor, memref_type
from .environment import Environment
from .errors import TraceError, definition_line
from .values import Position, Symbolic, convert

# FlexAttention's arguments, then what attnc adds (taken by name only).
PARAMETERS = {"score_mod": ("score", "b", "h", "q_idx", "kv_idx"),
              "mask_mod": ("b", "h", "q_idx", "kv_idx")}
LENGTHS = ("q_len", "kv_len")
_RESULT = {"score_mod": "f32", "mask_mod": "i1"}

_TRACES = OrderedDict()
_MAX_TRACES = 256


class Region:
    """A traced function: its ops, its result, and the captures it reads
    (`leaves`: their indices among its environment's tensors, in the order
    the region reads them). `shapes`: (leaf, shape) of each tensor whose
    shape the trace read, which a reuse must find unchanged."""

    def __init__(self, kind, builder, result, reads, shapes):
        self.kind = kind
        self.ops = builder.live_ops(result)
        self.result = result
        self.leaves = [t.leaf for t in reads]
        self.names = [t.name for t in reads]
        self.types = [memref_type(t.ndim, ELEMENTS[dtype_name(t.tensor)])
                      for t in reads]
        self.shapes = shapes

    def text(self, slots, capture_types):
        """The region's block: capture i of this trace is block argument
        slots[i] of the attention's captures, typed capture_types."""
        arguments = [f"%{name}: {'f32' if name == 'score' else 'index'}"
                     for name in _BLOCK[self.kind]]
        arguments += [f"%capture{i}: {t}" for i, t in
                      enumerate(capture_types)]
        lines = [f"^bb0({', '.join(arguments)}):"]
        for op in self.ops:
            names = [f"%capture{slots[o.slot]}"
                     if isinstance(o, CapturedTensor) else o.name
                     for o in op.operands]
            lines.append(f"  {op.result.name} = {op.text.format(*names)}")
        lines.append(f"  attn.yield {self.result.name} : "
                     f"{_RESULT[self.kind]}")
        return "\n".join(lines)


_BLOCK = {"score_mod": ("score", "b", "h", "qi", "kvi", "q_len", "kv_len"),
          "mask_mod": ("b", "h", "qi", "kvi", "q_len", "kv_len")}


def _check_function(kind, fn):
    if not isinstance(fn, (types.FunctionType, types.MethodType)):
        raise TypeError(f"{kind} must be a str (a region's MLIR) or a Python "
                        f"function, got {type(fn).__name__}")


def _arguments(kind, fn, block):
    """The arguments the function is called with: FlexAttention's, and
    q_len and kv_len by name where it takes them."""
    positional = [block[name] for name in PARAMETERS[kind]]
    signature = inspect.signature(fn)
    extra = {name: block[name] for name in LENGTHS
             if name in signature.parameters}
    try:
        signature.bind(*positional, **extra)
    except TypeError as error:
        raise TraceError(
            f"{kind} must take FlexAttention's arguments "
            f"({', '.join(PARAMETERS[kind])}) and optionally q_len and "
            f"kv_len by name: {error}", definition_line(_code_owner(fn))
            ) from None
    return positional, extra


def _code_owner(fn):
    return getattr(fn, "__func__", fn)


def _trace(kind, fn):
    """Calls a copy of fn on symbolic values and records the region."""
    builder = Builder(Symbolic)
    block = {name: builder.argument(name, "f32" if name == "score" else
                                    "index") for name in _BLOCK[kind]}
    block["q_idx"] = Position(builder, block["qi"], block["kv_len"],
                              block["q_len"])
    block["kv_idx"] = block["kvi"]
    reads, stand_ins = [], []

    def stand_in(tensor, name, leaf):
        stand_ins.append(CapturedTensor(reads, builder, tensor, name, leaf))
        return stand_ins[-1]

    copy = Environment(fn, stand_in).function
    positional, extra = _arguments(kind, fn, block)
    result = copy(*positional, **extra)
    result = _result(kind, fn, builder, result)
    shapes = [(t.leaf, tuple(t.tensor.shape)) for t in stand_ins
              if t.shape_read]
    region = Region(kind, builder, result, reads, shapes)
    # The cache keeps the trace, not the tensors: each call reads its own.
    for t in stand_ins:
        t.tensor = None
    return region


def _result(kind, fn, builder, result):
    """The yielded value: f32 for score_mod (an integer converts, as
    torch writes it into float scores), i1 for mask_mod."""
    where = definition_line(_code_owner(fn))
    wanted = _RESULT[kind]
    if isinstance(result, Symbolic):
        type_ = result.type
    elif isinstance(result, bool):
        type_ = "i1"
    elif isinstance(result, (int, float)):
        type_ = "f32" if isinstance(result, float) else "index"
    else:
        what = "the new score" if wanted == "f32" else "a boolean"
        raise TraceError(f"{kind} returned {type(result).__name__}: it must "
                         f"return one value ({what})", where)
    if wanted == "i1" and type_ != "i1":
        what = "a float" if type_ == "f32" else "an integer"
        raise TraceError(f"mask_mod returned {what}: it must return a "
                         f"boolean, true where the key is visible (a "
                         f"comparison)", where)
    if wanted == "f32" and type_ == "i1":
        raise TraceError("score_mod returned a boolean: it returns the new "
                         "score (a mask is mask_mod's, or torch.where(mask, "
                         "score, -float('inf')))", where)
    return convert(result, wanted, builder)


def traced(kind, fn):
    """fn's region and its environment's tensors now: a cached trace when
    fn reads what a traced function read (its tensors of the same dtype,
    rank and, where the trace read it, shape)."""
    _check_function(kind, fn)
    environment = Environment(fn)
    key = (kind, environment.key)
    region = _TRACES.get(key)
    tensors = environment.tensors
    if region is not None and all(tuple(tensors[leaf][1].shape) == shape
                                  for leaf, shape in region.shapes):
        _TRACES.move_to_end(key)
    else:
        region = _trace(kind, fn)
        _TRACES[key] = region
        if len(_TRACES) > _MAX_TRACES:
            _TRACES.popitem(last=False)
    return region, [tensors[leaf][1] for leaf in region.leaves]


def clear_cache():
    """Forgets every trace: for a function whose trace read an object's
    attribute (self.window) that has changed since."""
    _TRACES.clear()


def lower(score_mod, mask_mod, captures=(), capture_types=()):
    """The region texts of score_mod and mask_mod (each None, MLIR text, or
    a Python function, traced) and the captures the traced ones add.

    captures: the tensors the call lists (None where only the type is
    known), with their memref types. A traced function reads them from
    their slots when it reads the same tensor; the tensors it reads that
    are not listed are appended. Returns (score_text, mask_text, added),
    added a list of (name, tensor, memref type)."""
    tensors, types_ = list(captures), list(capture_types)
    added, regions, texts = [], {}, {}
    for kind, mod in (("score_mod", score_mod), ("mask_mod", mask_mod)):
        if mod is None or not callable(mod):
            # Text, or the error of a value that is neither.
            texts[kind] = None if mod is None else as_text(kind, mod)
            continue
        region, read = traced(kind, mod)
        slots = []
        for name, tensor, type_ in zip(region.names, read, region.types):
            slot = next((i for i, t in enumerate(tensors) if t is tensor),
                        None)
            if slot is None:
                slot = len(tensors)
                tensors.append(tensor)
                types_.append(type_)
                added.append((name, tensor, type_))
            slots.append(slot)
        regions[kind] = (region, slots)
    if added:
        for kind, text in texts.items():
            if text is not None:
                raise ValueError(
                    f"{kind} is MLIR text, so its block arguments name every "
                    f"capture: list the tensors the traced function reads "
                    f"({', '.join(name for name, _, _ in added)}) in "
                    f"captures, or write both mods as functions")
    for kind, (region, slots) in regions.items():
        texts[kind] = region.text(slots, types_)
    return texts["score_mod"], texts["mask_mod"], added
