"""Metric registry with batched, bootstrap-weighted implementations.

Every metric is *larger is better* (names follow scikit-learn's scorer names, so errors
and losses are negated: ``neg_log_loss``). A metric is evaluated on integer *count
weights*: the value with weight vector ``w`` equals scikit-learn's value on the sample in
which row ``i`` is repeated ``w[i]`` times. One call scores every configuration (and every
repeat) for a whole block of bootstraps.

Two families:

- *pointwise* metrics are ratios of weighted sums of per-sample features, so a block of
  bootstraps is a dense matrix product ``counts.T @ features`` (accuracy, balanced
  accuracy, F1, log loss, squared/absolute error, R²);
- *ranking* metrics (ROC AUC, one-vs-rest AUC, concordance index) sort each configuration
  once and reuse that order for every bootstrap, in exact integer arithmetic.

Use :func:`get_metric` to look one up and :data:`METRICS` for the names.
"""
from __future__ import annotations

import abc
import copy
import itertools
from dataclasses import dataclass, field

import numpy as np

from .._jit import one_blas_thread, pin_blas_thread
from ..exceptions import InvalidParameterError
from . import _kernels as K

__all__ = ["METRICS", "SAMPLE_BLOCK", "Definedness", "Metric", "get_metric", "metric_names", "sample_blocks"]

#: Samples per *sample block*. Bootstrap counts are drawn per block of this many
#: consecutive samples (:mod:`bbc_dask.stats._bootstrap`), and pointwise metrics sum their
#: features per block, then add the block sums in block order: a task holding one block
#: of samples computes exactly the partial sums the in-memory kernel adds up, so a cube
#: chunked along samples gives the in-memory result bit for bit. A cube of at most this
#: many samples is one block (the kernels of earlier versions, unchanged).
SAMPLE_BLOCK = 2**15


def sample_blocks(n, size=None):
    """``[(lo, hi), ...]``: the sample blocks of ``n`` samples (``size`` default
    :data:`SAMPLE_BLOCK`, read at call time)."""
    size = SAMPLE_BLOCK if size is None else int(size)
    return [(lo, min(lo + size, n)) for lo in range(0, n, size)]


@dataclass(frozen=True)
class Metric:
    """A registered metric.

    Attributes
    ----------
    name : str
        scikit-learn scorer name.
    greater_is_better : bool
        Always True: losses are negated.
    kind : {"pointwise", "ranking"}
        How the batched kernel works.
    prediction : {"labels", "scores", "proba", "values", "risk"}
        What a prediction must be: class labels (``predict``), a continuous score of the
        positive class (``predict_proba[:, 1]`` or ``decision_function``), all class
        probabilities (class axis last, classes in sorted label order), regression values,
        or a risk score (higher = earlier event).
    task : {"binary", "classification", "multiclass", "regression", "survival"}
    description : str
    """

    name: str
    kind: str
    prediction: str
    task: str
    description: str
    greater_is_better: bool = True
    _impl: type = field(default=None, repr=False, compare=False)

    @property
    def needs_class_axis(self) -> bool:
        return self.prediction == "proba"

    @property
    def feature_bytes(self) -> int:
        """Bytes a prepared pointwise metric holds per (sample, configuration, repeat):
        float32 indicators, or float64 features and their float64 product panels."""
        return 4 if getattr(self._impl, "dtype", None) == np.float32 else 16

    @property
    def pairwise(self):
        """The prepared family of a ranking metric, whose bootstrap statistics are exact
        integer sums over pairs of samples (``pair_sums_t``, ``finish_pairs``,
        ``finish_winner_pairs``); None for a pointwise metric."""
        return self._impl if hasattr(self._impl, "pair_sums_t") else None

    @property
    def is_classification(self) -> bool:
        return self.task in ("binary", "classification", "multiclass")

    def prepare(self, target, predictions, sample_block=None):
        """Precompute what the batched kernels need.

        ``target`` is a :class:`Target` (encoded y); ``predictions`` is a validated float64
        array ``(N, C, R)`` or ``(N, C, R, K)`` (labels already encoded as class codes).
        ``sample_block``: the sample block size of the sums (default :data:`SAMPLE_BLOCK`).
        """
        return self._impl(self, target, predictions, sample_block=sample_block)

    def stacked(self, parts, n_configs):
        """One prepared (pointwise) metric over the configurations of prepared ``parts``
        of the same samples, side by side (see ``_Pointwise.stacked``)."""
        return self._impl.stacked(parts, n_configs)

    def definedness(self, target):
        """The rule that says, from the bootstrap counts alone, whether this metric is
        defined in bag and out of bag (:class:`Definedness`). It needs no predictions,
        so a draw can be kept or redrawn before any prediction is read."""
        return self._impl.rule_of(self, target)

    def combine(self, fsums, gsums):
        """Scores from summed pointwise features (see ``_Pointwise.sums``)."""
        return self._impl.combine(fsums, gsums)

    def fold_scores(self, fsums, gsums):
        """Fold scores (rows, C) of a pointwise metric's per-fold sums (see
        ``_Pointwise.fold_sums``)."""
        return self._impl.fold_scores(fsums, gsums)

    def scores_once(self, target, predictions):
        """The metric of every (configuration, repeat), each sample counted once: (C, R).
        Equal bit for bit to ``prepare(target, predictions).scores(ones)[0]``; ranking
        metrics take a faster path for it (a fold score or a pooled score needs no
        bootstrap machinery: no full argsort of every column)."""
        once = getattr(self._impl, "scores_once", None)
        if once is not None:
            out = once(target, predictions)
            if out is not None:
                return out
        n = predictions.shape[0]
        return self.prepare(target, predictions).scores(np.ones((1, n), dtype=np.int32))[0]


