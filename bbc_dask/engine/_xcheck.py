"""X's columns checked before the first wave: a column of strings, or one with missing
values, that no configuration's estimator takes is said in seconds, not after a whole run
of failed fits.

Only when X has such a column does anything run: then a few configurations (those that
between them take every parameter value, :meth:`Configurations.representatives`) are fit
on a slice of a few dozen rows on the driver. If every one of them fails with the
column's problem, the study is refused with the columns named; if any of them fits, or
fails for another reason (the slice may be too small for it), the run goes on and the
fits decide, as they would have.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from ..exceptions import InvalidParameterError
from ._tasks import configured, method_problem, take_rows

#: Configurations fit on the slice, at most (spread over the representatives).
MAX_TRIED = 24
#: Rows of the slice per class (classification) or in all (regression).
ROWS_PER_CLASS = 12

# How scikit-learn (and numpy under it) says that X holds strings or missing values.
_SAYS = {"strings": ("could not convert string", "string", "dtype='numeric'", "non-numeric"),
         "missing values": ("nan", "missing values")}


@dataclasses.dataclass(frozen=True)
class _Said:
    """Configuration ``config`` failed on the slice with ``error``, one of ``problem``."""

    config: int
    problem: str
    error: Exception


def column_problems(X):
    """``{"strings": [columns], "missing values": [columns]}`` of the problems X has (empty
    dict: none), columns by name for a DataFrame, by position otherwise."""
    if hasattr(X, "iloc"):
        if not (hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "isna")):
            return {}  # a container of rows that is not a DataFrame: the estimator decides
        names = list(X.columns)
        text = [n for n, dt in zip(names, X.dtypes) if dt.kind not in "biufcmMb"]
        missing = [n for n, bad in zip(names, np.asarray(X.isna().any(axis=0))) if bad]
    else:
        if not isinstance(X, np.ndarray) or X.ndim != 2:
            return {}  # sparse or other containers: the estimator's own checks decide
        if X.dtype.kind in "OUS":
            text = [j for j in range(X.shape[1])
                    if any(isinstance(v, (str, bytes)) for v in X[:, j])]
            missing = [j for j in range(X.shape[1])
                       if any(v is None or (isinstance(v, float) and v != v) for v in X[:, j])]
        elif X.dtype.kind in "fc":
            text, missing = [], [int(j) for j in np.flatnonzero(np.isnan(X).any(axis=0))]
        else:
            return {}
    out = {}
    if text:
        out["strings"] = text
    if missing:
        out["missing values"] = [c for c in missing if c not in text]
        if not out["missing values"]:
            del out["missing values"]
    return out


def _slice(X, y, classification, problems):
    """Rows of a small slice: a few of each class (so a classifier fits), and rows that
    hold the missing values (so an estimator that rejects them sees them)."""
    y = np.asarray(y)
    if classification:
        rows = [np.flatnonzero(y == c)[:ROWS_PER_CLASS] for c in np.unique(y)]
        rows = np.concatenate(rows)
    else:
        rows = np.arange(min(len(y), 3 * ROWS_PER_CLASS))
    if "missing values" in problems:
        cols = problems["missing values"]
        if hasattr(X, "iloc"):
            holes = np.flatnonzero(np.asarray(X[cols].isna().any(axis=1)))
        else:
            part = X[:, cols]
            holes = np.flatnonzero([any(v is None or (isinstance(v, float) and v != v) for v in r)
                                    for r in part]) if part.dtype.kind == "O" else \
                np.flatnonzero(np.isnan(part).any(axis=1))
        rows = np.union1d(rows, holes[:ROWS_PER_CLASS])
    return np.sort(rows)


def _says(exc, problem):
    text = str(exc).lower()
    return any(word in text for word in _SAYS[problem])


def check_columns(estimator, configs, X, y, classification):
    """Refuse X when it holds strings or missing values that every tried configuration
    rejects (see the module's docstring); a one-line error naming the columns."""
    problems = column_problems(X)
    if not problems:
        return
    reps = configs.representatives()
    if len(reps) > MAX_TRIED:
        reps = [reps[int(i)] for i in np.linspace(0, len(reps) - 1, MAX_TRIED)]
    rows = _slice(X, y, classification, problems)
    Xs, ys = take_rows(X, rows), np.asarray(y)[rows]
    said = None  # the first configuration that failed for a reason seen here
    with warnings.catch_warnings():  # the driver, before any task: a toy fit's warnings
        warnings.simplefilter("ignore")  # would only mislead
        for i in reps:
            try:
                configured(estimator, configs[i]).fit(Xs, ys)
            except Exception as exc:  # noqa: BLE001 - any estimator's own error
                which = [p for p in problems if _says(exc, p)]
                if not which:
                    return  # another reason (the slice?): the fits decide
                said = said or _Said(i, which[0], exc)
                continue
            return  # this configuration takes X as it is
    i, problem, exc = said.config, said.problem, said.error
    cols = problems[problem]
    shown = ", ".join(map(repr, cols[:5])) + (f" and {len(cols) - 5} more" if len(cols) > 5 else "")
    fix = ("encode them (OneHotEncoder in a ColumnTransformer) or leave them out"
           if problem == "strings" else "impute them (SimpleImputer) or use an estimator "
           "that takes them (HistGradientBoosting*)")
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    raise InvalidParameterError.of(
        "X", "columns that some configuration's estimator takes",
        shown=(f"{problem} in column{'s' if len(cols) > 1 else ''} {shown} ("
               f"{'all ' if len(reps) > 1 else ''}{len(reps)} configuration"
               f"{'s' if len(reps) > 1 else ''} tried on {len(rows)} rows failed; "
               f"configuration {i}: {type(exc).__name__}: {first})"),
        note=f"{fix[0].upper()}{fix[1:]}.")


def problem_after_fit(est, metric, X, y, classification):
    """Why ``est``, fitted on a few rows of ``X`` (a few of each class), cannot give what
    ``metric`` needs; None where it can, or where that fit fails (the slice may be too
    small for it, or X not what it takes: the study's fits decide)."""
    rows = _slice(X, y, classification, {})
    with warnings.catch_warnings():  # a toy fit's warnings would only mislead
        warnings.simplefilter("ignore")
        try:
            fitted = est.fit(take_rows(X, rows), np.asarray(y)[rows])
        except Exception:  # noqa: BLE001 - any estimator's own error: not this check's
            return None
    return method_problem(fitted, metric)


def problem_before_run(est, metric, X, y, classification, fit=True):
    """Why the configured ``est`` cannot serve ``metric``, said before any task: first what
    no fit changes (a regressor for a classification metric, a method its class lacks),
    then, with ``fit``, a method that may come with the fit (:func:`~._tasks.
    may_gain_method`) looked for on a fit of a few rows (:func:`problem_after_fit`).
    None: no problem, or none that can be told before the fits."""
    from ._tasks import may_gain_method

    problem = method_problem(est, metric, unfitted=True)
    if problem is None and fit and may_gain_method(est, metric):
        problem = problem_after_fit(est, metric, X, y, classification)
    return problem
