"""What a repair rebuilds from intact data instead of training again.

Fold scores and pooled scores are functions of the stored predictions, and a fit time is
a record, not a result: a lost or edited chunk of ``fold_score``, ``pooled`` or
``fit_time`` whose ``state``, prediction chunk checksums and predictions are intact costs
no model. :func:`derived_regions` picks those ledger chunks out of a verify report and
:func:`rebuild` writes them through the repair's :class:`~._ledger_check.LedgerEdit`:

- ``fold_score``: computed again from the stored predictions by the one computation of
  a fold score (:func:`bbc_dask.stats.fold_score_matrix`, the terms the tasks form: the
  same bits);
- ``pooled``: emptied (NaN) for the next run's pooled pass, which reads the chunks
  (no fit);
- ``fit_time``: emptied, its done cells' fit times unknown (NaN) rather than measured
  again by a refit.

Where the metric cannot be rebuilt in this process (a scorer of the user's own function)
or the study's repeats leave samples out (nested CV), the fold scores are not
recomputed: the region is reset and its cells trained again, as before.
"""
from __future__ import annotations

import numpy as np

__all__ = ["DERIVED", "derived_regions", "fill_untrained", "rebuild"]

#: The ledger arrays a repair rebuilds without training.
DERIVED = ("fit_time", "fold_score", "pooled")


def _array_of(damage):
    return damage.file.split("/", 1)[0]


def _metric(cube):
    """The study's metric in this process, or None where it cannot be rebuilt."""
    from ..metrics import metric_of_spec

    try:
        return metric_of_spec(cube.spec, None)
    except Exception:  # noqa: BLE001 - a metric this process cannot build: train again
        return None


def derived_regions(cube, damaged):
    """``{(repeat, (c0, c1)): {arrays}}`` of the ledger chunks whose only damage is in
    :data:`DERIVED` arrays that can be rebuilt here, none of whose prediction chunks is
    damaged; the other ledger damages are left to the reset."""
    ledger = {}
    for d in damaged:
        if d.kind == "ledger":
            ledger.setdefault((d.repeat, d.configs), set()).add(_array_of(d))
    if not ledger:
        return {}
    w = cube.config_chunk
    broken = {(d.repeat, d.block * w) for d in damaged if d.kind == "prediction"}
    scores_ok = None
    out = {}
    for (r, (c0, c1)), names in ledger.items():
        if r < 0 or not names <= set(DERIVED):
            continue
        if any((r, b) in broken for b in range(c0, c1, w)):
            continue
        if "fold_score" in names:
            if scores_ok is None:
                scores_ok = _metric(cube) is not None and bool((cube.folds() >= 0).all())
            if not scores_ok:
                continue
        out[(r, (c0, c1))] = names
    return out


def rebuild(cube, edit, regions):
    """Write the rebuilt chunks of ``regions`` (:func:`derived_regions`) into ``edit``."""
    from ._states import DONE

    step = edit.step
    for (r, (c0, c1)), names in sorted(regions.items()):
        i = c0 // step
        n = c1 - c0
        if "fit_time" in names:
            edit.replace("fit_time", i, r, np.full((n,) + cube._array("fit_time").shape[2:], np.nan))
        if "pooled" in names:
            edit.replace("pooled", i, r, np.full(n, np.nan))
        if "fold_score" in names:
            done = np.asarray(edit.chunk("state", i, r)) == DONE
            edit.replace("fold_score", i, r, _fold_scores(cube, c0, r, done))


def fill_untrained(pred, done, folds, m):
    """Put a placeholder every metric takes (a uniform probability, 0.5, or 0) into the
    predictions ``pred`` (N, C, R(, K)) of the cells not trained (``done`` (C, R, K)
    False: failed, dropped), which have none, so that the trained folds of the same
    configurations can be scored together; their own scores are to be masked."""
    filler = 1.0 / pred.shape[3] if pred.ndim == 4 else 0.5 if m.prediction == "proba" else 0.0
    for r in range(done.shape[1]):
        for k in range(done.shape[2]):
            gone = np.flatnonzero(~done[:, r, k])
            if gone.size:
                pred[:, :, r][np.ix_(np.flatnonzero(folds[:, r] == k), gone)] = filler


def _fold_scores(cube, c0, r, done):
    """The fold scores (n, K) of configurations ``c0..`` in repeat ``r``: NaN where a
    cell is not done, as the tasks leave them."""
    from ..stats import fold_score_matrix
    from ._selection import target_of

    out = np.full(done.shape, np.nan)
    rows = np.flatnonzero(done.any(axis=1))
    if not rows.size:
        return out
    m = _metric(cube)
    (y, pos), folds = target_of(cube), cube.folds()[:, r:r + 1]
    pred = cube.predictions(c0 + rows)[:, :, r:r + 1]
    fill_untrained(pred, done[rows][:, None, :], folds, m)  # their scores masked below

    def score(cols):
        return fold_score_matrix(pred[:, cols], y, folds, metric=m, pos_label=pos)[0].T

    try:
        out[rows] = score(np.arange(rows.size))
    except (ValueError, TypeError, FloatingPointError):
        for j in range(rows.size):  # one configuration's bad predictions: its NaN alone
            try:
                out[rows[j]] = score(np.array([j]))[0]
            except (ValueError, TypeError, FloatingPointError):
                pass
    out[~done] = np.nan
    return out
