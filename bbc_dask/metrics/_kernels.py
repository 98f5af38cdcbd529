"""Compiled bootstrap kernels (numba). Pure array code: no Dask, no scikit-learn.

Layout conventions shared by every kernel:

- ``counts`` is a ``(B, N)`` C-contiguous ``int32`` array: how many times sample ``i`` is
  drawn into bootstrap ``b``. The all-configurations kernels (``*_inbag``) take its
  transpose ``(N, B)`` instead, so that their inner loops run over the bootstrap axis in
  contiguous memory and vectorise; the per-bootstrap kernels read one contiguous row.
- Out-of-bag weights are never materialised: a sample is out of bag in ``b`` when
  ``counts[b, i] == 0`` and then has weight 1.
- Ranking kernels accumulate *twice* the statistic in integers (a tie counts 1 instead of
  1/2), so they are exact: the only rounding is the final division.
"""
from __future__ import annotations

import sys

import numpy as np

from .. import _tuning as tuning
from .._jit import njit, prange

__all__ = [
    "auc_inbag",
    "auc_sorted",
    "auc_winners",
    "cindex_inbag",
    "cindex_pairs",
    "cindex_winners",
    "feature_sums_winners",
    "fold_row_sums",
    "indicator_sums",
    "tie_starts",
    "weighted_sums",
]


@njit(cache=True)
def auc_sorted(neg, pos):
    """Twice the Mann-Whitney numerator of every row, unit weights: ``neg`` (M, n_neg) and
    ``pos`` (M, n_pos) each sorted ascending along rows. For each positive, the count of
    negatives below it plus the count below or equal — one merge pass, no search.
    Returns (M,) int64 (the integer :func:`auc_inbag` gives with all counts 1).

    Serial on purpose: it runs inside the engine's tasks, one per worker thread, where
    waking numba's thread pool cost more than the merge (docs/performance.md)."""
    n_rows, n_neg = neg.shape
    n_pos = pos.shape[1]
    out = np.zeros(n_rows, dtype=np.int64)
    for m in range(n_rows):
        below = 0
        upto = 0
        acc = 0
        for t in range(n_pos):
            p = pos[m, t]
            while below < n_neg and neg[m, below] < p:
                below += 1
            upto = max(upto, below)
            while upto < n_neg and neg[m, upto] <= p:
                upto += 1
            acc += below + upto
        out[m] = acc
    return out


def tie_starts(sorted_values: np.ndarray) -> np.ndarray:
    """``(M, N)`` bool: True where a sorted column starts a new group of equal values."""
    out = np.empty(sorted_values.shape, dtype=np.bool_)
    out[:, 0] = True
    np.not_equal(sorted_values[:, 1:], sorted_values[:, :-1], out=out[:, 1:])
    return out


# --------------------------------------------------------------------------- ROC AUC
# For one column sorted ascending, 2 * (AUC numerator) is
#   sum over positives i of 2 * w_i * (negative weight strictly below i's group)
#   + sum over tie groups g of P_g * N_g,
# the Mann-Whitney count with ties worth 1/2, which equals the trapezoidal area of the
# weighted ROC curve that scikit-learn computes.


@njit(parallel=True, cache=True, nogil=True)
def auc_inbag(counts, order, starts, pos, col_mask):
    """Twice the in-bag Mann-Whitney numerator of every column for every bootstrap.

    counts (N, B) int32 (transposed); order (M, N) int32 ascending sort of each column; starts (M, N)
    bool tie-group starts; pos (n_masks, N) bool positive-class masks; col_mask (M,) int64
    which mask each column uses. Returns (M, B) int64.
    """
    n, n_boot = counts.shape
    n_cols = order.shape[0]
    out = np.zeros((n_cols, n_boot), dtype=np.int64)
    for m in prange(n_cols):
        pm = pos[col_mask[m]]
        below = np.zeros(n_boot, dtype=np.int64)  # negative weight below current group
        acc = np.zeros(n_boot, dtype=np.int64)
        gp = np.zeros(n_boot, dtype=np.int64)
        gn = np.zeros(n_boot, dtype=np.int64)
        i = 0
        while i < n:
            j = i + 1
            while j < n and not starts[m, j]:
                j += 1
            if j == i + 1:  # no tie: the common case, one pass over B
                s = order[m, i]
                w = counts[s]
                if pm[s]:
                    for b in range(n_boot):
                        acc[b] += 2 * w[b] * below[b]
                else:
                    for b in range(n_boot):
                        below[b] += w[b]
            else:
                for k in range(i, j):
                    s = order[m, k]
                    w = counts[s]
                    if pm[s]:
                        for b in range(n_boot):
                            acc[b] += 2 * w[b] * below[b]
                            gp[b] += w[b]
                    else:
                        for b in range(n_boot):
                            gn[b] += w[b]
                for b in range(n_boot):
                    acc[b] += gp[b] * gn[b]
                    below[b] += gn[b]
                    gp[b] = 0
                    gn[b] = 0
            i = j
        out[m] = acc
    return out


