"""Metric registry with batched, bootstrap-weighted implementations.

Every metric is *larger is better* (names follow scikit-learn's scorer names, so errors
and losses are negated: ``neg_log_loss``). A metric is evaluated on integer *count
weights*: the value with weight vector ``w`` equals scikit-learn's value on the sample in
which row ``i`` is repeated ``w[i]`` times. One call scores every configuration (and every
repeat) for a whole block of bootstraps.

Three families:

- *pointwise* metrics are ratios of weighted sums of per-sample features, so a block of
  bootstraps is a dense matrix product ``counts.T @ features`` (accuracy, balanced
  accuracy, F1, log loss, squared/absolute error, R²);
- *ranking* metrics (ROC AUC, one-vs-rest AUC, concordance index) sort each configuration
  once and reuse that order for every bootstrap, in exact integer arithmetic;
- *general* metrics are any other scikit-learn scorer (a scorer name or a
  ``make_scorer`` object), its own function called on each bootstrap's rows
  (:mod:`._scorer`): slower, and in memory only.

Use :func:`get_metric` to look one up and :data:`METRICS` for the names.

The modules, by job: :mod:`._registry` (the registry, :class:`Metric`, and the contract
of a new metric), :mod:`._target` (the encoded target), :mod:`._counts` (sample blocks
and count matrices), :mod:`._definedness` (when a metric is defined), :mod:`._prepared`
(the base of a metric family), :mod:`._pointwise` and :mod:`._ranking` (the families),
:mod:`._kernels` (their compiled loops).

:data:`SAMPLE_BLOCK` is set here, on this package: every reader looks it up here at call
time.
"""
from ._counts import SAMPLE_BLOCK, _as_counts, sample_blocks
from ._definedness import Definedness, _Classes, _Pairs, _Spread
from ._pointwise import (_F1, _Accuracy, _BalancedAccuracy, _MeanLoss, _NegLogLoss, _NegMAE,
                         _NegMSE, _Pointwise, _R2, _R2Corr)
from ._prepared import _Prepared
from ._ranking import _CIndex, _RocAuc, _RocAucOvo, _sorted_columns
from ._registry import (_DEFS, METRICS, Metric, get_metric, metric_names, metric_of_spec,
                        remember, score_bounds, scorer_metric)
from ._scorer import (COLLECTED, WEIGHT_IS_REPEAT, _ScorerMetric, is_clustering_scorer, scorer_name,
                      uses_positive_class)
from ._target import Target

# The private names above stay importable from here, where the package's documentation
# (``bbc_dask.metrics._Pointwise.fold_sums`` ...) and earlier code name them.
__all__ = ["COLLECTED", "METRICS", "SAMPLE_BLOCK", "WEIGHT_IS_REPEAT", "Definedness", "Metric", "get_metric",
           "is_clustering_scorer", "metric_names", "metric_of_spec", "remember", "sample_blocks",
           "score_bounds", "scorer_metric", "scorer_name", "uses_positive_class"]
