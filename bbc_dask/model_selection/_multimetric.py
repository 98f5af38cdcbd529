"""The scorers of :class:`~bbc_dask.BBCSearchCV`, as ``GridSearchCV``'s: one or several
(multimetric), scored where the study can score them.

The study runs with one metric (the ``refit`` scorer's, or the estimator's own score) and
stores that metric's predictions. A scorer is then scored in one of two ways:

- *on the stored predictions*: a scorer name or ``make_scorer`` object that reads the
  same prediction as the study's metric (the same response method) and takes no routed
  parameters — per split, after the run (:meth:`Study.fold_scores`);
- *by each fold's fitted model* (the store's ``fit_score``): a plain callable
  ``scorer(estimator, X, y)``, a scorer reading another prediction, one that takes
  routed parameters (``sample_weight``), and every scorer on the training rows with
  ``return_train_score`` — as ``GridSearchCV`` calls them, inside the tasks
  (:class:`~bbc_dask.engine.FitScoring`).

When the ``refit`` scorer itself is scored by the fitted models (a callable, or one that
takes routed parameters), only fold-level scores exist for it: configurations are ranked
by ``mean_test_score`` (``GridSearchCV``'s rule), the winner is refit in this process and
BBC-F (on those fold scores) is the only estimate: sample-level BBC needs the metric of
each sample's prediction, which a callable does not give.
"""
from __future__ import annotations

import dataclasses
import inspect

import numpy as np

from .. import _sklearn_compat as compat
from ..exceptions import InvalidParameterError
from ._dict_scoring import DictScore, is_plain_callable


@dataclasses.dataclass(frozen=True)
class ScoringPlan:
    """How ``fit`` scores: ``scorers`` ``{key: scoring}`` (the refit one first; key
    ``"score"`` for a single scorer), ``multimetric``, ``metric`` (the study's),
    ``fitted`` (keys scored by the fitted fold models), ``primary_fitted`` (the first
    is), ``fit_scoring`` (the tasks' :class:`~bbc_dask.engine.FitScoring`, or None) and
    ``fit_params`` (those of every fit, routed as ``GridSearchCV`` routes them)."""

    scorers: dict
    multimetric: bool
    metric: object
    fitted: tuple
    fit_scoring: object
    fit_params: dict

    @property
    def primary(self):
        return next(iter(self.scorers))

    @property
    def primary_fitted(self):
        return self.primary in self.fitted


#: ``GridSearchCV``'s words for a ``refit`` that names no scorer of several (said too, so
#: that a script matching them matches ours).
MULTIMETRIC_REFIT = ("For multi-metric scoring, the parameter refit must be set to a scorer "
                     "key or a callable to refit an estimator with the best parameter setting "
                     "on the whole data and make the best_* attributes available for that "
                     "metric.")


def ordered_scorers(search, keys=None):
    """``({key: scoring}, multimetric)``, the refit scorer first; ``refit`` checked.
    ``keys``: the names of the scores a callable ``scoring`` returns as a dict
    (:func:`~._dict_scoring.probe_keys`), each then scored by its own scorer."""
    sc = search.scoring
    if keys is not None:
        sc = {k: DictScore(search.scoring, k) for k in keys}
    if sc is None or isinstance(sc, str) or callable(sc):
        # any true refit refits the one scorer (GridSearchCV's rule: refit="accuracy"
        # with scoring="accuracy" is refit=True)
        return {"score": sc}, False
    if isinstance(sc, dict):
        names = list(sc)
        if not names or not all(isinstance(k, str) for k in names):
            raise InvalidParameterError.of("scoring", "a non-empty dict with str "
                                           "keys", sc)
        scorers = dict(sc)
    else:
        names = sorted(sc) if isinstance(sc, set) else list(sc)
        if not names or not all(isinstance(k, str) for k in names) or len(set(names)) < len(names):
            raise InvalidParameterError.of("scoring", "a non-empty list of distinct "
                                           "scorer names", sc)
        scorers = {k: k for k in names}
    if isinstance(search.refit, str):
        if search.refit not in scorers:
            raise InvalidParameterError.of(
                "refit", f"one of the scoring keys {names}, a callable or False "
                f"with multimetric scoring", search.refit, note=MULTIMETRIC_REFIT)
        first = search.refit
    elif search.refit is True:
        raise InvalidParameterError.of(
            "refit", f"one of the scoring keys {names}, a callable or False with "
            f"multimetric scoring (the key says which scorer selects)", True,
            note=MULTIMETRIC_REFIT)
    else:
        first = names[0]
    return {first: scorers[first]} | {k: v for k, v in scorers.items() if k != first}, True


