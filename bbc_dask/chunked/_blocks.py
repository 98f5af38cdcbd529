"""Per-task pieces of the chunked bootstraps (pure NumPy; no Dask).

Two ways to split a cube, both equal to the in-memory result bit for bit:

- **sample blocks** (pointwise metrics): a task holds one sample block of a group of
  configurations, draws that block's bootstrap counts alone (:func:`block_counts`) and
  returns the feature sums of the block (:func:`block_sums`); the sums of the blocks are
  added in block order (:func:`add_sums`), as the in-memory kernel adds them, and turned
  into scores, winners and out-of-bag scores (:func:`finish_sums`). A task's memory does
  not depend on the number of samples.
- **configuration blocks** (ranking metrics, which sort whole columns; and the cube of a
  study, stored by fold): a task prepares every sample of a block of configurations once
  (:func:`prepare_block`) and scores it against the counts of a group of seed blocks,
  drawn once per group on the cluster (:func:`plan_group`), not per chunk
  (:func:`score_block`).

For each bootstrap the winner of a group of configurations, its in-bag score and its
out-of-bag score are exact per-column quantities, so merging group winners by (higher
score, then lower configuration index) gives the whole matrix's winner.
"""
from __future__ import annotations

import numpy as np

from .. import _validation as V
from ..metrics import get_metric
from ..stats._bbc import _full_scores
from ..stats._bbc import prepare_inputs as _prepare
from ..stats._bootstrap import block_counts, plan_counts, plan_seed_block
from ..stats._dropping import DroppingScorer
from ..stats._winner import select

#: Bootstraps multiplied at once in a sample-block task (one product of this many rows):
#: their float32 weights take BATCH x 32,768 x 4 bytes (8 MiB), large enough for BLAS.
BATCH = 64

__all__ = ["BATCH", "ZarrBlock", "add_sums", "block_sums", "chunk_fold_matrix", "chunk_pooled",
           "finish_sums", "merge_winners", "plan_group", "prepare_block", "score_block"]


