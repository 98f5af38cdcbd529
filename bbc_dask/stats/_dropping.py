"""The BBCD-CV dropping test (Tsamardinos et al. 2018, §4.1).

After a fold wave, the pooled out-of-sample predictions collected so far identify the
current best configuration θo = css(Π, y); the rows of Π are bootstrapped B times and
p̂θ = #{b : score_b(θ) < score_b(θo)} / B is the share of bootstraps in which θ is worse
than θo. θ is dropped when p̂θ > α; θo never is.

The rows bootstrapped are those with a prediction: a bootstrap draws n_available of the
available rows with replacement, as the paper's Matlab code does (``randi([imin, imax],
current_fold * N / K)``). With repeats a sample enters a bootstrap with all its repeats
(§3.2): the draws are of the samples available in at least one repeat, as many as there
are of them, and in repeat r a sample's draws count where it is available there. With one
repeat, or repeats whose available rows are the same, this is exactly the paper's draw,
so the test on the available rows equals the test on a cube of them alone.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .. import _validation as validation
from ..exceptions import InvalidParameterError
from ._inputs import prepare_inputs
from ._result import ArrayEquality
from ._bootstrap import CountBlocks, Frame
from ._winner import select
from .._doors import door

__all__ = ["Dropping", "DroppingResult", "DroppingScorer", "MaskedRule", "dropping_rule",
           "dropping_test", "fill_unavailable", "frame_of", "mean_over_repeats"]


@dataclass(frozen=True)
class Dropping:
    """Settings of BBCD-CV dropping.

    Parameters
    ----------
    alpha : float, default=0.99
        Drop a configuration when the bootstrap probability that it is worse than the
        current best exceeds ``alpha``; in (0.5, 1).
    n_bootstraps : int, default=1000
    min_predictions : int, default=50
        Do not test before every repeat has this many out-of-sample predictions (the 2018
        paper: with fewer, early dropping can lose the best configuration).
    test_last_wave : bool, default=True
        Test after the last fold wave too, so that the final BBC (BBCD-CV) runs on the
        configurations that survive it, as the 2018 paper's Matlab code does. A
        configuration dropped then has every fold trained; it is not a candidate.
    """

    alpha: float = 0.99
    n_bootstraps: int = 1000
    min_predictions: int = 50
    test_last_wave: bool = True

    @door("Dropping", always=True)
    def __post_init__(self):
        validation.check_real_open(self.alpha, "alpha", 0.5, 1.0)
        validation.check_int(self.n_bootstraps, "n_bootstraps")
        validation.check_int(self.min_predictions, "min_predictions")
        validation.check_bool(self.test_last_wave, "test_last_wave")

    @classmethod
    def coerce(cls, dropping):
        if dropping is None or dropping is False:
            return None
        if dropping is True:
            return cls()
        if isinstance(dropping, cls):
            return dropping
        if isinstance(dropping, dict):  # Dropping's own arguments (a study file's section)
            fields = {f.name for f in dataclasses.fields(cls)}
            unknown = sorted(set(dropping) - fields)
            if not unknown:
                return cls(**dropping)
            raise InvalidParameterError.of(
                "dropping", f"a dict of Dropping's arguments {sorted(fields)}",
                shown=f"the unknown key(s) {unknown}",
                note=validation.did_you_mean(unknown[0], fields) or None)
        raise InvalidParameterError.of(
            "dropping", "None, False, True, a dict of Dropping's arguments or a "
            "bbc_dask.Dropping", dropping)


@dataclass(frozen=True, eq=False)
class DroppingResult(ArrayEquality):
    """Outcome of one dropping test: ``best`` (θo), ``p_hat`` (C,), ``drop`` (C,) bool."""

    best: int
    p_hat: np.ndarray
    drop: np.ndarray
    n_redrawn: int


@door("dropping_test")
def dropping_test(predictions, y, available, *, metric, alpha=0.99, n_bootstraps=1000,
                  random_state=None, bootstrap_indices=None, pos_label=None, block_size=None):
    """Which configurations BBCD-CV drops, given the predictions collected so far.

    Parameters
    ----------
    predictions : array-like (N, C[, R[, n_classes]])
        Out-of-sample predictions; rows without a prediction in repeat r may hold anything
        (NaN included): they are masked by ``available``.
    y : array-like (N,)
    available : array-like of bool, (N,) or (N, R)
        Which samples have an out-of-sample prediction in each repeat so far.
    metric : str
    alpha : float, default=0.99
    n_bootstraps : int, default=1000
    random_state : int, SeedSequence, Generator or None
        Undefined draws (e.g. one class in bag for AUC) are redrawn.
    bootstrap_indices : array-like (B, M), default=None
        Explicit in-bag sample positions in 0..N-1, any number M per bootstrap (a
        sample enters with all its repeats; where it is not available, it counts nothing).
        By default each bootstrap draws as many of the samples available in some repeat
        as there are, among them (see the module doc).

    Returns
    -------
    DroppingResult

    References
    ----------
    .. [1] Tsamardinos, Greasidou, Borboudakis, Machine Learning 107 (2018), §4.1.
    """
    alpha = validation.check_real_open(alpha, "alpha", 0.5, 1.0)
    if bootstrap_indices is None:
        from .._random import as_seed_sequence

        n_boot = validation.check_int(n_bootstraps, "n_bootstraps")
        root, idx = as_seed_sequence(random_state), None
    else:
        root, idx = None, bootstrap_indices
        n_boot = None
    full, S, redrawn = dropping_scores(predictions, y, available, metric=metric, pos_label=pos_label,
                                       root=root, idx=idx, n_boot=n_boot, block_size=block_size)
    return decide(full, S, alpha, redrawn)


def decide(full, S, alpha, n_redrawn, best=None):
    """The BBCD decision from the full-data scores (C,) and the bootstrap scores (B, C)
    of the tested configurations (bootstraps where any score is undefined are left out).
    ``best``: θo when the study selects otherwise than by these scores (its best mean
    fold score, ``selection="fold_mean"``); default the best of ``full``."""
    best = select(full) if best is None else int(best)
    ok = ~np.isnan(S).any(axis=1)
    worse = (S[ok] < S[ok, best][:, None]).sum(axis=0)
    p_hat = worse / max(int(ok.sum()), 1)
    drop = p_hat > alpha
    drop[best] = False
    return DroppingResult(best=best, p_hat=p_hat, drop=drop, n_redrawn=int(n_redrawn))


def frame_of(available):
    """The :class:`~bbc_dask.stats._bootstrap.Frame` of the dropping test's draws: the
    samples available in some repeat (None when all are)."""
    return Frame.of(np.asarray(available, dtype=bool).reshape(len(available), -1).any(axis=1))


class MaskedRule:
    """The dropping test's definedness: in bag on the samples available in every repeat
    (``mask`` (R, N) int32), from the counts and the target alone.

    Where the metric's rule streams (every metric's does), so does this one: ``part(counts,
    lo, hi)`` gives the rule's parts of samples ``lo..hi-1`` for each repeat's masked
    counts, side by side; parts of blocks combine by maximum and ``decide(parts)`` equals
    the call on the whole counts — so a sample-block task reports it, and a plan decides
    it block by block."""

    def __init__(self, rule, mask):
        self.rule, self.mask = rule, mask
        self.streams = bool(getattr(rule, "streams", False)) and hasattr(rule, "decide_inbag")

    def __call__(self, counts):
        return np.all([self.rule.inbag(counts * m) for m in self.mask], axis=0)

    def part(self, counts, lo, hi):
        return np.concatenate([self.rule.part(counts * m[lo:hi], lo, hi) for m in self.mask],
                              axis=1)

    def decide(self, parts):
        per = np.split(parts, len(self.mask), axis=1)
        return np.all([self.rule.decide_inbag(p) for p in per], axis=0)


def _available(available, n, n_rep):
    return validation.per_sample_and_repeat(np.asarray(available, dtype=bool), "available", n,
                                   n_rep, "one flag")


def dropping_rule(metric, target, available, n_rep):
    """The :class:`MaskedRule` of ``metric`` on ``target`` with these available rows."""
    avail = _available(available, target.n_samples, n_rep)
    return MaskedRule(metric.definedness(target), avail.T.astype(np.int32))


class DroppingScorer:
    """Scores of a block of configurations for the dropping test, over all samples:
    ``full`` (C,) on every available row, ``scores(counts)`` (B, C) per bootstrap and
    ``defined`` (its :class:`MaskedRule`). Each configuration's scores depend on its own
    column only, so a configuration chunk's scores are the matching columns of the whole
    cube's (the chunked test of :mod:`bbc_dask.chunked` concatenates chunks)."""

    def __init__(self, predictions, y, available, metric, pos_label=None, class_coord=None):
        pred = np.asarray(predictions)
        if pred.ndim == 2:
            pred = pred[:, :, None]
        n, _, n_rep = pred.shape[:3]
        avail = _available(available, n, n_rep)
        filled = pred.copy()
        for r in range(n_rep):
            fill_unavailable(filled[:, :, r], avail[:, r])
        m, target, enc = prepare_inputs(filled, y, metric, pos_label, class_coord,
                                        check_scores=False)
        del filled
        self.n, self.n_configs = n, enc.shape[1]
        self.preps = [m.prepare(target, enc[:, :, r : r + 1]) for r in range(n_rep)]
        self.mask = avail.T.astype(np.int32)  # (R, N)
        self.defined = MaskedRule(m.definedness(target), self.mask)
        self.full = self.scores(np.ones((1, n), dtype=np.int32))[0]

    def scores(self, counts):
        return mean_over_repeats([p.scores(counts * self.mask[r])[:, :, 0]
                                  for r, p in enumerate(self.preps)])


