"""BBC-F (Paraschakis, Castellani, Borboudakis, Tsamardinos, 2024, Algorithm 1): the
bootstrap of the rows of the fold × configuration score matrix (:mod:`._folds`), one
repeat's folds per bootstrap; and the fold-level draws and means that the naive bootstrap
of folds and ``selection="fold_mean"`` share with it.
"""
from __future__ import annotations

import sys

import numpy as np

from .. import _validation as validation
from .._jit import njit
from .._random import as_seed_sequence, child_seed
from ._bootstrap import CountBlocks
from ._folds import _fold_matrix
from ._inputs import prepare_inputs
from ._result import BBCResult, summarise
from ._winner import split_means, select
from .._doors import door


#: Bootstrap-by-row terms (draws x configurations) up to which the fold means are summed
#: by NumPy while numba is not loaded: the same operations in the same order, so the same
#: bits as the kernels, without a process's first BBC-F on a small matrix importing numba
#: and loading the kernels (0.6 s of a first ``BBCSearchCV.fit``).
NUMPY_TERMS = 1 << 22


def _inbag_means(counts, F):
    """The in-bag mean of each column of ``F`` (rows, C) for each row of ``counts``
    (B, rows): :func:`_inbag_means_kernel`'s."""
    if "numba" in sys.modules or counts.size * F.shape[1] > NUMPY_TERMS:
        return _inbag_means_kernel(counts, F)
    n_boot, n_rows = counts.shape
    s = np.zeros((n_boot, F.shape[1]))
    comp = np.zeros_like(s)
    for k in range(n_rows):  # the kernel's Neumaier steps, every bootstrap at once
        x = F[k]
        for rep in range(int(counts[:, k].max(initial=0))):
            on = counts[:, k] > rep
            t0 = s[on]
            t = t0 + x
            comp[on] += np.where(np.abs(t0) >= np.abs(x), (t0 - t) + x, (x - t) + t0)
            s[on] = t
    return (s + comp) / counts.sum(axis=1)[:, None]


def _oob_mean(counts, F, winners):
    """Each bootstrap's winner's mean over its out-of-bag rows (NaN without a winner or
    an out-of-bag row): :func:`_oob_mean_kernel`'s."""
    if "numba" in sys.modules or counts.size > NUMPY_TERMS:
        return _oob_mean_kernel(counts, F, winners)
    n_boot, n_rows = counts.shape
    won = winners >= 0
    col = np.where(won, winners, 0)
    s = np.zeros(n_boot)
    k_out = np.zeros(n_boot, dtype=np.int64)
    for k in range(n_rows):  # added in the kernel's order
        out = (counts[:, k] == 0) & won
        s[out] += F[k, col[out]]
        k_out += out
    res = np.full(n_boot, np.nan)
    has = won & (k_out > 0)
    res[has] = s[has] / k_out[has]
    return res


@njit(cache=True)
def _inbag_means_kernel(counts, F):
    # Compensated (Neumaier) sums, adding a row once per draw: mathematically equal means
    # (frequent with fold accuracies, which are ratios) compare equal, so ties go to the
    # lowest index as in exact arithmetic, whatever the row order or blocking.
    n_boot, n_rows = counts.shape
    n_cfg = F.shape[1]
    out = np.zeros((n_boot, n_cfg))
    comp = np.zeros(n_cfg)
    for b in range(n_boot):
        comp[:] = 0.0
        tot = 0
        for k in range(n_rows):
            for _ in range(counts[b, k]):
                tot += 1
                for c in range(n_cfg):
                    x = F[k, c]
                    s = out[b, c]
                    t = s + x
                    if abs(s) >= abs(x):
                        comp[c] += (s - t) + x
                    else:
                        comp[c] += (x - t) + s
                    out[b, c] = t
        for c in range(n_cfg):
            out[b, c] = (out[b, c] + comp[c]) / tot
    return out


@njit(cache=True)
def _oob_mean_kernel(counts, F, winners):
    n_boot, n_rows = counts.shape
    out = np.full(n_boot, np.nan)
    for b in range(n_boot):
        if winners[b] < 0:
            continue
        s = 0.0
        k_out = 0
        for k in range(n_rows):
            if counts[b, k] == 0:
                s += F[k, winners[b]]
                k_out += 1
        if k_out:
            out[b] = s / k_out
    return out


