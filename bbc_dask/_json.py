"""Strict JSON for what the package writes for others to read (the command line's
``--json``, ``comparison.json``, coverage results): a value that is not a finite number
(NaN, an infinite bound) is ``null``, never the bare ``NaN`` Python's ``json`` writes by
default, which other readers refuse."""
from __future__ import annotations

import json
import math

__all__ = ["dump", "dumps", "finite"]


def finite(obj):
    """``obj`` with every non-finite float (NumPy's too) as None and NumPy scalars and
    arrays as Python values, recursively through dicts, lists and tuples."""
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):  # NumPy scalar or array
        return finite(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps(obj, **kwargs):
    """``json.dumps`` of :func:`finite` ``(obj)``, refusing any NaN left."""
    return json.dumps(finite(obj), allow_nan=False, **kwargs)


def dump(obj, f, **kwargs):
    """``json.dump`` of :func:`finite` ``(obj)`` to the file ``f``."""
    json.dump(finite(obj), f, allow_nan=False, **kwargs)
