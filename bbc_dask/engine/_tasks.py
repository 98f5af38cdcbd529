"""Worker-side functions: plain, picklable, no client import, no bootstrap statistics.

A task fits a block of configurations on one training set (repeat, fold) and predicts
its test fold (dask-ml keeps its ``methods.py`` apart from the search for the same reason).
"""
from __future__ import annotations

import dataclasses
import threading
import time
import traceback
import weakref
from collections import OrderedDict

import numpy as np
from sklearn.base import clone

from .. import _sklearn_compat as compat
from .. import _tuning as tuning
from ..exceptions import StoreFullError, StoreLockedError
from ._callbacks import FitCallbacks
from ._fit_warnings import collected_warnings
from ._messages import BlockFits, BlockOutcome, OuterOutcome, Raised, StoreProblem, TaskOutcome

__all__ = ["fit_outer", "fit_predict_block", "fit_write_blocks", "method_problem", "refit",
           "response_method", "warm_up"]


def configured(estimator, params):
    """A fresh estimator with ``params``; parameter values that are estimators are cloned
    too, so a grid's objects are never fitted or mutated (as in scikit-learn's search)."""
    return clone(estimator).set_params(**{k: clone(v, safe=False) for k, v in params.items()})


def response_order(metric):
    """The prediction methods ``metric`` takes, in the order they are tried."""
    if metric.response:  # a scikit-learn scorer's own order
        return tuple(metric.response)
    if metric.prediction == "scores":
        return ("decision_function", "predict_proba")  # scikit-learn's roc_auc scorer order
    if metric.prediction == "proba":
        return ("predict_proba",)
    return ("predict",)


def stored_as(metric):
    """What a study of ``metric`` stores: ``(response methods in order, class axis)``.
    Two metrics with the same value score the same stored predictions (one of them a
    multimetric search's extra score)."""
    return response_order(metric), metric.needs_class_axis


def response_method(estimator, metric):
    """Which prediction method ``metric`` needs from a configured estimator, or None."""
    for name in response_order(metric):
        if hasattr(estimator, name):
            return name
    return None


def method_problem(est, metric, unfitted=False):
    """Why ``est`` cannot give what ``metric`` needs, or None. ``unfitted``: only what
    fitting cannot change. A method may come with the fit, as scikit-learn's scorers find
    it on the fitted estimator: a ``StackingClassifier``'s ``predict`` is its fitted final
    estimator's; so, on an unfitted estimator, a method its class defines but the instance
    does not offer yet is no problem."""
    from sklearn.base import is_classifier

    if unfitted and may_gain_method(est, metric):
        pass
    elif response_method(est, metric) is None:
        need = " or ".join(metric.response) if metric.response else {
            "scores": "decision_function or predict_proba", "proba": "predict_proba"}.get(
            metric.prediction, "predict")
        return f"has no {need}, which the metric {metric.name!r} needs"
    # labels from predict are scored against y's classes whatever the estimator is (as
    # scikit-learn scores an outlier detector's or a duck-typed classifier's); scores and
    # probabilities are read by the classes a classifier learnt
    if metric.is_classification and not is_classifier(est) and \
            response_method(est, metric) != "predict":
        return f"is not a classifier, and the metric {metric.name!r} reads a classifier's scores"
    return None


def may_gain_method(est, metric):
    """Whether ``est`` lacks every method ``metric`` takes but the class that would give
    it (a pipeline's final step's) defines one: a method available only under a condition
    (scikit-learn's ``available_if``), which a fit may meet."""
    if response_method(est, metric) is not None:
        return False
    final = est
    while isinstance(getattr(final, "steps", None), list) and final.steps:  # a Pipeline
        final = final.steps[-1][1]
    if final is None or isinstance(final, str):  # "passthrough"
        return False
    return any(hasattr(type(final), n) for n in response_order(metric))


def take_rows(X, idx):
    """The rows ``idx`` of ``X`` or ``y``: by position for a DataFrame or Series (or any
    container with ``iloc``), by NumPy indexing for an array or a sparse matrix, a list
    of those items for a list (scikit-learn's ``_safe_indexing``: what its searches give
    the estimator) — the one row indexer of the package's fits."""
    if hasattr(X, "iloc"):
        return X.iloc[idx]
    if isinstance(X, np.ndarray) or hasattr(X, "tocsr"):
        return X[idx]
    return compat.safe_indexing(X, idx)


