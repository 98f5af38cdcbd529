"""BBC of a lazy cube on the cluster: along sample blocks (pointwise metrics), by pairs
of sample tiles (ranking metrics beyond ``bbc_dask.rank-samples``), or over
configuration blocks holding every sample."""
from __future__ import annotations

import numpy as np

from .. import _validation, metrics
from ..exceptions import InvalidParameterError
from ..metrics import get_metric
from ..stats import SEED_BLOCK, check_selection, select, summarise, with_fold_mean_winner
from . import _blocks, _sample_sums, _task_base, _tile_sums
from ._graph import (_attempts, _bbc_args, _carrying, _chain, _keeps_counts, _plans,
                     _shared_counts, _tree)
from ._lazy_bbc_f import _lazy_fold_matrix
from ._source import _by_samples, _by_tiles, _n_repeats, _Source, _sources, _target, _TileLayout
from .._doors import carried

__all__ = ["bbc_over_blocks", "bbc_over_table", "lazy_bbc"]


def lazy_bbc(predictions, y, *, metric, n_bootstraps, confidence_level, random_state, pos_label,
             folds=None, selection="pooled", include_incomplete=False):
    if _validation.check_bool(include_incomplete, "include_incomplete"):
        raise InvalidParameterError.of(
            "include_incomplete", "False with a Dask- or Zarr-backed cube", True,
            note="BBC of an incomplete CV reads the predictions into memory: pass an array.")
    m = get_metric(metric)
    src = _sources(predictions, m)
    y, target = _target(y, src.n, m, pos_label)
    f = check_selection(selection, folds, src.n, _n_repeats(src))
    along = _along_samples(m, src)
    if along is not None:
        res = along(src, target, m, n_bootstraps, confidence_level, random_state)
    else:
        parts, offsets = src.config_parts()
        res = bbc_over_blocks(parts, offsets, y, metric=m.name, n_bootstraps=n_bootstraps,
                              confidence_level=confidence_level, random_state=random_state,
                              pos_label=pos_label, class_coord=src.coord)
    if selection == "pooled":
        return res
    return with_fold_mean_winner(res, _lazy_fold_matrix(src, y, target, f, m, pos_label)[0])


def _along_samples(m, src):
    """The BBC that cuts ``src`` along samples for metric ``m`` (:func:`_bbc_pointwise`
    or :func:`_bbc_by_tiles`, each ``(src, target, m, n_bootstraps, confidence_level,
    random_state)``), or None: along configurations."""
    if _by_samples(m, src):
        return _bbc_pointwise
    return _bbc_by_tiles if _by_tiles(m, src.n) else None


def _bbc_pointwise(src, target, m, n_bootstraps, confidence_level, random_state):
    """:func:`_bbc_by_samples` over the sample blocks of ``src``, its arguments checked."""
    conf, n_boot, seed = _bbc_args(n_bootstraps, confidence_level, random_state)
    sb = metrics.SAMPLE_BLOCK
    return _bbc_by_samples(src, metrics.sample_blocks(src.n, sb), target, m, seed, n_boot, conf, sb)


def _summary(merged, fulls, attempts, n_boot, metric, conf):
    best, cfg, oob = (a[:n_boot] for a in merged)
    full = np.concatenate(fulls)
    sel = select(full)
    return summarise(oob, cfg, selected=sel, naive=full[sel],
                     n_redrawn=int(np.concatenate(attempts)[:n_boot].sum()), method="bbc",
                     metric=metric, confidence_level=conf)


