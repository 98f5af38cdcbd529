"""The tasks over sample blocks (pointwise metrics): a task holds one sample block of a
group of configurations, draws that block's bootstrap counts alone and returns the
block's feature sums (:func:`block_sums`); the sums of the blocks are added in block
order (:func:`add_sums`), as the in-memory kernel adds them, and turned into scores,
winners and out-of-bag scores (:func:`finish_sums`). A task's memory does not depend on
the number of samples. A study's cube, stored by fold, is read in runs of consecutive
blocks (:func:`run_sums`, :func:`run_oob_sums`): the same sums of each block, added by
:func:`add_run` in the same order. The dropping test (:func:`dropping_sums`,
:func:`finish_dropping`: per repeat, the counts masked by the samples available there)
and BBC-F's fold matrix (:func:`fold_block_sums`) go the same way.

NumPy and zarr only: importing it loads no Dask."""
from __future__ import annotations

import numpy as np

from ..metrics import get_metric
from ..stats import defined_parts, fill_unavailable, mean_over_repeats, select
from ._task_base import _batches, _load, _encode, _stacked

__all__ = ["add_run", "add_sums", "block_sums", "dropping_sums", "finish_dropping",
           "finish_fold_sums", "finish_oob", "finish_sums", "fold_block_sums", "oob_sums",
           "run_dropping_sums", "run_oob_sums", "run_sums"]


def block_sums(parts, target, metric, class_coord, j, size, seed, stream, plans, n_boot,
               counts=None):
    """The in-bag feature sums of sample block ``j`` (``size`` samples, whose target is
    ``target``: :meth:`~bbc_dask.metrics.Target.subset`) of a group of configurations
    (``parts``: its configuration chunks, in order), for every bootstrap of ``plans``,
    and for unit weights.

    Returns ``{"in", "full": (fsums list of (B, c, R), gsums (B, n_g)), "defined":
    the block's definedness parts (B, k)}`` (see :func:`~._task_base.first_plans`). The block's
    counts are drawn here from the block's own generators (or are ``counts``, of
    :func:`~._task_base.block_batches`); the parts are read, encoded
    and prepared one at a time into one feature matrix (a group is sized for it), which
    the weights of :data:`~._task_base.BATCH` bootstraps at a time multiply in one product. Out of
    bag only the winners are scored (:func:`oob_sums`), as the in-memory kernel does."""
    m = get_metric(metric)
    prep = _stacked(parts, target, m, class_coord, size)
    rule = m.definedness(target)  # of this block's samples: its parts combine by maximum
    ins, defined = [], []
    for c in _batches(counts, seed, stream, plans, j, n_boot):
        ins.append((prep.feature_sums(prep.weights(c)), prep.config_free_sums(c)))
        defined.append(defined_parts(rule, c, 0, size))
    ones = np.ones((1, size), dtype=np.int32)
    full = (prep.feature_sums(prep.weights(ones)), prep.config_free_sums(ones))
    fs, gs = zip(*ins)
    return {"in": ([np.concatenate(f, axis=0) for f in zip(*fs)], np.concatenate(gs)),
            "full": full, "defined": np.concatenate(defined)}


def oob_sums(parts, target, metric, class_coord, j, size, seed, stream, plans, pick,
             counts=None):
    """The out-of-bag feature sums of sample block ``j`` of each bootstrap's winner:
    ``parts`` hold the distinct winners (in order), ``pick[b]`` is bootstrap ``b``'s
    among them (``b < n_boot = len(pick)``). Returns ``(fsums list of (B, 1, R), gsums
    (B, n_g))`` — the winners' columns of the very products :meth:`~bbc_dask.metrics._Pointwise.winner_scores`
    adds block by block. ``counts``: as for :func:`block_sums`."""
    m = get_metric(metric)
    prep = _stacked(parts, target, m, class_coord, size)
    pick = np.asarray(pick, dtype=np.int64)
    fs, gs, at = [], [], 0
    for c in _batches(counts, seed, stream, plans, j, len(pick)):
        rows = np.arange(c.shape[0])
        sel = pick[at : at + c.shape[0]]
        fs.append([f[rows, sel][:, None, :] for f in prep.feature_sums(prep.weights(c, oob=True))])
        gs.append(prep.config_free_sums(c, oob=True))
        at += c.shape[0]
    return [np.concatenate(f, axis=0) for f in zip(*fs)], np.concatenate(gs)


