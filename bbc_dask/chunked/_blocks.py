"""Per-chunk pieces of BBC over a cube split along ``config`` (pure NumPy; no Dask).

A chunk holds every sample of a block of configurations. For each bootstrap, the chunk's
best in-bag score, its configuration and that configuration's out-of-bag score are exact
per-column quantities, so merging chunk winners by (higher score, then lower config
index) gives the same winner as the whole-matrix argmax: the result does not depend on
the chunking.
"""
from __future__ import annotations

import numpy as np

from .. import _validation as V
from ..stats._bbc import _full_scores
from ..stats._bbc import prepare_inputs as _prepare
from ..stats._bootstrap import SEED_BLOCK, CountBlocks
from ..stats._winner import select

__all__ = ["ZarrBlock", "chunk_bbc", "chunk_dropping", "chunk_fold_matrix", "chunk_pooled",
           "merge_winners"]


class ZarrBlock:
    """A configuration range of a Zarr array, read on the worker with zarr alone.

    Reading here rather than through a Dask array graph keeps ``dask.array`` (which
    imports xarray and pandas, ~60 MiB) out of the workers, and reads each chunk once.
    ``order`` permutes the stored axes to (sample, config, repeat[, class]);
    ``expand`` inserts the repeat axis of a cube stored without one.
    """

    __slots__ = ("array", "config_axis", "configs", "expand", "key", "order")

    def __init__(self, array, order, config_axis, configs, expand, key=None):
        # configs: a slice, or the stored configuration indices (sorted) to read; key:
        # slices of the other axes (a view of the stored array)
        self.array, self.order, self.config_axis = array, tuple(order), int(config_axis)
        self.configs = configs if isinstance(configs, slice) else np.asarray(configs, dtype=np.int64)
        self.expand = bool(expand)
        self.key = tuple(slice(None) for _ in self.order) if key is None else tuple(key)

    def __getstate__(self):
        return tuple(getattr(self, k) for k in self.__slots__)

    def __setstate__(self, state):
        for k, v in zip(self.__slots__, state):
            setattr(self, k, v)

    def read(self):
        key = list(self.key)
        key[self.config_axis] = self.configs
        if isinstance(self.configs, slice):
            raw = self.array[tuple(key)]
        else:
            raw = self.array.oindex[tuple(key)]
        arr = np.transpose(np.asarray(raw), self.order)
        return arr[:, :, None] if self.expand else arr


def _load(pred):
    """A block's values: read now if it is a reader (a ZarrBlock or the cube's CubeBlock)."""
    return pred.read() if hasattr(pred, "read") else pred


def prepare_inputs(pred, y, metric, pos_label, caller, class_coord=None):
    """``(metric, target, encoded)`` of one chunk (read from Zarr if it is a ZarrBlock)."""
    return _prepare(_load(pred), y, metric, pos_label, caller, class_coord)


def _root(seed):
    entropy, spawn_key = seed
    return np.random.SeedSequence(int(entropy), spawn_key=tuple(spawn_key))


def chunk_bbc(pred, y, metric, pos_label, offset, seed, n_boot, class_coord=None, stream="bbc",
              block=SEED_BLOCK):
    """Winners of every bootstrap within one configuration chunk, and the chunk's scores
    on all rows (read once, prepared once).

    Returns ``((best (B,), config (B,), oob (B,), n_redrawn), full (c,))``; ``config`` is
    global (``offset`` added). Bootstraps are drawn here from ``seed`` (entropy,
    spawn_key) — the same draws as the in-memory path, never shipped from the client.
    """
    m, target, enc = prepare_inputs(pred, y, metric, pos_label, "bbc", class_coord)
    del pred
    prep = m.prepare(target, enc)
    n = enc.shape[0]
    del enc  # the prepared features hold what the metric needs; free the float64 copy
    full = _full_scores(prep, n)

    def defined(c):
        return prep.defined(c) & prep.defined_oob(c)

    best = np.full(n_boot, -np.inf)
    cfg = np.full(n_boot, -1, dtype=np.int64)
    oob = np.full(n_boot, np.nan)
    blocks = CountBlocks(_root(seed), stream, None, n_boot, n, block, defined)
    for start, stop, counts in blocks:
        s = prep.scores(counts).mean(axis=2)
        w = select(s)
        rows = np.arange(stop - start)
        best[start:stop] = s[rows, w]
        cfg[start:stop] = w + offset
        oob[start:stop] = prep.winner_scores(counts, w, oob=True).mean(axis=1)
        del counts, s
    return (best, cfg, oob, blocks.n_redrawn), full


def merge_winners(a, b):
    """Per bootstrap, the better of two chunk winners: higher in-bag score, then the lower
    configuration index (the whole-matrix tie rule)."""
    ba, ca, oa, ra = a
    bb, cb, ob, rb = b
    a_first = ca <= cb  # each pair in configuration order: select's tie rule applies as is
    pairs = np.stack([np.where(a_first, ba, bb), np.where(a_first, bb, ba)], axis=1)
    w = select(pairs)  # -1 (an undefined score) keeps a, as a comparison with NaN does
    take_b = np.where(a_first, w == 1, w == 0)
    return (np.where(take_b, bb, ba), np.where(take_b, cb, ca), np.where(take_b, ob, oa),
            max(ra, rb))


def chunk_fold_matrix(pred, y, folds, metric, pos_label, class_coord=None):
    """The BBC-F fold × configuration score matrix of one chunk, (R*K, c)."""
    from ..stats._bbc import _fold_matrix

    m, target, enc = prepare_inputs(pred, y, metric, pos_label, "bbc_f", class_coord)
    f = V.as_folds(folds, enc.shape[0], enc.shape[2], "bbc_f")
    return _fold_matrix(m, target, enc, f, "bbc_f")[0]


def chunk_dropping(pred, y, available, metric, pos_label, seed, n_boot, class_coord=None):
    """The dropping-test scores of one chunk: ``(full (c,), per bootstrap (B, c), n_redrawn)``."""
    from ..stats._dropping import dropping_scores

    return dropping_scores(_load(pred), y, available, metric=metric, pos_label=pos_label,
                           root=_root(seed), n_boot=n_boot, class_coord=class_coord)


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