def own_score_is_metric(estimator):
    """Whether ``estimator.score`` is scikit-learn's own accuracy (a classifier's
    ``ClassifierMixin.score``) or R² (a regressor's ``RegressorMixin.score``) of its
    ``predict`` — through a ``Pipeline`` to its final step — so that the study can score
    it on the stored predictions. Any other ``score`` (an estimator's own rule) is called
    on each fold's fitted model, as ``GridSearchCV`` calls it."""
    from sklearn.base import ClassifierMixin, RegressorMixin, is_classifier, is_regressor
    from sklearn.pipeline import Pipeline

    def defined(cls, owner=None):
        # the class attribute itself (Pipeline.score is an available_if descriptor, which
        # makes a new function on each read)
        return inspect.getattr_static(cls, "score", None) if owner is None else vars(owner)["score"]

    est = estimator
    while isinstance(est, Pipeline) and defined(type(est)) is defined(None, Pipeline):
        est = est.steps[-1][1]
    own = defined(type(est))
    if getattr(own, "__module__", "").startswith("sklearn.") and \
            getattr(own, "__qualname__", None) in _MIXIN_SCORES:
        return is_classifier(estimator) or is_regressor(estimator)
    if is_classifier(estimator):
        return own is defined(None, ClassifierMixin)
    return is_regressor(estimator) and own is defined(None, RegressorMixin)


#: scikit-learn's own ``score`` overrides that are the mixin's accuracy or R² of
#: ``predict`` (they add a docstring, or take X=None for a leave-one-out or dummy score)
_MIXIN_SCORES = frozenset({"KNeighborsClassifier.score", "RadiusNeighborsClassifier.score",
                           "DummyClassifier.score", "DummyRegressor.score"})


def _accepts_sample_weight(scorer):
    """Whether a scorer (or a plain callable) takes ``sample_weight``, as scikit-learn
    asks it."""
    from inspect import signature

    if hasattr(scorer, "_accept_sample_weight"):
        return bool(compat.accepts_sample_weight(scorer))
    try:
        return "sample_weight" in signature(scorer).parameters
    except (TypeError, ValueError):
        return False


def _weighted_scoring(search, callables, params):
    """The scorers' ``sample_weight`` as ``GridSearchCV`` forwards it without metadata
    routing (scikit-learn 1.7 on): ``({"sample_weight": w}, keys that take it)`` when
    ``params`` has one and some scorer accepts it (the others said in a warning, in
    scikit-learn's words), else ``({}, ())``."""
    sw = params.get("sample_weight")
    if sw is None or not compat.search_scores_with_sample_weight():
        return {}, ()
    accept = {k: _accepts_sample_weight(v) for k, v in callables.items()}
    multimetric = not (len(callables) == 1 and "score" in callables)
    for key, ok in accept.items():
        if not ok:
            scorer = f"{key}={callables[key]}" if multimetric else f"{callables[key]}"
            from .._doors import warn

            warn(f"The scoring {scorer} does not support sample_weight, which may lead to "
                 f"statistically incorrect results when fitting {search} with "
                 "sample_weight. ", UserWarning, stacklevel=4)
    taking = tuple(k for k, ok in accept.items() if ok)
    return ({"sample_weight": sw}, taking) if taking else ({}, ())


def scoring_plan(search, params, y=None, keys=None):
    """The :class:`ScoringPlan` of ``search.fit(X, y, **params)``, checked before
    anything runs (see the module docstring); ``keys`` as :func:`ordered_scorers`'."""
    import sklearn
    from sklearn.metrics import check_scoring
    from sklearn.utils.metadata_routing import get_routing_for_object

    from ..engine import FitScoring, stored_as
    from ..metrics import get_metric

    scorers, multimetric = ordered_scorers(search, keys)
    requesting = {k for k, v in scorers.items() if compat.is_function_scorer(v) and any(
        r is not None and r is not False
        for r in get_routing_for_object(v).score.requests.values())}
    for k, v in scorers.items():  # a name or scorer the study cannot score: said in our words
        if v is not None and not is_plain_callable(v) and k not in requesting:
            get_metric(v, name="scoring")
    # then GridSearchCV's check: an estimator without score needs a scoring
    callables = {k: check_scoring(search.estimator, scoring=v) for k, v in scorers.items()}
    routing = compat.routing_enabled()
    score_params, weighted = {}, ()
    if routing:
        from sklearn.utils.metadata_routing import process_routing

        routed = process_routing(search, "fit", **params)
        fit_params, score_params = dict(routed.estimator.fit), dict(routed.scorer.score)
    else:
        fit_params = dict(params)
        score_params, weighted = _weighted_scoring(search, callables, params)
    # a scorer asking for metadata (sample_weight) is called by the fitted models, with it
    asking = requesting | set(weighted)
    # the estimator's own score, when it is not the accuracy or R² of its predictions
    own = {k for k, v in scorers.items() if v is None and not own_score_is_metric(search.estimator)}
    metrics = {k: get_metric(v, name="scoring") for k, v in scorers.items()
               if v is not None and not is_plain_callable(v) and k not in asking}
    # a label score of an estimator that is no classifier: its predict need not give y's
    # labels (the cube stores y's class codes), so it is called on the fitted models, as
    # GridSearchCV calls it
    from sklearn.base import is_classifier

    if not is_classifier(search.estimator):
        asking |= {k for k, m in metrics.items()
                   if m.is_classification and m.prediction == "labels"}
        metrics = {k: m for k, m in metrics.items() if k not in asking}

    def takes_params(key):
        return key in asking or (routing and bool(score_params) and
                                 not is_plain_callable(scorers[key]) and
                                 bool(get_routing_for_object(callables[key]).consumes(
                                     "score", list(score_params))))

    first = next(iter(scorers))
    primary_stored = first not in own and not takes_params(first) and (
        scorers[first] is None or first in metrics)
    # else the study stores the predictions of the estimator's own score
    metric = scorers[first] if primary_stored and scorers[first] is not None else \
        default_metric(search, y)
    want = stored_as(get_metric(metric, name="scoring"))
    fitted = tuple(k for k in scorers if (k == first and not primary_stored) or (
        k != first and (k not in metrics or takes_params(k) or stored_as(metrics[k]) != want)))
    if fitted and search.dropping:
        raise InvalidParameterError.of(
            "dropping", "False with scorers scored by the fitted fold models "
            "(the dropping test bootstraps the stored predictions of the study's metric)",
            search.dropping, note=f"Scored so: {', '.join(map(repr, fitted))}.")
    train = dict(callables) if search.return_train_score else {}
    scoring = FitScoring({k: callables[k] for k in fitted}, train, score_params,
                         routing and sklearn.get_config()["enable_metadata_routing"])
    return ScoringPlan(scorers, multimetric, metric, fitted,
                       scoring if scoring.width else None, fit_params)


