"""The fold score matrix of BBC-F and of the fold-based comparators: one row per (repeat,
fold) pair, one column per configuration, each entry the metric on that fold's samples.

:func:`fold_scores` is the one computation of a fold score: the engine's tasks call it on
the fold they predicted and :func:`_fold_matrix` forms the same terms for every fold at
once, so stored fold scores equal the in-memory matrix bit for bit.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .. import _validation as validation
from ..exceptions import UndefinedScoreError
from ..metrics import sample_blocks
from ._inputs import prepare_inputs
from .._doors import door, door_name


def fold_undefined(metric, fold, repeat):
    """The message of an UndefinedScoreError for ``metric`` on ``fold`` of ``repeat``."""
    return (f"{metric!r} is undefined on fold {fold!r} of repeat {repeat} in {door_name()} (for "
            f"AUC: the fold holds a single class). Use stratified folds with at least one "
            f"sample of each class per fold, or what pools the folds: bbc, a winner by "
            f"selection='pooled'.")


@door("fold_score_matrix")
def fold_score_matrix(predictions, y, folds, *, metric, pos_label=None):
    """Per-fold score matrix of BBC-F: rows are (repeat, fold) pairs, repeat-major, folds
    in sorted id order; entry = metric of the configuration on that fold's samples.

    Returns ``(matrix (R*K, C), rows)`` with ``rows`` a list of ``(repeat, fold_id)``.
    """
    m, target, pred = prepare_inputs(predictions, y, metric, pos_label)
    f = validation.as_folds(folds, pred.shape[0], pred.shape[2])
    return _fold_matrix(m, target, pred, f)


def subset_target(target, idx):
    """The target of the samples ``idx`` (class list and positive class kept)."""
    return dataclasses.replace(target, **{
        f: getattr(target, f)[idx] for f in ("codes", "values", "time", "event")
        if getattr(target, f) is not None})


def fold_scores(m, target, pred, index=None, n=None, sample_block=None):
    """Scores (C,) of every configuration on one fold: ``pred`` (n_f, C, 1(, K)) encoded,
    the fold's samples only, ``target`` theirs; ``index`` their positions (increasing)
    among the ``n`` samples of the whole sample (default: the fold alone), in blocks of
    ``sample_block`` (default :data:`~bbc_dask.metrics.SAMPLE_BLOCK`).

    The one computation of a fold score: the engine's tasks call it on the fold they
    predicted and :func:`fold_score_matrix` forms the same terms, so the stored fold
    scores equal the in-memory matrix bit for bit. A pointwise metric's sums are formed
    per block of the whole sample and added in block order
    (:meth:`~bbc_dask.metrics._Pointwise.fold_sums`), so that a cube chunked along
    samples gives the same bits too (R² centred on the fold's own mean, as
    :func:`fold_centers`); a ranking metric's are exact integers."""
    if m.pairwise is not None or m.kind == "general":  # no sums: the fold's own score
        return m.scores_once(target, pred)[:, 0]
    k = pred.shape[0]
    index = np.arange(k) if index is None else np.asarray(index)
    n = k if n is None else int(n)
    prep = m.prepare(target, pred)
    cuts = np.searchsorted(index, [lo for lo, _ in sample_blocks(n, sample_block)] + [n]).tolist()
    return prep.fold_scores(*prep.fold_sums(np.zeros((k, 1), dtype=np.int64), 1, cuts))[0]


def fold_centers(target, at, n_rows):
    """Each fold row's mean target (n_rows,), for R²'s sums: ``np.mean`` of the row's
    values in sample order — the centre a fold's own target has
    (:meth:`~bbc_dask.metrics.Target.value_center`), so the same bits; None for a
    classification or survival target. Centring each fold on its own mean keeps R²'s
    S2 - S1²/S0 free of cancellation (the whole sample's mean would not: a fold far from
    it in units of its own spread lost most of its digits, and a constant fold was not
    undefined)."""
    if target.values is None:
        return None
    out = np.empty(n_rows)
    for r in range(at.shape[1]):
        for f in np.unique(at[:, r]):
            if f >= 0:
                out[f] = float(np.mean(target.values[at[:, r] == f]))
    return out


def fold_rows(folds):
    """``(at (N, R), rows)``: each sample's row of the fold matrix in each repeat, and the
    rows' ``(repeat, fold_id)`` — repeat-major, fold ids in sorted order."""
    at = np.empty(folds.shape, dtype=np.int64)
    rows = []
    for r in range(folds.shape[1]):
        ids, inv = np.unique(folds[:, r], return_inverse=True)
        at[:, r] = len(rows) + inv.ravel()
        rows.extend((r, i.item()) for i in ids)
    return at, rows


def check_fold_matrix(F, rows, metric):
    """``F`` itself, or UndefinedScoreError naming the first fold where some score is
    undefined."""
    bad = np.isnan(F).any(axis=1)
    if bad.any():
        r, k = rows[int(np.flatnonzero(bad)[0])]
        raise UndefinedScoreError(fold_undefined(metric, k, r))
    return F


def _fold_matrix(m, target, pred, folds, sample_block=None):
    """``(F (R*K, C), rows)``: the fold matrix of metric ``m`` on the encoded ``target``
    and ``pred``, folds ``folds`` (N, R) validated; UndefinedScoreError where a fold's
    score is undefined. ``sample_block``: the blocks of a pointwise metric's sums
    (default :data:`~bbc_dask.metrics.SAMPLE_BLOCK`)."""
    at, rows = fold_rows(folds)
    if m.pairwise is None and m.kind != "general":
        # the same terms fold_scores forms on each fold (see there), in one pass
        prep = m.prepare(target, pred, sample_block)
        F = prep.fold_scores(*prep.fold_sums(at, len(rows), centers=fold_centers(target, at, len(rows))))
        return check_fold_matrix(F, rows, m.name), rows
    idx = [np.flatnonzero(at[:, r] == i) for i, (r, _) in enumerate(rows)]
    F = np.concatenate([fold_scores(m, subset_target(target, ix), pred[ix, :, r : r + 1])[None]
                        for ix, (r, _) in zip(idx, rows)])
    return check_fold_matrix(F, rows, m.name), rows
