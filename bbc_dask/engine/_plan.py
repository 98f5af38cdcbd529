"""Study plan: candidates, folds, response method, fingerprint. No fitting here."""
from __future__ import annotations

import hashlib
import numbers

import numpy as np
from sklearn.base import is_classifier
from sklearn.model_selection import (
    GroupKFold,
    KFold,
    ParameterGrid,
    ParameterSampler,
    StratifiedGroupKFold,
    StratifiedKFold,
)

from .. import _validation as V
from .._random import child_generator
from ._tasks import configured

__all__ = ["candidates", "make_folds", "response_method", "data_digest", "describe_params"]


def candidates(param_grid, param_distributions, n_iter, root, caller):
    """The configurations: a grid (dict or list of dicts) or ``n_iter`` random draws."""
    if (param_grid is None) == (param_distributions is None):
        raise ValueError(
            f"{caller} needs exactly one of 'param_grid' (grid search) or "
            f"'param_distributions' with 'n_iter' (random search)."
        )
    if param_grid is not None:
        try:
            params = list(ParameterGrid(param_grid))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"The 'param_grid' parameter of {caller} is invalid: {exc}") from None
        if not params or (params == [{}] and not _has_any(param_grid)):
            raise ValueError(
                f"The 'param_grid' parameter of {caller} must define at least one "
                f"configuration. Got {param_grid!r} instead."
            )
        return params, "grid"
    n_iter = V.check_int(n_iter, "n_iter", caller)
    seed = int(child_generator(root, "search", 0).integers(2**31))
    try:
        params = list(ParameterSampler(param_distributions, n_iter, random_state=seed))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"The 'param_distributions' parameter of {caller} is invalid: {exc}") from None
    return params, "random"


def _has_any(grid):
    if isinstance(grid, dict):
        return bool(grid)
    return any(bool(g) for g in grid)


def make_folds(y, groups, n_splits, n_repeats, classification, root):
    """Fold ids ``(N, R)``: repeat ``r`` is split with a seed from its own child."""
    n = y.shape[0]
    folds = np.empty((n, n_repeats), dtype=np.int64)
    dummy = np.zeros((n, 1))
    for r in range(n_repeats):
        seed = int(child_generator(root, "folds", r).integers(2**31))
        if groups is not None:
            cls = StratifiedGroupKFold if classification else GroupKFold
            splitter = cls(n_splits, shuffle=True, random_state=seed)
        elif classification:
            splitter = StratifiedKFold(n_splits, shuffle=True, random_state=seed)
        else:
            splitter = KFold(n_splits, shuffle=True, random_state=seed)
        for k, (_, test) in enumerate(splitter.split(dummy, y, groups)):
            folds[test, r] = k
    return folds


def response_method(estimator, metric):
    """Which prediction method ``metric`` needs from a configured estimator, or None."""
    if metric.prediction == "scores":
        order = ("decision_function", "predict_proba")  # scikit-learn's roc_auc scorer order
    elif metric.prediction == "proba":
        order = ("predict_proba",)
    else:
        order = ("predict",)
    for name in order:
        if hasattr(estimator, name):
            return name
    return None


def check_estimator_methods(estimator, params, metric, caller):
    methods = []
    for i, p in enumerate(params):
        est = configured(estimator, p)
        m = response_method(est, metric)
        if m is None:
            need = {"scores": "decision_function or predict_proba", "proba": "predict_proba"}.get(
                metric.prediction, "predict")
            raise ValueError(
                f"The estimator of configuration {i} ({p!r}) has no {need}, which the metric "
                f"{metric.name!r} needs, in {caller}."
            )
        if metric.is_classification and not is_classifier(est):
            raise ValueError(
                f"The metric {metric.name!r} is for classification but the estimator of "
                f"configuration {i} is not a classifier, in {caller}."
            )
        methods.append(m)
    return methods


def data_digest(*arrays):
    """Stable SHA-256 of the data (arrays or DataFrames), for the study fingerprint."""
    from joblib import hash as jhash

    return [None if a is None else jhash(a, hash_name="sha1") for a in arrays]


def describe_params(params):
    """JSON-safe description of a parameter dict (values by repr)."""
    out = {}
    for k, v in params.items():
        if isinstance(v, (str, bool)) or v is None:
            out[k] = v
        elif isinstance(v, numbers.Number):
            out[k] = v.item() if isinstance(v, np.generic) else v
        else:
            out[k] = repr(v)
    return out


def describe_estimator(estimator):
    return {k: (v if isinstance(v, (str, bool, int, float)) or v is None else repr(v))
            for k, v in sorted(estimator.get_params(deep=True).items())}


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()[:16]
