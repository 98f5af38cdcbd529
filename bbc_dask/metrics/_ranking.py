"""The ranking family: metrics of the order of each column (binary and one-vs-rest ROC
AUC, one-vs-one AUC, Harrell's concordance index). Each configuration's column is sorted
once and that order serves every bootstrap; the numerators and denominators are exact
integer sums over pairs of samples, so sums over sample tiles add up to the very bits of
the whole sample's.
"""
from __future__ import annotations

import sys

import numpy as np

from . import _kernels as kernels
from ._counts import _as_counts
from ._definedness import _Classes, _Pairs
from ._prepared import _Prepared


def _sorted_columns(cols):
    """``(order (M, N) int32, starts (M, N) bool)`` of the columns ``cols`` (M, N): each
    column's ascending order and where its tie groups start. Column by column: the
    int64 argsort and the sorted copy exist for one column at a time, not for the block
    (a worker's peak during preparation is the block's encoding, not 3x it).

    The order within a tie group is not needed: the kernels add a group's weights
    before using them (AUC) or give it one rank (concordance), so the sort need not be
    stable — NumPy's introsort takes ~60% of a stable sort's time."""
    m, n = cols.shape
    order = np.empty((m, n), dtype=np.int32)
    starts = np.empty((m, n), dtype=np.bool_)
    for i in range(m):
        col = np.ascontiguousarray(cols[i])
        o = np.argsort(col)
        order[i] = o
        starts[i : i + 1] = kernels.tie_starts(col[o][None, :])
    return order, starts


#: Columns up to this length are merged by NumPy's searchsorted while numba is not loaded.
SEARCHSORTED_ROWS = 4096


def _auc_sorted(neg, pos):
    """:func:`~._kernels.auc_sorted` (the same integers): NumPy's two searchsorted passes
    for short columns in a process that has not loaded numba, the compiled merge
    otherwise. A fresh Dask worker scoring the folds of N = 1,000 (100 rows each) would
    spend ~0.35 s importing numba and loading the kernel for work of microseconds — on
    the clock of the user's first run; from a few thousand rows the merge is 4x faster
    and worth it (``benchmarks/bench_engine.py``)."""
    if neg.shape[1] + pos.shape[1] > SEARCHSORTED_ROWS or "numba" in sys.modules:
        return kernels.auc_sorted(neg, pos)
    out = np.empty(neg.shape[0], dtype=np.int64)
    for m in range(neg.shape[0]):  # below + below-or-equal, as the merge counts them
        out[m] = (np.searchsorted(neg[m], pos[m], "left").sum(dtype=np.int64)
                  + np.searchsorted(neg[m], pos[m], "right").sum(dtype=np.int64))
    return out