def n_rows(X):
    """The number of rows of ``X`` (an array, a sparse matrix, a DataFrame or a list)."""
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None and not callable(shape) else len(X)


def is_pairwise(estimator):
    """Whether ``estimator`` takes a precomputed kernel or distance matrix (its
    ``pairwise`` tag): its training set is then the rows *and* columns of the training
    samples, its test set the test rows' columns of them, as scikit-learn splits it."""
    from sklearn.utils import get_tags

    try:
        return bool(get_tags(estimator).input_tags.pairwise)
    except (AttributeError, TypeError, ValueError):  # an estimator without tags
        return False


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
        if n_classes_axis:  # a scorer's response per class, in the study's class order
            return _per_class(out, est_classes, classes)
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


def _per_class(decision, est_classes, classes):
    """A decision function as one column per study class: a binary ``d`` (the score of
    ``est_classes[1]``) as ``-d, d``, so each class's column is its own score (what
    scikit-learn's scorer takes for either positive class); a multiclass one's columns
    placed by class, NaN for a class the fold's model never saw (it cannot be scored)."""
    if decision.ndim == 1:
        decision = np.stack([-decision, decision], axis=1)
    full = np.full((decision.shape[0], len(classes)), np.nan)
    full[:, np.searchsorted(classes, est_classes)] = decision
    return full


#: The last split each worker built, per thread: consecutive tasks of a worker are
#: mostly other configuration blocks of the same (repeat, fold), and copying X's training
#: rows cost as much as the rest of a cheap task (docs/performance.md, "Tuning constants").
_SPLITS = threading.local()


def _split(X, y, folds, r, k, pairwise=None):
    """(X_train, y_train, X_test, y_test, test) of repeat ``r``, fold ``k`` (``test``
    the test rows, in increasing order: the fold's slot order); the last one of this
    thread reused when X, y, the folds and ``pairwise`` are the same. ``pairwise``: an
    estimator whose X is a square kernel or distance matrix (:func:`is_pairwise`), which
    scikit-learn's ``_safe_split`` cuts to the training samples' columns."""
    key = (r, k, pairwise is not None)
    last = getattr(_SPLITS, "last", None)
    if last is not None and last[0] == key and all(ref() is obj for ref, obj in
                                                   zip(last[1], (X, y, folds))):
        return last[2]
    test = np.flatnonzero(folds[:, r] == k)
    # trained on the other folds of the repeat: a sample with id -1 is in none of them
    # (nested CV's inner partitions leave the outer test set out of training and testing)
    train = np.flatnonzero((folds[:, r] != k) & (folds[:, r] >= 0))
    if pairwise is not None:
        out = (compat.safe_split(pairwise, X, None, train)[0], take_rows(y, train),
               compat.safe_split(pairwise, X, None, test, train)[0], take_rows(y, test), test)
    else:
        out = (take_rows(X, train), take_rows(y, train), take_rows(X, test), take_rows(y, test),
               test)
    _SPLITS.last = None
    # Only numpy arrays are kept, read-only: an estimator that writes into its input
    # (copy=False) must not change the next task's data. Read-only inputs are what
    # scikit-learn's own parallel search passes (joblib memmaps), so estimators copy then.
    if all(type(a) is np.ndarray for a in out) and \
            out[0].nbytes + out[2].nbytes <= tuning.SPLIT_CACHE_BYTES:
        for a in out:
            a.flags.writeable = False
        _SPLITS.last = (key, tuple(weakref.ref(o) for o in (X, y, folds)), out)
    return out


def _prefix_steps(est):
    """The transformer steps before the last step of a plain scikit-learn ``Pipeline``,
    or None when ``est`` is anything else (a subclass, a cached pipeline, transformed
    inputs, no transformer, a passthrough final step): only then is fitting the steps
    one by one known to be what ``Pipeline.fit`` does."""
    from sklearn.pipeline import Pipeline

    if type(est) is not Pipeline or est.memory is not None or \
            getattr(est, "transform_input", None) is not None:
        return None
    final = est.steps[-1][1]
    if any(isinstance(s, str) and s != "passthrough" for _, s in est.steps):
        return None  # Pipeline.fit says what is wrong with it
    steps = [s for _, s in est.steps[:-1] if s is not None and not isinstance(s, str)]
    if final is None or isinstance(final, str) or not steps or \
            not all(hasattr(s, "fit_transform") and hasattr(s, "transform") for s in steps):
        return None
    return steps


