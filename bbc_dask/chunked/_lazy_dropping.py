"""The BBCD dropping test of a study's cube between waves, on the cluster: over
configuration blocks holding every sample, along sample blocks (a pointwise metric given
a sample source) or by pairs of sample tiles (a ranking metric beyond
``bbc_dask.rank-samples``)."""
from __future__ import annotations

import numpy as np

from .. import _validation, metrics
from .._random import as_seed_sequence
from .._signals import deferred_interrupts, wait_done
from ..metrics import get_metric
from ..stats import SEED_BLOCK, available_mask, decide, dropping_rule, frame_of
from . import _blocks, _sample_sums, _task_base, _tile_sums
from ._graph import (_attempts, _carrying, _chain, _gathered, _keeps_counts, _plans, _seed,
                     _seed_groups, _shared_counts)
from ._source import _by_samples, _by_tiles, _n_repeats, _Source, _TileLayout
from .._doors import carried, door

__all__ = ["lazy_dropping_test"]


def lazy_dropping_test(client, blocks, y, available, *, metric, alpha, n_bootstraps, seed,
                       pos_label=None, class_coord=None, key="bbc-dropping", source=None,
                       best=None):
    """The BBCD dropping test on ``client``; equals :func:`bbc_dask.dropping_test` on the
    concatenated blocks bit for bit.

    With ``source`` — the same configurations as a sample source: a study's
    :class:`~bbc_dask.cube.SampleTable`, or a :class:`~._source._Source` — and a
    pointwise metric of more than one sample block, the test goes by sample blocks
    (:func:`_dropping_by_samples`), and with a ranking metric beyond
    ``bbc_dask.rank-samples`` by pairs of sample tiles (:func:`_dropping_by_tiles`):
    a task's memory does not grow with N. Otherwise over the configuration ``blocks``
    (every sample), whose tasks ``key`` names: each block is prepared once; the counts of
    each group of seed blocks are drawn once and shared, or, beyond
    ``bbc_dask.counts-bytes``, drawn again by each block's task. A repeat with no
    sample available at all goes that way too, to fail as the in-memory test does.
    ``best``: θo, if not the best of the pooled scores (see
    :func:`~bbc_dask.stats.decide`)."""
    m = get_metric(metric)
    seed = _seed(as_seed_sequence(seed))
    y = y if isinstance(y, tuple) else np.asarray(y)
    target = _validation.as_target(y, m, pos_label=pos_label)
    available = np.asarray(available, dtype=bool)
    n = target.n_samples
    if source is not None:
        src = source if isinstance(source, _Source) else _Source.of_table(source)
        avail = available_mask(available, n, _n_repeats(src))
        if _by_samples(m, src) and avail.any(axis=0).all():
            return _dropping_by_samples(client, src, target, avail, m, alpha, n_bootstraps, seed,
                                        best)
        if _by_tiles(m, n) and avail.any(axis=0).all():
            return _dropping_by_tiles(client, src, target, avail, m, alpha, n_bootstraps, seed,
                                      best)
    rule = dropping_rule(m, target, available, available.shape[1] if available.ndim == 2 else 1)
    # Submitted as tasks holding their values, not scattered: the scheduler computes them
    # again if the worker holding them is lost (restarted at its memory limit, say),
    # where scattered data would be gone with it and every task needing it cancelled.
    with _carrying([y, available, rule.mask, getattr(rule.rule, "y", None)]):
        rule_f, y_f, avail_f = (client.submit(_blocks.held, v, pure=False, key=f"{key}-{name}")
                                for name, v in (("rule", rule), ("y", y), ("available", available)))
    # As in bbc_over_blocks: the counts are shared while they fit in bbc_dask.counts-bytes
    # (B x N bytes), else each block's task draws them again from the plans.
    keep = _keeps_counts(n_bootstraps, n)
    frame = frame_of(available)  # the draws are of the samples available in some repeat
    plans = [client.submit(_task_base.plan_group, seed, "dropping", ks, n, metrics.SAMPLE_BLOCK, rule_f, keep,
                           frame, pure=False, retries=3, key=f"{key}-plan-{q}")
             for q, ks in enumerate(_seed_groups(n_bootstraps, n, keep, len(blocks), client))]
    scorers = [client.submit(carried(_blocks.prepare_dropping), b, y_f, avail_f, m.name, pos_label, class_coord,
                             pure=False, retries=3, key=f"{key}-prep-{i}")
               for i, b in enumerate(blocks)]
    if keep:
        scores = [[client.submit(_blocks.score_dropping, sc, [pl], pure=False, retries=3,
                                 key=f"{key}-score-{i}-{q}") for q, pl in enumerate(plans)]
                  for i, sc in enumerate(scorers)]
    else:
        scores = [[client.submit(_blocks.score_dropping, sc, plans, (seed, "dropping", rule_f),
                                 pure=False, retries=3, key=f"{key}-score-{i}")]
                  for i, sc in enumerate(scorers)]
    attempts = [client.submit(_attempts, pl, pure=False, key=f"{key}-attempts-{q}")
                for q, pl in enumerate(plans)]
    flat = [f for row in scores for f in row] + attempts
    wait_done(flat)
    with deferred_interrupts():  # a Ctrl-C inside a gather can leave the client unusable
        got = client.gather(scores)
        att = client.gather(attempts)
    full = np.concatenate([row[0][0] for row in got])
    S = np.concatenate([np.concatenate([s for _, s in row], axis=0) for row in got], axis=1)
    return decide(full, S[:n_bootstraps], alpha, int(np.concatenate(att)[:n_bootstraps].sum()),
                  best)


