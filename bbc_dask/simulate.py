"""Synthetic out-of-sample prediction matrices, as in the papers' simulation studies.

Each generator returns a :class:`SimulatedMatrix` with the predictions, labels, fold ids and
the *true* performance of every configuration, so that the coverage of an interval for the
selected configuration can be measured exactly.

References
----------
.. [1] Tsamardinos, Greasidou, Borboudakis, Machine Learning 107 (2018), §5.1.
.. [2] Paraschakis, Castellani, Borboudakis, Tsamardinos (2024), §4 "Generation of
   Simulated Data".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm
from sklearn.model_selection import StratifiedKFold

from . import _validation as validation
from ._random import as_seed_sequence, child_generator
from .exceptions import InvalidParameterError
from .stats import ArrayEquality
from ._doors import door

__all__ = ["SimulatedMatrix", "accuracy_matrix", "auc_matrix"]


@dataclass(frozen=True, eq=False)
class SimulatedMatrix(ArrayEquality):
    """A simulated CVT outcome.

    Attributes
    ----------
    predictions : ndarray of shape (N, C), or (N, C, R) with repeats
    y : ndarray of shape (N,)
    folds : ndarray of shape (N,), or (N, R) with repeats
        Stratified fold ids 0..K-1.
    true_performance : ndarray of shape (C,)
        Population performance of every configuration.
    metric : str
        The metric the predictions are made for (``"accuracy"`` or ``"roc_auc"``).
    """

    predictions: np.ndarray
    y: np.ndarray
    folds: np.ndarray
    true_performance: np.ndarray
    metric: str


def _beta_params(a, b):
    for name, v in (("a", a), ("b", b)):
        validation.check_real_open(v, name, 0.0, np.inf)


def _stratified_folds(y, n_splits, gen):
    skf = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=int(gen.integers(2**31)))
    folds = np.empty(y.shape[0], dtype=np.int64)
    for k, (_, test) in enumerate(skf.split(np.zeros((y.shape[0], 1)), y)):
        folds[test] = k
    return folds


@door("accuracy_matrix")
def accuracy_matrix(n_samples, n_configs, *, a=9.0, b=6.0, n_splits=10, random_state=None):
    """Class-label predictions with known accuracies (2018 paper, §5.1).

    True accuracies ``P_j ~ Beta(a, b)``; sample ``i`` is predicted correctly by
    configuration ``j`` when ``u_ij < P_j`` with ``u_ij ~ U(0, 1)`` independent. (The
    paper writes ``r_i``; a draw shared by all configurations would make the best
    configuration correct on a superset of samples and leave no winner's curse, which the
    paper's own results show, so the draws are independent per configuration.) Labels are
    balanced binary {0, 1}; a wrong prediction is the other label.

    Parameters
    ----------
    n_samples, n_configs : int
    a, b : float, default=(9, 6)
        Beta parameters: (9, 6), (14, 6), (24, 6), (54, 6) give mean 0.6 ... 0.9.
    n_splits : int, default=10
    random_state : int, SeedSequence, Generator or None

    Returns
    -------
    SimulatedMatrix
    """
    n = validation.check_int(n_samples, "n_samples", low=2)
    c = validation.check_int(n_configs, "n_configs")
    k = validation.check_int(n_splits, "n_splits", low=2, high=max(2, n // 2))
    _beta_params(a, b)
    gen = child_generator(as_seed_sequence(random_state), "simulate", 0)
    y = gen.permutation(np.arange(n) % 2)
    p = gen.beta(a, b, size=c)
    correct = gen.random((n, c)) < p[None, :]
    pred = np.where(correct, y[:, None], 1 - y[:, None])
    return SimulatedMatrix(pred, y, _stratified_folds(y, k, gen), p, "accuracy")


@door("auc_matrix")
def auc_matrix(
    n_samples, n_configs, *, a=24.0, b=6.0, class_balance=0.5, n_splits=None, n_repeats=1,
    repeat_correlation=1.0, random_state=None
):
    """Continuous scores with known AUCs (2024 paper, §4).

    ``Y ~ Bernoulli(class_balance)`` (redrawn until both classes have 2 members); true
    AUCs ``A_j ~ Beta(a, b)``; a score is ``N(0, 1)`` for a negative and ``N(μ_j, 1)`` for
    a positive with ``μ_j = √2 Φ⁻¹(A_j)``, so that ``P(X1 > X0) = A_j``. Folds are
    stratified with ``K = min(10, N_minority)`` unless ``n_splits`` is given.

    Parameters
    ----------
    n_samples, n_configs : int
    a, b : float, default=(24, 6)
        (9, 6) and (24, 6) are the paper's settings (mean 0.6 and 0.8).
    class_balance : float, default=0.5
        Probability of the positive class (the paper uses 0.1 and 0.5).
    n_splits : int, default=None
    n_repeats : int, default=1
        Repeated CV: ``predictions`` (N, C, R) and ``folds`` (N, R), an independent
        stratified partition per repeat.
    repeat_correlation : float in [0, 1], default=1.0
        ρ, the correlation of a sample's scores across repeats: repeat ``r``'s noise is
        ``√ρ Z + √(1-ρ) Z_r`` (each still N(0, 1), so the AUCs stay ``A_j``). 1 gives the
        same predictions in every repeat (only the partition changes), as models whose
        predictions do not depend on the training folds; real repeats lie in between.
    random_state : int, SeedSequence, Generator or None

    Returns
    -------
    SimulatedMatrix
    """
    n = validation.check_int(n_samples, "n_samples", low=4)
    c = validation.check_int(n_configs, "n_configs")
    _beta_params(a, b)
    validation.check_real_open(class_balance, "class_balance", 0.0, 1.0)
    n_repeats = validation.check_int(n_repeats, "n_repeats")
    rho = validation.check_real_closed(repeat_correlation, "repeat_correlation", 0.0, 1.0)
    gen = child_generator(as_seed_sequence(random_state), "simulate", 1)
    for _ in range(10_000):
        y = (gen.random(n) < class_balance).astype(np.int64)
        if min(y.sum(), n - y.sum()) >= 2:
            break
    else:
        raise InvalidParameterError.of(
            "class_balance", f"a share that gives two samples of each class among "
            f"n_samples={n} (a draw of 10,000 never did)", class_balance)
    minority = int(min(y.sum(), n - y.sum()))
    k = min(10, minority) if n_splits is None else validation.check_int(n_splits, "n_splits", low=2, high=minority)
    auc = gen.beta(a, b, size=c)
    mu = np.sqrt(2.0) * norm.ppf(auc)
    noise = gen.standard_normal((n, c))
    folds = _stratified_folds(y, k, gen)
    if n_repeats == 1:  # drawn as before repeats existed: the same matrices for a seed
        return SimulatedMatrix(noise + y[:, None] * mu[None, :], y, folds, auc, "roc_auc")
    folds = np.stack([folds] + [_stratified_folds(y, k, gen) for _ in range(n_repeats - 1)], axis=1)
    if rho < 1:
        own = gen.standard_normal((n, c, n_repeats))
        noise = np.sqrt(rho) * noise[:, :, None] + np.sqrt(1.0 - rho) * own
    else:
        noise = np.repeat(noise[:, :, None], n_repeats, axis=2)
    return SimulatedMatrix(noise + y[:, None, None] * mu[None, :, None], y, folds, auc, "roc_auc")
