"""The general family: any scikit-learn scorer (a name of
:func:`sklearn.metrics.get_scorer_names` or a :func:`sklearn.metrics.make_scorer`
object) evaluated on a study's stored out-of-sample predictions.

What is stored is what the scorer's response method returns: class labels (as class
codes) or regression values for ``predict``; for ``predict_proba`` and
``decision_function``, one column per class (the class axis, classes in sorted label
order) — the estimator's probabilities, or its decision values (a binary decision
function ``d`` of ``classes_[1]`` is stored as ``-d, d``, so that the column of either
class is its own score). A score is then the scorer's function on the labels as class
codes and the predictions as scikit-learn's scorer passes them: the positive class's
column in a binary problem, every column otherwise. The positive class is the study's
(``pos_label``), given to every function that takes a ``pos_label`` the scorer does not
set itself to None.

A bootstrap with count weights ``w`` is scored on its rows with ``w > 0``: with
``sample_weight=w`` for the functions listed in :data:`WEIGHT_IS_REPEAT` (for each of
them, weights equal repeated rows; ``tests/test_scorers.py`` checks it), on the rows
repeated ``w`` times otherwise. Where the function raises or returns a non-finite value,
the score is NaN: undefined, as BBC treats an undefined in-bag or out-of-bag score of
the kernels.

It is a Python loop of scikit-learn calls, one per (bootstrap, configuration, repeat):
BBC with 1,000 bootstraps on 500 samples and 50 configurations took 157 s with
``f1_macro`` (scikit-learn's label metrics cost milliseconds a call) and 16 s with
``neg_median_absolute_error``, against 1.6 s with the registered ``f1`` kernel (one core of
a busy 2-core machine). The chunked path does not take it.
"""
from __future__ import annotations

import contextlib
import inspect
import json
import threading
import warnings

import numpy as np

from .. import _sklearn_compat as compat
from ..exceptions import InvalidParameterError
from ._prepared import _Prepared

#: Functions of :mod:`sklearn.metrics` whose ``sample_weight`` equals repeating rows:
#: scored with weights (faster); any other function is scored on repeated rows.
WEIGHT_IS_REPEAT = frozenset({
    "accuracy_score", "balanced_accuracy_score", "f1_score", "fbeta_score",
    "precision_score", "recall_score", "jaccard_score", "matthews_corrcoef",
    "cohen_kappa_score", "hamming_loss", "zero_one_loss", "log_loss", "brier_score_loss",
    "d2_brier_score", "d2_log_loss_score", "average_precision_score", "roc_auc_score",
    "top_k_accuracy_score", "mean_squared_error", "root_mean_squared_error",
    "mean_absolute_error", "mean_squared_log_error", "root_mean_squared_log_error",
    "mean_absolute_percentage_error", "mean_gamma_deviance", "mean_poisson_deviance",
    "mean_tweedie_deviance", "r2_score", "explained_variance_score",
})

#: Modules of scikit-learn's metric functions, by the task they score.
_REGRESSION_MODULES = compat.REGRESSION_METRIC_MODULES
_CLUSTER_MODULES = ("sklearn.metrics.cluster",)


def _sklearn_function(func):
    """The name of ``func`` when it is a public function of :mod:`sklearn.metrics`
    itself (the explicit allowlist a store may rebuild from), else None."""
    import sklearn.metrics as skm

    name = getattr(func, "__name__", None)
    if (isinstance(name, str) and name in getattr(skm, "__all__", ())
            and getattr(skm, name, None) is func):
        return name
    return None


def _accepts(func, name):
    try:
        return name in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def uses_positive_class(metric, n_classes):
    """Whether ``metric`` scores one of ``n_classes`` classes as the positive one (what a
    report must name with string labels): a binary metric of the registry (``roc_auc``,
    ``f1``); on two classes, a scorer whose function takes a ``pos_label`` it does not
    set to None (averaged over classes, with ``average`` other than ``"binary"`` where
    that is its default, it does not), or that reads one column of a response per class
    (the positive class's, as :class:`_ScorerMetric` scores it)."""
    if n_classes != 2:
        return False
    if metric.kind != "general":
        return metric.task == "binary"
    func = compat.score_func(metric.scorer)
    kwargs = compat.score_kwargs(metric.scorer)
    if _accepts(func, "pos_label") and kwargs.get("pos_label", 0) is not None:
        average = inspect.signature(func).parameters.get("average")
        return not (average is not None and average.default == "binary"
                    and kwargs.get("average", "binary") != "binary")
    return metric.needs_class_axis


