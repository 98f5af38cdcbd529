"""The formulas of the holdout family (:func:`bbc_dask.holdout`,
:func:`bbc_dask.repeated_holdout`, :func:`bbc_dask.bootstrap_estimate`): intervals,
the .632/.632+ combination, the no-information score, and their result objects.
NumPy and scipy only; the fitting lives in :mod:`bbc_dask.protocols`.

Every score is oriented larger-is-better, as the metric registry's (losses negated), so
the .632+ formulas of Efron & Tibshirani (1997), written there for error rates, are
written here for scores: an error ``e`` is ``-s`` up to an increasing affine map, under
which the relative overfitting rate is unchanged.

References
----------
Raschka (2018). Model evaluation, model selection, and algorithm selection in machine
learning, arXiv:1811.12808, Eqs. 14, 31-36.
Efron (1983). JASA 78:316. Efron, Tibshirani (1997). JASA 92:548.
DeLong, DeLong, Clarke-Pearson (1988). Biometrics 44:837. Sun, Xu (2014). IEEE SPL 21:1389.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from ._result import ArrayEquality, ConfidenceInterval, order_statistic

__all__ = ["BootstrapEstimate", "HoldoutResult", "RepeatedHoldoutResult", "clip_interval",
           "delong_interval", "no_information_score", "normal_interval", "percentile_interval",
           "point632", "t_interval", "wilson_interval", "NO_INFORMATION"]

_NAN_CI = ConfidenceInterval(math.nan, math.nan)
#: What a summary adds after an interval's method when an end was clipped.
_CLIPPED = ", clipped to the metric's range"


def _alpha(confidence):
    return round(1.0 - confidence, 12)


def normal_interval(p, n, confidence):
    """Eq. 14 (a Wald interval): ``p ± z·sqrt(p(1 - p)/n)``, z the 1 - α/2 normal
    quantile (not clipped: see :func:`clip_interval`). Near 0 or 1 it under-covers: at
    n = 171 and p = 0.99 its exact coverage is 0.82 (:func:`wilson_interval`'s 0.97)."""
    z = NormalDist().inv_cdf(1.0 - _alpha(confidence) / 2.0)
    half = z * math.sqrt(p * (1.0 - p) / n)
    return ConfidenceInterval(p - half, p + half)


def wilson_interval(p, n, confidence):
    """Wilson's score interval of a proportion ``p`` of ``n`` (Wilson, 1927): the ``q``
    whose normal test does not reject, ``(p + z²/2n ± z·sqrt(p(1 - p)/n + z²/4n²)) /
    (1 + z²/n)``; inside [0, 1] always, and near its nominal coverage at the ends, where
    Eq. 14's Wald interval collapses onto ``p``."""
    z = NormalDist().inv_cdf(1.0 - _alpha(confidence) / 2.0)
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n))
    return ConfidenceInterval(max(centre - half, 0.0), min(centre + half, 1.0))


def clip_interval(ci, bounds):
    """``(ci clipped to bounds, whether it was)``: an interval of a score cannot leave the
    metric's range (an AUC above 1), so an end beyond it is moved to it; the result says
    so (``ci_clipped``), since the clipped interval is no longer symmetric."""
    low, high = bounds
    if not (ci.low < low or ci.high > high):  # NaN ends are left as they are
        return ci, False
    return ConfidenceInterval(float(max(ci.low, low)), float(min(ci.high, high))), True


def delong_interval(scores, positive, confidence):
    """DeLong's interval of the AUC of ``scores`` (positive = larger), ``positive`` a bool
    array: ``θ ± z·sqrt(V10/m + V01/n)`` with Sun & Xu's mid-rank placements (ties count
    1/2), clipped to [0, 1]; NaN when a class has fewer than two rows. Not re-oriented: θ
    is the metric's own AUC, below 0.5 for a model worse than chance."""
    from scipy.stats import rankdata

    s = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    x, z = s[positive], s[~positive]
    m, n = len(x), len(z)
    if m < 2 or n < 2:
        return _NAN_CI
    ranks = rankdata(np.concatenate([x, z]))
    v10 = (ranks[:m] - rankdata(x)) / n
    v01 = 1.0 - (ranks[m:] - rankdata(z)) / m
    theta = v10.mean()
    half = NormalDist().inv_cdf(1.0 - _alpha(confidence) / 2.0) * math.sqrt(
        v10.var(ddof=1) / m + v01.var(ddof=1) / n)
    return ConfidenceInterval(max(theta - half, 0.0), min(theta + half, 1.0))


def percentile_interval(values, confidence):
    """The percentile interval ``(L(α/2·B), L((1 - α/2)·B))`` of the finite ``values``
    (the package's order statistic, :func:`order_statistic`)."""
    a = _alpha(confidence)
    values = np.asarray(values, dtype=np.float64)
    return ConfidenceInterval(order_statistic(values, a / 2), order_statistic(values, 1 - a / 2))


