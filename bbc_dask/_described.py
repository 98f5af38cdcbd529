"""Estimators from their description in a study file: an import path, ``params`` and a
``grid`` per entry; a value that is itself an estimator is ``{estimator: ..., params:
...}`` or ``{pipeline: [steps]}`` (``make_pipeline``), at any depth of the parameters and
inside lists, and a ColumnTransformer's transformers and the named estimators of a
Pipeline, FeatureUnion or ensemble have their forms (:mod:`._composed`). Only scikit-learn
estimator classes are built — a class with ``fit`` and ``get_params``, found outside the
standard library and never in a ``__main__`` — and nothing is called before that check;
a module found only in the current directory or the study file's (unless PYTHONPATH
lists it) is not even imported, since importing runs its code; no joblib cache
directory (``memory``) is set, since joblib loads pickles back from it. The one other
type a study file builds is ``make_column_selector``, by its own key, never by an import
path. The command line builds a study file's search with it, and :class:`bbc_dask.Study`
the parameters of a store the command line wrote (its stored study file), so that
``best_params_`` holds estimators, not their repr."""
from __future__ import annotations

import importlib
import os
import sys
from contextlib import contextmanager
from contextvars import ContextVar

from ._hints import did_you_mean
from .exceptions import StudyFileError

__all__ = ["build_described", "build_entry", "build_pipeline", "build_search", "build_step", "file_error",
           "grid_values", "is_described", "reading", "refuse_cache", "shown", "transforms"]


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


def _value(v, where):
    """A parameter value: an estimator's description (``{estimator, params}``, or
    ``{pipeline: [steps]}`` for ``make_pipeline``) is built, checked the same way; a list
    is read item by item, and one of the form ``[name, estimator]`` or ``[name, estimator,
    columns]`` is a tuple (scikit-learn's named estimators: ``StackingClassifier``'s
    ``estimators``, a ``FeatureUnion``'s ``transformer_list``); anything else is used as
    written."""
    if is_described(v):
        return build_described(v, where)
    if isinstance(v, list):
        items = [_value(x, f"{where}[{i}]") for i, x in enumerate(v)]
        named = len(items) in (2, 3) and isinstance(items[0], str) and _is_estimator(items[1])
        return tuple(items) if named else items
    return v


def _is_estimator(v):
    return callable(getattr(v, "fit", None)) and callable(getattr(v, "get_params", None))


def build_described(v, where):
    """``{estimator, params}`` or ``{pipeline: [steps]}``, built."""
    if "estimator" in v and "pipeline" in v:
        raise file_error(where, "give exactly one of 'estimator' or 'pipeline'")
    allowed = ("estimator", "params") if "estimator" in v else ("pipeline",)
    bad = sorted(set(v) - set(allowed), key=str)
    if bad:
        raise file_error(f"{where}.{bad[0]}", f"unknown key (allowed: {', '.join(allowed)})")
    if "estimator" in v:
        return build_step({"estimator": v["estimator"], "params": v.get("params", {}) or {}}, where)
    return build_pipeline(v["pipeline"], f"{where}.pipeline")


def _pipeline_step(st, where):
    """A step of a ``pipeline:`` list: an import path, ``{estimator, params}`` or
    ``{pipeline: [...]}``."""
    if isinstance(st, str):
        return build_step({"estimator": st, "params": {}}, where)
    if not is_described(st):
        raise file_error(where, f"expected an import path, {{estimator, params}} or "
                                f"{{pipeline: [...]}}, got {shown(st)}")
    return build_described(st, where)


def build_pipeline(steps, where):
    """``make_pipeline`` of a ``pipeline:`` list (its steps named as make_pipeline names
    them); every step but the last must transform, as a Pipeline requires when it fits."""
    from sklearn.pipeline import make_pipeline

    if not isinstance(steps, list) or not steps:
        raise file_error(where, f"expected a non-empty list of steps, got {shown(steps)}")
    built = [_pipeline_step(st, f"{where}[{i}]") for i, st in enumerate(steps)]
    for i, est in enumerate(built[:-1]):
        if not transforms(est):
            raise file_error(f"{where}[{i}]", f"{type(est).__name__} is not a transformer (it has "
                                              f"no transform): only a pipeline's last step may be")
    return make_pipeline(*built)


def transforms(est):
    return callable(getattr(est, "transform", None)) or callable(getattr(est, "fit_transform", None))


def shown(v, limit=120):
    text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def build_step(step, where):
    """The estimator of ``{estimator: import path, params: {...}}``: the class checked
    before anything is called, then each parameter's value built (:func:`_value`; a
    ColumnTransformer's ``transformers`` and ``remainder``, and the named estimators of a
    Pipeline, FeatureUnion or ensemble, by :mod:`._composed`), and a
    parameter written as a mapping or a list checked against the class's own parameter
    constraints (as its ``fit`` would check them), so that a mapping that is not an
    estimator, where the class takes one, is refused now rather than by every fit."""
    cls = _estimator_class(step["estimator"], where)
    if not isinstance(step["params"], dict):
        raise file_error(f"{where}.params", f"expected a mapping, got {step['params']!r}")
    refuse_cache(step["params"].get("memory"), f"{where}.params.memory")
    from . import _composed as composed

    special = composed.special_params(cls)
    params = {k: special[k](v, f"{where}.params.{k}") if k in special else _value(v, f"{where}.params.{k}")
              for k, v in step["params"].items()}
    _check_constraints(cls, {k: params[k] for k, v in step["params"].items()
                             if isinstance(v, (dict, list)) and k not in special}, f"{where}.params")
    try:
        est = cls(**params)
    except TypeError as e:
        raise file_error(f"{where}.params", str(e)) from None
    if special:
        composed.check_names(est, f"{where}.params")
    return est


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


