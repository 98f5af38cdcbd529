"""The holdout family (bbc_dask.holdout, repeated_holdout, bootstrap_estimate) against
plain scikit-learn loops on the same splits and bootstrap indices, the interval formulas by
hand, and every argument error."""
import math
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import (accuracy_score, balanced_accuracy_score, f1_score, log_loss,
                             mean_absolute_error, mean_squared_error, r2_score, roc_auc_score)
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier

import bbc_dask as bd
from bbc_dask.exceptions import InvalidParameterError
from bbc_dask.stats import no_information_score

TOL = 1e-12


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + 0.8 * rng.normal(size=60) > 0).astype(int)
    return X, y


def _lr():
    return LogisticRegression()


# ------------------------------------------------------------------------ holdout
@pytest.mark.parametrize("metric", ["accuracy", "roc_auc", "neg_log_loss"])
def test_holdout_equals_a_plain_split_fit_and_score(data, metric):
    X, y = data
    res = bd.holdout(_lr(), X, y, metric=metric, test_size=0.25, random_state=3)
    tr, te = res.train_idx, res.test_idx
    assert len(te) == math.ceil(0.25 * 60) and sorted(np.r_[tr, te]) == list(range(60))
    model = _lr().fit(X[tr], y[tr])
    want = {"accuracy": lambda: accuracy_score(y[te], model.predict(X[te])),
            "roc_auc": lambda: roc_auc_score(y[te], model.decision_function(X[te])),
            "neg_log_loss": lambda: -log_loss(y[te], model.predict_proba(X[te]))}[metric]()
    assert abs(res.estimate - want) < TOL
    assert res.models_trained == 1 and res.fit_seconds > 0 and res.wall_seconds >= res.fit_seconds
    assert res.ci.low <= res.estimate <= res.ci.high
    assert res.ci_method == {"accuracy": "wilson", "roc_auc": "delong",
                             "neg_log_loss": "bootstrap"}[metric]
    # the split is scikit-learn's train_test_split, stratified, with some integer seed
    assert metric in repr(res) and "holdout" in res.summary()


def test_holdout_accuracy_interval_is_eq_14(data):
    X, y = data
    res = bd.holdout(_lr(), X, y, metric="accuracy", test_size=0.4, confidence=0.9,
                     random_state=1, ci_method="normal")
    acc, n = res.estimate, len(res.test_idx)
    z = NormalDist().inv_cdf(0.95)
    half = z * math.sqrt(acc * (1 - acc) / n)
    assert abs(res.ci.low - (acc - half)) < TOL and abs(res.ci.high - (acc + half)) < TOL


def test_holdout_auc_interval_is_delong(data):
    X, y = data
    res = bd.holdout(_lr(), X, y, metric="roc_auc", test_size=0.5, random_state=2)
    te = res.test_idx
    s = _lr().fit(X[res.train_idx], y[res.train_idx]).decision_function(X[te])
    pos, neg = s[y[te] == 1], s[y[te] == 0]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    se = math.sqrt(v10.var(ddof=1) / len(pos) + v01.var(ddof=1) / len(neg))
    z = NormalDist().inv_cdf(0.975)
    assert abs(res.estimate - psi.mean()) < TOL
    assert abs(res.ci.low - max(0, psi.mean() - z * se)) < TOL
    assert abs(res.ci.high - min(1, psi.mean() + z * se)) < TOL


def test_holdout_is_the_first_split_of_repeated_holdout_and_unstratified_is_plain(data, client):
    X, y = data
    one = bd.holdout(_lr(), X, y, metric="accuracy", test_size=0.3, random_state=5)
    rep = bd.repeated_holdout(_lr(), X, y, metric="accuracy", n_repeats=2, test_size=0.3,
                              random_state=5, client=client, progress=False)
    np.testing.assert_array_equal(one.test_idx, rep.splits[0][1])
    assert abs(one.estimate - rep.scores[0]) < TOL
    # fitted as a task on a cluster (compare's way): the same split, fit and interval
    there = bd.holdout(_lr(), X, y, metric="accuracy", test_size=0.3, random_state=5,
                       client=client, progress=False)
    np.testing.assert_array_equal(there.test_idx, one.test_idx)
    assert (there.estimate, tuple(there.ci)) == (one.estimate, tuple(one.ci))
    with pytest.raises(InvalidParameterError, match="'client' parameter of holdout"):
        bd.holdout(_lr(), X, y, metric="accuracy", test_size=0.3, random_state=5, client=3)
    free = bd.holdout(_lr(), X, y, metric="accuracy", test_size=0.3, random_state=5,
                      stratify=False)
    assert len(free.test_idx) == 18 and len(free.train_idx) == 42


