"""``BBCSearchCV``: the study as a scikit-learn meta-estimator."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
import weakref
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone
from sklearn.metrics import check_scoring
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .. import _sklearn_compat as compat
from .._doors import SEARCH_NAMES, by_class, door, warn
from ._callbacks import SearchCallbacks, managed
from ._dict_scoring import probe_keys
from ._multimetric import fold_level_winner, scoring_plan, split_scores
from ._search_run import (check_parameters, check_stop, checked_data, chosen_index,
                          cv_results, estimate, given_client, local_workers, refit_best,
                          run_raising, say_fits, say_fitting, search_cv, stopped_text,
                          warn_as_gridsearchcv)
from ..cluster import shared_client
from ..engine import Stop
from ..exceptions import InvalidParameterError, UnfinishedStudyWarning
from ..stats import Dropping

__all__ = ["BBCRandomizedSearchCV", "BBCSearchCV"]


def _delegate(name):
    """``available_if``'s check of a method of ``best_estimator_``: scikit-learn's own
    (with ``refit=False``, or an estimator without it, the same AttributeError)."""
    return compat.search_estimator_has(name)


class BBCSearchCV(MetaEstimatorMixin, compat.callback_support_mixin(), BaseEstimator):
    """Grid search cross-validated on Dask, with a bias-corrected estimate of the
    selected model's performance.

    Every configuration of ``param_grid`` is cross-validated (stratified ``cv`` folds,
    ``n_repeats`` partitions) by :func:`bbc_dask.run_study` into a Zarr prediction cube;
    the configuration with the best mean CV score (``GridSearchCV``'s winner, or by
    ``selection``) is refit on all data. ``bbc_`` and
    ``bbc_f_`` then estimate how well *that selected* model performs: the CV score of the
    winner (``best_score_``) is optimistic when many configurations were tried.

    Parameters
    ----------
    estimator : estimator object
    param_grid : dict or list of dicts
    scoring : str, scikit-learn scorer or None, default=None
        Any name of :func:`sklearn.metrics.get_scorer_names` that scores a classifier
        or a regressor (larger is better: losses are ``neg_``), or a
        :func:`sklearn.metrics.make_scorer` object; the registered :mod:`bbc_dask.metrics`
        names run on compiled kernels, the others call the scorer's function per
        bootstrap (slower; see docs/usage.md). The positive class of a binary scorer is
        the study's (the larger label, or the scorer's own ``pos_label``). A plain
        callable ``scorer(estimator, X, y)``, and a scorer that requests routed metadata
        (``set_score_request(sample_weight=True)``), is called by each task on the fold's
        fitted model: fold-level scores only, so configurations are ranked by
        ``mean_test_score``, the winner is refit in this process, ``bbc_f_`` is BBC-F on
        those scores and ``bbc_`` is not set. None, as in ``GridSearchCV``: the
        estimator's own ``score`` — ``"accuracy"`` for a classifier, ``"r2"`` for a
        regressor. Multimetric, as in ``GridSearchCV``: a list, tuple or set of names, or
        a dict of names to scorers, with ``refit`` naming the one the study runs with (the
        one that selects, is refit and that ``bbc_`` corrects); the others are scored per
        split on the study's stored predictions where they read the same ones (the same
        response method), else by each fold's fitted model (docs/usage.md, "Scores of the
        fitted fold models").
    n_jobs : int or None, default=None
        The local cluster's worker processes when no client is given or current (``-1``:
        one per core, ``-2`` all but one, as joblib counts; None: one per core). With a
        client, its workers run the study and ``n_jobs`` is ignored, with one warning.
    cv : int, scikit-learn splitter, iterable of (train, test) pairs or None, default=None
        As ``GridSearchCV``'s: None is 5 folds; an int the number of folds —
        ``StratifiedKFold`` for a classifier, ``KFold`` otherwise, unshuffled
        (scikit-learn's ``check_cv``, so the folds are ``GridSearchCV``'s); with ``groups``
        or ``n_repeats`` above 1, the study's own stratified folds (grouped, or shuffled
        per repeat by ``random_state``). Or the user's own splits: any splitter
        (``GroupKFold``, ``PredefinedSplit``, ``RepeatedStratifiedKFold``...) or list of
        index pairs whose test sets partition the samples, each model trained on the rest
        (see ``cv`` of :func:`bbc_dask.run_study`; ``n_repeats`` must then be 1).
    pre_dispatch : int or str, default="2*n_jobs"
        Accepted as ``GridSearchCV``'s, for scripts that pass it: the study bounds the
        tasks in flight itself (at least two per worker thread, more when tasks are
        short), so it changes nothing.
    n_repeats : int, default=1
        Partitions into folds (repeated CV); BBC resamples a sample with all its repeats.
    dropping : bool or Dropping, default=False
        BBCD-CV: drop configurations that are worse than the best with bootstrap
        probability above ``alpha`` between fold waves.
    n_bootstraps : int, default=1000
    confidence_level : float, default=0.95
    stop : Stop or dict, default=None
        Stop the study early (:class:`bbc_dask.Stop`: ``ci_width``, ``max_seconds``,
        ``max_fits``; see ``stop`` of :func:`bbc_dask.run_study`). A search stopped so is
        fitted on its incomplete CV: ``bbc_`` is BBC on it (``include_incomplete``; no
        ``bbc_f_`` while no configuration is complete), ``best_index_`` its winner and
        ``best_estimator_`` that winner refit; ``stopped_`` says why (None if it ran to
        the end). ``fit`` again with ``stop=None`` on the same ``store`` completes it.
    store : str or path, default=None
        The study's Zarr store; ``fit`` resumes an interrupted study there. None: a
        temporary store, removed with the estimator.
    refit : bool or callable, default=True
        True: the study's winner (``selection``) is refit on all data, by a task, and
        saved in the store. A callable, as in ``GridSearchCV``: ``refit(cv_results_)``
        returns ``best_index_``, whose configuration is refit in this process (not saved
        in the store); ``best_score_`` is then not set. ``bbc_`` and ``bbc_f_`` still
        estimate the study's own selection rule, which BBC repeats in every bootstrap —
        a callable's rule is not (it is called on whole ``cv_results_`` only).
    error_score : "raise" or float, default=np.nan
        ``"raise"``: the first configuration that raises stops the study with its error.
        A number is what ``cv_results_`` shows as the score of a failed fit (scikit-learn's
        rule). Unlike ``GridSearchCV``, a configuration with a failed fit is never
        selected and takes no part in ``bbc_``/``bbc_f_`` whatever the number: BBC
        resamples the out-of-sample *predictions* of complete configurations, and a failed
        fit has none (a score given for it would be a constant, not a prediction).
    client : distributed.Client, str or None, default=None
        None: the current default client if there is one, else this process's warm local
        cluster (``n_jobs`` workers), started by the first ``fit`` and kept for the next
        ones, as joblib keeps its workers (closed at exit, or by
        :func:`bbc_dask.close_shared_client`); a string is a scheduler address.
    random_state : int or None, default=None
        Seeds the bootstraps, and the study's own folds where ``cv`` asks for them (with
        ``groups`` or ``n_repeats`` above 1; an int ``cv`` is otherwise ``GridSearchCV``'s
        unshuffled folds).
    selection : {"fold_mean", "pooled"}, default="fold_mean"
        The winner (``best_index_``, the model refit, ``bbc_.selected_config`` and
        ``bbc_f_.selected_config``). ``"fold_mean"``: ``GridSearchCV``'s rule, the best
        ``mean_test_score`` (the mean of the (repeat, fold) scores, summed as
        ``GridSearchCV`` sums them; ties to the lowest index), so that ``best_index_``,
        ``best_params_``, ``best_score_`` and ``rank_test_score`` are ``GridSearchCV``'s
        on the same folds. ``"pooled"``: the best score of the pooled out-of-sample
        predictions (the 2018 paper's CVT, and the default of :func:`bbc_dask.run_study`
        and the command line: see docs/usage.md, "Which winner"). ``bbc_`` and ``bbc_f_``
        estimate this rule, repeated in every bootstrap.
    verbose : int, default=0
        Above 0, a progress bar of the study's tasks per wave (``run_study``'s
        ``progress``; with a cluster ``fit`` starts, its dashboard link); 0 is silent.
    return_train_score : bool, default=False
        True: every scorer also scores each fold's training rows, called by the task on
        the model it fitted (``split{i}_train_<name>``, ``mean_train_``, ``std_train_``;
        stored in the store's ``fit_score``).

    Attributes
    ----------
    best_estimator_, best_params_, best_index_ : the selected configuration, refit.
    best_score_ : float
        The selection criterion of ``best_index_``, so ``rank_test_score[best_index_] == 1``:
        ``cv_results_["pooled_test_score"][best_index_]`` with ``selection="pooled"``,
        ``cv_results_["mean_test_score"][best_index_]`` with ``"fold_mean"`` (scikit-learn's
        rule). It is the naive CV estimate of the winner (optimistic: ``bbc_`` corrects
        it).
    bbc_, bbc_f_ : BBCResult
        BBC-CV and BBC-F estimates with confidence intervals (``bbc_.method`` is
        ``"bbcd"`` with dropping); no ``bbc_`` when the ``refit`` scorer is scored by the
        fitted fold models (fold-level scores only).
    cv_results_ : dict
        ``GridSearchCV``'s keys: ``params``, ``param_*``, ``split{i}_test_score`` (one per
        (repeat, fold), repeat-major), ``mean_test_score`` and ``std_test_score`` over
        them, ``rank_test_score`` (by the selection criterion, as ``best_score_``),
        ``mean_fit_time``, ``std_fit_time`` (the fits alone) and ``mean_score_time``,
        ``std_score_time`` (each fold's prediction, the fitted model's own scores and its
        share of its block's fold scoring), as ``GridSearchCV`` splits them, for the cells
        this fit ran (a resumed study's earlier cells: fit times with their prediction,
        NaN score times — the store records fit times only); and
        ``pooled_test_score``, the score of the pooled out-of-sample predictions (mean
        over repeats).
    n_splits_ : int
        The number of ``split{i}_test_score`` columns: folds × repeats.
    refit_time_ : float
        Seconds the refit of the winner took, as the store recorded it (a finished study
        is not refit again; NaN for a store written before refit times were recorded).
        Not set with ``refit=False``.
    multimetric_ : bool
        Whether ``scoring`` named several scorers.
    scorer_ : callable or dict
        scikit-learn's scorer of ``scoring`` (``check_scoring``), as ``GridSearchCV``'s;
        :meth:`score` calls it.
    study_ : Study
    stopped_ : StopRecord or None
        Why the study stopped early (``stop``; :attr:`bbc_dask.Study.stopped_`), or None.
    n_features_in_, feature_names_in_, classes_ : as scikit-learn's searches.

    Notes
    -----
    It passes every check of scikit-learn's ``check_estimator`` with the default
    ``scoring`` (tests/test_search.py runs them; none exempted). ``"roc_auc"`` is binary:
    use ``"roc_auc_ovr"`` for multiclass problems. Input: DataFrames are passed to the
    estimator as they are (column names reach pipelines); other X are validated by
    ``check_array`` (numeric unless the estimator takes strings, NaN only if it allows).

    References
    ----------
    .. [1] Tsamardinos, Greasidou, Borboudakis, Machine Learning 107 (2018).
    """

    #: Checked at the start of ``fit``, before anything is fitted or stored (scikit-
    #: learn's constraint language; the errors name BBCSearchCV and the parameter).
    _parameter_constraints = {
        "estimator": [compat.HasMethods(["fit", "get_params"])],
        "param_grid": [dict, list],
        "scoring": [str, callable, list, tuple, set, dict, None],
        "n_jobs": [Integral, None],
        "pre_dispatch": [Integral, str],
        "cv": ["cv_object"],
        "n_repeats": [compat.Interval(Integral, 1, None, closed="left")],
        "dropping": ["boolean", Dropping],
        "n_bootstraps": [compat.Interval(Integral, 1, None, closed="left")],
        "confidence_level": [compat.Interval(Real, 0, 1, closed="neither")],
        "stop": [None, Stop, dict],
        "store": [str, os.PathLike, None],
        "refit": ["boolean", str, callable],
        "error_score": [compat.StrOptions({"raise"}), Real],
        "client": "no_validation",  # a Client, an address or make_client's arguments
        "random_state": [None, Integral, np.random.SeedSequence, np.random.Generator],
        "selection": [compat.StrOptions({"pooled", "fold_mean"})],
        "verbose": ["verbose"],
        "return_train_score": ["boolean"],
    }

    def __init__(self, estimator, param_grid, *, scoring=None, n_jobs=None, refit=True, cv=None,
                 verbose=0, pre_dispatch="2*n_jobs", error_score=np.nan,
                 return_train_score=False, n_repeats=1, dropping=False, n_bootstraps=1000,
                 confidence_level=0.95, store=None, client=None, random_state=None,
                 selection="fold_mean", stop=None):
        # scikit-learn's rule: __init__ stores its arguments, as they are, and nothing else
        for name, value in locals().items():
            if name != "self":
                setattr(self, name, value)

    def _sk_visual_block_(self):
        return compat.visual_block(self)  # the HTML diagram: GridSearchCV's

    @property
    def _estimator_type(self):
        return getattr(self.estimator, "_estimator_type", None)

    def __sklearn_tags__(self):
        # What fit supports, not what the estimator does: y is one column (a study's
        # target), so neither multilabel nor multi-output targets, whatever the base
        # estimator's own tags say (trees, forests and k-NN take 2-D y).

        from sklearn.utils import get_tags

        tags = super().__sklearn_tags__()
        sub = get_tags(self.estimator)
        tags.estimator_type = sub.estimator_type
        tags.target_tags.required = True
        tags.target_tags.multi_output = False
        if sub.classifier_tags is not None:
            tags.classifier_tags = dataclasses.replace(sub.classifier_tags, multi_label=False)
        if sub.regressor_tags is not None:
            tags.regressor_tags = sub.regressor_tags
        tags.input_tags.sparse = sub.input_tags.sparse
        # a precomputed kernel or distance matrix: cross-validation cuts its columns too
        tags.input_tags.pairwise = sub.input_tags.pairwise
        tags.input_tags.allow_nan = sub.input_tags.allow_nan
        return tags

    @door(by_class, SEARCH_NAMES)
    @managed
    def fit(self, X, y=None, groups=None, **params):
        """Cross-validate every configuration, refit the winner, estimate with BBC/BBC-F.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        groups : array-like of shape (n_samples,), default=None
            Group labels: folds never split a group (also passed to a ``cv`` splitter).
        **params : dict
            Parameters of the estimator's ``fit``, as ``GridSearchCV.fit`` takes them:
            without metadata routing every one goes to ``estimator.fit`` (for a Pipeline,
            ``step__param``); with ``sklearn.set_config(enable_metadata_routing=True)``,
            those the estimator requests (``set_fit_request``). Array-likes of one row per
            sample are sliced to each training set, and the refit takes them whole. They
            are part of the study: a resume with other values is refused.

        Returns
        -------
        self
        """
        from ..engine import Execution, Resampling, Scoring, Search, Storage, StudyRequest, run_cvt
        from ..study import study_of

        check_parameters(self)
        plan = scoring_plan(self, params, y)  # checked before anything runs
        check_stop(self, plan)
        X, y = checked_data(self, X, y)
        keys = probe_keys(self, X, y, plan.fit_params)  # a callable's dict of scores
        if keys is not None:
            plan = scoring_plan(self, params, y, keys)
        self.__dict__.pop("feature_names_in_", None)  # an earlier fit's
        store, overwrite = self.store, False
        if store is None:
            tmp = tempfile.mkdtemp(prefix="bbc_dask_")
            self._tmp_finalizer = weakref.finalize(self, shutil.rmtree, tmp, True)
            store, overwrite = f"{tmp}/study.zarr", True
        param_grid, param_distributions, n_iter = self._search()
        # a number is only what cv_results_ shows for a failed fit: the study runs as NaN
        error_score = self.error_score if isinstance(self.error_score, str) else np.nan
        request = StudyRequest.build(
            clone(self.estimator), X, y, search=Search(param_grid, param_distributions, n_iter),
            scoring=Scoring(plan.metric, None, error_score, self.selection, plan.fit_scoring),
            storage=Storage(store),
            resampling=Resampling(n_repeats=self.n_repeats, cv=search_cv(self, X, y, groups),
                                  groups=groups),
            # a callable's choice (or a fold-level scorer's) is known from cv_results_
            # only: refit here, below
            execution=Execution(given_client(self), progress=bool(self.verbose),
                                overwrite=overwrite,
                                refit=bool(self.refit) and not self._refit_here(plan),
                                stop=self.stop),
            dropping=self.dropping or None, random_state=self.random_state,
            fit_params=plan.fit_params)
        callbacks = SearchCallbacks.of(self, request, X, y, params)
        if callbacks is not None:  # their contexts go with the fits
            request = dataclasses.replace(request, data=dataclasses.replace(
                request.data, fit_callbacks=callbacks.shipped))
        say_fitting(self, request)
        scope = contextlib.ExitStack()
        if request.execution.client is None:  # checked: now the cluster, warm if it was
            shared = shared_client(local_workers(self))
            request = dataclasses.replace(request, execution=dataclasses.replace(
                request.execution, client=shared))
            # the study's tasks and estimates run on it; it stays out of the user's way as
            # the default client
            scope.enter_context(shared.as_current())
        with scope:
            study = study_of(run_raising(self, run_cvt, request))
            self.study_ = study
            self.stopped_ = study.stopped_
            check_stop(self, plan, study)
            study.said_unfinished = self.stopped_ is not None  # said once, by fit
            self.cv_results_ = cv_results(self, study)
            if plan.multimetric or plan.fitted or self.return_train_score:
                self.cv_results_ = split_scores(self, study, plan)
            self._select(study, plan)
            if callbacks is not None:
                callbacks.evaluated(study)
            self.scorer_ = ({k: check_scoring(self.estimator, scoring=v) for k, v in plan.scorers.items()}
                            if plan.multimetric else check_scoring(self.estimator, scoring=self.scoring))
            # random_state None: the study's own recorded seed, so that bbc_ equals what
            # open_study(store).bbc() and `bbc-dask estimate` report
            opts = dict(n_bootstraps=self.n_bootstraps, confidence_level=self.confidence_level)
            if self.random_state is not None:
                opts["random_state"] = self.random_state
            unestimated = estimate(self, study, plan, opts)
            # every (repeat, fold) is a split column, as RepeatedStratifiedKFold's are in
            # GridSearchCV
            self.n_splits_ = int(request.protocol.n_splits * request.protocol.n_repeats)
            self.multimetric_ = plan.multimetric
            say_fits(self, study)
            if self.refit and self._refit_here(plan):
                # the store's final model (if any) is the study's own winner's; this choice
                # is the callable's, or a fold-level scorer's, or the study keeps no model
                self.best_estimator_, self.refit_time_ = refit_best(self, study, request, X, y)
            elif self.refit:
                self.best_estimator_ = study.final_model
                self.refit_time_ = float(study.final_model_record.get("refit_time", np.nan))
            else:
                for name in ("best_estimator_", "refit_time_"):
                    if hasattr(self, name):
                        delattr(self, name)
            if callbacks is not None:
                if self.refit:
                    callbacks.refitted(study.params[self.best_index_])
                callbacks.ended()
            if hasattr(getattr(self, "best_estimator_", None), "feature_names_in_"):
                self.feature_names_in_ = self.best_estimator_.feature_names_in_
            study.said_unfinished = False
        warn_as_gridsearchcv(self, study, stacklevel=2, note=unestimated)  # fitted: a warning turned into an error leaves it usable
        if self.stopped_ is not None:
            warn(UnfinishedStudyWarning(stopped_text(self, study)), stacklevel=2)
        return self

    @property
    def classes_(self):
        """The class labels of ``best_estimator_``, as ``GridSearchCV``'s."""
        _delegate("classes_")(self)
        return self.best_estimator_.classes_

    @property
    def n_features_in_(self):
        """The number of features ``best_estimator_`` was fit on, as ``GridSearchCV``'s."""
        from sklearn.exceptions import NotFittedError

        try:
            check_is_fitted(self)
        except NotFittedError as exc:
            raise AttributeError(f"{type(self).__name__} object has no n_features_in_ "
                                 "attribute.") from exc
        return self.best_estimator_.n_features_in_

    def _select(self, study, plan):
        """``best_index_``, ``best_params_``, ``best_score_``: the callable ``refit``'s
        choice (no score, as GridSearchCV), a fold-level scorer's best
        ``mean_test_score`` (GridSearchCV's rule), or the study's winner."""
        if callable(self.refit):
            self.best_index_ = chosen_index(self, self.refit(self.cv_results_))
            if hasattr(self, "best_score_"):  # as GridSearchCV: no score of a callable's choice
                del self.best_score_
        elif plan.primary_fitted:
            self.best_index_ = fold_level_winner(study, plan, self.cv_results_)
            self.best_score_ = float(self.cv_results_[
                f"mean_test_{plan.primary}" if plan.multimetric else "mean_test_score"][self.best_index_])
        else:
            self.best_index_ = int(study.best_index_)
            self.best_score_ = float(study.best_score_)
        self.best_params_ = dict(study.params[self.best_index_])

    def _search(self):
        """``(param_grid, param_distributions, n_iter)`` of the engine's request."""
        return self.param_grid, None, 10

    def _refit_here(self, plan):
        """Whether the winner is refit by this estimator, not by the study (which saves
        its model in the store): for a callable ``refit``, or a ``refit`` scorer scored
        by the fitted fold models, the choice is known from ``cv_results_`` only; and a
        temporary store (``store=None``) is read by no one after the fit, so no model is
        saved there (saving imports skops, 0.9 s of a process's first fit)."""
        return callable(self.refit) or plan.primary_fitted or self.store is None

    @door(by_class, SEARCH_NAMES)
    def get_metadata_routing(self):
        """scikit-learn's metadata routing, as ``GridSearchCV``'s: ``fit``'s parameters go
        to the estimator's ``fit`` (every fold's fit and the refit) and to the scorers
        that request them (scored by each fold's fitted model, on its test rows).

        Returns
        -------
        sklearn.utils.metadata_routing.MetadataRouter
        """
        from sklearn.metrics import check_scoring
        from sklearn.utils.metadata_routing import MetadataRouter, MethodMapping

        from ._multimetric import ordered_scorers

        scorers, _ = ordered_scorers(self)
        scorer = compat.MultimetricScorer(scorers={k: check_scoring(self.estimator, scoring=v)
                                             for k, v in scorers.items()})
        return MetadataRouter(owner=type(self).__name__).add(
            estimator=self.estimator, method_mapping=MethodMapping().add(caller="fit", callee="fit")
        ).add(scorer=scorer, method_mapping=MethodMapping().add(
            caller="score", callee="score").add(caller="fit", callee="score"))

    def _check(self, X=None):
        check_is_fitted(self)
        if not self.refit:
            raise AttributeError("This BBCSearchCV was fitted with refit=False: there is no "
                                 "best_estimator_ to predict with.")
        return self.best_estimator_

    @available_if(_delegate("predict"))
    def predict(self, X):
        """Predict with ``best_estimator_``."""
        return self._check().predict(X)

    @available_if(_delegate("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities from ``best_estimator_``."""
        return self._check().predict_proba(X)

    @available_if(_delegate("predict_log_proba"))
    def predict_log_proba(self, X):
        return self._check().predict_log_proba(X)

    @available_if(_delegate("decision_function"))
    def decision_function(self, X):
        """Decision function of ``best_estimator_``."""
        return self._check().decision_function(X)

    @available_if(_delegate("transform"))
    def transform(self, X):
        return self._check().transform(X)

    @available_if(_delegate("inverse_transform"))
    def inverse_transform(self, X):
        return self._check().inverse_transform(X)

    @available_if(_delegate("score_samples"))
    def score_samples(self, X):
        """``score_samples`` of ``best_estimator_``."""
        return self._check().score_samples(X)

    @door(by_class, SEARCH_NAMES)
    def score(self, X, y=None, **params):
        """``scoring`` of ``best_estimator_`` on (X, y), by :attr:`scorer_` (multimetric:
        the refit scorer's, as ``GridSearchCV``); ``params`` go to the scorer with
        scikit-learn's metadata routing on (without it, refused as ``GridSearchCV``
        refuses them)."""
        est = self._check()  # not fitted: scikit-learn's NotFittedError first
        compat.raise_for_params(params, self, "score")
        score_params = {}
        if compat.routing_enabled():
            from sklearn.utils.metadata_routing import process_routing

            score_params = process_routing(self, "score", **params).scorer["score"]
        if self.multimetric_:
            if not isinstance(self.refit, str):
                raise InvalidParameterError.of(
                    "refit", "a scoring key for score() with multimetric "
                    "scoring", self.refit)
            return self.scorer_[self.refit](est, X, y, **score_params)
        return self.scorer_(est, X, y, **score_params)


class BBCRandomizedSearchCV(BBCSearchCV):
    """Randomized search cross-validated on Dask, with a bias-corrected estimate of the
    selected model's performance.

    :class:`BBCSearchCV` on ``n_iter`` configurations drawn from ``param_distributions``
    (scikit-learn's ``ParameterSampler``, seeded by ``random_state``: the study records
    the seed, so a resume draws the same configurations), as ``RandomizedSearchCV`` is
    ``GridSearchCV`` on random draws. Every other parameter and attribute is
    :class:`BBCSearchCV`'s.

    Parameters
    ----------
    estimator : estimator object
    param_distributions : dict or list of dicts
        Parameter names to distributions (with an ``rvs`` method) or lists, sampled
        uniformly; a list of dicts picks a dict uniformly first (``RandomizedSearchCV``).
    n_iter : int, default=10
        The number of configurations drawn (fewer if a grid of lists has fewer).
    random_state : int or None, default=None
        An int: the candidates are exactly ``ParameterSampler(param_distributions, n_iter,
        random_state=random_state)``'s, those of ``RandomizedSearchCV``; it also seeds the
        folds and the bootstraps. None (or a ``SeedSequence``/``Generator``): drawn from
        the study's seed, recorded in the store so that a resume draws the same.
    scoring, n_jobs, refit, cv, verbose, pre_dispatch, error_score, return_train_score, \
n_repeats, dropping, n_bootstraps, confidence_level, store, client, selection, stop
        As in :class:`BBCSearchCV`.

    Attributes
    ----------
    best_estimator_, best_params_, best_index_, best_score_, bbc_, bbc_f_, cv_results_, \
n_splits_, refit_time_, multimetric_, study_, stopped_, n_features_in_, feature_names_in_, \
classes_
        As in :class:`BBCSearchCV`.

    Examples
    --------
    >>> from scipy.stats import loguniform
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from bbc_dask import BBCRandomizedSearchCV
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> search = BBCRandomizedSearchCV(
    ...     make_pipeline(StandardScaler(), LogisticRegression()),
    ...     {"logisticregression__C": loguniform(1e-3, 1e2)}, n_iter=4, cv=5,
    ...     random_state=0, n_bootstraps=200)  # doctest: +SKIP
    >>> search.fit(X, y).bbc_.estimate  # doctest: +SKIP
    """

    _parameter_constraints = {
        **{k: v for k, v in BBCSearchCV._parameter_constraints.items() if k != "param_grid"},
        "param_distributions": [dict, list],
        "n_iter": [compat.Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, estimator, param_distributions, *, n_iter=10, scoring=None, n_jobs=None,
                 refit=True, cv=None, verbose=0, pre_dispatch="2*n_jobs", random_state=None,
                 error_score=np.nan, return_train_score=False, n_repeats=1, dropping=False,
                 n_bootstraps=1000, confidence_level=0.95, store=None, client=None,
                 selection="fold_mean", stop=None):
        # scikit-learn's rule: __init__ stores its arguments, as they are, and nothing else
        for name, value in locals().items():
            if name != "self":
                setattr(self, name, value)

    def _search(self):
        """With an int ``random_state``, ``RandomizedSearchCV``'s candidates as a grid of
        single points, in its order; else the study's own draws (see ``random_state``)."""
        rs = self.random_state
        if not isinstance(rs, Integral) or isinstance(rs, bool):
            return None, self.param_distributions, self.n_iter
        from sklearn.model_selection import ParameterSampler

        from ..engine import check_search

        check_search(None, self.param_distributions, self.n_iter)
        drawn = ParameterSampler(self.param_distributions, self.n_iter, random_state=rs)
        return [{k: [v] for k, v in point.items()} for point in drawn], None, self.n_iter

