"""The base class of a metric bound to a target and predictions: what every metric
family (:mod:`._pointwise`, :mod:`._ranking`) implements. See :mod:`._registry` for the
contract of a new metric."""
from __future__ import annotations

import abc

from ._definedness import Definedness


class _Prepared(abc.ABC):
    """Base class of a metric bound to (target, predictions); a family implements
    ``scores`` and ``winner_scores``."""

    def __init__(self, metric, target, pred, sample_block=None):
        self.metric = metric
        self.target = target
        self.n_samples = pred.shape[0]
        self.n_configs = pred.shape[1]
        self.n_repeats = pred.shape[2]
        self.rule = type(self).rule_of(metric, target)

    @classmethod
    def rule_of(cls, metric, target):
        """The :class:`~._definedness.Definedness` of ``metric`` on ``target``: by
        default some weight in bag and some sample out of bag; a family whose metric
        needs more (both classes, a spread of y, a comparable pair) overrides it."""
        return Definedness()

    # API used by the estimators ----------------------------------------------
    @abc.abstractmethod
    def scores(self, counts):
        """Scores ``(B, C, R)`` of every configuration and repeat; NaN where undefined."""

    @abc.abstractmethod
    def winner_scores(self, counts, winners, oob=True):
        """Scores ``(B, R)`` of configuration ``winners[b]`` (out of bag by default)."""

    def defined(self, counts):
        """``(B,)`` bool: the metric is defined for these weights (per repeat all alike)."""
        return self.rule.inbag(counts)

    def defined_oob(self, counts):
        """``(B,)`` bool: the metric is defined on the out-of-bag samples of these weights."""
        return self.rule.oob(counts)
