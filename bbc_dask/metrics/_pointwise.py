"""The pointwise family: metrics that are ratios of weighted sums of per-sample features
(accuracy, balanced accuracy, F1, log loss, squared and absolute error, R², squared
correlation). A block of bootstraps is a dense matrix product ``counts.T @ features``,
summed per sample block (:data:`~bbc_dask.metrics.SAMPLE_BLOCK`) in block order, so that
a task holding one block of samples forms the very terms of the in-memory sums.
"""
from __future__ import annotations

import copy
import itertools

import numpy as np

from .._jit import one_blas_thread, pin_blas_thread
from . import _kernels as kernels
from ._counts import _as_counts, sample_blocks
from ._definedness import _Spread
from ._prepared import _Prepared


class _Pointwise(_Prepared):
    """Ratios of weighted feature sums. Subclasses set ``self.features`` (a list of
    ``(rows, values (len(rows), C*R))``; ``rows`` None for every sample) and
    ``self.gfeat`` (n_g, N) config-free features, and implement the static
    ``combine(fsums list of (B, C, R), gsums (B, n_g)) -> (B, C, R)``.

    Sums run per sample block (:data:`~bbc_dask.metrics.SAMPLE_BLOCK`) and the block sums
    are added in block order: a task that holds one block of samples computes the very
    terms (:meth:`feature_sums`, :meth:`config_free_sums`) whose sum the in-memory kernel
    forms, so the two agree bit for bit.

    Indicator features (accuracy, balanced accuracy, F1) are stored as float32: sums of
    integer counts times 0/1 are exact in float32 below 2**24, and the product runs twice
    as fast as in float64.
    """

    dtype = np.float64

    def __init__(self, metric, target, pred, sample_block=None):
        super().__init__(metric, target, pred)
        self.all_rows = np.arange(self.n_samples, dtype=np.int64)
        self.edges = sample_blocks(self.n_samples, sample_block)
        self._panels = {}
        self._views = None
        if self.dtype == np.float32 and self.n_samples >= 2**24 // 4:
            self.dtype = np.float64

    def __getstate__(self):
        # the panel and view caches are rebuilt on use: do not ship them with the object
        return {k: v for k, v in self.__dict__.items() if k not in ("_panels", "_views")}

    def __setstate__(self, state):
        self.__dict__.update(state, _panels={}, _views=None)

    def _flat(self, a):
        return np.ascontiguousarray(a.reshape(a.shape[0], int(np.prod(a.shape[1:]))), dtype=self.dtype)

    def _equal(self, pred, ref):
        """``pred == ref`` written straight into the feature dtype (one pass, no bool copy)."""
        out = np.empty(pred.shape, dtype=self.dtype)
        np.equal(pred, ref, out=out, casting="unsafe")
        return out.reshape(pred.shape[0], -1)

    @property
    def indicator(self):
        return type(self).dtype == np.float32  # 0/1 features (see the class doc)

    PANEL = 64
    ROWS = 32  # a multiple of any BLAS register tile's width

    def _panel_list(self, values):
        panels = self._panels.get(id(values))
        if panels is None:
            panels = []
            for p0 in range(0, values.shape[1], self.PANEL):
                blk = np.zeros((values.shape[0], self.PANEL))
                part = values[:, p0 : p0 + self.PANEL]
                blk[:, : part.shape[1]] = part
                panels.append(blk)
            self._panels[id(values)] = panels
        return panels

    def _product(self, wr, values, panels=None):
        """``wr @ values``, bit-identical for a cell whatever the other rows and columns.

        float32 indicator sums are exact integers. float64 sums are rounded, and BLAS
        picks other kernels (another summation order) at the edges of its register
        tiles, so the columns are multiplied in zero-padded panels of exactly ``PANEL``
        columns and the rows (bootstraps) are zero-padded to a multiple of ``ROWS``: a
        bootstrap and a configuration then get the same bits in the whole cube and in
        any chunk, in any batch of bootstraps (measured: an unpadded row's bits change
        with the number of rows) — at one BLAS thread, as Dask's workers run it
        (:func:`~bbc_dask._jit.one_blas_thread`). ``panels``: compute only these panel
        indices (the others are left NaN).
        """
        if values.dtype == np.float32:
            return (wr @ values).astype(np.float64)
        m = wr.shape[0]
        if m % self.ROWS:
            wr = np.concatenate([wr, np.zeros((self.ROWS - m % self.ROWS, wr.shape[1]), wr.dtype)])
        out = np.full((wr.shape[0], values.shape[1]), np.nan)
        with one_blas_thread():  # the bits also depend on BLAS's threads
            for i, blk in enumerate(self._panel_list(values)):
                if panels is not None and i not in panels:
                    continue
                p0 = i * self.PANEL
                w = min(self.PANEL, values.shape[1] - p0)
                pin_blas_thread()
                out[:, p0 : p0 + w] = (wr @ blk)[:, :w]
        return out[:m]

    def _block_views(self):
        """Per sample block ``(lo, hi, [(rows, values)], g)``: views of the features of
        those samples (rows relative to ``lo``); built once, kept (stable panel keys)."""
        if self._views is None:
            self._views = []
            for lo, hi in self.edges:
                feats = []
                for rows, values in self.features:
                    if rows is None:
                        feats.append((None, values[lo:hi]))
                    else:
                        a, b = np.searchsorted(rows, [lo, hi])
                        feats.append((rows[a:b] - lo, values[a:b]))
                self._views.append((lo, hi, feats, np.ascontiguousarray(self.gfeat[:, lo:hi])))
        return self._views

    def weights(self, counts, oob=False):
        """The float weights the products take (out-of-bag indicators with ``oob``)."""
        return ((counts == 0) if oob else counts).astype(self.dtype)

    def _sums_of(self, counts, feats, g, oob, panels=None, wt=None):
        counts = _as_counts(counts)
        wt = self.weights(counts, oob) if wt is None else wt
        fsums = []
        for rows, values in feats:
            wr = wt if rows is None else np.ascontiguousarray(wt[:, rows])
            s = self._product(wr, values, panels)
            fsums.append(s.reshape(wt.shape[0], self.n_configs, self.n_repeats))
        return fsums, kernels.weighted_sums(counts, g, oob)

    # A task holding one sample block computes the very terms the whole sample's sums add
    # up (``_blocked_sums``): the feature sums of its weights, and the config-free sums.
    def _one_block(self):
        if len(self.edges) != 1:
            raise AssertionError("for one sample block only; use scores()")
        return self._block_views()[0]

    def feature_sums(self, weights):
        """Feature sums (list of (B, C, R)) of :meth:`weights` over this sample block."""
        _, _, feats, _ = self._one_block()
        fs = []
        for rows, values in feats:
            wr = weights if rows is None else np.ascontiguousarray(weights[:, rows])
            fs.append(self._product(wr, values).reshape(weights.shape[0], self.n_configs,
                                                         self.n_repeats))
        return fs

    @classmethod
    def stacked(cls, parts, n_configs):
        """One prepared metric over ``n_configs`` configurations from ``parts`` (an
        iterable of prepared parts of the same samples and target, in configuration
        order): their feature columns side by side in one matrix, so that one product
        serves them all (narrow products waste BLAS, and stream the weights once per
        part). Each part is copied as it arrives: it can be dropped at once."""
        out, at = None, 0
        for p in parts:
            if out is None:
                out = copy.copy(p)
                out.__setstate__({"n_configs": n_configs, "features": [
                    (rows, np.empty((v.shape[0], n_configs * p.n_repeats), v.dtype))
                    for rows, v in p.features]})
            w = p.n_configs * p.n_repeats
            for (_, dst), (_, src) in zip(out.features, p.features):
                dst[:, at : at + w] = src
            at += w
        if out is None or at != n_configs * out.n_repeats:
            raise AssertionError(f"parts hold {at} columns, not {n_configs} configurations")
        return out

    def config_free_sums(self, counts, oob=False):
        """Configuration-free sums (B, n_g) of these counts over this sample block."""
        return kernels.weighted_sums(_as_counts(counts), self._one_block()[3], oob)

    def _blocked_sums(self, counts, oob, panels=None):
        """Sums over every sample block, added in block order."""
        counts = _as_counts(counts)
        fs = gs = None
        for lo, hi, feats, g in self._block_views():
            f, s = self._sums_of(counts[:, lo:hi], feats, g, oob, panels)
            fs = f if fs is None else [a + b for a, b in zip(fs, f)]
            gs = s if gs is None else gs + s
        return fs, gs

    def fold_sums(self, at, n_rows, cuts=None, centers=None):
        """Per fold row, the feature sums (list of (n_rows, C)) and configuration-free
        sums (n_rows, n_g) of its samples: ``at`` (n, R) holds each sample's fold row in
        each repeat (-1: none; each repeat's rows its own; the predictions' repeat ``r``
        counts in its rows of repeat ``r`` only); ``centers`` each row's mean target
        (R²; None: this target's own centre, as a fold's own target has).

        The sums of each block of the whole sample (:func:`sample_blocks`) are formed
        one sample at a time in sample order (:func:`~bbc_dask.metrics._kernels.fold_row_sums`),
        then added in block order. ``cuts`` (blocks + 1 positions) says where this
        object's samples cross into the next block of the whole sample: a fold's samples
        alone (an engine task's) and the whole sample, or a task's sample block, then
        form the very same terms — so fold scores are the same bits however the samples
        are held (BBC-F of a cube chunked along samples). Default: this object's own
        sample blocks."""
        at = np.asarray(at).reshape(self.n_samples, -1)
        if cuts is None:
            cuts = [lo for lo, _ in self.edges] + [self.n_samples]
        # views: fold_row_sums gathers its rows (the same features for every repeat
        # unless they depend on the fold's centre)
        g = [self.fold_gfeat(None if centers is None else centers[at[:, r]]).T
             for r in range(at.shape[1])]
        feats = self.fold_features(at, centers)
        fs = gs = None
        for a, b in itertools.pairwise(cuts):
            f = []
            for rows, values in feats:
                if rows is None:
                    f.append(kernels.fold_row_sums(values[a:b], at[a:b], n_rows, self.n_repeats, False))
                else:
                    i, k = np.searchsorted(rows, [a, b])
                    f.append(kernels.fold_row_sums(values[i:k], at[rows[i:k]], n_rows,
                                                   self.n_repeats, False))
            s = sum(kernels.fold_row_sums(g[r][a:b], at[a:b, r : r + 1], n_rows, 1, True)
                    for r in range(at.shape[1]))
            fs = f if fs is None else [x + y for x, y in zip(fs, f)]
            gs = s if gs is None else gs + s
        return fs, gs

    def fold_gfeat(self, centers=None):
        """The configuration-free features (n_g, n) with each sample's fold centre
        ``centers`` (n,) where they depend on one (R²); None: :attr:`gfeat`."""
        return self.gfeat

    def fold_features(self, at, centers=None):
        """The features of :meth:`fold_sums` with each sample's fold row ``at`` (n, R) and
        the rows' centres ``centers`` where they depend on one (squared correlation);
        None: :attr:`features`."""
        return self.features

    @classmethod
    def fold_scores(cls, fsums, gsums):
        """Scores (n_rows, C) of :meth:`fold_sums` (NaN where undefined)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return cls.combine([f[:, :, None] for f in fsums], gsums)[:, :, 0]

    def scores(self, counts):
        fsums, gsums = self._blocked_sums(counts, False)
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.combine(fsums, gsums)

    def winner_scores(self, counts, winners, oob=True):
        counts = _as_counts(counts)
        winners = np.asarray(winners, dtype=np.int64)
        if not self.indicator and len(self.edges) > 1:
            # Real features over several blocks: the winners' panels of the blocked sums,
            # the very numbers a sample-chunked task computes for every column.
            cols = winners[:, None] * self.n_repeats + np.arange(self.n_repeats)
            fs, gs = self._blocked_sums(counts, oob, panels=set((cols // self.PANEL).ravel().tolist()))
            rows = np.arange(counts.shape[0])
            fs = [f[rows, winners][:, None, :] for f in fs]
            with np.errstate(divide="ignore", invalid="ignore"):
                return self.combine(fs, gs)[:, 0, :]
        # Only the few distinct winners' columns are gathered (contiguous per column).
        # Indicator sums are exact integers: the same numbers whatever the blocking.
        uniq, inv = np.unique(winners, return_inverse=True)
        cols = (uniq[:, None] * self.n_repeats + np.arange(self.n_repeats)).ravel()
        fsums = []
        for rows, values in self.features:
            r = self.all_rows if rows is None else rows
            vt = np.ascontiguousarray(values[:, cols].T, dtype=np.uint8 if self.indicator else np.float64)
            s = kernels.feature_sums_winners(counts, r, vt, inv.astype(np.int64), self.n_repeats,
                                             oob, indicator=self.indicator)
            fsums.append(s[:, None, :])
        gsums = kernels.weighted_sums(counts, self.gfeat, oob)
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.combine(fsums, gsums)[:, 0, :]


class _Accuracy(_Pointwise):
    dtype = np.float32
    def __init__(self, metric, target, pred, sample_block=None):
        super().__init__(metric, target, pred, sample_block)
        self.features = [(None, self._equal(pred, target.codes[:, None, None]))]
        self.gfeat = np.ones((1, self.n_samples))

    @staticmethod
    def combine(fsums, gsums):
        return fsums[0] / gsums[:, 0, None, None]


class _BalancedAccuracy(_Pointwise):
    dtype = np.float32
    # Mean recall over the classes present (with positive weight) in y, as scikit-learn.
    def __init__(self, metric, target, pred, sample_block=None):
        super().__init__(metric, target, pred, sample_block)
        correct = pred == target.codes[:, None, None]
        n_cls = len(target.classes)
        self.features = []
        for k in range(n_cls):
            rows = np.flatnonzero(target.codes == k)
            self.features.append((rows, self._flat(correct[rows])))
        self.gfeat = np.stack([(target.codes == k).astype(np.float64) for k in range(n_cls)])

    @staticmethod
    def combine(fsums, gsums):
        total = np.zeros_like(fsums[0])
        present = np.zeros(gsums.shape[0])
        for k, fs in enumerate(fsums):
            g = gsums[:, k]
            ok = g > 0
            total += np.where(ok[:, None, None], fs / np.where(ok, g, 1.0)[:, None, None], 0.0)
            present += ok
        return total / present[:, None, None]


class _F1(_Pointwise):
    dtype = np.float32
    # F1 = 2 TP / (TP + predicted positives + actual positives); 0 when that is 0
    # (scikit-learn's zero_division default).
    def __init__(self, metric, target, pred, sample_block=None):
        super().__init__(metric, target, pred, sample_block)
        pp = pred == target.pos_code
        is_pos = target.codes == target.pos_code
        prow, nrow = np.flatnonzero(is_pos), np.flatnonzero(~is_pos)
        self.features = [(prow, self._flat(pp[prow])), (nrow, self._flat(pp[nrow]))]
        self.gfeat = is_pos.astype(np.float64)[None, :]

    @staticmethod
    def combine(fsums, gsums):
        tp, fp = fsums
        denom = 2 * tp + fp + (gsums[:, 0, None, None] - tp)
        return np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1.0), 0.0)


class _MeanLoss(_Pointwise):
    """Weighted mean of a per-sample score (negated loss)."""

    def __init__(self, metric, target, pred, sample_block=None):
        super().__init__(metric, target, pred, sample_block)
        self.features = [(None, self._flat(self.per_sample(target, pred)))]
        self.gfeat = np.ones((1, self.n_samples))

    @staticmethod
    def combine(fsums, gsums):
        return fsums[0] / gsums[:, 0, None, None]


class _NegLogLoss(_MeanLoss):
    @staticmethod
    def per_sample(target, pred):
        # pred (N, C, R, K): probability of the true class, clipped as scikit-learn does.
        p = np.take_along_axis(pred, target.codes[:, None, None, None], axis=3)[..., 0]
        eps = np.finfo(np.float64).eps
        return np.log(np.clip(p, eps, 1 - eps))


class _NegMSE(_MeanLoss):
    @staticmethod
    def per_sample(target, pred):
        return -((target.values[:, None, None] - pred) ** 2)


class _NegMAE(_MeanLoss):
    @staticmethod
    def per_sample(target, pred):
        return -np.abs(target.values[:, None, None] - pred)


class _R2(_Pointwise):
    # 1 - SS_res / SS_tot. SS_tot comes from weighted sums of 1, y - m and (y - m)² with
    # m the whole sample's mean y (fixed, so every sample block adds the same terms):
    # SS_tot = S2 - S1² / S0, with no cancellation beyond (weighted mean - m)² — small for
    # a bootstrap of the whole sample, not for one fold, so fold sums centre each fold on
    # its own mean (fold_gfeat). It is undefined (the rule) when the weighted y is constant.
    def __init__(self, metric, target, pred, sample_block=None):
        super().__init__(metric, target, pred, sample_block)
        sq = (target.values[:, None, None] - pred) ** 2
        self.features = [(None, self._flat(sq))]
        self.y = target.values
        self.gfeat = self.fold_gfeat(target.value_center())

    def fold_gfeat(self, centers=None):
        if centers is None:
            return self.gfeat
        yc = self.y - centers
        return np.stack([np.ones(self.n_samples), yc, yc * yc])

    @classmethod
    def rule_of(cls, metric, target):
        return _Spread(target.values)

    @staticmethod
    def combine(fsums, gsums):
        sstot = gsums[:, 2] - gsums[:, 1] ** 2 / gsums[:, 0]
        sstot = np.where(sstot > 0, sstot, np.nan)
        return 1.0 - fsums[0] / sstot[:, None, None]


class _R2Corr(_Pointwise):
    # The squared Pearson correlation of y and the prediction (the 2024 paper's code's
    # regression "R²", np.corrcoef(y, x)[0, 1] ** 2): cov² / (var_x var_y) from weighted
    # sums of 1, y', y'² (configuration-free) and x', x'², x'y' (per column), both shifted
    # by the whole sample's mean y m (fixed, so every sample block and fold adds the same
    # terms; predictions of y are near it, which keeps the differences of sums accurate).
    # 0 where the weighted prediction is constant (no linear association); undefined
    # where the weighted y is (the rule).
    # A fold's sums shift both by the fold's own mean y (fold_features, fold_gfeat), as an
    # engine task holding the fold alone does: the same bits, and no cancellation in a
    # fold far from the whole sample's mean.
    def __init__(self, metric, target, pred, sample_block=None):
        super().__init__(metric, target, pred, sample_block)
        self.pred, self.y = pred, target.values
        m = target.value_center()
        self.features = self._features(np.full((self.n_samples, 1), m))
        self.gfeat = self.fold_gfeat(np.full(self.n_samples, m))

    def _features(self, shift):
        """Features with sample i of repeat r shifted by ``shift[i, r]`` ((n, 1): all
        repeats alike)."""
        x = self.pred - shift[:, None, :]
        yc = (self.y[:, None] - shift)[:, None, :]
        return [(None, self._flat(x)), (None, self._flat(x * x)), (None, self._flat(x * yc))]

    def fold_gfeat(self, centers=None):
        if centers is None:
            return self.gfeat
        yc = self.y - centers
        return np.stack([np.ones(self.n_samples), yc, yc * yc])

    def fold_features(self, at, centers=None):
        if centers is None:
            return self.features
        at = np.asarray(at).reshape(self.n_samples, -1)
        return self._features(np.where(at >= 0, centers[np.maximum(at, 0)], 0.0))

    @classmethod
    def rule_of(cls, metric, target):
        return _Spread(target.values)

    @staticmethod
    def combine(fsums, gsums):
        sx, sxx, sxy = fsums
        s0, sy, syy = (gsums[:, i, None, None] for i in range(3))
        vx = sxx - sx * sx / s0
        vy = syy - sy * sy / s0
        cov = sxy - sx * sy / s0
        vy = np.where(vy > 0, vy, np.nan)
        return np.where(vx > 0, cov * cov / (np.where(vx > 0, vx, 1.0) * vy), 0.0 * vy)
