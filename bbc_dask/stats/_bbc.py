"""BBC-CV and the comparators (naive CVT, Tibshirani & Tibshirani, the naive bootstrap)
on a prediction matrix (in memory). BBC-F is in :mod:`._bbc_f`, the fold score matrix in
:mod:`._folds`.

References
----------
.. [1] I. Tsamardinos, E. Greasidou, G. Borboudakis, "Bootstrapping the out-of-sample
   predictions for efficient and accurate cross-validation", Machine Learning 107,
   1895-1922 (2018). Algorithm 4 (TT), Algorithm 5 (BBC-CV), §3.2 (repeats).
.. [2] K. Paraschakis, A. Castellani, G. Borboudakis, I. Tsamardinos, "Confidence Interval
   Estimation of Predictive Performance in the Context of AutoML" (2024). Algorithm 1
   (BBC-F), one-sided intervals.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .. import _tuning as tuning
from .. import _validation as validation
from .._random import as_seed_sequence
from ..exceptions import UndefinedScoreError
from ..metrics import get_metric
from ._bbc_f import _bbc_f_matrix, _fold_draws, _inbag_means, bbc_f, fold_means
from ._bootstrap import SEED_BLOCK, CountBlocks
from ._incomplete import BothBags, IncompleteScorers, availability_groups, reference_group
from ._folds import (_fold_matrix, check_fold_matrix, fold_centers, fold_rows, fold_score_matrix,
                     fold_scores, subset_target)
from ._inputs import prepare_inputs
from ._result import BBCResult, ConfidenceInterval, summarise
from ._winner import select
from .._doors import door, door_name

# bbc_f, fold_score_matrix, _bbc_f_matrix and the fold-matrix helpers stay importable from
# here: the study, the chunked path, the engine, the cube and the tests import them so.
__all__ = [
    "bbc",
    "bbc_f",
    "fold_score_matrix",
    "naive_bootstrap",
    "naive_cvt",
    "prepare_inputs",
    "tibshirani_tibshirani",
]



def _block_size(block_size, n_boot, pred):
    """Bootstraps scored at once: ``block_size`` checked, or about
    ``bbc_dask.bootstrap-block-bytes`` worth, in whole seed blocks."""
    if block_size is not None:
        return validation.check_int(block_size, "block_size")
    n, cols = pred.shape[0], int(np.prod(pred.shape[1:]))
    per_boot = n * 12 + cols * 8 * 4  # counts + float weights + a few (B, M) results
    size = max(SEED_BLOCK, (tuning.BOOTSTRAP_BLOCK_BYTES // per_boot) // SEED_BLOCK * SEED_BLOCK)
    return min(size, max(n_boot, 1))


def _common(n_bootstraps, confidence_level, random_state, bootstrap_indices, n):
    """``(confidence level, B, root seed, explicit (B, N) indices)`` of a bootstrap of
    the ``n`` samples, its arguments checked (seed None with indices, indices None
    without)."""
    conf = validation.check_confidence_level(confidence_level)
    if bootstrap_indices is None:
        n_boot = validation.check_int(n_bootstraps, "n_bootstraps")
        return conf, n_boot, as_seed_sequence(random_state), None
    idx = validation.as_bootstrap_indices(bootstrap_indices, n, "sample")
    return conf, idx.shape[0], None, idx


def _full_scores(prep, n):
    """Each configuration's score on the whole sample (each counted once), mean over
    repeats: the naive scores the final winner is selected by."""
    return prep.scores(np.ones((1, n), dtype=np.int32))[0].mean(axis=1)


@door("bbc")
def bbc(
    predictions,
    y,
    *,
    metric,
    folds=None,
    n_bootstraps=1000,
    confidence_level=0.95,
    random_state=None,
    bootstrap_indices=None,
    pos_label=None,
    block_size=None,
    selection="pooled",
    include_incomplete=False,
) -> BBCResult:
    """Bootstrap Bias Corrected CV estimate of the selected configuration's performance.

    In each bootstrap the samples (rows) are resampled with replacement; a sample enters
    with all its repeats. The configuration with the best in-bag score is selected
    (score = mean over repeats of the metric on that repeat's pooled in-bag predictions;
    ties go to the lowest configuration index) and scored the same way on the out-of-bag
    samples. The mean of those scores is the bias-corrected estimate, their percentiles
    the confidence interval [1]_ (Algorithm 5, §3.2) and the one-sided lower bound [2]_.

    Parameters
    ----------
    predictions : array-like or xarray.DataArray
        Out-of-sample predictions, shape (N, C), (N, C, R) or (N, C, R, n_classes); a
        DataArray with dims ``sample``, ``config`` and optionally ``repeat``, ``class``.
        What a prediction is depends on ``metric`` (see :mod:`bbc_dask.metrics`).
        :func:`bbc_dask.bbc` (this function behind the door of :mod:`bbc_dask.chunked`)
        also takes a Dask- or Zarr-backed cube, and maps the bootstraps over its chunks
        on the cluster: the same result, bit for bit.
    y : array-like of shape (N,)
        True labels (any encoding, strings too) or targets; for ``concordance_index`` a
        ``(time, event)`` pair.
    metric : str or scikit-learn scorer
        A name from :func:`bbc_dask.metrics.metric_names` (compiled kernels), another
        name of :func:`sklearn.metrics.get_scorer_names`, or a ``make_scorer`` object
        (its own function per bootstrap: slower; ``predictions`` then hold its response,
        with a class axis for ``predict_proba``/``decision_function``); larger is better.
    folds : array-like of shape (N,) or (N, R), default=None
        Fold ids. BBC resamples samples, so folds do not change the estimate; they are
        needed by ``selection="fold_mean"`` and validated when given, so that one call
        signature serves every estimator.
    n_bootstraps : int, default=1000
        B. Ignored when ``bootstrap_indices`` is given.
    confidence_level : float, default=0.95
    random_state : int, SeedSequence, Generator, RandomState or None, default=None
        Bootstrap ``b`` depends only on this seed and ``b``: the result is the same
        whatever ``block_size``. A draw whose score is undefined (empty out-of-bag set;
        one class in or out of bag for AUC; ...) is redrawn and counted in ``n_redrawn``.
    bootstrap_indices : array-like of shape (B, N), default=None
        Explicit in-bag sample positions, used exactly as given; a bootstrap whose score
        is undefined gets NaN, is excluded from the summaries and counted in ``n_excluded``.
    pos_label : label, default=None
        Positive class of binary metrics; default the larger label in sorted order.
    block_size : int, default=None
        Bootstraps processed at once (memory only; results do not depend on it). By
        default about 256 MiB worth.
    selection : {"pooled", "fold_mean"}, default="pooled"
        The final winner (``selected_config``, the model CVT refits): the best score on
        the pooled predictions (mean over repeats), as the 2018 paper's CVT; or the best
        mean of the (repeat, fold) scores, as the 2024 paper's code and :func:`bbc_f`
        select (needs ``folds``). The bootstraps are the same either way (each selects
        on its in-bag pooled predictions); ``naive_estimate`` is the winner's score by
        the same criterion.
    include_incomplete : bool, default=False
        Accept NaN predictions as cells not predicted (an incomplete CV, the 2018 paper's
        §3: BBC applies to whatever predictions exist — configurations dropped by BBCD or
        failed in some folds). Each bootstrap selects among every configuration with a
        prediction in each repeat, each scored on its in-bag samples that it predicted
        (per repeat, then the mean over repeats), and scores its winner on the winner's
        out-of-bag samples that it predicted. The final winner is chosen among the
        complete configurations (the models that can be refit). ``configs`` says which
        configurations the bootstraps selected among. A draw is redrawn when the
        complete configurations' score is undefined in or out of bag; a bootstrap whose
        winner's out-of-bag score is undefined is NaN, excluded and counted.

    Returns
    -------
    BBCResult

    References
    ----------
    .. [1] Tsamardinos, Greasidou, Borboudakis, Machine Learning 107 (2018), Algorithm 5.
    .. [2] Paraschakis et al., "Confidence Interval Estimation of Predictive Performance
       in the Context of AutoML" (2024).

    Examples
    --------
    >>> import bbc_dask as bd
    >>> sim = bd.simulate.auc_matrix(200, 20, random_state=0)
    >>> res = bd.bbc(sim.predictions, sim.y, metric="roc_auc", random_state=0)
    >>> res.estimate <= res.naive_estimate
    True
    """
    if validation.check_bool(include_incomplete, "include_incomplete"):
        m = get_metric(metric)
        arr, coord = validation.as_predictions(predictions, m)
        missing = _missing(arr)
        if missing is not None and missing.any():
            return _bbc_incomplete(m, arr, coord, missing, y, folds, n_bootstraps,
                                   confidence_level, random_state, bootstrap_indices, pos_label,
                                   block_size, selection, None)
    m, target, pred = prepare_inputs(predictions, y, metric, pos_label)
    n, _, n_rep = pred.shape[:3]
    f = check_selection(selection, folds, n, n_rep)
    conf, n_boot, root, idx = _common(
        n_bootstraps, confidence_level, random_state, bootstrap_indices, n
    )
    prep = m.prepare(target, pred)
    bs = _block_size(block_size, n_boot, pred)

    def defined(c):
        return prep.defined(c) & prep.defined_oob(c)

    dist = np.full(n_boot, np.nan)
    winners = np.full(n_boot, -1, dtype=np.int64)
    blocks = CountBlocks(root, "bbc", idx, n_boot, n, bs, defined)
    for start, stop, counts in blocks:
        w = select(prep.scores(counts).mean(axis=2))
        w[~prep.defined(counts)] = -1  # e.g. f1 on an empty set is 0 in scikit-learn
        ok = np.flatnonzero((w >= 0) & prep.defined_oob(counts))
        if ok.size:
            sub = np.ascontiguousarray(counts[ok])
            dist[start + ok] = prep.winner_scores(sub, w[ok], oob=True).mean(axis=1)
        winners[start:stop] = w
    full = _full_scores(prep, n)
    sel = select(full)
    res = summarise(
        dist, winners, selected=sel, naive=full[sel], n_redrawn=blocks.n_redrawn, method="bbc",
        metric=m.name, confidence_level=conf,
    )
    return res if selection == "pooled" else with_fold_mean_winner(res, _fold_matrix(m, target, pred, f)[0])


SELECTIONS = ("pooled", "fold_mean")


def _missing(arr):
    """Cells (N, C, R) with no prediction (NaN, in any class), or None where the
    predictions cannot hold NaN (labels as integers or strings)."""
    if np.asarray(arr).dtype.kind != "f":
        return None
    nan = np.isnan(arr)
    return nan.any(axis=3) if nan.ndim == 4 else nan


def _bbc_incomplete(m, arr, coord, missing, y, folds, n_bootstraps, confidence_level,
                    random_state, bootstrap_indices, pos_label, block_size, selection, final):
    """BBC of an incomplete cube (see :func:`bbc`'s ``include_incomplete``): the
    configurations grouped by the cells they predicted, each group scored as the BBCD
    dropping test scores (its availability as masks); ``final`` (C,) bool: the
    configurations the final winner may be (default: the complete ones); ``selection``
    None: no final winner (-1, naive NaN), the caller's to choose."""
    n, n_cfg, n_rep = missing.shape
    f = None if selection is None else check_selection(selection, folds, n, n_rep)
    have = ~missing
    usable = np.flatnonzero(have.any(axis=0).all(axis=1))  # a prediction in every repeat
    complete = have.all(axis=(0, 2))
    final = complete if final is None else final & complete
    if usable.size == 0:
        raise UndefinedScoreError(
            f"No configuration of the predictions given to {door_name()} has a prediction in every "
            f"repeat: there is nothing to select among.")
    groups = [usable[g] for g in availability_groups(have[:, usable])]
    scorers = IncompleteScorers(arr, y, have, groups, m.name, pos_label, coord)
    defined = BothBags(scorers.scorers[reference_group(have, groups, final)].defined)
    conf, n_boot, root, idx = _common(n_bootstraps, confidence_level, random_state,
                                      bootstrap_indices, n)
    bs = _block_size(block_size, n_boot, arr)
    dist = np.full(n_boot, np.nan)
    winners = np.full(n_boot, -1, dtype=np.int64)
    blocks = CountBlocks(root, "bbc", idx, n_boot, n, bs, defined)
    for start, stop, counts in blocks:
        _, winners[start:stop], dist[start:stop] = scorers.winners(counts)
    if selection is None:  # the caller selects the final winner (a study: its own)
        return dataclasses.replace(summarise(
            dist, winners, selected=-1, naive=float("nan"), n_redrawn=blocks.n_redrawn,
            method="bbc", metric=m.name, confidence_level=conf), configs=usable)
    if not final.any():  # nothing complete: the best on the samples it predicted
        if selection == "fold_mean":
            raise UndefinedScoreError(
                f"selection='fold_mean' needs a configuration with every fold predicted; "
                f"none of the predictions given to {door_name()} has.")
        full = scorers.full
        sel = select(np.where(np.isnan(full), -np.inf, full))
        return dataclasses.replace(summarise(
            dist, winners, selected=int(scorers.columns[sel]), naive=full[sel], n_redrawn=blocks.n_redrawn,
            method="bbc", metric=m.name, confidence_level=conf), configs=usable)
    # the final winner and its naive score as bbc() gives them on those configurations alone
    keep = np.flatnonzero(final)
    sub = prepare_inputs(arr[:, keep], y, m.name, pos_label, coord)
    full = _full_scores(sub[0].prepare(sub[1], sub[2]), n)
    sel = select(full)
    res = summarise(dist, winners, selected=int(keep[sel]), naive=full[sel],
                    n_redrawn=blocks.n_redrawn, method="bbc", metric=m.name, confidence_level=conf)
    res = dataclasses.replace(res, configs=usable)
    if selection == "pooled":
        return res
    F = _fold_matrix(sub[0], sub[1], sub[2], f)[0]
    fm = with_fold_mean_winner(res, F)
    return dataclasses.replace(fm, selected_config=int(keep[fm.selected_config]))


def check_selection(selection, folds, n, n_rep, required=False):
    """The validated folds (N, R) or None; ``selection`` one of :data:`SELECTIONS`, and
    folds given if it is ``"fold_mean"`` or ``required`` (the reason, said in the error)."""
    validation.check_one_of(selection, "selection", SELECTIONS)
    return validation.as_folds(
        folds, n, n_rep, required=required or selection == "fold_mean" and (
            "with selection='fold_mean' (the winner is the best mean of the fold scores)"))


def with_fold_mean_winner(res, F):
    """``res`` with the final winner of ``selection="fold_mean"``: the best mean of the
    fold matrix ``F``'s columns (every (repeat, fold) row, summed as BBC-F's in-bag
    means) and that mean as the naive estimate."""
    full = fold_means(F)
    sel = select(full)
    return dataclasses.replace(res, selected_config=int(sel), naive_estimate=float(full[sel]),
                               selection="fold_mean")


def _no_interval(estimate, selected, naive, method, metric, conf):
    nan = float("nan")
    return BBCResult(
        estimate=float(estimate), confidence_interval=ConfidenceInterval(nan, nan),
        lower_bound=nan, bootstrap_distribution=np.empty(0), winners=np.empty(0, np.int64),
        selected_config=int(selected), naive_estimate=float(naive), n_bootstraps=0,
        n_redrawn=0, method=method, metric=metric, confidence_level=float(conf),
    )


@door("naive_cvt")
def naive_cvt(predictions, y, *, metric, folds=None, confidence_level=0.95, pos_label=None):
    """The CVT estimate: the selected configuration's pooled CV score, no correction.

    Optimistic when many configurations are tried (the winner's curse) [1]_ (Algorithm 2).
    It has no interval: ``confidence_interval`` and ``lower_bound`` are NaN.

    References
    ----------
    .. [1] Tsamardinos, Greasidou, Borboudakis, Machine Learning 107 (2018).
    """
    m, target, pred = prepare_inputs(predictions, y, metric, pos_label)
    validation.as_folds(folds, pred.shape[0], pred.shape[2], required=False)
    conf = validation.check_confidence_level(confidence_level)
    full = _full_scores(m.prepare(target, pred), pred.shape[0])
    sel = select(full)
    return _no_interval(full[sel], sel, full[sel], "naive_cvt", m.name, conf)


@door("tibshirani_tibshirani")
def tibshirani_tibshirani(predictions, y, folds, *, metric, confidence_level=0.95, pos_label=None):
    """Tibshirani & Tibshirani bias correction [1]_ (Algorithm 4), larger-is-better form.

    ``estimate = naive - mean over (repeat, fold) of [max_c score(fold, c) - score(fold,
    selected)]``, with the fold scores of :func:`fold_score_matrix`. No interval.

    References
    ----------
    .. [1] Tsamardinos, Greasidou, Borboudakis, Machine Learning 107 (2018), Algorithm 4;
       R. J. Tibshirani, R. Tibshirani, Ann. Appl. Stat. 3 (2009).
    """
    m, target, pred = prepare_inputs(predictions, y, metric, pos_label)
    f = validation.as_folds(folds, pred.shape[0], pred.shape[2])
    conf = validation.check_confidence_level(confidence_level)
    full = _full_scores(m.prepare(target, pred), pred.shape[0])
    sel = select(full)
    F, _ = _fold_matrix(m, target, pred, f)
    bias = float(np.mean(F.max(axis=1) - F[:, sel]))
    return _no_interval(full[sel] - bias, sel, full[sel], "tibshirani_tibshirani", m.name, conf)


@door("naive_bootstrap")
def naive_bootstrap(
    predictions,
    y,
    *,
    metric,
    folds=None,
    unit="sample",
    selection=None,
    n_bootstraps=1000,
    confidence_level=0.95,
    random_state=None,
    bootstrap_indices=None,
    pos_label=None,
    block_size=None,
) -> BBCResult:
    """Percentile bootstrap of the selected configuration alone, ignoring selection.

    The winner on all rows is fixed and its score is recomputed on each bootstrap
    resample. This is the interval one gets by treating the CVT winner as if it had not
    been selected; it inherits the winner's curse and is included as a comparator
    (``NB`` in [1]_).

    Parameters
    ----------
    predictions, y, metric, n_bootstraps, confidence_level, random_state, pos_label, block_size
        As in :func:`bbc`.
    folds : array-like of shape (N,) or (N, R), default=None
        Fold ids; needed by ``unit="fold"`` and ``selection="fold_mean"``.
    unit : {"sample", "fold"}, default="sample"
        What is resampled. ``"sample"``: the samples (with all their repeats); each
        bootstrap's value is the winner's score on its in-bag pooled predictions.
        ``"fold"``: the winner's K fold scores, the mean of the resampled ones being the
        bootstrap's value — the NB of [1]_, as the authors' code computes it (there with
        500 bootstraps; its lower bound takes the next order statistic,
        ``sorted[int(0.05 B)]``). With R repeats bootstrap ``b`` resamples the folds of
        repeat ``b mod R``, as :func:`bbc_f` does.
    selection : {"pooled", "fold_mean"} or None, default=None
        The fixed winner (see :func:`bbc`); None: ``"pooled"`` for ``unit="sample"``,
        ``"fold_mean"`` for ``unit="fold"`` (the authors' code).
    bootstrap_indices : array-like, default=None
        Explicit in-bag positions, used exactly as given: (B, N) sample positions, or
        with ``unit="fold"`` (B, K) fold positions within the bootstrap's repeat.

    Returns
    -------
    BBCResult

    References
    ----------
    .. [1] Paraschakis et al. (2024), Table 2; code: kparaschakis/BBC_algorithm,
       ``CI_via_bootstrap_on_winner_configuration.py``.
    """
    m, target, pred = prepare_inputs(predictions, y, metric, pos_label)
    n = pred.shape[0]
    validation.check_one_of(unit, "unit", ("sample", "fold"))
    if selection is None:
        selection = "pooled" if unit == "sample" else "fold_mean"
    f = check_selection(selection, folds, n, pred.shape[2], required=unit == "fold" and "with unit='fold'")
    # the samples' features only where scores of pooled predictions are needed
    prep = m.prepare(target, pred) if unit == "sample" or selection == "pooled" else None
    F, rows = _fold_matrix(m, target, pred, f) if f is not None and (
        unit == "fold" or selection == "fold_mean") else (None, None)
    # the fixed winner, and its naive score by the selection's own criterion
    full = _full_scores(prep, n) if selection == "pooled" else fold_means(F)
    sel = select(full)
    if unit == "fold":
        conf, blocks = _fold_draws(F[:, [sel]], rows, "naive_bootstrap", n_bootstraps, confidence_level,
                                   random_state, bootstrap_indices, block_size)
        dist = np.full(blocks.n_boot, np.nan)
        for at, Fr, counts in blocks:
            dist[at] = _inbag_means(counts, Fr)[:, 0]
    else:
        conf, n_boot, root, idx = _common(
            n_bootstraps, confidence_level, random_state, bootstrap_indices, n
        )
        bs = _block_size(block_size, n_boot, pred)
        dist = np.full(n_boot, np.nan)
        blocks = CountBlocks(root, "naive_bootstrap", idx, n_boot, n, bs, prep.defined)
        for start, stop, counts in blocks:
            sel_b = np.full(stop - start, sel, dtype=np.int64)
            d = prep.winner_scores(counts, sel_b, oob=False).mean(axis=1)
            dist[start:stop] = np.where(prep.defined(counts), d, np.nan)
    return summarise(
        dist, np.full(dist.size, sel), selected=sel, naive=full[sel], n_redrawn=blocks.n_redrawn,
        method="naive_bootstrap", metric=m.name, confidence_level=conf, selection=selection,
    )
