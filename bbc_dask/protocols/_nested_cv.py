"""Nested cross-validation on the engine: :func:`nested_cv` and its result.

The 2018 journal paper (Tsamardinos, Greasidou, Borboudakis, Machine Learning 107,
Algorithm 3) judges BBC-CV against nested CV: each outer fold's configuration is selected
by an inner CVT of its training set, refit there and scored on the outer fold; the
estimate is the mean of the outer scores. Here the inner CVTs of all outer folds are
one study's tasks writing into one store (see :mod:`bbc_dask.engine._nested`), so a
nested CV of a grid runs as parallel, resumable and verifiable as a study.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..exceptions import StoreMismatchError, StudyNotReadyError
from ..cube import positive_class
from ..stats import ArrayEquality, metric_text
from .._doors import door, warn

__all__ = ["NestedCVResult", "nested_cv", "open_nested"]


@dataclasses.dataclass(frozen=True, repr=False, eq=False)
class NestedCVResult(ArrayEquality):
    """The outcome of a nested cross-validation.

    Attributes
    ----------
    estimate : float
        The mean of the outer scores (over outer folds and repeats); NaN, with a
        RuntimeWarning naming the outer fold, if an outer refit failed or its metric is
        undefined (a failed fold is not left out).
    outer_scores : ndarray of shape (n_repeats, n_outer)
        Each outer fold's score of its selected configuration, refit on its training set.
    selected : ndarray of shape (n_repeats, n_outer), int
        Per outer fold, the index into :attr:`params` its inner CV selected.
    params : list of dict
        The configurations, in the grid's order (``ParameterGrid``'s).
    outer_fold : ndarray of shape (N, n_repeats), int
        Each sample's outer fold per repeat.
    inner_fold : ndarray of shape (N, n_repeats, n_outer), int
        Each sample's inner fold in each outer fold's inner CV; -1 for that outer fold's
        test samples (which no inner fold holds).
    ci : tuple of float or None
        With ``n_repeats > 1``: ``mean ± t·s/√R`` over the R repeats' means (s their
        standard deviation, t Student's quantile with R − 1 degrees of freedom). It
        measures how much the estimate moves with the random partition only; the
        repeats share the data, so it is not an interval for the performance itself.
        None with one repeat. Clipped to the metric's range (an AUC interval does not
        end above 1): see ``ci_clipped``.
    confidence_level : float
    models_trained : int
        Inner fits (configurations × inner folds × outer folds × repeats, failed ones
        included) plus one outer refit per outer fold.
    fit_seconds : float
        The fits' summed seconds, inner and outer.
    wall_seconds : float
        Wall time of the runs that computed it, summed over resumed runs (a run that was
        killed counts up to its last recorded stage: the end of its waves, or nothing).
    metric : str
    store : str
    metadata : dict or None
        The ``metadata`` the run recorded (the command line's resolved study file, whose
        ``grid`` holds the parameter names as the user wrote them), or None.
    pos_label : label or None
        The class the metric scored as positive (a binary metric such as ``roc_auc``),
        or None where it has none.
    """

    estimate: float
    outer_scores: np.ndarray
    selected: np.ndarray
    params: list
    outer_fold: np.ndarray
    inner_fold: np.ndarray
    ci: tuple | None
    confidence_level: float
    models_trained: int
    fit_seconds: float
    wall_seconds: float
    metric: str
    store: str
    metadata: dict | None = None
    ci_clipped: bool = False
    pos_label: object = None

    @property
    def n_outer(self):
        return self.outer_scores.shape[1]

    @property
    def n_repeats(self):
        return self.outer_scores.shape[0]

    def __repr__(self):
        ci = "" if self.ci is None else (f", ci=({self.ci[0]:.4f}, {self.ci[1]:.4f})"
                                         + (" clipped" if self.ci_clipped else ""))
        pos = "" if self.pos_label is None else f", pos_label={self.pos_label!r}"
        return (f"NestedCVResult(metric={self.metric!r}{pos}, estimate={self.estimate:.4f}{ci}, "
                f"outer={self.n_outer}x{self.n_repeats}, models_trained={self.models_trained})")

    def to_dict(self):
        """JSON-ready: the arrays as lists (folds left out: see the store)."""
        return {"protocol": "nested", "metric": self.metric, "pos_label": self.pos_label,
                "estimate": self.estimate,
                "ci": None if self.ci is None else list(self.ci), "ci_clipped": self.ci_clipped,
                "confidence_level": self.confidence_level,
                "outer_scores": self.outer_scores.tolist(), "selected": self.selected.tolist(),
                "params": [{k: v if isinstance(v, (int, float, str, bool)) or v is None else repr(v)
                            for k, v in p.items()} for p in self.params],
                "models_trained": self.models_trained, "fit_seconds": self.fit_seconds,
                "wall_seconds": self.wall_seconds, "store": self.store}

    def summary(self):
        """A few lines for a terminal."""
        lines = [f"nested CV ({self.n_outer} outer folds x {self.n_repeats} repeat(s)), "
                 f"metric {metric_text(self.metric, self.pos_label)}: {self.estimate:.4f}"]
        if self.ci is not None:
            lines.append(f"  {self.confidence_level:.0%} interval over repeats: "
                         f"[{self.ci[0]:.4f}, {self.ci[1]:.4f}]"
                         + (" (clipped to the metric's range)" if self.ci_clipped else ""))
        for r in range(self.n_repeats):
            cells = ", ".join(f"{s:.4f} (config {c})" for s, c in
                              zip(self.outer_scores[r], self.selected[r]))
            lines.append(f"  repeat {r}: {cells}")
        lines.append(f"  models trained: {self.models_trained:,}; fit seconds "
                     f"{self.fit_seconds:.1f}; wall seconds {self.wall_seconds:.1f}")
        return "\n".join(lines)


@door("nested_cv")
def nested_cv(estimator, param_grid, X, y, *, store, metric, n_outer, n_inner, n_repeats=1,
              groups=None, random_state, client=None, progress=True, selection="pooled",
              error_score=np.nan, pos_label=None, confidence_level=0.95, overwrite=False,
              configs_per_task=None, storage_options=None, security=None):
    """Nested cross-validation of a grid search, run on Dask into a resumable store.

    For each of ``n_repeats`` outer partitions into ``n_outer`` folds (stratified for
    classification; grouped with ``groups``), every configuration is cross-validated by
    ``n_inner`` folds of the outer training set (stratified or grouped the same way;
    an inner fold never holds an outer test sample); the configuration the study's rule
    selects there is refit on the outer training set and scored on the outer test set.
    With ``n_inner = n_outer − 1`` the inner folds are the other outer folds themselves,
    as the paper's Algorithm 3 cross-validates; with any other ``n_inner`` the outer
    training set is partitioned afresh (as ``cross_val_score(GridSearchCV(...))`` does).
    All inner fits of all outer folds are tasks of one run writing their predictions
    into one store; a killed run resumes with nothing finished recomputed.

    Parameters
    ----------
    estimator : scikit-learn estimator
    param_grid : dict or list of dict
        The configurations (a ``ParameterGrid``).
    X, y : array-like
    store : str or path
        The store directory or fsspec URL. A store of the same nested CV is resumed;
        one of another study is refused.
    metric : str
        A metric of :mod:`bbc_dask.metrics` (greater is better).
    n_outer, n_inner : int
        Outer and inner folds (at least 2; no more than the smallest class has members,
        in the outer training sets for ``n_inner``).
    n_repeats : int, default=1
        Outer partitions (repeated nested CV), each from its own child of the seed.
    groups : array-like of shape (N,), default=None
        Folds, outer and inner, never split a group.
    random_state : int, SeedSequence, Generator or None
        The seed of every partition. None draws one and records it; a resume with None
        reuses it.
    client : distributed.Client, str, dict or None
        As :func:`bbc_dask.run_study`'s.
    progress : bool, default=True
    selection : {"pooled", "fold_mean"}, default="pooled"
        The inner selection rule, the study's: the best metric on the pooled inner
        predictions of the outer training set, or the best mean inner fold score.
    error_score : np.nan or "raise", default=np.nan
    pos_label : label, default=None
    confidence_level : float, default=0.95
        Of the interval over repeats.
    overwrite : bool, default=False
    configs_per_task : int or None, default=None
        Configurations per block, as :func:`bbc_dask.run_study`'s; None: up to 10 (a
        nested CV balances its blocks over all its training sets, so they need not be
        small).
    storage_options, security
        As :func:`bbc_dask.run_study`'s.

    Returns
    -------
    NestedCVResult

    References
    ----------
    .. [1] Tsamardinos, Greasidou, Borboudakis, "Bootstrapping the out-of-sample
       predictions for efficient and accurate cross-validation", Machine Learning 107
       (2018), Algorithm 3 (NCV) and §5.
    """
    from .._validation import check_confidence_level
    from ..engine import Execution, Resampling, Scoring, Search, Storage, StudyRequest, run_cvt
    check_confidence_level(confidence_level)
    request = StudyRequest.build(
        estimator, X, y, search=Search(param_grid),
        scoring=Scoring(metric, pos_label, error_score, selection),
        storage=Storage(store, storage_options),
        resampling=Resampling(n_repeats=n_repeats, groups=groups, nested=(n_outer, n_inner)),
        execution=Execution(client, security, progress, configs_per_task, overwrite, refit=False),
        random_state=random_state)
    from .._run_warnings import warn_fit_warnings

    run = run_cvt(request)
    result = nested_result(run, confidence_level)
    warn_fit_warnings(run.warned, stacklevel=2)
    return result


def nested_result(run, confidence_level=0.95):
    """The :class:`NestedCVResult` of a finished nested run (a :class:`~bbc_dask.engine.CVTRun`)."""
    return _result(run.cube, list(run.configs), confidence_level)


@door("open_nested")
def open_nested(store, *, confidence_level=0.95, storage_options=None):
    """The :class:`NestedCVResult` of a finished nested CV's store (read-only)."""
    from ..cube import open_cube

    return nested_of_cube(open_cube(store, storage_options=storage_options), confidence_level)


