"""A study file's estimators, built: an import path, ``params`` and a ``grid`` per entry;
a value that is itself an estimator is ``{estimator: ..., params: ...}`` or ``{pipeline:
[steps]}`` (``make_pipeline``), at any depth of the parameters and inside lists; and the
composed estimators have their forms: a ``ColumnTransformer``'s ``transformers`` and
``remainder``, and the lists of named estimators of ``Pipeline`` (``steps``),
``FeatureUnion`` (``transformer_list``) and the voting and stacking ensembles
(``estimators``), written in YAML. What a description may name is checked first, by
:mod:`._described`. The command line builds a study file's search here, and
:class:`bbc_dask.Study` the parameters of a store the command line wrote (its stored
study file), so that ``best_params_`` holds estimators, not their repr.

A named estimator is ``[name, estimator]``: an import path, ``{estimator, params}``,
``{pipeline: [steps]}``, or ``drop`` / ``passthrough`` where the class takes them. A
ColumnTransformer's transformer is ``{name, transformer, columns}`` (``name`` may be left out of every one:
then they are named as ``make_column_transformer`` names them, ``onehotencoder``,
``pipeline-1``) or the list ``[name, transformer, columns]``, as in Python. A
``transformer`` is an import path, ``{estimator, params}``, ``{pipeline: [steps]}``,
``drop`` or ``passthrough`` (so is ``remainder``); ``columns`` is a column name (a 1-D
selection, as in scikit-learn), a list of names, a position or a list of positions, or a
selector ``{dtype_include, dtype_exclude, pattern}`` — built as ``make_column_selector``,
a type of this list, never an import path. Everything is checked when the study file is
read, before any cluster starts; errors are one line naming the key.
"""
from __future__ import annotations

import re

from ._described import (CACHE_PARAM, check_constraints, check_value, estimator_class, file_error,
                         is_described, is_estimator, refuse_cache, shown, transforms)
from ._hints import did_you_mean

__all__ = ["build_described", "build_entry", "build_pipeline", "build_search", "build_step",
           "check_names", "column_transformers", "grid_builder", "grid_values", "named_estimators",
           "selector", "special_params", "transformer"]

#: What a composed estimator takes in place of an estimator (scikit-learn's words).
SPECIFIERS = ("drop", "passthrough")
#: A column selector's keys: make_column_selector's arguments.
SELECTOR_KEYS = ("dtype_include", "dtype_exclude", "pattern")
#: What ``columns`` may be, said in errors.
COLUMNS = ("a column name, a list of names, a position, a list of positions, or a selector "
           "{dtype_include, dtype_exclude, pattern}")