def _kept_outputs(steps, X_train):
    """``(key, outputs)`` when the transformer ``steps`` may reuse their outputs on
    ``X_train`` (``outputs``: this thread's kept outputs of this split, by the steps'
    ``key``), or None."""
    from dask.base import tokenize

    # the unfitted steps' parameters, as Dask names its tasks' inputs: steps it cannot
    # name deterministically (not picklable) get a token of their own, so never shared
    key = tokenize(steps)
    kept = getattr(_SPLITS, "prefix", None)
    if kept is None or kept[0]() is not X_train:  # another split: forget the old outputs
        try:
            kept = _SPLITS.prefix = (weakref.ref(X_train), OrderedDict())
        except TypeError:  # data that cannot be weakly referenced: no reuse
            _SPLITS.prefix = None
            return None
    return key, kept[1]


def _fit_shared(est, X_train, y_train, X_test, fit_params=None, routing=False, whole=False):
    """Fit ``est`` on the training rows; return the fitted estimator that predicts and the
    test rows it takes.

    For a pipeline, the transformer steps' outputs on this split are kept per thread (up
    to ``bbc_dask.split-cache-bytes``, least recently used dropped first) and reused by the
    next configuration whose transformer steps have the same parameters: a grid over the
    final step (an SVC's C after a scaler and a PCA) fits its transformers once per fold
    and worker, as dask-ml's search does. The reuse is exact: it makes the calls
    ``Pipeline.fit`` and ``Pipeline.decision_function`` make (``fit_transform`` of each
    step in turn, the final step on their output), on identically parameterised steps.
    With ``fit_params`` the estimator's own ``fit`` takes them (a pipeline routes them to
    its steps, with scikit-learn's metadata routing on if ``routing``): nothing is reused.
    ``whole``: the whole estimator is fitted (a scorer takes it): nothing is reused.
    """
    steps = None if fit_params or whole else _prefix_steps(est)
    found = None if steps is None else _kept_outputs(steps, X_train)
    if found is None:
        _fit(est, X_train, y_train, fit_params, routing)
        return est, X_test
    token, outputs = found
    final = est.steps[-1][1]
    if token in outputs:
        outputs.move_to_end(token)
        Xt, Xt_test = outputs[token]
    else:
        Xt, Xt_test = X_train, X_test
        for step in steps:  # as Pipeline._fit_transform_one, then Pipeline's predict path
            Xt = step.fit_transform(Xt, y_train)
        for step in steps:
            Xt_test = step.transform(Xt_test)
        if type(Xt) is np.ndarray and type(Xt_test) is np.ndarray and \
                Xt.nbytes + Xt_test.nbytes <= tuning.SPLIT_CACHE_BYTES:
            # read-only like the split: a final step must not change what the next reuses
            Xt.flags.writeable = Xt_test.flags.writeable = False
            outputs[token] = (Xt, Xt_test)
            while sum(a.nbytes + b.nbytes for a, b in outputs.values()) > tuning.SPLIT_CACHE_BYTES:
                outputs.popitem(last=False)  # least recently used first
    final.fit(Xt, y_train)
    return final, Xt_test


def _fit(est, X, y, fit_params, routing):
    """``est.fit(X, y, **fit_params)`` under the metadata routing setting the parameters
    were given with: scikit-learn's configuration is per thread, and a worker's is not
    the driver's."""
    if not fit_params:
        return est.fit(X, y)
    import sklearn

    with sklearn.config_context(enable_metadata_routing=routing):
        return est.fit(X, y, **fit_params)


