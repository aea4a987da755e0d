"""Checks on tensor-like arguments: anything with data_ptr(), shape, dtype
and device (PyTorch tensors), so that the checks need no torch import."""

# Element types of q, k, v and out (the attn dialect's query types).
ELEMENT_TYPES = ("bfloat16", "float16")
# fp8 KV caches, dequantized on load.
FP8_TYPES = ("float8_e4m3fn", "float8_e5m2")
KV_TYPES = ELEMENT_TYPES + FP8_TYPES
# torch's dtype names beside the library's (attnc_dtype_name's) names.
IR_NAMES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32",
            "int32": "i32", "int64": "i64", "float8_e4m3fn": "f8E4M3FN",
            "float8_e5m2": "f8E5M2"}
TORCH_NAMES = {ir: torch for torch, ir in IR_NAMES.items()}


def dtype_name(tensor):
    return str(tensor.dtype).replace("torch.", "")


def require(condition, message, error=ValueError):
    if not condition:
        raise error(message)


def check_tensor(name, tensor, rank=None, dtypes=None, cuda=True,
                 contiguous=True):
    """rank: an int, a tuple of ints or None; cuda: whether it must be on
    the GPU attnc runs on (index arrays read on the host need not), and
    then contiguous unless the caller checks its strides itself.
    Decode calls run this on every tensor of every step, so the messages
    are formatted only when a check fails."""
    try:
        tensor.data_ptr, tensor.dtype
        shape, device = tensor.shape, tensor.device
    except AttributeError:
        raise TypeError(f"{name} must be a tensor (with data_ptr, shape, "
                        f"dtype and device), got {type(tensor).__name__}"
                        ) from None
    if rank is not None:
        ranks = rank if isinstance(rank, tuple) else (rank,)
        if len(shape) not in ranks:
            raise ValueError(f"{name} must have rank "
                             f"{' or '.join(map(str, ranks))}, got shape "
                             f"{tuple(shape)}")
    if dtypes is not None and dtype_name(tensor) not in dtypes:
        raise TypeError(f"{name} must be {' or '.join(dtypes)}, got "
                        f"{dtype_name(tensor)}")
    if cuda:
        kind = getattr(device, "type", None)
        if (str(device) if kind is None else kind) != "cuda":
            raise ValueError(f"{name} must be on a CUDA device, got {device}")
        if getattr(device, "index", 0) not in (0, None):
            raise ValueError(f"{name} is on {device}: attnc runs on cuda:0 "
                             f"for now")
        is_contiguous = getattr(tensor, "is_contiguous", None)
        if contiguous and is_contiguous is not None and not is_contiguous():
            raise ValueError(f"{name} must be contiguous (call "
                             f".contiguous())")


try:
    from torch._C import _cuda_getCurrentRawStream as _raw_stream
except ImportError:  # a torch without it, or none (the checks' fakes)
    _raw_stream = None


def current_stream(tensor):
    """The current CUDA stream of a tensor's device, as the address
    attnc_run takes. torch's stream object costs a microsecond a call to
    build."""
    if _raw_stream is not None:
        return _raw_stream(tensor.get_device())
    import torch
    return torch.cuda.current_stream(tensor.device).cuda_stream
