"""What a study file's description of an estimator may name, checked before anything of
it runs: an import path (``{estimator: ..., params: ...}``, a ``pipeline:`` step) names a
scikit-learn estimator class — a class with ``fit`` and ``get_params``, found outside the
standard library and never in a ``__main__`` — and nothing is called before that check; a
module found only in the current directory or the study file's (unless PYTHONPATH lists
it) is not even imported, since importing runs its code; no joblib cache directory
(``memory``) is set, since joblib loads pickles back from it; a parameter written as a
mapping or a list is checked against the class's own constraints. :mod:`._composed`
builds the estimators, the nested and composed ones included, from these checks; the one
other type a study file builds is ``make_column_selector``, by its own key, never by an
import path."""
from __future__ import annotations

import importlib
import os
import sys
from contextlib import contextmanager
from contextvars import ContextVar

from .exceptions import StudyFileError

__all__ = ["CACHE_PARAM", "check_constraints", "check_value", "estimator_class", "file_error",
           "is_described", "is_estimator", "reading", "refuse_cache", "shown", "transforms"]


def file_error(key, msg):
    """The one-line error of a study file's key ``key``."""
    return StudyFileError(f"study file: {key}: {msg}")


def estimator_class(path, where):
    """The estimator class at the import path ``path``, checked before anything is called.

    Only a class with ``fit`` and ``get_params`` (a scikit-learn estimator) is accepted;
    the standard library is never searched (no estimator lives there, and a study file
    must not reach ``subprocess`` or ``os``)."""
    if not isinstance(path, str) or "." not in path or not all(p.isidentifier() for p in path.split(".")):
        raise file_error(f"{where}.estimator", f"expected an import path such as "
                   f"sklearn.linear_model.LogisticRegression, got {path!r}")
    mod, _, name = path.rpartition(".")
    if mod.split(".")[0] in sys.stdlib_module_names:
        raise file_error(f"{where}.estimator", f"{path} is not a scikit-learn estimator class (the "
                   f"standard library holds none)")
    if any(p.startswith("__") for p in path.split(".")):
        # importing a package's __main__ runs its command line
        raise file_error(f"{where}.estimator", f"{path} is not a scikit-learn estimator class (an "
                   f"import path may not name __main__ or other dunder modules)")
    _check_found(mod.split(".")[0], path, f"{where}.estimator")
    try:
        cls = getattr(importlib.import_module(mod), name)
    except (ImportError, AttributeError):
        raise file_error(f"{where}.estimator", f"cannot import {path!r}") from None
    if not (isinstance(cls, type) and callable(getattr(cls, "fit", None))
            and callable(getattr(cls, "get_params", None))):
        raise file_error(f"{where}.estimator", f"{path} is not a scikit-learn estimator class (a "
                   f"class with fit and get_params)")
    return cls


#: The directory of the study file being read (:func:`reading`): a module found there
#: is not imported unless PYTHONPATH names it.
_STUDY_DIR = ContextVar("bbc_dask_study_dir", default=None)


@contextmanager
def reading(base):
    """Build estimators of the study file in the directory ``base``."""
    token = _STUDY_DIR.set(base)
    try:
        yield
    finally:
        _STUDY_DIR.reset(token)


def _real(p):
    return os.path.normcase(os.path.realpath(p or os.curdir))


def _untrusted():
    """``{directory: how it is said}``: the current directory and the study file's, less
    those PYTHONPATH lists (where the user chose to import from)."""
    out = {}
    base = _STUDY_DIR.get()
    if base is not None:
        out[_real(base)] = "the study file's directory"
    try:
        out[_real(os.getcwd())] = "the current directory"
    except OSError:  # a current directory deleted under us: nothing is found through it
        pass
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry:
            out.pop(_real(entry), None)
    return out


