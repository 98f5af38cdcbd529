"""BBC on an incomplete CV, the pieces the in-memory estimate and the chunked one share:
configurations grouped by the cells they predicted, each bootstrap's winner among them
with its in-bag and out-of-bag scores, and the rule that keeps a draw.

Tsamardinos et al. (2018), §4: BBC applies to whatever out-of-sample predictions exist;
each configuration is scored on the samples it predicted (in each repeat), as the BBCD
dropping test scores them (:class:`~._dropping.DroppingScorer`). Every score is a
per-column quantity, so a block of configurations gives the very numbers of the whole
and the winners of blocks merge by (higher score, then lower index)."""
from __future__ import annotations

import numpy as np

from ._dropping import DroppingScorer
from ._winner import select

__all__ = ["BothBags", "IncompleteScorers", "availability_groups", "reference_group"]


class BothBags:
    """A draw is kept when ``rule`` (the reference group's
    :class:`~._dropping.MaskedRule`) holds both in bag and out of bag: BBC scores the
    winner out of bag, so that score must be defined too. Picklable: a task of the
    chunked path draws its counts with it."""

    def __init__(self, rule):
        self.rule = rule

    def __call__(self, counts):
        return self.rule(counts) & self.rule((counts == 0).astype(np.int32))


def availability_groups(have):
    """The configurations (columns of ``have`` (N, C, R), True where predicted) grouped by
    the cells they predicted: a list of ascending column arrays, by pattern."""
    n_cfg = have.shape[1]
    pattern = have.transpose(1, 0, 2).reshape(n_cfg, -1)
    _, inv = np.unique(pattern, axis=0, return_inverse=True)
    inv = inv.ravel()
    return [np.flatnonzero(inv == g) for g in range(int(inv.max()) + 1)]


def reference_group(have, groups, final):
    """The group whose definedness decides which draws are kept: one holding a
    configuration the final winner may be (``final`` (C,) bool), then the one that
    predicted the most cells."""
    return max(range(len(groups)), key=lambda i: (bool(final[groups[i]].any()),
                                                  int(have[:, groups[i][0]].sum())))


class IncompleteScorers:
    """The scorers of configurations (columns of ``predictions``) in ``groups`` (see
    :func:`availability_groups`), each on the cells its group predicted."""

    def __init__(self, predictions, y, have, groups, metric, pos_label=None, class_coord=None):
        self.groups = groups
        self.scorers = [DroppingScorer(predictions[:, g], y, have[:, g[0], :], metric, pos_label,
                                       class_coord) for g in groups]
        cols = np.concatenate(groups)
        self.order = np.argsort(cols, kind="stable")  # scores in configuration order
        self.columns = cols[self.order]

    def winners(self, counts):
        """``(best, column, oob)`` of each bootstrap of ``counts`` (b, N): the in-bag
        winner's score (-inf where none is defined), its column (-1: none) and its
        out-of-bag score on its group's cells (NaN without a winner). A configuration
        undefined in bag competes not; ties go to the lowest column."""
        s = np.concatenate([sc.scores(counts) for sc in self.scorers], axis=1)[:, self.order]
        s = np.where(np.isnan(s), -np.inf, s)
        some = np.isfinite(s).any(axis=1)
        w = np.where(some, select(s), -1)
        col = np.where(some, self.columns[np.maximum(w, 0)], -1)
        out = (counts == 0).astype(np.int32)
        oob = np.full(len(w), np.nan)
        for g, sc in zip(self.groups, self.scorers):
            rows = np.flatnonzero(np.isin(col, g) & some)
            if rows.size:
                oob[rows] = sc.scores(out[rows])[np.arange(rows.size), np.searchsorted(g, col[rows])]
        best = np.where(some, s[np.arange(len(w)), np.maximum(w, 0)], -np.inf)
        return best, col, oob

    @property
    def full(self):
        """Each column's score on every cell it predicted, in configuration order."""
        return np.concatenate([sc.full for sc in self.scorers])[self.order]
