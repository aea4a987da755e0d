"""Checks on scalar arguments before ctypes sees them: ctypes truncates an
int that does not fit its C type (2**32 becomes 0), reads a float as an
int's error, and takes any int as a char pointer. Each check names the
argument; what the values mean is the library's to judge."""

import math
import numbers
import operator

INT32 = (-2**31, 2**31 - 1)
INT64 = (-2**63, 2**63 - 1)
UINT64 = (0, 2**64 - 1)
FLOAT32_MAX = 3.4028234663852886e38


def _type_name(value):
    return type(value).__name__


def as_int(name, value, bounds=INT64):
    """value as a Python int within bounds (a C type's range, or tighter).
    Bools, floats, strings and None are refused: a float would be
    truncated, a bool is almost always a misplaced flag."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{name} must be an int, got {_type_name(value)}")
    value = operator.index(value)
    lo, hi = bounds
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}, got {value}")
    return value


def as_flag(name, value):
    """A flag: a bool, or the int 0 or 1 (what C's int flags hold)."""
    if isinstance(value, bool):
        return int(value)
    if not hasattr(type(value), "__index__"):
        raise TypeError(f"{name} must be a bool, got {_type_name(value)}")
    value = operator.index(value)
    if value not in (0, 1):
        raise ValueError(f"{name} must be a bool (or 0 or 1), got {value}")
    return value


def as_float32(name, value):
    """A real number a C float holds: a finite value beyond float32's range
    would silently become an infinity. NaN and infinities pass, for the
    library to judge."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {_type_name(value)}")
    value = float(value)
    if math.isfinite(value) and abs(value) > FLOAT32_MAX:
        raise ValueError(f"{name} {value} does not fit a float32")
    return value


def as_text(name, value):
    """A str for a C string: a NUL inside would silently end it early."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {_type_name(value)}")
    if "\0" in value:
        raise ValueError(f"{name} must not contain a NUL character")
    return value


def as_sequence(name, value):
    """A list or tuple: a str or a tensor would be iterated element-wise."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list or tuple, got "
                        f"{_type_name(value)}")
    return value


def window_extents(window):
    """(left, right) of a window argument: None (no window, (-1, -1), the
    C spec's spelling), an int (keys to the left) or a (left, right)
    pair. A negative extent must not reach the C spec, where -1 means
    none."""
    if window is None:
        return -1, -1
    if isinstance(window, (list, tuple)):
        if len(window) != 2:
            raise ValueError(f"window must be an int or a (left, right) "
                             f"pair, got {len(window)} values")
        left = as_int("window[0]", window[0])
        right = as_int("window[1]", window[1])
    elif isinstance(window, bool) or not hasattr(type(window), "__index__"):
        raise TypeError(f"window must be None, an int or a (left, right) "
                        f"pair, got {_type_name(window)}")
    else:
        left, right = as_int("window", window), 0
    if left < 0 or right < 0:
        raise ValueError(f"window extents must be non-negative (None: no "
                         f"window), got ({left}, {right})")
    return left, right