@dataclass
class Target:
    """Encoded target: class codes, regression values, or survival (time, event)."""

    codes: np.ndarray | None = None  # int64 class codes 0..K-1 (classification)
    classes: np.ndarray | None = None  # labels in sorted order
    pos_code: int | None = None  # binary metrics: code of the positive class
    values: np.ndarray | None = None  # regression targets, float64
    time: np.ndarray | None = None  # survival
    event: np.ndarray | None = None

    @classmethod
    def of_codes(cls, codes, n_classes, pos_code=None):
        """The target of class codes 0..n_classes-1 as a study stores them (its classes
        are the codes; the positive class defaults to the last)."""
        return cls(codes=np.asarray(codes, dtype=np.int64),
                   classes=np.arange(n_classes, dtype=np.int64),
                   pos_code=n_classes - 1 if pos_code is None else int(pos_code))

    center: float | None = None  # regression: the shift of R²'s sums (see _R2)

    def subset(self, lo, hi):
        """The target of samples ``lo..hi-1`` of a sample block: classes, positive class
        and (for regression) the centre of the whole sample kept, so that a block's sums
        are the very terms of the whole sample's."""
        import dataclasses

        fields = {f: getattr(self, f)[lo:hi] for f in ("codes", "values", "time", "event")
                  if getattr(self, f) is not None}
        if self.values is not None:
            fields["center"] = self.value_center()
        return dataclasses.replace(self, **fields)

    def value_center(self):
        return float(np.mean(self.values)) if self.center is None else self.center

    @property
    def n_samples(self) -> int:
        for a in (self.codes, self.values, self.time):
            if a is not None:
                return a.shape[0]
        raise AttributeError("empty target")


# --------------------------------------------------------------------------- helpers
# Count matrices are (B, N): one row per bootstrap; int32, or uint8 when every count
# fits (the chunked path ships and holds them at a quarter of the memory). The kernels
# accumulate in int64 whatever the count type.
def _as_counts(counts):
    counts = np.asarray(counts)
    if counts.dtype in (np.uint8, np.int32):
        return np.ascontiguousarray(counts)
    return np.ascontiguousarray(counts, dtype=np.int32)


