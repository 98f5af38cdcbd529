"""The tasks over blocks of configurations holding every sample (ranking metrics, which
sort whole columns; BBC-F's fold matrix; a study's pooled scores): a task prepares a
block once and scores it against the counts of a group of seed blocks, drawn once per
group on the cluster (:func:`~._task_base.plan_group`), not per chunk. For each
bootstrap the winner of a block, its in-bag and its out-of-bag score are exact
per-column quantities, so merging the blocks' winners by (higher score, then lower
configuration index) gives the whole matrix's winner.

NumPy and zarr only: importing it loads no Dask."""
from __future__ import annotations

import numpy as np

from .. import _validation
from ..metrics import Target, get_metric
from ..stats import (SEED_BLOCK, DroppingScorer, IncompleteScorers, availability_groups,
                     fold_matrix, full_scores, plan_counts, select)
from ._task_base import _encode, _load, _root, prepare_inputs

__all__ = ["chunk_fold_matrix", "chunk_pooled", "held", "merge_winners", "prepare_and_score",
           "prepare_and_score_incomplete", "prepare_block", "prepare_dropping",
           "prepare_incomplete", "score_block", "score_dropping", "score_incomplete"]


def prepare_block(part, target, metric, class_coord, sample_block):
    """``(prepared metric, full scores (c,))`` of a block of configurations holding
    every sample (read once, encoded once, sorted once)."""
    m = get_metric(metric)
    enc = _encode(part, target, m, class_coord)
    prep = m.prepare(target, enc, sample_block)
    del enc  # the prepared features hold what the metric needs
    return prep, full_scores(prep, prep.n_samples)


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


def prepare_and_score(part, target, metric, class_coord, sample_block, groups, offset,
                      n_boot, redraw):
    """:func:`prepare_block` and :func:`score_block` in one task, returning ``(winners,
    full scores)``: a block scored once (its task draws the counts) is then held by
    that task alone, not kept on a worker while it waits for its scoring."""
    prepared = prepare_block(part, target, metric, class_coord, sample_block)
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


def prepare_incomplete(part, y, have, metric, pos_label, class_coord=None):
    """The :class:`~bbc_dask.stats.IncompleteScorers` of a block of configurations
    (every sample), ``have`` (N, c, R) the cells they predicted."""
    have = np.asarray(have, dtype=bool)
    arr = np.asarray(_load(part))
    return IncompleteScorers(arr, y, have, availability_groups(have), metric, pos_label,
                             class_coord)


def score_incomplete(scorers, groups, offset, n_boot, redraw=None):
    """Each bootstrap's winner in a block, ``(best, config, oob)`` over the seed blocks of
    ``groups`` (lists of ``(plan, counts)``), bootstraps ``0..n_boot-1``; ``config``
    global (``offset`` added; -1 where none is defined in bag). Counts not kept are drawn
    here from ``redraw = (seed, stream, rule)``."""
    best, cfg, oob = [], [], []
    for plan, counts in _counts_of(groups, redraw):
        b, c, o = scorers.winners(counts[: n_boot - plan.k * SEED_BLOCK])
        best.append(b)
        cfg.append(np.where(c >= 0, c + offset, -1))
        oob.append(o)
    return np.concatenate(best), np.concatenate(cfg), np.concatenate(oob)


def prepare_and_score_incomplete(part, y, have, metric, pos_label, groups, offset, n_boot,
                                 redraw):
    """:func:`prepare_incomplete` and :func:`score_incomplete` in one task (the counts
    drawn there), as :func:`~._blocks.prepare_and_score`."""
    return score_incomplete(prepare_incomplete(part, y, have, metric, pos_label), groups,
                            offset, n_boot, redraw)


def held(value):
    """``value`` itself: submitted as a task (``client.submit(held, value)``), data the
    tasks share stays recomputable — the scheduler holds the task and runs it again if
    the worker holding its result is lost, where scattered data is gone with the worker
    and every task needing it is cancelled."""
    return value


def chunk_fold_matrix(pred, y, folds, metric, pos_label, class_coord=None, sample_block=None):
    """The BBC-F fold × configuration score matrix of one chunk holding every sample,
    (R*K, c); ``sample_block``: the client's :data:`~bbc_dask.metrics.SAMPLE_BLOCK`."""
    m, target, enc = prepare_inputs(pred, y, metric, pos_label, class_coord)
    f = _validation.as_folds(folds, enc.shape[0], enc.shape[2])
    return fold_matrix(m, target, enc, f, sample_block)[0]


def chunk_pooled(pred, y, metric, pos_label, class_coord=None, present=None):
    """Pooled scores (c, R) of a chunk: the metric on every sample's out-of-sample
    prediction, per repeat — the numbers :func:`~bbc_dask.naive_cvt` averages over repeats to
    select (the same computation, so the same bits).

    ``present`` (N, R) bool, for repeats that leave samples out (nested CV's inner
    partitions): repeat r is scored on its present samples alone, and a configuration
    whose predictions there are not all finite (not run yet) gets NaN."""
    if present is not None:
        arr = np.asarray(_load(pred), dtype=np.float64)
        y = np.asarray(y)
        out = np.full(arr.shape[1:3], np.nan)
        for r in range(arr.shape[2]):
            rows = np.asarray(present[:, r], dtype=bool)
            part = arr[rows][:, :, r:r + 1]
            ok = np.isfinite(part).reshape(part.shape[0], part.shape[1], -1).all(axis=(0, 2))
            if ok.any():
                out[ok, r] = chunk_pooled(part[:, ok], y[rows], metric, pos_label, class_coord)[:, 0]
        return out
    m = get_metric(metric)
    if m.prediction == "labels":
        m, target, enc = prepare_inputs(pred, y, metric, pos_label, class_coord)
    else:  # the engine's own scores or probabilities: no user-input heuristics
        enc = np.asarray(_load(pred), dtype=np.float64)
        if m.is_classification and np.asarray(y).dtype.kind in "iu":
            # the stored class codes 0..K-1 with the study's positive code: already a
            # target (no np.unique over every sample of every block)
            n_cls = enc.shape[3] if enc.ndim == 4 else max(2, int(np.max(y)) + 1)
            target = Target.of_codes(y, n_cls, pos_label)
        else:
            target = _validation.as_target(y, m, pos_label=pos_label)
    return m.scores_once(target, enc)