# ------------------------------------------------------------------------ repeated holdout
def test_repeated_holdout_equals_a_plain_loop_and_the_t_interval(data, client):
    X, y = data
    res = bd.repeated_holdout(_lr(), X, y, metric="accuracy", n_repeats=6, test_size=0.3,
                              random_state=0, client=client, progress=False)
    want = [accuracy_score(y[te], _lr().fit(X[tr], y[tr]).predict(X[te])) for tr, te in res.splits]
    np.testing.assert_allclose(res.scores, want, rtol=0, atol=TOL)
    assert abs(res.estimate - np.mean(want)) < TOL
    half = sps.t.ppf(0.975, 5) * np.std(want, ddof=1) / math.sqrt(6)
    assert abs(res.ci.low - (np.mean(want) - half)) < TOL
    assert abs(res.ci.high - (np.mean(want) + half)) < TOL
    assert res.models_trained == 6 and len({tuple(te) for _, te in res.splits}) == 6
    again = bd.repeated_holdout(_lr(), X, y, metric="accuracy", n_repeats=6, test_size=0.3,
                                random_state=0, client=client, progress=False)
    np.testing.assert_array_equal(again.scores, res.scores)
    for (a, b), (c, d) in zip(again.splits, res.splits):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)


def test_one_worker_gives_what_two_give(data, client, make_local_client):
    X, y = data
    kw = dict(metric="accuracy", random_state=7, progress=False)
    two_r = bd.repeated_holdout(_lr(), X, y, n_repeats=5, test_size=0.3, client=client, **kw)
    two_b = bd.bootstrap_estimate(DecisionTreeClassifier(random_state=0), X, y, n_bootstraps=9,
                                  method=".632+", client=client, **kw)
    with make_local_client(n_workers=1, processes=False) as one:  # starts in ~1 s
        one_r = bd.repeated_holdout(_lr(), X, y, n_repeats=5, test_size=0.3, client=one, **kw)
        one_b = bd.bootstrap_estimate(DecisionTreeClassifier(random_state=0), X, y,
                                      n_bootstraps=9, method=".632+", client=one, **kw)
    np.testing.assert_array_equal(one_r.scores, two_r.scores)
    np.testing.assert_array_equal(one_b.indices, two_b.indices)
    np.testing.assert_array_equal(one_b.oob_scores, two_b.oob_scores)
    assert one_b.estimate == two_b.estimate


# ------------------------------------------------------------------------ bootstrap
def _reference(res, X, y, make, score, gamma_of):
    """The .632 family by hand from the result's in-bag indices: one fit per round."""
    n = len(y)
    oob, resub, gam, est632, estplus, rates = [], [], [], [], [], []
    for idx in res.indices:
        model = make().fit(X[idx], y[idx])
        out = np.setdiff1d(np.arange(n), idx)
        o, r = score(model, out, y[out]), score(model, idx, y[idx])
        g = gamma_of(model)
        oob.append(o), resub.append(r), gam.append(g)
        est632.append(0.368 * r + 0.632 * o)
        o2 = max(o, g)
        rate = (r - o2) / (r - g) if (o < r and g < r) else 0.0
        plus = 0.368 * r + 0.632 * o + (o2 - r) * 0.368 * 0.632 * rate / (1 - 0.368 * rate)
        estplus.append(plus), rates.append(rate)
    return dict(oob=np.array(oob), resub=np.array(resub), gamma=np.array(gam),
                est={"oob": np.mean(oob), ".632": np.mean(est632), ".632+": np.mean(estplus)},
                rate=np.array(rates))


@pytest.mark.parametrize("method", ["oob", ".632", ".632+"])
def test_bootstrap_accuracy_equals_the_reference_loop(data, client, method):
    X, y = data
    make = lambda: DecisionTreeClassifier(max_depth=3, random_state=0)  # noqa: E731
    res = bd.bootstrap_estimate(make(), X, y, metric="accuracy", n_bootstraps=12,
                                method=method, random_state=11, client=client, progress=False)
    assert res.indices.shape == (12, 60) and res.models_trained == 12

    def acc(model, rows, yy):
        return accuracy_score(yy, model.predict(X[rows]))

    def eq36(model):  # Eq. 36 as a score: sum_k p_k q_k (the error is 1 - this)
        p, q = np.bincount(y, minlength=2) / 60, np.bincount(model.predict(X), minlength=2) / 60
        return float(p @ q)

    ref = _reference(res, X, y, make, acc, eq36)
    np.testing.assert_allclose(res.oob_scores, ref["oob"], rtol=0, atol=TOL)
    np.testing.assert_allclose(res.resub_scores, ref["resub"], rtol=0, atol=TOL)
    assert abs(res.estimate - ref["est"][method]) < TOL
    if method == ".632+":
        np.testing.assert_allclose(res.gamma, ref["gamma"], rtol=0, atol=TOL)
        np.testing.assert_allclose(res.relative_overfitting, ref["rate"], rtol=0, atol=TOL)
        assert ((res.relative_overfitting >= 0) & (res.relative_overfitting <= 1)).all()
    else:
        assert res.gamma is None and res.relative_overfitting is None


