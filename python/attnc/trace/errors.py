"""The error of a Python score_mod or mask_mod that cannot be traced, and
the user's source line it points at."""

import linecache
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _torch_directory():
    """torch's package directory, if torch is loaded: its dispatch to
    __torch_function__ may run Python frames of its own."""
    torch = sys.modules.get("torch")
    path = getattr(torch, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) if path else None


class TraceError(TypeError):
    """A score_mod or mask_mod function does something attnc cannot turn
    into a region. `reason` says what; `filename`, `lineno` and `line` are
    the user's source line that did it (line None where Python keeps no
    source, e.g. code typed at the prompt)."""

    def __init__(self, reason, where=None):
        self.reason = reason
        self.filename, self.lineno, self.line = where or (None, None, None)
        text = reason
        if self.filename is not None:
            text += f"\n  at {self.filename}:{self.lineno}"
            if self.line:
                text += f": {self.line}"
        super().__init__(text)


def user_line():
    """(filename, lineno, source) of the innermost frame outside attnc's
    tracer and torch's dispatch: the line of the mod that was running."""
    skipped = tuple(d + os.sep for d in (_HERE, _torch_directory()) if d)
    frame = sys._getframe(1)
    while frame is not None:
        if not os.path.abspath(frame.f_code.co_filename).startswith(skipped):
            break
        frame = frame.f_back
    if frame is None:
        return None
    filename, lineno = frame.f_code.co_filename, frame.f_lineno
    return filename, lineno, linecache.getline(filename, lineno).strip()


def refuse(reason):
    """A TraceError at the user's current line."""
    return TraceError(reason, user_line())


def definition_line(fn):
    """Where `fn` is defined, for errors found after it returned."""
    code = fn.__code__
    line = linecache.getline(code.co_filename, code.co_firstlineno).strip()
    return code.co_filename, code.co_firstlineno, line
