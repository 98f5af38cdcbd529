"""Per-task pieces of the chunked bootstraps (pure NumPy; no Dask).

Two ways to split a cube, both equal to the in-memory result bit for bit:

- **sample blocks** (pointwise metrics): a task holds one sample block of a group of
  configurations, draws that block's bootstrap counts alone (:func:`block_counts`) and
  returns the feature sums of the block (:func:`block_sums`); the sums of the blocks are
  added in block order (:func:`add_sums`), as the in-memory kernel adds them, and turned
  into scores, winners and out-of-bag scores (:func:`finish_sums`). A task's memory does
  not depend on the number of samples. A study's cube, stored by fold, is read in runs of
  consecutive blocks (:func:`run_sums`, :func:`run_oob_sums`): the same sums of each
  block, added by :func:`add_run` in the same order. The dropping test of a pointwise
  metric goes the same way (:func:`dropping_sums`, :func:`finish_dropping`): per repeat,
  the counts masked by the samples available there.
- **configuration blocks** (ranking metrics, which sort whole columns): a task prepares
  every sample of a block of configurations once
  (:func:`prepare_block`) and scores it against the counts of a group of seed blocks,
  drawn once per group on the cluster (:func:`plan_group`), not per chunk
  (:func:`score_block`).

For each bootstrap the winner of a group of configurations, its in-bag score and its
out-of-bag score are exact per-column quantities, so merging group winners by (higher
score, then lower configuration index) gives the whole matrix's winner.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .. import _validation as V
from ..metrics import get_metric
from ..stats._bbc import _full_scores
from ..stats._inputs import prepare_inputs as _prepare
from ..stats._bootstrap import (SEED_BLOCK, block_counts, defined_parts, fill_counts,
                                first_plan, plan_counts, plan_seed_block)
from ..stats._dropping import DroppingScorer, fill_unavailable, mean_over_repeats
from ..stats._winner import select

#: Bootstraps multiplied at once in a sample-block task (one product of this many rows):
#: their float32 weights take BATCH x 32,768 x 4 bytes (8 MiB), large enough for BLAS.
BATCH = 64

__all__ = ["BATCH", "add_run", "add_sums", "add_tiles", "block_sums",
           "chunk_fold_matrix", "chunk_pooled", "dropping_sums", "finish_dropping",
           "finish_fold_sums", "finish_oob", "finish_sums", "finish_tile_dropping",
           "finish_tile_folds", "finish_tile_oob", "finish_tiles", "first_plans",
           "fold_block_sums", "held", "merge_winners", "oob_sums", "plan_group",
           "prepare_and_score", "prepare_block", "run_dropping_sums",
           "run_oob_sums", "run_sums", "score_block", "tile_dropping_sums", "tile_fold_sums",
           "tile_sums"]


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


def score_block(prepared, groups, offset, n_boot, redraw=None):
    """Each bootstrap's winner in a configuration block: ``(best, config, oob)`` over the
    seed blocks of ``groups`` (lists of ``(plan, counts)``), in order, bootstraps
    ``0..n_boot-1`` only; ``config`` global (``offset`` added). Counts that were not kept
    (None) are drawn here, one seed block at a time, from ``redraw = (seed, stream,
    rule)``."""
    prep = prepared[0]
    best, cfg, oob = [], [], []
    for group in groups:
        for plan, counts in group:
            rows = n_boot - plan.k * SEED_BLOCK
            if hasattr(prep, "scores_t"):
                s, w, o = _ranking_scores(prep, plan, counts, rows, redraw)
            else:
                counts = (_redraw(redraw, plan) if counts is None else counts)[:rows]
                s = prep.scores(counts).mean(axis=2)
                w = select(s)
                o = prep.winner_scores(counts, w, oob=True).mean(axis=1)
            best.append(s[np.arange(s.shape[0]), w])
            cfg.append(w + offset)
            oob.append(o)
            del counts
    return np.concatenate(best), np.concatenate(cfg), np.concatenate(oob)


def _ranking_scores(prep, plan, counts, rows, redraw):
    """``(in-bag scores (rows, c), winners, out-of-bag scores (rows,))`` of a ranking
    metric from counts laid out samples first, the layout its kernels read: drawn so
    (no transposed copy held beside them), or copied from shared counts. The
    out-of-bag indicators then replace the counts in place."""
    if counts is None:
        c = np.ascontiguousarray(_redraw(redraw, plan, samples_first=True)[:, :rows])
    else:
        # always a copy, as it is overwritten below: one row's transpose is contiguous,
        # and ascontiguousarray would return a view of the counts other tasks share
        c = counts[:rows].T.copy()
    s = prep.scores_t(c).mean(axis=2)
    w = select(s)
    if c.dtype == np.uint8:
        np.equal(c, 0, out=c.view(np.bool_))
    else:
        c = (c == 0).view(np.uint8)
    return s, w, prep.winner_scores_t(c, w).mean(axis=1)


def prepare_and_score(part, target, metric, class_coord, sample_block, caller, groups, offset,
                      n_boot, redraw):
    """:func:`prepare_block` and :func:`score_block` in one task, returning ``(winners,
    full scores)``: a block scored once (its task draws the counts) is then held by
    that task alone, not kept on a worker while it waits for its scoring."""
    prepared = prepare_block(part, target, metric, class_coord, sample_block, caller)
    return score_block(prepared, groups, offset, n_boot, redraw), prepared[1]


def merge_winners(a, b):
    """Per bootstrap, the better of two chunk winners ``(best, config, *more)``: higher
    in-bag score, then the lower configuration index (the whole-matrix tie rule); the
    other arrays (e.g. the winner's out-of-bag score) follow the winner."""
    ba, ca, *oa = a
    bb, cb, *ob = b
    a_first = ca <= cb  # each pair in configuration order: select's tie rule applies as is
    pairs = np.stack([np.where(a_first, ba, bb), np.where(a_first, bb, ba)], axis=1)
    w = select(pairs)  # -1 (an undefined score) keeps a, as a comparison with NaN does
    take_b = np.where(a_first, w == 1, w == 0)
    return tuple(np.where(take_b, x, y) for x, y in zip((bb, cb, *ob), (ba, ca, *oa)))


def prepare_dropping(part, y, available, metric, pos_label, class_coord=None):
    """The dropping test's scorer of a block of configurations (every sample)."""
    return DroppingScorer(_load(part), y, available, metric, pos_label, class_coord)


def _redraw(redraw, plan, samples_first=False):
    """The counts of ``plan`` drawn again from ``redraw = (seed, stream, rule)``."""
    seed, stream, rule = redraw
    return plan_counts(_root(seed), stream, plan, getattr(rule, "both", rule), samples_first)


def _counts_of(groups, redraw):
    """Each ``(plan, counts)`` of ``groups`` in order, counts that were not kept (None)
    drawn again from ``redraw`` (see :func:`_redraw`), one seed block at a time."""
    for group in groups:
        for plan, counts in group:
            yield plan, _redraw(redraw, plan) if counts is None else counts


def score_dropping(scorer, groups, redraw=None):
    """``(full (c,), scores (B, c))`` of a configuration block over the seed blocks of
    ``groups`` (counts not kept are drawn here: see :func:`score_block`)."""
    return scorer.full, np.concatenate([scorer.scores(c) for _, c in _counts_of(groups, redraw)])


# -------------------------------------------------------------------- sample blocks
def _stacked(parts, target, m, class_coord, size, caller):
    """One prepared metric over every configuration of ``parts`` (read, encoded and
    prepared one part at a time; their features copied side by side)."""
    def prep(part):
        return m.prepare(target, _encode(part, target, m, class_coord, caller), size)

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
    """The counts of sample block ``j`` in the batches of :func:`_block_batches`, as a
    list: drawn once and shared by every group's task of the block and by the
    out-of-bag pass, while every block's counts fit in the dispatcher's COUNTS_BYTES."""
    out = list(_block_batches(_root(seed), stream, plans, j, n_boot))
    for c in out:  # shared by tasks in this process too: none may write into them
        c.flags.writeable = False
    return out


def _batches(counts, seed, stream, plans, j, n_boot):
    """The batches ``counts`` (:func:`block_batches`), or drawn here if None."""
    return _block_batches(_root(seed), stream, plans, j, n_boot) if counts is None else iter(counts)


def block_sums(parts, target, metric, class_coord, j, size, seed, stream, plans, n_boot,
               caller="bbc", counts=None):
    """The in-bag feature sums of sample block ``j`` (``size`` samples, whose target is
    ``target``: :meth:`~bbc_dask.metrics.Target.subset`) of a group of configurations
    (``parts``: its configuration chunks, in order), for every bootstrap of ``plans``,
    and for unit weights.

    Returns ``{"in", "full": (fsums list of (B, c, R), gsums (B, n_g)), "defined":
    the block's definedness parts (B, k)}`` (see :func:`first_plans`). The block's
    counts are drawn here from the block's own generators (or are ``counts``, of
    :func:`block_batches`); the parts are read, encoded
    and prepared one at a time into one feature matrix (a group is sized for it), which
    the weights of :data:`BATCH` bootstraps at a time multiply in one product. Out of
    bag only the winners are scored (:func:`oob_sums`), as the in-memory kernel does."""
    m = get_metric(metric)
    prep = _stacked(parts, target, m, class_coord, size, caller)
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
             caller="bbc", counts=None):
    """The out-of-bag feature sums of sample block ``j`` of each bootstrap's winner:
    ``parts`` hold the distinct winners (in order), ``pick[b]`` is bootstrap ``b``'s
    among them (``b < n_boot = len(pick)``). Returns ``(fsums list of (B, 1, R), gsums (B, n_g))`` — the winners'
    columns of the very products :meth:`~bbc_dask.metrics._Pointwise.winner_scores`
    adds block by block. ``counts``: as for :func:`block_sums`."""
    m = get_metric(metric)
    prep = _stacked(parts, target, m, class_coord, size, caller)
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
             caller="bbc", counts=None):
    """:func:`block_sums` of each sample block ``(j, lo, hi)`` of a run of consecutive
    ``blocks`` (``targets`` theirs; ``counts`` theirs, or None), whose rows ``parts``
    hold: read once for the run (a read decodes the stored chunks holding its slots). Returns
    their list, in order."""
    return [block_sums(p, t, metric, class_coord, j, size, seed, stream, plans, n_boot, caller, c)
            for (j, size, p, c), t in zip(_run_parts(parts, blocks, counts), targets)]