@njit(cache=True, nogil=True)
def _auc_one(counts, b, order_m, starts_m, pm, oob):
    n = order_m.shape[0]
    below = 0
    acc = 0
    i = 0
    while i < n:
        j = i + 1
        while j < n and not starts_m[j]:
            j += 1
        gp = 0
        gn = 0
        for k in range(i, j):
            s = order_m[k]
            c = counts[b, s]
            w = (1 if c == 0 else 0) if oob else c
            if pm[s]:
                acc += 2 * w * below
                gp += w
            else:
                gn += w
        acc += gp * gn
        below += gn
        i = j
    return acc


@njit(parallel=True, cache=True, nogil=True)
def auc_winners(counts, order, starts, pos, col_mask, cols, oob):
    """Twice the Mann-Whitney numerator of column ``cols[b, t]`` in bootstrap ``b``.

    counts (B, N) int32. With ``oob`` the weights are the out-of-bag indicators. Returns (B, T) int64.
    """
    n_boot, n_sub = cols.shape
    out = np.zeros((n_boot, n_sub), dtype=np.int64)
    for b in prange(n_boot):
        for t in range(n_sub):
            m = cols[b, t]
            out[b, t] = _auc_one(counts, b, order[m], starts[m], pos[col_mask[m]], oob)
    return out


# ------------------------------------------------------------------ concordance index
# Harrell's C with risk scores (higher risk = earlier event), as scikit-survival's
# concordance_index_censored: event i is comparable with j when t_j > t_i, or t_j == t_i
# and j is censored. Samples are visited in decreasing (time, censored) key; a Fenwick tree
# over risk ranks holds the weight of the samples already visited (the comparable ones), so
# 2*concordant + tied for event i is w_i * (prefix(rank_i - 1) + prefix(rank_i)).


@njit(parallel=True, cache=True, nogil=True)
def cindex_inbag(counts, ranks, n_ranks, visit, vstarts, event):
    """Twice the in-bag concordance numerator of every column. Returns (M, B) int64.

    counts (N, B) int32 (transposed);
    ranks (M, N) int32 dense risk ranks from 1; n_ranks (M,) int64; visit (N,) visiting
    order; vstarts (N,) bool key-group starts in that order; event (N,) bool.
    """
    n, n_boot = counts.shape
    n_cols = ranks.shape[0]
    out = np.zeros((n_cols, n_boot), dtype=np.int64)
    for m in prange(n_cols):
        tree = np.zeros((n_ranks[m] + 1, n_boot), dtype=np.int64)
        acc = np.zeros(n_boot, dtype=np.int64)
        i = 0
        while i < n:
            j = i + 1
            while j < n and not vstarts[j]:
                j += 1
            if event[visit[i]]:  # a key group is all events or all censored
                for k in range(i, j):
                    s = visit[k]
                    w = counts[s]
                    r = ranks[m, s]
                    q = r - 1
                    while q > 0:
                        for b in range(n_boot):
                            acc[b] += w[b] * tree[q, b]
                        q -= q & (-q)
                    q = r
                    while q > 0:
                        for b in range(n_boot):
                            acc[b] += w[b] * tree[q, b]
                        q -= q & (-q)
            for k in range(i, j):
                s = visit[k]
                w = counts[s]
                q = ranks[m, s]
                while q <= n_ranks[m]:
                    for b in range(n_boot):
                        tree[q, b] += w[b]
                    q += q & (-q)
            i = j
        out[m] = acc
    return out


@njit(cache=True, nogil=True)
def _cindex_one(counts, b, ranks_m, n_rank, visit, vstarts, event, oob):
    n = visit.shape[0]
    tree = np.zeros(n_rank + 1, dtype=np.int64)
    acc = 0
    i = 0
    while i < n:
        j = i + 1
        while j < n and not vstarts[j]:
            j += 1
        if event[visit[i]]:
            for k in range(i, j):
                s = visit[k]
                c = counts[b, s]
                w = (1 if c == 0 else 0) if oob else c
                if w == 0:
                    continue
                r = ranks_m[s]
                tot = 0
                q = r - 1
                while q > 0:
                    tot += tree[q]
                    q -= q & (-q)
                q = r
                while q > 0:
                    tot += tree[q]
                    q -= q & (-q)
                acc += w * tot
        for k in range(i, j):
            s = visit[k]
            c = counts[b, s]
            w = (1 if c == 0 else 0) if oob else c
            if w == 0:
                continue
            q = ranks_m[s]
            while q <= n_rank:
                tree[q] += w
                q += q & (-q)
        i = j
    return acc


