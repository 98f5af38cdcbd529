"""Independent, slow reference implementations used to cross-check ``bbc_dask``.

Everything here is written with plain Python loops and direct calls to
scikit-learn on explicitly indexed rows (bootstrap duplicates are materialised
as repeated rows, never expressed as ``sample_weight``).  Clarity over speed.

This module deliberately does NOT import anything from ``bbc_dask``.

Conventions
-----------
predictions
    * label / score metrics: ``(N, C)`` (treated as R=1) or ``(N, C, R)``.
    * probability metrics (``neg_log_loss``, ``roc_auc_ovr``): ``(N, C, R, K)``;
      a 3-D array is taken as ``(N, C, K)`` with R=1.
      Class columns are in the order ``np.unique(y)`` of the *full* ``y``.
y
    1-D array of targets, or, for ``concordance_index``, a tuple
    ``(time, event)`` of two 1-D arrays.
folds
    ``(N,)`` (treated as R=1) or ``(N, R)`` integer fold ids.
bootstrap_indices
    ``(B, n)`` integer array; row ``b`` holds the in-bag positions of
    bootstrap ``b`` (with replacement).  ``n`` = N for BBC-CV / naive
    bootstrap and n = number of (repeat, fold) rows for BBC-F.
"""

import warnings

import numpy as np
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    f1_score,
    log_loss,
    mean_absolute_error,
    mean_squared_error,
    r2_score,
    roc_auc_score,
)

PROBA_METRICS = ("neg_log_loss", "roc_auc_ovr", "roc_auc_ovo")
ALL_METRICS = (
    "roc_auc_ovo",
    "r2_corr",
    "roc_auc",
    "accuracy",
    "balanced_accuracy",
    "f1",
    "neg_log_loss",
    "neg_mean_squared_error",
    "neg_mean_absolute_error",
    "r2",
    "roc_auc_ovr",
    "concordance_index",
)

NAN = float("nan")


# ---------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------
def _n_samples(y):
    if isinstance(y, tuple):
        return len(np.asarray(y[0]))
    return len(np.asarray(y))


def _classes_of(metric, y):
    """Sorted distinct labels of the full y (None for survival targets)."""
    if metric == "concordance_index":
        return None
    return np.unique(np.asarray(y))


def _as_4d(predictions, metric):
    """Return predictions as a (N, C, R, ...) array (trailing K axis for probas)."""
    P = np.asarray(predictions)
    if metric in PROBA_METRICS:
        if P.ndim == 3:  # (N, C, K) -> (N, C, 1, K)
            P = P[:, :, None, :]
        if P.ndim != 4:
            raise ValueError("probability predictions must be (N, C, K) or (N, C, R, K)")
    else:
        if P.ndim == 2:  # (N, C) -> (N, C, 1)
            P = P[:, :, None]
        if P.ndim != 3:
            raise ValueError("predictions must be (N, C) or (N, C, R)")
    return P


def _as_2d_folds(folds):
    F = np.asarray(folds)
    if F.ndim == 1:
        F = F[:, None]
    if F.ndim != 2:
        raise ValueError("folds must be (N,) or (N, R)")
    return F


def _mean(values):
    """Plain arithmetic mean; NaN if empty or if any value is NaN."""
    values = list(values)
    if len(values) == 0:
        return NAN
    total = 0.0
    for v in values:
        if np.isnan(v):
            return NAN
        total += float(v)
    return total / len(values)


def _argmax_lowest(scores):
    """Index of the largest score, ties -> lowest index; -1 if any score is NaN."""
    best = -1
    best_val = None
    for c, s in enumerate(scores):
        if np.isnan(s):
            return -1
        if best_val is None or s > best_val:
            best_val = s
            best = c
    return best


def _oob_positions(n, in_bag):
    present = set(int(i) for i in in_bag)
    return [i for i in range(n) if i not in present]


def _positive_label(classes, pos_label):
    if pos_label is not None:
        return pos_label
    return classes[-1]