class _RocAuc(_Prepared):
    """Binary AUC (``pos`` masks: one) or macro one-vs-rest AUC (one mask per class)."""

    def __init__(self, metric, target, pred, sample_block=None):
        super().__init__(metric, target, pred)
        self.pos = self._masks(metric, target)
        self.n_sub = self.pos.shape[0]
        if metric.needs_class_axis:  # (N, C, R, K): columns ordered (c, r, k)
            self.col_mask = np.tile(np.arange(self.n_sub), self.n_configs * self.n_repeats)
        else:
            self.col_mask = np.zeros(self.n_configs * self.n_repeats, dtype=np.int64)
        self.col_mask = self.col_mask.astype(np.int64)
        self.order, self.starts = _sorted_columns(pred.reshape(self.n_samples, -1).T)

    @staticmethod
    def _masks(metric, target):
        """Positive-class masks (n_masks, N): one per class for one-vs-rest."""
        if metric.needs_class_axis:
            return np.stack([target.codes == k for k in range(len(target.classes))])
        return (target.codes == target.pos_code)[None, :]

    @classmethod
    def rule_of(cls, metric, target):
        return _Classes(cls._masks(metric, target))

    @staticmethod
    def columns(n_sub):
        """Numerator columns per (configuration, repeat) of :meth:`pair_sums_t`, given
        the classes of the class axis (1 without one)."""
        return n_sub

    @staticmethod
    def held_columns(n_sub):
        """Whole-sample sorted columns a prepared (configuration, repeat) holds, for the
        memory of a tile task."""
        return n_sub

    def scores(self, counts):
        return self.scores_t(np.ascontiguousarray(_as_counts(counts).T))

    def scores_t(self, counts_t):
        """:meth:`scores` of counts held samples first, (N, B): the layout the in-bag
        kernel reads, so a task that draws them so holds no transposed copy."""
        acc = kernels.auc_inbag(counts_t, self.order, self.starts, self.pos, self.col_mask)
        denom = self.rule.pn(counts_t, axis=0)[self.col_mask]  # (M, B)
        return self._finish(acc, denom, self.n_configs, self.n_repeats, self.n_sub)

    @staticmethod
    def _finish(acc, denom, n_configs, n_repeats, n_sub):
        """AUC from twice the Mann-Whitney numerators and denominators (M, B); the class
        mean of one-vs-rest AUCs. One code path for :meth:`scores` and
        :meth:`scores_once`, so that their results are the same bits."""
        with np.errstate(divide="ignore", invalid="ignore"):
            auc = np.where(denom > 0, acc / np.where(denom > 0, denom, 1.0), np.nan)
        # contiguous first: the class mean then adds each row's n_sub terms in one order
        # whatever B (a strided view is reduced otherwise from 8 classes on: B = 1, a
        # fold score, and B > 1, fold rows by tiles or bootstraps, differed in the bits)
        auc = np.ascontiguousarray(auc.T).reshape(-1, n_configs, n_repeats, n_sub)
        return auc.mean(axis=3)

    @classmethod
    def scores_once(cls, target, pred):
        """Unit weights: twice the numerator of column m is, over its positives, the
        count of negatives below plus the count below-or-equal (one merge of the sorted
        negatives and positives) — the integer :func:`auc_inbag` computes, without an
        argsort of the whole column. None (take the general path) for non-finite
        predictions."""
        if not np.isfinite(pred).all():
            return None
        n, n_configs, n_repeats = pred.shape[:3]
        n_sub = pred.shape[3] if pred.ndim == 4 else 1
        pos = (np.stack([target.codes == k for k in range(n_sub)]) if pred.ndim == 4
               else (target.codes == target.pos_code)[None, :])
        cols = pred.reshape(n, -1)  # columns ordered (c, r, k) as in __init__
        acc = np.zeros((cols.shape[1], 1), dtype=np.int64)
        denom = np.zeros((cols.shape[1], 1))
        for s in range(n_sub):
            which = np.arange(s, cols.shape[1], n_sub)
            p = float(pos[s].sum())
            denom[which] = 2.0 * p * (n - p)  # as _pn computes it for unit weights
            if p == 0 or p == n:
                continue
            # each class's rows taken from the (n, columns) block (contiguous rows), then
            # one C-ordered (columns, n_class) copy each, sorted in place: no transposed
            # copy of the whole block first (a pooled block of 10 x 200,000: 56.7 -> 37.7
            # ms), and the kernel keeps reading C-ordered rows (one compiled signature)
            rows = cols if n_sub == 1 else cols[:, which]
            neg = np.ascontiguousarray(rows[~pos[s]].T)
            neg.sort(axis=1)
            hit = np.ascontiguousarray(rows[pos[s]].T)
            hit.sort(axis=1)
            acc[which, 0] = _auc_sorted(neg, hit)
        return cls._finish(acc, denom, n_configs, n_repeats, n_sub)[0]

    def winner_scores(self, counts, winners, oob=True):
        counts = _as_counts(counts)
        per = self.n_repeats * self.n_sub
        cols = np.asarray(winners, dtype=np.int64)[:, None] * per + np.arange(per)
        acc = kernels.auc_winners(counts, self.order, self.starts, self.pos, self.col_mask,
                                  cols, oob)
        return self._winner_auc(acc, self.rule.pn(counts, oob))

    def pair_sums_t(self, weights_t):
        """Sums over pairs of samples, of weights held samples first (N, B): ``(num (M,
        B), den (n_masks, B))`` int64 — twice the Mann-Whitney numerator of every column,
        twice positives x negatives of every mask. Exact integers, so the sums over a
        union of sample sets follow from those of the sets and of their unions two by
        two (the chunked path's sample tiles), and :meth:`finish_pairs` gives the very
        bits of :meth:`scores`."""
        return (kernels.auc_inbag(weights_t, self.order, self.starts, self.pos, self.col_mask),
                self.rule.pn(weights_t, axis=0).astype(np.int64))

    @classmethod
    def finish_pairs(cls, num, den, n_configs, n_repeats, n_sub):
        """Scores (B, C, R) from :meth:`pair_sums_t`, summed (C configurations)."""
        mask = np.tile(np.arange(n_sub), n_configs * n_repeats)
        return cls._finish(num, den.astype(np.float64)[mask], n_configs, n_repeats, n_sub)

    @classmethod
    def finish_winner_pairs(cls, num, den, n_repeats, n_sub):
        """Winner scores (B, R) from their :meth:`pair_sums_t` numerators (B, R x n_sub),
        each bootstrap's own winner's, and the denominators (n_masks, B)."""
        return cls._winner_of(num, den.astype(np.float64), n_repeats, n_sub)

    def winner_scores_t(self, weights_t, winners):
        """:meth:`winner_scores` of weights held samples first, (N, B) (counts, or
        out-of-bag indicators as 0/1): the distinct winners' columns are scored for every
        bootstrap by the in-bag kernel, each bootstrap's own winner then picked — the
        same integers as :func:`~._kernels.auc_winners`, read a row of B weights at a
        time instead of one weight per sample and bootstrap."""
        per = self.n_repeats * self.n_sub
        distinct, pick = np.unique(np.asarray(winners, dtype=np.int64), return_inverse=True)
        cols = (distinct[:, None] * per + np.arange(per)).ravel()
        acc = kernels.auc_inbag(weights_t, self.order[cols], self.starts[cols], self.pos,
                                self.col_mask[cols])  # (D * per, B)
        n_boot = weights_t.shape[1]
        acc = acc.reshape(distinct.size, per, n_boot)[pick.ravel(), :, np.arange(n_boot)]
        return self._winner_auc(acc, self.rule.pn(weights_t, axis=0))

    def _winner_auc(self, acc, pn):
        """Winner scores (B, R) from numerators (B, per) and :meth:`_Classes.pn`."""
        return self._winner_of(acc, pn, self.n_repeats, self.n_sub)

    @staticmethod
    def _winner_of(acc, pn, n_repeats, n_sub):
        denom = pn.T[:, np.tile(np.arange(n_sub), n_repeats)]  # (B, per): columns (r, k)
        with np.errstate(divide="ignore", invalid="ignore"):
            auc = np.where(denom > 0, acc / np.where(denom > 0, denom, 1.0), np.nan)
        return auc.reshape(-1, n_repeats, n_sub).mean(axis=2)