@njit(parallel=True, cache=True, nogil=True)
def cindex_winners(counts, ranks, n_ranks, visit, vstarts, event, cols, oob):
    """Twice the concordance numerator of column ``cols[b, t]`` in bootstrap ``b``."""
    n_boot, n_sub = cols.shape
    out = np.zeros((n_boot, n_sub), dtype=np.int64)
    for b in prange(n_boot):
        for t in range(n_sub):
            m = cols[b, t]
            out[b, t] = _cindex_one(
                counts, b, ranks[m], n_ranks[m], visit, vstarts, event, oob
            )
    return out


@njit(parallel=True, cache=True, nogil=True)
def cindex_pairs(counts, visit, vstarts, event, oob):
    """Twice the weighted number of comparable pairs per bootstrap (counts (B, N)).

    Returns (B,) int64."""
    n_boot, n = counts.shape
    out = np.zeros(n_boot, dtype=np.int64)
    for b in prange(n_boot):
        seen = 0
        acc = 0
        i = 0
        while i < n:
            j = i + 1
            while j < n and not vstarts[j]:
                j += 1
            group = 0
            for k in range(i, j):
                c = counts[b, visit[k]]
                w = (1 if c == 0 else 0) if oob else c
                group += w
                if event[visit[k]]:
                    acc += 2 * w * seen
            seen += group
            i = j
        out[b] = acc
    return out


# ---------------------------------------------------------------- pointwise metrics
# One kernel per sum; ``zero`` (0 or 0.0) types its accumulator, and numba compiles one
# specialisation for each. Indicator features (all 0/1: sample counts, class masks) are
# summed in integers: exact, and free to vectorise. Real features are summed in a float
# chain in sample order, so a result does not depend on how bootstraps are blocked. No
# branch skips a zero weight: w * v adds an exact 0.0 for a finite v (features are finite:
# they come from validated predictions), and the loop stays vectorisable.
@njit(parallel=True, cache=True, nogil=True)
def _feature_sums_winners(counts, rows, values_t, winners, n_rep, oob, zero):
    """Weighted sums of one per-sample feature for the winner of each bootstrap.

    counts (B, N); rows (n,) sample positions the feature is defined on; values_t
    (C*R, n), row c*R + r; winners (B,). Returns (B, R) float64.
    """
    n_boot = counts.shape[0]
    out = np.zeros((n_boot, n_rep), dtype=np.float64)
    for b in prange(n_boot):
        base = winners[b] * n_rep
        for r in range(n_rep):
            v = values_t[base + r]
            s = zero
            for k in range(rows.shape[0]):
                c = counts[b, rows[k]]
                w = (1 if c == 0 else 0) if oob else c
                s += w * v[k]
            out[b, r] = s
    return out


@njit(parallel=True, cache=True, nogil=True)
def _weighted_sums(counts, g, oob, zero):
    """``out[b, f] = sum_i w_bi g[f, i]`` for counts (B, N) (or their out-of-bag
    indicators) and config-free features g (n_g, N). Returns (B, n_g) float64."""
    n_boot, n = counts.shape
    n_g = g.shape[0]
    out = np.zeros((n_boot, n_g), dtype=np.float64)
    for b in prange(n_boot):
        for f in range(n_g):
            s = zero
            for i in range(n):
                c = counts[b, i]
                w = (1 if c == 0 else 0) if oob else c
                s += w * g[f, i]
            out[b, f] = s
    return out


#: Samples per slice of an indicator sum: 65,793 weights of 255 stay below 2**24, so the
#: float32 sums are exact (a bound of correctness, not a tuning constant).
_SLICE = 2**16


