"""Checks on tensor-like arguments: anything with data_ptr(), shape, dtype
and device (PyTorch tensors), so that the checks need no torch import."""

# Element types of q, k, v and out (the attn dialect's query types).
ELEMENT_TYPES = ("bfloat16", "float16")
# torch's dtype names beside the library's (attnc_dtype_name's) names.
IR_NAMES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32",
            "int32": "i32", "int64": "i64"}
TORCH_NAMES = {ir: torch for torch, ir in IR_NAMES.items()}


def dtype_name(tensor):
    return str(tensor.dtype).replace("torch.", "")


def require(condition, message, error=ValueError):
    if not condition:
        raise error(message)


def check_tensor(name, tensor, rank=None, dtypes=None, cuda=True):
    """rank: an int, a tuple of ints or None; cuda: whether it must be on
    the GPU attnc runs on (index arrays read on the host need not)."""
    for attribute in ("data_ptr", "shape", "dtype", "device"):
        require(hasattr(tensor, attribute),
                f"{name} must be a tensor (with data_ptr, shape, dtype and "
                f"device), got {type(tensor).__name__}", TypeError)
    if rank is not None:
        ranks = rank if isinstance(rank, tuple) else (rank,)
        require(len(tensor.shape) in ranks,
                f"{name} must have rank {' or '.join(map(str, ranks))}, got "
                f"shape {tuple(tensor.shape)}")
    if dtypes is not None:
        require(dtype_name(tensor) in dtypes,
                f"{name} must be {' or '.join(dtypes)}, got "
                f"{dtype_name(tensor)}", TypeError)
    if cuda:
        device = tensor.device
        require(getattr(device, "type", str(device)) == "cuda",
                f"{name} must be on a CUDA device, got {device}")
        require(getattr(device, "index", 0) in (0, None),
                f"{name} is on {device}: attnc runs on cuda:0 for now")
        if hasattr(tensor, "is_contiguous"):
            require(tensor.is_contiguous(),
                    f"{name} must be contiguous (call .contiguous())")


def current_stream(tensor):
    import torch
    return torch.cuda.current_stream(tensor.device).cuda_stream
