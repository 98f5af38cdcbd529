"""Nested cross-validation (NCV) and repeated holdout on prediction matrices.

Neither trains anything: a configuration's predictions are given. With one (N, C) matrix
every outer fold (or split) reuses it, as a configuration whose predictions do not depend
on its training set. With a stack (K, N, C) — one matrix per outer fold (per split) — the
configurations are "retrained" for each: this is what the 2018 paper's simulation code does
for NCV (``machineLearningJournalSimulationsCode.m``, function ``NCV``, in
github.com/mensxmachina/BBC-CV: a fresh prediction matrix of the same true accuracies per
outer fold).

NCV [1]_ (§2.3, Algorithm 3), as that code computes it: for outer fold ``k`` the inner
cross-validation is the other ``K - 1`` outer folds (the paper's "internal loop of K = 9
folds" for K = 10), pooled — with no training to repeat, an inner CV on those rows selects
the configuration of the best score on them (ties to the lowest index). That configuration
is scored on fold ``k``; the estimate is the mean of the K fold scores (the code's
``mean(performances)``). The code has no interval; here it is the Student t interval of the
K fold scores, ``mean ± t(K-1) s / √K``.

Repeated holdout: ``n_repeats`` random splits of the N rows (``n_test = round(test_size N)``
rows held out, drawn without stratification); each selects on the other rows by the same
rule and scores its winner on the held-out rows; the estimate is the mean of the split
scores. The paper's code has none; its interval here is the corrected resampled t of Nadeau
& Bengio [2]_, ``mean ± t(R-1) √((1/R + n_test/n_train) s²)``: the splits overlap, so the
plain ``s²/R`` would be too narrow.

References
----------
.. [1] I. Tsamardinos, E. Greasidou, G. Borboudakis, "Bootstrapping the out-of-sample
   predictions for efficient and accurate cross-validation", Machine Learning 107,
   1895-1922 (2018), §2.3 and §5.1.
.. [2] C. Nadeau, Y. Bengio, "Inference for the generalization error", Machine Learning
   52, 239-281 (2003).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validation as validation
from .._random import as_seed_sequence, child_generator
from ..exceptions import InvalidParameterError
from ._inputs import prepare_inputs
from ..metrics import score_bounds
from ._holdout import clip_interval
from ._result import ArrayEquality, ConfidenceInterval
from ._winner import select
from .._doors import door

__all__ = ["OuterEstimate", "ncv_of_matrix", "repeated_holdout_of_matrix"]


@dataclass(frozen=True, eq=False)
class OuterEstimate(ArrayEquality):
    """The outcome of :func:`ncv_of_matrix` or :func:`repeated_holdout_of_matrix`.

    Attributes
    ----------
    estimate : float
        The mean of the outer scores.
    confidence_interval : ConfidenceInterval
        Two-sided, at ``confidence_level`` (see the module's docstring).
    outer_scores : ndarray of shape (K,) or (R,)
        The score of each outer fold's (split's) winner on its held-out rows.
    outer_selected : ndarray of shape (K,) or (R,)
        Each outer fold's (split's) winner.
    method, metric : str
    confidence_level : float
    ci_clipped : bool
        Whether an end of the interval was moved back into the metric's range (an AUC
        interval ending above 1).
    """

    estimate: float
    confidence_interval: ConfidenceInterval
    outer_scores: np.ndarray
    outer_selected: np.ndarray
    method: str
    metric: str
    confidence_level: float
    ci_clipped: bool = False


def _stack(predictions, n_outer):
    """The matrix of each outer fold: ``predictions`` (N, C) reused, or (K, N, C) one each."""
    arr = np.asarray(predictions)
    if arr.ndim == 3:
        if arr.shape[0] != n_outer:
            raise InvalidParameterError.of("predictions", f"of shape (N, C) or "
                                           f"({n_outer}, N, C), one matrix per outer part", arr.shape)
        return [arr[k] for k in range(n_outer)]
    return [arr] * n_outer


def _outer(method, mats, y, metric, pos_label, masks):
    """Each outer part's winner (selected on ``~mask``) and its score on ``mask``."""
    sel, scores, name, prepared = [], [], None, {}
    for mat, mask in zip(mats, masks):
        key = id(mat)
        if key not in prepared:  # one matrix reused: encode it once
            m, target, pred = prepare_inputs(mat, y, metric, pos_label)
            prepared[key] = (m, m.prepare(target, pred))
        m, prep = prepared[key]
        name = m.name
        counts = np.stack([~mask, mask]).astype(np.int32)
        s = prep.scores(counts).mean(axis=2)  # (2, C): inner, held out
        w = select(s[0])
        sel.append(w)
        scores.append(s[1, w] if w >= 0 else np.nan)
    return np.asarray(sel, dtype=np.int64), np.asarray(scores, dtype=np.float64), name