def test_bootstrap_632_plus_log_loss_equals_the_reference_loop(data, client):
    X, y = data
    res = bd.bootstrap_estimate(_lr(), X, y, metric="neg_log_loss", n_bootstraps=6,
                                method=".632+", random_state=4, client=client, progress=False)

    def nll(model, rows, yy):
        return -log_loss(yy, model.predict_proba(X[rows]), labels=[0, 1])

    def pairs(model):  # Eq. 35 on all n² pairs (y_i, p_j)
        p = model.predict_proba(X)
        return -log_loss(np.repeat(y, 60), np.tile(p, (60, 1)))

    ref = _reference(res, X, y, _lr, nll, pairs)
    np.testing.assert_allclose(res.oob_scores, ref["oob"], rtol=0, atol=1e-10)
    np.testing.assert_allclose(res.gamma, ref["gamma"], rtol=0, atol=1e-10)
    assert abs(res.estimate - ref["est"][".632+"]) < 1e-10


@pytest.mark.parametrize("metric,score", [
    ("accuracy", accuracy_score), ("balanced_accuracy", balanced_accuracy_score),
    ("f1", f1_score), ("neg_mean_squared_error", lambda a, b: -mean_squared_error(a, b)),
    ("neg_mean_absolute_error", lambda a, b: -mean_absolute_error(a, b)), ("r2", r2_score)])
def test_no_information_score_is_the_metric_on_all_pairs(metric, score):
    rng = np.random.default_rng(1)
    if metric.startswith("neg_") or metric == "r2":
        yy, f = rng.normal(size=13), rng.normal(size=13)
        got = no_information_score(metric, yy, f)
    else:
        k = 2 if metric == "f1" else 3
        yy, f = rng.integers(0, k, 13), rng.integers(0, k, 13)
        got = no_information_score(metric, yy, f, k, 1)
    assert abs(got - score(np.repeat(yy, 13), np.tile(f, 13))) < TOL


# ------------------------------------------------------------------------ bad input
BAD = [
    (dict(test_size=0.0), "'test_size' parameter of {f} must be a float in the range \\(0.0, 1.0\\)"),
    (dict(test_size=1.0), "'test_size' parameter of {f}"),
    (dict(test_size=0.999), "'test_size' parameter of {f} must be small enough"),
    (dict(metric="acuracy"), "'metric' parameter of {f} must be one of"),
    (dict(metric="concordance_index"), "not supported by {f}"),
    (dict(confidence=1.0), "'confidence' parameter of {f}"),
    (dict(stratify="yes"), "'stratify' parameter of {f}"),
    (dict(random_state=-1), "'random_state' parameter of {f}"),
]


@pytest.mark.parametrize("fn", ["holdout", "repeated_holdout"])
@pytest.mark.parametrize("bad,match", BAD)
def test_holdout_arguments_are_checked_before_anything_runs(data, fn, bad, match):
    X, y = data
    kw = dict(metric="accuracy", test_size=0.3, random_state=0)
    if fn == "repeated_holdout":  # an unreachable scheduler: the checks come before it
        kw.update(n_repeats=3, client="tcp://127.0.0.1:1", progress=False)
    with pytest.raises(InvalidParameterError, match=match.format(f=fn)):
        getattr(bd, fn)(_lr(), X, y, **(kw | bad))