class ZarrBlock:
    """A region of a Zarr array, read on the worker with zarr alone.

    Reading here rather than through a Dask array graph keeps ``dask.array`` (which
    imports xarray and pandas, ~60 MiB) out of the workers, and reads each chunk once.
    ``order`` permutes the stored axes to (sample, config, repeat[, class]);
    ``expand`` inserts the repeat axis of a cube stored without one.
    """

    __slots__ = ("array", "config_axis", "configs", "expand", "key", "order")

    def __init__(self, array, order, config_axis, configs, expand, key=None):
        # configs: a slice, or the stored configuration indices (sorted) to read; key:
        # slices of the other axes (a view of the stored array, or a block of samples)
        self.array, self.order, self.config_axis = array, tuple(order), int(config_axis)
        self.configs = configs if isinstance(configs, slice) else np.asarray(configs, dtype=np.int64)
        self.expand = bool(expand)
        self.key = tuple(slice(None) for _ in self.order) if key is None else tuple(key)

    def __getstate__(self):
        return tuple(getattr(self, k) for k in self.__slots__)

    def __setstate__(self, state):
        for k, v in zip(self.__slots__, state):
            setattr(self, k, v)

    def _get(self, key):
        if isinstance(self.configs, slice):
            return np.asarray(self.array[tuple(key)])
        return np.asarray(self.array.oindex[tuple(key)])

    def read(self):
        key = list(self.key)
        key[self.config_axis] = self.configs
        s_ax = self.order[0]
        rows = range(*key[s_ax].indices(self.array.shape[s_ax]))
        step = int(self.array.chunks[s_ax])
        if rows.step != 1 or len(rows) <= step:
            raw = self._get(key)
        else:
            # one stored chunk along samples at a time: Zarr would decode every chunk of
            # the block at once (a block of a few configurations of a tall cube reads
            # whole chunks of many: their decoded sum, not the block, would be the peak)
            cuts = [rows.start] + list(range((rows.start // step + 1) * step, rows.stop, step))
            raw = None
            for a, b in zip(cuts, cuts[1:] + [rows.stop]):
                key[s_ax] = slice(a, b)
                piece = self._get(key)
                if raw is None:
                    shape = list(piece.shape)
                    shape[s_ax] = len(rows)
                    raw = np.empty(shape, dtype=piece.dtype)
                at = [slice(None)] * raw.ndim
                at[s_ax] = slice(a - rows.start, b - rows.start)
                raw[tuple(at)] = piece
        arr = np.transpose(raw, self.order)
        return arr[:, :, None] if self.expand else arr


def _load(pred):
    """A block's values: read now if it is a reader (a ZarrBlock or the cube's CubeBlock)."""
    return pred.read() if hasattr(pred, "read") else pred


def prepare_inputs(pred, y, metric, pos_label, caller, class_coord=None):
    """``(metric, target, encoded)`` of one chunk (read from Zarr if it is a ZarrBlock)."""
    return _prepare(_load(pred), y, metric, pos_label, caller, class_coord)


def _encode(part, target, m, class_coord, caller):
    """A part's predictions encoded against the whole sample's ``target`` (its classes),
    not against the labels of the part."""
    arr = np.asarray(_load(part))
    return V.encode_predictions(arr, class_coord, m, target, caller)


def _root(seed):
    entropy, spawn_key = seed
    return np.random.SeedSequence(int(entropy), spawn_key=tuple(spawn_key))


# --------------------------------------------------------------------------- draws
def plan_group(seed, stream, ks, n, sample_block, rule, keep):
    """Plans of seed blocks ``ks`` — which attempt each bootstrap keeps, decided by
    ``rule`` (a Definedness, or a callable on counts) on the whole bootstrap — and, with
    ``keep``, their counts (64, n), uint8 when they fit. Returns a list of ``(plan,
    counts or None)``."""
    root = _root(seed)
    return [plan_seed_block(root, stream, k, n, rule, sample_block, small=True, keep=keep)
            for k in ks]


def n_redrawn(plans, n_boot):
    """Redraws among bootstraps ``0..n_boot-1`` of ``plans`` (lists of plan_group)."""
    att = np.concatenate([p.attempts for group in plans for p, _ in group])
    return int(att[:n_boot].sum())


# ------------------------------------------------------------- configuration blocks
def prepare_block(part, target, metric, class_coord, sample_block, caller="bbc"):
    """``(prepared metric, full scores (c,))`` of a block of configurations holding
    every sample (read once, encoded once, sorted once)."""
    m = get_metric(metric)
    enc = _encode(part, target, m, class_coord, caller)
    prep = m.prepare(target, enc, sample_block)
    del enc  # the prepared features hold what the metric needs
    return prep, _full_scores(prep, prep.n_samples)


def score_block(prepared, groups, offset, redraw=None):
    """Each bootstrap's winner in a configuration block: ``(best, config, oob)`` over the
    seed blocks of ``groups`` (lists of ``(plan, counts)``), in order; ``config`` global
    (``offset`` added). Counts that were not kept (None) are drawn here, one seed block
    at a time, from ``redraw = (seed, stream, rule)``."""
    prep = prepared[0]
    best, cfg, oob = [], [], []
    for group in groups:
        for plan, counts in group:
            if counts is None:
                seed, stream, rule = redraw
                counts = plan_counts(_root(seed), stream, plan, getattr(rule, "both", rule))
            s = prep.scores(counts).mean(axis=2)
            w = select(s)
            best.append(s[np.arange(s.shape[0]), w])
            cfg.append(w + offset)
            oob.append(prep.winner_scores(counts, w, oob=True).mean(axis=1))
            del counts
    return np.concatenate(best), np.concatenate(cfg), np.concatenate(oob)


def merge_winners(a, b):
    """Per bootstrap, the better of two chunk winners: higher in-bag score, then the lower
    configuration index (the whole-matrix tie rule)."""
    ba, ca, oa = a
    bb, cb, ob = b
    a_first = ca <= cb  # each pair in configuration order: select's tie rule applies as is
    pairs = np.stack([np.where(a_first, ba, bb), np.where(a_first, bb, ba)], axis=1)
    w = select(pairs)  # -1 (an undefined score) keeps a, as a comparison with NaN does
    take_b = np.where(a_first, w == 1, w == 0)
    return np.where(take_b, bb, ba), np.where(take_b, cb, ca), np.where(take_b, ob, oa)


def prepare_dropping(part, y, available, metric, pos_label, class_coord=None):
    """The dropping test's scorer of a block of configurations (every sample)."""
    return DroppingScorer(_load(part), y, available, metric, pos_label, class_coord)


def score_dropping(scorer, groups):
    """``(full (c,), scores (B, c))`` of a configuration block over the seed blocks of
    ``groups``."""
    return scorer.full, np.concatenate([scorer.scores(c) for g in groups for _, c in g])


# -------------------------------------------------------------------- sample blocks
def block_sums(parts, target, metric, class_coord, j, size, seed, stream, plans, caller="bbc"):
    """The feature sums of sample block ``j`` (``size`` samples, whose target is
    ``target``: :meth:`~bbc_dask.metrics.Target.subset`) of a group of configurations
    (``parts``: its configuration chunks, in order), for every bootstrap of ``plans`` (in
    bag and out of bag) and for unit weights.

    Returns ``{"in", "oob", "full": (fsums list of (B, c, R), gsums (B, n_g))}``. The
    block's counts are drawn here from the block's own generators; every part is read
    and encoded once and held (a group is sized for it), and the weights of
    :data:`BATCH` bootstraps at a time multiply all of them."""
    m = get_metric(metric)
    root = _root(seed)
    preps = [m.prepare(target, _encode(part, target, m, class_coord, caller), size)
             for part in parts]
    first = preps[0]
    batches = [plans[i : i + BATCH // 64] for i in range(0, len(plans), BATCH // 64)]
    batches = [_small(np.concatenate([block_counts(root, stream, p, j) for p in b]))
               for b in batches]
    batches.append(np.ones((1, size), dtype=np.int32))
    out = {"in": ([], []), "oob": ([], []), "full": ([], [])}
    for i, counts in enumerate(batches):
        for name, oob in ((("full", False),) if i == len(batches) - 1 else
                          (("in", False), ("oob", True))):
            w = first.weights(counts, oob)
            fs = [p.feature_sums(w) for p in preps]
            out[name][0].append([np.concatenate(f, axis=1) for f in zip(*fs)])
            out[name][1].append(first.config_free_sums(counts, oob))
            del w
    return {name: ([np.concatenate(f, axis=0) for f in zip(*fs)], np.concatenate(gs))
            for name, (fs, gs) in out.items()}


def _small(counts):
    """Counts as uint8 when they fit (a quarter of int32: held while the batch is used)."""
    return counts.astype(np.uint8) if counts.size and counts.max() <= 255 else counts


def add_sums(a, b):
    """``a + b`` of two :func:`block_sums` results (blocks are added in block order)."""
    return {name: ([x + y for x, y in zip(a[name][0], b[name][0])], a[name][1] + b[name][1])
            for name in a}


def finish_sums(total, metric, offset, n_boot):
    """Winners ``(best, config, oob)`` and full scores (c,) of a group of configurations
    from its summed features; ``config`` global."""
    m = get_metric(metric)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = m.combine(*total["in"]).mean(axis=2)[:n_boot]
        s_oob = m.combine(*total["oob"])[:n_boot]
        full = m.combine(*total["full"])[0].mean(axis=1)
    w = select(s)
    rows = np.arange(s.shape[0])
    return (s[rows, w], w + offset, s_oob[rows, w].mean(axis=1)), full


# -------------------------------------------------------------------------- others
def chunk_fold_matrix(pred, y, folds, metric, pos_label, class_coord=None):
    """The BBC-F fold × configuration score matrix of one chunk, (R*K, c)."""
    from ..stats._bbc import _fold_matrix

    m, target, enc = prepare_inputs(pred, y, metric, pos_label, "bbc_f", class_coord)
    f = V.as_folds(folds, enc.shape[0], enc.shape[2], "bbc_f")
    return _fold_matrix(m, target, enc, f, "bbc_f")[0]


def chunk_pooled(pred, y, metric, pos_label, class_coord=None):
    """Pooled scores (c, R) of a chunk: the metric on every sample's out-of-sample
    prediction, per repeat — the numbers :func:`naive_cvt` averages over repeats to
    select (the same computation, so the same bits)."""
    from ..metrics import get_metric

    m = get_metric(metric)
    if m.prediction == "labels":
        m, target, enc = prepare_inputs(pred, y, metric, pos_label, "run_study", class_coord)
    else:  # the engine's own scores or probabilities: no user-input heuristics
        enc = np.asarray(_load(pred), dtype=np.float64)
        if m.is_classification and np.asarray(y).dtype.kind in "iu":
            # the stored class codes 0..K-1 with the study's positive code: already a
            # target (no np.unique over every sample of every block)
            from ..metrics import Target

            n_cls = enc.shape[3] if enc.ndim == 4 else max(2, int(np.max(y)) + 1)
            target = Target.of_codes(y, n_cls, pos_label)
        else:
            target = V.as_target(y, m, "run_study", pos_label=pos_label)
    return m.scores_once(target, enc)
