"""BBC-F of a lazy cube: its fold × configuration matrix built on the cluster (small:
R·K rows), then bootstrapped on the client as in memory."""
from __future__ import annotations

import numpy as np

from .. import _tuning as tuning
from .. import _validation, metrics
from ..metrics import get_metric
from ..stats import bbc_f_of_matrix, check_fold_matrix, fold_centers, fold_rows
from . import _blocks, _sample_sums, _tile_sums
from ._graph import _carrying, _chain
from ._source import _by_tiles, _n_repeats, _sources, _target, _TileLayout
from .._doors import carried

__all__ = ["fold_matrix_over_blocks", "lazy_bbc_f"]


def lazy_bbc_f(predictions, y, folds, *, metric, n_bootstraps, confidence_level, random_state,
               pos_label, block_size=None):
    """BBC-F of a lazy cube: its fold × configuration matrix built on the cluster
    (:func:`_lazy_fold_matrix`; small: R·K rows), then bootstrapped on the client as in
    memory."""
    m = get_metric(metric)
    src = _sources(predictions, m)
    y, target = _target(y, src.n, m, pos_label)
    f = _validation.as_folds(folds, src.n, _n_repeats(src))
    F, rows = _lazy_fold_matrix(src, y, target, f, m, pos_label)
    return bbc_f_of_matrix(F, rows, m.name, n_bootstraps, confidence_level, random_state, None,
                           block_size)


def _lazy_fold_matrix(src, y, target, folds, m, pos_label):
    """``(F (R·K, C), rows)`` of a lazy cube, on the cluster: a pointwise metric's summed
    over (sample block, configuration group) tasks (:func:`_fold_matrix_by_samples`), a
    ranking metric's beyond ``bbc_dask.rank-samples`` by pairs of sample tiles
    (:func:`_fold_matrix_by_tiles`) — a task's memory does not grow with N — and below,
    per configuration block holding every sample (:func:`fold_matrix_over_blocks`)."""
    if m.pairwise is None or _by_tiles(m, src.n):
        return (_fold_matrix_by_samples if m.pairwise is None else _fold_matrix_by_tiles)(
            src, target, folds, m)
    blocks, _ = src.config_parts()
    return fold_matrix_over_blocks(blocks, y, folds, m.name, pos_label, src.coord)


def _fold_matrix_by_samples(src, target, folds, m):
    """The fold × configuration matrix (R·K, C) of a pointwise metric: per configuration
    group, each sample block's sums per fold row (:meth:`~bbc_dask.metrics._Pointwise.fold_sums`)
    added in block order along a chain of tasks — the very terms and additions of
    :func:`bbc_dask.fold_score_matrix`, so the same bits. A task holds one sample block of
    its group (``bbc_dask.hold-bytes``) and R·K sums per configuration."""
    import dask
    from dask import delayed

    sb = metrics.SAMPLE_BLOCK
    edges = metrics.sample_blocks(src.n, sb)
    at, rows = fold_rows(folds)
    per = _n_repeats(src)
    # out: a few feature sums per fold row and configuration (one per class at most)
    n_feat = 1 if target.codes is None else max(2, len(target.classes))
    runs, _ = src.sample_runs(edges, len(rows) * 8 * n_feat, sb * per * m.feature_bytes)
    # each block's fold rows travel with its task in every group (as its target does):
    # the narrowest integers that hold them
    at = at.astype(np.int16 if len(rows) < 2**15 else np.int32)
    blocks_in = [(target.subset(lo, hi), at[lo:hi]) for lo, hi in edges]
    centers = fold_centers(target, at, len(rows))
    # a lazy cube's runs are one sample block each (a study's store, read in runs of
    # blocks, keeps its fold scores in the ledger: Study.bbc_f reads no predictions)
    finished = [delayed(_sample_sums.finish_fold_sums, pure=True)(
        _chain(run, _sample_sums.fold_block_sums, None, blocks_in, (m.name, src.coord),
               len(rows), centers), m.name) for run in runs]
    with _carrying(blocks_in):
        parts = dask.compute(finished)[0]
    return check_fold_matrix(np.concatenate(parts, axis=1), rows, m.name), rows


def _fold_matrix_by_tiles(src, target, folds, m):
    """The fold × configuration matrix (R·K, C) of a ranking metric by pairs of sample tiles
    of ``bbc_dask.rank-fold-tile`` (see :func:`~._lazy_bbc._bbc_by_tiles`): each fold row's
    statistics are the pair sums of its 0/1 weights, exact integers, so the matrix has the
    in-memory bits."""
    import dask
    from dask import delayed

    at, rows = fold_rows(folds)
    lay = _TileLayout(src, target, m, tuning.RANK_FOLD_TILE)
    shared = lay.shared([(target.subset(lo, hi), at[lo:hi]) for lo, hi in lay.span], None)
    row_repeat = [r for r, _ in rows]
    finished = [delayed(_tile_sums.finish_tile_folds, pure=True)(
        lay.summed(_tile_sums.tile_fold_sums, g, shared, m.name, src.coord, len(rows)),
        m.name, g.size, lay.n_rep, lay.n_sub, row_repeat) for g in lay.groups()]
    with lay.carrying():
        parts = dask.compute(finished)[0]
    return check_fold_matrix(np.concatenate(parts, axis=1), rows, m.name), rows


def fold_matrix_over_blocks(blocks, y, folds, metric, pos_label, class_coord=None):
    """``(F, rows)``: the fold × configuration matrix built per configuration block
    (holding every sample) on the cluster; ``folds`` validated (N, R)."""
    import dask
    from dask import delayed

    # y and the folds (N x R) in the graph once each, not copied into every task
    y_d, folds_d = delayed(y, pure=True), delayed(np.asarray(folds), pure=True)
    parts = dask.compute([delayed(carried(_blocks.chunk_fold_matrix), pure=True)(b, y_d, folds_d, metric, pos_label,
                                                                   class_coord, metrics.SAMPLE_BLOCK)
                          for b in blocks])[0]
    return np.concatenate(parts, axis=1), fold_rows(folds)[1]
