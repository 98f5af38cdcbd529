"""The one normal form in which a study's fingerprint records values: what a resume
compares, the same on the driver, in the store, after a JSON round trip and in another
process or environment.

A fingerprint must say *equal* of two values that scikit-learn's ``clone`` would treat as
the same parameter and *different* of any two that could fit differently. Python's ``==``
fails the first half on NaN (``SimpleImputer()``'s ``missing_values=np.nan`` is not equal
to itself, so a study holding one could never resume), and ``repr`` fails both halves: it
elides large arrays (``[0, 1, ..., 9]``) and names objects by their memory address
(``<make_column_selector object at 0x7f...>``), which changes with every process. A hash
of a pickle fails the last clause: it follows the hash library installed, the library's
version, and (for objects pickled by value) the process's hash seed.

:func:`canonical` maps a value to plain JSON (string keys, no NaN literal) by its *type*,
recursively, from what the value holds — never from an address, a hash or a pickle:

======================================  ===================================================
value                                   normal form
======================================  ===================================================
``None``, ``bool``, ``str``             itself (``True`` is not ``1``; ``"1.0"`` is not ``1.0``)
an integer (NumPy's too)                an ``int``
a finite float (NumPy's too)            a ``float`` (``1.0`` stays apart from ``1``, as JSON keeps it)
NaN, ``inf``, ``-inf``                  ``{"$float": "nan"}`` (every NaN alike), ``"inf"``, ``"-inf"``
a list                                  a list of normal forms
a tuple, a set                          ``{"$tuple": [...]}``, ``{"$set": [...]}`` (members sorted)
a dict                                  its items' normal forms, keys sorted
a NumPy array (masked too)              ``{"$array": dtype, "shape": ..., "sha256": ...}`` of its values
a scikit-learn estimator                ``{"$estimator": class, "params": get_params(deep=False)}``,
                                        with its output and metadata-request settings and,
                                        once fitted, its fitted attributes
a class, an importable function         ``{"$type": ...}``, ``{"$function": "module.qualname"}``
another function (a lambda, ``__main__``)  its name, its code, defaults and closure
anything else (a column selector)       its class and the state it pickles (``__reduce_ex__``),
                                        in normal forms
======================================  ===================================================

Every tagged form is a dict whose ``$``-key names the kind; a user's dict whose keys look
like tags is written as ``{"$dict": [[key, value], ...]}``, so no value reads as another.
Two normal forms are compared as JSON text (:func:`same_form`); :func:`readable` shows one.
"""
from __future__ import annotations

import datetime
import enum
import fractions
import functools
import hashlib
import json
import math
import numbers
import re
import sys
import types

import numpy as np

__all__ = ["canonical", "encode", "readable", "same", "same_described", "same_form",
           "strip_addresses"]

#: How deep a value is followed; deeper (or a value that holds itself) is named by class.
MAX_DEPTH = 64


def canonical(value):
    """The JSON-safe normal form of ``value`` (see the module's table)."""
    return _Canonical().form(value, 0)


def encode(value):
    """The canonical encoding of ``value``: its normal form as JSON text (keys sorted),
    which tells ``True`` from ``1`` and ``1`` from ``1.0`` as JSON does (scikit-learn's
    ``max_features=1`` is one feature, ``1.0`` all of them)."""
    return _text(canonical(value))


def same(a, b):
    """Whether ``a`` and ``b`` have one canonical encoding (NaN equals NaN, ``None`` is
    not NaN, ``1.0`` is not ``"1.0"``)."""
    return encode(a) == encode(b)


def same_form(a, b):
    """Whether two normal forms (a stored one, read back from JSON, and a new one) are
    equal."""
    return _text(a) == _text(b)


def _text(form):
    return json.dumps(form, sort_keys=True, allow_nan=False)