def special_params(cls):
    """The parameters of ``cls`` built by this module (``{name: builder}``): a
    ColumnTransformer's (or a subclass's) ``transformers`` and ``remainder``, the named
    estimators of the composed classes; none for another class."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import StackingClassifier, StackingRegressor, VotingClassifier, VotingRegressor
    from sklearn.pipeline import FeatureUnion, Pipeline

    if not isinstance(cls, type):
        return {}
    if issubclass(cls, ColumnTransformer):
        return {"transformers": column_transformers, "remainder": transformer}
    for classes, param in (((Pipeline,), "steps"), ((FeatureUnion,), "transformer_list"),
                           ((StackingClassifier, StackingRegressor, VotingClassifier,
                             VotingRegressor), "estimators")):
        if issubclass(cls, classes):
            return {param: named_estimators}
    return {}


#: The parameter of each composed class whose names :func:`check_names` checks.
NAMED = ("transformers", "steps", "transformer_list", "estimators")


def named_estimators(items, where):
    """``[[name, estimator], ...]`` as a list of ``(name, estimator)``; ``drop`` and
    ``passthrough`` are kept for the class to judge (a Pipeline's and a FeatureUnion's
    take both, an ensemble's ``drop``)."""
    if not isinstance(items, list) or not items:
        raise file_error(where, f"expected a non-empty list of [name, estimator], got {shown(items)}")
    out = []
    for i, item in enumerate(items):
        if not (isinstance(item, list) and len(item) == 2):
            raise file_error(f"{where}[{i}]", f"expected [name, estimator], got {shown(item)}")
        name, est = item
        if not (isinstance(name, str) and name):
            raise file_error(f"{where}[{i}][0]", f"expected a name, got {shown(name)}")
        out.append((name, _estimator(est, f"{where}[{i}][1]")))
    return out


def _estimator(v, where):
    """``drop``, ``passthrough``, or an estimator: an import path, ``{estimator, params}``
    or ``{pipeline: [...]}``."""
    if isinstance(v, str) and v in SPECIFIERS:
        return v
    if isinstance(v, str) and "." in v:
        return build_step({"estimator": v, "params": {}}, where)
    if is_described(v):
        return build_described(v, where)
    raise file_error(where, f"expected drop, passthrough, an import path, {{estimator, params}} "
                            f"or {{pipeline: [...]}}, got {shown(v)}")


def transformer(v, where):
    """A transformer: ``drop``, ``passthrough``, an import path, ``{estimator, params}`` or
    ``{pipeline: [...]}``; an estimator without ``transform`` is refused."""
    est = _estimator(v, where)
    if isinstance(est, str):
        return est
    if not transforms(est):
        raise file_error(where, f"{type(est).__name__} is not a transformer (it has no transform)")
    return est


def columns(v, where):
    """A transformer's columns as scikit-learn takes them; a selector mapping built."""
    if isinstance(v, dict):
        return selector(v, where)
    if isinstance(v, str) and v or _is_int(v):
        return v
    if isinstance(v, list) and v and (all(isinstance(c, str) and c for c in v) or all(map(_is_int, v))):
        return list(v)
    raise file_error(where, f"expected {COLUMNS}, got {shown(v)}")


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def selector(v, where):
    """``make_column_selector`` of ``{dtype_include, dtype_exclude, pattern}`` (one at
    least): the dtypes are checked by pandas and the pattern by :mod:`re` now, not at the
    first fit."""
    from sklearn.compose import make_column_selector

    bad = sorted(set(v) - set(SELECTOR_KEYS), key=str)
    if bad:
        raise file_error(f"{where}.{bad[0]}", f"unknown key of a column selector (allowed: "
                                              f"{', '.join(SELECTOR_KEYS)})")
    if not v:
        raise file_error(where, f"a column selector needs one of {', '.join(SELECTOR_KEYS)}")
    for key in ("dtype_include", "dtype_exclude"):
        if key in v:
            _check_dtypes(v[key], f"{where}.{key}")
    if "pattern" in v:
        if not isinstance(v["pattern"], str):
            raise file_error(f"{where}.pattern", f"expected a regular expression, got {shown(v['pattern'])}")
        try:
            re.compile(v["pattern"])
        except re.error as e:
            raise file_error(f"{where}.pattern", f"not a regular expression: {e}") from None
    return make_column_selector(**v)


def _check_dtypes(value, where):
    """A dtype name or a list of them, as ``DataFrame.select_dtypes`` takes (``object``,
    ``number``, ``category``, ``bool``, ``float64``, ...)."""
    import pandas as pd

    names = value if isinstance(value, list) else [value]
    if not names or not all(isinstance(n, str) and n for n in names):
        raise file_error(where, f"expected a dtype name (object, number, category, ...) or a "
                                f"list of them, got {shown(value)}")
    try:
        pd.DataFrame().select_dtypes(include=names)
    except (TypeError, ValueError) as e:
        raise file_error(where, f"not a dtype pandas selects by: {e}") from None


def _item(item, where):
    """One transformer: ``(name or None, transformer, columns)``."""
    if isinstance(item, list):
        if len(item) != 3:
            raise file_error(where, f"expected [name, transformer, columns], got {shown(item)}")
        name, trans, cols = item
    elif isinstance(item, dict):
        bad = sorted(set(item) - {"name", "transformer", "columns"}, key=str)
        if bad:
            raise file_error(f"{where}.{bad[0]}", "unknown key (allowed: name, transformer, columns)")
        for key in ("transformer", "columns"):
            if key not in item:
                raise file_error(f"{where}.{key}", "missing")
        name, trans, cols = item.get("name"), item["transformer"], item["columns"]
    else:
        raise file_error(where, f"expected {{name, transformer, columns}} or [name, transformer, "
                                f"columns], got {shown(item)}")
    if name is not None and not (isinstance(name, str) and name):
        raise file_error(f"{where}.name" if isinstance(item, dict) else f"{where}[0]",
                         f"expected a name, got {shown(name)}")
    at = (lambda k, i: f"{where}.{k}") if isinstance(item, dict) else (lambda k, i: f"{where}[{i}]")
    return name, transformer(trans, at("transformer", 1)), columns(cols, at("columns", 2))


def column_transformers(items, where):
    """A ColumnTransformer's ``transformers``: a list of ``(name, transformer, columns)``,
    names from ``make_column_transformer`` when none is given."""
    from sklearn.compose import make_column_transformer

    if not isinstance(items, list) or not items:
        raise file_error(where, f"expected a non-empty list of transformers, each {{name, "
                                f"transformer, columns}} or [name, transformer, columns], got {shown(items)}")
    built = [_item(item, f"{where}[{i}]") for i, item in enumerate(items)]
    named = [name is not None for name, _, _ in built]
    if not any(named):  # make_column_transformer's names
        return list(make_column_transformer(*[(t, c) for _, t, c in built]).transformers)
    if not all(named):
        raise file_error(f"{where}[{named.index(False)}].name",
                         "missing: name every transformer, or none (then they are named "
                         "as make_column_transformer names them)")
    return list(built)


def grid_builder(owner, param):
    """How a grid builds its values for ``param`` of ``owner`` (an estimator the entry
    holds), as a fixed parameter's are built: ``builder(value, where)``, or None for a
    parameter of no form of this module (:func:`grid_values` builds
    those). A ColumnTransformer's ``transformers`` and ``remainder`` and the named lists
    have their forms (a named list's names checked as :func:`check_names` does); a
    transformer, step or estimator tuned by its name is built as its list's items are (a
    ColumnTransformer's and FeatureUnion's transformers and a Pipeline's steps but the
    last must transform)."""
    special = special_params(type(owner))
    if param in special:
        build = special[param]
        if param not in NAMED:
            return build
        own = owner.get_params(deep=False)
        return lambda v, where: _check_listed(build(v, where), own, type(owner).__name__, where)
    own = owner.get_params(deep=False)
    listed = next((p for p in NAMED if p in own), None)
    names = [item[0] for item in own[listed] or []] if listed is not None else []
    if param not in names:
        return None
    if listed in ("transformers", "transformer_list") or listed == "steps" and param != names[-1]:
        return transformer
    return _estimator


def check_names(est, where):
    """The names of a composed estimator's named list (:data:`NAMED`, under ``where``) as
    its ``fit`` requires them: unique, without ``__``, none a parameter of the class."""
    own = est.get_params(deep=False)
    param = next((p for p in NAMED if p in own), None)
    if param is not None:
        _check_listed(own[param], own, type(est).__name__, f"{where}.{param}")


def _check_listed(items, own, cls_name, where):
    """:func:`check_names` of the list ``items`` at ``where`` (``own``: the class's
    parameters); returns ``items``."""
    seen = set()
    for i, (name, *_) in enumerate(items):
        if name in seen:
            raise file_error(f"{where}[{i}]", f"the name {name!r} is given twice")
        if "__" in name:
            raise file_error(f"{where}[{i}]", f"the name {name!r} holds '__' (it separates "
                                              f"the grid's parameter names)")
        if name in own:
            raise file_error(f"{where}[{i}]", f"the name {name!r} is a parameter of "
                                              f"{cls_name}: choose another")
        seen.add(name)
    return items


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
        named = len(items) in (2, 3) and isinstance(items[0], str) and is_estimator(items[1])
        return tuple(items) if named else items
    return v


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


def build_step(step, where):
    """The estimator of ``{estimator: import path, params: {...}}``: the class checked
    before anything is called, then each parameter's value built (:func:`_value`; a
    ColumnTransformer's ``transformers`` and ``remainder``, and the named estimators of a
    Pipeline, FeatureUnion or ensemble, by the forms below), and a
    parameter written as a mapping or a list checked against the class's own parameter
    constraints (as its ``fit`` would check them), so that a mapping that is not an
    estimator, where the class takes one, is refused now rather than by every fit."""
    cls = estimator_class(step["estimator"], where)
    if not isinstance(step["params"], dict):
        raise file_error(f"{where}.params", f"expected a mapping, got {step['params']!r}")
    refuse_cache(step["params"].get("memory"), f"{where}.params.memory")
    special = special_params(cls)
    params = {k: special[k](v, f"{where}.params.{k}") if k in special else _value(v, f"{where}.params.{k}")
              for k, v in step["params"].items()}
    check_constraints(cls, {k: params[k] for k, v in step["params"].items()
                             if isinstance(v, (dict, list)) and k not in special}, f"{where}.params")
    try:
        est = cls(**params)
    except TypeError as e:
        raise file_error(f"{where}.params", str(e)) from None
    if special:
        check_names(est, f"{where}.params")
    return est


def grid_values(grid, where, est):
    """A grid entry's lists of values, built (one fresh object each) as a fixed parameter's
    value is where the key points, and checked before any cluster starts.

    Each key is a parameter of ``est`` (the entry's estimator as built: its
    ``get_params(deep=True)``), or of every value of another key of the grid that it
    extends (``estimator`` and ``estimator__C``); a key that is neither is refused with
    the closest name. Its values are built by the owner's form of the parameter (a
    ColumnTransformer's ``transformers`` and ``remainder``, and a transformer or step
    tuned by its name, by the forms below; any other parameter as :func:`_value`
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
    deep = est.get_params(deep=True)
    built = {}
    for key in sorted(grid, key=lambda k: k.count("__")):  # a key's tuned owner first
        at = f"{where}.grid.{key}"
        owners, param = _owners(key, grid, built, deep, est, where)
        if param == CACHE_PARAM and all(param in o.get_params(deep=False) for o in owners):
            for i, v in enumerate(grid[key]):
                refuse_cache(v, f"{at}[{i}]")
        build = grid_builder(owners[0], param) if owners else None
        values = []
        for i, v in enumerate(grid[key]):
            if build is not None:
                values.append(build(v, f"{at}[{i}]"))
                continue
            values.append(_value(v, f"{at}[{i}]"))
            if isinstance(v, (dict, list)):  # as the fixed parameters are checked
                for owner in owners:
                    check_value(type(owner), param, values[-1], f"{at}[{i}]")
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
            params = value.get_params(deep=True) if is_estimator(value) else {}
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