def nested_of_cube(cube, confidence_level=0.95):
    """:func:`open_nested` of a store already open (``cube``)."""
    if cube.protocol_kind != "nested":
        raise StoreMismatchError(f"The store {cube.location.url!r} holds a study, not a nested "
                                 f"cross-validation; open it with bbc_dask.open_study.")
    from ..engine import Configurations

    params = list(Configurations.from_description(cube.configurations))
    return _result(cube, params, confidence_level)


def _result(cube, params, confidence_level):
    from ..engine import nested_outcome

    out = nested_outcome(cube)
    scores = out["outer_scores"]
    n_rep, n_outer = scores.shape
    if out["recorded"] < scores.size:
        raise StudyNotReadyError(
            f"The nested CV in {cube.location.url!r} is not finished: {out['recorded']} of "
            f"{scores.size} outer folds are recorded; run nested_cv again with the same "
            f"arguments to resume it.")
    estimate = float(np.mean(scores))
    if np.isnan(scores).any():
        # a NaN outer score is not left out: that would estimate from the folds that
        # happened to work; say which and why
        r, o = (int(v) for v in np.argwhere(np.isnan(scores))[0])
        why = out["errors"].get((r, o)) or "the metric is undefined on its test samples"
        warn(f"nested CV: {int(np.isnan(scores).sum())} outer score(s) are NaN, so "
             f"is the estimate; e.g. repeat {r}, outer fold {o}: {why}",
             RuntimeWarning, stacklevel=3)
    ci, clipped = None, False
    if n_rep > 1:
        from scipy.stats import t

        from ..metrics import score_bounds
        from ..stats import ConfidenceInterval, clip_interval

        means = scores.mean(axis=1)
        half = t.ppf(0.5 + confidence_level / 2, n_rep - 1) * means.std(ddof=1) / math.sqrt(n_rep)
        ci, clipped = clip_interval(ConfidenceInterval(float(means.mean() - half),
                                                       float(means.mean() + half)),
                                    score_bounds(cube.spec["metric"]))
        ci = tuple(ci)
    wall = cube.wall_seconds()
    return NestedCVResult(
        estimate=estimate, outer_scores=scores, selected=out["selected"], params=params,
        outer_fold=out["outer_fold"], inner_fold=out["inner_fold"], ci=ci,
        confidence_level=confidence_level,
        models_trained=out["inner_fits"] + int(np.isfinite(out["outer_fit_time"]).sum()),
        fit_seconds=out["inner_fit_seconds"] + float(np.nansum(out["outer_fit_time"])),
        wall_seconds=float(wall), metric=cube.spec["metric"], store=cube.location.url,
        metadata=cube.metadata, ci_clipped=clipped, pos_label=positive_class(cube))