class _Canonical:
    """One conversion: the ids of the values being converted, so a value that holds
    itself ends instead of recursing for ever."""

    def __init__(self):
        self._open = set()

    def form(self, value, depth):
        simple = _simple(value)
        if simple is not _NONE:
            return simple
        if depth > MAX_DEPTH or id(value) in self._open:
            return {"$cycle": _name(type(value))}
        self._open.add(id(value))
        try:
            return self._compound(value, depth + 1)
        finally:
            self._open.discard(id(value))

    def _compound(self, value, depth):
        f = functools.partial(self.form, depth=depth)
        if isinstance(value, list):
            return [f(v) for v in value]
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            return {"$tuple": [f(v) for v in value]}
        if isinstance(value, (set, frozenset)):
            return {"$set": sorted((f(v) for v in value), key=_text)}
        if isinstance(value, dict):
            return self._dict(value, depth)
        if isinstance(value, np.ndarray):
            return _array(value, f)
        if isinstance(value, functools.partial):
            return {"$partial": f(value.func), "args": [f(v) for v in value.args],
                    "keywords": self._dict(value.keywords, depth)}
        if hasattr(value, "get_params") and not isinstance(value, type):
            return self._estimator(value, depth)
        if callable(value) and not isinstance(value, type):
            out = self._function(value, depth)
            if out is not None:
                return out
        special = _special(value, f)
        if special is not None:
            return special
        return self._object(value, depth)

    def _dict(self, d, depth):
        if all(isinstance(k, str) and not k.startswith("$") for k in d):
            return {k: self.form(d[k], depth) for k in sorted(d)}
        # keys JSON would turn into strings (1 and "1" alike) or that look like a tag: kept
        # apart as pairs, in the order of their own normal forms
        items = [[self.form(k, depth), self.form(v, depth)] for k, v in d.items()]
        return {"$dict": sorted(items, key=lambda kv: _text(kv[0]))}

    def _estimator(self, est, depth):
        out = {"$estimator": _name(type(est)), "params": self._dict(est.get_params(deep=False), depth)}
        own = vars(est) if hasattr(est, "__dict__") else {}
        # settings that change what the estimator gives or takes, outside get_params
        if own.get("_sklearn_output_config"):
            out["output"] = self.form(own["_sklearn_output_config"], depth)
        if own.get("_metadata_request") is not None:
            out["requests"] = strip_addresses(repr(own["_metadata_request"]))
        fitted = {k: v for k, v in own.items() if k.endswith("_") and not k.startswith("_")}
        if fitted:  # a fitted estimator given as a parameter (FrozenEstimator's)
            out["fitted"] = self._dict(fitted, depth)
        return out

    def _function(self, fn, depth):
        """A function by its importable name, or (a lambda, a local function, one of the
        main script's) by its code; a bound method by its object and name. None: not a
        function (a callable object, converted by its state)."""
        if isinstance(fn, types.MethodType) or (
                isinstance(fn, types.BuiltinMethodType) and not isinstance(
                    getattr(fn, "__self__", None), (types.ModuleType, type(None)))):
            return {"$method": getattr(fn, "__name__", "?"), "of": self.form(fn.__self__, depth)}
        name = _importable_name(fn)
        if name is not None and not name.startswith("__main__."):
            return {"$function": name}
        if isinstance(fn, types.FunctionType):
            closure = [c.cell_contents for c in fn.__closure__ or () if _filled(c)]
            return {"$function": f"{fn.__module__}.{fn.__qualname__}",
                    "code": _code_digest(fn.__code__),
                    "defaults": self.form(fn.__defaults__ or (), depth),
                    "kwdefaults": self._dict(fn.__kwdefaults__ or {}, depth),
                    "closure": self.form(closure, depth)}
        return {"$function": name} if name is not None else None

    def _object(self, value, depth):
        """Anything else: its class and what it pickles (the arguments that rebuild it and
        its state), each in normal form. One that cannot be pickled is named by its repr
        without memory addresses."""
        cls = _name(type(value))
        try:
            reduced = value.__reduce_ex__(4)
        except Exception:  # noqa: BLE001 - any failure to reduce: the repr is all there is
            reduced = None
        if not isinstance(reduced, tuple) or len(reduced) < 2:
            return {"$object": cls, "repr": strip_addresses(repr(value))}
        out = {"$object": cls, "args": self.form(list(reduced[1]), depth)}
        if len(reduced) > 2 and reduced[2] is not None:
            out["state"] = self.form(reduced[2], depth)
        for key, at in (("items", 3), ("mapping", 4)):
            if len(reduced) > at and reduced[at] is not None:
                out[key] = self.form(list(reduced[at]), depth)
        return out


_NONE = object()


