"""A study file's feature columns: ``data.features`` and ``data.drop`` (CSV/Parquet).

``features`` is a column name, a glob pattern (``"x_*"``, :func:`fnmatch.fnmatchcase`) or a
list mixing both; without it every column but the target, the groups and the fold column
is a feature. ``drop`` (the same forms) leaves columns out, after ``features``. The target,
groups and fold columns are never features. An integer or string column named like an
identifier (``id``, ``patient_id``, ``index``, pandas' saved ``Unnamed: 0``) is refused
unless ``features`` names it. Errors are one line and name the key. The forms of
``features`` and ``drop``, and that they apply to CSV/Parquet data only, are the study
file's schema's.

A string column is a feature when each grid entry's estimator encodes it:
:func:`check_encoded` follows the columns through the pipeline actually built (a
ColumnTransformer's selections, its ``remainder``, a Pipeline's steps, a FeatureUnion's
branches) to the first step that takes strings (scikit-learn's ``categorical`` or
``string`` input tag: ``OneHotEncoder``, ``OrdinalEncoder``, ``TargetEncoder``, the text
vectorizers) or that does not (refused, naming the column and the step), and checks the
columns a ColumnTransformer names against the data's. A meta-estimator that wraps another
(``BaggingClassifier(estimator=...)``) is not followed: its fits decide, as the run's check
on a few rows does before the first wave.
"""
from __future__ import annotations

import fnmatch
import re

from ..exceptions import StudyFileError

__all__ = ["select_features"]

#: Column names that say "identifier": a feature only if ``data.features`` names it.
ID_NAME = re.compile(r"(id|index|unnamed: 0|.*[_\- ]id)", re.IGNORECASE)
_GLOB = set("*?[")


def _err(key, msg):
    return StudyFileError(f"study file: {key}: {msg}")


def _match(items, columns, key, path, reserved=()):
    """The columns ``items`` name (in their order, each once); patterns match none of
    ``reserved``; an unknown name or a pattern that matches nothing is an error."""
    chosen = {}
    for item in items:
        if item in columns:
            chosen[item] = None
        elif _GLOB & set(item):
            hits = [c for c in columns if c not in reserved and fnmatch.fnmatchcase(c, item)]
            if not hits:
                raise _err(f"data.{key}", f"pattern {item!r} matches no column of {path}")
            chosen.update(dict.fromkeys(hits))
        else:
            raise _err(f"data.{key}", f"no column {item!r} in {path}")
    return list(chosen)


def _is_text(s):
    import pandas as pd

    return s.dtype == object or pd.api.types.is_string_dtype(s.dtype)


def select_features(df, data, reserved, path):
    """The feature columns of ``df`` (string column names; a list of names) for the study
    file's ``data``; ``reserved`` maps the target, groups and fold columns to the keys that name them."""
    columns = list(df.columns)
    named = set()
    if "features" in data:
        features = _match(data["features"], columns, "features", path, reserved)
        for c in features:
            if c in reserved:
                raise _err("data.features", f"{c!r} is {reserved[c]}: never a feature")
        named = {i for i in data["features"] if i in columns}
    else:
        features = [c for c in columns if c not in reserved]
    if "drop" in data:
        gone = set(_match(data["drop"], columns, "drop", path))
        features = [c for c in features if c not in gone]
    if not features:
        raise _err("data", f"no feature columns left in {path}")
    import pandas as pd

    for c in features:
        s = df[c]
        if c not in named and ID_NAME.fullmatch(c) and (pd.api.types.is_integer_dtype(s.dtype) or _is_text(s)):
            raise _err("data", f"column {c!r} looks like an identifier, not a feature: list it "
                               f"in data.features if it is one, else in data.drop")
    return features


#: Most configurations of one grid entry :func:`check_encoded` follows (the product of its
#: grid's values that are not numbers); an entry of more is left to the run's check.
MAX_VARIANTS = 1000
#: Strategies of SimpleImputer that take strings and give them back (still strings).
KEEPS_STRINGS = ("most_frequent", "constant")


def check_encoded(X, entries, path):
    """Refuse a string column of ``X`` that some grid entry does not encode in any of its
    configurations, and a ColumnTransformer's column that ``X`` lacks; one-line errors.

    Parameters
    ----------
    X : DataFrame or ndarray
        The features, as the study will take them.
    entries : list of (str, estimator, dict)
        Each grid entry's key (``grid[0]``), its estimator as built and its grid (values
        built).
    path : str
        The data file, named in errors.
    """
    from sklearn.model_selection import ParameterGrid

    text = [c for c in X.columns if _is_text(X[c])] if hasattr(X, "columns") else []
    for where, est, grid in entries:
        varied = {k: v for k, v in grid.items() if not all(_is_number(x) for x in v)}
        variants = ParameterGrid(varied)
        everywhere = None  # the string columns no configuration seen so far encodes
        for i, params in enumerate(variants):
            if i == MAX_VARIANTS:
                return
            _, stuck = _flow(est.set_params(**params) if params else est, text, X, where, path)
            everywhere = dict(stuck) if everywhere is None else \
                {c: v for c, v in everywhere.items() if c in stuck}
        if everywhere:
            cols, first = list(everywhere), next(iter(everywhere.values()))
            many = len(cols) > 1
            named = ", ".join(map(repr, cols[:5])) + (f" and {len(cols) - 5} more" if len(cols) > 5 else "")
            them = "them" if many else "it"
            raise _err(where, f"column{'s' if many else ''} {named} hold{'' if many else 's'} "
                              f"strings that no step of this entry encodes ({'they reach' if many else 'it reaches'} "
                              f"{first}, which takes numbers): encode {them} (OneHotEncoder or "
                              f"OrdinalEncoder in a ColumnTransformer), or list {them} in data.drop")


