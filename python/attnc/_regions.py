"""What a score_mod or mask_mod region's text reads of its block
arguments: a mod that reads the request or head index pins how requests
and heads are numbered (a step's launches, folding heads into requests)."""

import re

# An MLIR value name's characters after its first (`%b`, `%batch.0`).
_NAME = r"[A-Za-z0-9_$.\-]"

# The block arguments' positions: score_mod's start with the score.
_POSITIONS = {"score_mod": {"batch": 1, "head": 2},
              "mask_mod": {"batch": 0, "head": 1}}


def reads_argument(kind, text, argument):
    """Whether a region's text (score_mod or mask_mod; None for none)
    uses its `argument` ("batch" or "head") block argument."""
    if text is None:
        return False
    start = re.search(r"\^" + _NAME + r"*\s*\(", text)
    if start is None:  # the verifier refuses a block without a header
        return False
    depth, end = 1, start.end()
    while end < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        end += 1
    names = re.findall(r"%(" + _NAME + r"+)\s*:", text[start.end():end - 1])
    index = _POSITIONS[kind][argument]
    if len(names) <= index:
        return False
    return re.search("%" + re.escape(names[index]) + r"(?!" + _NAME + ")",
                     text[end:]) is not None