def _run_parts(parts, blocks, counts):
    """Per block ``(j, lo, hi)`` of a run: ``j``, its size, ``parts`` (read once, all of
    the run's rows) cut to the block's rows, and its shared counts (``counts``, one per
    block, or None: drawn by the task)."""
    data, base = [np.asarray(_load(p)) for p in parts], blocks[0][1]
    counts = [None] * len(blocks) if counts is None else counts
    for (j, lo, hi), c in zip(blocks, counts):
        yield j, hi - lo, [d[lo - base : hi - base] for d in data], c


def run_sums(parts, targets, metric, class_coord, blocks, seed, stream, plans, n_boot,
             counts=None):
    """:func:`block_sums` of each sample block ``(j, lo, hi)`` of a run of consecutive
    ``blocks`` (``targets`` theirs; ``counts`` theirs, or None), whose rows ``parts``
    hold: read once for the run (a read decodes the stored chunks holding its slots). Returns
    their list, in order."""
    return [block_sums(p, t, metric, class_coord, j, size, seed, stream, plans, n_boot, c)
            for (j, size, p, c), t in zip(_run_parts(parts, blocks, counts), targets)]


def run_oob_sums(parts, targets, metric, class_coord, blocks, seed, stream, plans, pick,
                 counts=None):
    """:func:`oob_sums` of each sample block of a run (see :func:`run_sums`)."""
    return [oob_sums(p, t, metric, class_coord, j, size, seed, stream, plans, pick, c)
            for (j, size, p, c), t in zip(_run_parts(parts, blocks, counts), targets)]


def add_run(acc, sums):
    """``acc`` (None: nothing yet) plus the sums of a run's blocks, one at a time in
    block order (:func:`add_sums`): the additions of a block-by-block chain."""
    for s in sums:
        acc = s if acc is None else add_sums(acc, s)
    return acc


def add_sums(a, b):
    """``a + b`` of two :func:`block_sums` (a dict) or :func:`oob_sums` (a pair)
    results: blocks are added in block order, as the in-memory kernel adds them; their
    definedness parts combine by maximum."""
    if isinstance(a, dict):
        # a name one of them lacks (a repeat of which a block of the dropping test has no
        # sample available: its weights there are all zero) adds nothing
        return {name: a[name] if name not in b else b[name] if name not in a
                else np.maximum(a[name], b[name]) if name == "defined" else add_sums(a[name], b[name])
                for name in list(a) + [k for k in b if k not in a]}
    return [x + y for x, y in zip(a[0], b[0])], a[1] + b[1]


def finish_sums(total, metric, offset):
    """Winners ``(best, config)``, full scores (c,) and the definedness parts (n_boot,
    k) of a group of configurations from its summed in-bag features; ``config``
    global."""
    m = get_metric(metric)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = m.combine(*total["in"]).mean(axis=2)
        full = m.combine(*total["full"])[0].mean(axis=1)
    w = select(s)
    return (s[np.arange(s.shape[0]), w], w + offset), full, total["defined"]


def finish_oob(total, metric):
    """The winners' out-of-bag scores (n_boot,) from their summed features."""
    m = get_metric(metric)
    with np.errstate(divide="ignore", invalid="ignore"):
        return m.combine(*total)[:, 0, :].mean(axis=1)


def _dropping_preps(parts, target, avail, m, class_coord, size):
    """Per repeat, the prepared metric of a sample block of a group's configurations
    (``parts``, every repeat) on that repeat alone, as :class:`~bbc_dask.stats.DroppingScorer` prepares
    each repeat, its unavailable rows filled as there (:func:`~bbc_dask.stats.fill_unavailable`); None
    where no sample of the block is available in the repeat (its weights there are all
    zero: the in-memory sums add zeros). The parts are read one at a time (as
    :func:`~._task_base._stacked` reads them); each repeat's are stacked once all are prepared, and
    dropped as they are copied."""
    prepared = [[] for _ in range(avail.shape[1])]
    for part in parts:
        data = np.asarray(_load(part))
        for r, got in enumerate(prepared):
            ok = avail[:, r]
            if not ok.any():
                continue
            x = data[:, :, r : r + 1] if ok.all() else data[:, :, r : r + 1].copy()
            fill_unavailable(x, ok)
            got.append(m.prepare(target, _encode(x, target, m, class_coord), size))
        del data
    return [None if not got else got[0] if len(got) == 1 else
            m.stacked((got.pop(0) for _ in range(len(got))), sum(p.n_configs for p in got))
            for got in prepared]