def run_oob_sums(parts, targets, metric, class_coord, blocks, seed, stream, plans, pick,
                 caller="bbc", counts=None):
    """:func:`oob_sums` of each sample block of a run (see :func:`run_sums`)."""
    return [oob_sums(p, t, metric, class_coord, j, size, seed, stream, plans, pick, caller, c)
            for (j, size, p, c), t in zip(_run_parts(parts, blocks, counts), targets)]


def add_run(acc, sums):
    """``acc`` (None: nothing yet) plus the sums of a run's blocks, one at a time in
    block order (:func:`add_sums`): the additions of a block-by-block chain."""
    for s in sums:
        acc = s if acc is None else add_sums(acc, s)
    return acc


def _small(counts):
    """Counts as uint8 when they fit (a quarter of int32: held while the batch is used)."""
    return counts.astype(np.uint8) if counts.size and counts.max() <= 255 else counts


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


# ------------------------------------------------- the dropping test by sample blocks
def _dropping_preps(parts, target, avail, m, class_coord, size, caller):
    """Per repeat, the prepared metric of a sample block of a group's configurations
    (``parts``, every repeat) on that repeat alone, as :class:`DroppingScorer` prepares
    each repeat, its unavailable rows filled as there (:func:`fill_unavailable`); None
    where no sample of the block is available in the repeat (its weights there are all
    zero: the in-memory sums add zeros). The parts are read one at a time (as
    :func:`_stacked` reads them); each repeat's are stacked once all are prepared, and
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
            got.append(m.prepare(target, _encode(x, target, m, class_coord, caller), size))
        del data
    return [None if not got else got[0] if len(got) == 1 else
            m.stacked((got.pop(0) for _ in range(len(got))), sum(p.n_configs for p in got))
            for got in prepared]


def dropping_sums(parts, block, metric, class_coord, j, size, seed, plans, n_boot,
                  caller="dropping_test", counts=None):
    """The dropping test's in-bag feature sums of sample block ``j`` (``size`` samples;
    ``block = (target, available (size, R) bool)`` of its samples) of a group of
    configurations, per repeat ``r`` with the weights ``counts x available[:, r]`` (the
    products :class:`DroppingScorer` adds block by block), and for unit weights.

    Returns ``{"in": {r: (fsums, gsums)}, "full": {r: ...}, "defined": the block's
    parts of the :class:`~bbc_dask.stats._dropping.MaskedRule` (B, k·R)}``; a repeat with
    no sample available in the block is left out. Counts as for :func:`block_sums`
    (stream ``"dropping"``)."""
    target, avail = block
    m = get_metric(metric)
    preps = _dropping_preps(parts, target, avail, m, class_coord, size, caller)
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
                      caller="dropping_test", counts=None):
    """:func:`dropping_sums` of each sample block of a run (see :func:`run_sums`);
    ``blocks_in`` their ``(target, available)``."""
    return [dropping_sums(p, b, metric, class_coord, j, size, seed, plans, n_boot, caller, c)
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


# --------------------------------------------------------------------- sample tiles
# A ranking metric's statistics are integer sums over pairs of samples, S(X) =
# sum over i, j in X of f(i, j) w_i w_j. Over tiles X_1..X_t of the samples,
# S = sum_{a<b} S(X_a u X_b) - (t - 2) sum_a S(X_a): exact in integers, so a task holds
# the samples of two tiles at most, whatever N, and the scores are the in-memory bits.

def _joined_target(targets):
    """The target of the samples of ``targets`` (subsets of one target), in order."""
    if len(targets) == 1:
        return targets[0]
    return dataclasses.replace(targets[0], **{
        f: np.concatenate([getattr(t, f) for t in targets])
        for f in ("codes", "values", "time", "event") if getattr(targets[0], f) is not None})


def tile_sums(tiles, targets, metric, class_coord, seed, stream, plans, n_boot, weight,
              oob=False, caller="bbc"):
    """``weight`` x the pair sums (:meth:`~bbc_dask.metrics._RocAuc.pair_sums_t`) of the
    samples of one or two tiles — ``tiles``: ``(blocks, parts)``, the tile's sample
    blocks ``(j, lo, hi)`` and its parts (a group of configurations, in order);
    ``targets`` theirs — for the bootstraps ``0..n_boot-1`` of ``plans``, each seed
    block's counts drawn here, block by block, from the blocks' own generators (or their
    out-of-bag indicators, with ``oob``). Returns ``{"num": (M, B), "den": (k, B)}`` int64,
    and in bag ``"full"``: the pair sums of unit weights. The tiles' predictions are
    read, encoded and sorted once; the counts are held one seed block at a time."""
    prep = _tile_prep(tiles, targets, get_metric(metric), class_coord, caller)
    nums, dens = [], []
    for w in _tile_counts([b for bl, _ in tiles for b in bl], seed, stream, plans, n_boot):
        num, den = prep.pair_sums_t((w == 0).view(np.uint8) if oob else w)
        nums.append(num)
        dens.append(den)
    out = {"num": weight * np.concatenate(nums, axis=1), "den": weight * np.concatenate(dens, axis=1)}
    if not oob:
        ones = np.ones((prep.n_samples, 1), dtype=np.uint8)
        out["full"] = tuple(weight * a for a in prep.pair_sums_t(ones))
    return out


def _tile_prep(tiles, targets, m, class_coord, caller):
    """The ranking metric ``m`` prepared on one or two tiles' samples (``tiles``: ``(blocks,
    parts)``; ``targets`` theirs): read, encoded and sorted once."""
    targets = list(targets)
    enc = [np.concatenate([_encode(p, t, m, class_coord, caller) for p in parts], axis=1)
           for (_, parts), t in zip(tiles, targets)]
    enc = enc[0] if len(enc) == 1 else np.concatenate(enc, axis=0)
    return m.prepare(_joined_target(targets), enc)


def tile_fold_sums(tiles, blocks_in, metric, class_coord, n_rows, weight, caller="bbc_f"):
    """``weight`` x the pair sums of one or two tiles (see :func:`tile_sums`) for the
    fold rows' 0/1 weights: ``blocks_in`` holds each tile's target and each sample's fold
    row per repeat (see :func:`~bbc_dask.stats._bbc.fold_rows`). Returns ``{"num": (M,
    n_rows), "den": (k, n_rows)}`` int64 — every repeat's columns for every row; a row
    keeps its own repeat's (:func:`finish_tile_folds`)."""
    prep = _tile_prep(tiles, [b[0] for b in blocks_in], get_metric(metric), class_coord, caller)
    at = np.concatenate([b[1] for b in blocks_in])
    w = np.zeros((at.shape[0], n_rows), dtype=np.uint8)
    for r in range(at.shape[1]):
        w[np.arange(at.shape[0]), at[:, r]] = 1
    num, den = prep.pair_sums_t(w)
    return {"num": weight * num, "den": weight * den}


