"""When a metric is defined on bootstrap weights, decided from the counts and the target
alone (no predictions), so that a draw can be kept or redrawn before any prediction is
read: some weight in bag and some sample out of bag (every metric); a weighted y that is
not constant (R²); both classes of every positive-class mask (AUC: a single-class fold
or bag is undefined); a comparable pair (concordance index).

A metric family names its rule in ``rule_of`` (:class:`~._prepared._Prepared`).
"""
from __future__ import annotations

import numpy as np

from . import _kernels as kernels
from ._counts import _as_counts


class Definedness:
    """Whether a metric is defined on bootstrap weights, from the counts and the target
    alone (no predictions). ``inbag(counts)`` / ``oob(counts)`` -> (B,) bool; the base
    rule: some weight in bag, some sample out of bag.

    Where ``streams`` is true, ``both`` can also be decided block by block of samples:
    ``part(counts, lo, hi)`` summarises the counts of samples ``lo..hi-1`` as a (B, k)
    float array, the parts of the blocks combine by ``np.maximum`` and ``decide(parts)``
    gives ``both`` — so a plan over a million samples never holds the whole counts."""

    streams = True

    def inbag(self, counts):
        return np.asarray(counts).any(axis=1)

    def oob(self, counts):
        return (np.asarray(counts) == 0).any(axis=1)

    def both(self, counts):
        return self.inbag(counts) & self.oob(counts)

    def part(self, counts, lo, hi):
        c = np.asarray(counts)
        return np.stack([c.any(axis=1), (c == 0).any(axis=1)], axis=1).astype(np.float64)

    def decide(self, parts):
        return (parts[:, 0] > 0) & (parts[:, 1] > 0)

    def decide_inbag(self, parts):
        """``inbag`` from the combined parts (the in-bag half of :meth:`decide`)."""
        return parts[:, 0] > 0


class _Spread(Definedness):
    """R²: the weighted y must not be constant."""

    def __init__(self, y):
        self.y = y

    def inbag(self, counts):
        c = np.asarray(counts) > 0
        big = np.where(c, self.y[None, :], -np.inf).max(axis=1)
        small = np.where(c, self.y[None, :], np.inf).min(axis=1)
        return big > small

    def oob(self, counts):
        return self.inbag(np.asarray(counts) == 0)

    def part(self, counts, lo, hi):
        # max and -min of y in bag and out of bag: the blocks combine by maximum
        y = self.y[None, lo:hi]
        c = np.asarray(counts) > 0
        return np.stack([np.where(c, y, -np.inf).max(axis=1), -np.where(c, y, np.inf).min(axis=1),
                         np.where(c, -np.inf, y).max(axis=1), -np.where(c, np.inf, y).min(axis=1)],
                        axis=1)

    def decide(self, parts):
        return self.decide_inbag(parts) & (parts[:, 2] > -parts[:, 3])

    def decide_inbag(self, parts):
        return parts[:, 0] > -parts[:, 1]


class _Classes(Definedness):
    """AUC: every positive-class mask has positive and negative weight. It streams:
    whether some weight falls on each side of each mask, in bag and out of bag, combines
    over sample blocks by maximum."""

    def __init__(self, pos):
        # the masks and a mask of every sample (the total weight), summed in one pass
        self.masks = np.vstack([pos.astype(np.bool_), np.ones((1, pos.shape[1]), dtype=np.bool_)])

    def part(self, counts, lo, hi):
        # (B, 4 k), 0/1: whether some positive, some negative weight falls in each of
        # the k masks, in bag then out of bag: 2 p (t - p) > 0 exactly when both do
        masks = np.ascontiguousarray(self.masks[:, lo:hi])
        out = []
        for oob in (False, True):
            s = kernels.indicator_sums(counts, masks, oob, axis=1)
            out += [s[:, :-1] > 0, (s[:, -1:] - s[:, :-1]) > 0]
        return np.concatenate(out, axis=1).astype(np.float64)

    def decide(self, parts):
        return self.decide_inbag(parts) & np.all(parts[:, parts.shape[1] // 2 :] > 0, axis=1)

    def decide_inbag(self, parts):
        return np.all(parts[:, : parts.shape[1] // 2] > 0, axis=1)

    def pn(self, counts, oob=False, axis=1):
        """Twice positives × negatives per mask, (n_masks, B), exact integers, of the
        weights ``counts`` (their out-of-bag indicators with ``oob``); ``axis``: the
        samples axis (0: counts (N, B), samples first)."""
        s = kernels.indicator_sums(counts, self.masks, oob, axis)
        p = s[:, :-1].T
        return 2.0 * p * (s[:, -1][None, :] - p)

    def inbag(self, counts):
        return np.all(self.pn(_as_counts(counts)) > 0, axis=0)

    def oob(self, counts):
        return np.all(self.pn(_as_counts(counts), oob=True) > 0, axis=0)


class _Pairs(Definedness):
    """Concordance index: some comparable pair of weighted samples. It streams: with e*
    the earliest weighted event time, a pair exists exactly when some weighted sample
    outlives e* (time > e*) or is censored at e* or later — so the parts, per block,
    are the largest of -(event time), time and censored time over weighted samples, in
    bag and out of bag (-inf: none; times are finite, as validated), and blocks combine
    by maximum."""

    def __init__(self, target):
        t, e = target.time, target.event
        self.time = np.asarray(t, dtype=np.float64)
        # Visit in decreasing (time, censored) key: at equal times the censored come first,
        # because they are comparable with the events at that time.
        self.visit = np.lexsort((e.astype(np.int8), -t)).astype(np.int64)
        tv, ev = t[self.visit], e[self.visit]
        self.vstarts = np.ones(t.shape[0], dtype=np.bool_)
        self.vstarts[1:] = (tv[1:] != tv[:-1]) | (ev[1:] != ev[:-1])
        self.event = e.astype(np.bool_)

    def pairs(self, counts, oob=False):
        """Twice the weighted number of comparable pairs, (B,) float64."""
        return kernels.cindex_pairs(_as_counts(counts), self.visit, self.vstarts, self.event,
                                    oob).astype(np.float64)

    def inbag(self, counts):
        return self.pairs(counts) > 0

    def oob(self, counts):
        return self.pairs(counts, True) > 0

    def part(self, counts, lo, hi):
        t, e = self.time[None, lo:hi], self.event[None, lo:hi]
        c = np.asarray(counts)
        out = []
        for w in (c > 0, c == 0):
            out += [np.where(w & e, -t, -np.inf).max(axis=1), np.where(w, t, -np.inf).max(axis=1),
                    np.where(w & ~e, t, -np.inf).max(axis=1)]
        return np.stack(out, axis=1)

    @staticmethod
    def _some_pair(p):
        first = -p[:, 0]  # the earliest weighted event (+inf: none)
        return (p[:, 1] > first) | (p[:, 2] >= first)

    def decide(self, parts):
        return self._some_pair(parts[:, :3]) & self._some_pair(parts[:, 3:])

    def decide_inbag(self, parts):
        return self._some_pair(parts[:, :3])