def split_scores(search, study, plan):
    """``cv_results_`` with every scorer's keys, as ``GridSearchCV``'s: the study's own for
    the study's metric (and ``pooled_test_<key>`` with ``selection="pooled"``), the others
    per split from the stored predictions or the fitted models' scores (complete configurations and trained folds;
    NaN for the others; a failed fit's split score is ``error_score`` when a number),
    ``rank_test_<key>`` by the mean; with ``return_train_score``, ``split{i}_train_<key>``,
    ``mean_train_<key>``, ``std_train_<key>``."""
    from ..cube import FAILED
    from ..stats import grid_ranks, split_means

    first, out = plan.primary, {}
    for key, value in search.cv_results_.items():
        out[key[:-len("_score")] + f"_{first}" if key.endswith("test_score") and
            plan.multimetric else key] = value
    if plan.primary_fitted:  # the study's metric is not the scorer's: its keys go
        out.pop(f"pooled_test_{first}" if plan.multimetric else "pooled_test_score", None)
    st = study.state
    failed_cells = (st == FAILED).reshape(st.shape[0], -1).T  # (R*K, C)
    es = search.error_score
    sides = [("test", k) for k in plan.scorers if k in plan.fitted or
             (k != first and plan.multimetric)]
    if search.return_train_score:
        sides += [("train", k) for k in plan.scorers]
    for side, name in sides:
        F = (study.fit_scores(f"{side}_{name}") if side == "train" or name in plan.fitted
             else study.fold_scores(plan.scorers[name]))
        if not isinstance(es, str) and not np.isnan(es):
            F[failed_cells] = es  # as the study's metric's: a failed fit's split score
        for i, row in enumerate(F):
            out[f"split{i}_{side}_{name}"] = row
        mean, out[f"std_{side}_{name}"] = split_means(F)  # GridSearchCV's arithmetic
        out[f"mean_{side}_{name}"] = mean
        if side == "test":
            out[f"rank_test_{name}"] = grid_ranks(mean)
    return out


def fold_level_winner(study, plan, cv_results):
    """The winner of a study whose ``refit`` scorer is scored by the fitted models: the
    candidate with the best ``mean_test_<key>`` (ties to the lowest index)."""
    from ..stats import ranking

    idx = study.candidates()
    if idx.size == 0:
        return int(study.best_index_)  # says why there is none
    key = f"mean_test_{plan.primary}" if plan.multimetric else "mean_test_score"
    return int(idx[ranking(cv_results[key][idx])[0]])


def default_metric(search, y=None):
    """The metric of the estimator's own score: ``"accuracy"`` for a classifier,
    ``"r2"`` for a regressor. Another estimator (a clusterer, a duck-typed one without
    ``_estimator_type``) is selected by its own ``score``, called on the fitted fold
    models; the study stores what its ``predict`` gives as values where ``y`` is numeric
    (whatever they are: a cluster's id), as labels of y's classes otherwise."""
    from sklearn.base import is_classifier, is_regressor

    if is_classifier(search.estimator):
        return "accuracy"
    if is_regressor(search.estimator) or y is None:
        return "r2"
    return "r2" if np.asarray(y).dtype.kind in "iufb" else "accuracy"
