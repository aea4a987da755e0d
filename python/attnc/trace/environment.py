"""What a mod function reads besides its arguments: its closure cells, the
globals its code names and its defaults, following the Python functions
found there (FlexAttention's and_masks holds the masks it combines in its
closure). One walk gives the trace cache's key, the tensors the function
can read and, for a trace, a copy of the function that sees stand-ins in
place of those tensors."""

import functools
import types
import weakref

from .._tensors import dtype_name
from .values import BUILTINS

# Functions nested deeper than this are read as opaque objects.
_MAX_DEPTH = 8
_SCALARS = (type(None), bool, int, str, bytes)


def is_tensor(value):
    """A tensor as attnc's checks see one (data_ptr, shape and dtype): the
    type says, so that no stand-in's attribute hook runs."""
    t = type(value)
    return all(hasattr(t, a) for a in ("data_ptr", "shape", "dtype")) or (
        hasattr(t, "data_ptr") and hasattr(value, "shape")
        and hasattr(value, "dtype"))


@functools.lru_cache(maxsize=1024)
def _global_names(code):
    """The names `code` and the code nested in it (lambdas, inner defs,
    comprehensions) may read as globals."""
    names = dict.fromkeys(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.update(dict.fromkeys(_global_names(const)))
    return tuple(names)


class _Same:
    """An object that is part of a cache key by identity (a module, an
    nn.Module, a code object). Held weakly where it can be, so that the
    cache keeps no model alive; a key whose object died matches nothing
    live."""

    __slots__ = ("_get", "_hash")

    def __init__(self, value):
        try:
            self._get = weakref.ref(value)
        except TypeError:  # dicts, code objects: held
            self._get = lambda: value
        self._hash = id(value)

    def __eq__(self, other):
        if not isinstance(other, _Same):
            return False
        mine = self._get()
        return mine is not None and mine is other._get()

    def __hash__(self):
        return self._hash


class Environment:
    """The walk of `fn`'s environment. `key`: hashable, equal for two
    functions a trace cannot tell apart (same code; numbers and strings
    equal; tensors of one dtype and rank; other objects identical).
    `tensors`: (name, tensor) of each tensor met, in walk order. With
    `stand_in(tensor, name, index)`, `function` is a copy of fn that reads
    stand_in's values in place of the tensors (and symbolic-aware min and
    max in place of Python's)."""

    def __init__(self, fn, stand_in=None):
        self._parts = []
        self.tensors = []
        self._stand_in = stand_in
        self._functions = {}
        self.function = self._walk(fn, getattr(fn, "__name__", "fn"), 0)
        self.key = tuple(self._parts)

    def _walk(self, value, name, depth):
        kind = type(value)
        if kind in _SCALARS:
            self._parts.append((kind, value))
            return value
        if kind is float:  # repr tells -0.0 from 0.0, and NaN equals NaN
            self._parts.append((kind, repr(value)))
            return value
        if kind is types.FunctionType and depth < _MAX_DEPTH:
            return self._function(value, depth + 1)
        if kind is types.MethodType and depth < _MAX_DEPTH:
            self._parts.append(("method",))
            function = self._walk(value.__func__, name, depth)
            owner = self._walk(value.__self__, "self", depth)
            return types.MethodType(function, owner) \
                if self._stand_in else value
        if kind in (tuple, list) and depth < _MAX_DEPTH:
            self._parts.append((kind, len(value)))
            items = [self._walk(item, f"{name}[{i}]", depth)
                     for i, item in enumerate(value)]
            return kind(items) if self._stand_in else value
        if is_tensor(value):
            self._parts.append(("tensor", dtype_name(value),
                                len(value.shape)))
            self.tensors.append((name, value))
            if self._stand_in:
                return self._stand_in(value, name, len(self.tensors) - 1)
            return value
        self._parts.append(_Same(value))
        return value

    def _function(self, fn, depth):
        seen = self._functions.get(id(fn))
        if seen is not None:  # recursion, or one helper read twice
            self._parts.append(("seen", seen[0]))
            return seen[1]
        code = fn.__code__
        self._functions[id(fn)] = (len(self._functions), fn)
        self._parts.append(_Same(code))
        closure = None
        if fn.__closure__:
            closure = []
            for name, cell in zip(code.co_freevars, fn.__closure__):
                try:
                    contents = cell.cell_contents
                except ValueError:  # a cell not yet assigned
                    self._parts.append(("empty cell",))
                    closure.append(cell)
                    continue
                closure.append(types.CellType(
                    self._walk(contents, name, depth)))
            closure = tuple(closure)
        read = {}
        # A library's own globals (torch's and_masks reads torch) are not
        # the user's: only its closure and defaults are.
        if not (fn.__module__ or "").startswith("torch"):
            found = fn.__globals__
            for name in _global_names(code):
                if name in found:
                    self._parts.append(name)
                    read[name] = self._walk(found[name], name, depth)
        self._parts.append(("end",))
        names = code.co_varnames[code.co_argcount - len(fn.__defaults__ or
                                                        ()):]
        defaults = tuple(self._walk(d, n, depth) for d, n in
                         zip(fn.__defaults__ or (), names))
        kwdefaults = {n: self._walk(d, n, depth) for n, d in
                      sorted((fn.__kwdefaults__ or {}).items())}
        if not self._stand_in:
            return fn
        scope = dict(fn.__globals__, **read)
        scope["__builtins__"] = BUILTINS
        copy = types.FunctionType(code, scope, fn.__name__, defaults or None,
                                  closure)
        copy.__kwdefaults__ = kwdefaults or None
        self._functions[id(fn)] = (self._functions[id(fn)][0], copy)
        return copy
