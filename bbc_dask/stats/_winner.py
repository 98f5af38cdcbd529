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

import dataclasses

import numpy as np

__all__ = ["Selection", "grid_ranks", "ranking", "select", "split_means"]


@dataclasses.dataclass(frozen=True)
class Selection:
    """How CVT selects its winner on the full data, by :func:`select`'s rule: ``"pooled"``,
    the best pooled CV score (the mean over repeats of each configuration's score on its
    pooled out-of-sample predictions: the 2018 paper's CVT, ``naive_cvt``), or
    ``"fold_mean"``, the best mean fold score over every (repeat, fold) (the 2024 paper's
    code; ``GridSearchCV``'s ``best_index_``, in its arithmetic: :func:`split_means`)."""

    name: str

    @classmethod
    def of(cls, name):
        """The selection called ``name`` (one of ``"pooled"``, ``"fold_mean"``), or
        ``name`` itself when it is one."""
        return name if isinstance(name, cls) else _BY_NAME[name]

    @property
    def pooled(self):
        """Whether it reads the pooled scores (else the fold scores)."""
        return self.name == "pooled"

    def winner(self, pooled, folds):
        """:func:`select` of ``pooled()`` (the pooled scores, (C,)) or of the column means
        of ``folds()`` (the fold matrix, (rows, C)): only the one this rule reads is
        computed."""
        return select(pooled() if self.pooled else split_means(folds())[0])


_BY_NAME = {s.name: s for s in (Selection("pooled"), Selection("fold_mean"))}


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


def split_means(F):
    """The mean and standard deviation of each column of the split-score matrix ``F``
    (splits, configurations) in ``GridSearchCV``'s arithmetic: ``np.average`` over each
    configuration's row of split scores (pairwise summation), so that equal split scores
    give ``GridSearchCV``'s means to the bit, and its winner, ties included."""
    a = np.ascontiguousarray(np.asarray(F, dtype=np.float64).T)  # (configurations, splits)
    if a.shape[1] == 0:
        nan = np.full(a.shape[0], np.nan)
        return nan, nan.copy()
    with np.errstate(invalid="ignore"):
        mean = np.average(a, axis=1)
        return mean, np.sqrt(np.average((a - mean[:, np.newaxis]) ** 2, axis=1))


def grid_ranks(scores):
    """``GridSearchCV``'s ranks of the 1-d ``scores``: 1 for the best, equal scores
    sharing the smallest rank, NaN last (tied with each other); the lowest index of rank 1
    is :func:`select`'s winner."""
    s = np.asarray(scores, dtype=np.float64)
    key = np.where(np.isnan(s), np.inf, -s)
    return (np.searchsorted(np.sort(key), key, side="left") + 1).astype(np.int32)