# ---------------------------------------------------------------------------
# Harrell's C (scikit-survival concordance_index_censored with tied_tol=0)
# ---------------------------------------------------------------------------
def reference_concordance_index(time, event, risk):
    """Harrell's concordance index by a plain double loop.

    Operates on already-indexed arrays: every position is a separate
    individual (bootstrap duplicates included).  A pair (i, j) is comparable
    when event_i is true and (time_j > time_i, or time_j == time_i and
    event_j is false).  Concordant when risk_i > risk_j, half when equal.
    Returns NaN when there is no comparable pair.
    """
    time = np.asarray(time, dtype=float)
    event = np.asarray(event).astype(bool)
    risk = np.asarray(risk, dtype=float)
    n = len(time)
    concordant = 0.0
    tied = 0.0
    comparable = 0
    for i in range(n):
        if not event[i]:
            continue
        for j in range(n):
            if i == j:
                continue
            if time[j] > time[i] or (time[j] == time[i] and not event[j]):
                comparable += 1
                if risk[i] > risk[j]:
                    concordant += 1.0
                elif risk[i] == risk[j]:
                    tied += 1.0
    if comparable == 0:
        return NAN
    return (concordant + 0.5 * tied) / comparable


# ---------------------------------------------------------------------------
# metric on explicitly indexed rows
# ---------------------------------------------------------------------------
def score_rows(metric, y, pred_col, rows, classes=None, pos_label=None):
    """Metric value (larger is better) on rows ``rows`` (duplicates allowed).

    ``pred_col`` is Π[:, c, r] (or Π[:, c, r, :] for probability metrics)
    over ALL N samples; ``rows`` selects positions.  ``classes`` defaults to
    ``np.unique(y)`` of the full ``y``.  Returns NaN when undefined.
    """
    rows = np.asarray(rows, dtype=np.int64).reshape(-1)
    if len(rows) == 0:
        return NAN
    pred_col = np.asarray(pred_col)
    pred = pred_col[rows]

    if metric == "concordance_index":
        time, event = y
        time = np.asarray(time)[rows]
        event = np.asarray(event)[rows]
        return reference_concordance_index(time, event, pred)

    y_full = np.asarray(y)
    if classes is None and metric in ("roc_auc", "f1", "neg_log_loss", "roc_auc_ovr", "roc_auc_ovo"):
        classes = np.unique(y_full)
    yt = y_full[rows]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        if metric == "roc_auc":
            pos = _positive_label(classes, pos_label)
            y_bin = (yt == pos).astype(int)
            if len(np.unique(y_bin)) < 2:
                return NAN
            return float(roc_auc_score(y_bin, pred))

        if metric == "accuracy":
            return float(accuracy_score(yt, pred))

        if metric == "balanced_accuracy":
            return float(balanced_accuracy_score(yt, pred))

        if metric == "f1":
            pos = _positive_label(classes, pos_label)
            others = [c for c in classes if c != pos]
            labels = [others[0], pos] if others else [pos]
            return float(f1_score(yt, pred, pos_label=pos, average="binary", labels=labels))

        if metric == "neg_log_loss":
            return -float(log_loss(yt, pred, labels=classes))

        if metric == "neg_mean_squared_error":
            return -float(mean_squared_error(yt, pred))

        if metric == "neg_mean_absolute_error":
            return -float(mean_absolute_error(yt, pred))

        if metric == "r2":
            if len(yt) < 2 or np.all(yt == yt[0]):
                return NAN
            return float(r2_score(yt, pred))

        if metric == "r2_corr":  # the 2024 paper's code: np.corrcoef(V1, V2)[0, 1] ** 2
            if len(yt) < 2 or np.all(yt == yt[0]):
                return NAN
            if np.all(pred == pred[0]):
                return 0.0  # constant predictions: no linear association
            return float(np.corrcoef(yt, pred)[0, 1] ** 2)

        if metric == "roc_auc_ovo":  # the 2024 paper's code's auc_multiclass, ordered pairs
            if set(np.unique(yt).tolist()) != set(np.asarray(classes).tolist()):
                return NAN
            aucs = []
            for a, ca in enumerate(classes):
                for b, cb in enumerate(classes):
                    if a != b:
                        keep = np.isin(yt, [ca, cb])
                        aucs.append(roc_auc_score(yt[keep] == ca, pred[keep, a]))
            return float(np.mean(aucs))

        if metric == "roc_auc_ovr":
            present = set(np.unique(yt).tolist())
            for c in classes:
                if c not in present:
                    return NAN
            if len(classes) == 2:
                # sklearn rejects a 2-column score for binary y; the macro OvR
                # AUC of two classes equals the AUC of the last column.
                y_bin = (yt == classes[-1]).astype(int)
                return float(roc_auc_score(y_bin, pred[:, -1]))
            return float(
                roc_auc_score(yt, pred, multi_class="ovr", average="macro", labels=classes)
            )

    raise ValueError(f"unknown metric {metric!r}")