@door("bbc_f")
def bbc_f(predictions, y, folds, *, metric, n_bootstraps=1000, confidence_level=0.95,
          random_state=None, bootstrap_indices=None, pos_label=None,
          block_size=None) -> BBCResult:
    """BBC on folds (BBC-F): bootstrap the rows of the fold × configuration score matrix.

    The per-fold score matrix has one row per (repeat, fold) pair (repeat-major, folds in
    sorted id order). Each bootstrap resamples the K fold rows of one repeat with
    replacement, selects the configuration with the best in-bag mean (ties to the lowest
    index) and scores it by its mean over that repeat's out-of-bag rows [1]_ (Algorithm
    1). With R repeats, bootstrap ``b`` resamples repeat ``b mod R``: the repeats share
    the bootstraps in turn. ``selected_config`` and ``naive_estimate`` refer to the mean
    over all rows of the matrix (every repeat).

    Why one repeat per bootstrap: the rule of BBC with repeats [2]_ (§3.2) is that an
    instance's predictions in all repeats are in a bootstrap sample or none, since they
    are correlated. A fold bootstrap of one repeat keeps it: its in-bag instances are the
    union of its in-bag folds, all others are out of bag. Rows of different repeats
    share instances (every instance is in one fold of every repeat), so resampling the
    (repeat, fold) rows together puts an instance in bag through one repeat's fold and out
    of bag through another's: the out-of-bag score of the winner is then partly an
    in-bag one (measured coverage of the 95% lower bound, N = 500, C = 100, b = 0.5,
    predictions identical across 5 repeats: 0.655, against 0.99 with one repeat). Per
    repeat bootstraps whose out-of-bag scores are averaged across repeats fail the same
    rule less visibly — an instance in bag for one repeat's selection is out of bag in
    another's score — and their average shrinks as if the repeats were new data (0.91).
    With one repeat per bootstrap the distribution is the mixture of the repeats' BBC-F
    distributions (0.99, the coverage of one repeat): the estimate averages the
    partitions out; the interval does not narrow with repeats.

    Parameters
    ----------
    predictions, y, metric, n_bootstraps, confidence_level, random_state, pos_label, block_size
        As in :func:`bbc`.
    folds : array-like of shape (N,) or (N, R)
        Fold id of every sample in every repeat (any integer labels).
    bootstrap_indices : array-like of shape (B, K), default=None
        Explicit in-bag fold positions (0..K-1, in sorted fold id order) of each
        bootstrap within its repeat ``b mod R`` (every repeat must then have K folds),
        used exactly as given; a bootstrap with no out-of-bag fold gets NaN and is
        excluded and counted.

    Returns
    -------
    BBCResult

    References
    ----------
    .. [1] Paraschakis, Castellani, Borboudakis, Tsamardinos, "Confidence Interval
       Estimation of Predictive Performance in the Context of AutoML" (2024), Algorithm 1.
    .. [2] Tsamardinos, Greasidou, Borboudakis, Machine Learning 107 (2018), §3.2.

    Examples
    --------
    >>> import bbc_dask as bd
    >>> sim = bd.simulate.auc_matrix(200, 20, random_state=0)
    >>> res = bd.bbc_f(sim.predictions, sim.y, sim.folds, metric="roc_auc", random_state=0)
    >>> res.method
    'bbc_f'
    """
    m, target, pred = prepare_inputs(predictions, y, metric, pos_label)
    f = validation.as_folds(folds, pred.shape[0], pred.shape[2])
    F, rows = _fold_matrix(m, target, pred, f)
    return _bbc_f_matrix(F, rows, m.name, n_bootstraps, confidence_level, random_state,
                         bootstrap_indices, block_size)


def repeat_rows(rows):
    """The fold matrix's row positions of each repeat, in repeat order: ``rows`` is a list
    of ``(repeat, fold_id)`` (:func:`fold_rows`)."""
    reps = sorted({r for r, _ in rows})
    return [np.array([i for i, (r, _) in enumerate(rows) if r == rep], dtype=np.int64)
            for rep in reps]


