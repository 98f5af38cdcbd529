"""The refit model in a store: written with skops (never pickle), loaded trusting only what
this user's own studies vouched for.

Why not trust whole modules (``sklearn.*``, ``numpy.*``)? Functions are code: a
``FunctionTransformer`` chain of trusted-looking NumPy functions (``full_like`` ->
``sum`` -> ``numpy.testing``'s ``runstring``) executes any text at ``predict``; and a class
that skops builds by calling it (``Popen``, re-exported by some installed packages, or
``numpy.memmap``) acts when loaded. And why not trust a list of types kept in the store?
Whoever can replace the model file can rewrite that list too. So a load trusts exactly

* skops' own default set (scikit-learn estimators, containers, NumPy/SciPy ufuncs and
  dtypes);
* the classes that a study listed when it saved the model, if the record is signed with
  this user's key (an HMAC-SHA256 under ``~/.config/bbc_dask/trust.key``, or the file
  named by ``BBC_DASK_TRUST_KEY``, made on first use with mode 0600: the store never
  holds it) and the file matches the recorded SHA-256; even then only classes under
  their own name, and the two functions scikit-learn's estimators keep in their state
  whatever the user chose (:data:`STATE_FUNCTIONS`);
* whatever the caller names in ``trusted=`` — the only way a function, or a class of a
  model saved by someone else, is trusted.
"""
from __future__ import annotations

import copy
import hashlib
import hmac
import importlib
import json
import os
import secrets
import sys

from .. import _validation as validation
from ..exceptions import StoreDamagedError, UntrustedModelError

__all__ = ["MODEL_FILE", "load_model", "save_model"]

MODEL_FILE = "final_model.skops"


def _key_path():
    explicit = os.environ.get("BBC_DASK_TRUST_KEY")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "bbc_dask", "trust.key")


def _key(create):
    """This user's signing key (bytes), made on first use when ``create``; None if absent."""
    path = _key_path()
    try:
        with open(path, "rb") as f:
            key = f.read()
        return key if len(key) >= 32 else None
    except FileNotFoundError:
        if not create:
            return None
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    key = secrets.token_bytes(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # made by another process meanwhile
        return _key(False)
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    return key


def _signature(key, digest, classes):
    msg = json.dumps({"sha256": digest, "classes": sorted(classes)}, sort_keys=True).encode()
    return hmac.new(key, msg, hashlib.sha256).hexdigest()


#: Functions that scikit-learn's own estimators keep in their fitted state, whatever the
#: user chose: ``HistGradientBoosting*`` with categorical features keeps
#: ``functools.partial(check_array, ...)`` in its preprocessor. Named one by one, never by
#: module; trusted as the classes are, only in a record this user's key signed (a
#: ``partial`` calls nothing but a trusted function: skops checks each in the file).
STATE_FUNCTIONS = frozenset({"functools.partial", "sklearn.utils.validation.check_array"})


def _vouched(name):
    """Whether a signed record may vouch for ``name``: an estimator's class (or a class of
    its state), or one of :data:`STATE_FUNCTIONS`."""
    return name in STATE_FUNCTIONS or _model_class(name) is not None


def _model_class(name):
    """The class ``name`` names, or None (a function, a missing name, or a class of the
    standard library or ``__main__``). Used only for names this user's own saved model
    held (its estimators, and the state classes they keep, such as a tree's
    ``sklearn.tree._tree.Tree``): importing them repeats what saving the model did. A
    function is never trusted this way — a chain of library functions can run code."""
    module, _, qualname = name.rpartition(".")
    if not module or "__main__" in name.split(".") or module.split(".")[0] in sys.stdlib_module_names:
        return None
    try:
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    if not isinstance(obj, type):
        return None
    return obj if f"{obj.__module__}.{obj.__qualname__}" == name else None


def save_model(location, model):
    """Write ``model`` with skops; returns the record to keep in the study's attributes:
    the file, its SHA-256, the classes outside skops' defaults that it holds
    (signed with this user's key), and the other names it holds (functions, other
    classes), which are never trusted unless the caller names them."""
    import skops.io as sio

    try:
        data = sio.dumps(model)
    except RecursionError:
        data = sio.dumps(_without_requests(model))
    extra = sio.get_untrusted_types(data=data)
    classes = sorted(t for t in extra if _vouched(t))
    digest = hashlib.sha256(data).hexdigest()
    location.write_bytes(MODEL_FILE, data)
    return {"file": MODEL_FILE, "sha256": digest, "classes": classes,
            "others": sorted(set(extra) - set(classes)),
            "signature": _signature(_key(create=True), digest, classes)}


def _without_requests(model):
    """A copy of ``model`` without scikit-learn's metadata requests (``set_fit_request``):
    a request refers back to its estimator, a cycle skops recurses on forever. They say
    how metadata is routed to the estimator, nothing of what it learnt; the model
    in memory keeps them."""
    model = copy.deepcopy(model)
    seen = set()

    def strip(obj):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, (list, tuple)):
            items = obj
        elif isinstance(obj, dict):
            items = obj.values()
        elif hasattr(obj, "get_params") and hasattr(obj, "__dict__"):
            vars(obj).pop("_metadata_request", None)
            items = vars(obj).values()
        else:
            return
        for item in items:
            strip(item)

    strip(model)
    return model


