"""Every bad input gets a clear error that names the argument."""
import numpy as np
import pytest

import bbc_dask as bd

RNG = np.random.default_rng(0)
Y = np.array([0, 1] * 10)
SCORES = RNG.normal(size=(20, 3))
PROBA = RNG.dirichlet([1, 1], size=(20, 3, 1))


def test_labels_for_a_ranking_metric_warn_and_score():
    """Labels where AUC wants scores: a warning, not an error — fully grown trees'
    probabilities are 0 and 1, and their AUC is defined."""
    labels = np.tile(Y[:, None], (1, 3)).astype(float)
    with pytest.warns(bd.exceptions.LabelsAsScoresWarning, match=r"holds only the class labels \[0.0, 1.0\]"):
        res = bd.bbc(labels, Y, metric="roc_auc", n_bootstraps=10, random_state=0)
    assert res.naive_estimate == 1.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(predictions=SCORES[:15]), r"'predictions' and 'y' of bbc must have the same number of samples\. Got 15 and 20"),
        (dict(predictions=np.zeros((20,))), r"'predictions' parameter of bbc must have shape \(N, C\)"),
        (dict(predictions=np.where(np.eye(20, 3) > 0, np.nan, SCORES)), r"'predictions' parameter of bbc must not contain NaN or infinity"),
        (dict(predictions=np.where(np.eye(20, 3) > 0, np.inf, SCORES)), r"must not contain NaN or infinity"),
        (dict(y=np.where(np.arange(20) == 3, np.nan, Y)), r"'y' parameter of bbc must not contain NaN or infinity"),
        (dict(y=np.zeros(20)), r"needs at least two classes in 'y' of bbc"),
        (dict(y=np.arange(20) % 3), r"'roc_auc' is binary but 'y' of bbc has 3 classes\. Use 'roc_auc_ovr'"),
        (dict(n_bootstraps=0), r"The 'n_bootstraps' parameter of bbc must be an int in the range \[1, inf\)\. Got 0 instead\."),
        (dict(n_bootstraps=2.5), r"'n_bootstraps' parameter of bbc must be an int"),
        (dict(confidence_level=1.0), r"The 'confidence_level' parameter of bbc must be a float in the range \(0\.0, 1\.0\)\. Got 1\.0"),
        (dict(confidence_level=0), r"'confidence_level' parameter of bbc must be a float in the range"),
        (dict(folds=np.arange(15) % 3), r"The 'folds' parameter of bbc must have shape \(20,\) or \(20, 1\)"),
        (dict(folds=np.full(20, 0.5)), r"'folds' parameter of bbc must hold integer fold ids"),
        (dict(metric="auc"), r"'metric' parameter of bbc must be one of \["),
        (dict(random_state=-1), r"'random_state' parameter of bbc must be a non-negative int"),
        (dict(random_state="seed"), r"'random_state' parameter of bbc must be"),
        (dict(bootstrap_indices=np.zeros((5, 19), int)), r"'bootstrap_indices' parameter of bbc must have shape \(B, 20\)"),
        (dict(bootstrap_indices=np.full((5, 20), 20)), r"'bootstrap_indices' parameter of bbc must hold integer positions in \[0, 20\)"),
        (dict(pos_label=5), r"'pos_label' parameter of bbc must be one of the labels \[0, 1\]\. Got 5"),
        (dict(predictions=PROBA), r"'roc_auc' expects a score of the positive class, .* has a class axis .* predictions\[\.\.\., 1\]"),
        (dict(metric="accuracy"), r"'accuracy' expects predicted class labels drawn from y's labels \[0, 1\], but 'predictions' of bbc holds .* not probabilities"),
        (dict(metric="neg_log_loss"), r"'neg_log_loss' needs class probabilities: 'predictions' of bbc must have shape \(N, C, R, n_classes\)"),
        (dict(metric="neg_log_loss", predictions=PROBA * 2), r"expects class probabilities in \[0, 1\] that sum to 1"),
        (dict(metric="neg_log_loss", predictions=RNG.dirichlet([1, 1, 1], size=(20, 3, 1))), r"has 3 classes on its class axis but 'y' has 2"),
        (dict(metric="concordance_index"), r"'y' parameter of bbc must be a \(time, event\) pair"),
        (dict(metric="r2", y=np.array(["a"] * 20)), r"'y' parameter of bbc must be numeric"),
    ],
)
def test_bbc_bad_input(kwargs, match):
    args = dict(predictions=SCORES, y=Y, metric="roc_auc", n_bootstraps=10, random_state=0)
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        bd.bbc(args.pop("predictions"), args.pop("y"), **args)


