"""The metric registry: one row per metric (:data:`_DEFS`), the :class:`Metric` each row
becomes (:data:`METRICS`), and :func:`get_metric` to look one up.

Adding a metric
---------------
A metric is a class bound, by :meth:`Metric.prepare`, to an encoded target
(:class:`~._target.Target`) and validated predictions ``(N, C, R)`` or, with a class axis,
``(N, C, R, K)``; it scores blocks of bootstrap count matrices ``(B, N)``
(:mod:`._counts`). Larger must be better: negate a loss.

1. Subclass the family it belongs to.

   - *Pointwise*, a ratio of weighted sums of per-sample features: subclass
     :class:`~._pointwise._Pointwise` (:mod:`._pointwise`). Its ``__init__(self, metric,
     target, pred, sample_block=None)`` calls ``super().__init__(metric, target, pred,
     sample_block)``, then sets ``self.features`` (a list of ``(rows or None, values
     (len(rows), C*R))``, built with ``_flat`` or ``_equal``) and ``self.gfeat`` ((n_g, N)
     configuration-free features); the class implements the static ``combine(fsums,
     gsums) -> (B, C, R)``. Set ``dtype = np.float32`` where every feature is 0/1 (exact
     integer sums, twice as fast); override ``fold_gfeat`` / ``fold_features`` where the
     features depend on a fold's own centre (R²). A weighted mean of a per-sample score
     needs only :class:`~._pointwise._MeanLoss` and a static ``per_sample(target, pred)``.
   - *Ranking*, a function of each column's order: subclass
     :class:`~._prepared._Prepared` and implement ``scores(counts) -> (B, C, R)`` and
     ``winner_scores(counts, winners, oob=True) -> (B, R)``, NaN where undefined
     (:mod:`._ranking`). For the chunked path's sample tiles also implement the exact
     integer pair sums ``pair_sums_t``, ``finish_pairs``, ``finish_winner_pairs`` and the
     static ``columns`` / ``held_columns`` (:attr:`Metric.pairwise` keys on
     ``pair_sums_t``); a classmethod ``scores_once(target, pred)`` may give a faster
     path for unit weights (None: take the general one).

2. Say when it is defined: the classmethod ``rule_of(metric, target)`` returns a
   :class:`~._definedness.Definedness` (default: some weight in bag, some sample out of
   bag). :mod:`._definedness` holds the rules (y not constant, both classes of every
   mask, a comparable pair); a new rule implements ``inbag`` and ``oob``, and ``part``,
   ``decide`` and ``decide_inbag`` so that a plan decides it block by block of samples
   (``streams``).

3. Add its row to :data:`_DEFS`: ``(name, kind, prediction, task, class,
   description)``, with ``name`` scikit-learn's scorer name (``neg_`` for a loss),
   ``kind`` ``"pointwise"`` or ``"ranking"``, and ``prediction`` and ``task`` as
   :class:`Metric` lists them (they decide how :mod:`bbc_dask._validation` checks and
   encodes ``y`` and the predictions).

4. Give the tests its scikit-learn reference: its name in ``ALL_METRICS`` and its score
   in ``score_rows`` of ``tests/_reference.py``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import dataclasses
import numpy as np

from .. import _sklearn_compat as compat
from ..exceptions import InvalidParameterError
from ._pointwise import (_Accuracy, _BalancedAccuracy, _F1, _NegLogLoss, _NegMAE, _NegMSE,
                         _R2, _R2Corr)
from ._ranking import _CIndex, _RocAuc, _RocAucOvo
from .._doors import door, door_name


@dataclass(frozen=True)
class Metric:
    """A registered metric.

    Attributes
    ----------
    name : str
        scikit-learn scorer name.
    greater_is_better : bool
        Always True: losses are negated.
    kind : {"pointwise", "ranking", "general"}
        How the batched kernel works; "general": a scikit-learn scorer's own function,
        called per bootstrap (:mod:`._scorer`).
    prediction : {"labels", "scores", "proba", "values", "risk", "response"}
        What a prediction must be: class labels (``predict``), a continuous score of the
        positive class (``predict_proba[:, 1]`` or ``decision_function``), all class
        probabilities (class axis last, classes in sorted label order), regression values,
        a risk score (higher = earlier event), or a scorer's ``predict_proba`` or
        ``decision_function`` with one column per class (class axis).
    task : {"binary", "classification", "multiclass", "regression", "survival"}
    description : str
    scorer : sklearn scorer or None
        The scikit-learn scorer of a general metric.
    response : tuple of str
        A general metric's response methods, in the order tried.
    spec : dict or None
        A ``make_scorer`` metric's JSON description, as its store records it.
    """

    name: str
    kind: str
    prediction: str
    task: str
    description: str
    greater_is_better: bool = True
    _impl: type = field(default=None, repr=False, compare=False)
    scorer: object = field(default=None, repr=False, compare=False)
    response: tuple = ()
    spec: dict = field(default=None, repr=False, compare=False)

    @property
    def bounds(self) -> tuple:
        """``(low, high)``: the range of the metric's scores (infinite where unbounded, and
        for a scorer whose range is not known), where intervals are clipped."""
        return score_bounds(self.name)

    @property
    def needs_class_axis(self) -> bool:
        """Whether predictions carry a class axis (all class probabilities, or a
        scorer's response per class)."""
        return self.prediction in ("proba", "response")

    @property
    def ref(self):
        """What a worker's task is given: a registered metric's name, a general metric
        itself (its scorer may be known in this process alone)."""
        return self if self.kind == "general" else self.name

    def resolved(self, regression):
        """This metric with its task decided (a ``make_scorer`` of a function scikit-learn
        does not know, on ``predict``: the estimator, or y, says which it scores)."""
        if self.task != "auto":
            return self

        task = "regression" if regression else "classification"
        spec = None if self.spec is None else dict(self.spec, task=task)
        return dataclasses.replace(self, task=task, spec=spec,
                                   prediction="values" if regression else "labels")

    @property
    def feature_bytes(self) -> int:
        """Bytes a prepared pointwise metric holds per (sample, configuration, repeat):
        float32 indicators, or float64 features and their float64 product panels."""
        return 4 if getattr(self._impl, "dtype", None) == np.float32 else 16

    @property
    def pairwise(self):
        """The prepared family of a ranking metric, whose bootstrap statistics are exact
        integer sums over pairs of samples (``pair_sums_t``, ``finish_pairs``,
        ``finish_winner_pairs``); None for a pointwise metric."""
        return self._impl if hasattr(self._impl, "pair_sums_t") else None

    @property
    def is_classification(self) -> bool:
        """Whether ``y`` holds class labels (binary, classification or multiclass)."""
        return self.task in ("binary", "classification", "multiclass")

    def prepare(self, target, predictions, sample_block=None):
        """Precompute what the batched kernels need.

        ``target`` is a :class:`~._target.Target` (encoded y); ``predictions`` is a
        validated float64 array ``(N, C, R)`` or ``(N, C, R, K)`` (labels already encoded
        as class codes).
        ``sample_block``: the sample block size of the sums (default
        :data:`~bbc_dask.metrics.SAMPLE_BLOCK`).
        """
        return self._impl(self, target, predictions, sample_block=sample_block)

    def stacked(self, parts, n_configs):
        """One prepared (pointwise) metric over the configurations of prepared ``parts``
        of the same samples, side by side (see ``_Pointwise.stacked``)."""
        return self._impl.stacked(parts, n_configs)

    def definedness(self, target):
        """The rule that says, from the bootstrap counts alone, whether this metric is
        defined in bag and out of bag (:class:`~._definedness.Definedness`). It needs no
        predictions, so a draw can be kept or redrawn before any prediction is read."""
        return self._impl.rule_of(self, target)

    def combine(self, fsums, gsums):
        """Scores from summed pointwise features (see ``_Pointwise.feature_sums`` and
        ``_Pointwise.config_free_sums``)."""
        return self._impl.combine(fsums, gsums)

    def fold_scores(self, fsums, gsums):
        """Fold scores (rows, C) of a pointwise metric's per-fold sums (see
        ``_Pointwise.fold_sums``)."""
        return self._impl.fold_scores(fsums, gsums)

    def scores_once(self, target, predictions):
        """The metric of every (configuration, repeat), each sample counted once: (C, R).
        Equal bit for bit to ``prepare(target, predictions).scores(ones)[0]``; ranking
        metrics take a faster path for it (a fold score or a pooled score needs no
        bootstrap machinery: no full argsort of every column)."""
        once = getattr(self._impl, "scores_once", None)
        if once is not None:
            out = once(target, predictions)
            if out is not None:
                return out
        n = predictions.shape[0]
        return self.prepare(target, predictions).scores(np.ones((1, n), dtype=np.int32))[0]


#: The registered metrics: (name, kind, prediction, task, class, description).
_DEFS = [
    ("roc_auc", "ranking", "scores", "binary", _RocAuc,
     "Area under the ROC curve (binary; ties count 1/2)."),
    ("roc_auc_ovr", "ranking", "proba", "multiclass", _RocAuc,
     "Macro-averaged one-vs-rest ROC AUC on class probabilities."),
    ("roc_auc_ovo", "ranking", "proba", "multiclass", _RocAucOvo,
     "Macro-averaged one-vs-one ROC AUC (Hand & Till) on class probabilities: the 2024 "
     "paper's code's multiclass AUC."),
    ("concordance_index", "ranking", "risk", "survival", _CIndex,
     "Harrell's concordance index; y is (time, event), predictions are risk scores."),
    ("accuracy", "pointwise", "labels", "classification", _Accuracy,
     "Fraction of correct class labels."),
    ("balanced_accuracy", "pointwise", "labels", "classification", _BalancedAccuracy,
     "Mean per-class recall over the classes present in y."),
    ("f1", "pointwise", "labels", "binary", _F1, "F1 score of the positive class."),
    ("neg_log_loss", "pointwise", "proba", "classification", _NegLogLoss,
     "Negated cross-entropy of the class probabilities."),
    ("neg_mean_squared_error", "pointwise", "values", "regression", _NegMSE,
     "Negated mean squared error."),
    ("neg_mean_absolute_error", "pointwise", "values", "regression", _NegMAE,
     "Negated mean absolute error."),
    ("r2", "pointwise", "values", "regression", _R2, "Coefficient of determination."),
    ("r2_corr", "pointwise", "values", "regression", _R2Corr,
     "Squared Pearson correlation of y and the prediction (the 2024 paper's code's R²)."),
]

METRICS: dict[str, Metric] = {
    name: Metric(name=name, kind=kind, prediction=pred, task=task, description=desc, _impl=impl)
    for name, kind, pred, task, impl, desc in _DEFS
}


#: scikit-learn scorer names whose scores lie in [0, 1] (and the registered ones), by
#: prefix; ``neg_`` scorers are losses, at most 0; R² and explained variance at most 1.
_UNIT = ("accuracy", "balanced_accuracy", "top_k_accuracy", "average_precision", "f1",
         "precision", "recall", "jaccard", "roc_auc", "concordance_index", "r2_corr")


def score_bounds(name):
    """``(low, high)`` of the scores of the metric or scikit-learn scorer ``name``."""
    if name in ("r2", "explained_variance", "d2_absolute_error_score"):
        return (-np.inf, 1.0)
    if name.startswith("neg_"):
        return (-np.inf, 0.0)
    if name == "matthews_corrcoef":
        return (-1.0, 1.0)
    if any(name == u or name.startswith(u + "_") for u in _UNIT):
        return (0.0, 1.0)
    return (-np.inf, np.inf)


def metric_names() -> list[str]:
    """Names of the registered metrics, sorted."""
    return sorted(METRICS)


#: General metrics made in this process, by name: scikit-learn's scorer names, and the
#: ``make_scorer`` objects given to a study or rebuilt from a store's description (a
#: later one of the same name replaces the earlier).
_GENERAL: dict[str, Metric] = {}


def _accepted():
    return (f"one of {metric_names()}, another name of "
            f"sklearn.metrics.get_scorer_names() or a sklearn.metrics.make_scorer object")


@door("get_metric")
def get_metric(metric, *, name="metric") -> Metric:
    """Look up a metric: a :class:`Metric` passes through; a registered name gives its
    kernels; any other scorer name of scikit-learn, or a ``make_scorer`` object, gives
    a general metric (:mod:`._scorer`); ``name`` is the caller's parameter name."""
    if isinstance(metric, Metric):
        return metric
    if isinstance(metric, str):
        if metric in METRICS:
            return METRICS[metric]
        if metric in _GENERAL:
            return _GENERAL[metric]
        return _named_scorer(metric, name)
    if isinstance(metric, compat.BaseScorer):
        return scorer_metric(metric, name)
    if callable(metric):
        raise InvalidParameterError.of(
            name, _accepted(), metric,
            note="A plain callable scorer(estimator, X, y) needs the fitted fold models, "
                 "which a study does not keep: wrap its function with make_scorer, or "
                 "search with BBCSearchCV, which scores each fold's model with it.")
    raise InvalidParameterError.of(name, _accepted(), metric)


def _named_scorer(metric, name):
    from sklearn.metrics import get_scorer, get_scorer_names

    from ._scorer import metric_of_scorer

    if metric.startswith("make_scorer("):
        from ..exceptions import StudyError

        raise StudyError(
            f"The study's metric {metric} is not a function of sklearn.metrics, so its "
            f"store does not rebuild it: give the scorer again (open_study(store, "
            f"scoring=...)) before {door_name()}.")
    if metric not in get_scorer_names():
        from .._hints import did_you_mean

        raise InvalidParameterError.of(
            name, _accepted(), metric,
            note=did_you_mean(metric, [*metric_names(), *get_scorer_names()]) or None)
    m = metric_of_scorer(get_scorer(metric), Metric, metric, name)
    _GENERAL[metric] = m
    return m


def scorer_metric(scorer, name="metric"):
    """The metric of a scikit-learn scorer object: a registered metric where it is the
    very scorer of that name (its kernels), else a general one, remembered by name."""
    from sklearn.metrics import get_scorer

    from ._scorer import describe_scorer, metric_of_scorer, scorer_name

    text = repr(scorer)
    for reg in METRICS:
        try:
            if repr(get_scorer(reg)) == text and compat.score_func(get_scorer(reg)) is compat.score_func(scorer):
                return METRICS[reg]
        except ValueError:  # a registered name scikit-learn has no scorer of
            continue
    key = scorer_name(scorer)
    m = metric_of_scorer(scorer, Metric, key, name, spec=describe_scorer(scorer))
    _GENERAL[key] = m
    return m


def remember(metric):
    """Make a general ``metric`` (its task decided) the one its name gives in this
    process; ``metric`` itself."""
    if metric.kind == "general":
        _GENERAL[metric.name] = metric
    return metric


def metric_of_spec(spec, scoring=None):
    """The metric a store's ``spec`` records, made known to this process: rebuilt from
    the description of a ``make_scorer`` of a :mod:`sklearn.metrics` function, or
    ``scoring`` (the scorer given again) checked against it; None where it can be
    neither (the metric's name then says what to do when it is used)."""
    from ._scorer import describe_scorer, rebuild_scorer, scorer_name

    desc = spec.get("scorer")
    if desc is None:
        m = get_metric(spec["metric"])
        if scoring is not None and get_metric(scoring, name="scoring").name != m.name:
            raise InvalidParameterError.of("scoring", f"the study's metric {m.name!r}",
                                           scoring)
        return m
    if scoring is not None:
        got = describe_scorer(scoring) if isinstance(scoring, compat.BaseScorer) else None
        if got is None or scorer_name(scoring) != spec["metric"]:
            raise InvalidParameterError.of("scoring", f"the study's scorer {spec['metric']}", scoring)
        scorer = scoring
    else:
        scorer = rebuild_scorer(desc)
        if scorer is None:
            return None
    from ._scorer import metric_of_scorer

    m = metric_of_scorer(scorer, Metric, spec["metric"], spec=desc)
    if desc.get("task") is not None and m.task == "auto":
        m = m.resolved(desc["task"] == "regression")
    _GENERAL[spec["metric"]] = m
    return m