def dropping_sums(parts, block, metric, class_coord, j, size, seed, plans, n_boot,
                  counts=None):
    """The dropping test's in-bag feature sums of sample block ``j`` (``size`` samples;
    ``block = (target, available (size, R) bool)`` of its samples) of a group of
    configurations, per repeat ``r`` with the weights ``counts x available[:, r]`` (the
    products :class:`~bbc_dask.stats.DroppingScorer` adds block by block), and for unit weights.

    Returns ``{"in": {r: (fsums, gsums)}, "full": {r: ...}, "defined": the block's
    parts of the :class:`~bbc_dask.stats._dropping.MaskedRule` (B, k·R)}``; a repeat with
    no sample available in the block is left out. Counts as for :func:`block_sums`
    (stream ``"dropping"``)."""
    target, avail = block
    m = get_metric(metric)
    preps = _dropping_preps(parts, target, avail, m, class_coord, size)
    mask = np.ascontiguousarray(avail.T, dtype=np.int32)  # (R, size), as DroppingScorer's
    rule = m.definedness(target)
    ins = {r: [] for r, p in enumerate(preps) if p is not None}
    defined = []
    for c in _batches(counts, seed, "dropping", plans, j, n_boot):
        row = []
        for r in range(mask.shape[0]):
            w = c * mask[r]  # int32, as the in-memory counts times the mask
            # the MaskedRule's parts (each repeat's, side by side) of the masked counts
            # at hand, not of another product
            row.append(defined_parts(rule, w, 0, size))
            if r in ins:
                ins[r].append((preps[r].feature_sums(preps[r].weights(w)),
                               preps[r].config_free_sums(w)))
        defined.append(np.concatenate(row, axis=1))
    full = {}
    for r in ins:
        w = mask[r : r + 1]  # unit weights times the mask
        full[r] = (preps[r].feature_sums(preps[r].weights(w)), preps[r].config_free_sums(w))
    return {"in": {r: _joined(got) for r, got in ins.items()}, "full": full,
            "defined": np.concatenate(defined)}


def _joined(batches):
    """The ``(fsums list, gsums)`` of batches of bootstraps, joined in bootstrap order."""
    fs, gs = zip(*batches)
    return [np.concatenate(f, axis=0) for f in zip(*fs)], np.concatenate(gs)


def run_dropping_sums(parts, blocks_in, metric, class_coord, blocks, seed, plans, n_boot,
                      counts=None):
    """:func:`dropping_sums` of each sample block of a run (see :func:`run_sums`);
    ``blocks_in`` their ``(target, available)``."""
    return [dropping_sums(p, b, metric, class_coord, j, size, seed, plans, n_boot, c)
            for (j, size, p, c), b in zip(_run_parts(parts, blocks, counts), blocks_in)]


def finish_dropping(total, metric, n_rep):
    """``(full (c,), scores (n_boot, c), definedness parts)`` of a group of
    configurations from its summed :func:`dropping_sums`: per repeat the metric of the
    sums, then their mean over repeats — as :meth:`DroppingScorer.scores`. Every repeat
    has a sample available somewhere (the dispatcher sends the test here only then)."""
    m = get_metric(metric)

    def scores(part):
        with np.errstate(divide="ignore", invalid="ignore"):
            return mean_over_repeats([m.combine(*part[r])[:, :, 0] for r in range(n_rep)])

    return scores(total["full"])[0], scores(total["in"]), total["defined"]


def fold_block_sums(parts, block, metric, class_coord, j, size, n_rows, centers):
    """The sums per fold row (:meth:`~bbc_dask.metrics._Pointwise.fold_sums`) of sample
    block ``j`` (``size`` samples; ``block``: its target and each sample's fold row per
    repeat) of a group of configurations (``parts``, in order), ``centers`` each row's
    mean target (R²) or None: ``(fsums list of (n_rows, c), gsums (n_rows, n_g))``."""
    target, at = block
    prep = _stacked(parts, target, get_metric(metric), class_coord, size)
    return prep.fold_sums(at, n_rows, centers=centers)


def finish_fold_sums(total, metric):
    """Fold scores (n_rows, c) of a group's summed :func:`fold_block_sums`."""
    return get_metric(metric).fold_scores(*total)
