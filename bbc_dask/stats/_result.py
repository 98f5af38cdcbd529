"""Result objects of the estimators (scipy ``BootstrapResult`` style)."""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np

__all__ = ["ArrayEquality", "BBCResult", "ConfidenceInterval", "metric_text", "order_statistic",
           "summarise"]


class ConfidenceInterval(NamedTuple):
    """Two-sided percentile interval."""

    low: float
    high: float


def _same(a, b):
    """Equal values, arrays by shape and elements, NaN equal to NaN (two runs of one
    estimate are equal even where it is undefined)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fc" and b.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


class ArrayEquality:
    """``==`` for result dataclasses that hold arrays (declare them ``eq=False``): field by
    field, arrays by their elements, NaN equal to NaN. The dataclass default compares
    tuples of fields and raises on arrays ("truth value of an array is ambiguous").
    Unhashable, as the arrays they hold."""

    __hash__ = None

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(_same(getattr(self, f.name), getattr(other, f.name)) for f in fields(self))


def order_statistic(values: np.ndarray, q: float) -> float:
    """The paper's ``L(q·B)``: the k-th smallest of the finite values, ``k = ⌈q·B⌉``.

    This is numpy's ``method="inverted_cdf"`` quantile (the smallest value whose empirical
    CDF reaches ``q``); ``q·B`` is rounded to 9 decimals first so that ``0.05·1000`` is 50,
    not 51, despite floating point. For B = 1000 and 95% it gives ``[L(25), L(975)]`` and the
    one-sided lower bound ``L(50)`` exactly as in Algorithm 5 (2018) and Algorithm 1 (2024).
    """
    v = np.sort(values[np.isfinite(values)])
    if v.size == 0:
        return float("nan")
    k = math.ceil(round(q * v.size, 9))
    return float(v[min(max(k, 1), v.size) - 1])


@dataclass(frozen=True, eq=False)
class BBCResult(ArrayEquality):
    """Outcome of a bias-corrected (or comparator) performance estimate.

    Attributes
    ----------
    estimate : float
        Mean of the finite values of the bootstrap distribution (the bias-corrected
        estimate); for :func:`naive_cvt` and :func:`tibshirani_tibshirani` the point estimate.
    confidence_interval : ConfidenceInterval
        Two-sided percentile interval ``(L(α/2·B), L((1-α/2)·B))`` with ``α = 1 -
        confidence_level``; NaN where the method has no bootstrap distribution.
    lower_bound : float
        One-sided lower confidence bound ``L(α·B)`` (BBC-F paper, Algorithm 1).
    bootstrap_distribution : ndarray of shape (B,)
        Out-of-bag score of each bootstrap's winner; NaN for a bootstrap given by
        ``bootstrap_indices`` whose score is undefined (excluded from every summary).
    winners : ndarray of shape (B,)
        Configuration selected in each bootstrap (-1 where selection was undefined).
    selected_config : int
        Winner on all rows: what CVT selects and refits, by ``selection``.
    naive_estimate : float
        Score of ``selected_config`` on all rows by the selection's criterion (pooled, or
        the mean of its fold scores): the optimistic CVT estimate.
    n_bootstraps : int
        Number of bootstraps (B).
    n_redrawn : int
        Bootstraps redrawn because their score was undefined (``random_state`` draws only).
    n_excluded : int
        Bootstraps with an undefined score that were excluded (explicit indices only).
    method : str
        ``"bbc"``, ``"bbc_f"``, ``"naive_cvt"``, ``"tibshirani_tibshirani"`` or
        ``"naive_bootstrap"``.
    metric : str
    confidence_level : float
    selection : str
        How ``selected_config`` was chosen: ``"pooled"`` (the best score on the pooled
        out-of-sample predictions, mean over repeats) or ``"fold_mean"`` (the best mean of
        the (repeat, fold) scores, as BBC-F and the 2024 paper's code select).
    configs : ndarray of int or None
        What the estimate is conditioned on: the configurations each bootstrap selected
        among (a study's indices: its candidates — with BBCD the survivors — or, with
        ``include_incomplete``, every configuration trained on some fold). None: every
        column of the predictions given.
    pos_label : label or None
        The class the metric scored as positive (a study's estimate of a binary metric
        such as ``roc_auc`` or ``f1``: the study's ``pos_label``, by default the larger
        label); None where the metric has no positive class or it was not recorded.
    """

    estimate: float
    confidence_interval: ConfidenceInterval
    lower_bound: float
    bootstrap_distribution: np.ndarray
    winners: np.ndarray
    selected_config: int
    naive_estimate: float
    n_bootstraps: int
    n_redrawn: int
    method: str
    metric: str
    confidence_level: float
    n_excluded: int = 0
    selection: str = "pooled"
    configs: object = None
    pos_label: object = None

    def __repr__(self):
        ci = self.confidence_interval
        pos = "" if self.pos_label is None else f", pos_label={self.pos_label!r}"
        return (
            f"BBCResult(method={self.method!r}, metric={self.metric!r}{pos}, "
            f"estimate={self.estimate:.4f}, confidence_interval=({ci.low:.4f}, {ci.high:.4f}), "
            f"lower_bound={self.lower_bound:.4f}, naive_estimate={self.naive_estimate:.4f}, "
            f"selected_config={self.selected_config}, n_bootstraps={self.n_bootstraps}, "
            f"n_redrawn={self.n_redrawn}, n_excluded={self.n_excluded})"
        )

    def to_dict(self) -> dict:
        """JSON-friendly summary (without the per-bootstrap arrays)."""
        return {
            "method": self.method,
            "metric": self.metric,
            "estimate": self.estimate,
            "confidence_interval": [self.confidence_interval.low, self.confidence_interval.high],
            "lower_bound": self.lower_bound,
            "confidence_level": self.confidence_level,
            "naive_estimate": self.naive_estimate,
            "selected_config": self.selected_config,
            "n_bootstraps": self.n_bootstraps,
            "n_redrawn": self.n_redrawn,
            "n_excluded": self.n_excluded,
            "selection": self.selection,
            "n_configs": None if self.configs is None else len(self.configs),
            "pos_label": self.pos_label,
        }


def metric_text(metric, pos_label=None):
    """``metric`` as a report names it: with its positive class where it has one
    (``"roc_auc (positive class: 'malignant')"``)."""
    return metric if pos_label is None else f"{metric} (positive class: {pos_label!r})"


def summarise(dist, winners, *, selected, naive, n_redrawn, method, metric, confidence_level,
              selection="pooled"):
    dist = np.asarray(dist, dtype=np.float64)
    finite = np.isfinite(dist)
    alpha = 1.0 - confidence_level
    est = float(dist[finite].mean()) if finite.any() else float("nan")
    return BBCResult(
        estimate=est,
        confidence_interval=ConfidenceInterval(
            order_statistic(dist, alpha / 2), order_statistic(dist, 1 - alpha / 2)
        ),
        lower_bound=order_statistic(dist, alpha),
        bootstrap_distribution=dist,
        winners=np.asarray(winners, dtype=np.int64),
        selected_config=int(selected),
        naive_estimate=float(naive),
        n_bootstraps=int(dist.size),
        n_redrawn=int(n_redrawn),
        n_excluded=int((~finite).sum()),
        method=method,
        metric=metric,
        confidence_level=float(confidence_level),
        selection=selection,
    )
