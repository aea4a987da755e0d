"""attnc.Step: one forward pass the scheduler formed, its arrays read where
the library keeps them (the C step's own buffers), never copied unless
asked: view() gives a memoryview, tensor() a torch tensor over the same
memory, and the attributes (step.tokens, ...) lists made on first use."""

import ctypes
import struct
import sys

from . import _capi
from ._capi import lib

# Each array of a step: its attnc_step_info pointer field, and its length
# as count field * times + plus. The element type is the field's (int32 or
# int64, from the library's record table).
_ARRAYS = {
    "requests": ("requests", "num_requests", 1, 0),
    "branches": ("branches", "num_requests", 1, 0),
    "qo_indptr": ("qo_indptr", "num_requests", 1, 1),
    "tokens": ("tokens", "num_tokens", 1, 0),
    "token_from_sample": ("token_from_sample", "num_tokens", 1, 0),
    "positions": ("positions", "num_tokens", 1, 0),
    "slot_mapping": ("slot_mapping", "num_tokens", 1, 0),
    "kv_indptr": ("page_indptr", "num_requests", 1, 1),
    "kv_indices": ("page_indices", "num_page_indices", 1, 0),
    "kv_last_page_len": ("last_page_len", "num_requests", 1, 0),
    "samplers": ("samplers", "num_samplers", 1, 0),
    "sampler_branches": ("sampler_branches", "num_samplers", 1, 0),
    "sample_rows": ("sample_rows", "num_samplers", 1, 0),
    # The drafts each request feeds after its last sample (version 16).
    "num_drafts": ("num_drafts", "num_requests", 1, 0),
    "admitted": ("admitted", "num_admitted", 1, 0),
    "preempted": ("preempted", "num_preempted", 1, 0),
    # (source, destination) pairs.
    "page_copies": ("page_copies", "num_page_copies", 2, 0),
    # (host page, device page, direction) triples; direction 0 offloads
    # the device page to the host page, 1 loads it back (version 14).
    "page_transfers": ("page_transfers", "num_page_transfers", 3, 0),
    # Cascade attention's levels (version 18), each array concatenated
    # level after level: cascade_levels splits them.
    "cascade_level_entries": ("cascade_level_entries", "num_cascade_levels",
                              1, 0),
    "cascade_qo_indptr": ("cascade_qo_indptr", "num_cascade_indptr", 1, 0),
    "cascade_kv_indptr": ("cascade_kv_indptr", "num_cascade_indptr", 1, 0),
    "cascade_kv_indices": ("cascade_kv_indices", "num_cascade_kv_indices",
                           1, 0),
    "cascade_kv_last_page_len": ("cascade_kv_last_page_len",
                                 "num_cascade_entries", 1, 0),
}
# The arrays of a cascade level, in CascadeAttention.plan's order, and how
# many entries each has beyond the level's entries (None: as many as the
# level has pages).
_CASCADE = (("cascade_qo_indptr", 1), ("cascade_kv_indptr", 1),
            ("cascade_kv_indices", None), ("cascade_kv_last_page_len", 0))
# Arrays whose entries are tuples: their tensors are [count, width], their
# lists of tuples.
_TUPLE_WIDTH = {name: times for name, (_, _, times, _) in _ARRAYS.items()
                if times > 1}
TRANSFER_OFFLOAD, TRANSFER_LOAD = 0, 1

# struct's code and ctypes' type of each field kind a step's info holds.
_KIND_CODES = {
    _capi.KIND_INT32: ("i", None), _capi.KIND_INT64: ("q", None),
    _capi.KIND_UINT64: ("Q", None),
    _capi.KIND_INT32_ARRAY: ("Q", ctypes.c_int32),
    _capi.KIND_INT64_ARRAY: ("Q", ctypes.c_int64)}


def _info_reader(record):
    """A struct.Struct reading every field of attnc_step_info at the
    offsets ctypes checked against the library's table (pointers as
    addresses), and {field name: its index in what it reads}."""
    layout, at, index = "=", 0, {}
    for field in record.fields:
        if field.kind not in _KIND_CODES:
            raise ImportError(f"attnc: attnc_step_info.{field.name} has a "
                              f"kind ({field.kind}) Step does not read")
        offset = getattr(record, field.name).offset
        layout += "x" * (offset - at) + _KIND_CODES[field.kind][0]
        at = offset + getattr(record, field.name).size
        index[field.name] = len(index)
    layout += "x" * (ctypes.sizeof(record) - at)
    return struct.Struct(layout), index


_INFO, _FIELD = _info_reader(_capi.StepInfo)
# What each array's view holds: struct codes of native int32 and int64.
_FORMAT = {ctypes.c_int32: "i", ctypes.c_int64: "q"}
# Each array as Step reads it: the indices of its address and count in the
# info it read, count's factor and addend, its element's size and format.
_LAYOUT = {}
for _name, (_field, _count, _times, _plus) in _ARRAYS.items():
    _element = _KIND_CODES[_capi.StepInfo.fields[_FIELD[_field]].kind][1]
    _LAYOUT[_name] = (_FIELD[_field], _FIELD[_count], _times, _plus,
                      ctypes.sizeof(_element), _FORMAT[_element])