def finish_tile_folds(total, metric, n_configs, n_repeats, n_sub, row_repeat):
    """Fold scores (n_rows, c) of a group of configurations from its summed
    :func:`tile_fold_sums`: row ``i`` scored on its repeat ``row_repeat[i]``'s columns —
    the bits of the in-memory fold scores (exact integers, the same finishing)."""
    fam = get_metric(metric).pairwise
    s = fam.finish_pairs(total["num"], total["den"], n_configs, n_repeats, n_sub)
    return s[np.arange(len(row_repeat)), :, np.asarray(row_repeat)]


def _tile_counts(blocks, seed, stream, plans, n_boot):
    """The counts of the sample ``blocks`` ``(j, lo, hi)`` (in this order) for each seed
    block of ``plans``, samples first ``(n, rows)`` (uint8, int32 if a count exceeds 255;
    rows: its bootstraps below ``n_boot``), drawn one seed block at a time from each
    block's own generators."""
    root = _root(seed)
    n = sum(hi - lo for _, lo, hi in blocks)
    for plan in plans:
        w = np.empty((n, SEED_BLOCK), dtype=np.uint8)
        at = 0
        for j, lo, hi in blocks:
            w = fill_counts(w, root, stream, plan, j, at, at + hi - lo, samples_first=True)
            at += hi - lo
        yield np.ascontiguousarray(w[:, : min(SEED_BLOCK, n_boot - plan.k * SEED_BLOCK)])


