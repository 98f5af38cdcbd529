"""The one normal form in which a study's fingerprint records values: what a resume
compares, the same on the driver, in the store and after a JSON round trip.

A fingerprint must say *equal* of two values that scikit-learn's ``clone`` would treat as
the same parameter and *different* of any two that could fit differently. Python's ``==``
fails the first half on NaN (``SimpleImputer()``'s ``missing_values=np.nan`` is not equal
to itself, so a study holding one could never resume), and ``repr`` fails both halves: it
elides large arrays (``[0, 1, ..., 9]``) and names objects by their memory address
(``<make_column_selector object at 0x7f...>``), which changes with every process.

:func:`canonical` maps a value to plain JSON (no NaN literal, string keys) by its *type*:

======================================  ===================================================
value                                   normal form
======================================  ===================================================
``None``, ``bool``, ``str``             itself (``True`` is not ``1``; ``"1.0"`` is not ``1.0``)
an integer (NumPy's too)                an ``int``
a finite float (NumPy's too)            a ``float`` (``1.0`` stays apart from ``1``, as JSON keeps it)
NaN, ``inf``, ``-inf``                  ``{"$float": "nan"}`` (every NaN alike), ``"inf"``, ``"-inf"``
a list or a tuple                       a list of normal forms (JSON has no tuple)
a dict                                  its items' normal forms, keys sorted
a NumPy array                           ``{"$array": dtype, "shape": ..., "sha256": ...}`` of its values
a scikit-learn estimator                ``{"$estimator": class, "params": get_params(deep=False)}``
a class                                 ``{"$type": "module.qualname"}``
a function defined in a module          ``{"$function": "module.qualname"}`` (a lambda: with a token)
anything else (a lambda, a selector)    its class and ``dask.base.tokenize`` of its pickle
======================================  ===================================================

Every tagged form is a dict whose one ``$``-key names the kind, so a normal form is its own
normal form (a JSON round trip changes nothing) and :func:`readable` can show it again.
"""
from __future__ import annotations

import hashlib
import json
import math
import numbers
import re
import types

import numpy as np

__all__ = ["canonical", "encode", "readable", "same", "same_described", "strip_addresses"]

_TAG = "$"