def fold_row_sums(values, at, n_rows, n_repeats, shared):
    """Per fold row, the sum of ``values`` over its samples, added one sample at a time
    in sample order. ``values`` (m, W) float32 or float64; ``at`` (m, R) the fold row of
    each value's sample in each repeat (-1: none; each repeat's rows its own). Column ``c*R + r`` of ``values`` is
    configuration ``c`` in repeat ``r`` (``shared``: column ``c`` serves every repeat).
    Returns (n_rows, C) float64.

    Each cell is a sum over the samples of its row alone, in sample order, so the
    samples of other rows do not affect it: a task holding a fold's samples alone and one
    holding a whole sample block get the same bits (BLAS, or NumPy's pairwise sum along
    a contiguous axis, assign terms to partial sums by position). NumPy reduces along
    the slow axis of a 2-D array of two or more columns one row at a time ("the improved
    precision is only used when the summation is along the fast axis in memory", the
    ``numpy.sum`` notes) — a single column would become the fast axis, so it gets a zero
    column beside it. ``tests/test_metrics.py`` checks this against a sequential loop.
    Indicator features (float32) are exact integers in any order. NumPy only: pointwise
    tasks never load numba (see :mod:`bbc_dask._jit`)."""
    w = values.shape[1]
    n_cfg = w if shared else w // n_repeats
    out = np.zeros((n_rows, n_cfg))
    for r in range(n_repeats):
        rows = at[:, r]
        order = np.argsort(rows, kind="stable")  # stable: sample order within a row
        bounds = np.searchsorted(rows[order], np.arange(-1, n_rows) + 0.5)
        # this repeat's columns, samples grouped by fold row (one gather), C-ordered
        # whatever the layout of ``values``: the reduction below must run along its rows
        held = np.ascontiguousarray(
            values[order[bounds[0] :], slice(None) if shared else slice(r, None, n_repeats)])
        if n_cfg == 1:
            held = np.concatenate([held, np.zeros_like(held)], axis=1)
        bounds = bounds - bounds[0]
        for f in range(n_rows):
            a, b = bounds[f], bounds[f + 1]
            if b > a:
                out[f] = held[a:b].sum(axis=0, dtype=np.float64)[:n_cfg]
    return out


def weighted_sums(counts, g, oob):
    """``out[b, f] = sum_i w_bi g[f, i]`` (see :func:`_weighted_sums`). Indicator
    features are summed exactly in integers with NumPy (a process that only sums
    indicators never loads numba: see :mod:`bbc_dask._jit`); real ones in floats by the
    kernel."""
    if g.dtype == np.bool_ or np.array_equal(g, g.astype(np.bool_)):
        return indicator_sums(counts, g.astype(np.bool_), oob, axis=1)
    return _weighted_sums(counts, g, oob, 0.0)


def indicator_sums(counts, masks, oob, axis):
    """Exact integer sums of the weights (counts, or with ``oob`` their out-of-bag
    indicators) over the samples of each mask: ``counts`` holds samples along ``axis``
    (1: (B, N) rows of bootstraps; 0: (N, B), samples first). Returns (B, n_masks)
    float64.

    A product per slice of samples (BLAS), in float32 when the weights are at most 255
    (indicators, uint8 counts): every partial sum is then an integer below 2**24 (at
    most :data:`_SLICE` samples), exact whatever the order BLAS adds in; wider counts
    in float64 (exact below 2**53). The slices add in int64, and bound the temporaries
    (the weights as floats) to a few MiB."""
    counts = np.asarray(counts)
    n_boot, n = counts.shape[1 - axis], counts.shape[axis]
    ftype = np.float32 if oob or counts.dtype in (np.bool_, np.uint8) else np.float64
    out = np.zeros((n_boot, masks.shape[0]), dtype=np.int64)
    step = max(1, min(_SLICE, tuning.SLICE_BYTES // max(np.dtype(ftype).itemsize * n_boot, 1)))
    for lo in range(0, n, step):
        part = counts[:, lo : lo + step] if axis == 1 else counts[lo : lo + step]
        w = ((part == 0) if oob else part).astype(ftype)
        m = masks[:, lo : lo + step].astype(ftype)
        out += ((w @ m.T) if axis == 1 else (m @ w).T).astype(np.int64)
    return out.astype(np.float64)


#: Weight x value terms (bootstraps x columns x samples) up to which the winners' indicator
#: sums go through BLAS while numba is not loaded (a process's first small BBC then never
#: imports it); above, the kernel sums the winners' columns alone.
NUMPY_SUM_TERMS = 1 << 24


def feature_sums_winners(counts, rows, values_t, winners, n_rep, oob, indicator=False):
    """Weighted sums of one feature for each bootstrap's winner (see
    :func:`_feature_sums_winners`); ``indicator``: the values are all 0/1, summed
    exactly in integers."""
    if indicator:
        if "numba" not in sys.modules and counts.shape[0] * values_t.size <= NUMPY_SUM_TERMS:
            # every column's exact integer sums by BLAS, then each bootstrap's winner's:
            # the kernel's numbers, without loading numba for a small study
            sums = indicator_sums(counts[:, rows], np.asarray(values_t, dtype=np.bool_), oob, axis=1)
            at = np.asarray(winners, dtype=np.int64)[:, None] * n_rep + np.arange(n_rep)
            return np.take_along_axis(sums, at, axis=1)
        return _feature_sums_winners(counts, rows, np.ascontiguousarray(values_t, dtype=np.uint8),
                                     winners, n_rep, oob, 0)
    return _feature_sums_winners(counts, rows, values_t, winners, n_rep, oob, 0.0)