def add_tiles(a, b):
    """The sum of two :func:`tile_sums` (or :func:`tile_dropping_sums`) results: int64,
    exact in any order; a repeat one of them lacks (none of its samples available there)
    adds nothing."""
    if isinstance(a, dict):
        return {k: add_tiles(a[k], b[k]) if k in a and k in b else a[k] if k in a else b[k]
                for k in list(a) + [k for k in b if k not in a]}
    if isinstance(a, tuple):
        return tuple(add_tiles(x, y) for x, y in zip(a, b))
    return a + b


def finish_tiles(total, metric, offset, n_configs, n_repeats, n_sub):
    """Winners ``(best, config)`` (``config`` global) and full scores (c,) of a group of
    configurations from its summed :func:`tile_sums`: the in-memory scores' bits."""
    fam = get_metric(metric).pairwise
    s = fam.finish_pairs(total["num"], total["den"], n_configs, n_repeats, n_sub).mean(axis=2)
    w = select(s)
    full = fam.finish_pairs(*total["full"], n_configs, n_repeats, n_sub)[0].mean(axis=1)
    return (s[np.arange(s.shape[0]), w], w + offset), full


def finish_tile_oob(num, den, pick, metric, n_repeats, n_sub):
    """The winners' out-of-bag scores (B,): ``num`` (D x per, B) summed over the distinct
    winners' columns, ``pick[b]`` bootstrap ``b``'s winner among them."""
    fam = get_metric(metric).pairwise
    n_boot = num.shape[1]
    per = n_repeats * fam.columns(n_sub)
    mine = num.reshape(-1, per, n_boot)[np.asarray(pick), :, np.arange(n_boot)]  # (B, per)
    return fam.finish_winner_pairs(mine, den, n_repeats, n_sub).mean(axis=1)