def _is_number(v):
    return isinstance(v, (int, float))  # bools too: none changes where a column goes


def _flow(est, text, X, where, path):
    """Where the string columns ``text`` go through ``est``: ``(out, stuck)``, the string
    columns that leave it still strings, and ``{column: class name}`` of those that reach a
    step taking numbers. ``X``: the columns entering ``est`` when they are the data's own
    (a DataFrame or the array), else None (after a step that transformed them)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import FeatureUnion, Pipeline

    if est is None or (isinstance(est, str) and est == "passthrough"):
        return text, {}
    if isinstance(est, str):  # "drop"
        return [], {}
    if isinstance(est, ColumnTransformer):
        return _through_columns(est, text, X, where, path)
    if isinstance(est, Pipeline):
        stuck = {}
        for _, step in est.steps:
            text, more = _flow(step, text, X, where, path)
            stuck = more | stuck
            X = X if step is None or (isinstance(step, str) and step == "passthrough") else None
        return text, stuck
    if isinstance(est, FeatureUnion):
        out, stuck = [], {}
        for _, branch in est.transformer_list:
            more_out, more = _flow(branch, text, X, where, path)
            out += [c for c in more_out if c not in out]
            stuck = more | stuck
        return out, stuck
    if not text:
        return [], {}
    if type(est).__name__ == "SimpleImputer" and getattr(est, "strategy", None) in KEEPS_STRINGS:
        return text, {}
    if _takes_strings(est) or any(callable(getattr(v, "fit", None)) for v in est.get_params(deep=False).values()):
        return [], {}  # encoded; or a meta-estimator, whose own fits decide
    return [], {c: type(est).__name__ for c in text}


def _takes_strings(est):
    """Whether scikit-learn's tags say that ``est`` takes strings (an estimator without
    tags is given the benefit of the doubt: its fits decide)."""
    from sklearn.utils import get_tags

    try:
        tags = get_tags(est).input_tags
    except Exception:  # noqa: BLE001 - a third-party estimator's tags of any kind
        return True
    return bool(tags.categorical or tags.string)


def _through_columns(ct, text, X, where, path):
    """:func:`_flow` through a ColumnTransformer: each transformer's selection (checked
    against ``X``'s columns), then its ``remainder``."""
    if X is None:
        return [], {}  # columns after another step's output: its fits decide
    framed = hasattr(X, "columns")
    labels = list(X.columns) if framed else list(range(X.shape[1]))
    used, out, stuck = [], [], {}
    for name, trans, spec in ct.transformers:
        cols = _selected(spec, X, labels, where, f"{type(ct).__name__} transformer {name!r}", path)
        used += cols
        more_out, more = _flow(trans, [c for c in text if c in cols],
                               X[cols] if framed else None, where, path)
        out += more_out
        stuck = more | stuck
    rest = [c for c in labels if c not in used]
    more_out, more = _flow(ct.remainder, [c for c in text if c in rest],
                           X[rest] if framed else None, where, path)
    return out + more_out, more | stuck


def _selected(spec, X, labels, where, who, path):
    """The labels of the columns ``spec`` selects from ``X`` (names, positions, or a
    selector), as ``who`` (a ColumnTransformer's transformer) will when it fits; a column
    that ``X`` lacks is refused."""
    framed = hasattr(X, "columns")
    if callable(spec):
        if not framed:
            raise _err(where, f"{who}: a column selector needs named columns (CSV/Parquet "
                              f"data), not {_kind(path)}")
        return list(spec(X))
    out = []
    for item in spec if isinstance(spec, list) else [spec]:
        if isinstance(item, str) and not framed:
            raise _err(where, f"{who} selects {item!r} by name, but {_kind(path)} has no "
                              f"column names: select by position")
        if isinstance(item, str) and item not in labels:
            shown = ", ".join(labels[:10]) + (", ..." if len(labels) > 10 else "")
            raise _err(where, f"{who} selects {item!r}, which is not a feature column of "
                              f"{path} (features: {shown})")
        if not isinstance(item, str) and not -len(labels) <= item < len(labels):
            raise _err(where, f"{who} selects position {item}, but the data has "
                              f"{len(labels)} feature columns")
        out.append(item if isinstance(item, str) else labels[item])
    return out


def _kind(path):
    return "a bundled dataset" if path is None else f"{path} (an .npz file)"
