"""Stand-ins for torch tensors: just what attnc's checks look at, so that
the checks are tested without torch or a GPU."""


class FakeDevice:
    def __init__(self, type_, index=0):
        self.type, self.index = type_, index

    def __str__(self):
        return f"{self.type}:{self.index}"

    def __eq__(self, other):
        return (isinstance(other, FakeDevice) and
                (self.type, self.index) == (other.type, other.index))

    def __hash__(self):
        return hash((self.type, self.index))


def _row_major(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


class FakeTensor:
    """contiguous=False gives row-major strides with a gap after the
    innermost dimension (a slice of a wider tensor); strides= gives any."""

    def __init__(self, shape, dtype="torch.bfloat16", device="cuda", index=0,
                 contiguous=True, values=None, strides=None):
        self.shape, self.dtype = tuple(shape), dtype
        self.device = FakeDevice(device, index)
        self._contiguous = contiguous
        self._values = values
        self._strides = tuple(strides) if strides is not None else \
            _row_major(self.shape[:-1] + (2 * self.shape[-1],)
                       if self.shape and not contiguous else self.shape)

    def data_ptr(self):
        return 0x1000

    def get_device(self):
        return self.device.index if self.device.type == "cuda" else -1

    def stride(self):
        return self._strides

    def numel(self):
        count = 1
        for size in self.shape:
            count *= size
        return count

    def element_size(self):
        return 1 if "float8" in self.dtype else 2

    def is_contiguous(self):
        return self._contiguous

    def tolist(self):
        assert self._values is not None, "this fake has no values"
        return list(self._values)
