"""The tasks over pairs of sample tiles (ranking metrics beyond the samples a task may
hold). A ranking metric's statistics are integer sums over pairs of samples, S(X) =
sum over i, j in X of f(i, j) w_i w_j. Over tiles X_1..X_t of the samples,
S = sum_{a<b} S(X_a u X_b) - (t - 2) sum_a S(X_a): exact in integers, so a task holds
the samples of two tiles at most, whatever N, and the scores are the in-memory bits.
NumPy and zarr only: importing it loads no Dask."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..metrics import get_metric
from ..stats import SEED_BLOCK, fill_counts, fill_unavailable, mean_over_repeats, select
from ._task_base import _encode, _load, _root

__all__ = ["add_tiles", "finish_tile_dropping", "finish_tile_folds", "finish_tile_oob",
           "finish_tiles", "tile_dropping_sums", "tile_fold_sums", "tile_sums"]


def _joined_target(targets):
    """The target of the samples of ``targets`` (subsets of one target), in order."""
    if len(targets) == 1:
        return targets[0]
    return dataclasses.replace(targets[0], **{
        f: np.concatenate([getattr(t, f) for t in targets])
        for f in ("codes", "values", "time", "event") if getattr(targets[0], f) is not None})


def tile_sums(tiles, targets, metric, class_coord, seed, stream, plans, n_boot, weight,
              oob=False):
    """``weight`` x the pair sums (:meth:`~bbc_dask.metrics._RocAuc.pair_sums_t`) of the
    samples of one or two tiles — ``tiles``: ``(blocks, parts)``, the tile's sample
    blocks ``(j, lo, hi)`` and its parts (a group of configurations, in order);
    ``targets`` theirs — for the bootstraps ``0..n_boot-1`` of ``plans``, each seed
    block's counts drawn here, block by block, from the blocks' own generators (or their
    out-of-bag indicators, with ``oob``). Returns ``{"num": (M, B), "den": (k, B)}`` int64,
    and in bag ``"full"``: the pair sums of unit weights. The tiles' predictions are
    read, encoded and sorted once; the counts are held one seed block at a time."""
    prep = _tile_prep(tiles, targets, get_metric(metric), class_coord)
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


def _tile_prep(tiles, targets, m, class_coord):
    """The ranking metric ``m`` prepared on one or two tiles' samples (``tiles``: ``(blocks,
    parts)``; ``targets`` theirs): read, encoded and sorted once."""
    targets = list(targets)
    enc = [np.concatenate([_encode(p, t, m, class_coord) for p in parts], axis=1)
           for (_, parts), t in zip(tiles, targets)]
    enc = enc[0] if len(enc) == 1 else np.concatenate(enc, axis=0)
    return m.prepare(_joined_target(targets), enc)


def tile_fold_sums(tiles, blocks_in, metric, class_coord, n_rows, weight):
    """``weight`` x the pair sums of one or two tiles (see :func:`tile_sums`) for the
    fold rows' 0/1 weights: ``blocks_in`` holds each tile's target and each sample's fold
    row per repeat (see :func:`~bbc_dask.stats.fold_rows`). Returns ``{"num": (M,
    n_rows), "den": (k, n_rows)}`` int64 — every repeat's columns for every row; a row
    keeps its own repeat's (:func:`finish_tile_folds`)."""
    prep = _tile_prep(tiles, [b[0] for b in blocks_in], get_metric(metric), class_coord)
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


def tile_dropping_sums(tiles, blocks_in, metric, class_coord, seed, plans, n_boot, weight):
    """The dropping test's :func:`tile_sums`: per repeat ``r`` the pair sums of the
    weights ``counts x available[:, r]`` (as :class:`~bbc_dask.stats.DroppingScorer` weighs each repeat),
    and of unit weights times the mask; ``blocks_in`` each tile's ``(target, available
    (size, R) bool)``. A repeat's unavailable predictions take the values of the first
    available in these tiles (:func:`~bbc_dask.stats.fill_unavailable`: weighed zero, any valid value
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
            preps[r] = m.prepare(target, _encode(x, target, m, class_coord))
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