class _RocAucOvo(_Prepared):
    """Macro one-vs-one AUC (Hand & Till; the 2024 paper's code's multiclass AUC,
    scikit-learn's ``roc_auc_score(multi_class="ovo")``): the mean over ordered class
    pairs (j, k) of the AUC of the class-j probability separating class j from class k,
    on the samples of those two classes alone. Each pair is its own sub-problem — its
    samples, their sorted columns — scored by the binary kernel, so its numerator and
    ``2 n_j n_k`` are exact integer sums over pairs of samples, as binary AUC's (the
    chunked tiles add them)."""

    def __init__(self, metric, target, pred, sample_block=None):
        super().__init__(metric, target, pred)
        k = len(target.classes)
        self.n_cls = k
        self.pairs = [(a, b) for a in range(k) for b in range(k) if a != b]
        self.sub = []
        for a, b in self.pairs:
            rows = np.flatnonzero((target.codes == a) | (target.codes == b))
            cols = pred[rows][:, :, :, a].reshape(rows.size, -1).T  # columns (c, r)
            order, starts = _sorted_columns(cols)
            self.sub.append((rows, order, starts, (target.codes[rows] == a)[None, :]))

    @classmethod
    def rule_of(cls, metric, target):
        # every class in bag and out of bag: then every pair has both sides
        return _Classes(np.stack([target.codes == k for k in range(len(target.classes))]))

    @staticmethod
    def columns(n_sub):
        return n_sub * (n_sub - 1)

    @staticmethod
    def held_columns(n_sub):
        # the read columns, or the pairs' sorted ones: each sample sits in 2(K-1) pairs
        return max(n_sub, 2 * (n_sub - 1))

    def _pair_sums(self, weights_t, cols=None):
        """``(num (S, M', B), den (S, B))`` of the sub-problems, columns ``cols`` (all)."""
        num, den = [], []
        for rows, order, starts, pos in self.sub:
            w = np.ascontiguousarray(weights_t[rows])
            o, st = (order, starts) if cols is None else (order[cols], starts[cols])
            num.append(kernels.auc_inbag(w, o, st, pos, np.zeros(o.shape[0], dtype=np.int64)))
            den.append(_Classes(pos).pn(w, axis=0)[0])
        return np.stack(num), np.stack(den)

    def pair_sums_t(self, weights_t):
        """``(num (C·R·S, B), den (S, B))`` int64, columns ordered (c, r, pair)."""
        num, den = self._pair_sums(weights_t)
        s, m, b = num.shape
        return np.ascontiguousarray(num.transpose(1, 0, 2)).reshape(m * s, b), den.astype(np.int64)

    @classmethod
    def finish_pairs(cls, num, den, n_configs, n_repeats, n_sub):
        return _RocAuc.finish_pairs(num, den, n_configs, n_repeats, cls.columns(n_sub))

    @classmethod
    def finish_winner_pairs(cls, num, den, n_repeats, n_sub):
        return _RocAuc._winner_of(num, den.astype(np.float64), n_repeats, cls.columns(n_sub))

    def scores(self, counts):
        return self.scores_t(np.ascontiguousarray(_as_counts(counts).T))

    def scores_t(self, counts_t):
        return self.finish_pairs(*self.pair_sums_t(counts_t), self.n_configs, self.n_repeats,
                                 self.n_cls)

    def winner_scores(self, counts, winners, oob=True):
        counts = _as_counts(counts)
        w = (counts == 0).astype(np.int32) if oob else counts
        return self.winner_scores_t(np.ascontiguousarray(w.T), winners)

    def winner_scores_t(self, weights_t, winners):
        """Scores (B, R) of each bootstrap's winner: the distinct winners' columns
        scored for every bootstrap, each bootstrap's own picked."""
        r = self.n_repeats
        distinct, pick = np.unique(np.asarray(winners, dtype=np.int64), return_inverse=True)
        cols = (distinct[:, None] * r + np.arange(r)).ravel()
        num, den = self._pair_sums(weights_t, cols)  # (S, D·R, B)
        s, _, b = num.shape
        num = num.reshape(s, distinct.size, r, b)[:, pick.ravel(), :, np.arange(b)]  # (B, S, R)
        num = np.ascontiguousarray(num.transpose(0, 2, 1)).reshape(b, r * s)  # columns (r, pair)
        return _RocAuc._winner_of(num, den.astype(np.float64), r, s)