def _signed_classes(record, digest):
    """The record's classes when this user's key signed them for this very file."""
    key = _key(create=False)
    classes = record.get("classes") or []
    sig = record.get("signature")
    if key is None or not isinstance(sig, str) or not isinstance(classes, list) \
            or not all(isinstance(c, str) for c in classes):
        return []
    if not hmac.compare_digest(_signature(key, digest, classes), sig):
        return []
    return [c for c in classes if _vouched(c)]


def load_model(location, record, trusted=None):
    """Load the model saved by :func:`save_model` (see the module docstring).

    Raises
    ------
    UntrustedModelError
        The file was changed after it was saved, or it holds types that are neither in
        skops' default set, nor classes this user's study signed, nor named in
        ``trusted``.
    """
    import skops.io as sio

    trusted = validation.check_str_list(trusted, "trusted")
    where = f"{location.url}/{record['file']}"
    try:
        data = location.read_bytes(record["file"])
    except FileNotFoundError:
        raise StoreDamagedError(f"The store {location.url!r} is damaged: its final model "
                                f"{record['file']!r} is missing; 'bbc-dask verify --repair' "
                                f"forgets it, and the next run refits it.") from None
    digest = hashlib.sha256(data).hexdigest()
    recorded = record.get("sha256")
    if recorded is not None and digest != recorded:
        raise UntrustedModelError(
            f"The final model {where!r} is not the file the study saved (its SHA-256 differs "
            f"from the one recorded); refusing to load it.")
    allowed = set(_signed_classes(record, digest)) | set(trusted or ())
    try:
        untrusted = sio.get_untrusted_types(data=data)
    except Exception as exc:  # noqa: BLE001 - not a zip skops wrote (BadZipFile, KeyError...)
        raise StoreDamagedError(
            f"The store {location.url!r} is damaged: its final model {record['file']!r} is "
            f"not a model file ({type(exc).__name__}: {str(exc)[:120]}); 'bbc-dask verify "
            f"--repair' forgets it, and the next run refits it.") from None
    left = [t for t in untrusted if t not in allowed]
    if left:
        # the names are listed, never imported, to word this message
        raise UntrustedModelError(
            f"The final model {where!r} holds types that are not trusted: {left}. Functions "
            f"are trusted only when you name them, and so are classes of a model saved by "
            f"another user or machine: load_final_model(trusted={left!r}) if you trust them.")
    return sio.loads(data, trusted=sorted(set(untrusted)))
