"""Study: the results of a CVT run, read from its Zarr store; its estimates are those of
the :class:`~bbc_dask.study._estimates.StudyEstimates` it holds."""
from __future__ import annotations

import functools
import time
import warnings

import numpy as np

from .. import _sklearn_compat as compat
from .._doors import door, passing
from ..cube import (DONE, DROPPED, FAILED, PENDING, complete, failure_groups, fitted_cells,
                    incomplete_scores, load_model, open_cube, pooled_scores, stopped_early,
                    winner_and_score)
from ..exceptions import StoreMismatchError, StudyFileError, StudyNotReadyError
from ..metrics import metric_of_spec
from ..stats import grid_ranks, split_means
from ._estimates import StudyEstimates, study_seed

__all__ = ["Study", "open_study", "study_of"]


def _estimate(method):
    """The :class:`Study` method of its estimates' ``method`` (same name, signature and
    docstring): the study reads, the estimates it holds compute."""

    @functools.wraps(method)
    @passing
    def delegated(self, *args, **kwargs):
        return method(self._estimates, *args, **kwargs)

    # a Study's method, whatever functools.wraps copied: pickle finds it by this name
    delegated.__qualname__ = f"Study.{method.__name__}"
    delegated.__module__ = __name__
    return delegated


class Study:
    """A cross-validation-with-tuning study backed by its Zarr store.

    Returned by :func:`bbc_dask.run_study` and :func:`open_study`. Everything is read from
    the store, so a study opened later (or elsewhere) gives the same answers.

    Attributes
    ----------
    store : str
        The store's absolute path or URL.
    location : bbc_dask.cube.StoreLocation
    cube : xarray.Dataset
        The prediction cube, lazily backed by the store.
    metric : str
        The metric's name (a ``make_scorer`` object's is its repr).
    n_fits_ : int
        Fits performed by the call that returned this object (0 for :func:`open_study`).
    stopped_ : bbc_dask.engine.StopRecord or None
        Why the last run stopped early (``run_study(stop=...)``), while cells are pending.
    fit_warnings_ : dict
        The warnings those fits raised, ``{(module, class name, text): count}``: collected
        by the tasks and shown once each by :func:`run_study` (empty for
        :func:`open_study`).
    run_seconds_ : dict
        The wall seconds of each phase of the call that returned this object, in the order
        they ran (they add up to its wall time, but for the short steps between them):
        ``request`` (the engine imported on first use, arguments checked, data
        fingerprinted), ``plan`` (the store inspected, configurations planned, the columns
        checked by a small fit), ``connect`` (the cluster started or reached), ``store``
        (the store locked, opened or created), ``waves`` (the fits; the pooled scores of
        configurations complete while they run), ``decisions`` (BBCD's dropping tests),
        ``ledger`` (the last ledger batch, its checksums), ``pooled`` (pooled scores not
        computed during the waves), ``winner`` (the winner refit, or nested CV's outer
        folds), ``close`` (the cluster closed, the lock released). Empty for
        :func:`open_study`.
    """

    @door("open_study")
    def __init__(self, store, final_model=None, storage_options=None, scoring=None):
        self._attach(open_cube(store, storage_options=storage_options), final_model, scoring)

    @classmethod
    def _of_run(cls, run):
        """The study of a finished :class:`~bbc_dask.engine.CVTRun`, on the cube the run
        had open (not opened again)."""
        study = cls.__new__(cls)
        study._attach(run.cube, run.final_model)
        study._param_objects = run.configs
        study._score_times = run.score_times
        study.n_fits_ = run.fits
        study.fit_warnings_ = run.warned or {}
        study.run_seconds_ = dict(run.phases or {})
        return study

    def _attach(self, cube, final_model, scoring=None):
        from ..engine import protocol_class  # the engine, loaded on first use

        protocol = protocol_class(cube.protocol_kind)
        if protocol is not None and not protocol.opens_as_study:  # nested CV's
            raise StoreMismatchError(
                f"The store {cube.location.url!r} holds a nested cross-validation, not a "
                f"study: read it with bbc_dask.open_nested (its repeats are inner CVs that "
                f"leave each outer test set out, on which BBC is not defined).")
        self._cube = cube
        self._score_times = None  # measured by the run that fitted the cells (see cv_results_)
        self.location = self._cube.location
        self.store = self.location.url
        self.meta = self._cube.meta  # the store's attributes, as they are (read only)
        self.spec = self._cube.spec
        self.metric = self.spec["metric"]
        self._estimates = StudyEstimates(cube)
        if "scorer" in self.spec or scoring is not None:
            # a make_scorer study: its metric made known by name in this process (rebuilt
            # from the store for a sklearn.metrics function, else the scorer given again)
            metric_of_spec(self.spec, scoring)
        self._final_model = final_model
        self._param_objects = None  # the real parameter values when run in this process
        self.n_fits_ = 0
        self.fit_warnings_ = {}
        self.run_seconds_ = {}

    def __setstate__(self, state):
        """A copy or an unpickled study holds estimates of its own, made again from its
        cube (a study pickled before the estimates were a part of it has none)."""
        shared = state.get("_estimates")
        said = state.pop("said_unfinished", getattr(shared, "said_unfinished", False))
        self.__dict__.update(state)
        self._estimates = StudyEstimates(self._cube)
        self._estimates.said_unfinished = bool(said)

    def __repr__(self):
        st = self._cube.state()
        pos = self.pos_label
        pos = "" if pos is None else f", pos_label={pos!r}"
        return (f"Study(store={self.store!r}, metric={self.metric!r}{pos}, configs={st.shape[0]}, "
                f"repeats={st.shape[1]}, folds={st.shape[2]}, cells done "
                f"{int((st == DONE).sum())}/{st.size})")

    # ----------------------------------------------------------------- contents
    @property
    def cube(self):
        return self._cube.dataset()

    @property
    def _configs(self):
        if self._param_objects is None:
            from ..engine import Configurations

            desc = self._cube.configurations
            self._param_objects = (self._from_study_file(desc) or Configurations.from_description(desc)
                                   if desc is not None else list(self._cube.listed_params))
        return self._param_objects

    def _from_study_file(self, desc):
        """The configurations rebuilt as objects from the study file the command line
        stored (its estimators built by the study file's rules: scikit-learn estimator
        classes only), if they describe exactly what the store holds; else None (the
        stored description, values that are not JSON by their repr)."""
        resolved = self.metadata
        if desc.get("kind") != "grid" or not isinstance(resolved, dict) or not isinstance(resolved.get("grid"), list):
            return None
        from sklearn.model_selection import ParameterGrid

        from .._composed import build_search
        from .._fingerprint import same_described
        from ..engine import Configurations

        try:
            rebuilt = Configurations("grid", ParameterGrid(build_search(resolved)[1]))
        except (StudyFileError, KeyError, TypeError, ValueError):
            return None  # a class this environment lacks: the stored description
        # reprs hold memory addresses (a column selector's) and NaN is not equal to itself
        return rebuilt if same_described(rebuilt.describe(), desc) else None

    @property
    def params(self):
        """Parameters of every configuration: the real values when the study was run by
        this process, else as stored (values that are not JSON are their repr)."""
        return list(self._configs)

    @property
    def seed(self):
        """The study's own seed (a ``numpy.random.SeedSequence``): the default
        ``random_state`` of its estimates, so every way of asking (``Study.bbc()``,
        ``bbc-dask estimate``, the report, ``BBCSearchCV``) gives the same numbers. For
        ``run_study(random_state=0)`` it equals ``random_state=0``."""
        return study_seed(self.spec)

    def failures(self):
        """The first errors of failed configurations, grouped by message, most frequent
        first: a list of ``{"error", "count", "configs"}``."""
        return failure_groups(self._cube)

    @property
    def state(self):
        """Cell states ``(config, repeat, fold)``: 0 pending, 1 done, 2 failed, 3 dropped."""
        return self._cube.state()

    @property
    def errors(self):
        """``{config: error text}`` of the configurations that raised."""
        err = self._cube.errors()
        return {int(i): str(err[i]) for i in np.flatnonzero(err != "")}

    def complete_configs(self):
        """Indices of configurations with every (repeat, fold) cell done."""
        return np.flatnonzero(complete(self._cube.state()))

    def candidates(self):
        """Indices of the configurations the study selects among and its estimates are
        conditioned on: complete, and not dropped — with BBCD the survivors (a
        configuration dropped after the last wave is complete but not a candidate)."""
        return self._estimates.candidates()

    @property
    def metadata(self):
        """The ``metadata`` given to :func:`run_study` (the command line's study file)."""
        return self._cube.metadata

    @property
    def final_model_record(self):
        """What the store records of its final model (its configuration, refit seconds,
        files), or None."""
        return self._cube.final_model_record

    def status(self):
        """Progress: cells done/failed/dropped/pending, fold waves done, active
        configurations, whether a run holds the store, elapsed and estimated remaining
        seconds of the latest run (remaining from its rate so far; None when unknown), and
        ``stopped``: the rule that stopped it early (``"ci_width"``, ``"max_seconds"``,
        ``"max_fits"``; see :attr:`stopped_`), or None. ``running`` is True while a run
        holds the store's lock; ``starting`` while that run has not begun its waves yet
        (it holds the lock and no run record is its own: it is opening or creating the
        store, or starting its cluster)."""
        st = self._cube.state()
        waves = 0
        for k in range(st.shape[2]):  # a wave is done when no cell of fold k is pending
            if (st[:, :, k] == PENDING).any():
                break
            waves += 1
        pending = int((st == PENDING).sum())
        active = (self._cube.dropped_waves()[0] < 0) & ~np.any(st == FAILED, axis=(1, 2))
        holder = self.location.lock().holder()
        running = holder is not None
        runs = self._cube.runs
        # the run holding the lock has begun once a run record names its token (a lock
        # without one, from an older version or not yet written, is taken as begun)
        starting = running and bool(holder.get("token")) and (
            not runs or runs[-1].get("lock") != holder["token"])
        if starting:
            runs = runs + [{}]  # the last record is an earlier run's: not this one's times
        elapsed = remaining = None
        # a run that is not running and never recorded its end was killed: when it ended
        # is unknown, and counting to now would grow its elapsed time for ever
        if runs and "t0" in runs[-1] and (running or "t1" in runs[-1]):
            last = runs[-1]
            elapsed = (time.time() if running else last["t1"]) - last["t0"]
            done_now = int((st != PENDING).sum())
            rate = (done_now - last.get("done_before", 0)) / elapsed if elapsed > 0 else 0
            remaining = 0.0 if pending == 0 else (pending / rate if running and rate > 0 else None)
        return {
            "cells": int(st.size), "done": int((st == DONE).sum()),
            "models_trained": fitted_cells(st), "models_full": int(st.size),
            "failed": int((st == FAILED).sum()), "dropped": int((st == DROPPED).sum()),
            "pending": pending, "waves_done": waves, "waves": int(st.shape[2]),
            "active_configs": int(active.sum()),
            "complete_configs": int(complete(st).sum()), "configs": int(st.shape[0]),
            "running": running, "starting": starting, "elapsed_s": elapsed,
            "remaining_s": remaining,
            "stopped": (runs[-1]["stopped"]["reason"] if not running and stopped_early(self._cube, st)
                        else None),
        }

    @property
    def stopped_(self):
        """Why the study's last run stopped early (a :class:`~bbc_dask.engine.StopRecord`:
        the rule of ``run_study(stop=...)`` that held, when, the fits then), or None: the
        study is complete, or its last run was not stopped by a rule (it is running, was
        interrupted, or had none)."""
        from ..engine import StopRecord

        if not stopped_early(self._cube):
            return None
        return StopRecord.from_json(self._cube.runs[-1]["stopped"])

    @property
    def selection(self):
        """How the study's winner is chosen (``run_study``'s ``selection``):
        ``"pooled"`` or ``"fold_mean"``."""
        return self._estimates.selection

    @property
    def pos_label(self):
        """The class the study's metric scores as positive (``roc_auc``, ``f1``, a
        scorer that takes a ``pos_label``, on two classes): ``run_study``'s
        ``pos_label``, by default the larger label; None where the metric has none. The
        estimates (:meth:`bbc`, :meth:`bbc_f`) and the reports name it."""
        return self._estimates.pos_label

    @property
    def is_bbcd(self):
        """True when the study ran with BBCD-CV dropping."""
        return self._estimates.is_bbcd

    @property
    def dropped(self):
        """Dropped configurations: a list of ``{"config", "wave", "p_hat"}`` by wave."""
        dw, dp = self._cube.dropped_waves()
        out = [{"config": int(c), "wave": int(dw[c]), "p_hat": float(dp[c])}
               for c in np.flatnonzero(dw >= 0)]
        return sorted(out, key=lambda d: (d["wave"], d["config"]))

    @property
    def dropping_log(self):
        """Per tested wave: active configurations before/after, what was dropped."""
        return self._cube.decisions()

    @property
    def models_trained(self):
        """``(trained, full)``: fits run (done or failed cells) versus the full CVT count."""
        st = self._cube.state()
        return fitted_cells(st), int(st.size)

    @property
    def fit_scorers(self):
        """The labels of :meth:`fit_scores`: ``"test_<name>"`` and ``"train_<name>"`` per
        scorer a ``BBCSearchCV`` scored by the fitted fold models; () for most studies."""
        return self._cube.fit_scorer_labels()

    @property
    def said_unfinished(self):
        """Whether the command line or the report told the user that the study is
        unfinished: its estimates then do not warn of it again."""
        return self._estimates.said_unfinished

    @said_unfinished.setter
    def said_unfinished(self, value):
        self._estimates.said_unfinished = bool(value)

    # ---------------------------------------------------------------- estimates
    unfinished = _estimate(StudyEstimates.unfinished)
    incomplete_estimable = _estimate(StudyEstimates.incomplete_estimable)
    bbc = _estimate(StudyEstimates.bbc)
    bbc_f = _estimate(StudyEstimates.bbc_f)
    selection_ci = _estimate(StudyEstimates.selection_ci)
    fold_scores = _estimate(StudyEstimates.fold_scores)
    fit_scores = _estimate(StudyEstimates.fit_scores)

    # ------------------------------------------------------ scikit-learn view
    @property
    @door("Study.cv_results_")
    def cv_results_(self):
        """scikit-learn-shaped results. ``split{i}_test_score`` are per (repeat, fold) in
        repeat-major order; ``mean_test_score``/``std_test_score`` over them;
        ``pooled_test_score`` is the metric on all pooled out-of-sample predictions (mean
        over repeats); ``rank_test_score`` ranks the study's selection criterion
        (:attr:`selection`: the pooled score, or the mean of the fold scores) by
        ``GridSearchCV``'s rule (equal scores share the smallest rank), so that
        ``best_index_`` ranks first and :attr:`best_score_` is that criterion there;
        ``mean_fit_time``/``std_fit_time`` over the fits and ``mean_score_time``/
        ``std_score_time`` over their predictions and scores, as ``GridSearchCV`` splits
        them, for the cells the run in this process fitted; a study opened from its store
        (or cells fitted by an earlier run) has fit times that include the prediction,
        and NaN score times: the store records fit times only. An :meth:`unfinished` study
        warns (:class:`~bbc_dask.exceptions.UnfinishedStudyWarning`): NaN scores but for
        the configurations complete so far."""
        st = self._cube.state()
        n_cfg = st.shape[0]
        idx = self.complete_configs()
        n_rows = st.shape[1] * st.shape[2]
        splits = np.full((n_rows, n_cfg), np.nan)
        pooled = np.full(n_cfg, np.nan)
        if idx.size:
            splits[:, idx] = self._cube.fold_scores()[idx].reshape(idx.size, -1).T
            pooled[idx] = pooled_scores(self._cube, idx).mean(axis=1)
        # GridSearchCV's arithmetic: its means to the bit on the same split scores
        mean, std = split_means(splits)
        criterion = pooled
        if self.selection == "fold_mean":  # the winner's own means: the same ties
            criterion = mean  # NaN but for complete configurations, as ``splits``
        if idx.size == 0 and stopped_early(self._cube, st):
            # stopped before any completed: ranked as its winner was chosen (best_index_)
            criterion = incomplete_scores(self._cube)
        ft = self._cube.fit_times().reshape(n_cfg, -1)
        sc = np.full(ft.shape, np.nan)
        if self._score_times is not None:
            # GridSearchCV's split, where this process measured it: the fit alone, and
            # the prediction with the scores (the store records fit and prediction together)
            fit_only = self._score_times.fit.reshape(n_cfg, -1)
            ft = np.where(np.isnan(fit_only), ft, fit_only)
            sc = self._score_times.score.reshape(n_cfg, -1)
        # scikit-learn's own columns: a masked array per parameter, typed as its search
        # types them (float64 for floats, object for strings, estimators or mixed values)
        out = dict(compat.param_columns(self.params))
        out["params"] = self.params
        for i in range(n_rows):
            out[f"split{i}_test_score"] = splits[i]
        with np.errstate(invalid="ignore"):
            out["mean_test_score"], out["std_test_score"] = mean, std
            out["pooled_test_score"] = pooled
            out["rank_test_score"] = grid_ranks(criterion)
            out["mean_fit_time"] = np.nanmean(np.where(np.isnan(ft), np.nan, ft), axis=1) if ft.size else ft
            out["std_fit_time"] = np.nanstd(ft, axis=1) if ft.size else ft
            # measured by the run in this process (each cell's prediction, the fitted
            # model's own scores and its share of its block's fold scoring); NaN for cells
            # fitted by another process or run, whose store keeps their fit times only
            out["mean_score_time"], out["std_score_time"] = _nan_mean_std(sc)
        self._estimates.warn_unfinished(so_far=True)  # once read: not if it raised
        return out

    @property
    @door("Study.best_index_")
    def best_index_(self):
        """The winner among the :meth:`candidates` by the study's :attr:`selection` (the
        configuration refit); an unfinished study's, from the configurations complete so
        far, with an :class:`~bbc_dask.exceptions.UnfinishedStudyWarning`. A study stopped
        by its rule (:attr:`stopped_`) before any configuration completed has its
        incomplete CV's winner: the best score on the cells each configuration predicted
        (pooled: the metric on the samples predicted in each repeat, mean over repeats;
        fold_mean: the mean of the recorded fold scores), as
        ``bbc(include_incomplete=True).selected_config``; it is the one refit."""
        best = self._estimates.winner()
        self._estimates.warn_unfinished(so_far=True)
        return best

    @property
    @door("Study.best_params_")
    def best_params_(self):
        """The parameters of :attr:`best_index_` (which see: the same warning)."""
        best = self._estimates.winner()  # not best_index_: one warning per access
        self._estimates.warn_unfinished(so_far=True)
        return self._configs[best]

    @property
    @door("Study.best_score_")
    def best_score_(self):
        """The winner's CV score by the study's :attr:`selection` — pooled, or the mean of
        its fold scores (``mean_test_score``): the naive, optimistic CVT estimate, which
        is ``Study.bbc().naive_estimate`` (warns as :attr:`best_index_`)."""
        best = None
        if self.candidates().size or self.stopped_ is not None:  # as best_index_: one exists
            best, score = winner_and_score(self._cube)
        if best is None:
            self._estimates.winner()  # raises StudyNotReadyError, saying why
        self._estimates.warn_unfinished(so_far=True)
        return score

    @property
    def final_model(self):
        """The winner refit on all data (loaded with skops from the store if needed)."""
        if self._final_model is None:
            self._final_model = self.load_final_model()
        return self._final_model

    @door("load_final_model")
    def load_final_model(self, trusted=None):
        """Load the saved final model with skops (never pickle).

        Trusted: skops' default types, the classes the study recorded when it saved the
        model (with the file's SHA-256: a changed file is refused), and the names in
        ``trusted``. Functions (e.g. a ``FunctionTransformer``'s ``func``) are trusted
        only when named here: a chain of library functions can run arbitrary code.

        Parameters
        ----------
        trusted : list of str, default=None
            Extra type or function names to trust (as skops lists them).
        """
        info = self.final_model_record
        if not info:
            raise StudyNotReadyError(f"The study at {self.store!r} has no final model (refit=False or not finished).")
        best = self._estimates.winner()
        if info["config"] != best:  # refit when its rule stopped it; a rerun without refit
            raise StudyNotReadyError(
                f"The study at {self.store!r} holds the model of configuration "
                f"{info['config']}, its winner when its rule stopped it; its winner is now "
                f"configuration {best}: run it again with refit=True to refit that one.")
        return load_model(self.location, info, trusted)


@door("open_study")
def open_study(store, storage_options=None, scoring=None):
    """Open a finished or interrupted study read-only (everything but refitting).

    Parameters
    ----------
    store : str or path
        The study's directory or fsspec URL (``s3://bucket/study.zarr``).
    storage_options : dict, default=None
        fsspec options of a URL store (credentials, endpoint).
    scoring : scikit-learn scorer, default=None
        The study's ``make_scorer`` object, given again: needed only when its function
        is not one of :mod:`sklearn.metrics` (the store records it by name, and is
        never made to import and call anything else); checked against the store's
        description.
    """
    return Study(store, storage_options=storage_options, scoring=scoring)


def _nan_mean_std(a):
    """NumPy's mean and standard deviation of each row of ``a`` over its finite values;
    NaN for a row without one, quietly (a study opened from its store has no score
    times)."""
    with warnings.catch_warnings():  # the driver's main thread: no worker shares it
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(a, axis=1), np.nanstd(a, axis=1)


def study_of(run):
    """The :class:`Study` of a finished :class:`~bbc_dask.engine.CVTRun`."""
    return Study._of_run(run)