def canonical(value):
    """The JSON-safe normal form of ``value`` (see the module's table)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        v = float(value)
        if math.isnan(v):
            return {"$float": "nan"}
        if math.isinf(v):
            return {"$float": "inf" if v > 0 else "-inf"}
        return v
    if isinstance(value, numbers.Complex):
        return {"$complex": [canonical(value.real), canonical(value.imag)]}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, dict):
        return _canonical_dict(value)
    if isinstance(value, np.ndarray):
        return _canonical_array(value)
    if isinstance(value, type):
        return {"$type": f"{value.__module__}.{value.__qualname__}"}
    if hasattr(value, "get_params"):
        return {"$estimator": f"{type(value).__module__}.{type(value).__qualname__}",
                "params": _canonical_dict(value.get_params(deep=False))}
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, np.ufunc)):
        name = f"{_module_of(value)}.{getattr(value, '__qualname__', value.__name__)}"
        if _importable(value):
            return {"$function": name}
        # a lambda or a local function: two may share the name, so its code decides
        return {"$function": name, "token": _by_token(value)["token"]}
    return _by_token(value)


def encode(value):
    """The canonical encoding of ``value``: its normal form as JSON text (keys sorted),
    which tells ``True`` from ``1`` and ``1`` from ``1.0`` as JSON does (scikit-learn's
    ``max_features=1`` is one feature, ``1.0`` all of them)."""
    return json.dumps(canonical(value), sort_keys=True, allow_nan=False)


def same(a, b):
    """Whether ``a`` and ``b`` have one canonical encoding (NaN equals NaN, ``None`` is
    not NaN, ``1.0`` is not ``"1.0"``)."""
    return encode(a) == encode(b)


#: The kinds of tagged forms: a dict holding one of these keys is a normal form already.
_TAGS = frozenset({"$float", "$complex", "$dict", "$array", "$type", "$estimator",
                   "$function", "$object"})


def _canonical_dict(d):
    if _TAGS.intersection(d):
        return d  # a normal form (read back from a store, or given twice)
    if all(isinstance(k, str) and not k.startswith(_TAG) for k in d):
        return {k: canonical(d[k]) for k in sorted(d)}
    # keys that JSON would turn into strings (1 and "1" alike) or that look like a tag:
    # kept apart as pairs, in the order of their own normal forms
    items = sorted(([canonical(k), canonical(v)] for k, v in d.items()),
                   key=lambda kv: json.dumps(kv[0], sort_keys=True))
    return {"$dict": items}


def _canonical_array(a):
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    if a.dtype.kind == "O":
        h.update(json.dumps([canonical(v) for v in a.ravel().tolist()], sort_keys=True).encode())
    elif a.dtype.kind == "f" or a.dtype.kind == "c":
        # every NaN one bit pattern: NaN payloads and signs are not values
        b = np.ascontiguousarray(a).copy()
        b[np.isnan(b)] = np.nan
        h.update(b.tobytes())
    else:
        h.update(np.ascontiguousarray(a).tobytes())
    return {"$array": a.dtype.str, "shape": list(a.shape), "sha256": h.hexdigest()}


def _module_of(f):
    return getattr(f, "__module__", None) or ("numpy" if isinstance(f, np.ufunc) else "")


def _importable(f):
    """Whether ``f`` is named by its module and qualified name (a lambda or a function
    defined inside another is not: two of them may share the name)."""
    qual = getattr(f, "__qualname__", "") or ""
    return bool(_module_of(f)) and "<" not in qual


def _by_token(value):
    """Anything without a rule of its own: its class and Dask's deterministic token of its
    pickle (which follows its state, never its address). A value that cannot be pickled
    deterministically is named by its repr with any memory address taken out."""
    from dask.base import tokenize

    cls = f"{type(value).__module__}.{type(value).__qualname__}"
    try:
        return {"$object": cls, "token": tokenize(value, ensure_deterministic=True)}
    except Exception:  # noqa: BLE001 - any failure to pickle: the repr is all there is
        return {"$object": cls, "repr": strip_addresses(repr(value))}


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def strip_addresses(text):
    """``text`` without the memory addresses that default reprs hold (``<X object at
    0x7f...>``): they differ between processes for the same value."""
    return _ADDRESS.sub("", text)


def same_described(a, b):
    """Whether two descriptions that hold values by their repr (a store's description of
    its candidates, an encoding-1 fingerprint) describe the same values: compared as
    :func:`same` does, the memory addresses in their reprs left out."""
    return same(_unaddressed(a), _unaddressed(b))


def _unaddressed(v):
    if isinstance(v, str):
        return strip_addresses(v)
    if isinstance(v, (list, tuple)):
        return [_unaddressed(x) for x in v]
    if isinstance(v, dict):
        return {k: _unaddressed(x) for k, x in v.items()}
    return v


def readable(form, limit=80):
    """A short Python-like rendering of a normal form, for messages."""
    s = _render(form)
    return s if len(s) < limit else s[:limit - 3] + "..."


def _render(form):
    if isinstance(form, list):
        return "[" + ", ".join(_render(v) for v in form) + "]"
    if not isinstance(form, dict):
        return repr(form)
    if "$float" in form:
        return form["$float"]
    if "$estimator" in form:
        params = ", ".join(f"{k}={_render(v)}" for k, v in form["params"].items())
        return f"{form['$estimator'].rsplit('.', 1)[-1]}({params})"
    if "$type" in form:
        return form["$type"]
    if "$function" in form:
        return form["$function"] + (f" <{form['token'][:8]}>" if "token" in form else "")
    if "$array" in form:
        return f"array(dtype={form['$array']}, shape={tuple(form['shape'])}, sha256={form['sha256'][:8]})"
    if "$object" in form:
        return form.get("repr") or f"<{form['$object']} {form['token'][:8]}>"
    if "$complex" in form:
        return f"complex({_render(form['$complex'][0])}, {_render(form['$complex'][1])})"
    if "$dict" in form:
        return "{" + ", ".join(f"{_render(k)}: {_render(v)}" for k, v in form["$dict"]) + "}"
    return "{" + ", ".join(f"{k!r}: {_render(v)}" for k, v in form.items()) + "}"
