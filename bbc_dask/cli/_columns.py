"""A study file's feature columns: ``data.features`` and ``data.drop`` (CSV/Parquet).

``features`` is a column name, a glob pattern (``"x_*"``, :func:`fnmatch.fnmatchcase`) or a
list mixing both; without it every column but the target, the groups and the fold column
is a feature. ``drop`` (the same forms) leaves columns out, after ``features``. The target,
groups and fold columns are never features. An integer or string column named like an
identifier (``id``, ``patient_id``, ``index``, pandas' saved ``Unnamed: 0``) is refused
unless ``features`` names it; a string column that remains is refused (a study file has no
encoder step). Errors are one line and name the key. The forms of ``features`` and ``drop``,
and that they apply to CSV/Parquet data only, are the study file's schema's.
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
    for c in features:
        if _is_text(df[c]):
            raise _err("data", f"column {c!r} holds strings (the study file has no encoder "
                               f"step): list it in data.drop, or encode it as numbers in the file")
    return features
