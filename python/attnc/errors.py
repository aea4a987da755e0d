"""Exceptions of the attnc package."""


class AttncError(RuntimeError):
    """A failure reported by libattnc: a bad variant, a compile error, no
    GPU, a CUDA error. `code` is the C API's status; `kind` names it."""

    def __init__(self, code, kind, message):
        super().__init__(f"{kind}: {message}")
        self.code = code
        self.kind = kind
        self.message = message
