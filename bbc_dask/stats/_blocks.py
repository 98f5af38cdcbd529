"""Per-chunk pieces of BBC over a cube split along ``config`` (pure NumPy; no Dask).

A chunk holds every sample of a block of configurations. For each bootstrap, the chunk's
best in-bag score, its configuration and that configuration's out-of-bag score are exact
per-column quantities, so merging chunk winners by (higher score, then lower config
index) gives the same winner as the whole-matrix argmax: the result does not depend on
the chunking.
"""
from __future__ import annotations

import numpy as np

from ._bbc import _select, prepare_inputs
from ._bootstrap import SEED_BLOCK, CountBlocks

__all__ = ["chunk_bbc", "merge_winners", "chunk_fold_matrix", "chunk_full_scores"]


def _root(seed):
    entropy, spawn_key = seed
    return np.random.SeedSequence(int(entropy), spawn_key=tuple(spawn_key))


def chunk_full_scores(pred, y, metric, pos_label):
    """Scores of the chunk's configurations on all rows (mean over repeats), (c,)."""
    m, target, enc = prepare_inputs(pred, y, metric, pos_label, "bbc")
    prep = m.prepare(target, enc)
    return prep.scores(np.ones((1, enc.shape[0]), dtype=np.int32))[0].mean(axis=1)


def chunk_bbc(pred, y, metric, pos_label, offset, seed, n_boot, stream="bbc", block=SEED_BLOCK):
    """Winners of every bootstrap within one configuration chunk.

    Returns ``(best (B,), config (B,), oob (B,), n_redrawn)``; ``config`` is global
    (``offset`` added). Bootstraps are drawn here from ``seed`` (entropy, spawn_key) —
    the same draws as the in-memory path, never shipped from the client.
    """
    m, target, enc = prepare_inputs(pred, y, metric, pos_label, "bbc")
    prep = m.prepare(target, enc)
    n = enc.shape[0]

    def defined(c):
        return prep.defined(c) & prep.defined_oob(c)

    best = np.full(n_boot, -np.inf)
    cfg = np.full(n_boot, -1, dtype=np.int64)
    oob = np.full(n_boot, np.nan)
    blocks = CountBlocks(_root(seed), stream, None, n_boot, n, block, defined)
    for start, stop, counts in blocks:
        s = prep.scores(counts).mean(axis=2)
        w = _select(s)
        rows = np.arange(stop - start)
        best[start:stop] = s[rows, w]
        cfg[start:stop] = w + offset
        oob[start:stop] = prep.winner_scores(counts, w, oob=True).mean(axis=1)
    return best, cfg, oob, blocks.n_redrawn


def merge_winners(a, b):
    """Per bootstrap, the better of two chunk winners: higher in-bag score, then the lower
    configuration index (the whole-matrix tie rule)."""
    ba, ca, oa, ra = a
    bb, cb, ob, rb = b
    take_b = (bb > ba) | ((bb == ba) & (cb < ca))
    return (np.where(take_b, bb, ba), np.where(take_b, cb, ca), np.where(take_b, ob, oa),
            max(ra, rb))


def chunk_fold_matrix(pred, y, folds, metric, pos_label):
    """The BBC-F fold × configuration score matrix of one chunk, (R*K, c)."""
    from ._bbc import _fold_matrix
    from .. import _validation as V

    m, target, enc = prepare_inputs(pred, y, metric, pos_label, "bbc_f")
    f = V.as_folds(folds, enc.shape[0], enc.shape[2], "bbc_f")
    return _fold_matrix(m, target, enc, f, "bbc_f")[0]