def _simple(value):
    """The normal form of a scalar, or :data:`_NONE` for anything else."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, enum.Enum):
        return {"$enum": _name(type(value)), "value": _simple_or_repr(value.value)}
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes": bytes(value).hex()}
    if isinstance(value, (np.datetime64, np.timedelta64)):
        return {"$numpy": value.dtype.str, "value": str(value)}
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, fractions.Fraction):
        return {"$fraction": [value.numerator, value.denominator]}
    if isinstance(value, numbers.Real):
        return _float(value)
    if isinstance(value, numbers.Complex):
        return {"$complex": [_float(value.real), _float(value.imag)]}
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta)):
        return {"$datetime": _name(type(value)), "value": str(value)}
    if value is Ellipsis:
        return {"$singleton": "Ellipsis"}
    return _NONE


def _simple_or_repr(v):
    s = _simple(v)
    return repr(v) if s is _NONE else s


def _float(v):
    v = float(v)
    if math.isnan(v):
        return {"$float": "nan"}
    if math.isinf(v):
        return {"$float": "inf" if v > 0 else "-inf"}
    return v


def _array(a, form):
    """An array by a digest of its dtype, shape and values (masked: and its mask); every
    NaN one bit pattern (NaN payloads and signs are not values)."""
    if isinstance(a, np.ma.MaskedArray):
        return {"$masked": _array(np.ma.getdata(a), form), "mask": _array(np.ma.getmaskarray(a), form)}
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    if a.dtype.kind == "O":
        h.update(_text([form(v) for v in a.ravel().tolist()]).encode())
    elif a.dtype.kind in "fc":
        parts = (a.real, a.imag) if a.dtype.kind == "c" else (a,)
        for part in parts:
            b = np.array(part, copy=True, order="C")
            b[np.isnan(b)] = np.nan
            h.update(b.tobytes())
    elif a.dtype.kind == "M" or a.dtype.kind == "m":
        h.update(np.ascontiguousarray(a).view(np.int64).tobytes())
    else:
        h.update(np.ascontiguousarray(a).tobytes())
    return {"$array": a.dtype.str, "shape": list(a.shape), "sha256": h.hexdigest()}


def _special(value, form):
    """Values whose pickle is not what they are (a random generator's, a data frame's
    blocks, a distribution's), or that pickle by a reference: their own normal form."""
    if isinstance(value, type):
        return {"$type": _name(value)}
    if isinstance(value, np.dtype):
        return {"$dtype": str(value) if value.names is None else repr(value.descr)}
    if isinstance(value, np.random.Generator):
        return {"$object": _name(type(value)), "state": form(value.bit_generator.state)}
    if isinstance(value, np.random.RandomState):
        return {"$object": _name(type(value)), "state": form(value.get_state(legacy=False))}
    if isinstance(value, (slice, range)):
        return {"$" + type(value).__name__: [form(value.start), form(value.stop), form(value.step)]}
    if hasattr(value, "dist") and hasattr(value, "args") and hasattr(value, "kwds"):
        # a frozen scipy.stats distribution: the distribution and its arguments
        return {"$distribution": getattr(value.dist, "name", _name(type(value.dist))),
                "args": form(list(value.args)), "kwds": form(dict(value.kwds))}
    module = type(value).__module__ or ""
    if module.startswith("scipy.sparse"):
        m = value.tocsr(copy=True)
        m.sort_indices()
        return {"$sparse": m.format, "shape": list(m.shape), "data": form(m.data),
                "indices": form(m.indices), "indptr": form(m.indptr)}
    if module.startswith("pandas"):
        return _pandas(value, form)
    return None


def _pandas(value, form):
    import pandas as pd

    if value is pd.NA or value is pd.NaT:
        return {"$singleton": repr(value)}
    if isinstance(value, (pd.Timestamp, pd.Timedelta)):
        return {"$datetime": _name(type(value)), "value": value.isoformat()}
    if isinstance(value, pd.DataFrame):
        return {"$pandas": "DataFrame", "index": form(value.index),
                "columns": {"$tuple": [form(c) for c in value.columns]},
                "data": [form(value.iloc[:, j]) for j in range(value.shape[1])]}
    if isinstance(value, pd.Series):
        return {"$pandas": "Series", "name": form(value.name), "dtype": str(value.dtype),
                "index": form(value.index), "values": form(value.to_numpy())}
    if isinstance(value, pd.Index):
        return {"$pandas": type(value).__name__, "dtype": str(value.dtype), "values": form(value.to_numpy())}
    if isinstance(value, pd.Categorical):
        return {"$pandas": "Categorical", "categories": form(value.categories),
                "codes": form(np.asarray(value.codes)), "ordered": bool(value.ordered)}
    if isinstance(value, pd.CategoricalDtype):
        return {"$pandas": "CategoricalDtype", "ordered": bool(value.ordered),
                "categories": None if value.categories is None else form(value.categories)}
    return None


def _name(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


def _importable_name(fn):
    """``module.qualname`` if it names ``fn`` itself in its module, already imported (a
    lambda, a local function or a method of an instance does not); else None."""
    module = getattr(fn, "__module__", None) or ("numpy" if isinstance(fn, np.ufunc) else None)
    qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if not isinstance(module, str) or not isinstance(qual, str) or "<" in qual:
        return None
    obj = sys.modules.get(module)
    for part in qual.split("."):
        obj = getattr(obj, part, None)
    return f"{module}.{qual}" if obj is fn else None


def _filled(cell):
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _code_digest(code):
    """A function's code by what it does: its bytecode, constants (nested code too),
    names and arguments — not its file or line, which an unrelated edit moves."""
    h = hashlib.sha256(code.co_code)
    for const in code.co_consts:
        h.update((_code_digest(const) if isinstance(const, types.CodeType)
                  else encode(const)).encode())
    h.update(repr((code.co_names, code.co_varnames, code.co_argcount,
                   code.co_kwonlyargcount)).encode())
    return h.hexdigest()


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def strip_addresses(text):
    """``text`` without the memory addresses that default reprs hold (``<X object at
    0x7f...>``): they differ between processes for the same value."""
    return _ADDRESS.sub("", text)


def same_described(a, b):
    """Whether two descriptions that hold values as they are or by their repr (a store's
    description of its candidates, a fingerprint of the first encoding) describe the same
    values, as that encoding compared them (``==``, so ``1`` equals ``1.0``) but for NaN,
    which equals NaN, and the memory addresses in reprs, which are left out."""
    if isinstance(a, str) and isinstance(b, str):
        return strip_addresses(a) == strip_addresses(b)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_described(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_described(a[k], b[k]) for k in a)
    return a == b


def readable(form, limit=80):
    """A short Python-like rendering of a normal form, for messages."""
    s = _render(form)
    return s if len(s) < limit else s[:limit - 3] + "..."


def _render(form):
    if isinstance(form, list):
        return "[" + ", ".join(_render(v) for v in form) + "]"
    if not isinstance(form, dict):
        return repr(form)
    tag = next((k for k in form if k.startswith("$")), None)
    if tag is None:
        return "{" + ", ".join(f"{k!r}: {_render(v)}" for k, v in form.items()) + "}"
    value = form[tag]
    if tag == "$float":
        return value
    if tag == "$estimator":
        params = ", ".join(f"{k}={_render(v)}" for k, v in form["params"].items())
        return f"{value.rsplit('.', 1)[-1]}({params})"
    if tag in ("$type", "$function", "$singleton"):
        return value + (f" <code {form['code'][:8]}>" if "code" in form else "")
    if tag == "$tuple":
        return "(" + ", ".join(_render(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if tag == "$set":
        return "{" + ", ".join(_render(v) for v in value) + "}"
    if tag == "$dict":
        return "{" + ", ".join(f"{_render(k)}: {_render(v)}" for k, v in value) + "}"
    if tag == "$array":
        return f"array(dtype={value}, shape={tuple(form['shape'])}, sha256={form['sha256'][:8]})"
    if tag == "$partial":
        return f"partial({_render(value)}, ...)"
    if tag == "$object":
        if "repr" in form:
            return form["repr"]
        shown = form.get("state", form.get("args"))
        return f"{value.rsplit('.', 1)[-1]}({_render(shown)})"
    if tag == "$enum":
        return f"{value.rsplit('.', 1)[-1]}({_render(form['value'])})"
    if tag in ("$datetime", "$numpy"):
        return repr(form["value"])
    return _text(form)