def _response_order(scorer):
    return compat.response_methods(scorer)


def _task_of(func, response):
    """"classification", "regression", "auto" (decided by the estimator or y), or a
    clustering error."""
    module = getattr(func, "__module__", "") or ""
    if module.startswith(_CLUSTER_MODULES):
        return "cluster"
    if module.startswith(_REGRESSION_MODULES):
        return "regression"
    if response != ("predict",) or module.startswith("sklearn.metrics"):
        return "classification"
    return "auto"


def is_clustering_scorer(name):
    """Whether ``name`` is a scorer name of scikit-learn that scores a clustering (it
    compares two partitions, not predictions with their targets): what a caller that
    refuses a name asks before it words its own refusal."""
    from sklearn.metrics import get_scorer, get_scorer_names

    if not isinstance(name, str) or name not in get_scorer_names():
        return False
    func = compat.score_func(get_scorer(name))
    return _task_of(func, _response_order(get_scorer(name))) == "cluster"


def describe_scorer(scorer):
    """The JSON description of a ``make_scorer`` object a store records: function
    (name, module), kwargs (None where they are not JSON), sign, response method."""
    func = compat.score_func(scorer)
    try:
        kwargs = json.loads(json.dumps(compat.score_kwargs(scorer)))
    except (TypeError, ValueError):
        kwargs = None
    return {"function": getattr(func, "__name__", repr(func)),
            "module": getattr(func, "__module__", None),
            "sklearn": _sklearn_function(func) is not None,
            "kwargs": kwargs, "sign": int(compat.score_sign(scorer)),
            "response_method": list(_response_order(scorer))}


def scorer_name(scorer):
    """The study's name of a ``make_scorer`` object: scikit-learn's own repr, the
    function named by its module where it is not one of :mod:`sklearn.metrics`."""
    text = repr(scorer)
    func = compat.score_func(scorer)
    if _sklearn_function(func) is None:
        fn = getattr(func, "__name__", None)
        qual = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', fn)}"
        if fn and text.startswith(f"make_scorer({fn}"):
            text = f"make_scorer({qual}" + text[len(f"make_scorer({fn}"):]
    return text


#: ``on`` while this thread's warnings are collected by its caller (an engine task, which
#: shows each distinct one once for the whole run).
COLLECTED = threading.local()


@contextlib.contextmanager
def _quiet():
    """Silence the scorer's warnings: a bootstrap missing a class warns (undefined
    precision ...); its value is scikit-learn's, and the warning once per draw would drown
    the user. Not in a thread whose warnings are collected: ``catch_warnings`` swaps the
    process's filters, which is not safe beside the other task threads of a worker, and
    the collector shows a warning once anyway."""
    if getattr(COLLECTED, "on", False):
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


class _ScorerMetric(_Prepared):
    """A scikit-learn scorer bound to an encoded target and stored predictions
    ``(N, C, R)`` or ``(N, C, R, K)``: scores every (bootstrap, configuration, repeat) by
    the scorer's function (see the module's doc)."""

    def __init__(self, metric, target, pred, sample_block=None):
        super().__init__(metric, target, pred, sample_block)
        self.y = target.codes if target.codes is not None else target.values
        func = compat.score_func(metric.scorer)
        kwargs = dict(compat.score_kwargs(metric.scorer))
        col = None
        if target.codes is not None:
            k = len(target.classes)
            pos = None
            if _accepts(func, "pos_label"):
                if kwargs.get("pos_label", 0) is not None:  # absent or set: the study's
                    kwargs["pos_label"] = pos = target.pos_code
            if pred.ndim == 4 and k == 2:
                # scikit-learn's binary response: the positive class's column (without
                # a pos_label, the larger label's)
                col = k - 1 if pos is None else pos
        self.func, self.kwargs, self.col = func, kwargs, col
        self.sign = float(compat.score_sign(metric.scorer))
        self.weighted = (_sklearn_function(func) in WEIGHT_IS_REPEAT
                         and _accepts(func, "sample_weight"))
        self.pred = pred

    def _response(self, c, r):
        p = self.pred[:, c, r]
        return p[:, self.col] if self.col is not None else p

    def _one(self, y, p, w):
        """The signed score of ``(y, p)`` with count weights ``w`` (None: each once);
        NaN where the function raises or gives a non-finite value."""
        if w is not None:
            rows = w > 0
            y, p, w = y[rows], p[rows], w[rows]
            if not self.weighted:
                y, p, w = np.repeat(y, w, axis=0), np.repeat(p, w, axis=0), None
        try:
            with _quiet():
                v = (self.func(y, p, **self.kwargs) if w is None
                     else self.func(y, p, sample_weight=w, **self.kwargs))
            v = float(v)
        except (ValueError, TypeError, ZeroDivisionError, FloatingPointError, IndexError):
            return np.nan
        return self.sign * v if np.isfinite(v) else np.nan

    def scores(self, counts):
        counts = np.asarray(counts)
        out = np.full((counts.shape[0], self.n_configs, self.n_repeats), np.nan)
        for b in range(counts.shape[0]):
            w = counts[b].astype(np.int64)
            unit = bool(np.all(w == 1))
            for c in range(self.n_configs):
                for r in range(self.n_repeats):
                    out[b, c, r] = self._one(self.y, self._response(c, r), None if unit else w)
        return out

    def winner_scores(self, counts, winners, oob=True):
        counts = np.asarray(counts)
        out = np.full((counts.shape[0], self.n_repeats), np.nan)
        for b in range(counts.shape[0]):
            w = (counts[b] == 0).astype(np.int64) if oob else counts[b].astype(np.int64)
            for r in range(self.n_repeats):
                out[b, r] = self._one(self.y, self._response(int(winners[b]), r), w)
        return out

    @classmethod
    def scores_once(cls, target, pred):
        return None  # the general path: scores(ones) counts each sample once


