"""The pieces of the 2024 paper's AUC bounds that are not a selection: pROC's AUC, DeLong,
Hanley-McNeil, bootstrap tilting, R's root finder.

Every AUC here is pROC's ``auc(labels, scores)`` with ``direction="auto"``: the AUC is
oriented by the class medians, so ``1 - AUC`` when the controls' median is above the
cases' (spec ``ci_methods.md`` section 2). It is computed as pROC does, bit for bit (its
trapezoid sum, summed in long double as R's ``sum``): the tilting p-values compare every
bootstrap AUC with the observed one (``t == t0``), and a rational computation differs
from pROC's in the last bit often enough to move them (5 of 2000 resamples on the
reference example 3, p(0) = 0.54875 against R's 0.5475).

References
----------
Paraschakis, Castellani, Borboudakis, Tsamardinos (2024). Confidence interval estimation
of predictive performance in the context of AutoML. AutoML 2024, arXiv:2406.08099.
DeLong, DeLong, Clarke-Pearson (1988). Biometrics 44:837. Sun, Xu (2014). IEEE SPL 21:1389.
Hanley, McNeil (1982). Radiology 143:29. Davison, Hinkley (1997), ch. 9 (tilting).
"""
from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

#: R's ``.Machine$double.eps^0.25``: uniroot's default tolerance.
UNIROOT_TOL = 2.0 ** -13
_EPS = np.finfo(float).eps


def qnorm(p):
    """R's ``qnorm`` (Wichura's AS 241, as the standard library computes it)."""
    return NormalDist().inv_cdf(p)