def test_the_other_argument_errors(data):
    X, y = data
    far = dict(client="tcp://127.0.0.1:1", progress=False, random_state=0)
    with pytest.raises(InvalidParameterError, match="'n_repeats' parameter of repeated_holdout "
                       "must be an int in the range \\[2, inf\\)"):
        bd.repeated_holdout(_lr(), X, y, metric="accuracy", n_repeats=1, test_size=0.3, **far)
    with pytest.raises(InvalidParameterError, match="'n_bootstraps' parameter of bootstrap_estimate"):
        bd.bootstrap_estimate(_lr(), X, y, metric="accuracy", n_bootstraps=0, method="oob", **far)
    with pytest.raises(InvalidParameterError, match="'method' parameter of bootstrap_estimate "
                       "must be one of \\['oob', '.632', '.632\\+'\\]"):
        bd.bootstrap_estimate(_lr(), X, y, metric="accuracy", n_bootstraps=5, method="632", **far)
    with pytest.raises(InvalidParameterError, match="'method' parameter of bootstrap_estimate "
                       "must be 'oob' or '.632' for the metric 'concordance_index'"):
        bd.bootstrap_estimate(_lr(), X, y, metric="concordance_index", n_bootstraps=5,
                              method=".632+", **far)
    # (accuracy scores any estimator's predicted labels, as scikit-learn's scorer does: a
    # duck-typed classifier's; roc_auc reads a classifier's scores)
    with pytest.raises(InvalidParameterError, match="'estimator' parameter of bootstrap_estimate"
                       ".*LinearRegression, which has no decision_function or predict_proba"):
        bd.bootstrap_estimate(LinearRegression(), X, y, metric="roc_auc", n_bootstraps=5,
                              method="oob", **far)
    with pytest.raises(InvalidParameterError, match="'client' parameter of bootstrap_estimate"):
        bd.bootstrap_estimate(_lr(), X, y, metric="accuracy", n_bootstraps=5, method="oob",
                              random_state=0, client=3)
    y_rare = y.copy()
    y_rare[:] = 0
    y_rare[0] = 1  # one member: no stratified split
    with pytest.raises(InvalidParameterError, match="'stratify' parameter of holdout must be "
                       "False for these class counts.*class 1 has 1"):
        bd.holdout(_lr(), X, y_rare, metric="accuracy", test_size=0.3, random_state=0)


# ------------------------------------------------------------------------ calibration
@pytest.mark.slow
def test_holdout_accuracy_interval_covers_at_its_level():
    """A constant classifier on y ~ Bernoulli(0.7) has accuracy 0.7 exactly on new data:
    Eq. 14's 95% interval over 400 fresh data sets must cover it between the binomial
    rule's bounds (99.9% two-sided)."""
    from sklearn.dummy import DummyClassifier

    rng = np.random.default_rng(2024)
    hits, reps = 0, 400
    for r in range(reps):
        y = (rng.random(400) < 0.7).astype(int)
        X = rng.normal(size=(400, 1))
        res = bd.holdout(DummyClassifier(strategy="constant", constant=1), X, y,
                         metric="accuracy", test_size=0.5, random_state=r, stratify=False)
        hits += res.ci.low <= 0.7 <= res.ci.high
    lo, hi = sps.binom.ppf([0.0005, 0.9995], reps, 0.95)
    assert lo <= hits <= hi, hits


def test_plain_train_test_split_takes_the_same_arguments(data):
    """The split is scikit-learn's: the same sizes and stratification rule."""
    X, y = data
    tr, te = train_test_split(np.arange(60), test_size=0.25, random_state=0, stratify=y)
    res = bd.holdout(_lr(), X, y, metric="accuracy", test_size=0.25, random_state=0)
    assert len(res.test_idx) == len(te) and len(res.train_idx) == len(tr)
    assert np.bincount(y[res.test_idx]).tolist() == np.bincount(y[te]).tolist()


@pytest.mark.slow
def test_repeated_holdout_survives_losing_the_worker_that_holds_the_data(make_local_client):
    """The data travel as tasks holding them: when the worker holding them dies mid-run,
    they are computed again elsewhere and the result is the calm run's."""
    import os
    import signal
    import threading

    import _estimators
    from _helpers import wait_until
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    kw = dict(metric="roc_auc", n_repeats=40, test_size=0.3, random_state=0, progress=False)
    with make_local_client() as c:  # its workers are killed: not the shared cluster
        out = {}

        def run():
            try:
                out["res"] = bd.repeated_holdout(_estimators.Sleepy(nap=0.1), X, y, client=c, **kw)
            except Exception as e:  # noqa: BLE001
                out["res"] = e

        t = threading.Thread(target=run)
        t.start()

        def holders():
            return [w for w, keys in c.has_what().items() if any("held" in str(k) for k in keys)]

        wait_until(lambda: holders(), 60, "the data on a worker")
        pids = c.run(os.getpid)
        for w in holders():
            os.kill(pids[w], signal.SIGKILL)
        t.join(300)
        res = out["res"]
        assert not isinstance(res, Exception), repr(res)
        calm = bd.repeated_holdout(_estimators.Sleepy(nap=0.0), X, y, client=c, **kw)
        np.testing.assert_array_equal(res.scores, calm.scores)
