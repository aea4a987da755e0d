"""Exceptions of the attnc package."""


class AttncError(RuntimeError):
    """A failure reported by libattnc: a bad variant, a compile error, no
    GPU, a CUDA error. `code` is the C API's status; `kind` names it."""

    def __init__(self, code, kind, message):
        super().__init__(f"{kind}: {message}")
        self.code = code
        self.kind = kind
        self.message = message


class InvalidArgumentError(AttncError, ValueError):
    """libattnc refused an argument (kind "invalid argument"), e.g. a spec
    the attn dialect's verifier rejects: also a ValueError, as the
    package's own argument checks raise."""
