"""Predictions and labels of every metric's kind, for the metric and estimate tests."""
import numpy as np


def make_case(metric, n=40, c=5, r=1, seed=0):
    """Predictions of the right kind for ``metric`` (with ties), shape (N, C, R[, K])."""
    rng = np.random.default_rng(seed)
    if metric == "roc_auc":
        y = np.where(rng.random(n) < 0.45, "yes", "no")
        pos = (y == "yes")[:, None, None]
        pred = rng.normal(size=(n, c, r)) + pos * rng.uniform(0, 1.5, size=(1, c, 1))
        pred[:, 0] = np.round(pred[:, 0], 1)  # ties inside a column
        return pred, y
    if metric in ("roc_auc_ovr", "roc_auc_ovo", "neg_log_loss"):
        y = rng.integers(0, 3, n) * 10 + 5  # labels 5, 15, 25
        logits = rng.normal(size=(n, c, r, 3)) + 1.2 * np.eye(3)[(y - 5) // 10][:, None, None, :]
        p = np.exp(logits)
        p /= p.sum(axis=3, keepdims=True)
        return p, y
    if metric in ("accuracy", "balanced_accuracy"):
        y = rng.choice(np.array(["a", "b", "c"]), size=n, p=[0.5, 0.3, 0.2])
        flip = rng.random((n, c, r)) < rng.uniform(0.2, 0.6, size=(1, c, 1))
        pred = np.where(flip, rng.choice(np.array(["a", "b", "c"]), size=(n, c, r)), y[:, None, None])
        return pred, y
    if metric == "f1":
        y = rng.integers(0, 2, n) * 3 - 1  # labels -1, 2
        flip = rng.random((n, c, r)) < rng.uniform(0.1, 0.5, size=(1, c, 1))
        pred = np.where(flip, 1 - y[:, None, None], y[:, None, None])
        return pred, y
    if metric in ("neg_mean_squared_error", "neg_mean_absolute_error", "r2", "r2_corr"):
        y = rng.normal(10, 3, size=n)
        pred = y[:, None, None] + rng.normal(size=(n, c, r)) * rng.uniform(0.5, 3, size=(1, c, 1))
        return pred, y
    if metric == "concordance_index":
        time = rng.integers(1, 15, size=n).astype(float)  # tied times
        event = rng.random(n) < 0.7
        risk = -time[:, None, None] + rng.normal(size=(n, c, r)) * rng.uniform(1, 6, size=(1, c, 1))
        risk[:, 0] = np.round(risk[:, 0])  # tied risks
        return risk, (time, event)
    raise KeyError(metric)