def tile_dropping_sums(tiles, blocks_in, metric, class_coord, seed, plans, n_boot, weight,
                       caller="dropping_test"):
    """The dropping test's :func:`tile_sums`: per repeat ``r`` the pair sums of the
    weights ``counts x available[:, r]`` (as :class:`DroppingScorer` weighs each repeat),
    and of unit weights times the mask; ``blocks_in`` each tile's ``(target, available
    (size, R) bool)``. A repeat's unavailable predictions take the values of the first
    available in these tiles (:func:`fill_unavailable`: weighed zero, any valid value
    adds nothing); a repeat with none available here is left out (its sums are zero).
    Returns ``{"num": {r: (c x n_sub, B)}, "den": {r: (k, B)}, "full": {r: (num, den)}}``."""
    m = get_metric(metric)
    target = _joined_target([t for t, _ in blocks_in])
    avail = np.concatenate([a for _, a in blocks_in])
    data = np.concatenate([np.concatenate([np.asarray(_load(p)) for p in parts], axis=1)
                           for _, parts in tiles])
    preps = {}
    for r in range(avail.shape[1]):
        if avail[:, r].any():
            x = data[:, :, r : r + 1].copy()
            fill_unavailable(x, avail[:, r])
            preps[r] = m.prepare(target, _encode(x, target, m, class_coord, caller))
    del data
    out = {"num": {r: [] for r in preps}, "den": {r: [] for r in preps}}
    for w in _tile_counts([b for bl, _ in tiles for b in bl], seed, "dropping", plans, n_boot):
        for r, prep in preps.items():
            num, den = prep.pair_sums_t(w * avail[:, r : r + 1].astype(w.dtype))
            out["num"][r].append(num)
            out["den"][r].append(den)
    out = {k: {r: weight * np.concatenate(v, axis=1) for r, v in part.items()}
           for k, part in out.items()}
    out["full"] = {r: tuple(weight * a for a in prep.pair_sums_t(
        np.ascontiguousarray(avail[:, r : r + 1], dtype=np.uint8))) for r, prep in preps.items()}
    return out


