"""The selection rule, written once: the best score wins, a tie goes to the lowest
configuration index, and a set of scores with an undefined (NaN) one has no winner.

CVT's winner (the engine, :class:`bbc_dask.Study`, the report), the in-bag winner of every
bootstrap (BBC, BBC-F, the BBCD dropping test) and the merge of chunk winners all call
:func:`select`; :func:`ranking` orders configurations for display by the same rule.
Tsamardinos et al. (2018), Algorithm 1: ``f`` selects the configuration with the best
score; ties broken by the lowest index make the result independent of the chunking and
of the task order.
"""
from __future__ import annotations

import numpy as np

__all__ = ["ranking", "select"]


def select(scores):
    """The winner of each row of ``scores`` (..., C): the column of the highest score,
    ties to the lowest index, -1 for a row holding NaN. A 1-d ``scores`` gives an int."""
    s = np.asarray(scores, dtype=np.float64)
    undefined = np.isnan(s)
    winners = np.argmax(np.where(undefined, -np.inf, s), axis=-1)
    winners = np.where(undefined.any(axis=-1), -1, winners)
    return int(winners) if s.ndim == 1 else winners


def ranking(scores):
    """Positions of the 1-d ``scores`` from best to worst by :func:`select`'s rule
    (equal scores by index; NaN last): ``ranking(s)[0] == select(s)`` when no score is
    NaN."""
    s = np.asarray(scores, dtype=np.float64)
    return np.argsort(np.where(np.isnan(s), np.inf, -s), kind="stable")