del _name, _field, _count, _times, _plus, _element
_NUM_SAMPLERS, _SAMPLERS, _SAMPLER_BRANCHES = (
    _FIELD[name] for name in ("num_samplers", "samplers", "sampler_branches"))
# A view is a slice of bytes over this window, placed at the array: one
# ctypes type for every length, where an array type per length would make
# (and keep) a new type for each length a step has. Nothing past the slice
# is read; an array larger (none is: counts are int32) gets its own type.
_WINDOW = ctypes.c_ubyte * (1 << 40)
_WINDOW_SIZE = ctypes.sizeof(_WINDOW)


class _Held:
    """The C step whose buffers a Step's views read: destroyed when the
    Step and every view and tensor over its arrays are gone."""

    __slots__ = ("handle",)

    def __init__(self, handle):
        self.handle = handle

    def __del__(self, destroy=lib.attnc_step_destroy):
        destroy(self.handle)


class Step:
    """One forward pass the scheduler formed: requests in batch order,
    decodes (the first num_decodes) first. Request i feeds tokens
    [qo_indptr[i], qo_indptr[i+1]) at `positions`, whose keys and values
    go to `slot_mapping`, and reads the pages kv_indices[kv_indptr[i] :
    kv_indptr[i+1]], the last holding kv_last_page_len[i] tokens. The
    requests in `samplers` sample from the logits of `sample_rows`: commit
    takes one Sample for each, in that order (commit_tokens one token). A
    request of n > 1 parallel samples forks when its prompt completes: that
    pass samples its n branches (`sampler_branches`) from one row, and later
    passes feed each branch as a request of its own (`branches`). A row
    whose `token_from_sample` is k >= 0 feeds the sample of the previous
    step's sampler k, which was not committed when this step was formed:
    the engine takes it from what it sampled there. A decode of
    `num_drafts[i]` = d > 0 drafts (Scheduler.propose) feeds its last sample
    and the d drafts, every one of its d + 1 rows a sampler: its commit
    says which samples the verification rejected (Sample.rejected,
    commit_tokens' `rejected`).

    Every array is the step's own, read where the library keeps it:
    `view(name)` is a memoryview of it (int32, int64 for request ids and
    slots), `tensor(name)` a torch CPU tensor over the same memory, and
    the attribute of its name (step.tokens) a list made from it on first
    use; none is copied until asked. A view or tensor keeps the step's
    memory alive, after the Step itself is gone; writing to one changes
    nothing the scheduler holds. `page_copies` is (source, destination)
    page pairs to copy, in order and in every layer, before the step's
    keys and values are written (vLLM's blocks_to_copy): a fork's copy of
    its prompt's partial last page. The scheduler's pool made them
    already; an engine whose caches are its own must apply them
    (KVPool.copy_pages does it for a pool's caches; twice is harmless).
    `page_transfers` is (host page, device page, direction) triples, in
    order, after the copies and before the writes: pages the cache's host
    tier (RadixCache(pool, host_pages=N)) offloaded (direction 0,
    TRANSFER_OFFLOAD: device page to host page) or loaded back (1,
    TRANSFER_LOAD). The tier made them in the scheduler's pool already; an
    engine whose caches are its own keeps host pages of its own and must
    apply them, in order. `cascade_levels` (Scheduler(cascade=True)) are
    the step's shared-prefix levels for cascade attention."""

    __slots__ = ("_held", "_fields", "_views", "_lists")

    def __init__(self, held, info):
        """`held`: the _Held C step; `info`: its attnc_step_info."""
        self._held = held
        self._fields = _INFO.unpack_from(info)
        self._views = {}
        self._lists = {}

    def _count(self, name):
        return self._fields[_FIELD[name]]

    def _layout(self, name):
        try:
            return _LAYOUT[name]
        except KeyError:
            raise ValueError(f"a step has no array {name!r} (it has "
                             f"{', '.join(_ARRAYS)})") from None

    def _address(self, name):
        """Where array `name` is (0 when it is empty): valid while this
        Step, or a view or tensor of it, lives."""
        return self._fields[self._layout(name)[0]]

    def _samplers(self):
        """(num_samplers, address of samplers, of sampler_branches): what
        a commit of this step's samples passes as requests and branches."""
        fields = self._fields
        return (fields[_NUM_SAMPLERS], fields[_SAMPLERS],
                fields[_SAMPLER_BRANCHES])

    def view(self, name):
        """Array `name` as a 1-D memoryview over the step's own buffer
        (format "i", or "q" for request ids and slots); page_copies and
        page_transfers flat, 2 and 3 entries a copy and a transfer."""
        view = self._views.get(name)
        if view is None:
            at, count, times, plus, size, fmt = self._layout(name)
            fields = self._fields
            length = fields[count] * times + plus
            if length:
                window = (_WINDOW if length * size <= _WINDOW_SIZE
                          else ctypes.c_ubyte * (length * size)
                          ).from_address(fields[at])
                window._held = self._held  # the view keeps the step
                view = memoryview(window).cast("B")[:length * size].cast(fmt)
            else:  # the library's NULL
                view = memoryview(bytearray()).cast(fmt)
            self._views[name] = view
        return view

    def tensor(self, name):
        """Array `name` as a torch CPU tensor over the step's own buffer:
        int64 for request ids and slots, int32 for the others (what
        PagedAttention.plan takes); page_copies as [copies, 2],
        page_transfers as [transfers, 3]."""
        view = self.view(name)
        torch = sys.modules.get("torch")  # an import statement costs more
        if torch is None:
            try:
                import torch
            except ImportError:
                raise ImportError(f"Step.tensor makes torch tensors: install"
                                  f" PyTorch, or read step.{name}, a list, "
                                  f"or step.view({name!r}), a memoryview"
                                  ) from None
        dtype = torch.int64 if view.format == "q" else torch.int32
        tensor = (torch.frombuffer(view, dtype=dtype) if len(view) else
                  torch.empty(0, dtype=dtype))
        width = _TUPLE_WIDTH.get(name)
        return tensor.view(-1, width) if width else tensor

    @property
    def page_table(self):
        """(kv_indptr, kv_indices, kv_last_page_len) as int32 CPU tensors
        over the step's buffers: PagedAttention.plan's first three
        arguments."""
        return tuple(self.tensor(name) for name in
                     ("kv_indptr", "kv_indices", "kv_last_page_len"))

    def _cascade_spans(self):
        """Each level's [begin, end) in each of _CASCADE's arrays."""
        spans, at = [], [0] * len(_CASCADE)
        kv_indptr = self.view("cascade_kv_indptr")
        for entries in self.view("cascade_level_entries"):
            # The level's pages: the last entry of its kv_indptr.
            pages = kv_indptr[at[1] + entries]
            level = []
            for k, (name, extra) in enumerate(_CASCADE):
                length = pages if extra is None else entries + extra
                level.append((at[k], at[k] + length))
                at[k] += length
            spans.append(level)
        return spans

    def cascade_level_views(self):
        """cascade_levels as memoryviews (format "i") over the step's own
        buffers, for code without torch."""
        return [tuple(self.view(name)[begin:end] for (name, _), (begin, end)
                      in zip(_CASCADE, level))
                for level in self._cascade_spans()]

    @property
    def cascade_levels(self):
        """Cascade attention's levels (Scheduler(cascade=True)), as
        attnc.CascadeAttention.plan and FlashInfer's
        MultiLevelCascadeAttentionWrapper.plan take them: a list of
        (qo_indptr, kv_indptr, kv_indices, kv_last_page_len) int32 CPU
        tensors over the step's buffers, one tuple a level. Each level's
        entries partition the step's rows; those of every level but the
        last are shared prefixes (pages of the radix cache read once for
        all the rows under them, without a causal mask) or gaps (no pages);
        the last has one entry per request, the rest of its pages, causal.
        A request's pages level by level are its pages in page_table.
        Empty when nothing is shared: plain paged attention (page_table)."""
        spans = self._cascade_spans()
        if not spans:
            return []
        tensors = {name: self.tensor(name) for name, _ in _CASCADE}
        return [tuple(tensors[name][begin:end] for (name, _), (begin, end)
                      in zip(_CASCADE, level))
                for level in spans]

    def _list(self, name):
        values = self._lists.get(name)
        if values is None:
            values = self.view(name).tolist()
            width = _TUPLE_WIDTH.get(name)
            if width:
                values = list(zip(*(values[k::width] for k in range(width))))
            self._lists[name] = values
        return values

    @property
    def num_requests(self):
        return self._count("num_requests")

    @property
    def num_tokens(self):
        return self._count("num_tokens")

    @property
    def num_samplers(self):
        return self._count("num_samplers")

    @property
    def num_decodes(self):
        return self._count("num_decodes")

    @property
    def prefill_tokens(self):
        return self._count("prefill_tokens")

    @property
    def decode_tokens(self):
        return self._count("decode_tokens")

    def __repr__(self):
        return (f"Step({self.num_requests} requests, {self.num_decodes} "
                f"decoding, {self.prefill_tokens} prefill + "
                f"{self.decode_tokens} decode tokens, admitted "
                f"{self.admitted}, preempted {self.preempted})")


def _list_property(name):
    return property(lambda self: self._list(name),
                    doc=f"step.view({name!r}) as a list, made once.")


for _name in _ARRAYS:
    setattr(Step, _name, _list_property(_name))
del _name
