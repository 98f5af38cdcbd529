"""BBC on a study's incomplete CV (Tsamardinos et al., 2018, §4), read from its store in
memory or by the chunked path; the engine's width rule and :class:`bbc_dask.Study` both
estimate with it, so the run's stopping interval is the one the study reports."""
from __future__ import annotations

import dataclasses

import numpy as np

from ._selection import (candidates, float_bytes, incomplete_cv, incomplete_winner,
                         ledger_fold_matrix, pooled_scores, select_winner, target_of)

__all__ = ["incomplete_bbc", "winner_and_score"]


def winner_and_score(cube, selection=None):
    """``(config, score)``: the study's winner (:func:`select_winner`) and its CV score by
    its selection (or ``selection``) — pooled (mean over repeats), or the mean of its fold
    scores, in ``GridSearchCV``'s arithmetic — or, with no configuration complete, the
    incomplete CV's (:func:`incomplete_winner`); ``(None, nan)`` where none can be
    selected."""
    from ..stats import Selection, fold_means

    selection = cube.selection if selection is None else Selection.of(selection)
    if not candidates(cube).any():
        return incomplete_winner(cube, selection)
    best = select_winner(cube, selection)
    one = np.array([best])
    if selection.pooled:
        return best, float(pooled_scores(cube, one).mean())
    return best, float(fold_means(ledger_fold_matrix(cube, one)[0])[0])


def incomplete_bbc(cube, *, n_bootstraps, confidence_level, random_state, pos_label, chunked,
                   block_size=None, bootstrap_indices=None, selection=None, winner=True):
    """BBC over every configuration with a prediction in each repeat, each scored on the
    cells it predicted, or None while there is none. ``chunked``: by configuration blocks
    holding every sample on the current Dask client (bit for bit the in-memory numbers;
    ``block_size`` and ``bootstrap_indices`` are the in-memory path's); None: so when
    their predictions exceed ``bbc_dask.in-memory-bytes``
    (:func:`~bbc_dask.chunked.use_chunked`). The final winner and the naive estimate are the study's (:func:`winner_and_score`, by ``selection``
    if given): the model it refits; ``winner=False``: not computed (-1 and NaN: the
    interval alone, as the engine's width rule reads it). Indices are the study's."""
    from ..exceptions import UndefinedScoreError
    from ..metrics import get_metric

    idx, missing, final = incomplete_cv(cube)
    if idx.size == 0:
        return None
    best, naive = winner_and_score(cube, selection) if winner else (-1, float("nan"))
    if best is None:
        raise UndefinedScoreError(
            "No configuration can be selected: every one trained so far failed, was "
            "dropped, or has its metric undefined on the cells it predicted.")
    y, _ = target_of(cube)
    m = get_metric(cube.spec["metric"])
    if chunked is None:
        from ..chunked import use_chunked

        chunked = use_chunked(nbytes=float_bytes(cube, idx.size))
    if chunked:
        from ..chunked import incomplete_over_blocks

        blocks, offsets = cube.blocks(idx)
        res = incomplete_over_blocks(blocks, offsets, y, missing, final, metric=m.name,
                                     n_bootstraps=n_bootstraps, confidence_level=confidence_level,
                                     random_state=random_state, pos_label=pos_label)
    else:
        from .._validation import as_predictions
        from ..stats import bbc_incomplete

        arr, coord = as_predictions(cube.predictions(idx), m)
        res = bbc_incomplete(m, arr, coord, missing, y, cube.folds(), n_bootstraps,
                             confidence_level, random_state, bootstrap_indices, pos_label,
                             block_size, None, final)  # the winner is the study's, above
    winners = np.where(res.winners >= 0, idx[np.maximum(res.winners, 0)], -1)
    return dataclasses.replace(res, winners=winners, selected_config=best, naive_estimate=naive,
                               configs=idx, selection=selection or cube.selection.name)