class RepeatBlocks:
    """Iterate ``(positions, Fr, counts)``: the fold-level bootstraps of a fold matrix
    whose rows are ``rows`` ((repeat, fold) pairs), bootstrap ``b`` resampling the K fold
    rows of repeat ``b mod R`` (see :func:`bbc_f`): ``positions`` are the bootstraps'
    indices in the whole set, ``Fr`` the repeat's rows of ``F``, ``counts`` (len, K) how
    often each row is in bag. Repeat ``r``'s bootstraps are drawn from the root itself
    with one repeat, else from its child ``(root, "repeat", r)``, in seed blocks: they
    do not depend on ``block_size``. ``idx``: explicit (B, K) in-bag positions instead."""

    def __init__(self, F, rows, root, stream, idx, n_boot, block_size, is_defined=None):
        self.F, self.reps = np.ascontiguousarray(F, dtype=np.float64), repeat_rows(rows)
        self.root, self.stream, self.idx = root, stream, idx
        self.n_boot, self.block_size, self.is_defined = n_boot, block_size, is_defined
        self.n_redrawn = 0

    def __iter__(self):
        for r, at in enumerate(self.reps):
            mine = np.arange(r, self.n_boot, len(self.reps))
            Fr = np.ascontiguousarray(self.F[at])
            seed = (self.root if self.root is None or len(self.reps) == 1
                    else child_seed(self.root, "repeat", r))
            blocks = CountBlocks(seed, self.stream, None if self.idx is None else self.idx[mine],
                                 mine.size, at.size, self.block_size, self.is_defined)
            for start, stop, counts in blocks:
                yield mine[start:stop], Fr, counts
            self.n_redrawn += blocks.n_redrawn


def _fold_draws(F, rows, stream, n_bootstraps, confidence_level, random_state,
                bootstrap_indices, block_size, is_defined=None):
    """``(confidence level, RepeatBlocks)`` of a fold-level bootstrap, its arguments checked."""
    conf = validation.check_confidence_level(confidence_level)
    if bootstrap_indices is None:
        n_boot = validation.check_int(n_bootstraps, "n_bootstraps")
        root, idx = as_seed_sequence(random_state), None
    else:
        idx = validation.as_fold_indices(bootstrap_indices,
                                         [len(at) for at in repeat_rows(rows)])
        n_boot, root = idx.shape[0], None
    bs = (validation.check_int(block_size, "block_size") if block_size is not None
          else n_boot)
    return conf, RepeatBlocks(F, rows, root, stream, idx, n_boot, bs, is_defined)


def fold_means(F):
    """The mean of each column of the fold matrix over all its rows (every repeat), in
    ``GridSearchCV``'s arithmetic (:func:`split_means`): the full data's winner of
    ``selection="fold_mean"`` is ``GridSearchCV``'s ``best_index_`` on the same split
    scores, ties included. (In-bag means are compensated sums instead: there, equal means
    of resampled rows compare equal whatever the order the rows are drawn in.)"""
    return split_means(F)[0]


def _bbc_f_matrix(F, rows, metric_name, n_bootstraps, confidence_level, random_state,
                  bootstrap_indices, block_size):
    """BBC-F of the fold matrix ``F`` (R·K, C) whose rows are ``rows`` ((repeat, fold)
    pairs): bootstrap ``b`` resamples the rows of repeat ``b mod R`` (see :func:`bbc_f`)."""
    def defined(c):
        return (c == 0).any(axis=1)

    conf, blocks = _fold_draws(F, rows, "bbc_f", n_bootstraps, confidence_level, random_state,
                               bootstrap_indices, block_size, defined)
    dist = np.full(blocks.n_boot, np.nan)
    winners = np.full(blocks.n_boot, -1, dtype=np.int64)
    for at, Fr, counts in blocks:
        w = select(_inbag_means(counts, Fr))
        dist[at] = _oob_mean(counts, Fr, w)
        winners[at] = w
    full = fold_means(F)
    sel = select(full)
    return summarise(
        dist, winners, selected=sel, naive=full[sel], n_redrawn=blocks.n_redrawn, method="bbc_f",
        metric=metric_name, confidence_level=conf, selection="fold_mean",
    )
