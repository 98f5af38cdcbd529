"""A study's estimates: BBC, BBC-F, BBCD and the 2024 paper's comparators on the store's
configurations. A :class:`~bbc_dask.Study` reads its store and holds one
:class:`StudyEstimates`, which computes from the store's gateway alone (it knows no
:class:`~bbc_dask.Study`)."""
from __future__ import annotations

import dataclasses
import functools
import inspect
import warnings

import numpy as np

from .. import _sklearn_compat as compat
from .. import _tuning as tuning
from .. import _validation as validation
from .._doors import door, door_name, owned_by, passing, warn
from ..chunked import bbc_over_table, refuse_general, use_chunked
from ..cluster import current_client
from ..cube import (DONE, DROPPED, FAILED, PENDING, candidates, complete, failure_groups,
                    fill_untrained, float_bytes, incomplete_bbc, incomplete_cv, ledger_fold_matrix,
                    positive_class, select_winner, stopped_early, study_seed, target_of)
from ..exceptions import (InvalidParameterError, LabelsAsScoresWarning, StudyNotReadyError,
                          UndefinedScoreError, UnfinishedStudyWarning)
from ..metrics import get_metric
from ..stats import (
    SELECTIONS,
    bbc_f_of_matrix,
    check_fold_matrix,
    fold_score_matrix,
    selection_ci,
    with_fold_mean_winner,
)
from ..stats import bbc as in_memory_bbc
from ..stats import bbc_f as in_memory_bbc_f

__all__ = ["StudyEstimates", "study_seed"]


def study_scores(method):
    """``method`` without :class:`~bbc_dask.exceptions.LabelsAsScoresWarning`: a study's
    predictions are what its metric needs by construction (scores of fully grown trees
    can be 0 and 1)."""

    @functools.wraps(method)
    @passing  # a warning inside still points at the user's line
    def wrapped(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LabelsAsScoresWarning)
            return method(*args, **kwargs)

    return wrapped