def t_interval(scores, confidence):
    """``mean ± t(1 - α/2, n - 1)·s/√n`` of the finite ``scores`` (s with ddof 1); NaN
    with fewer than two."""
    from scipy.stats import t

    v = np.asarray(scores, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size < 2:
        return _NAN_CI
    half = t.ppf(1.0 - _alpha(confidence) / 2.0, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return ConfidenceInterval(float(v.mean() - half), float(v.mean() + half))


# ------------------------------------------------------------------ no-information score
def _shares(codes, k):
    return np.bincount(np.asarray(codes, dtype=np.int64), minlength=k) / len(codes)


def _gamma_accuracy(codes, pred, k, pos):
    return float(_shares(codes, k) @ _shares(pred, k))  # Eq. 36: 1 - sum p_k (1 - q_k)


def _gamma_balanced(codes, pred, k, pos):
    present = _shares(codes, k) > 0  # each present class's recall on the pairs is q_k
    return float(_shares(pred, k)[present].mean())


def _gamma_f1(codes, pred, k, pos):
    p, q = np.mean(codes == pos), np.mean(pred == pos)  # TP = pq, FP = (1-p)q, FN = p(1-q)
    return 0.0 if p + q == 0 else float(2 * p * q / (p + q))


def _gamma_log_loss(codes, proba, k, pos):
    eps = np.finfo(np.float64).eps  # the metric's clipping
    return float(_shares(codes, k) @ np.log(np.clip(proba, eps, 1 - eps)).mean(axis=0))


def _squared_gap(y, f):
    return y.var() + f.var() + (y.mean() - f.mean()) ** 2  # mean of (y_i - f_j)² over pairs


def _gamma_mse(y, f, k, pos):
    return float(-_squared_gap(y, f))


def _gamma_mae(y, f, k, pos):
    s = np.sort(y)
    cum = np.concatenate([[0.0], np.cumsum(s)])
    below = np.searchsorted(s, f)  # y values below each f_j
    total = f * below - cum[below] + (cum[-1] - cum[below]) - f * (len(s) - below)
    return float(-total.sum() / (len(s) * len(f)))


def _gamma_r2(y, f, k, pos):
    return float(1.0 - _squared_gap(y, f) / y.var())


#: The no-information score of each metric that has one: the metric on the data set of
#: all n² pairs (y_i, ŷ_j) (Eq. 35), in closed form; 0.5 for the AUCs, 0 for the squared
#: correlation (y and ŷ are independent on the pairs).
NO_INFORMATION = {
    "accuracy": _gamma_accuracy, "balanced_accuracy": _gamma_balanced, "f1": _gamma_f1,
    "neg_log_loss": _gamma_log_loss, "neg_mean_squared_error": _gamma_mse,
    "neg_mean_absolute_error": _gamma_mae, "r2": _gamma_r2,
    "r2_corr": lambda y, f, k, pos: 0.0, "roc_auc": lambda y, f, k, pos: 0.5,
    "roc_auc_ovr": lambda y, f, k, pos: 0.5, "roc_auc_ovo": lambda y, f, k, pos: 0.5,
}


def no_information_score(metric, y, predictions, n_classes=0, pos_code=1):
    """γ: the score of ``predictions`` when they are independent of ``y`` (class codes
    0..K-1, or values). ``predictions``: class codes, scores, (n, K) probabilities or
    values of the same model on the same n rows."""
    f = NO_INFORMATION[metric]
    return f(np.asarray(y), np.asarray(predictions), n_classes, pos_code)


# ------------------------------------------------------------------ .632 and .632+
def point632(oob, resub, method, gamma=None):
    """``(per-round estimate, relative overfitting rate or None)`` of each bootstrap round.

    ``"oob"``: the out-of-bag score. ``".632"`` (Eq. 31): ``.368·resub + .632·oob``.
    ``".632+"`` (Eqs. 32-34, with Efron & Tibshirani's (1997) clipping, for scores):
    ``oob' = max(oob, γ)``; ``R = (resub - oob')/(resub - γ)`` when ``oob < resub`` and
    ``γ < resub``, else 0 (so R is in [0, 1]); ``.632 + (oob' - resub)·.368·.632·R/(1 -
    .368·R)``, i.e. ``resub + ω(oob' - resub)`` with ``ω = .632/(1 - .368·R)`` when
    ``oob >= γ`` (Efron & Tibshirani, 1997, Eqs. 32-33; with R = 0 it is the .632
    estimate).
    """
    o, r = np.asarray(oob, dtype=np.float64), np.asarray(resub, dtype=np.float64)
    if method == "oob":
        return o.copy(), None
    e632 = 0.368 * r + 0.632 * o
    if method == ".632":
        return e632, None
    g = np.asarray(gamma, dtype=np.float64)
    o_clip = np.maximum(o, g)
    overfit = (o < r) & (g < r)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(overfit, (r - o_clip) / np.where(overfit, r - g, 1.0), 0.0)
    rate = np.clip(rate, 0.0, 1.0)
    plus = e632 + (o_clip - r) * (0.368 * 0.632 * rate) / (1.0 - 0.368 * rate)
    return plus, rate


# ------------------------------------------------------------------ results
def _fmt(v):
    return "nan" if v is None or not np.isfinite(v) else f"{v:.4f}"


def _times(res):
    return (f"{res.models_trained} model{'s' if res.models_trained != 1 else ''} trained, "
            f"{res.fit_seconds:.2f} s fitting, {res.wall_seconds:.2f} s wall")


@dataclass(frozen=True, eq=False)
class HoldoutResult(ArrayEquality):
    """Outcome of :func:`bbc_dask.holdout`: one fit, scored on one test set.

    Attributes: ``estimate`` (the metric on the test set), ``ci``
    (:class:`ConfidenceInterval`), ``ci_method`` (``"wilson"``; ``"normal"``: Eq. 14;
    ``"delong"``; ``"bootstrap"``: percentile bootstrap of the test set), ``metric``,
    ``confidence``, ``train_idx``, ``test_idx`` (sorted row positions), ``models_trained``
    (1), ``fit_seconds``, ``wall_seconds``, ``ci_clipped`` (whether an end of the interval
    was moved back into the metric's range).
    """

    estimate: float
    ci: ConfidenceInterval
    ci_method: str
    metric: str
    confidence: float
    train_idx: np.ndarray
    test_idx: np.ndarray
    models_trained: int
    fit_seconds: float
    wall_seconds: float
    ci_clipped: bool = False

    def summary(self):
        c = self.ci
        return (f"holdout {self.metric}: {_fmt(self.estimate)}, {self.confidence:.0%} CI "
                f"[{_fmt(c.low)}, {_fmt(c.high)}] ({self.ci_method}{_CLIPPED * self.ci_clipped}); "
                f"train {len(self.train_idx)}, "
                f"test {len(self.test_idx)} rows; {_times(self)}")

    def __repr__(self):
        return f"HoldoutResult({self.summary()})"


@dataclass(frozen=True, eq=False)
class RepeatedHoldoutResult(ArrayEquality):
    """Outcome of :func:`bbc_dask.repeated_holdout`.

    Attributes: ``estimate`` (mean of the finite ``scores``), ``ci`` (mean ± t·s/√n,
    :class:`ConfidenceInterval`, clipped to the metric's range), ``scores`` (one per
    repeat), ``splits`` (a list of (train, test) sorted row positions), ``metric``,
    ``confidence``, ``models_trained``, ``fit_seconds`` (summed over fits),
    ``wall_seconds``, ``ci_clipped`` (whether an end was clipped).
    """

    estimate: float
    ci: ConfidenceInterval
    scores: np.ndarray
    splits: list
    metric: str
    confidence: float
    models_trained: int
    fit_seconds: float
    wall_seconds: float
    ci_clipped: bool = False

    def summary(self):
        c = self.ci
        return (f"repeated holdout {self.metric}: {_fmt(self.estimate)} over "
                f"{len(self.scores)} splits (sd {_fmt(np.nanstd(self.scores, ddof=1)) if len(self.scores) > 1 else 'nan'}), "
                f"{self.confidence:.0%} CI [{_fmt(c.low)}, {_fmt(c.high)}] "
                f"(t{_CLIPPED * self.ci_clipped}); {_times(self)}")

    def __repr__(self):
        return f"RepeatedHoldoutResult({self.summary()})"


@dataclass(frozen=True, eq=False)
class BootstrapEstimate(ArrayEquality):
    """Outcome of :func:`bbc_dask.bootstrap_estimate`.

    Attributes: ``estimate`` (mean over rounds of each round's ``method`` value),
    ``method`` (``"oob"``, ``".632"``, ``".632+"``), ``metric``, ``indices`` (rounds × N
    in-bag row positions), ``oob_scores``, ``resub_scores`` (each round's model on its
    out-of-bag rows, and on its own in-bag rows counted with multiplicity), ``gamma`` and
    ``relative_overfitting`` (each round's no-information score γ and rate R; None but
    for .632+), ``models_trained``, ``fit_seconds``, ``wall_seconds``.
    """

    estimate: float
    method: str
    metric: str
    indices: np.ndarray
    oob_scores: np.ndarray
    resub_scores: np.ndarray
    gamma: np.ndarray | None
    relative_overfitting: np.ndarray | None
    models_trained: int
    fit_seconds: float
    wall_seconds: float

    def summary(self):
        extra = ""
        if self.gamma is not None:
            extra = (f", mean γ {_fmt(float(np.mean(self.gamma)))}, mean R "
                     f"{_fmt(float(np.mean(self.relative_overfitting)))}")
        return (f"bootstrap {self.method} {self.metric}: {_fmt(self.estimate)} over "
                f"{len(self.oob_scores)} rounds (mean out-of-bag {_fmt(float(np.nanmean(self.oob_scores)))}, "
                f"resubstitution {_fmt(float(np.nanmean(self.resub_scores)))}{extra}); {_times(self)}")

    def __repr__(self):
        return f"BootstrapEstimate({self.summary()})"
