"""What the front ends do while torch.compile traces them: call the
operators of ops.py, torch.ops.attnc.*, or, given an argument those do
not take, run eagerly outside the graph (a graph break, which
fullgraph=True reports with the reason)."""

import itertools
import weakref

try:
    from torch.compiler import is_compiling as compiling
except ImportError:  # no torch: nothing compiles
    def compiling():
        return False

_WRAPPERS = weakref.WeakValueDictionary()
_HANDLES = itertools.count()


def operator_handle(wrapper):
    """The int torch.ops.attnc.* name a planned wrapper by, given when it
    is planned (eagerly: a graph reads it as a constant). The operators
    find the wrapper while its caller holds it."""
    handle = getattr(wrapper, "_op_handle", None)
    if handle is None:
        handle = wrapper._op_handle = next(_HANDLES)
        _WRAPPERS[handle] = wrapper
    return handle


def wrapper_of(handle):
    wrapper = _WRAPPERS.get(handle)
    if wrapper is None:
        raise ValueError(f"no live attnc wrapper has operator handle "
                         f"{handle}")
    return wrapper


def eagerly(fn, reason):
    """fn as torch.compile runs it: outside the graph, a break reporting
    `reason` (made when fn is defined: dynamo cannot trace the making)."""
    try:
        import torch
    except ImportError:
        return fn
    return torch.compiler.disable(fn, reason=reason)


def traced_run(wrapper, operator, tensors, options, eager_run):
    """wrapper.run(*tensors, **options) as torch.compile traces it: the
    operator `operator` of ops.py where every option is None, else
    `eager_run`, the run made by eagerly()."""
    name = f"{type(wrapper).__name__}.run"
    if any(value is not None for value in options.values()):
        return eager_run(wrapper, *tensors, **options)
    handle = getattr(wrapper, "_op_handle", None)
    if handle is None:
        raise RuntimeError(f"call plan() before run() ({name}: plan runs "
                           f"eagerly, outside the compiled region)")
    import torch
    out, lse = getattr(torch.ops.attnc, operator)(*tensors, handle)
    return (out, lse) if wrapper.return_lse else out
