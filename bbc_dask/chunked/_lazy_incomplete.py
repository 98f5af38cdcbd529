"""BBC on an incomplete CV over configuration blocks holding every sample, on the
cluster: equal bit for bit to the in-memory estimate (``bbc(include_incomplete=True)``)
whatever the blocks and the workers.

Each block's configurations are grouped by the cells they predicted and scored on those
cells (:class:`~bbc_dask.stats.IncompleteScorers`); every score is a per-column quantity,
so a block's winner of each bootstrap, with its in-bag and out-of-bag scores, is the
whole matrix's winner among that block, and a tree merges the blocks' winners by (higher
in-bag score, then lower index). The draws are the in-memory estimate's: stream
``"bbc"``, every sample, a draw kept when the reference group's rule holds in bag and out
of bag (:class:`~bbc_dask.stats.BothBags`)."""
from __future__ import annotations

import numpy as np

from .. import _validation, metrics
from ..metrics import get_metric
from ..stats import BothBags, availability_groups, dropping_rule, reference_group, summarise
from ._blocks import merge_winners, prepare_and_score_incomplete, prepare_incomplete, score_incomplete
from ._graph import _attempts, _bbc_args, _keeps_counts, _plans, _tree
from .._doors import carried, door

__all__ = ["incomplete_over_blocks"]


@door("incomplete_over_blocks")
def incomplete_over_blocks(blocks, offsets, y, missing, final, *, metric, n_bootstraps,
                           confidence_level, random_state, pos_label):
    """BBC on the incomplete CV of the configurations of ``blocks`` (a study's
    CubeBlocks, or Dask delayed arrays, holding every sample; their configurations start
    at ``offsets``), ``missing`` (N, C, R) the cells not predicted and ``final`` (C,) the
    configurations the final winner may be (the reference group's choice, as in memory).
    Returns a :class:`~bbc_dask.BBCResult` whose bootstrap distribution, winners
    (columns; -1: none) and redraws equal the in-memory estimate's; the caller sets
    ``selected_config`` and ``naive_estimate`` (here -1 and NaN)."""
    import dask
    from dask import delayed

    m = get_metric(metric)
    conf, n_boot, seed = _bbc_args(n_bootstraps, confidence_level, random_state)
    y = y if isinstance(y, tuple) else np.asarray(y)
    target = _validation.as_target(y, m, pos_label=pos_label)
    have = ~np.asarray(missing, dtype=bool)
    if not have.any(axis=0).all():  # the in-memory estimate leaves such columns out
        from ..exceptions import InvalidParameterError

        raise InvalidParameterError.of(
            "missing", "a mask leaving every configuration a prediction in each repeat",
            None, shown="one with a configuration that has none in some repeat")
    n, n_rep = target.n_samples, have.shape[2]
    groups = availability_groups(have)
    final = np.asarray(final, dtype=bool) & have.all(axis=(0, 2))
    ref = have[:, groups[reference_group(have, groups, final)][0], :]
    rule = delayed(BothBags(dropping_rule(m, target, ref, n_rep)), pure=True)
    keep = _keeps_counts(n_boot, n)
    plans = _plans(seed, "bbc", n_boot, n, metrics.SAMPLE_BLOCK, rule, keep, None, len(blocks))
    ends = list(offsets[1:]) + [have.shape[1]]
    cells = [have[:, int(lo):int(hi)] for lo, hi in zip(offsets, ends)]
    y = delayed(y, pure=True)  # one copy in the graph, not one per block's task
    if keep:
        preps = [delayed(carried(prepare_incomplete), pure=True)(b, y, c, m.name, pos_label)
                 for b, c in zip(blocks, cells)]
        per_group = [_tree([delayed(score_incomplete, pure=True)(p, [pl], int(o), n_boot)
                            for p, o in zip(preps, offsets)], merge_winners) for pl in plans]
    else:  # one scoring per block: prepared and scored in one task, drawing the counts
        per_group = [_tree([delayed(carried(prepare_and_score_incomplete), pure=True)(
            b, y, c, m.name, pos_label, plans, int(o), n_boot, (seed, "bbc", rule))
            for b, c, o in zip(blocks, cells, offsets)], merge_winners)]
    merged, attempts = dask.compute(per_group, [delayed(_attempts, pure=True)(p) for p in plans])
    _, cfg, oob = (np.concatenate(a)[:n_boot] for a in zip(*merged))
    return summarise(oob, cfg, selected=-1, naive=float("nan"),
                     n_redrawn=int(np.concatenate(attempts)[:n_boot].sum()), method="bbc",
                     metric=m.name, confidence_level=conf)