def _config_score(metric, y, P, c, rows, classes, pos_label):
    """Mean over repeats of metric(y[rows], Π[rows, c, r])."""
    R = P.shape[2]
    vals = []
    for r in range(R):
        vals.append(score_rows(metric, y, P[:, c, r], rows, classes, pos_label))
    return _mean(vals)


# ---------------------------------------------------------------------------
# BBC-CV (Tsamardinos et al. 2018, Algorithm 5)
# ---------------------------------------------------------------------------
def reference_bbc(predictions, y, metric, bootstrap_indices, pos_label=None):
    """Returns (dist (B,), winners (B,)); winner -1 if any in-bag score is NaN."""
    P = _as_4d(predictions, metric)
    N, C = P.shape[0], P.shape[1]
    assert _n_samples(y) == N
    classes = _classes_of(metric, y)
    boots = np.asarray(bootstrap_indices, dtype=np.int64)
    if boots.ndim == 1:
        boots = boots[None, :]
    B = boots.shape[0]
    dist = np.full(B, np.nan)
    winners = np.full(B, -1, dtype=np.int64)
    for b in range(B):
        in_bag = [int(i) for i in boots[b]]
        oob = _oob_positions(N, in_bag)
        in_scores = [_config_score(metric, y, P, c, in_bag, classes, pos_label) for c in range(C)]
        j = _argmax_lowest(in_scores)
        winners[b] = j
        if j < 0 or len(oob) == 0:
            dist[b] = NAN
            continue
        dist[b] = _config_score(metric, y, P, j, oob, classes, pos_label)
    return dist, winners


def reference_bbc_incomplete(predictions, y, metric, bootstrap_indices, pos_label=None):
    """BBC of an incomplete cube (NaN = not predicted): each configuration with a
    prediction in every repeat is scored, per repeat, on its in-bag rows it predicted (a
    score that is undefined there loses); the winner on its out-of-bag rows it predicted.
    Returns (dist, winners)."""
    P = _as_4d(predictions, metric)
    N, C, R = P.shape[:3]
    classes = _classes_of(metric, y)
    nan = np.isnan(P.astype(np.float64))
    have = ~(nan.any(axis=3) if nan.ndim == 4 else nan)
    usable = [c for c in range(C) if all(have[:, c, r].any() for r in range(R))]

    def score(c, rows):
        vals = []
        for r in range(R):
            mine = [i for i in rows if have[i, c, r]]
            vals.append(score_rows(metric, y, P[:, c, r], mine, classes, pos_label) if mine else NAN)
        return _mean(vals)

    boots = np.asarray(bootstrap_indices, dtype=np.int64)
    dist = np.full(boots.shape[0], np.nan)
    winners = np.full(boots.shape[0], -1, dtype=np.int64)
    for b in range(boots.shape[0]):
        in_bag = [int(i) for i in boots[b]]
        s = [score(c, in_bag) for c in usable]
        s = [-np.inf if np.isnan(v) else v for v in s]
        if all(v == -np.inf for v in s):
            continue
        j = usable[_argmax_lowest(s)]
        winners[b] = j
        dist[b] = score(j, _oob_positions(N, in_bag))
    return dist, winners


# ---------------------------------------------------------------------------
# per-fold score matrix and BBC-F (Paraschakis et al. 2024, Algorithm 1)
# ---------------------------------------------------------------------------
def _fold_rows(folds2d):
    """List of (r, fold_id, positions) in repeat-major, sorted-fold order."""
    N, R = folds2d.shape
    out = []
    for r in range(R):
        for k in np.unique(folds2d[:, r]):
            pos = [i for i in range(N) if folds2d[i, r] == k]
            out.append((r, k, pos))
    return out


def reference_fold_matrix(predictions, y, folds, metric, pos_label=None):
    """F of shape (n_rows, C); rows = (repeat, fold) pairs, repeat-major."""
    P = _as_4d(predictions, metric)
    C = P.shape[1]
    F2 = _as_2d_folds(folds)
    assert F2.shape[0] == P.shape[0] and F2.shape[1] == P.shape[2], (F2.shape, P.shape)
    classes = _classes_of(metric, y)
    blocks = _fold_rows(F2)
    M = np.full((len(blocks), C), np.nan)
    for row, (r, _k, pos) in enumerate(blocks):
        for c in range(C):
            M[row, c] = score_rows(metric, y, P[:, c, r], pos, classes, pos_label)
    return M