def _medians(sorted_values, counts):
    """Medians (R's, the mean of the two middle values for an even count) of ``sorted_values``
    repeated ``counts[r]`` times, for each row ``r`` of the (R, m) counts."""
    cum = np.cumsum(counts, axis=1)
    n = cum[:, -1:]
    lo = (cum < (n + 1) // 2).sum(axis=1)  # 0-based index of the lower middle value
    hi = (cum < n // 2 + 1).sum(axis=1)
    return (sorted_values[lo] + sorted_values[hi]) / 2


def proc_auc(values, cases, controls, flip):
    """pROC's AUC, bit for bit: the trapezoid sum of ``auc.roc`` over the ROC points of
    ``roc.utils.perfs.all.fast``, summed in order in long double (R's ``sum``).

    Each row ``r`` is one sample: ``values[r]`` sorted ascending (ties allowed), with
    ``cases[r, j]`` / ``controls[r, j]`` rows of each class at ``values[r, j]``; ``flip[r]``
    is pROC's direction ">" (the controls' median above the cases'). A value held by no row
    adds a point equal to its neighbour's, whose trapezoid is an exact zero.
    """
    values = np.broadcast_to(values, cases.shape)
    n1, n0 = cases.sum(axis=1, keepdims=True), controls.sum(axis=1, keepdims=True)
    m = cases.shape[1]
    new = np.ones(cases.shape, dtype=bool)
    new[:, 1:] = values[:, 1:] != values[:, :-1]
    pos = np.arange(m)
    # direction "<": rows at or above each tie group's value are called cases, from the
    # lowest value up, then the empty point (0, 0)
    start = np.maximum.accumulate(np.where(new, pos, 0), axis=1)
    before_c = np.take_along_axis(np.cumsum(cases, axis=1) - cases, start, axis=1)
    before_d = np.take_along_axis(np.cumsum(controls, axis=1) - controls, start, axis=1)
    tp_lt = np.concatenate([n1 - before_c, np.zeros_like(n1)], axis=1)
    fp_lt = np.concatenate([n0 - before_d, np.zeros_like(n0)], axis=1)
    # direction ">": rows at or below each group's value, from the highest value down
    last = np.ones(cases.shape, dtype=bool)
    last[:, :-1] = new[:, 1:]
    end = np.minimum.accumulate(np.where(last, pos, m - 1)[:, ::-1], axis=1)[:, ::-1]
    through_c = np.take_along_axis(np.cumsum(cases, axis=1), end, axis=1)
    through_d = np.take_along_axis(np.cumsum(controls, axis=1), end, axis=1)
    tp_gt = np.concatenate([through_c[:, ::-1], np.zeros_like(n1)], axis=1)
    fp_gt = np.concatenate([through_d[:, ::-1], np.zeros_like(n0)], axis=1)
    flip = np.asarray(flip)[:, None]
    se = np.where(flip, tp_gt, tp_lt) / n1
    sp = (n0 - np.where(flip, fp_gt, fp_lt)) / n0
    terms = ((se[:, 1:] + se[:, :-1]) / 2) * (sp[:, 1:] - sp[:, :-1])
    return np.cumsum(terms.astype(np.longdouble), axis=1)[:, -1].astype(np.float64)


class PairedAUC:
    """pROC's AUC (direction "auto") of one score column ``s`` on labelled rows ``y``
    (0/1), for the rows themselves and for any frequency matrix over them.

    ``of(F)`` takes an (R, n) matrix of multiplicities (a bootstrap; every row holds both
    classes) and returns the R AUCs, vectorised over the distinct values of ``s``.
    """

    def __init__(self, s, y):
        s = np.asarray(s, dtype=np.float64)
        self.values, inverse = np.unique(s, return_inverse=True)
        onehot = np.zeros((len(s), len(self.values)))
        onehot[np.arange(len(s)), inverse] = 1.0
        self._case_at = onehot * (y == 1)[:, None]
        self._control_at = onehot * (y == 0)[:, None]
        self._cases, self._controls = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
        self._oc = np.argsort(s[self._cases], kind="stable")
        self._o0 = np.argsort(s[self._controls], kind="stable")
        self._sc, self._s0 = s[self._cases][self._oc], s[self._controls][self._o0]

    def of(self, freq):
        f = np.asarray(freq, dtype=np.float64)
        flip = (_medians(self._s0, f[:, self._controls][:, self._o0])
                > _medians(self._sc, f[:, self._cases][:, self._oc]))
        return proc_auc(self.values[None, :], f @ self._case_at, f @ self._control_at, flip)

    def observed(self):
        return float(self.of(np.ones((1, len(self._cases) + len(self._controls))))[0])


def auc_columns(scores, y):
    """pROC's AUC (direction "auto") of every column of the (m, C) ``scores`` on ``y``
    (0/1, both classes present)."""
    scores = np.asarray(scores, dtype=np.float64)
    case = y == 1
    order = np.argsort(scores, axis=0, kind="stable")
    values = np.take_along_axis(scores, order, axis=0).T
    is_case = case[order].T.astype(np.float64)
    flip = np.median(scores[~case], axis=0) > np.median(scores[case], axis=0)
    return proc_auc(values, is_case, 1.0 - is_case, flip)


def delong_lower(s, y, level):
    """DeLong's (1988) one-sided lower bound at ``level``, as ``pROC::ci.auc(y, s,
    conf.level = 1 - 2 level)[1]`` (Sun & Xu's mid-rank placements; clipped to [0, 1]).

    Returns ``(bound, reason)``; the bound is NaN when a class has one row or none."""
    from scipy.stats import rankdata

    s = np.asarray(s, dtype=np.float64)
    x, z = s[y == 1], s[y == 0]  # cases, controls
    m, n = len(x), len(z)
    if m <= 1 or n <= 1:
        return math.nan, (f"DeLong's variance needs two cases and two controls; the "
                          f"evaluation part has {m} and {n}")
    if np.median(z) > np.median(x):  # pROC's direction ">": placements of the negated scores
        x, z = -x, -z
    ranks = rankdata(np.concatenate([x, z]))
    v10 = (ranks[:m] - rankdata(x)) / n
    v01 = 1.0 - (ranks[m:] - rankdata(z)) / m
    theta = v10.sum() / m
    var = ((v10 - theta) ** 2).sum() / (m - 1) / m + ((v01 - theta) ** 2).sum() / (n - 1) / n
    conf = 1.0 - 2.0 * level
    bound = theta + math.sqrt(var) * qnorm((1.0 - conf) / 2.0)
    return min(max(bound, 0.0), 1.0), None


def hanley_mcneil_lower(s, y, auc, level, n_total, threshold=0.0):
    """Hanley & McNeil's lower bound as the paper's code computes it: correct and wrong
    classifications at ``threshold`` stand for cases and controls, ``n_total`` (every row,
    learning part included) for the sample size, ``n_success + 1`` for ``n1 - 1``; no
    clipping (spec section 5). Returns ``(bound, reason, n_success)``."""
    s = np.asarray(s, dtype=np.float64)
    n_success = int(((s > threshold).astype(float) == y).sum())
    n_fail = n_total - n_success
    q1, q2 = auc / (2 - auc), 2 * auc ** 2 / (1 + auc)
    num = auc * (1 - auc) + (n_success + 1) * (q1 - auc ** 2) + (n_fail - 1) * (q2 - auc ** 2)
    den = n_success * n_fail
    if den <= 0 or not num / den >= 0:
        return math.nan, (f"Hanley-McNeil's variance is undefined with {n_success} correct "
                          f"and {n_fail} wrong classifications at threshold {threshold}"), n_success
    return auc - qnorm(1 - level) * math.sqrt(num / den), None, n_success


def zeroin(f, ax, bx, fa, fb, tol=UNIROOT_TOL, maxit=1000):
    """R's ``zeroin2`` (Brent's root finder behind ``uniroot``), line by line, so that a
    step objective lands where R's does."""
    a, b, c, fc = ax, bx, ax, fa
    if fa == 0.0:
        return a
    if fb == 0.0:
        return b
    for _ in range(maxit + 1):
        prev_step = b - a
        if abs(fc) < abs(fb):
            a, b, c = b, c, b
            fa, fb, fc = fb, fc, fb
        tol_act = 2 * _EPS * abs(b) + tol / 2
        new_step = (c - b) / 2
        if abs(new_step) <= tol_act or fb == 0.0:
            return b
        if abs(prev_step) >= tol_act and abs(fa) > abs(fb):
            cb = c - b
            if a == c:
                t1 = fb / fa
                p, q = cb * t1, 1.0 - t1
            else:
                q, t1, t2 = fa / fc, fb / fc, fb / fa
                p = t2 * (cb * q * (q - t1) - (b - a) * (t1 - 1.0))
                q = (q - 1.0) * (t1 - 1.0) * (t2 - 1.0)
            if p > 0:
                q = -q
            else:
                p = -p
            if p < (0.75 * cb * q - abs(tol_act * q) / 2) and p < abs(prev_step * q / 2):
                new_step = p / q
        if abs(new_step) < tol_act:
            new_step = tol_act if new_step > 0 else -tol_act
        a, fa = b, fb
        b += new_step
        fb = f(b)
        if (fb > 0 and fc > 0) or (fb < 0 and fc < 0):
            c, fc = a, fa
    return b


def empinf_reg(freq, t, y):
    """``boot::empinf(type = "reg")`` of a bootstrap stratified by ``y``: regress the
    replicates on the frequencies over class sizes (the first row of each class dropped),
    then centre the coefficients within each class."""
    freq = np.asarray(freq, dtype=np.float64)
    fin = np.isfinite(t)
    freq, t = freq[fin], np.asarray(t, dtype=np.float64)[fin]
    n = freq.shape[1]
    sizes = np.where(y == 1, (y == 1).sum(), (y == 0).sum()).astype(np.float64)
    first = {int(np.flatnonzero(y == g)[0]) for g in (0, 1)}
    keep = np.array([i for i in range(n) if i not in first])
    design = np.column_stack([np.ones(len(t)), freq[:, keep] / sizes[keep]])
    coef = np.linalg.lstsq(design, t, rcond=None)[0][1:]
    ell = np.zeros(n)
    ell[keep] = coef
    for g in (0, 1):
        ell[y == g] -= ell[y == g].mean()
    return ell


class Tilting:
    """Exponential tilting of a stratified bootstrap (spec section 7, steps 2-4): the
    tilted probabilities ``p(tau)`` over the n evaluation rows (one stratum, as
    ``boot::exp.tilt``'s default) and the importance weights of the R resamples,
    ``prod_i (n p_i)^f[r, i]`` computed in log space (R's direct product can underflow)."""

    def __init__(self, freq, t, y):
        self.freq = np.asarray(freq, dtype=np.float64)
        self.n = self.freq.shape[1]
        self.influence = empinf_reg(self.freq, t, y)

    def probabilities(self, tau):
        lam = tau * self.n  # exp.tilt(L, lambda = tau * n): exp(lambda * L / n)
        e = np.exp(lam * self.influence / self.n)
        return e / e.sum()

    def weights(self, tau):
        return np.exp(self.freq @ np.log(self.probabilities(tau) * self.n))


def calibrate(p_value, level, step):
    """The bracket and the root of the reference code (spec section 7 steps 6-7).

    Returns a dict: ``tau_min``, ``p_tau_min``, ``p_max``, ``feasible`` and, if feasible,
    ``tau`` (R's ``uniroot`` of ``(p - level) + 1000 [p > level]``) and ``p_tau``."""
    tau_min, p_min = 0.0, 1.0
    while p_min > level / 2 and tau_min > -20:
        tau_min = tau_min - step  # repeated subtraction, as R: may end at -20.000000000000014
        p_min = p_value(tau_min)
    p_max = p_value(0.0)
    out = {"tau_min": tau_min, "p_tau_min": p_min, "p_max": p_max,
           "feasible": bool(p_min < level / 2 and p_max > 2 * level)}
    if not out["feasible"]:
        return out

    def objective(tau):
        p = p_value(tau)
        return (p - level) + 1000.0 * (p > level)

    tau = zeroin(objective, tau_min, 0.0, objective(tau_min), objective(0.0))
    out.update(tau=tau, p_tau=p_value(tau))
    return out


def stratified_freq(y, n_resamples, gen, probabilities=None):
    """An (R, n) frequency matrix of ``boot(..., strata = y)``: each class resampled with
    replacement to its own size, uniformly or with ``probabilities`` (renormalised within
    the class, as ``boot``'s importance resampling)."""
    n = len(y)
    freq = np.zeros((n_resamples, n), dtype=np.int64)
    rows = np.arange(n_resamples)[:, None]
    for g in (0, 1):
        idx = np.flatnonzero(y == g)
        if probabilities is None:
            pick = gen.integers(0, len(idx), size=(n_resamples, len(idx)))
        else:
            q = probabilities[idx] / probabilities[idx].sum()
            pick = np.minimum(np.searchsorted(np.cumsum(q), gen.random((n_resamples, len(idx))),
                                              side="right"), len(idx) - 1)
        np.add.at(freq, (rows, idx[pick]), 1)
    return freq


def weighted_ecdf_at(t, w, x):
    """``spatstat.geom::ewcdf(t, w)(x)``: the weight share of replicates ``<= x``; NaN when
    every weight underflowed to 0 (an extreme tilt), as R's 0/0 — the calibration then
    treats it as R does, so it is no warning."""
    order = np.argsort(t, kind="stable")
    cum = np.cumsum(w[order])
    k = np.searchsorted(t[order], x, side="right")
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(cum[k - 1] / cum[-1]) if k else 0.0