def _locations(spec):
    """``[(file or package directory, the directory it was found in)]`` of a top-level
    module's spec: a module's file, a package's directory, each portion of a namespace
    package; none for a module not from a file (built in, frozen)."""
    if spec.submodule_search_locations is not None and not (spec.origin and spec.has_location):
        return [(p, os.path.dirname(p)) for p in spec.submodule_search_locations]  # a namespace package
    if not (spec.origin and spec.has_location):
        return []
    if spec.submodule_search_locations is not None:  # a package: pkg/__init__.py
        package = os.path.dirname(spec.origin)
        return [(package, os.path.dirname(package))]
    return [(spec.origin, os.path.dirname(spec.origin))]


def _found_elsewhere(top, untrusted):
    """The spec the import system finds for ``top`` with the untrusted directories (and
    ``''``) taken off ``sys.path``, its other finders (an editable install's) asked as
    they are; None if none finds it."""
    import importlib.machinery

    path = [p for p in sys.path if isinstance(p, str) and _real(p) not in untrusted]
    for finder in sys.meta_path:
        try:
            if finder is importlib.machinery.PathFinder:
                spec = finder.find_spec(top, path)
            else:
                spec = finder.find_spec(top, None)
        except Exception:  # noqa: BLE001 - a third-party finder's failure of any kind: not found there
            continue
        if spec is not None:
            return spec
    return None


def _check_found(top, path, where):
    """Refuse to import ``top`` (the top-level module of the import path ``path``) when it
    is found only in the current directory or the study file's: importing runs a module's
    code before the class is checked, and a study file, or a store holding one, must not
    make a Jupyter kernel or ``python -c`` (whose ``sys.path`` holds ``''``) run a file
    planted beside it. ``find_spec`` of a top-level name locates it without running
    anything; a module of an installed distribution, or in a directory PYTHONPATH lists,
    is imported as before."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise file_error(where, f"cannot import {path!r}")
    untrusted = _untrusted()
    planted = [(loc, untrusted[_real(d)]) for loc, d in _locations(spec) if _real(d) in untrusted]
    if not planted:
        return
    other = _found_elsewhere(top, untrusted)
    elsewhere = {_real(loc) for loc, _ in _locations(other)} if other is not None else set()
    for loc, said in planted:
        if _real(loc) not in elsewhere:
            raise file_error(where, f"module {top!r} (of {path}) is found in {said} "
                                    f"({os.path.dirname(loc)}), which a study file does not import "
                                    f"from: install it, or put its directory on PYTHONPATH")


def is_described(v):
    return isinstance(v, dict) and ("estimator" in v or "pipeline" in v)


def is_estimator(v):
    return callable(getattr(v, "fit", None)) and callable(getattr(v, "get_params", None))


def transforms(est):
    return callable(getattr(est, "transform", None)) or callable(getattr(est, "fit_transform", None))


def shown(v, limit=120):
    text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: The parameter through which an estimator caches with joblib (Pipeline,
#: FeatureAgglomeration, AgglomerativeClustering, and any other named so).
CACHE_PARAM = "memory"


def refuse_cache(value, where):
    """Refuse a cache directory (``memory``) other than null: joblib's cache writes pickles
    there and loads them back, on the driver and on every worker, so a study file naming
    a directory would run whatever pickle was planted in it."""
    if value is not None:
        raise file_error(where, f"a study file sets no cache directory (got {shown(value, 200)}): "
                                f"joblib's cache writes pickles there and loads them back, so a "
                                f"file planted there would run code; leave it null")


def check_constraints(cls, params, where):
    """``params`` against ``cls``'s parameter constraints (scikit-learn's; a class without
    them is left to its ``fit``), each error under ``where.<name>``."""
    for name, value in params.items():
        check_value(cls, name, value, f"{where}.{name}")


def check_value(cls, name, value, where):
    """``value`` of ``cls``'s parameter ``name`` against the class's constraints; the
    error is scikit-learn's, on one line (the repr of a pipeline it holds is not)."""
    from . import _sklearn_compat as compat

    constraints = compat.parameter_constraints(cls)
    if not constraints or name not in constraints:
        return
    try:
        compat.validate_parameter_constraints(constraints, {name: value}, caller_name=cls.__name__)
    except compat.SklearnInvalidParameterError as e:
        raise file_error(where, " ".join(str(e).split())) from None