class StudyEstimates:
    """The estimates of a study's store, which a :class:`~bbc_dask.Study` holds and
    offers as its own methods (their docstrings are these).

    Parameters
    ----------
    cube : bbc_dask.cube.Cube
        The store's gateway, open.

    Attributes
    ----------
    said_unfinished : bool
        The command line or the report told the user the study is unfinished: the
        estimates do not warn of it again.
    """

    def __init__(self, cube):
        self._cube = cube
        self.spec = cube.spec
        self.metric = self.spec["metric"]
        self.seed = study_seed(self.spec)
        self.store = cube.location.url
        self.location = cube.location
        self.selection = self.spec.get("selection", "pooled")  # stores before it: pooled
        self.is_bbcd = self.spec.get("dropping") is not None
        self.said_unfinished = False

    @property
    def pos_label(self):
        """The class the study's metric scores as positive, or None where it has none
        (see :func:`bbc_dask.cube.positive_class`)."""
        return positive_class(self._cube)

    def candidates(self):
        """The indices of the configurations the estimates are conditioned on
        (:meth:`bbc_dask.Study.candidates`)."""
        return np.flatnonzero(candidates(self._cube))

    def unfinished(self):
        """What an unfinished study lacks ("3 of 42 cells pending; 4 of 7 configurations
        complete"), or None: finished, or every configuration failed somewhere (no pending
        cell can complete one). The command line and :meth:`warn_unfinished` say it."""
        st = self._cube.state()
        pending = int((st == PENDING).sum())
        if not pending or np.any(st == FAILED, axis=(1, 2)).all():
            return None
        return (f"{pending} of {st.size} cells pending; {int(complete(st).sum())} of "
                f"{st.shape[0]} configurations complete")

    def incomplete_estimable(self):
        """Whether BBC on the incomplete CV (``bbc(include_incomplete=True)``) takes every
        configuration that neither failed nor was dropped: each has a prediction in each
        repeat (Tsamardinos et al., 2018, §4)."""
        st = self._cube.state()
        out = np.isin(st, (FAILED, DROPPED)).any(axis=(1, 2))
        return bool((~out).any()) and bool(_predicted_in_each_repeat(st)[~out].all())

    def warn_unfinished(self, *, so_far=False):
        """:class:`~bbc_dask.exceptions.UnfinishedStudyWarning` on an :meth:`unfinished`
        study, unless the command line said it already; called by a door of the user's
        (this method's caller's caller). ``so_far``: the door reads values
        (``cv_results_``, ``best_*``), not an estimate."""
        missing = None if self.said_unfinished else self.unfinished()
        if missing:
            what = ("holds the values of the configurations complete so far (a pending cell "
                    "counts as not run)" if so_far else
                    "estimates from the complete configurations only")
            if so_far and stopped_early(self._cube):
                what = ("holds the values of its incomplete CV, where its rule stopped it "
                        "(see Study.stopped_)")
            warn(UnfinishedStudyWarning(
                f"The study at {self.store!r} is unfinished ({missing}): {door_name()} {what}. "
                f"Run the study again to finish it."), stacklevel=3)

    def winner(self):
        """The study's winner (``best_index_``) without the warning of an unfinished
        study; :class:`~bbc_dask.exceptions.StudyNotReadyError` if none is complete."""
        best = select_winner(self._cube)
        if best is None:
            raise StudyNotReadyError(self._none_complete())
        return best

    # -------------------------------------------------------------- estimates
    def _inputs(self):
        idx = self.candidates()
        if idx.size == 0:
            raise StudyNotReadyError(self._none_complete())
        y, pos = target_of(self._cube)
        return idx, self._cube.predictions(idx), y, self._cube.folds(), pos

    def _none_complete(self):
        groups = failure_groups(self._cube)
        msg = f"The study at {self.store!r} has no complete configuration yet"
        if groups:
            n = sum(g["count"] for g in groups)
            msg += f"; {n} configurations failed, most with: {groups[0]['error'].splitlines()[0]}"
        return msg + "."

    @staticmethod
    def _remap(res, idx):
        """``res`` of the configurations ``idx`` with the study's indices; ``configs`` (what
        it is conditioned on) ``idx`` itself unless it says otherwise."""
        w = np.where(res.winners >= 0, idx[np.maximum(res.winners, 0)], -1)
        return dataclasses.replace(res, winners=w, selected_config=int(idx[res.selected_config]),
                                   configs=idx if res.configs is None else idx[res.configs])

    def _chunked(self, idx, chunked):
        use = use_chunked(nbytes=lambda: float_bytes(self._cube, idx.size), chunked=chunked)
        if use:
            refuse_general(self.metric)
        if use and getattr(self.location, "in_process_only", False):
            client = current_client()  # None: Dask's threads, in this process
            if client is not None:
                self.location.check_client(client)
        return use

    _CHUNKED_KW = ("n_bootstraps", "confidence_level", "random_state", "pos_label", "block_size")

    def _chunked_opts(self, fn, kwargs, allowed=_CHUNKED_KW):
        """``(y, options)``: ``fn``'s defaults of the ``allowed`` keywords, updated by
        ``kwargs`` (any other refused), the study's positive class by default."""
        validation.reject_unknown(kwargs, allowed)
        y, pos = target_of(self._cube)
        params = inspect.signature(fn).parameters
        opts = {k: params[k].default for k in allowed} | {"pos_label": pos}
        return y, opts | kwargs

    def _blocks(self, idx):
        return self._cube.blocks(idx)

    @study_scores
    @door("Study.bbc")
    def bbc(self, *, chunked=None, **kwargs):
        """:func:`bbc_dask.bbc` on the study's :meth:`candidates` (indices in the result
        refer to the study's configurations).

        For a BBCD study this is the BBCD-CV estimate: BBC over the configurations that
        survived to the end — the last wave's test included (``Dropping.test_last_wave``)
        — as the 2018 paper's code runs it; the result says ``method="bbcd"``.

        Parameters
        ----------
        chunked : bool or None, default=None
            Map the bootstraps over chunks read from the store by Dask tasks (on the
            active ``distributed.Client``, else Dask's local scheduler) instead of loading
            the cube: for a pointwise metric, runs of sample blocks of groups of
            configurations (a worker's memory does not grow with the number of samples);
            for a ranking metric, configuration chunks holding every sample. None: chunked
            when the complete configurations exceed ``bbc_dask.in-memory-bytes`` (1 GiB as
            float64). The result is identical either way. With ``include_incomplete=True``
            (every configuration with a prediction in each repeat, each scored on the
            cells it predicted): configuration chunks holding every sample, each of its
            cells' groups scored as the BBCD dropping test scores them; its final winner and
            naive estimate are the study's (:attr:`~bbc_dask.Study.best_index_`,
            :attr:`~bbc_dask.Study.best_score_`).
        **kwargs
            Passed to :func:`bbc_dask.bbc` (``n_bootstraps``, ``confidence_level``,
            ``random_state``, ...). ``random_state`` defaults to :attr:`seed`, the
            study's own: the same numbers however the study is opened or asked;
            ``selection`` to the study's (:attr:`selection`), so that
            ``selected_config`` is the model it refit.
        """
        kwargs.setdefault("random_state", self.seed)
        pos_label = self.pos_label if "pos_label" not in kwargs else None
        selection = validation.check_one_of(kwargs.pop("selection", self.selection), "selection",
                                   SELECTIONS)
        if validation.check_bool(kwargs.pop("include_incomplete", False), "include_incomplete"):
            res = self._bbc_incomplete(chunked, selection, kwargs)
            return dataclasses.replace(res, method="bbcd" if self.is_bbcd else res.method,
                                       pos_label=pos_label)
        self.warn_unfinished()
        idx = self.candidates()
        if idx.size and self._chunked(idx, chunked):
            with owned_by("Study.bbc(chunked=True)"):  # the keywords the chunked path takes
                y, opts = self._chunked_opts(in_memory_bbc, kwargs)
            opts.pop("block_size")  # per-task blocks are the seed blocks
            blocks, offsets = self._blocks(idx)
            res = bbc_over_table(self._cube.sample_table(idx), blocks, offsets, y,
                                 metric=self.metric, **opts)
        else:
            idx, pred, y, folds, pos = self._inputs()
            kwargs.setdefault("pos_label", pos)
            res = in_memory_bbc(pred, y, metric=self.metric, folds=folds, **kwargs)
        if selection == "fold_mean":  # the ledger's fold scores: no prediction read
            res = with_fold_mean_winner(res, ledger_fold_matrix(self._cube, idx)[0])
        res = self._remap(res, idx)
        return dataclasses.replace(res, method="bbcd" if self.is_bbcd else res.method,
                                   pos_label=pos_label)

    def _bbc_incomplete(self, chunked, selection, kwargs):
        """BBC over every configuration trained on some fold (see :meth:`bbc`): in
        memory, or by configuration blocks on the cluster — the same numbers."""
        idx = incomplete_cv(self._cube)[0]
        if idx.size == 0:
            raise StudyNotReadyError(self._none_complete())
        use = self._chunked(idx, chunked)
        if use:
            with owned_by("Study.bbc(chunked=True)"):  # the keywords the chunked path takes
                _, opts = self._chunked_opts(in_memory_bbc, kwargs)
            opts.pop("block_size")  # per-task blocks are the seed blocks
        else:
            _, opts = self._chunked_opts(in_memory_bbc, kwargs,
                                         self._CHUNKED_KW + ("bootstrap_indices",))
        return incomplete_bbc(self._cube, chunked=use, selection=selection, **opts)

    @door("Study.bbc_f")
    def bbc_f(self, *, chunked=None, fit_scorer=None, **kwargs):
        """:func:`bbc_dask.bbc_f` on the study's :meth:`candidates`. The fold ×
        configuration matrix is the ledger's (each engine task scored the fold it
        predicted, as :func:`bbc_dask.fold_score_matrix` does): no prediction is read,
        whatever ``chunked`` (accepted as in :meth:`bbc`). ``fit_scorer``: a label of
        :meth:`fit_scores` (``"test_<name>"``): BBC-F on the scores of that scorer of the
        fitted fold models instead (``BBCSearchCV``'s callable scorers)."""
        kwargs.setdefault("random_state", self.seed)
        self.warn_unfinished()
        idx = self.candidates()
        if idx.size == 0:
            raise StudyNotReadyError(self._none_complete())
        validation.check_bool(chunked, "chunked", allow_none=True)
        _, opts = self._chunked_opts(in_memory_bbc_f, kwargs)
        opts.pop("pos_label")
        # The fold x configuration matrix is in the ledger: each task scored its fold with
        # the function fold_score_matrix uses, so this equals bbc_f on the loaded cube.
        if fit_scorer is None:
            F, rows = ledger_fold_matrix(self._cube, idx)
        else:
            F = np.ascontiguousarray(self.fit_scores(fit_scorer)[:, idx])
            n_rep, n_spl = self._cube.state().shape[1:]
            rows = [(r, k) for r in range(n_rep) for k in range(n_spl)]
            F = check_fold_matrix(F, rows, fit_scorer)
        res = bbc_f_of_matrix(F, rows, fit_scorer or self.metric, opts["n_bootstraps"], opts["confidence_level"],
                              opts["random_state"], None, opts["block_size"])
        # a fitted models' scorer's positive class is its own: not the study's to name
        return dataclasses.replace(self._remap(res, idx),
                                   pos_label=self.pos_label if fit_scorer is None else None)

    @study_scores
    @door("Study.selection_ci")
    def selection_ci(self, method="mabt", *, repeat=0, **kwargs):
        """:func:`bbc_dask.selection_ci` (the 2024 paper's DL, HM, BT, their 10p variants,
        MABT) on one repeat of the study's :meth:`candidates`: their out-of-sample
        scores and the study's folds. Configuration indices in the result (``selected``,
        ``details["top"]``...) refer to the study's configurations.

        Parameters
        ----------
        method : str, default="mabt"
        repeat : int, default=0
            The CV repeat whose predictions and folds are used (the methods take one).
        **kwargs
            Passed to :func:`bbc_dask.selection_ci`; ``random_state`` defaults to
            :attr:`seed`.
        """
        if self.metric != "roc_auc":
            raise InvalidParameterError.of(
                "method", "used on a study of the metric 'roc_auc' (the methods bound "
                "an AUC)", method, note=f"This study's metric is {self.metric!r}.")
        kwargs.setdefault("random_state", self.seed)
        self.warn_unfinished()
        idx, pred, y, folds, pos = self._inputs()
        r = validation.check_int(repeat, "repeat", low=0, high=pred.shape[2] - 1)
        kwargs.setdefault("pos_label", pos)
        res = selection_ci(pred[:, :, r], y, folds[:, r], method, **kwargs)
        if res.selected < 0:
            return res
        details = dict(res.details)
        details["top"] = idx[details["top"]]
        details["best"], details["final"] = int(idx[details["best"]]), int(idx[details["final"]])
        return dataclasses.replace(res, selected=int(idx[res.selected]), details=details)

    @door("Study.fold_scores")
    def fold_scores(self, metric=None):
        """Per-(repeat, fold) scores, (R*K, C) repeat-major, NaN for cells not trained
        (pending, failed, dropped): complete configurations and the folds that dropped
        ones trained before BBCD dropped them.

        ``metric``: another metric (a name or scorer) scored on the stored predictions
        of every trained cell (a failed or dropped configuration's trained folds
        included, as ``GridSearchCV`` scores them), which it must read as the study's own
        metric does (see :func:`bbc_dask.engine.stored_as`), for the study's positive
        class; None: the study's own scores, from the ledger."""
        if metric is not None:
            return self._other_fold_scores(metric)
        st = self._cube.state()
        n_cfg, n_rep, n_spl = st.shape
        F = np.full((n_rep * n_spl, n_cfg), np.nan)
        done = (st == DONE).reshape(n_cfg, -1).T  # (R*K, C) repeat-major
        got = self._cube.fold_scores().reshape(n_cfg, -1).T
        F[done] = got[done]
        return F

    @door("Study.fit_scores")
    def fit_scores(self, label):
        """Per-(repeat, fold) scores of one scorer of the fitted fold models (the store's
        ``fit_score``; ``label`` ``"test_<name>"`` or ``"train_<name>"``, see
        :attr:`fit_scorers`), (R*K, C) repeat-major, NaN for cells not trained."""
        labels = self._cube.fit_scorer_labels()
        if label not in labels:
            raise InvalidParameterError.of(
                "fit_scorer", f"one of the study's scorers of fitted models {list(labels)}"
                if labels else "None: this study scored no fitted model", label)
        st = self._cube.state()
        n_cfg = st.shape[0]
        F = np.full((st[0].size, n_cfg), np.nan)
        done = (st == DONE).reshape(n_cfg, -1).T
        got = self._cube.fit_scores()[..., labels.index(label)].reshape(n_cfg, -1).T
        F[done] = got[done]
        return F

    def _other_fold_scores(self, metric):
        from ..engine import stored_as  # the engine's rule: loaded on first use

        m, own = get_metric(metric), get_metric(self.metric)
        if stored_as(m) != stored_as(own):
            raise InvalidParameterError.of(
                "metric", f"a metric that reads the study's stored predictions (those "
                f"of {own.name!r}: {' or '.join(stored_as(own)[0])})",
                shown=f"{m.name!r}, which needs {' or '.join(stored_as(m)[0])}"
                      f"{' per class' if stored_as(m)[1] else ''}")
        scorer = getattr(m, "scorer", None)
        own_pos = (compat.score_kwargs(scorer) if compat.is_function_scorer(scorer) else {}).get("pos_label")
        study_pos = self.spec.get("pos_label")
        if own_pos is not None and study_pos is not None and validation.plain(own_pos) != study_pos:
            # the stored responses are scored for the study's positive class: another
            # class's score cannot be read from them
            raise InvalidParameterError.of(
                "metric", f"a scorer of the study's positive class ({study_pos!r})",
                shown=f"{m.name!r} with pos_label={own_pos!r}")
        st = self._cube.state()
        n_cfg, n_rep, n_spl = st.shape
        F = np.full((n_rep * n_spl, n_cfg), np.nan)
        done = st == DONE
        idx = np.flatnonzero(done.any(axis=(1, 2)))
        if idx.size == 0:
            raise StudyNotReadyError(self._none_complete())
        (y, pos), folds = target_of(self._cube), self._cube.folds()
        pred = self._cube.predictions(idx)
        # a cell not trained (failed, dropped) has no predictions: a placeholder every
        # metric takes stands in, and its score is masked below, so that a failed or
        # dropped configuration's trained folds are scored as GridSearchCV scores them
        fill_untrained(pred, done[idx], folds, m)
        try:
            F[:, idx] = fold_score_matrix(pred, y, folds, metric=m, pos_label=pos)[0]
        except UndefinedScoreError:  # maybe a placeholder's fold: the candidates alone
            idx, pred, y, folds, pos = self._inputs()
            F[:, idx] = fold_score_matrix(pred, y, folds, metric=m, pos_label=pos)[0]
        F[~done.reshape(n_cfg, -1).T] = np.nan
        return F


def _predicted_in_each_repeat(st):
    """Per configuration of the state ``st`` (C, R, K): a fold predicted in every repeat."""
    return (st == DONE).any(axis=2).all(axis=1)