def _bbc_by_samples(src, edges, target, m, seed, n_boot, conf, sb):
    """BBC of a pointwise metric over (sample block, configuration group) tasks, in two
    passes as the in-memory kernel: every configuration in bag, then the winners alone
    out of bag."""
    import dask
    from dask import delayed

    per = _n_repeats(src)
    out = -(-n_boot // SEED_BLOCK) * SEED_BLOCK * per * 8 * 2  # in bag; concatenated
    runs, offsets = src.sample_runs(edges, out, sb * per * m.feature_bytes, n_boot)
    # The plans are first those of no redraw, drawn here; the tasks report whether each
    # draw is defined, and only if one is not are the redraws planned on the cluster (a
    # pass over every count) and the blocks summed again with them.
    subsets = [target.subset(lo, hi) for lo, hi in edges]
    common = (m.name, src.coord)
    keep = _keeps_counts(n_boot, target.n_samples)

    def in_bag(plans, counts):
        results = []
        for g, off in enumerate(offsets):
            acc = _chain(runs[g], _sample_sums.block_sums, _sample_sums.run_sums, subsets, common,
                         seed, "bbc", plans, n_boot, counts=counts)
            results.append(delayed(_sample_sums.finish_sums, pure=True, nout=3)(acc, m.name, int(off)))
        with _carrying(subsets):
            return dask.compute(_tree([r[0] for r in results], _blocks.merge_winners),
                                [r[1] for r in results], results[0][2])

    plans = _task_base.first_plans(seed, "bbc", n_boot, target.n_samples, sb)
    counts = _shared_counts(keep, seed, "bbc", plans, len(edges), n_boot)
    (best, cfg), fulls, parts = in_bag(plans, counts)
    attempts = [np.zeros(1, dtype=np.int64)]
    if not m.definedness(target).decide(parts).all():
        counts = None  # released before the plans' pass over every count, and the redraws
        groups = dask.compute(_plans(seed, "bbc", n_boot, target.n_samples, sb,
                                     delayed(m.definedness(target), pure=True), False))[0]
        plans = [p for g in groups for p, _ in g]
        attempts = [_attempts(g) for g in groups]
        counts = _shared_counts(keep, seed, "bbc", plans, len(edges), n_boot)
        (best, cfg), fulls, _ = in_bag(plans, counts)
    # Out of bag: the distinct winners' columns only, read again block by block (a few
    # chunks), each bootstrap's winner picked from their products.
    winners, pick = np.unique(cfg, return_inverse=True)
    acc = _chain(src.column_runs(edges, winners), _sample_sums.oob_sums, _sample_sums.run_oob_sums,
                 subsets, common, seed, "bbc", plans, pick, counts=counts)
    with _carrying(subsets):
        oob = dask.compute(delayed(_sample_sums.finish_oob, pure=True)(acc, m.name))[0]
    return _summary((best, cfg, oob), fulls, attempts, n_boot, m.name, conf)


def _bbc_by_tiles(src, target, m, n_bootstraps, confidence_level, random_state):
    """BBC of a ranking metric, a task holding two tiles of samples at most.

    A ranking metric's statistics (AUC's Mann-Whitney numerator and positives x
    negatives; the concordance numerator and comparable pairs) are integer sums over
    pairs of samples, so over tiles X_1..X_t, S = sum_{a<b} S(X_a u X_b) - (t - 2)
    sum_a S(X_a): a task per pair of tiles (and per tile) and group of configurations sorts
    its samples' columns, draws its blocks' counts seed block by seed block and returns its
    sums, which add exactly, in any order, to the whole sample's — the in-memory scores bit
    for bit. The price is the pairs: about t times the in-memory kernel's work (t = N /
    ``bbc_dask.rank-tile``), each tile's counts drawn about t times per group. The plans
    (redraws) are decided first, block by block; out of bag, the distinct winners' columns
    are summed the same way."""
    import dask
    from dask import delayed

    conf, n_boot, seed = _bbc_args(n_bootstraps, confidence_level, random_state)
    lay = _TileLayout(src, target, m)
    rule = delayed(m.definedness(target), pure=True)
    groups = dask.compute(_plans(seed, "bbc", n_boot, src.n, metrics.SAMPLE_BLOCK, rule, False))[0]
    plans = [p for g in groups for p, _ in g]
    n_rep, n_sub = lay.n_rep, lay.n_sub
    shared = lay.shared([target.subset(lo, hi) for lo, hi in lay.span], plans)

    def summed(configs, oob):
        return lay.summed(_tile_sums.tile_sums, configs, shared, m.name, src.coord, seed, "bbc",
                          shared[-1], n_boot, oob=oob)

    results = [delayed(_tile_sums.finish_tiles, pure=True, nout=2)(
        summed(g, False), m.name, int(g[0]), g.size, n_rep, n_sub) for g in lay.groups()]
    with lay.carrying():
        (best, cfg), fulls = dask.compute(_tree([r[0] for r in results], _blocks.merge_winners),
                                          [r[1] for r in results])
    # Out of bag: the distinct winners' columns only, in groups, each bootstrap's winner
    # picked from their sums.
    winners, pick = np.unique(cfg, return_inverse=True)
    with lay.carrying():
        totals = dask.compute([summed(g, True) for g in lay.groups(winners)])[0]
    num = np.concatenate([tt["num"] for tt in totals])
    oob = _tile_sums.finish_tile_oob(num, totals[0]["den"], pick, m.name, n_rep, n_sub)
    return _summary((best, cfg, oob), fulls, [_attempts(g) for g in groups], n_boot, m.name,
                    conf)


def bbc_over_table(table, blocks, offsets, y, *, metric, n_bootstraps, confidence_level,
                   random_state, pos_label):
    """BBC of a study's cube: over (sample run, group of stored chunks) tasks reading
    ``table`` (a :class:`~bbc_dask.cube.SampleTable`) for a pointwise metric of more
    than one sample block — a task's memory then does not grow with N x its group —
    else over the configuration ``blocks`` at ``offsets`` (:func:`bbc_over_blocks`)."""
    m = get_metric(metric)
    src = _Source.of_table(table)
    along = _along_samples(m, src)
    if along is not None:
        _, target = _target(y, src.n, m, pos_label)
        return along(src, target, m, n_bootstraps, confidence_level, random_state)
    return bbc_over_blocks(blocks, offsets, y, metric=m.name, n_bootstraps=n_bootstraps,
                           confidence_level=confidence_level, random_state=random_state,
                           pos_label=pos_label)


def bbc_over_blocks(blocks, offsets, y, *, metric, n_bootstraps, confidence_level, random_state,
                    pos_label, class_coord=None):
    """BBC over configuration blocks holding every sample (ZarrBlocks, a study's
    CubeBlocks or Dask delayed arrays) whose configurations start at ``offsets``: one
    task prepares each block once, the counts of each group of seed blocks are drawn
    once, one task scores a block against a group (or, when the counts exceed
    ``bbc_dask.counts-bytes``, one task prepares a block and scores it against every plan,
    drawing its counts); a tree merges the winners."""
    import dask
    from dask import delayed

    m = get_metric(metric)
    conf, n_boot, seed = _bbc_args(n_bootstraps, confidence_level, random_state)
    y = y if isinstance(y, tuple) else np.asarray(y)
    target = _validation.as_target(y, m, pos_label=pos_label)
    sb, n = metrics.SAMPLE_BLOCK, target.n_samples
    rule = delayed(m.definedness(target), pure=True)
    # Counts drawn once and shared while every worker can hold them all (B x N bytes);
    # beyond, each block's task draws them again from the plans, one seed block at a
    # time: more draws, but a worker's memory no longer grows with B x N.
    keep = _keeps_counts(n_boot, n)
    plans = _plans(seed, "bbc", n_boot, n, sb, rule, keep, n_blocks=len(blocks))
    t_d = delayed(target, pure=True)
    if keep:
        preps = [delayed(carried(_blocks.prepare_block), pure=True, nout=2)(b, t_d, m.name, class_coord, sb) for b in blocks]
        per_group = [_tree([delayed(_blocks.score_block, pure=True)(p, [pl], int(o), n_boot)
                            for p, o in zip(preps, offsets)], _blocks.merge_winners) for pl in plans]
    else:  # one scoring per block: prepared and scored in one task
        preps = [delayed(carried(_blocks.prepare_and_score), pure=True, nout=2)(
            b, t_d, m.name, class_coord, sb, plans, int(o), n_boot, (seed, "bbc", rule))
            for b, o in zip(blocks, offsets)]
        per_group = [_tree([p[0] for p in preps], _blocks.merge_winners)]
    merged, fulls, attempts = dask.compute(
        per_group, [p[1] for p in preps], [delayed(_attempts, pure=True)(p) for p in plans])
    merged = tuple(np.concatenate(a) for a in zip(*merged))
    return _summary(merged, fulls, attempts, n_boot, m.name, conf)
