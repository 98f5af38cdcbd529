"""The one place where arguments are checked and errors are worded.

Wording follows scikit-learn: ``The 'n_bootstraps' parameter of bbc must be an int in the
range [1, inf). Got 0 instead.``
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ._hints import did_you_mean, parameter_hint  # noqa: F401 - the checks' hints, said here too
from .exceptions import InvalidParameterError
from .metrics import Metric, Target
from ._doors import door_name, spelled, the_parameter, warn

__all__ = [
    "as_bootstrap_indices",
    "as_folds",
    "as_predictions",
    "as_target",
    "check_confidence_level",
    "check_int",
    "encode_predictions",
]

CUBE_DIMS = ("sample", "config", "repeat", "class")
_DIMS = CUBE_DIMS


def check_int(value, name, *, low=1, high=None, allow_none=False):
    if value is None and allow_none:
        return None
    hi = "inf" if high is None else high
    expected = f"an int in the range [{low}, {hi}{')' if high is None else ']'}"
    if (
        not isinstance(value, numbers.Integral) or isinstance(value, bool)
        or value < low or (high is not None and value > high)
    ):
        raise InvalidParameterError.of(name, expected, value)
    return int(value)


def check_real_open(value, name, low, high):
    return _check_real(value, name, low, high, closed=False)


def check_real_closed(value, name, low, high):
    return _check_real(value, name, low, high, closed=True)


def _check_real(value, name, low, high, closed):
    if (
        not isinstance(value, numbers.Real)
        or isinstance(value, bool)
        or not np.isfinite(value)
        or not ((low <= value <= high) if closed else (low < value < high))
    ):
        brackets = "[]" if closed else "()"
        raise InvalidParameterError.of(
            name, f"a float in the range {brackets[0]}{low}, {high}{brackets[1]}", value)
    return float(value)


def check_bool(value, name, *, allow_none=False):
    """``value`` as a bool (numpy's included); None passes through with ``allow_none``."""
    if value is None and allow_none:
        return None
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameterError.of(name, "None, True or False" if allow_none
                                       else "True or False", value)
    return bool(value)


def check_one_of(value, name, choices):
    """``value`` if it equals one of ``choices`` (strings, None, bools)."""
    try:
        ok = value in choices
    except TypeError:  # an unhashable value against a set of choices
        ok = False
    if not ok:
        raise InvalidParameterError.of(name, f"one of {list(choices)}", value,
                                       note=did_you_mean(value, choices) or None)
    return value


def check_instance(value, name, types, expected, *, allow_none=False):
    """``value`` if it is an instance of ``types``; the error names ``expected`` and the
    type given (a large object's repr says little)."""
    if (value is None and allow_none) or isinstance(value, types):
        return value
    raise InvalidParameterError.of(name, expected, value, shown=None if value is None
                                   else f"a {type(value).__name__}")


def check_str_list(value, name, *, allow_none=True):
    """A list (or tuple, set) of strings as a list; a lone string is refused: iterating
    it would give its letters."""
    if value is None and allow_none:
        return None
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise InvalidParameterError.of(name, "a list of str", value)


def check_bounds(low, high, names, *, minimum=0):
    """Two ints ``minimum <= low <= high`` given together, or both None (e.g. adaptive
    scaling's minimum and maximum)."""
    (lo_name, hi_name) = names
    if (low is None) != (high is None):
        given, missing = (lo_name, hi_name) if high is None else (hi_name, lo_name)
        raise InvalidParameterError.of(
            missing, f"given together with {given!r} (they bound one range)", None)
    if low is None:
        return None, None
    low = check_int(low, lo_name, low=minimum)
    high = check_int(high, hi_name, low=max(minimum, 1))
    if low > high:
        raise InvalidParameterError.of(hi_name, f"at least {lo_name!r} ({low})", high)
    return low, high


def check_exactly_one(values, note=None):
    """Exactly one of ``values`` (a dict name -> value) is given (not None)."""
    given = [k for k, v in values.items() if v is not None]
    if len(given) != 1:
        names = " or ".join(repr(k) for k in values)
        shown = "none" if not given else " and ".join(repr(k) for k in given)
        raise InvalidParameterError(f"Exactly one of the parameters {names} of {door_name()} must "
                                    f"be given. Got {shown} instead." + (f" {note}" if note else ""))
    return given[0]


def require_y(y):
    """The target is required: worded as scikit-learn's estimator checks expect."""
    if y is None:
        raise InvalidParameterError(f"{door_name()} requires y to be passed, but the target y is None.")


def check_confidence_level(value):
    return check_real_open(value, "confidence_level", 0.0, 1.0)


def check_same_length(a, n_a, b, n_b):
    """Two arguments that index the same samples."""
    if n_a != n_b:
        raise InvalidParameterError(f"'{a}' and '{b}' of {door_name()} must have the same number of "
                                    f"samples. Got {n_a} and {n_b}.")


def check_fit_params(fit_params, nested):
    """Parameters of every fit (``sample_weight``...): a dict by name, ``{}`` for None.
    Array-likes of one row per sample are sliced to each training set by the tasks."""
    if fit_params is None:
        return {}
    if not isinstance(fit_params, dict) or not all(isinstance(k, str) for k in fit_params):
        raise InvalidParameterError(
            f"{the_parameter('fit_params')} must be a dict of parameters by name. "
            f"Got {fit_params!r} instead.")
    if fit_params and nested is not None:
        raise InvalidParameterError(
            f"{the_parameter('fit_params')} is not supported in nested "
            f"cross-validation. Got {sorted(fit_params)}.")
    return dict(fit_params)


def check_dims(dims):
    """The dims of a cube: 'sample' and 'config', optionally 'repeat' and 'class', each once."""
    dims = tuple(dims)
    if (any(d not in _DIMS for d in dims) or "sample" not in dims or "config" not in dims
            or len(set(dims)) != len(dims)):
        raise InvalidParameterError.of(
            "predictions", "a DataArray with dims 'sample', 'config' and optionally "
            "'repeat', 'class' (each once)", shown=f"dims {dims}")
    return dims


def _is_dataarray(x):
    return type(x).__name__ == "DataArray" and hasattr(x, "dims")


def as_predictions(predictions, metric: Metric):
    """Return ``(array, class_coord)``: a (N, C, R) or (N, C, R, K) array (object dtype
    kept for label predictions) and the ``class`` coordinate of a DataArray, if any."""
    class_coord = None
    if _is_dataarray(predictions):
        dims = check_dims(predictions.dims)
        order = [d for d in _DIMS if d in dims]
        if "class" in dims and "class" in predictions.coords:
            class_coord = np.asarray(predictions.coords["class"].values)
        arr = np.asarray(predictions.transpose(*order).values)
        if "repeat" not in dims:
            arr = np.expand_dims(arr, 2)
        if "class" in dims and arr.ndim != 4:
            raise AssertionError("unreachable")
    else:
        arr = np.asarray(predictions)
        if arr.ndim == 2:
            arr = arr[:, :, None]
        elif arr.ndim not in (3, 4):
            raise InvalidParameterError(
                f"{the_parameter('predictions')} must have shape (N, C), (N, C, R) "
                f"or (N, C, R, n_classes). Got an array with shape {arr.shape} instead."
            )
    if arr.shape[0] < 2 or arr.shape[1] < 1 or arr.shape[2] < 1:
        raise InvalidParameterError(
            f"{the_parameter('predictions')} must hold at least 2 samples, 1 "
            f"configuration and 1 repeat. Got shape {arr.shape} instead."
        )
    if metric.needs_class_axis and arr.ndim != 4:
        raise InvalidParameterError(
            f"The metric {metric.name!r} needs class probabilities: 'predictions' of {door_name()} "
            f"must have shape (N, C, R, n_classes) (use predictions[:, :, None, :] for one "
            f"repeat). Got shape {arr.shape} instead: are these class labels or a single "
            f"score column?"
        )
    if not metric.needs_class_axis and arr.ndim == 4:
        what = {"labels": "class labels", "scores": "a score of the positive class",
                "values": "predicted values", "risk": "risk scores"}.get(
                    metric.prediction, "one prediction")
        raise InvalidParameterError(
            f"The metric {metric.name!r} expects {what}, one per (sample, config, repeat); "
            f"'predictions' of {door_name()} has a class axis (shape {arr.shape}). For roc_auc "
            f"pass the positive-class column, e.g. predictions[..., 1]."
        )
    return arr, class_coord


def _check_finite(arr, name):
    if arr.dtype.kind not in "fiub":
        raise InvalidParameterError(
            f"{the_parameter(name)} must be numeric. Got dtype {arr.dtype} instead."
        )
    a = arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(a)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        hint = _nan_hint() if name == "predictions" else ""
        raise InvalidParameterError(
            f"{the_parameter(name)} must not contain NaN or infinity. Found "
            f"{int(bad.sum())} such values (the first at index {where}).{hint}"
        )
    return a


def _survival_target(y):
    time = event = None
    if isinstance(y, tuple) and len(y) == 2:
        time, event = y
    elif isinstance(y, np.ndarray) and y.dtype.names and len(y.dtype.names) == 2:
        f0, f1 = y.dtype.names
        # scikit-survival's Surv arrays are (event: bool, time: float).
        if y.dtype[f0].kind == "b":
            event, time = y[f0], y[f1]
        else:
            time, event = y[f0], y[f1]
    else:
        a = np.asarray(y)
        if a.ndim == 2 and a.shape[1] == 2:
            time, event = a[:, 0], a[:, 1]
    if time is None:
        raise InvalidParameterError(
            f"{the_parameter('y')} must be a (time, event) pair of arrays, an "
            f"(N, 2) array [time, event] or a structured array for 'concordance_index'."
        )
    time = _check_finite(np.asarray(time), "y")
    event = np.asarray(event)
    if not np.all(np.isin(event, [0, 1])):
        raise InvalidParameterError(
            f"The event indicator in 'y' of {door_name()} must be boolean or 0/1. Got values "
            f"{np.unique(event)[:5]!r}."
        )
    return Target(time=time, event=event.astype(bool))


def as_target(y, metric: Metric, *, pos_label=None):
    if metric.task == "survival":
        return _survival_target(y)
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise InvalidParameterError(
            f"{the_parameter('y')} must be 1-dimensional. Got shape {arr.shape} instead."
        )
    if metric.task == "regression":
        return Target(values=_check_finite(arr, "y"))
    if arr.dtype.kind == "f":
        _check_finite(arr, "y")
    if arr.dtype.kind == "O":
        if any(v is None or (isinstance(v, float) and np.isnan(v)) for v in arr):
            raise InvalidParameterError(f"{the_parameter('y')} must not contain None or NaN.")
    classes, codes = np.unique(arr, return_inverse=True)
    if len(classes) < 2:
        raise InvalidParameterError(
            f"The metric {metric.name!r} needs at least two classes in 'y' of {door_name()}. "
            f"Got only {classes.tolist()!r}."
        )
    if metric.task == "binary" and len(classes) > 2:
        hint = " Use 'roc_auc_ovr' for multiclass AUC." if metric.name == "roc_auc" else ""
        raise InvalidParameterError(
            f"The metric {metric.name!r} is binary but 'y' of {door_name()} has {len(classes)} "
            f"classes.{hint}"
        )
    pos_code = len(classes) - 1
    if pos_label is not None:
        hits = np.flatnonzero(classes == pos_label)
        if hits.size != 1:
            raise InvalidParameterError(
                f"{the_parameter('pos_label')} must be one of the labels "
                f"{classes.tolist()!r}. Got {pos_label!r} instead."
            )
        pos_code = int(hits[0])
    return Target(codes=codes.astype(np.int64), classes=classes, pos_code=pos_code)


def encode_predictions(arr, class_coord, metric: Metric, target: Target, check_scores=False):
    """Validate predictions against what ``metric`` needs; return float64 values, or
    integer class codes for label metrics. ``check_scores``: warn when a ranking
    metric's scores are only the class labels (a user's array, not a study's)."""
    n = target.n_samples
    check_same_length("predictions", arr.shape[0], "y", n)
    if metric.prediction == "labels":
        classes = target.classes
        if arr.dtype.kind in "iu" and np.array_equal(classes, np.arange(len(classes))):
            # Labels already 0..K-1 (the common case): the codes are the array itself.
            if arr.min() < 0 or arr.max() >= len(classes):
                bad = arr[(arr < 0) | (arr >= len(classes))].flat[0]
                raise InvalidParameterError(_label_error(metric, classes, bad))
            return arr
        if (arr.dtype.kind in "fb" and len(classes) <= 127
                and np.array_equal(classes, np.arange(len(classes)))):
            # Labels 0..K-1 stored as floats (a float32 cube): the cast is the code, and a
            # value is valid iff it casts back to itself within range. Four cheap passes,
            # ~8x faster than a masked assignment per class. The cast of NaN or of an
            # out-of-range value is arbitrary: the round trip catches it.
            with np.errstate(invalid="ignore"):
                codes = arr.astype(np.int8)
            bad = codes != arr
            bad |= codes < 0
            bad |= codes >= len(classes)
            if bad.any():
                raise InvalidParameterError(_label_error(metric, classes, arr[bad].flat[0]))
            return codes
        if arr.dtype.kind in "iufb" and classes.dtype.kind in "iufb" and len(classes) <= 64:
            # One comparison pass per class: much faster than searchsorted on big cubes.
            codes = np.full(arr.shape, -1, dtype=np.int8)
            for k, c in enumerate(classes):
                codes[arr == c] = k
            if (codes < 0).any():
                raise InvalidParameterError(_label_error(metric, classes, arr[codes < 0].flat[0]))
            return codes
        flat = arr.ravel()
        if flat.dtype.kind == "O" and classes.dtype.kind != "O":
            flat = flat.astype(classes.dtype)
        idx = np.searchsorted(classes, flat)
        idx = np.clip(idx, 0, len(classes) - 1)
        ok = classes[idx] == flat
        if not np.all(ok):
            raise InvalidParameterError(_label_error(metric, classes, flat[np.flatnonzero(~ok)[0]]))
        return idx.reshape(arr.shape)
    a = _check_finite(arr, "predictions")
    if metric.needs_class_axis:
        k = len(target.classes)
        if a.shape[3] != k:
            raise InvalidParameterError(
                f"'predictions' of {door_name()} has {a.shape[3]} classes on its class axis but "
                f"'y' has {k} ({target.classes.tolist()!r})."
            )
        if class_coord is not None:
            pos = [np.flatnonzero(class_coord == c) for c in target.classes]
            if any(p.size != 1 for p in pos):
                raise InvalidParameterError(
                    f"The 'class' coordinate of 'predictions' of {door_name()} must hold y's "
                    f"labels {target.classes.tolist()!r}. Got {class_coord.tolist()!r}."
                )
            a = a[..., [int(p[0]) for p in pos]]
        if metric.prediction == "proba" and (a.min() < 0 or a.max() > 1
                                             or not np.allclose(a.sum(axis=3), 1.0)):
            raise InvalidParameterError(
                f"The metric {metric.name!r} expects class probabilities in [0, 1] that sum "
                f"to 1 over the class axis; 'predictions' of {door_name()} does not (are these "
                f"labels or decision scores?)."
            )
    elif metric.prediction == "scores" and check_scores:
        labels = target.classes
        if labels.dtype.kind in "iufb" and all(
            np.unique(a[:, c]).size <= 2 for c in range(min(a.shape[1], 50))
        ) and np.all(np.isin(a, labels.astype(np.float64))):
            from .exceptions import LabelsAsScoresWarning

            # a warning, not an error: fully grown trees' probabilities are 0 and 1
            warn(
                f"The metric {metric.name!r} expects a continuous score of the positive "
                f"class (predict_proba[:, 1] or decision_function), but 'predictions' of "
                f"{door_name()} holds only the class labels {np.unique(a).tolist()!r}: the AUC "
                f"of labels is that of a hard classifier (right if these are the "
                f"probabilities of pure leaves).", LabelsAsScoresWarning, stacklevel=4)
    return a


def _label_error(metric, classes, bad):
    bad = getattr(bad, "item", lambda: bad)()
    is_nan = isinstance(bad, float) and bad != bad
    return (
        f"The metric {metric.name!r} expects predicted class labels drawn from y's labels "
        f"{classes.tolist()!r}, but 'predictions' of {door_name()} holds {bad!r}. "
        + (_nan_hint().strip() if is_nan and _nan_hint()
           else "Pass the output of predict, not probabilities or scores.")
    )


def _nan_hint():
    """What a NaN prediction means to the door the user called, when it can take it."""
    return (" NaN marks a cell not predicted (an incomplete CV): bbc(include_incomplete=True) "
            "takes it." if door_name() == "bbc" else "")


def per_sample_and_repeat(values, name, n_samples, n_repeats, what):
    """``values`` as an (N, R) array: one ``what`` per sample and repeat; a 1-d array is
    the one repeat's."""
    a = np.asarray(values)
    if a.ndim == 1:
        a = a[:, None]
    if a.shape != (n_samples, n_repeats):
        raise InvalidParameterError(
            f"{the_parameter(name)} must have shape ({n_samples},) or "
            f"({n_samples}, {n_repeats}) ({what} per sample and repeat). Got shape "
            f"{np.shape(values)} instead.")
    return a


def as_folds(folds, n_samples, n_repeats, *, required=True):
    """Folds (N, R) int64, or None when not given and not ``required`` (a bool, or the
    reason it is required, e.g. "with unit='fold'", said in the error)."""
    if folds is None:
        if required:
            why = f" {required}" if isinstance(required, str) else ""
            raise InvalidParameterError(f"{the_parameter('folds')} is required{why}.")
        return None
    if _is_dataarray(folds):
        order = [d for d in ("sample", "repeat") if d in folds.dims]
        folds = folds.transpose(*order).values
    f = per_sample_and_repeat(folds, "folds", n_samples, n_repeats, "one fold id")
    if f.dtype.kind == "f":
        if not np.all(np.isfinite(f)) or not np.all(f == np.round(f)):
            raise InvalidParameterError(f"{the_parameter('folds')} must hold integer fold ids.")
        f = f.astype(np.int64)
    if f.dtype.kind not in "iu":
        raise InvalidParameterError(
            f"{the_parameter('folds')} must hold integer fold ids. Got dtype "
            f"{f.dtype} instead."
        )
    for r in range(n_repeats):
        if np.unique(f[:, r]).size < 2:
            raise InvalidParameterError(
                f"{the_parameter('folds')} must define at least 2 folds in every "
                f"repeat; repeat {r} has {np.unique(f[:, r]).size}."
            )
    return f.astype(np.int64)


def as_bootstrap_indices(idx, n, name_n, any_width=False):
    """In-bag positions (B, n) in [0, n), int64; ``any_width``: (B, M), any M >= 1."""
    a = np.asarray(idx)
    if a.ndim != 2 or (a.shape[1] != n and not any_width) or min(a.shape) < 1:
        raise InvalidParameterError(
            f"{the_parameter('bootstrap_indices')} must have shape (B, "
            f"{'M' if any_width else n}) (in-bag {name_n} positions of each bootstrap). Got "
            f"shape {a.shape} instead."
        )
    if a.dtype.kind not in "iu" or a.min() < 0 or a.max() >= n:
        raise InvalidParameterError(
            f"{the_parameter('bootstrap_indices')} must hold integer positions in "
            f"[0, {n}). Got values in [{a.min()}, {a.max()}] of dtype {a.dtype}."
        )
    return a.astype(np.int64)


def as_fold_indices(idx, sizes):
    """Explicit fold-level bootstrap indices (B, K): positions among a repeat's K folds,
    so every repeat must have K (``sizes``: each repeat's fold count)."""
    if len(set(sizes)) > 1:
        raise InvalidParameterError(
            f"{the_parameter('bootstrap_indices')} needs every repeat to have the "
            f"same number of folds (positions are within a repeat's folds). Got repeats of "
            f"{sorted(set(sizes))} folds.")
    return as_bootstrap_indices(idx, sizes[0], "fold")


def worded_elsewhere(message):
    """An :class:`InvalidParameterError` of a message already in the one wording (scikit-
    learn's own parameter validation words it so), for callers that translate one."""
    return InvalidParameterError(message)


def reject_unknown(kwargs, allowed, *, what="keyword argument"):
    """TypeError naming the first keyword of ``kwargs`` that the door the user called does
    not take, as Python words it."""
    for k in kwargs:
        if k not in allowed:
            raise InvalidParameterError(f"{door_name()} got an unexpected {what} {k!r} (it takes "
                                        f"{', '.join(repr(a) for a in allowed)}).")


def plain(v):
    """A label as a plain Python value (for messages and JSON)."""
    return v.item() if isinstance(v, np.generic) else v


def check_X(X):
    """X as the tasks index it, as scikit-learn's searches take it (``indexable``): a
    DataFrame (or any container with ``iloc``: rows by position), an array of any number of
    dimensions, a list (a text pipeline's documents) and a CSR/CSC matrix are kept as they
    are (another sparse format becomes CSR); anything else becomes an array. NaN and inf
    are allowed — whether the estimator takes them is its business, as in ``GridSearchCV``.
    At least two samples."""
    import scipy.sparse as sp
    from sklearn.utils.validation import check_array

    if X is None:
        raise InvalidParameterError(f"{the_parameter('X')} is required. Got None.")
    try:
        if sp.issparse(X):
            X = check_array(X, accept_sparse=("csr", "csc"), dtype=None,
                            ensure_all_finite=False, ensure_min_samples=2, input_name="X")
        elif not hasattr(X, "iloc") and not isinstance(X, (np.ndarray, list, tuple)):
            X = np.asarray(X)
        n = _n_samples(X)
    except (TypeError, ValueError) as e:  # scikit-learn's words, said as ours
        raise InvalidParameterError(f"{the_parameter('X')} is invalid: {e}") from None
    if n is None:
        raise InvalidParameterError(f"{the_parameter('X')} is invalid: a 0-d array "
                                    f"({X!r}) holds no samples.")
    if n < 2:
        raise InvalidParameterError(
            f"{the_parameter('X')} is invalid: it has {n} sample(s), a minimum of 2 is required.")
    return X


def _n_samples(X):
    """The number of samples (rows) of X; None for a 0-d array (a TypeError from
    ``len`` for an object without length)."""
    shape = getattr(X, "shape", None)
    if shape is not None and not callable(shape):
        return int(shape[0]) if len(shape) else None
    return len(X)


def check_cv_data(estimator, X, y, groups, metric, n_splits, n_repeats, error_score, pos_label,
                  *, kfold=True):
    """``(target, n_splits, n_repeats, groups)`` of a cross-validation study, checked.
    ``kfold=False``: the splits are the user's (a splitter or pairs), so the numbers of
    folds and repeats, and what K-fold needs of the classes and groups, are not checked
    here."""
    if not hasattr(estimator, "fit") or not hasattr(estimator, "get_params"):
        raise InvalidParameterError(
            f"{the_parameter('estimator')} must be a scikit-learn estimator. Got "
            f"{type(estimator).__name__} instead."
        )
    if metric.task == "survival":
        raise InvalidParameterError(
            f"The metric {metric.name!r} is not supported by {door_name()}: scikit-learn has no "
            f"survival estimators; compute risk scores yourself and call bbc_dask.bbc."
        )
    n = _n_samples(X) or 0
    y_arr = np.asarray(y)
    if y_arr.ndim != 1:
        raise InvalidParameterError(f"{the_parameter('y')} must be 1-dimensional. Got shape {y_arr.shape}.")
    check_same_length("X", n, "y", y_arr.shape[0])
    if kfold:
        n_splits = check_int(n_splits, "n_splits", low=2, high=max(2, n))
        n_repeats = check_int(n_repeats, "n_repeats")
    target = as_target(y_arr, metric, pos_label=pos_label)
    if groups is not None:
        groups = np.asarray(groups)
        if groups.shape != (n,):
            raise InvalidParameterError(f"{the_parameter('groups')} must have shape ({n},). Got {groups.shape}.")
        if kfold and np.unique(groups).size < n_splits:
            raise InvalidParameterError(
                f"{the_parameter('groups')} has {np.unique(groups).size} groups; "
                f"{spelled('n_splits')}={n_splits} needs at least as many."
            )
    elif kfold and metric.is_classification:
        counts = np.bincount(target.codes, minlength=len(target.classes))
        small = np.flatnonzero(counts < n_splits)
        if small.size:
            k = small[0]
            raise InvalidParameterError(
                f"The class {plain(target.classes[k])!r} of 'y' has {counts[k]} members, fewer "
                f"than {spelled('n_splits')}={n_splits}: stratified folds need a member of every class in "
                f"every fold (use fewer splits) in {door_name()}."
            )
    if not (isinstance(error_score, str) and error_score == "raise"):
        if not (isinstance(error_score, float) and math.isnan(error_score)):
            raise InvalidParameterError(
                f"{the_parameter('error_score')} must be np.nan or 'raise' (a failing "
                f"configuration gets NaN predictions). Got {error_score!r} instead."
            )
    return target, n_splits, n_repeats, groups
