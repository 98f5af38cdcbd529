"""Lower confidence bounds on the AUC of a selected configuration by the seven comparators of
the BBC-F paper: DL, HM, BT, DL10p, HM10p, BT10p and MABT.

They follow a selection process of their own, unlike BBC and BBC-F (spec ``ci_methods.md``,
section 3): the rows are split into a learning part (75%) and an evaluation part; the
configurations are scored by their fold-averaged AUC on the learning rows; DL, HM and BT
bound the best one on the evaluation rows, and the "10p" methods take the top 10% by that
score, pick the best of them on the evaluation rows and pay for that second selection
(Šidák for DL10p and BT10p; MABT's max-T over the preselected set). Everything follows the
authors' R code, quirks included (HM's sample sizes, HM10p without Šidák), so that the
paper's numbers can be reproduced; the quirks are named where they happen.

References
----------
Paraschakis, Castellani, Borboudakis, Tsamardinos (2024). Confidence interval estimation
of predictive performance in the context of AutoML. AutoML 2024, arXiv:2406.08099.
Rink, Brannath (2025). Post-selection confidence bounds for prediction performance.
Machine Learning 114:82 (MABT).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import _validation as validation
from .._random import as_seed_sequence, child_generator
from ..exceptions import InvalidParameterError
from ..metrics import get_metric
from . import CI_METHODS
from . import _auc_ci as auc_ci
from ._result import ArrayEquality
from .._doors import door, warn

__all__ = ["METHODS", "SelectionCI", "selection_ci"]

#: The methods, with the names of the paper and its R code.
METHODS = CI_METHODS
#: The ``resamples`` keys (the reference files' names) each bootstrap method replays.
RESAMPLE_KEYS = {"tilting": ("bt_boot", "BT_boundboot"),
                 "tilting_10p": ("bt10p_boot", "BT10p_boundboot"),
                 "mabt": ("mabt_boot", "MABT_boundboot")}
_MAX_SPLIT_DRAWS = 10_000


@dataclass(frozen=True, repr=False, eq=False)
class SelectionCI(ArrayEquality):
    """A one-sided ``1 - alpha`` lower confidence bound on the AUC of one configuration.

    Attributes
    ----------
    method : str
    lower_bound : float
        NaN where the method fails (R gives NA); ``reason`` then says why.
    selected : int
        The 0-based configuration the bound is for: the best on the learning part (DL, HM,
        BT) or the best of the top 10% on the evaluation part (the 10p methods, MABT).
    auc : float
        The selected configuration's AUC on the evaluation part.
    alpha : float
        The level of the bound: Šidák's ``1 - (1 - alpha)^(1/k)`` for DL10p and BT10p.
    k : int
        How many configurations the 10p methods chose among (1 for DL, HM and BT).
    learn_ids : ndarray
        The rows of the learning part (0-based); the rest is the evaluation part.
    details : dict
        The method's own numbers: ``tau``, ``p_tau``, ``tau_min``, ``p_tau_min``, ``p_max``,
        ``feasible`` (tilting), ``c_alpha`` (MABT), ``n_success``/``n_fail`` (HM), the
        preselected set ``top``.
    reason : str or None
    n_bootstraps : int
        Resamples each of the method's bootstraps drew (tilting methods and MABT: the
        frequency matrix's rows); 0 for DeLong and Hanley-McNeil, which draw none.
    above_observed : bool
        The bound lies above ``auc`` (a tilted bound, see
        :class:`~bbc_dask.exceptions.BoundAboveObservedWarning`): it says nothing then.
    """

    method: str
    lower_bound: float
    selected: int
    auc: float
    alpha: float
    k: int
    learn_ids: np.ndarray
    details: dict = field(default_factory=dict)
    reason: str | None = None
    n_bootstraps: int = 0

    @property
    def above_observed(self):
        """Whether the bound lies above the selected configuration's evaluation AUC (see
        :class:`~bbc_dask.exceptions.BoundAboveObservedWarning`)."""
        return bool(self.lower_bound > self.auc)

    def to_dict(self):
        """JSON-ready: the bound (None for NaN), the selection, the details."""
        lb = None if math.isnan(self.lower_bound) else self.lower_bound
        return {"method": self.method, "lower_bound": lb, "selected": self.selected,
                "auc": self.auc, "alpha": self.alpha, "k": self.k, "reason": self.reason,
                "above_observed": self.above_observed, "n_bootstraps": self.n_bootstraps,
                "n_learn": int(len(self.learn_ids)),
                "details": {k: (v.tolist() if isinstance(v, np.ndarray) else v)
                            for k, v in self.details.items()}}

    def __repr__(self):
        bound = "NaN" if math.isnan(self.lower_bound) else f"{self.lower_bound:.4f}"
        why = f", reason={self.reason!r}" if self.reason else ""
        return (f"SelectionCI(method={self.method!r}, lower_bound={bound}, "
                f"selected={self.selected}, auc={self.auc:.4f}, alpha={self.alpha:.4g}{why})")


@door("selection_ci")
def selection_ci(predictions, y, folds, method="mabt", *, alpha=0.05, learn_ids=None,
                 learn_frac=0.75, n_bootstraps=2000, random_state=None, resamples=None,
                 pos_label=None):
    """Lower confidence bound on the AUC of a selected configuration (the comparators of
    Paraschakis et al., 2024).

    Parameters
    ----------
    predictions : array-like of shape (N, C) or (N, C, 1)
        Out-of-sample scores of the positive class, one column per configuration.
    y : array-like of shape (N,)
        Binary labels.
    folds : array-like of shape (N,)
        The cross-validation fold of each row (selection averages the fold AUCs).
    method : {"delong", "hanley_mcneil", "tilting", "delong_10p", "hanley_mcneil_10p", \
"tilting_10p", "mabt"}
        R's DL, HM, BT, DL10p, HM10p, BT10p and MABT.
    alpha : float, default=0.05
        The bound holds with probability ``1 - alpha``.
    learn_ids : array-like of int, optional
        The rows of the learning part; the rest is the evaluation part. None: drawn from
        ``random_state`` (``floor(learn_frac * N)`` rows), again until every fold has
        learning rows of both classes and the evaluation part has both classes.
    learn_frac : float, default=0.75
    n_bootstraps : int, default=2000
        Resamples of each bootstrap (tilting methods; the bound's second bootstrap too).
    random_state : None, int, SeedSequence or Generator
    resamples : dict, optional
        Frequency matrices (R x n_eval, rows = resamples, columns = the evaluation rows in
        increasing order) to use instead of random draws, keyed as the reference files:
        ``bt_boot``, ``BT_boundboot``, ``bt10p_boot``, ``BT10p_boundboot``, ``mabt_boot``,
        ``MABT_boundboot``. Replays R's draws exactly.
    pos_label : label, optional
        The positive class (default: the larger label).

    Returns
    -------
    SelectionCI
        ``lower_bound`` is NaN with a ``reason`` where the method fails (as R gives NA):
        too few rows of a class for DeLong, an infeasible tilting bracket, no valid split.

    References
    ----------
    Paraschakis et al. (2024), AutoML, arXiv:2406.08099; the spec ``ci_methods.md``
    (checked against the authors' R code). Rink & Brannath (2025), Mach. Learn. 114:82.
    """
    data = _check(predictions, y, folds, method, alpha, learn_frac, n_bootstraps, resamples,
                  pos_label)
    root = as_seed_sequence(random_state)
    pred, y01, folds = data
    n = len(y01)
    if learn_ids is None:
        learn, reason = _draw_split(y01, folds, learn_frac, child_generator(root, "selection_ci", 0))
    else:
        learn = _as_learn_ids(learn_ids, n)
        reason = _split_problem(learn, y01, folds)
    if reason is not None:
        return SelectionCI(method, math.nan, -1, math.nan, alpha, 0,
                           np.zeros(0, int) if learn is None else learn, reason=reason)
    sel = _select(pred, y01, folds, learn)
    res = _bound(method, pred, y01, sel, alpha, n_bootstraps, resamples or {},
                 child_generator(root, "selection_ci", 1 + list(METHODS).index(method)))
    if res.above_observed:
        from ..exceptions import BoundAboveObservedWarning

        warn(BoundAboveObservedWarning(
            f"The {method} lower bound {res.lower_bound:.4f} is above the selected "
            f"configuration's AUC on the evaluation part ({res.auc:.4f}): tilted that far, "
            f"the resamples' AUCs fall below 0.5 and pROC's direction 'auto' (the paper's R "
            f"code) counts them as 1 - AUC. The bound says nothing here."), stacklevel=2)
    return res


def _check(predictions, y, folds, method, alpha, learn_frac, n_bootstraps, resamples, pos_label):
    validation.check_one_of(method, "method", tuple(METHODS))
    validation.check_real_open(alpha, "alpha", 0.0, 0.5)
    validation.check_real_open(learn_frac, "learn_frac", 0.0, 1.0)
    validation.check_int(n_bootstraps, "n_bootstraps", low=2)
    validation.check_instance(resamples, "resamples", dict, "a dict of frequency matrices or None",
                     allow_none=True)
    metric = get_metric("roc_auc")
    target = validation.as_target(y, metric, pos_label=pos_label)
    pred, _ = validation.as_predictions(predictions, metric)
    if pred.shape[2] != 1:
        raise InvalidParameterError.of("predictions", "of shape (N, C) or (N, C, 1)",
                                       shown=f"shape {pred.shape}")
    pred = validation.encode_predictions(pred, None, metric, target, check_scores=True)[:, :, 0]
    n = pred.shape[0]
    f = validation.per_sample_and_repeat(folds, "folds", n, 1, "one fold id")[:, 0]
    return pred, (target.codes == target.pos_code).astype(np.int64), f


def _as_learn_ids(learn_ids, n):
    ids = np.asarray(learn_ids)
    if (ids.ndim != 1 or ids.dtype.kind not in "iu" or len(ids) < 2 or len(ids) > n - 2
            or ids.min() < 0 or ids.max() >= n or len(np.unique(ids)) != len(ids)):
        raise InvalidParameterError.of(
            "learn_ids", f"distinct row indices in [0, {n}) leaving at least 2 rows "
            "for the evaluation part", learn_ids)
    return np.sort(ids).astype(np.int64)


def _split_problem(learn, y, folds):
    """Why the split cannot serve (the reference code's redraw condition), or None."""
    ev = np.setdiff1d(np.arange(len(y)), learn)
    for k in np.unique(folds):
        yk = y[learn][folds[learn] == k]
        if yk.size == 0 or yk.min() == yk.max():
            return (f"fold {k} has no learning rows of both classes (each fold's AUC on the "
                    f"learning part needs a case and a control)")
    if y[ev].min() == y[ev].max():
        return "the evaluation part holds one class only"
    return None


def _draw_split(y, folds, learn_frac, gen):
    """The learning rows: ``floor(learn_frac N)`` drawn without replacement, again until the
    split serves. The reference code loops forever where no split can; this one says why."""
    n = len(y)
    n_learn = int(learn_frac * n)
    for k in np.unique(folds):
        if y[folds == k].min() == y[folds == k].max():
            return None, f"fold {k} holds one class only (N = {n} is too small for the split)"
    if n_learn < 2 or n - n_learn < 2:
        return None, f"N = {n} is too small for a {learn_frac:g} learning split"
    for _ in range(_MAX_SPLIT_DRAWS):
        learn = np.sort(gen.choice(n, n_learn, replace=False))
        if _split_problem(learn, y, folds) is None:
            return learn, None
    return None, (f"no split of N = {n} rows in {_MAX_SPLIT_DRAWS} draws gives every fold "
                  f"learning rows of both classes and an evaluation part of both classes "
                  f"(too few rows of the minority class for the folds)")


@dataclass
class _Selection:
    learn: np.ndarray
    eval: np.ndarray
    best: int  # c*: the best fold-averaged AUC on the learning part
    top: np.ndarray  # T: the configurations at or above the 0.9 quantile of that score
    final: int  # c^: the best of T on the evaluation part
    position: int  # c^'s position in T


def _select(pred, y, folds, learn):
    """Spec section 3 (S2-S4): fold-averaged AUC on the learning rows, the best; the top
    10% by R's type-7 quantile (ties at the quantile kept); the best of those on the
    evaluation rows. First maxima, as R's ``which.max``."""
    ev = np.setdiff1d(np.arange(len(y)), learn)
    ids = list(dict.fromkeys(folds.tolist()))  # R's unique(): order of first appearance
    weight = 1.0 / len(ids)
    valid = np.zeros(pred.shape[1])
    for k in ids:  # the reference BLAS's order of M %*% rep(1/K, K)
        rows = learn[folds[learn] == k]
        valid += weight * auc_ci.auc_columns(pred[rows], y[rows])
    top = np.flatnonzero(valid >= _quantile7(valid, 0.9))
    position = int(np.argmax(auc_ci.auc_columns(pred[np.ix_(ev, top)], y[ev])))
    return _Selection(learn, ev, int(np.argmax(valid)), top, int(top[position]), position)


def _quantile7(x, prob):
    """R's ``quantile(x, prob)`` (type 7) with R's arithmetic."""
    x = np.sort(x)
    h = 1 + (len(x) - 1) * prob
    lo, hi = math.floor(h), math.ceil(h)
    q = x[lo - 1]
    if h > lo and x[hi - 1] != q:
        g = h - lo
        q = (1 - g) * q + g * x[hi - 1]
    return q


def _bound(method, pred, y, sel, alpha, n_boot, resamples, gen):
    ten = method.endswith("_10p") or method == "mabt"
    col = sel.final if ten else sel.best
    k = len(sel.top) if ten else 1
    level = 1 - (1 - alpha) ** (1 / k) if method in ("delong_10p", "tilting_10p") else alpha
    ye, se = y[sel.eval], pred[sel.eval, col]
    pairs = auc_ci.PairedAUC(se, ye)
    auc = pairs.observed()
    details = {"top": sel.top, "best": sel.best, "final": sel.final}
    drawn = 0
    if method.startswith("delong"):
        bound, reason = auc_ci.delong_lower(se, ye, level)
    elif method.startswith("hanley"):
        # the reference code's HM10p keeps alpha (no Šidák), a quirk the paper reports with
        bound, reason, n_success = auc_ci.hanley_mcneil_lower(se, ye, auc, level, len(y))
        details.update(n_success=n_success, n_fail=len(y) - n_success)
    else:
        boot_key, bound_key = RESAMPLE_KEYS[method]
        freq = _resamples(resamples, boot_key, ye, n_boot, gen, len(sel.eval))
        drawn = len(freq)
        if method == "mabt":
            cols = [pairs if c == col else auc_ci.PairedAUC(pred[sel.eval, c], ye) for c in sel.top]
            tilt, p_value, details["c_alpha"] = _mabt(cols, sel.position, freq, ye, level, auc)
            step = 0.1
        else:
            tilt, p_value = _tilting(pairs, freq, ye, auc)
            step = 1.0
        cal = auc_ci.calibrate(p_value, level, step)
        details.update(cal)
        bound, reason = _tilted_bound(cal, tilt, pairs, ye, resamples, bound_key, n_boot, gen,
                                      level)
    return SelectionCI(method, float(bound), col, auc, level, k, sel.learn, details, reason,
                       drawn)


def _resamples(resamples, key, y, n_boot, gen, n_eval, probabilities=None):
    if key in resamples:
        freq = np.asarray(resamples[key])
        if freq.ndim != 2 or freq.shape[1] != n_eval:
            raise InvalidParameterError.of(
                "resamples", f"frequency matrices with {n_eval} columns (the "
                f"evaluation rows)", shown=f"{key!r} of shape {freq.shape}")
        return freq
    return auc_ci.stratified_freq(y, n_boot, gen, probabilities)


def _tilting(pairs, freq, y, t0):
    """BT's p-value (spec section 7 step 5): the importance-weighted share of replicates
    above the observed AUC, ties counted half, over R (not the sum of the weights)."""
    t = pairs.of(freq)
    tilt = auc_ci.Tilting(freq, t, y)
    above, tied = (t > t0).astype(float), (t == t0).astype(float)

    def p_value(tau):
        w = tilt.weights(tau)
        return (np.sum(w * above) + np.sum(w * tied) / 2) / len(t)
    return tilt, p_value


def _mabt(cols, position, freq, y, level, t0):
    """MABT's p-value (spec section 8): the tilted ECDF of the selected configuration's
    replicates at its observed AUC, against the ECDF of the row maxima of the
    rank-uniformised replicates of all preselected configurations (ties get the largest
    rank; ``R + 1`` in the denominator)."""
    from scipy.stats import rankdata

    t_all = np.column_stack([c.of(freq) for c in cols])
    n_rep = t_all.shape[0]
    row_max = np.sort((rankdata(t_all, method="max", axis=0) / (n_rep + 1)).max(axis=1))
    t = t_all[:, position]
    tilt = auc_ci.Tilting(freq, t, y)

    def p_value(tau):
        f_tau = auc_ci.weighted_ecdf_at(t, tilt.weights(tau), t0)
        return 1 - np.searchsorted(row_max, f_tau, side="right") / n_rep
    # the critical value, for the record: p <= level iff F_tau >= the j*-th row maximum
    j = next(j for j in range(1, n_rep + 1) if 1 - j / n_rep <= level)
    return tilt, p_value, float(row_max[j - 1])


def _tilted_bound(cal, tilt, pairs, y, resamples, key, n_boot, gen, level):
    """The bound (spec section 7 step 8): the mean AUC over a second stratified bootstrap
    drawn with the tilted probabilities at tau*."""
    if not cal["feasible"]:
        why = (f"p({cal['tau_min']:.4g}) = {cal['p_tau_min']:.4g} is not below "
               f"{level / 2:.4g}" if not cal["p_tau_min"] < level / 2
               else f"p(0) = {cal['p_max']:.4g} is not above {2 * level:.4g}")
        return math.nan, (f"tilting is infeasible: {why} (the bootstrap AUCs are too coarse "
                          f"or tied for this evaluation part)")
    q = tilt.probabilities(cal["tau"])
    freq = _resamples(resamples, key, y, n_boot, gen, len(y), probabilities=q)
    return float(np.mean(pairs.of(freq))), None