def _result(method, sel, scores, name, conf, inflation):
    from scipy.stats import t as student_t

    n = scores.size
    est = float(np.mean(scores))
    half = float(student_t.ppf(0.5 + conf / 2, n - 1) * np.sqrt(inflation * np.var(scores, ddof=1)))
    ci, clipped = clip_interval(ConfidenceInterval(est - half, est + half), score_bounds(name))
    return OuterEstimate(est, ci, scores, sel, method, name, float(conf), clipped)


@door("ncv_of_matrix")
def ncv_of_matrix(predictions, y, folds, *, metric, confidence_level=0.95, pos_label=None):
    """Nested cross-validation on a prediction matrix (see the module's docstring).

    Parameters
    ----------
    predictions : array of shape (N, C), or (K, N, C) one matrix per outer fold
    y : array of shape (N,)
    folds : array of shape (N,)
        The outer folds' ids (K distinct); the inner CV of fold ``k`` is the other folds.
    metric : str
    confidence_level : float, default=0.95
    pos_label : optional

    Returns
    -------
    OuterEstimate
    """
    conf = validation.check_confidence_level(confidence_level)
    n = np.asarray(y).shape[0]
    f = validation.as_folds(folds, n, 1)[:, 0]
    ids = np.unique(f)
    mats = _stack(predictions, ids.size)
    sel, scores, name = _outer("ncv", mats, y, metric, pos_label, [f == k for k in ids])
    return _result("nested_cv", sel, scores, name, conf, 1.0 / ids.size)


@door("repeated_holdout_of_matrix")
def repeated_holdout_of_matrix(predictions, y, *, metric, n_repeats=10, test_size=0.3,
                               confidence_level=0.95,
                               random_state=None, pos_label=None):
    """Repeated holdout on a prediction matrix (see the module's docstring).

    Parameters
    ----------
    predictions : array of shape (N, C), or (R, N, C) one matrix per split
    y : array of shape (N,)
    metric : str
    n_repeats : int, default=10
        R, at least 2.
    test_size : float in (0, 1), default=0.3
        The held-out share; each part keeps at least one row.
    confidence_level : float, default=0.95
    random_state : int, SeedSequence or None
        The splits.
    pos_label : optional

    Returns
    -------
    OuterEstimate
    """
    conf = validation.check_confidence_level(confidence_level)
    r = validation.check_int(n_repeats, "n_repeats", low=2)
    share = validation.check_real_open(test_size, "test_size", 0.0, 1.0)
    n = np.asarray(y).shape[0]
    n_test = int(min(max(round(share * n), 1), n - 1))
    gen = child_generator(as_seed_sequence(random_state), "repeated_holdout")
    masks = []
    for _ in range(r):
        mask = np.zeros(n, dtype=bool)
        mask[gen.permutation(n)[:n_test]] = True
        masks.append(mask)
    mats = _stack(predictions, r)
    sel, scores, name = _outer("repeated_holdout", mats, y, metric, pos_label, masks)
    return _result("repeated_holdout", sel, scores, name, conf, 1.0 / r + n_test / (n - n_test))