def _check_constraints(cls, params, where):
    """``params`` against ``cls``'s parameter constraints (scikit-learn's; a class without
    them is left to its ``fit``), each error under ``where.<name>``."""
    for name, value in params.items():
        _check_value(cls, name, value, f"{where}.{name}")


def _check_value(cls, name, value, where):
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


def grid_values(grid, where, est):
    """A grid entry's lists of values, built (one fresh object each) as a fixed parameter's
    value is where the key points, and checked before any cluster starts.

    Each key is a parameter of ``est`` (the entry's estimator as built: its
    ``get_params(deep=True)``), or of every value of another key of the grid that it
    extends (``estimator`` and ``estimator__C``); a key that is neither is refused with
    the closest name. Its values are built by the owner's form of the parameter (a
    ColumnTransformer's ``transformers`` and ``remainder``, and a transformer or step
    tuned by its name, by :mod:`._composed`; any other parameter as :func:`_value`
    builds it, a mapping or list checked against the owner's parameter constraints), and
    a joblib cache directory (``memory``) is refused.

    Parameters
    ----------
    grid : dict
        The entry's ``grid``: parameter name -> list of values as written.
    where : str
        The entry's key (``grid[0]``).
    est : estimator
        The entry's estimator, built from its ``params`` or ``pipeline``.
    """
    from . import _composed as composed

    deep = est.get_params(deep=True)
    built = {}
    for key in sorted(grid, key=lambda k: k.count("__")):  # a key's tuned owner first
        at = f"{where}.grid.{key}"
        owners, param = _owners(key, grid, built, deep, est, where)
        if param == CACHE_PARAM and all(param in o.get_params(deep=False) for o in owners):
            for i, v in enumerate(grid[key]):
                refuse_cache(v, f"{at}[{i}]")
        build = composed.grid_builder(owners[0], param) if owners else None
        values = []
        for i, v in enumerate(grid[key]):
            if build is not None:
                values.append(build(v, f"{at}[{i}]"))
                continue
            values.append(_value(v, f"{at}[{i}]"))
            if isinstance(v, (dict, list)):  # as the fixed parameters are checked
                for owner in owners:
                    _check_value(type(owner), param, values[-1], f"{at}[{i}]")
        built[key] = values
    return {k: built[k] for k in grid}


def _owners(key, grid, built, deep, est, where):
    """``(owners, name)``: the estimators whose parameter ``name`` the grid's ``key`` sets
    (one, or each value of the grid's key it extends, already in ``built``)."""
    parts = key.split("__")
    for n in range(len(parts) - 1, 0, -1):
        tuned = "__".join(parts[:n])
        if tuned not in grid:
            continue
        rest, owners = "__".join(parts[n:]), []
        for i, value in enumerate(built[tuned]):
            params = value.get_params(deep=True) if _is_estimator(value) else {}
            if rest not in params:
                hint = did_you_mean(rest, params, prefix=f"{tuned}__")
                raise file_error(f"{where}.grid.{key}", f"not a parameter of {where}.grid.{tuned}[{i}] "
                                                        f"({shown(value, 60)}){f'. {hint}' if hint else ''}")
            owners.append(params[rest.rpartition("__")[0]] if "__" in rest else value)
        return owners, parts[-1]
    if key not in deep:
        hint = did_you_mean(key, deep)
        raise file_error(f"{where}.grid.{key}", f"not a parameter of this entry's estimator"
                                                f"{f'. {hint}' if hint else ''}")
    return [deep[key.rpartition("__")[0]] if "__" in key else est], parts[-1]


def build_entry(entry, where="grid"):
    """The estimator of a resolved grid entry (``{estimator, params}`` or ``{pipeline}``)."""
    if "estimator" in entry:
        return build_step(entry, where)
    return build_pipeline(entry["pipeline"], f"{where}.pipeline")


def build_search(resolved):
    """``(estimator, param_grid)`` for :func:`bbc_dask.run_study`: a one-step pipeline
    whose ``model`` is set per configuration, one grid per entry."""
    from sklearn.pipeline import Pipeline

    grids = []
    for i, entry in enumerate(resolved["grid"]):
        est = build_entry(entry, f"grid[{i}]")
        grid = grid_values(entry.get("grid") or {}, f"grid[{i}]", est)
        grids.append({"model": [est]} | {f"model__{k}": v for k, v in grid.items()})
    return Pipeline([("model", build_entry(resolved["grid"][0], "grid[0]"))]), grids
