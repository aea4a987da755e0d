"""Stand-ins for torch tensors: just what attnc's checks look at, so that
the checks are tested without torch or a GPU."""


class FakeDevice:
    def __init__(self, type_, index=0):
        self.type, self.index = type_, index

    def __str__(self):
        return f"{self.type}:{self.index}"


class FakeTensor:
    def __init__(self, shape, dtype="torch.bfloat16", device="cuda", index=0,
                 contiguous=True, values=None):
        self.shape, self.dtype = tuple(shape), dtype
        self.device = FakeDevice(device, index)
        self._contiguous = contiguous
        self._values = values

    def data_ptr(self):
        return 0x1000

    def is_contiguous(self):
        return self._contiguous

    def tolist(self):
        assert self._values is not None, "this fake has no values"
        return list(self._values)
