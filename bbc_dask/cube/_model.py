"""The refit model in a store: written with skops (never pickle), loaded trusting only
what the study recorded.

Why not trust whole modules (``sklearn.*``, ``numpy.*``)? Functions are code: a
``FunctionTransformer`` chain of trusted-looking NumPy functions (``full_like`` ->
``sum`` -> ``numpy.testing``'s ``runstring``) executes any text at ``predict``. So a load
trusts exactly

* skops' own default set (scikit-learn estimators, containers, NumPy/SciPy ufuncs and
  dtypes),
* the *classes* that the study listed when it saved the model (their names are stored with
  the model's SHA-256; a file that does not match it is refused), and
* whatever the caller names in ``trusted=`` — the only way a function is trusted.
"""
from __future__ import annotations

import hashlib
import importlib
import sys

from ..exceptions import UntrustedModelError

__all__ = ["MODEL_FILE", "save_model", "load_model"]

MODEL_FILE = "final_model.skops"


def _resolve(name):
    """The object a skops type name refers to, or None. Standard-library modules other
    than ``builtins``/``collections`` are never imported for this (no estimator lives
    there, and importing some has side effects)."""
    parts = name.split(".")
    top = parts[0]
    if top in sys.stdlib_module_names and top not in ("builtins", "collections"):
        return None
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _is_class(name):
    return isinstance(_resolve(name), type)


def save_model(location, model):
    """Write ``model`` with skops; returns the record to keep in the study's attributes:
    the file, its SHA-256, and the non-default classes it holds (functions are listed
    apart and are never trusted on load unless named)."""
    import skops.io as sio

    data = sio.dumps(model)
    extra = sio.get_untrusted_types(data=data)
    classes = sorted(t for t in extra if _is_class(t))
    location.write_bytes(MODEL_FILE, data)
    return {"file": MODEL_FILE, "sha256": hashlib.sha256(data).hexdigest(),
            "classes": classes, "functions": sorted(set(extra) - set(classes))}


def load_model(location, record, trusted=None):
    """Load the model saved by :func:`save_model` (see the module docstring).

    Raises
    ------
    UntrustedModelError
        The file was changed after it was saved, or it holds types that are neither in
        skops' default set, nor classes the study recorded, nor named in ``trusted``.
    """
    import skops.io as sio

    data = location.read_bytes(record["file"])
    where = f"{location.url}/{record['file']}"
    digest = record.get("sha256")
    if digest is not None and hashlib.sha256(data).hexdigest() != digest:
        raise UntrustedModelError(
            f"The final model {where!r} is not the file the study saved (its SHA-256 differs "
            f"from the one recorded); refusing to load it.")
    if trusted is not None and (isinstance(trusted, str) or not all(isinstance(t, str) for t in trusted)):
        raise TypeError(f"The 'trusted' parameter of load_final_model must be a list of type "
                        f"names (str). Got {trusted!r} instead.")
    recorded = [t for t in record.get("classes", []) if _is_class(t)]
    allowed = set(recorded) | set(trusted or ())
    untrusted = sio.get_untrusted_types(data=data)
    left = [t for t in untrusted if t not in allowed]
    if left:
        funcs = [t for t in left if not _is_class(t)]
        hint = (f" Functions are trusted only when you name them: load_final_model(trusted="
                f"{funcs!r}) if you trust them." if funcs else
                " Pass load_final_model(trusted=[...]) if you trust them.")
        raise UntrustedModelError(
            f"The final model {where!r} holds types that are not trusted: {left}.{hint}")
    return sio.loads(data, trusted=sorted(set(untrusted)))