def test_bbc_f_bad_folds():
    with pytest.raises(ValueError, match=r"The 'folds' parameter of bbc_f must have shape \(20,\)"):
        bd.bbc_f(SCORES, Y, np.arange(10), metric="roc_auc")
    with pytest.raises(ValueError, match=r"must define at least 2 folds in every repeat; repeat 0 has 1"):
        bd.bbc_f(SCORES, Y, np.zeros(20, int), metric="roc_auc")
    folds = np.array([0] * 10 + [1] * 10)
    y = np.array([0] * 10 + [0, 1] * 5)  # fold 0 holds a single class
    with pytest.raises(ValueError, match=r"'roc_auc' is undefined on fold 0 of repeat 0 in bbc_f"):
        bd.bbc_f(SCORES, y, folds, metric="roc_auc")
    with pytest.raises(ValueError, match=r"'bootstrap_indices' parameter of bbc_f must have shape \(B, 2\)"):
        bd.bbc_f(SCORES, Y, (np.arange(20) // 2) % 2, metric="roc_auc", bootstrap_indices=np.zeros((3, 20), int))


def test_dataarray_with_unknown_dims():
    import xarray as xr

    da = xr.DataArray(SCORES, dims=("row", "config"))
    with pytest.raises(ValueError, match=r"must be a DataArray with dims 'sample', 'config'"):
        bd.bbc(da, Y, metric="roc_auc")


def test_unreachable_redraw_is_reported():
    y = np.array([1] + [0] * 19)  # one positive: it can never be both in and out of bag
    with pytest.raises(ValueError, match=r"Could not draw a bootstrap whose score is defined"):
        bd.bbc(SCORES, y, metric="roc_auc", n_bootstraps=5, random_state=0)


@pytest.mark.parametrize("bad", [2.0, -1.0, 0.5, np.nan, 256.0, 300.0, -129.0, 1e10])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_labels_outside_the_classes_are_named(bad, dtype):
    # float labels 0..K-1 are encoded by a cast and a round trip: a value the cast wraps
    # or cannot represent must still be caught and shown
    pred = np.tile(Y[:, None], (1, 3)).astype(dtype)
    pred[7, 2] = bad
    with pytest.raises(ValueError, match=r"'accuracy' expects predicted class labels .* holds "
                       + ("nan" if np.isnan(bad) else repr(float(dtype(bad))).replace(".", r"\.").replace("+", r"\+"))):
        bd.bbc(pred, Y, metric="accuracy", n_bootstraps=10, random_state=0)
    pred[7, 2] = 1.0  # valid again: the same call runs, and equals integer labels
    a = bd.bbc(pred, Y, metric="accuracy", n_bootstraps=10, random_state=0)
    b = bd.bbc(pred.astype(np.int64), Y, metric="accuracy", n_bootstraps=10, random_state=0)
    assert np.array_equal(a.bootstrap_distribution, b.bootstrap_distribution)


def test_errors_are_one_line_and_show_the_users_value_as_given():
    # an array's repr wraps, and the engine's names must not be swapped inside the value
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold

    import bbc_dask as bd

    X = np.random.default_rng(0).normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    splits = [(np.arange(20), np.arange(20, 40)), (np.arange(20, 40), np.arange(20))]
    for cv, shown in ((splits, "Got [(array([ 0, 1, 2,"), (KFold(3), "Got KFold(n_splits=3,")):
        with pytest.raises(ValueError) as info:
            bd.BBCSearchCV(LogisticRegression(), {"C": [1.0]}, cv=cv, n_repeats=2,
                           client="tcp://127.0.0.1:1").fit(X, y)
        msg = str(info.value)
        assert "\n" not in msg and shown in msg, msg
        assert msg.startswith("The 'cv' parameter of BBCSearchCV must be None when 'n_repeats'")