def reference_bbc_f(predictions, y, folds, metric, bootstrap_indices, pos_label=None):
    """Returns (dist (B,), winners (B,)); bootstrap b resamples the fold rows of repeat
    b mod R (its in-bag positions are among that repeat's K rows)."""
    M = reference_fold_matrix(predictions, y, folds, metric, pos_label)
    F2 = _as_2d_folds(folds)
    R = F2.shape[1]
    K = M.shape[0] // R
    C = M.shape[1]
    boots = np.asarray(bootstrap_indices, dtype=np.int64)
    if boots.ndim == 1:
        boots = boots[None, :]
    B = boots.shape[0]
    dist = np.full(B, np.nan)
    winners = np.full(B, -1, dtype=np.int64)
    for b in range(B):
        rows = [(b % R) * K + k for k in range(K)]  # repeat-major rows of repeat b mod R
        in_bag = [rows[int(i)] for i in boots[b]]
        oob = [i for i in rows if i not in in_bag]
        in_means = [_mean(M[i, c] for i in in_bag) for c in range(C)]
        j = _argmax_lowest(in_means)
        winners[b] = j
        if j < 0 or len(oob) == 0:
            dist[b] = NAN
            continue
        dist[b] = _mean(M[i, j] for i in oob)
    return dist, winners


def reference_naive_bootstrap_folds(predictions, y, folds, metric, bootstrap_indices, pos_label=None):
    """The 2024 paper's NB: the fold-mean winner's fold scores, bootstrap b resampling
    those of repeat b mod R at the (B, K) positions given; returns (dist, winner)."""
    M = reference_fold_matrix(predictions, y, folds, metric, pos_label)
    R = _as_2d_folds(folds).shape[1]
    K = M.shape[0] // R
    j = _argmax_lowest([_mean(M[:, c]) for c in range(M.shape[1])])
    boots = np.asarray(bootstrap_indices, dtype=np.int64)
    dist = np.array([_mean(M[(b % R) * K + int(i), j] for i in boots[b]) for b in range(boots.shape[0])])
    return dist, j


# ---------------------------------------------------------------------------
# TT (Tibshirani & Tibshirani; Algorithm 4 of Tsamardinos et al. 2018)
# ---------------------------------------------------------------------------
def _pooled_winner(P, y, metric, pos_label):
    N, C = P.shape[0], P.shape[1]
    classes = _classes_of(metric, y)
    all_rows = list(range(N))
    pooled = [_config_score(metric, y, P, c, all_rows, classes, pos_label) for c in range(C)]
    return _argmax_lowest(pooled), pooled


def reference_tt(predictions, y, folds, metric, pos_label=None):
    """naive pooled score of the winner minus the mean per-fold bias."""
    P = _as_4d(predictions, metric)
    j, pooled = _pooled_winner(P, y, metric, pos_label)
    if j < 0:
        return NAN
    M = reference_fold_matrix(predictions, y, folds, metric, pos_label)
    biases = []
    for row in range(M.shape[0]):
        vals = list(M[row])
        if any(np.isnan(v) for v in vals):
            biases.append(NAN)
            continue
        biases.append(max(vals) - vals[j])
    return pooled[j] - _mean(biases)


# ---------------------------------------------------------------------------
# naive bootstrap of the (fixed) winner's column
# ---------------------------------------------------------------------------
def reference_naive_bootstrap(predictions, y, metric, bootstrap_indices, pos_label=None):
    """dist (B,): in-bag (resample) score (mean over repeats) of the pooled winner."""
    P = _as_4d(predictions, metric)
    N = P.shape[0]
    classes = _classes_of(metric, y)
    j, _ = _pooled_winner(P, y, metric, pos_label)
    boots = np.asarray(bootstrap_indices, dtype=np.int64)
    if boots.ndim == 1:
        boots = boots[None, :]
    B = boots.shape[0]
    dist = np.full(B, np.nan)
    for b in range(B):
        if j < 0:
            continue
        dist[b] = _config_score(metric, y, P, j, boots[b], classes, pos_label)
    return dist


