"""A study file's composed estimators: a ``ColumnTransformer``'s ``transformers`` and
``remainder``, and the lists of named estimators of ``Pipeline`` (``steps``),
``FeatureUnion`` (``transformer_list``) and the voting and stacking ensembles
(``estimators``), written in YAML.

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

from ._described import build_described, build_step, file_error, is_described, shown, transforms

__all__ = ["check_names", "column_transformers", "grid_builder", "named_estimators", "selector",
           "special_params", "transformer"]

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
    parameter of no form of this module (:func:`bbc_dask._described.grid_values` builds
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