def fit_predict_block(estimator, params_block, X_train, y_train, X_test, scoring, fit=None,
                      fit_scoring=None, pairwise=None, contexts=None):
    """Fit each configuration of the block on ``X_train, y_train`` (with ``fit`` =
    ``(parameters already sliced to the training rows, metadata routing on)``, or None)
    and predict ``X_test``, as ``scoring`` (a :class:`~._messages.TaskScoring`) says; with
    ``fit_scoring`` (:class:`FitScoring`), score each fitted model too (``fit_score``,
    (n_block, scorers): a configuration whose scorer raises fails as one whose fit
    raises, as the fit and its scores are one cell).

    The response method (``decision_function``, ``predict_proba`` or ``predict``) is
    chosen here per configured estimator, as scikit-learn's scorers do; a configuration
    that cannot give what the metric needs fails like one that raises. ``pairwise``:
    whether the split was cut as a square kernel's (:func:`is_pairwise`; None: not
    checked); a configuration whose own tag says otherwise fails, as its X would be wrong.
    ``contexts``: scikit-learn's callback context of each configuration's fit (or None),
    whose auto-propagated callbacks the fit propagates to the estimator (see
    :mod:`._callbacks`); the whole estimator is then fitted, as ``GridSearchCV`` fits it.

    Returns a :class:`~._messages.BlockFits` (only ``raised`` when ``error_score ==
    "raise"`` and a configuration failed).
    """
    from ..metrics import get_metric

    m = get_metric(scoring.metric)
    n_block = len(params_block)
    shape = (n_rows(X_test), n_block) + ((scoring.n_classes_axis,) if scoring.n_classes_axis else ())
    values = np.full(shape, np.nan)
    fit_time = np.full(n_block, np.nan)
    score_time = np.full(n_block, np.nan)
    failed = np.zeros(n_block, dtype=bool)
    errors = [""] * n_block
    scores = None if fit_scoring is None else np.full((n_block, fit_scoring.width), np.nan)
    for j, params in enumerate(params_block):
        t0 = time.perf_counter()
        try:
            est = configured(estimator, params)
            problem = method_problem(est, m, unfitted=True)
            if problem:
                raise TypeError(f"The estimator {problem}.")
            if pairwise is not None and is_pairwise(est) != pairwise:
                raise ValueError(
                    "The estimator's pairwise tag (a precomputed kernel or distance matrix "
                    "as X) differs from the grid's first configuration's in its block: "
                    "search such configurations in separate searches.")
            ctx = None if contexts is None else contexts[j]
            with FitCallbacks.around(est, ctx):
                fitted, X_pred = _fit_shared(est, X_train, y_train, X_test,
                                             *(fit or ({}, False)),
                                             whole=scores is not None or contexts is not None)
            t1 = time.perf_counter()
            # chosen on the fitted estimator, as scikit-learn's scorers choose it
            method = response_method(fitted, m)
            if method is None:
                raise TypeError(f"The fitted estimator {method_problem(fitted, m)}.")
            values[:, j] = _response(fitted, method, X_pred, scoring.classes,
                                     scoring.pos_code, scoring.n_classes_axis)
            if scores is not None:
                scores[j] = fit_scoring.score(est, X_train, y_train, X_test)
            score_time[j] = time.perf_counter() - t1
        except Exception as exc:  # scikit-learn's error_score semantics
            text = f"{type(exc).__name__}: {exc}".strip()  # the class's name, not its module
            if isinstance(scoring.error_score, str) and scoring.error_score == "raise":
                return BlockFits(raised=Raised(j, text, traceback.format_exc(), _shippable(exc)))
            values[:, j] = np.nan
            failed[j] = True
            errors[j] = text
        fit_time[j] = time.perf_counter() - t0
    score_time[failed] = 0.0
    if scores is not None:
        scores[failed] = np.nan
    return BlockFits(values, fit_time, score_time, failed, tuple(errors), scores)


def _shippable(exc):
    """``exc`` without its traceback if it survives a pickle round trip (an exception
    whose class takes other arguments than its message may not), else None."""
    import pickle

    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any failure: the text alone travels
        return None
    return exc.with_traceback(None)


def _fold_target(y_test, classes, pos_code):
    """The fold's encoded target as the study encodes its stored y (class codes 0..K-1
    and the study's positive class, or values)."""
    from ..metrics import Target

    y_test = np.asarray(y_test)
    if classes is None:
        return Target(values=y_test.astype(np.float64))
    return Target.of_codes(np.searchsorted(classes, y_test), len(classes), pos_code)


def _fold_scores(values, failed, target, metric, index=None, n=None, sample_block=None):
    """The metric of each trained configuration on this fold (NaN for failed ones, or
    where the metric is undefined or the predictions cannot be scored); ``index`` the
    fold's positions among the ``n`` samples, in blocks of ``sample_block`` (see
    :func:`~bbc_dask.stats.fold_scores`)."""
    from .. import _validation as validation
    from ..metrics import get_metric
    from ..stats import fold_scores

    m = get_metric(metric)
    out = np.full(values.shape[1], np.nan)

    def score(cols):
        # every configuration trained (the usual case): a view, not a copy of the block,
        # for the package's own metrics (they never write into their input; a user's
        # scorer function might, and the block is written to the store after this)
        whole = cols.size == values.shape[1] and m.kind != "general"
        block = (values if whole else values[:, cols])[:, :, None]
        if m.prediction == "labels":
            enc = validation.encode_predictions(block, None, m, target)
        elif np.isfinite(block).all():
            # scores and probabilities come from the estimator as the study stores them;
            # the user-input heuristics (e.g. "these look like labels") do not apply
            enc = block
        else:
            raise ValueError("non-finite predictions")
        return fold_scores(m, target, enc, index, n, sample_block)

    ok = np.flatnonzero(~failed)
    try:
        out[ok] = score(ok)
    except (ValueError, TypeError, FloatingPointError):
        for j in ok:  # one configuration's bad predictions do not hide the others' scores
            try:
                out[j] = score(np.array([j]))[0]
            except (ValueError, TypeError, FloatingPointError):
                pass
    return out