# ---------------------------------------------------------------------------
# self-check
# ---------------------------------------------------------------------------
if __name__ == "__main__":
    rng = np.random.default_rng(0)
    N, C, R, B, K = 30, 4, 2, 5, 3
    folds = np.stack([rng.permutation(np.arange(N) % 3) for _ in range(R)], axis=1)
    boots = rng.integers(0, N, size=(B, N))

    y_bin = rng.integers(0, 2, size=N)
    y_str = np.where(y_bin == 1, "yes", "no")
    scores = rng.normal(size=(N, C, R)) + y_bin[:, None, None] * np.linspace(0, 1.5, C)[None, :, None]
    labels_pred = np.where(rng.random((N, C, R)) < 0.7, y_bin[:, None, None], 1 - y_bin[:, None, None])

    y_mc = rng.integers(0, K, size=N)
    logits = rng.normal(size=(N, C, R, K))
    logits[np.arange(N), :, :, y_mc] += np.linspace(0, 2, C)[None, :, None]
    probas = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)

    y_reg = rng.normal(size=N)
    reg_pred = y_reg[:, None, None] + rng.normal(size=(N, C, R)) * np.linspace(0.3, 1.5, C)[None, :, None]

    time = rng.integers(1, 10, size=N).astype(float)
    event = rng.random(N) < 0.6
    risk = -time[:, None, None] + rng.normal(size=(N, C, R)) * np.linspace(0.5, 5, C)[None, :, None]

    cases = [
        ("roc_auc", scores, y_bin),
        ("roc_auc", scores, y_str),
        ("accuracy", labels_pred, y_bin),
        ("balanced_accuracy", labels_pred, y_bin),
        ("f1", labels_pred, y_bin),
        ("neg_log_loss", probas, y_mc),
        ("roc_auc_ovr", probas, y_mc),
        ("neg_mean_squared_error", reg_pred, y_reg),
        ("neg_mean_absolute_error", reg_pred, y_reg),
        ("r2", reg_pred, y_reg),
        ("concordance_index", risk, (time, event)),
    ]
    f_boots = rng.integers(0, 3, size=(B, 3))
    np.set_printoptions(precision=4, suppress=True)
    for metric, P, yy in cases:
        dist, win = reference_bbc(P, yy, metric, boots)
        fdist, fwin = reference_bbc_f(P, yy, folds, metric, f_boots)
        M = reference_fold_matrix(P, yy, folds, metric)
        tt = reference_tt(P, yy, folds, metric)
        nb = reference_naive_bootstrap(P, yy, metric, boots)
        print(f"== {metric} (y dtype {np.asarray(yy[0] if isinstance(yy, tuple) else yy).dtype})")
        print("  bbc   ", dist, win)
        print("  bbc_f ", fdist, fwin, " F shape", M.shape)
        print("  tt    ", round(tt, 4), "  naive_boot", nb)

    # 2-D predictions / 1-D folds
    d2, w2 = reference_bbc(scores[:, :, 0], y_bin, "roc_auc", boots)
    d3, w3 = reference_bbc(scores[:, :, :1], y_bin, "roc_auc", boots)
    assert np.allclose(d2, d3, equal_nan=True) and np.array_equal(w2, w3)
    M1 = reference_fold_matrix(scores[:, :, 0], y_bin, folds[:, 0], "roc_auc")
    assert M1.shape == (3, C)

    # concordance: compare with an independent sorted formulation
    def _c_sorted(t, e, r):
        num = den = 0.0
        order = np.argsort(t, kind="stable")
        for a in order:
            if not e[a]:
                continue
            later = (t > t[a]) | ((t == t[a]) & ~e)
            den += later.sum()
            num += (r[a] > r[later]).sum() + 0.5 * (r[a] == r[later]).sum()
        return num / den if den else float("nan")

    for _ in range(20):
        t = rng.integers(1, 5, size=15).astype(float)
        e = rng.random(15) < 0.5
        r = rng.integers(0, 4, size=15).astype(float)
        a, b_ = reference_concordance_index(t, e, r), _c_sorted(t, e, r)
        assert (np.isnan(a) and np.isnan(b_)) or abs(a - b_) < 1e-12
    # a single-class rows set gives NaN AUC; empty OOB gives NaN
    assert np.isnan(score_rows("roc_auc", y_bin, scores[:, 0, 0], np.flatnonzero(y_bin == 1)))
    full = np.tile(np.arange(N), (1, 1))
    assert np.isnan(reference_bbc(scores, y_bin, "roc_auc", full)[0][0])
    print("self-check OK")
