"""Bootstrap draws as count matrices, reproducible whatever the blocking.

Bootstraps are drawn in fixed *seed blocks* of :data:`SEED_BLOCK` consecutive bootstraps,
each from its own seeds: any range of bootstraps is the same draws whether it is computed
at once, in processing blocks of any size, or on different workers.

Samples are split into *sample blocks* (:data:`bbc_dask.metrics.SAMPLE_BLOCK`). With one
block (N at most the block size) seed block ``k`` draws its ``SEED_BLOCK × N`` in-bag
positions from ``child(root, stream, k)``, and an undefined draw is redrawn from the same
generator. With J > 1 blocks the draw of a bootstrap is split in two, which gives the same
distribution (N uniform draws with replacement):

1. how many of its N draws fall in each block: Multinomial(N, block sizes / N), one row
   per bootstrap from ``child(root, stream, k)`` (the seed block's *totals*);
2. which samples of block j they hit: T_bj uniform positions in the block, for every
   bootstrap of the seed block at once, from ``child(root, stream, k, j)``.

A task holding samples of block j alone therefore draws exactly its block's counts — no
other block's draws, no whole bootstrap. An undefined bootstrap ``b`` of the seed block
(say, no out-of-bag positive for AUC) is replaced by attempt ``a = 1, 2, ...``: totals from
``child(root, stream, k, REDRAW, b, a)``, block j from ``child(..., b, a, j)``. Which
attempt is kept is decided once, from the counts and the target alone (the metric's
:meth:`~bbc_dask.metrics.Metric.definedness`), and carried as a :class:`SeedPlan`.

A :class:`Frame` restricts the draws to M of the N samples (the BBCD dropping test: those
with a prediction so far): each bootstrap draws M of them uniformly with replacement. The
scheme is the same with the frame's members in place of the samples: one sample block
draws M positions among its members; with J > 1 blocks the totals are Multinomial(M,
members per block / M) and block j draws its total among its own members. So the frame's
draws over the whole sample are, in the frame's order, the plain draws of the sample of
its members alone (one block each: the same numbers).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _tuning as tuning
from .._random import child_generator
from ..exceptions import UndefinedScoreError
from ..metrics import sample_blocks

__all__ = [
    "MAX_REDRAWS",
    "SEED_BLOCK",
    "CountBlocks",
    "Frame",
    "SeedPlan",
    "block_counts",
    "block_ranges",
    "counts_from_indices",
    "defined_parts",
    "draw_counts",
    "fill_counts",
    "first_plan",
    "plan_counts",
    "plan_seed_block",
]

SEED_BLOCK = 64
MAX_REDRAWS = 1000
_REDRAW = 2**31 - 1  # a key no seed block index reaches


# Counting with np.bincount row by row (not a numba loop): the counts are the same
# integers, the memory one row of int64 at a time, and drawing needs no numba (a worker
# that draws and sums indicators never loads it: see bbc_dask._jit).
def _bincount_segments(idx, lengths, n, out=None):
    """Row b counts ``idx`` positions ``sum(lengths[:b]) ..`` (``lengths[b]`` of them).
    ``out``: the (B, n) array (a view, uint8 or int32) to write the rows into; None is
    returned, ``out`` partly written, when a count does not fit in uint8."""
    out = np.empty((lengths.shape[0], n), dtype=np.int32) if out is None else out
    k = 0
    for b in range(lengths.shape[0]):
        row = np.bincount(idx[k : k + lengths[b]], minlength=n)
        if out.dtype == np.uint8 and row.max(initial=0) > 255:
            return None
        out[b] = row
        k += lengths[b]
    return out


def counts_from_indices(idx: np.ndarray, n: int) -> np.ndarray:
    """``(B, n_draw)`` in-bag positions -> ``(B, n)`` int32 counts."""
    idx = np.asarray(idx)
    return _bincount_segments(idx.ravel(), np.full(idx.shape[0], idx.shape[1], dtype=np.int64), n)


def _draw(gen, n, shape):
    # int32 draws are the very values of int64 ones (numpy uses the same buffered 32-bit
    # Lemire sampler for any bound below 2**32) at half the memory.
    return gen.integers(0, n, size=shape, dtype=np.int32 if n < 2**31 else np.int64)


def _positions(gen, n, shape, members=None):
    """Uniform positions in ``0..n-1``, or among ``members`` (positions of a frame's
    samples, increasing) when given."""
    return _draw(gen, n, shape) if members is None else members[_draw(gen, members.size, shape)]


@dataclass(frozen=True, eq=False)
class Frame:
    """The samples the bootstraps draw from: ``m`` of ``n`` (``mask`` packed in
    ``bits``). Each bootstrap draws ``m`` of them uniformly with replacement (see the
    module doc). :meth:`of` gives None for the whole sample: the plain draws."""

    bits: np.ndarray
    n: int
    m: int

    @classmethod
    def of(cls, mask, name="available"):
        mask = np.asarray(mask, dtype=bool)
        if mask.all():
            return None
        if not mask.any():
            from ..exceptions import InvalidParameterError

            raise InvalidParameterError.of(
                name, "a mask with some sample available (the bootstraps draw them)",
                shown="no sample available in any repeat")
        return cls(np.packbits(mask), int(mask.size), int(mask.sum()))

    def mask(self, lo, hi):
        """The frame's membership of samples ``lo..hi-1`` (bool)."""
        b0 = lo // 8
        bits = np.unpackbits(self.bits[b0 : -(-hi // 8)])
        return bits[lo - 8 * b0 : hi - 8 * b0].astype(bool)

    def members(self, lo, hi):
        """The frame's samples among ``lo..hi-1``, as offsets from ``lo``."""
        return np.flatnonzero(self.mask(lo, hi))

    def sizes(self, sample_block):
        """Members per sample block (float64, for the multinomial's probabilities)."""
        return np.array([self.mask(lo, hi).sum() for lo, hi in sample_blocks(self.n, sample_block)],
                        dtype=np.float64)


def _members(frame, lo, hi):
    return None if frame is None else frame.members(lo, hi)


def _seed_block(root, stream, k, n, is_defined, frame=None):
    """One sample block: counts ``(SEED_BLOCK, n)`` and per-bootstrap redraw counts (``n``
    draws each, or ``frame.m`` among its members)."""
    gen = child_generator(root, stream, k)
    members = _members(frame, 0, n)
    n_draw = n if frame is None else frame.m
    counts = counts_from_indices(_positions(gen, n, (SEED_BLOCK, n_draw), members), n)
    redrawn = np.zeros(SEED_BLOCK, dtype=np.int64)
    if is_defined is None:
        return counts, redrawn
    bad = np.flatnonzero(~_defined_rows(is_defined, counts))
    for j in bad:  # in index order, each from the block's own generator: deterministic
        for attempt in range(1, MAX_REDRAWS + 1):
            c = counts_from_indices(_positions(gen, n, (1, n_draw), members), n)
            if is_defined(c)[0]:
                counts[j] = c[0]
                redrawn[j] = attempt
                break
        else:
            _give_up()
    return counts, redrawn




def _defined_rows(is_defined, counts):
    """``is_defined(counts)`` evaluated on slices of rows (every rule is per bootstrap)."""
    step = max(1, tuning.RULE_BYTES // max(counts[0].nbytes, 1))
    if step >= counts.shape[0]:
        return np.asarray(is_defined(counts), dtype=bool)
    return np.concatenate([np.asarray(is_defined(counts[i : i + step]), dtype=bool)
                           for i in range(0, counts.shape[0], step)])


def defined_parts(rule, counts, lo, hi):
    """``rule.part(counts, lo, hi)`` (a streaming :class:`~bbc_dask.metrics.Definedness`
    on samples ``lo..hi-1``) evaluated on slices of rows: its float temporaries are
    ``bbc_dask.rule-bytes``, not 8 bytes per count."""
    step = max(1, tuning.RULE_BYTES // max(8 * counts.shape[1], 1))
    return np.concatenate([rule.part(counts[i : i + step], lo, hi)
                           for i in range(0, counts.shape[0], step)])


def _give_up():
    raise UndefinedScoreError(
        f"Could not draw a bootstrap whose score is defined in {MAX_REDRAWS} attempts (e.g. "
        f"out-of-bag samples of both classes for AUC); the sample is too small or too "
        f"unbalanced for this metric.")


@dataclass(frozen=True)
class SeedPlan:
    """The draws of seed block ``k`` over ``n`` samples in blocks of ``sample_block``:
    ``totals`` (SEED_BLOCK, J) draws per sample block, ``redraws``: (bootstrap in the
    block, attempt kept, its totals (J,)) of the bootstraps that were redrawn, and the
    :class:`Frame` drawn from (None: every sample)."""

    k: int
    n: int
    sample_block: int
    totals: np.ndarray
    redraws: tuple = ()
    frame: object = None

    @property
    def attempts(self):
        """Redraws of each bootstrap of the seed block, (SEED_BLOCK,) int64."""
        out = np.zeros(SEED_BLOCK, dtype=np.int64)
        for b, a, _ in self.redraws:
            out[b] = a
        return out


@dataclass(frozen=True)
class _OneBlock:
    """The plan of a seed block over one sample block: its counts carry the draws."""

    k: int
    attempts: np.ndarray
    n: int = 0
    frame: object = None


def _totals(gen, n, sample_block, size, frame=None):
    if frame is None:
        sizes = np.array([hi - lo for lo, hi in sample_blocks(n, sample_block)], dtype=np.float64)
        return gen.multinomial(n, sizes / n, size=size)
    return gen.multinomial(frame.m, frame.sizes(sample_block) / frame.m, size=size)


def _block_draw(gen, lengths, size, out=None, members=None):
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    return _bincount_segments(_positions(gen, size, (int(lengths.sum()),), members), lengths,
                              size, out)


def _redraw_block(root, stream, k, b, a, t, j, size, members=None):
    return _block_draw(child_generator(root, stream, k, _REDRAW, b, a, j), t[j : j + 1], size,
                       members=members)[0]


def block_counts(root, stream, plan, j, out=None):
    """Counts ``(SEED_BLOCK, size of block j)`` int32 of the plan's seed block on sample
    block ``j``: drawn from the block's own generator, nothing else (among the block's
    members of the plan's frame). ``out``: a (uint8 or int32) view to write them into
    instead — no int32 copy of the block is made — and None is returned if a count
    exceeds 255 in a uint8 ``out``."""
    lo, hi = sample_blocks(plan.n, plan.sample_block)[j]
    members = _members(plan.frame, lo, hi)
    counts = _block_draw(child_generator(root, stream, plan.k, j), plan.totals[:, j], hi - lo, out,
                         members)
    if counts is None:
        return None
    for b, a, t in plan.redraws:
        row = _redraw_block(root, stream, plan.k, b, a, t, j, hi - lo, members)
        if counts.dtype == np.uint8 and row.max(initial=0) > 255:
            return None
        counts[b] = row
    return counts


def fill_counts(out, root, stream, plan, j, lo, hi, samples_first=False):
    """Block ``j``'s counts drawn straight into ``out`` (uint8 or int32) at positions
    ``lo:hi`` of its samples axis (the block's size apart, anywhere: a task holding
    several blocks places each) — ``out`` (SEED_BLOCK, n), or (n, SEED_BLOCK) if
    ``samples_first`` — widened to int32 (and the block drawn again) if a count exceeds
    255."""
    def at(a):  # samples first: each bootstrap's row is a strided column of ``out``
        return a[lo:hi].T if samples_first else a[:, lo:hi]

    if block_counts(root, stream, plan, j, at(out)) is None:
        out = out.astype(np.int32)
        block_counts(root, stream, plan, j, at(out))
    return out


def first_plan(root, stream, k, n, sample_block, frame=None):
    """The plan of seed block ``k`` before any redraw: its totals alone (one multinomial
    draw per bootstrap). It is the plan whenever every draw is defined."""
    return SeedPlan(k, n, sample_block, _totals(child_generator(root, stream, k), n,
                                                 sample_block, SEED_BLOCK, frame), frame=frame)


def plan_seed_block(root, stream, k, n, is_defined=None, sample_block=None, small=False,
                    keep=True, frame=None):
    """``(plan, counts (SEED_BLOCK, n))`` of seed block ``k``: the draws, each undefined
    one replaced by its first defined attempt. ``is_defined``: a callable ``(counts) ->
    (B,) bool``, or a :class:`~bbc_dask.metrics.Definedness` (its ``both``).

    With one sample block the counts are the generator's stream (see the module doc)
    and the plan only records the attempts. ``small``: counts as uint8 when every count
    fits (a quarter of the memory). ``keep=False``: the plan alone (counts None); a rule
    that ``streams`` is then decided block by block, and the whole counts (64 × n) are
    never held. ``frame``: the :class:`Frame` drawn from (None: every sample)."""
    sample_block = _block_size(sample_block)
    check = getattr(is_defined, "both", is_defined)
    if n <= sample_block:
        counts, red = _seed_block(root, stream, k, n, check, frame)
        if small and counts.max() <= 255:
            counts = counts.astype(np.uint8)
        return _OneBlock(k, red, n, frame), counts if keep else None
    edges = sample_blocks(n, sample_block)
    plan = first_plan(root, stream, k, n, sample_block, frame)
    streams = not keep and getattr(is_defined, "streams", False)
    counts = None if streams else np.empty((SEED_BLOCK, n), dtype=np.uint8 if small else np.int32)
    parts = None
    for j, (lo, hi) in enumerate(edges):
        if streams:
            p = defined_parts(is_defined, block_counts(root, stream, plan, j), lo, hi)
            parts = p if parts is None else np.maximum(parts, p)
        else:
            counts = fill_counts(counts, root, stream, plan, j, lo, hi)
    if check is None:
        return plan, counts if keep else None
    defined = is_defined.decide(parts) if streams else _defined_rows(check, counts)
    redraws = []
    for b in np.flatnonzero(~defined).tolist():
        for a in range(1, MAX_REDRAWS + 1):
            t = _totals(child_generator(root, stream, k, _REDRAW, b, a), n, sample_block, 1, frame)[0]
            row = np.concatenate([_redraw_block(root, stream, k, b, a, t, j, hi - lo,
                                                _members(frame, lo, hi))
                                  for j, (lo, hi) in enumerate(edges)])
            if check(row[None])[0]:
                if counts is not None:
                    if counts.dtype == np.uint8 and row.max() > 255:
                        counts = counts.astype(np.int32)
                    counts[b] = row
                redraws.append((b, a, t))
                break
        else:
            _give_up()
    return SeedPlan(k, n, sample_block, plan.totals, tuple(redraws), frame), counts if keep else None


def plan_counts(root, stream, plan, is_defined=None, samples_first=False):
    """The counts (SEED_BLOCK, n) of a plan of :func:`plan_seed_block`, drawn again from
    the same generators (uint8 when they fit): a task that was handed the plan alone.
    A plan over one sample block needs ``is_defined`` (its redraws come from the
    stream). ``samples_first``: the same counts laid out (n, SEED_BLOCK), written block
    by block (no transposed copy of the whole)."""
    if isinstance(plan, SeedPlan):
        shape = (plan.n, SEED_BLOCK) if samples_first else (SEED_BLOCK, plan.n)
        counts = np.empty(shape, dtype=np.uint8)
        for j, (lo, hi) in enumerate(sample_blocks(plan.n, plan.sample_block)):
            counts = fill_counts(counts, root, stream, plan, j, lo, hi, samples_first)
        return counts
    counts = plan_seed_block(root, stream, plan.k, plan.n, is_defined, plan.n, small=True,
                             frame=plan.frame)[1]
    return np.ascontiguousarray(counts.T) if samples_first else counts


def _block_size(sample_block):
    from .. import metrics

    return metrics.SAMPLE_BLOCK if sample_block is None else int(sample_block)


def draw_counts(root, stream, start, stop, n, is_defined=None, sample_block=None, frame=None):
    """Counts ``(stop - start, n)`` int32 for bootstraps ``start..stop-1`` and the number
    of redraws among them. ``is_defined(counts) -> (B,) bool`` decides which draws are
    kept; an undefined draw is redrawn. ``frame``: the :class:`Frame` drawn from."""
    first, last = start // SEED_BLOCK, (stop - 1) // SEED_BLOCK
    out = np.empty((stop - start, n), dtype=np.int32)
    red = 0
    for k in range(first, last + 1):
        plan, c = plan_seed_block(root, stream, k, n, is_defined, sample_block, frame=frame)
        r = plan.attempts
        lo = max(start - k * SEED_BLOCK, 0)
        hi = min(stop - k * SEED_BLOCK, SEED_BLOCK)
        out[k * SEED_BLOCK + lo - start : k * SEED_BLOCK + hi - start] = c[lo:hi]
        red += int(r[lo:hi].sum())
    return out, red


def block_ranges(n_boot, block_size):
    for start in range(0, n_boot, block_size):
        yield start, min(start + block_size, n_boot)


class CountBlocks:
    """Iterate ``(start, stop, counts)`` over bootstrap blocks: drawn from ``root`` (with
    redraws of undefined draws, counted in ``n_redrawn``; among the samples of ``frame``
    if given) or taken from explicit in-bag indices ``idx`` (B, n_draw)."""

    def __init__(self, root, stream, idx, n_boot, n, block_size, is_defined=None, frame=None):
        self.root, self.stream, self.idx, self.frame = root, stream, idx, frame
        self.n_boot, self.n, self.block_size, self.is_defined = n_boot, n, block_size, is_defined
        self.n_redrawn = 0

    def __iter__(self):
        for start, stop in block_ranges(self.n_boot, self.block_size):
            if self.idx is None:
                counts, red = draw_counts(self.root, self.stream, start, stop, self.n,
                                          self.is_defined, frame=self.frame)
                self.n_redrawn += red
            else:
                counts = counts_from_indices(self.idx[start:stop], self.n)
            yield start, stop, counts