class _CIndex(_Prepared):
    def __init__(self, metric, target, pred, sample_block=None):
        super().__init__(metric, target, pred)
        self.visit, self.vstarts, self.event = self.rule.visit, self.rule.vstarts, self.rule.event
        order, starts = _sorted_columns(pred.reshape(self.n_samples, -1).T)
        dense = np.cumsum(starts, axis=1, dtype=np.int32)
        self.ranks = np.empty_like(dense)
        np.put_along_axis(self.ranks, order, dense, axis=1)
        self.n_ranks = dense[:, -1].astype(np.int64)

    @classmethod
    def rule_of(cls, metric, target):
        return _Pairs(target)

    def _pairs(self, counts, oob=False):
        return self.rule.pairs(counts, oob)

    @staticmethod
    def columns(n_sub):
        return 1

    @staticmethod
    def held_columns(n_sub):
        return 1

    #: Bytes of the kernel's Fenwick tree of a column ((ranks + 1) x bootstraps int64)
    #: in :meth:`pair_sums_t` (a task of the chunked path): beyond, the bootstraps go
    #: through it in slices — a seed block's 64 over two tiles of 131,072 samples would
    #: take 128 MiB. Not in :meth:`scores`: slices of few bootstraps make the kernel several
    #: times slower (docs/performance.md, "Tuning constants").
    TREE_BYTES = 16 * 2**20

    def _numerators(self, weights_t, tree_bytes=None):
        """:func:`~._kernels.cindex_inbag` of weights held samples first (N, B), in
        slices of bootstraps whose trees take ``tree_bytes`` at most (each bootstrap's
        numerator is its own: the same integers)."""
        step = weights_t.shape[1] if tree_bytes is None else max(
            1, tree_bytes // (8 * (int(self.n_ranks.max(initial=0)) + 1)))
        if step >= weights_t.shape[1]:
            return kernels.cindex_inbag(weights_t, self.ranks, self.n_ranks, self.visit,
                                        self.vstarts, self.event)
        return np.concatenate([kernels.cindex_inbag(
            np.ascontiguousarray(weights_t[:, i : i + step]), self.ranks, self.n_ranks,
            self.visit, self.vstarts, self.event) for i in range(0, weights_t.shape[1], step)],
            axis=1)

    def scores(self, counts):
        counts = _as_counts(counts)
        num = self._numerators(np.ascontiguousarray(counts.T))
        return self.finish_pairs(num, self._pairs(counts)[None, :], self.n_configs,
                                 self.n_repeats)

    def winner_scores(self, counts, winners, oob=True):
        counts = _as_counts(counts)
        R = self.n_repeats
        cols = np.asarray(winners, dtype=np.int64)[:, None] * R + np.arange(R)
        num = kernels.cindex_winners(
            counts, self.ranks, self.n_ranks, self.visit, self.vstarts, self.event, cols, oob
        )
        return self.finish_winner_pairs(num, self._pairs(counts, oob)[None, :], R)

    def pair_sums_t(self, weights_t):
        """``(num (M, B), den (1, B))`` int64: twice the concordance numerator of every
        column and twice the comparable pairs, of weights held samples first (N, B) —
        sums over pairs of samples, as :meth:`_RocAuc.pair_sums_t`."""
        num = self._numerators(weights_t, self.TREE_BYTES)
        den = kernels.cindex_pairs(np.ascontiguousarray(weights_t.T), self.visit,
                                   self.vstarts, self.event, False)
        return num, den[None, :]

    @staticmethod
    def finish_pairs(num, den, n_configs, n_repeats, n_sub=1):
        """Scores (B, C, R) from numerators (M, B) and comparable pairs (1, B)."""
        den = den[0].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        return c.T.reshape(-1, n_configs, n_repeats)

    @staticmethod
    def finish_winner_pairs(num, den, n_repeats, n_sub=1):
        """Winner scores (B, R) from numerators (B, R) and comparable pairs (1, B)."""
        den = den[0].astype(np.float64)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
