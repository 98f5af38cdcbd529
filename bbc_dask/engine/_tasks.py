"""Worker-side functions: plain, picklable, no client import, no bootstrap statistics.

A task fits a block of configurations on one training set (repeat, fold) and predicts
its test fold (dask-ml keeps its ``methods.py`` apart from the search for the same reason).
"""
from __future__ import annotations

import time
import traceback

import numpy as np
from sklearn.base import clone

__all__ = ["fit_predict_block", "method_problem", "refit", "response_method"]


def configured(estimator, params):
    """A fresh estimator with ``params``; parameter values that are estimators are cloned
    too, so a grid's objects are never fitted or mutated (as in scikit-learn's search)."""
    return clone(estimator).set_params(**{k: clone(v, safe=False) for k, v in params.items()})


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


def method_problem(est, metric):
    """Why ``est`` cannot give what ``metric`` needs, or None."""
    from sklearn.base import is_classifier

    if response_method(est, metric) is None:
        need = {"scores": "decision_function or predict_proba", "proba": "predict_proba"}.get(
            metric.prediction, "predict")
        return f"has no {need}, which the metric {metric.name!r} needs"
    if metric.is_classification and not is_classifier(est):
        return f"is not a classifier, and the metric {metric.name!r} is for classification"
    return None


def _index(X, idx):
    if hasattr(X, "iloc"):
        return X.iloc[idx]
    return X[idx]


def _response(est, method, X_test, classes, pos_code, n_classes_axis):
    out = getattr(est, method)(X_test)
    if method == "predict":
        if classes is None:
            return np.asarray(out, dtype=np.float64)
        codes = np.searchsorted(classes, out)
        codes = np.clip(codes, 0, len(classes) - 1)
        return np.where(classes[codes] == out, codes, -1).astype(np.float64)
    est_classes = np.asarray(est.classes_)
    if method == "decision_function":
        out = np.asarray(out, dtype=np.float64)
        if out.ndim == 2:  # one column per class: take the positive class
            out = out[:, np.flatnonzero(est_classes == classes[pos_code])[0]]
        elif est_classes[1] != classes[pos_code]:
            out = -out  # the decision function scores est_classes[1]
        return out
    proba = np.asarray(out, dtype=np.float64)
    if n_classes_axis:  # all classes, in the study's class order
        full = np.zeros((proba.shape[0], len(classes)))
        pos = np.searchsorted(classes, est_classes)
        full[:, pos] = proba
        return full
    return proba[:, np.flatnonzero(est_classes == classes[pos_code])[0]]


def fit_predict_block(estimator, params_block, X, y, train, test, metric, classes, pos_code,
                      n_classes_axis, error_score):
    """Fit each configuration of the block on ``train`` and predict ``test``.

    The response method (``decision_function``, ``predict_proba`` or ``predict``) is
    chosen here per configured estimator, as scikit-learn's scorers do; a configuration
    that cannot give what ``metric`` needs fails like one that raises.

    Returns a dict: ``values`` (len(test), n_block[, K]) float64 (NaN for a failed
    configuration), ``fit_time`` (n_block,), ``failed`` (n_block,) bool, ``errors`` list of
    str, and ``raise_`` (index, text) when ``error_score == "raise"`` met an error.
    """
    from ..metrics import get_metric

    m = get_metric(metric)
    n_block = len(params_block)
    shape = (len(test), n_block) + ((n_classes_axis,) if n_classes_axis else ())
    values = np.full(shape, np.nan)
    fit_time = np.full(n_block, np.nan)
    failed = np.zeros(n_block, dtype=bool)
    errors = [""] * n_block
    X_train, y_train, X_test = _index(X, train), _index(y, train), _index(X, test)
    for j, params in enumerate(params_block):
        t0 = time.perf_counter()
        try:
            est = configured(estimator, params)
            problem = method_problem(est, m)
            if problem:
                raise TypeError(f"The estimator {problem}.")
            est.fit(X_train, y_train)
            values[:, j] = _response(est, response_method(est, m), X_test, classes, pos_code,
                                     n_classes_axis)
        except Exception as exc:  # scikit-learn's error_score semantics
            text = f"{type(exc).__name__}: {exc}".strip()  # the class's name, not its module
            if isinstance(error_score, str) and error_score == "raise":
                return {"raise_": (j, text, traceback.format_exc())}
            values[:, j] = np.nan
            failed[j] = True
            errors[j] = text
        fit_time[j] = time.perf_counter() - t0
    return {"values": values, "fit_time": fit_time, "failed": failed, "errors": errors}


def refit(estimator, params, X, y):
    """Fit the selected configuration on all data (the final model)."""
    return configured(estimator, params).fit(X, y)