def _train_params(X, shipped, folds, r, k, y_test=None):
    """``(fit parameters, fit scoring)`` of (repeat ``r``, fold ``k``): the
    :class:`~._messages.ShippedFit` sliced to the split's rows as scikit-learn's search
    slices them (array-likes of one row per sample; the rest as given); None for what
    there is not."""
    if shipped is None:
        return None, None
    train = np.flatnonzero((folds[:, r] != k) & (folds[:, r] >= 0))  # as _split's
    scoring = shipped.scoring
    if scoring is not None:
        scoring = scoring.sliced(X, y_test, train, np.flatnonzero(folds[:, r] == k))
    fit = (compat.check_method_params(X, shipped.params, train), shipped.routing) \
        if shipped.params else None
    return fit, scoring


def _fit_block(estimator, params_block, X, y, folds, scoring, r, k, shipped=None, configs=None):
    """Fit and predict one block (configurations ``configs``) on (repeat ``r``, fold
    ``k``) and score its fold: the ledger's :class:`~._messages.BlockOutcome` and the
    predictions (or the block's :class:`~._messages.Raised` and None)."""
    first = configured(estimator, params_block[0]) if params_block else estimator
    pairwise = is_pairwise(first)
    X_train, y_train, X_test, y_test, test = _split(X, y, folds, r, k,
                                                    first if pairwise else None)
    callbacks = None if shipped is None else shipped.callbacks
    contexts = None if callbacks is None or configs is None else \
        [callbacks.context(int(c), r, k) for c in configs]
    res = fit_predict_block(estimator, params_block, X_train, y_train, X_test, scoring,
                            *_train_params(X, shipped, folds, r, k, y_test), pairwise=pairwise,
                            contexts=contexts)
    if res.raised is not None:
        return res.raised, None
    t0 = time.perf_counter()
    fold_score = _fold_scores(res.values, res.failed,
                              _fold_target(y_test, scoring.classes, scoring.pos_code),
                              scoring.metric, test, folds.shape[0], scoring.sample_block)
    # a block is scored at once: each cell its share (GridSearchCV's holds its scorer's
    # call); a failed fit scored nothing (0, as GridSearchCV's: its fit time is the time
    # until it failed)
    score_time = np.where(res.failed, 0.0,
                          res.score_time + (time.perf_counter() - t0) / max(1, len(params_block)))
    return BlockOutcome(res.fit_time, res.fit_time - res.score_time, score_time, res.failed,
                        res.errors, fold_score, res.fit_score), res.values


def fit_write_blocks(estimator, params_blocks, X, y, folds, scoring, writer, r, k, placements,
                     shipped=None):
    """Fit, predict, write and score the blocks of (repeat ``r``, fold ``k``), collecting
    the fits' warnings (``warnings`` of the :class:`~._messages.TaskOutcome`:
    ``(module, class, text, count)`` each); see :func:`_fit_write_blocks`."""
    with collected_warnings() as seen:
        out = _fit_write_blocks(estimator, params_blocks, X, y, folds, scoring, writer, r, k,
                                placements, shipped)
    return dataclasses.replace(out, warnings=tuple((*key, n) for key, n in seen.items()))


