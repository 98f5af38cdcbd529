"""Estimators from their description in a study file: an import path, ``params`` and a
``grid`` per entry (``{estimator: ..., params: ...}`` for a value that is itself an
estimator). Only scikit-learn estimator classes are built — a class with ``fit`` and
``get_params``, found outside the standard library and never in a ``__main__`` — and
nothing is called before that check. The command line builds a study file's search with
it, and :class:`bbc_dask.Study` the parameters of a store the command line wrote (its
stored study file), so that ``best_params_`` holds estimators, not their repr."""
from __future__ import annotations

import importlib
import sys

from .exceptions import StudyFileError

__all__ = ["build_search", "build_step", "file_error", "grid_values"]


def file_error(key, msg):
    """The one-line error of a study file's key ``key``."""
    return StudyFileError(f"study file: {key}: {msg}")


def _estimator_class(path, where):
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
    try:
        cls = getattr(importlib.import_module(mod), name)
    except (ImportError, AttributeError):
        raise file_error(f"{where}.estimator", f"cannot import {path!r}") from None
    if not (isinstance(cls, type) and callable(getattr(cls, "fit", None))
            and callable(getattr(cls, "get_params", None))):
        raise file_error(f"{where}.estimator", f"{path} is not a scikit-learn estimator class (a "
                   f"class with fit and get_params)")
    return cls


def _is_nested(v):
    return isinstance(v, dict) and "estimator" in v


def _value(v, where):
    """A parameter value: a nested ``{estimator, params}`` mapping becomes an estimator
    (checked the same way), anything else is used as written."""
    if _is_nested(v):
        bad = sorted(set(v) - {"estimator", "params"})
        if bad:
            raise file_error(f"{where}.{bad[0]}", "unknown key (allowed: estimator, params)")
        return build_step({"estimator": v["estimator"], "params": v.get("params", {}) or {}}, where)
    return v


def build_step(step, where):
    cls = _estimator_class(step["estimator"], where)
    if not isinstance(step["params"], dict):
        raise file_error(f"{where}.params", f"expected a mapping, got {step['params']!r}")
    params = {k: _value(v, f"{where}.params.{k}") for k, v in step["params"].items()}
    try:
        return cls(**params)
    except TypeError as e:
        raise file_error(f"{where}.params", str(e)) from None


def grid_values(grid, where):
    """A grid's lists with nested estimator mappings built (one fresh object each)."""
    return {k: [_value(v, f"{where}.grid.{k}[{i}]") for i, v in enumerate(vals)]
            for k, vals in grid.items()}


def _build_entry(entry):
    if "estimator" in entry:
        return build_step(entry, "grid")
    from sklearn.pipeline import make_pipeline

    return make_pipeline(*[build_step(s, "grid") for s in entry["pipeline"]])


def build_search(resolved):
    """``(estimator, param_grid)`` for :func:`bbc_dask.run_study`: a one-step pipeline
    whose ``model`` is set per configuration, one grid per entry."""
    from sklearn.pipeline import Pipeline

    grids = []
    for entry in resolved["grid"]:
        est = _build_entry(entry)
        grid = grid_values(entry["grid"], "grid")
        grids.append({"model": [est]} | {f"model__{k}": v for k, v in grid.items()})
    return Pipeline([("model", _build_entry(resolved["grid"][0]))]), grids