def finish_tile_dropping(total, metric, n_configs, n_rep, n_sub):
    """``(full (c,), scores (B, c))`` of a group of configurations from its summed
    :func:`tile_dropping_sums`: per repeat the metric of the sums, then their mean over
    repeats in repeat order — as :meth:`DroppingScorer.scores`."""
    fam = get_metric(metric).pairwise

    def scores(num, den):
        return mean_over_repeats([fam.finish_pairs(num[r], den[r], n_configs, 1, n_sub)[:, :, 0]
                                  for r in range(n_rep)])

    full = {k: {r: total["full"][r][i] for r in total["full"]} for i, k in enumerate(("num", "den"))}
    return scores(full["num"], full["den"])[0], scores(total["num"], total["den"])


# -------------------------------------------------------------------------- others
def held(value):
    """``value`` itself: submitted as a task (``client.submit(held, value)``), data the
    tasks share stays recomputable — the scheduler holds the task and runs it again if
    the worker holding its result is lost, where scattered data is gone with the worker
    and every task needing it is cancelled."""
    return value


def chunk_fold_matrix(pred, y, folds, metric, pos_label, class_coord=None, sample_block=None):
    """The BBC-F fold × configuration score matrix of one chunk holding every sample,
    (R*K, c); ``sample_block``: the client's :data:`~bbc_dask.metrics.SAMPLE_BLOCK`."""
    from ..stats._bbc import _fold_matrix

    m, target, enc = prepare_inputs(pred, y, metric, pos_label, "bbc_f", class_coord)
    f = V.as_folds(folds, enc.shape[0], enc.shape[2], "bbc_f")
    return _fold_matrix(m, target, enc, f, "bbc_f", sample_block)[0]


def fold_block_sums(parts, block, metric, class_coord, j, size, n_rows, centers, caller="bbc_f"):
    """The sums per fold row (:meth:`~bbc_dask.metrics._Pointwise.fold_sums`) of sample
    block ``j`` (``size`` samples; ``block``: its target and each sample's fold row per
    repeat) of a group of configurations (``parts``, in order), ``centers`` each row's
    mean target (R²) or None: ``(fsums list of (n_rows, c), gsums (n_rows, n_g))``."""
    target, at = block
    prep = _stacked(parts, target, get_metric(metric), class_coord, size, caller)
    return prep.fold_sums(at, n_rows, centers=centers)


def finish_fold_sums(total, metric):
    """Fold scores (n_rows, c) of a group's summed :func:`fold_block_sums`."""
    return get_metric(metric).fold_scores(*total)


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
