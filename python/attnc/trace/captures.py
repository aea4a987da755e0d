"""Tensors a traced function reads: what it sees in place of each tensor
of its closure, globals and defaults. Indexing one by symbolic values is
a memref.load of a capture; the tensors read become the attention's
captures, in the order first read."""

import numbers

from .._tensors import dtype_name
from .errors import refuse
from .values import Symbolic, convert

# Capture element types a region reads, by torch's dtype name; the
# attention's captures are int32 or float32 tensors.
ELEMENTS = {"int32": "i32", "float32": "f32"}


def memref_type(rank, element):
    return "memref<" + "?x" * rank + element + ">"


class CapturedTensor:
    """A tensor the function reads, named as the function names it.
    `slot` is its place among the trace's captures once read; `shape_read`
    says whether the trace depends on its shape (not only dtype and rank),
    which the trace cache then checks."""

    _attnc_tensor = True

    def __init__(self, reads, builder, tensor, name, leaf):
        self._reads, self._builder = reads, builder
        self.tensor, self.name, self.leaf = tensor, name, leaf
        self.slot = None
        self.shape_read = False

    def __repr__(self):
        return f"<attnc captured tensor {self.name}>"

    @property
    def shape(self):
        self.shape_read = True
        return tuple(self.tensor.shape)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def __len__(self):
        return self.shape[0]

    @property
    def ndim(self):
        return len(self.tensor.shape)

    def dim(self):
        return self.ndim

    @property
    def dtype(self):
        return self.tensor.dtype

    @property
    def device(self):
        return self.tensor.device

    def __getitem__(self, index):
        return _Row(self, ())[index]

    def __getattr__(self, attribute):
        if attribute.startswith("__"):  # Python's and libraries' probes
            raise AttributeError(attribute)
        raise refuse(f"{self.name}.{attribute}: a captured tensor is read by "
                     f"indexing it with symbolic values ({self.name}[h], "
                     f"{self.name}[q_idx, kv_idx]); tensor methods are not "
                     f"traced")

    def _as_value(self, *args):
        raise refuse(f"captured tensor {self.name} used as a value: a region "
                     f"reads it one element at a time, indexed by symbolic "
                     f"values ({self.name}[h], {self.name}[q_idx, kv_idx])")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _as_value
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = _as_value
    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = _as_value
    __and__ = __rand__ = __or__ = __ror__ = __neg__ = __bool__ = _as_value
    __hash__ = object.__hash__

    def load(self, indices):
        """memref.load of the element at `indices`, as many as the rank."""
        element = ELEMENTS.get(dtype_name(self.tensor))
        if element is None:
            raise refuse(f"captured tensor {self.name} is "
                         f"{dtype_name(self.tensor)}: regions read int32 or "
                         f"float32 tensors (convert it once, outside the "
                         f"function: .int() or .float())")
        if self.slot is None:
            self.slot = len(self._reads)
            self._reads.append(self)
        type_ = memref_type(self.ndim, element)
        subscripts = ", ".join(["{}"] * len(indices))
        return self._builder.op(
            element, f"memref.load {{}}[{subscripts}] : {type_}", self,
            *indices)


class _Row:
    """A captured tensor indexed by fewer subscripts than its rank
    (bias[q_idx] of a 2-D bias): indexing it again reads an element."""

    def __init__(self, tensor, prefix):
        self._tensor, self._prefix = tensor, prefix

    def __getitem__(self, index):
        t = self._tensor
        items = index if isinstance(index, tuple) else (index,)
        indices = self._prefix + tuple(_subscript(t, i) for i in items)
        rank = t.ndim
        if rank == 0:
            raise refuse(f"captured tensor {t.name} has rank 0: a Python "
                         f"number becomes a constant, or give it one "
                         f"element and read {t.name}[0]")
        if len(indices) > rank:
            raise refuse(f"{len(indices)} subscripts of captured tensor "
                         f"{t.name}, which has rank {rank}")
        if len(indices) < rank:
            return _Row(t, indices)
        return t.load(indices)

    def __getattr__(self, attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        self._part()

    def _part(self, *args):
        t = self._tensor
        raise refuse(f"{t.name} indexed by {len(self._prefix)} of its "
                     f"{t.ndim} subscripts used as a value: read an element "
                     f"({t.name}[{', '.join(['...'] * t.ndim)}])")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _part
    __truediv__ = __rtruediv__ = __lt__ = __le__ = __gt__ = __ge__ = _part
    __eq__ = __ne__ = __and__ = __rand__ = __or__ = __ror__ = _part
    __neg__ = __bool__ = _part
    __hash__ = object.__hash__


def _subscript(tensor, item):
    """One subscript as an index value: a symbolic integer or a Python int
    of 0 or more."""
    if isinstance(item, Symbolic):
        if item.type in ("f32", "i1"):
            raise refuse(f"{tensor.name} indexed by a "
                         f"{'float' if item.type == 'f32' else 'boolean'}: "
                         f"subscripts are integers (positions, heads, "
                         f"integers read from captures)")
        return convert(item, "index")
    if isinstance(item, numbers.Integral) and not isinstance(item, bool):
        if item < 0:
            raise refuse(f"negative subscript {item} of {tensor.name}: "
                         f"subscripts count from 0")
        return convert(int(item), "index", tensor._builder)
    raise refuse(f"{tensor.name} indexed by {type(item).__name__} "
                 f"{item!r:.40}: a region reads one element, each subscript "
                 f"a symbolic integer or a Python int")
