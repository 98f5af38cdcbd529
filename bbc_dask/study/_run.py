"""``run_study``: a study's door: its request built from the arguments, the engine
called, the :class:`~bbc_dask.Study` of the run returned."""
from __future__ import annotations

import time

import numpy as np

from .._doors import door
from .._run_warnings import warn_failures
from ._study import study_of

__all__ = ["run_study"]


@door("run_study")
def run_study(
    estimator,
    param_grid=None,
    X=None,
    y=None,
    *,
    store,
    metric,
    n_splits=10,
    n_repeats=1,
    cv=None,
    groups=None,
    param_distributions=None,
    n_iter=10,
    error_score=np.nan,
    pos_label=None,
    refit=True,
    random_state=None,
    client=None,
    overwrite=False,
    progress=True,
    configs_per_task=None,
    dropping=None,
    metadata=None,
    storage_options=None,
    security=None,
    selection="pooled",
    fit_params=None,
    stop=None,
):
    """Cross-validate every configuration on Dask into a resumable Zarr prediction cube.

    Every configuration (grid point or random draw) is K-fold cross-validated (stratified
    for classification, grouped with ``groups``), ``n_repeats`` times with partitions from
    spawned seeds. Out-of-sample predictions go into the cube at ``store``; the winner
    (best pooled CV score, as :func:`bbc_dask.bbc` selects, or by ``selection``) is refit
    on all data.

    Calling it again with the same arguments and store resumes: finished cells are read
    back, not recomputed. A store of another study is refused (the error lists what
    differs) unless ``overwrite=True``.

    Parameters
    ----------
    estimator : scikit-learn estimator or Pipeline
    param_grid : dict or list of dicts, default=None
        As in ``GridSearchCV``.
    X : array-like or DataFrame of shape (N, n_features)
    y : array-like of shape (N,)
    store : str or path
        Directory of the Zarr store, or an fsspec URL (``s3://bucket/study.zarr``; needs
        ``bbc-dask[s3]`` for S3). On an object store the run lock is a lease object renewed
        by a heartbeat (see :class:`bbc_dask.cube.ObjectStoreLock`).
    metric : str or scikit-learn scorer
        A :mod:`bbc_dask.metrics` name (compiled kernels); decides what is stored: the
        positive-class decision function or probability (``roc_auc``), class labels
        (``accuracy``, ``balanced_accuracy``, ``f1``), all class probabilities
        (``roc_auc_ovr``, ``neg_log_loss``) or predicted values (regression). Or any
        other name of :func:`sklearn.metrics.get_scorer_names` that scores a classifier
        or a regressor, or a :func:`sklearn.metrics.make_scorer` object: the cube stores
        the scorer's response (labels or values for ``predict``, one column per class for
        ``predict_proba``/``decision_function``) and every score is the scorer's own
        function on it, with this study's ``pos_label`` (the scorer's own ``pos_label``
        sets it). Those are slow (a scikit-learn call per bootstrap and configuration:
        minutes for BBC with 1,000 bootstraps and 50 configurations), in memory only, and
        take no ``dropping``; a store reopened rebuilds a ``make_scorer`` of a
        :mod:`sklearn.metrics` function only (else ``open_study(store, scoring=...)``).
        A plain callable ``scorer(estimator, X, y)`` is refused (no fold models are
        kept; :class:`~bbc_dask.BBCSearchCV` scores each fold's model with one). See
        docs/usage.md, "Metrics".
    n_splits : int, default=10
    n_repeats : int, default=1
    cv : scikit-learn splitter, iterable of (train, test) pairs or Protocol, default=None
        The user's own splits instead of ``n_splits`` × ``n_repeats`` K-fold (leave those
        at their defaults): ``GroupKFold``, ``PredefinedSplit``, ``RepeatedKFold``, a list
        of index arrays... Consecutive test sets that together hold every sample once make
        one repeat, and every model is trained on all samples outside its test set: BBC
        and BBC-F resample whole samples and folds, so they are defined on such splits
        only. Splitters that train on a part of the rest (``TimeSeriesSplit``) or whose
        test sets overlap (``ShuffleSplit``) are refused. The splits are taken once; the
        store records their digest, so a resume with other splits is refused (give a
        shuffling splitter a ``random_state``). A :class:`bbc_dask.Protocol` (one of your
        own, registered with :func:`bbc_dask.register_protocol`) gives its folds and hooks.
    groups : array-like of shape (N,), default=None
        Group labels: folds never split a group (also passed to ``cv.split``).
    param_distributions : dict, default=None
        Random search (``ParameterSampler``) with ``n_iter`` draws instead of a grid.
    n_iter : int, default=10
    error_score : np.nan or "raise", default=np.nan
        A configuration that raises gets NaN predictions and its error text is recorded;
        with ``"raise"`` the study stops with an error naming the configuration.
    pos_label : label, default=None
        Positive class for binary metrics (default: the larger label).
    refit : bool, default=True
        Refit the winner on all data as a task; saved with skops (no pickle).
    random_state : int, SeedSequence, Generator or None
        The seed of the folds (one spawned child per repeat) and of random search. With
        None a fresh seed is drawn and recorded; a resume with None reuses it.
    client : distributed.Client, str, dict or None
        An existing client, a scheduler address, None for a local cluster of processes (one
        thread each), or a dict of :func:`bbc_dask.make_client` arguments (``{"kind":
        "local", "n_workers": 4}``); the last two are started and closed by the run.
    overwrite : bool, default=False
        Replace an existing study store at ``store``.
    progress : bool, default=True
        A progress bar of tasks per wave (and the dashboard link of a started cluster).
    configs_per_task : int or None, default=None
        Configurations per block: the cube's chunk size along ``config`` (fixed when the
        store is created) and the smallest unit of work. A task fits one or more
        blocks on one training set: blocks are grouped by their measured fit times so that
        a task lasts about 1 s, hence small blocks cost little. None: 1 for up to
        127 configurations, then ``n_configs // 64`` up to 10 — small blocks balance the
        waves of uneven grids (a forest next to a logistic regression), large grids keep
        the number of chunk files down.
    dropping : bool or Dropping, default=None
        BBCD-CV: after each fold wave, drop the configurations that are worse than the
        current best with bootstrap probability > ``alpha`` (``True`` = ``Dropping()``);
        dropped configurations train no further folds. The test runs as a task on the
        cluster; its decisions are persisted before the next wave and replayed on resume.
    metadata : dict, default=None
        JSON-serialisable description stored with the study when the store is created
        (the command line keeps the resolved study file there); ``Study.metadata``.
    storage_options : dict, default=None
        fsspec options of a URL ``store`` (credentials, ``client_kwargs={"endpoint_url":
        ...}``); they also travel with the tasks that read the cube.
    security : distributed.security.Security, dict or None
        TLS settings of the clients this run creates (a scheduler address in ``client``,
        or the local cluster, which then runs over TLS). A dict is passed to ``Security``
        (e.g. ``{"tls_ca_file": ..., "tls_client_cert": ..., "tls_client_key": ...}``).
    selection : {"pooled", "fold_mean"}, default="pooled"
        How the winner is chosen among the candidates (complete and not dropped) — the model refit, the
        study's ``best_index_`` and the ``selected_config`` of :meth:`Study.bbc`: the best
        score on the pooled out-of-sample predictions (mean over repeats; the 2018
        paper's CVT), or the best mean of its (repeat, fold) scores (the 2024 paper's
        code, BBC-F's winner). Recorded with the study.
    fit_params : dict, default=None
        Parameters of every ``estimator.fit`` (``{"sample_weight": w}``; for a Pipeline,
        ``{"logisticregression__sample_weight": w}``): an array-like with one row per
        sample is sliced to each training set, as ``GridSearchCV`` slices them, and given
        whole to the refit; other values are passed as they are. They travel to the
        workers as X does, and their digest is recorded with the study: a resume with other
        fit parameters is refused. Not in nested cross-validation.
    stop : Stop or dict, default=None
        Stop early (:class:`bbc_dask.Stop`; a dict of its arguments): once BBC's interval
        on the incomplete CV is at most ``ci_width`` wide (checked as each fold wave
        completes), after ``max_seconds`` of this run, or at ``max_fits`` fitted cells of
        the study. Tasks in flight finish and are recorded; :attr:`Study.stopped_` says
        why, and ``Study.bbc(include_incomplete=True)`` is the estimate. The winner
        refit (``best_index_``) is the incomplete CV's: the best complete configuration,
        or with none complete the best on the cells each predicted. Not recorded with the
        study: a rerun without it (or with a laxer rule) resumes, fitting only what is
        pending, and refits only if its winner changed.

    Returns
    -------
    Study

    References
    ----------
    .. [1] Tsamardinos, Greasidou, Borboudakis, Machine Learning 107 (2018), Algorithm 2.
    """
    t0 = time.perf_counter()  # the engine's first import is on the user's clock too
    from ..engine import Execution, Resampling, Scoring, Search, Storage, StudyRequest, run_cvt

    request = StudyRequest.build(
        estimator, X, y, search=Search(param_grid, param_distributions, n_iter),
        scoring=Scoring(metric, pos_label, error_score, selection),
        storage=Storage(store, storage_options),
        resampling=Resampling(n_splits, n_repeats, cv, groups),
        execution=Execution(client, security, progress, configs_per_task, overwrite, refit, stop),
        dropping=dropping, random_state=random_state, metadata=metadata, fit_params=fit_params)
    checked = time.perf_counter() - t0
    study = study_of(run_cvt(request))
    study.run_seconds_ = {"request": checked, **study.run_seconds_}
    warn_failures(study, stacklevel=2)
    return study
