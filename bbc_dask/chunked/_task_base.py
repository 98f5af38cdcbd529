"""What every task of the chunked path shares: reading and encoding its parts, and
drawing its bootstrap counts from the seeds the client spawned.

NumPy and zarr only: importing it loads no Dask."""
from __future__ import annotations

import numpy as np

from .. import _validation
from ..stats import SEED_BLOCK, block_counts, first_plan, plan_seed_block
from ..stats import prepare_inputs as _prepare

__all__ = ["BATCH", "block_batches", "first_plans", "plan_group", "prepare_inputs"]

#: Bootstraps multiplied at once in a sample-block task (one product of this many rows):
#: their float32 weights take BATCH x 32,768 x 4 bytes (8 MiB), large enough for BLAS.
BATCH = 64


def _load(pred):
    """A block's values: read now if it is a reader (a ZarrBlock or the cube's CubeBlock)."""
    return pred.read() if hasattr(pred, "read") else pred


def prepare_inputs(pred, y, metric, pos_label, class_coord=None):
    """``(metric, target, encoded)`` of one chunk (read from Zarr if it is a ZarrBlock)."""
    return _prepare(_load(pred), y, metric, pos_label, class_coord)


def _encode(part, target, m, class_coord):
    """A part's predictions encoded against the whole sample's ``target`` (its classes),
    not against the labels of the part."""
    arr = np.asarray(_load(part))
    return _validation.encode_predictions(arr, class_coord, m, target)


def _root(seed):
    entropy, spawn_key = seed
    return np.random.SeedSequence(int(entropy), spawn_key=tuple(spawn_key))


def plan_group(seed, stream, ks, n, sample_block, rule, keep, frame=None):
    """Plans of seed blocks ``ks`` — which attempt each bootstrap keeps, decided by
    ``rule`` (a Definedness, or a callable on counts) on the whole bootstrap — and, with
    ``keep``, their counts (64, n), uint8 when they fit; drawn among the samples of
    ``frame`` if given. Returns a list of ``(plan, counts or None)``."""
    root = _root(seed)
    return [plan_seed_block(root, stream, k, n, rule, sample_block, small=True, keep=keep,
                            frame=frame) for k in ks]


def first_plans(seed, stream, n_boot, n, sample_block, frame=None):
    """The plans of every seed block of ``n_boot`` bootstraps before any redraw (their
    totals alone: drawn on the client in microseconds). The sample-block tasks report
    whether each draw is defined (the rule's parts); only if one is not are the plans
    decided as :func:`plan_group` does, and the blocks summed again."""
    root = _root(seed)
    return [first_plan(root, stream, k, n, sample_block, frame)
            for k in range(-(-n_boot // SEED_BLOCK))]


def _stacked(parts, target, m, class_coord, size):
    """One prepared metric over every configuration of ``parts`` (read, encoded and
    prepared one part at a time; their features copied side by side)."""
    def prep(part):
        return m.prepare(target, _encode(part, target, m, class_coord), size)

    if len(parts) == 1:
        return prep(parts[0])
    return m.stacked((prep(part) for part in parts), sum(_width(part) for part in parts))


def _width(part):
    """Configurations in a part (a ZarrBlock, a CubeBlock or a Dask chunk)."""
    configs = getattr(part, "configs", None)
    if isinstance(configs, slice):
        return len(range(*configs.indices(part.array.shape[part.config_axis])))
    if configs is not None:
        return len(configs)
    return part.shape[1]


def _block_batches(root, stream, plans, j, n_boot):
    """The counts of sample block ``j`` for bootstraps ``0..n_boot-1`` of ``plans``,
    :data:`BATCH` bootstraps at a time (uint8), drawn from the block's own generators.
    The last seed block's draws beyond ``n_boot`` are not scored (the in-memory kernel
    scores ``n_boot`` rows)."""
    step = BATCH // SEED_BLOCK
    for i in range(0, len(plans), step):
        counts = np.concatenate([block_counts(root, stream, p, j) for p in plans[i : i + step]])
        yield _small(counts[: n_boot - i * SEED_BLOCK])


def block_batches(seed, stream, plans, j, n_boot):
    """The counts of sample block ``j`` in the batches of :func:`_block_batches`, as a list:
    drawn once and shared by every group's task of the block and by the out-of-bag pass,
    while every block's counts fit in the dispatcher's ``bbc_dask.counts-bytes``."""
    out = list(_block_batches(_root(seed), stream, plans, j, n_boot))
    for c in out:  # shared by tasks in this process too: none may write into them
        c.flags.writeable = False
    return out


def _batches(counts, seed, stream, plans, j, n_boot):
    """The batches ``counts`` (:func:`block_batches`), or drawn here if None."""
    return _block_batches(_root(seed), stream, plans, j, n_boot) if counts is None else iter(counts)


def _small(counts):
    """Counts as uint8 when they fit (a quarter of int32: held while the batch is used)."""
    return counts.astype(np.uint8) if counts.size and counts.max() <= 255 else counts