def fill_unavailable(values, ok):
    """Give the rows of ``values`` (one repeat's predictions, samples first) that are not
    ``ok`` the values of the first that is, in place (float predictions: a sample not
    yet predicted is NaN). Those rows are never weighted (their weight is zero in that
    repeat), so any valid prediction gives the same sums: a task holding one sample
    block, filling from its own first available row, adds the very terms the whole
    sample's test adds."""
    if values.dtype.kind == "f" and ok.any() and not ok.all():
        values[~ok] = values[int(np.flatnonzero(ok)[0])]


def mean_over_repeats(scores):
    """The mean of a list of (B, C) score arrays, one per repeat, added in repeat order.

    Spelled out because ``np.mean(..., axis=0)`` adds a (R, 1, 1) stack — one
    configuration's full score — pairwise, and a wider one row by row: the chunked test,
    whose groups can hold one configuration, would then differ in the last bit."""
    total = scores[0]
    for s in scores[1:]:
        total = total + s
    return total / len(scores)


def dropping_scores(predictions, y, available, *, metric, pos_label=None, root=None, idx=None,
                    n_boot=None, block_size=None, class_coord=None):
    """Scores of every configuration on all available rows (C,) and per bootstrap (B, C)."""
    sc = DroppingScorer(predictions, y, available, metric, pos_label, class_coord)
    if idx is not None:
        idx = validation.as_bootstrap_indices(idx, sc.n, "sample", any_width=True)
        n_boot = idx.shape[0]
    S = np.empty((n_boot, sc.n_configs))
    blocks = CountBlocks(root, "dropping", idx, n_boot, sc.n, block_size or 256, sc.defined,
                         frame_of(sc.mask.T))
    for start, stop, counts in blocks:
        S[start:stop] = sc.scores(counts)
    return sc.full, S, blocks.n_redrawn