@door("dropping_test")
def _dropping_by_samples(client, src, target, available, m, alpha, n_boot, seed, best=None):
    """The dropping test of a pointwise metric over (sample block, configuration group)
    tasks (or runs of blocks of a study's cube, as :func:`~._lazy_bbc._bbc_by_samples` reads them):
    each returns its block's in-bag feature sums per repeat, masked by the samples
    available there; a chain adds them in block order, as :class:`~bbc_dask.stats.DroppingScorer` does,
    and each group's task turns them into its configurations' scores (B, c). The draws
    and their redraws follow :func:`~._lazy_bbc._bbc_by_samples` (stream ``"dropping"``, the
    :class:`~bbc_dask.stats._dropping.MaskedRule` streamed block by block)."""
    from dask import delayed
    sb = metrics.SAMPLE_BLOCK
    edges = metrics.sample_blocks(src.n, sb)
    avail = available  # (N, R), checked
    n_rep = avail.shape[1]
    out = -(-n_boot // SEED_BLOCK) * SEED_BLOCK * n_rep * 8 * 2  # per repeat; concatenated
    runs, offsets = src.sample_runs(edges, out, sb * n_rep * m.feature_bytes, n_boot)
    blocks_in = [(target.subset(lo, hi), avail[lo:hi]) for lo, hi in edges]
    common = (m.name, src.coord)
    keep = _keeps_counts(n_boot, target.n_samples)

    def scored(plans, counts):
        with _carrying(blocks_in):
            return _gathered(client, [
                delayed(_sample_sums.finish_dropping, pure=True)(
                    _chain(runs[g], _sample_sums.dropping_sums, _sample_sums.run_dropping_sums,
                           blocks_in, common, seed, plans, n_boot, counts=counts),
                    m.name, n_rep)
                for g in range(len(offsets))])

    frame = frame_of(avail)  # the draws are of the samples available in some repeat
    plans = _task_base.first_plans(seed, "dropping", n_boot, target.n_samples, sb, frame)
    got = scored(plans, _shared_counts(keep, seed, "dropping", plans, len(edges), n_boot, client))
    attempts = [np.zeros(1, dtype=np.int64)]
    rule = dropping_rule(m, target, avail, n_rep)
    if not rule.decide(got[0][2]).all():
        groups = _gathered(client, _plans(seed, "dropping", n_boot, target.n_samples, sb,
                                          delayed(rule, pure=True), False, frame))
        plans = [p for g in groups for p, _ in g]
        attempts = [_attempts(g) for g in groups]
        got = scored(plans, _shared_counts(keep, seed, "dropping", plans, len(edges), n_boot,
                                           client))
    return _decided(got, attempts, alpha, n_boot, best)


def _dropping_by_tiles(client, src, target, available, m, alpha, n_boot, seed, best=None):
    """The dropping test of a ranking metric by pairs of sample tiles (as
    :func:`~._lazy_bbc._bbc_by_tiles`): per repeat, the pair sums of the counts masked by the samples
    available there, added over the jobs; each group's task turns them into its
    configurations' scores (B, c) as :class:`~bbc_dask.stats.DroppingScorer` does. The plans are decided
    first, by the :class:`~bbc_dask.stats._dropping.MaskedRule` streamed block by block."""
    from dask import delayed

    lay = _TileLayout(src, target, m)
    rule = dropping_rule(m, target, available, lay.n_rep)
    groups = _gathered(client, _plans(seed, "dropping", n_boot, src.n, metrics.SAMPLE_BLOCK,
                                      delayed(rule, pure=True), False, frame_of(available)))
    plans = [p for g in groups for p, _ in g]
    shared = lay.shared([(target.subset(lo, hi), available[lo:hi]) for lo, hi in lay.span], plans)
    with lay.carrying():
        got = _gathered(client, [delayed(_tile_sums.finish_tile_dropping, pure=True)(
            lay.summed(_tile_sums.tile_dropping_sums, g, shared, m.name, src.coord, seed, shared[-1],
                       n_boot),
            m.name, g.size, lay.n_rep, lay.n_sub) for g in lay.groups()])
    return _decided(got, [_attempts(g) for g in groups], alpha, n_boot, best)


def _decided(got, attempts, alpha, n_boot, best=None):
    """The dropping decision from each configuration group's ``(full (c,), scores (B, c),
    ...)``, in order, and the plans' attempts (their redraws)."""
    full = np.concatenate([g[0] for g in got])
    scores = np.concatenate([g[1] for g in got], axis=1)
    return decide(full, scores, alpha, int(np.concatenate(attempts)[:n_boot].sum()), best)