# ------------------------------------------------------------------------ definedness
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
            s = K.indicator_sums(counts, masks, oob, axis=1)
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
        s = K.indicator_sums(counts, self.masks, oob, axis)
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
        return K.cindex_pairs(_as_counts(counts), self.visit, self.vstarts, self.event,
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


class _Prepared(abc.ABC):
    """Base class of a metric bound to (target, predictions); a family implements
    ``scores`` and ``winner_scores``."""

    def __init__(self, metric, target, pred, sample_block=None):
        self.metric = metric
        self.target = target
        self.n_samples = pred.shape[0]
        self.n_configs = pred.shape[1]
        self.n_repeats = pred.shape[2]
        self.rule = type(self).rule_of(metric, target)

    @classmethod
    def rule_of(cls, metric, target):
        return Definedness()

    # API used by the estimators ----------------------------------------------
    @abc.abstractmethod
    def scores(self, counts):
        """Scores ``(B, C, R)`` of every configuration and repeat; NaN where undefined."""

    @abc.abstractmethod
    def winner_scores(self, counts, winners, oob=True):
        """Scores ``(B, R)`` of configuration ``winners[b]`` (out of bag by default)."""

    def defined(self, counts):
        """``(B,)`` bool: the metric is defined for these weights (per repeat all alike)."""
        return self.rule.inbag(counts)

    def defined_oob(self, counts):
        return self.rule.oob(counts)


# ------------------------------------------------------------------ pointwise family
class _Pointwise(_Prepared):
    """Ratios of weighted feature sums. Subclasses set ``self.features`` (a list of
    ``(rows, values (len(rows), C*R))``; ``rows`` None for every sample) and
    ``self.gfeat`` (n_g, N) config-free features, and implement the static
    ``combine(fsums list of (B, C, R), gsums (B, n_g)) -> (B, C, R)``.

    Sums run per sample block (:data:`SAMPLE_BLOCK`) and the block sums are added in
    block order: a task that holds one block of samples computes the very terms
    (:meth:`sums`) whose sum the in-memory kernel forms, so the two agree bit for bit.

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
        return fsums, K.weighted_sums(counts, g, oob)

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
        return K.weighted_sums(_as_counts(counts), self._one_block()[3], oob)

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
                    f.append(K.fold_row_sums(values[a:b], at[a:b], n_rows, self.n_repeats, False))
                else:
                    i, k = np.searchsorted(rows, [a, b])
                    f.append(K.fold_row_sums(values[i:k], at[rows[i:k]], n_rows,
                                             self.n_repeats, False))
            s = sum(K.fold_row_sums(g[r][a:b], at[a:b, r : r + 1], n_rows, 1, True)
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
            s = K.feature_sums_winners(counts, r, vt, inv.astype(np.int64), self.n_repeats, oob,
                                       indicator=self.indicator)
            fsums.append(s[:, None, :])
        gsums = K.weighted_sums(counts, self.gfeat, oob)
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

# -------------------------------------------------------------------- ranking family
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
        starts[i : i + 1] = K.tie_starts(col[o][None, :])
    return order, starts


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
        acc = K.auc_inbag(counts_t, self.order, self.starts, self.pos, self.col_mask)
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
            rows = np.ascontiguousarray(cols[:, which].T)  # (columns, n): sorted as rows
            neg = np.sort(rows[:, ~pos[s]], axis=1)
            hit = np.sort(rows[:, pos[s]], axis=1)
            acc[which, 0] = K.auc_sorted(neg, hit)
        return cls._finish(acc, denom, n_configs, n_repeats, n_sub)[0]

    def winner_scores(self, counts, winners, oob=True):
        counts = _as_counts(counts)
        per = self.n_repeats * self.n_sub
        cols = np.asarray(winners, dtype=np.int64)[:, None] * per + np.arange(per)
        acc = K.auc_winners(counts, self.order, self.starts, self.pos, self.col_mask, cols, oob)
        return self._winner_auc(acc, self.rule.pn(counts, oob))

    def pair_sums_t(self, weights_t):
        """Sums over pairs of samples, of weights held samples first (N, B): ``(num (M,
        B), den (n_masks, B))`` int64 — twice the Mann-Whitney numerator of every column,
        twice positives x negatives of every mask. Exact integers, so the sums over a
        union of sample sets follow from those of the sets and of their unions two by
        two (the chunked path's sample tiles), and :meth:`finish_pairs` gives the very
        bits of :meth:`scores`."""
        return (K.auc_inbag(weights_t, self.order, self.starts, self.pos, self.col_mask),
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
        acc = K.auc_inbag(weights_t, self.order[cols], self.starts[cols], self.pos,
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
            num.append(K.auc_inbag(w, o, st, pos, np.zeros(o.shape[0], dtype=np.int64)))
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
    #: take 128 MiB. Not in :meth:`scores`: slices of few bootstraps make the kernel 3.5-4.5x
    #: slower (measured, 400,000 samples: 2.5-3.1 s against 0.69 s for 64 bootstraps).
    TREE_BYTES = 16 * 2**20

    def _numerators(self, weights_t, tree_bytes=None):
        """:func:`~._kernels.cindex_inbag` of weights held samples first (N, B), in
        slices of bootstraps whose trees take ``tree_bytes`` at most (each bootstrap's
        numerator is its own: the same integers)."""
        step = weights_t.shape[1] if tree_bytes is None else max(
            1, tree_bytes // (8 * (int(self.n_ranks.max(initial=0)) + 1)))
        if step >= weights_t.shape[1]:
            return K.cindex_inbag(weights_t, self.ranks, self.n_ranks, self.visit,
                                  self.vstarts, self.event)
        return np.concatenate([K.cindex_inbag(
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
        num = K.cindex_winners(
            counts, self.ranks, self.n_ranks, self.visit, self.vstarts, self.event, cols, oob
        )
        return self.finish_winner_pairs(num, self._pairs(counts, oob)[None, :], R)

    def pair_sums_t(self, weights_t):
        """``(num (M, B), den (1, B))`` int64: twice the concordance numerator of every
        column and twice the comparable pairs, of weights held samples first (N, B) —
        sums over pairs of samples, as :meth:`_RocAuc.pair_sums_t`."""
        num = self._numerators(weights_t, self.TREE_BYTES)
        den = K.cindex_pairs(np.ascontiguousarray(weights_t.T), self.visit, self.vstarts,
                             self.event, False)
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


# ------------------------------------------------------------------------ registry
_DEFS = [
    ("roc_auc", "ranking", "scores", "binary", _RocAuc,
     "Area under the ROC curve (binary; ties count 1/2)."),
    ("roc_auc_ovr", "ranking", "proba", "multiclass", _RocAuc,
     "Macro-averaged one-vs-rest ROC AUC on class probabilities."),
    ("roc_auc_ovo", "ranking", "proba", "multiclass", _RocAucOvo,
     "Macro-averaged one-vs-one ROC AUC (Hand & Till) on class probabilities: the 2024 "
     "paper's code's multiclass AUC."),
    ("concordance_index", "ranking", "risk", "survival", _CIndex,
     "Harrell's concordance index; y is (time, event), predictions are risk scores."),
    ("accuracy", "pointwise", "labels", "classification", _Accuracy,
     "Fraction of correct class labels."),
    ("balanced_accuracy", "pointwise", "labels", "classification", _BalancedAccuracy,
     "Mean per-class recall over the classes present in y."),
    ("f1", "pointwise", "labels", "binary", _F1, "F1 score of the positive class."),
    ("neg_log_loss", "pointwise", "proba", "classification", _NegLogLoss,
     "Negated cross-entropy of the class probabilities."),
    ("neg_mean_squared_error", "pointwise", "values", "regression", _NegMSE,
     "Negated mean squared error."),
    ("neg_mean_absolute_error", "pointwise", "values", "regression", _NegMAE,
     "Negated mean absolute error."),
    ("r2", "pointwise", "values", "regression", _R2, "Coefficient of determination."),
    ("r2_corr", "pointwise", "values", "regression", _R2Corr,
     "Squared Pearson correlation of y and the prediction (the 2024 paper's code's R²)."),
]

METRICS: dict[str, Metric] = {
    name: Metric(name=name, kind=kind, prediction=pred, task=task, description=desc, _impl=impl)
    for name, kind, pred, task, impl, desc in _DEFS
}


def metric_names() -> list[str]:
    """Names of the registered metrics, sorted."""
    return sorted(METRICS)


def get_metric(metric, *, caller="this function") -> Metric:
    """Look up a metric by name (or pass a :class:`Metric` through)."""
    if isinstance(metric, Metric):
        return metric
    if isinstance(metric, str) and metric in METRICS:
        return METRICS[metric]
    raise InvalidParameterError.of("metric", caller, f"one of {metric_names()}", metric)