def check_scorer(scorer, name="metric"):
    """``scorer`` checked: a scikit-learn scorer object made by ``make_scorer`` or
    ``get_scorer``, whose function scores a classifier or regressor."""
    if isinstance(scorer, compat.BaseScorer) and not isinstance(scorer, compat.Scorer):
        raise InvalidParameterError.of(
            name, "a single scorer (a name or a make_scorer object)",
            f"{type(scorer).__name__}")
    func = compat.score_func(scorer)
    response = _response_order(scorer)
    bad = [m for m in response if m not in ("predict", "predict_proba", "decision_function")]
    if bad:
        raise InvalidParameterError.of(
            name, "a scorer whose response method is predict, predict_proba or "
            "decision_function", bad[0])
    try:
        asked = sorted(k for k, v in scorer.get_metadata_routing().score.requests.items()
                       if v is not None and v is not False)
    except Exception:  # noqa: BLE001 - a scorer without routing asks for nothing
        asked = []
    if asked:
        raise InvalidParameterError.of(
            name, "a scorer that requests no metadata", shown=f"one requesting {asked}",
            note="A study scores every test sample alike (the bootstrap's counts are BBC's "
                 "own weights).")
    task = _task_of(func, response)
    if task == "cluster":
        raise InvalidParameterError.of(
            name, "a scorer of a classifier or a regressor",
            getattr(func, "__name__", func), note="It is a clustering metric: it compares "
            "two partitions, not predictions with their targets.")
    return task


def metric_of_scorer(scorer, metric_cls, name, pname="metric", spec=None):
    """The :class:`~._registry.Metric` of a scikit-learn scorer object."""
    task = check_scorer(scorer, pname)
    response = _response_order(scorer)
    if response == ("predict",):
        prediction = {"regression": "values", "classification": "labels"}.get(task, "auto")
    else:
        prediction = "response"
    return metric_cls(name=name, kind="general", prediction=prediction, task=task,
                      description=f"scikit-learn's scorer {name}", scorer=scorer,
                      response=response, spec=spec, _impl=_ScorerMetric)


def rebuild_scorer(desc):
    """The ``make_scorer`` object a store's JSON description records, or None where its
    function is not one of :mod:`sklearn.metrics` by name (a study file never imports
    and calls anything that is not an estimator) or its kwargs were not JSON."""
    import sklearn.metrics as skm

    fname = desc.get("function")
    if not desc.get("sklearn") or desc.get("kwargs") is None or not isinstance(fname, str):
        return None
    if fname not in getattr(skm, "__all__", ()):
        return None
    func = getattr(skm, fname, None)
    if not callable(func) or getattr(func, "__module__", None) != desc.get("module"):
        return None
    rm = desc.get("response_method") or ["predict"]
    return skm.make_scorer(func, response_method=rm[0] if len(rm) == 1 else tuple(rm),
                           greater_is_better=desc.get("sign", 1) > 0, **desc["kwargs"])