def _fit_write_blocks(estimator, params_blocks, X, y, folds, scoring, writer, r, k, placements,
                      shipped=None):
    """Fit blocks of configurations on the training samples of (repeat ``r``, fold ``k``),
    predict the fold and write the predictions straight into their chunks of the cube
    (a block's chunks, each written whole); return only what the ledger records, never
    the predictions.

    The engine groups blocks when fits are short, so that Dask's per-task cost stays small
    next to the work. ``scoring`` a :class:`~._messages.TaskScoring` (its ``sample_block``
    the client's, for the fold scores); ``writer`` the cube's
    :class:`~bbc_dask.cube.ChunkWriter`; ``placements`` a :class:`~._messages.Placement`
    per block. The
    training and test rows come from ``folds`` (N, R), shipped once per worker;
    ``shipped`` (a :class:`~._messages.ShippedFit`, shipped as X) is sliced to the
    training rows.

    Returns a :class:`~._messages.TaskOutcome`: with ``error_score="raise"`` the first
    error (``raised``, nothing written); when the store is full or the run lost its lock,
    ``store_problem`` (returned, not raised: the run must stop, not retry, and the driver
    says so without worker tracebacks).
    """
    t0 = time.perf_counter()
    parts, writes = [], []
    for params, place in zip(params_blocks, placements):
        _unless_leaving()
        res, values = _fit_block(estimator, params, X, y, folds, scoring, r, k, shipped,
                                 place.first + np.asarray(place.columns))
        if values is None:  # error_score="raise": the study stops; nothing is written
            return TaskOutcome(raised=res, raised_block=len(parts))
        parts.append(res)
        writes.append((place.first, place.columns, values))
    _unless_leaving()
    try:
        crcs = writer.write_many(r, k, writes)
    except (StoreFullError, StoreLockedError) as exc:
        return TaskOutcome(store_problem=StoreProblem(type(exc).__name__, str(exc)))
    return TaskOutcome(tuple(dataclasses.replace(part, crc=int(crc)) for part, crc in zip(parts, crcs)),
                       time.perf_counter() - t0)


def _unless_leaving():
    """Hands the task back to the scheduler (``distributed.Reschedule``) when its worker
    is being retired (an autoscaler's scale-down, ``retire_workers``): distributed then
    runs it on another worker whatever this one does, so it stops at the next block
    rather than fitting on, and does not write once it has seen the retirement — a write
    landing after the other copy's could replace the chunk whose checksum the ledger
    records (a retirement that begins during the write itself is not seen; ``verify``
    would name such a chunk). Its blocks are recorded once, from the copy that
    finishes."""
    try:
        from distributed import Reschedule, get_worker

        status = get_worker().status
    except (ImportError, ValueError):  # not in a Dask worker's task
        return
    if status.name not in ("running", "paused"):
        raise Reschedule()


def warm_up(estimator):
    """Nothing, once this worker has imported what the run's tasks need: scikit-learn and
    the estimator's own modules (unpickling ``estimator`` imports them), Zarr and the
    chunk codecs, the metrics. Submitted to every worker when a run starts, so that a
    fresh worker imports (~1.3 s, scikit-learn most of it) while the driver creates the
    store and ships the data, not after the first task arrives (a worker started with
    the preload :mod:`bbc_dask.preload`, as ``make_client``'s are, has them already)."""
    from ..preload import import_study_modules

    import_study_modules()


def refit(estimator, params, X, y, shipped=None):
    """Fit the selected configuration on all data with the fit parameters of ``shipped``
    (a :class:`~._messages.ShippedFit`, all rows): the final model and the seconds its
    fit took."""
    t0 = time.perf_counter()
    fit = (shipped.params, shipped.routing) if shipped is not None else ({}, False)
    model = configured(estimator, params)
    callbacks = None if shipped is None else shipped.callbacks
    with FitCallbacks.around(model, None if callbacks is None else callbacks.refit):
        _fit(model, X, y, *fit)  # the estimator, whatever its fit returns (GridSearchCV's)
    return model, time.perf_counter() - t0


def fit_outer(estimator, params, train, test, scoring, X, y):
    """Nested CV's outer step: fit the configuration an outer fold's inner CV selected
    on the outer training rows ``train``, predict the outer test rows ``test`` and score
    them as a fold of the study is scored: an :class:`~._messages.OuterOutcome`."""
    est = configured(estimator, params)
    if is_pairwise(est):
        X_train, X_test = (compat.safe_split(est, X, None, train)[0],
                           compat.safe_split(est, X, None, test, train)[0])
    else:
        X_train, X_test = take_rows(X, train), take_rows(X, test)
    res = fit_predict_block(estimator, [params], X_train, take_rows(y, train), X_test, scoring)
    if res.raised is not None:
        return OuterOutcome(raised=res.raised)
    score = _fold_scores(res.values, res.failed,
                         _fold_target(take_rows(y, test), scoring.classes, scoring.pos_code),
                         scoring.metric, test, len(y), scoring.sample_block)[0]
    return OuterOutcome(float(score), float(res.fit_time[0]), res.errors[0])
