"""Scores of the fitted fold models (the store's ``fit_score``): BBCSearchCV's plain
callable scorers, scorers reading another prediction than the study's metric, scorers
taking routed metadata, and ``return_train_score`` — each against GridSearchCV on the
same folds."""
import numpy as np
import pytest
import sklearn
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, get_scorer, make_scorer
from sklearn.model_selection import GridSearchCV

import bbc_dask as bd
from bbc_dask.exceptions import InvalidParameterError

GRID = {"C": [0.003, 0.03, 0.3, 3.0]}


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(150, 6, n_informative=3, flip_y=0.1, random_state=3)
    return X, y


def penalised(est, X, y):
    """A plain callable scorer: accuracy minus a penalty on C (not a make_scorer)."""
    return float((est.predict(X) == y).mean()) - 0.01 * np.log10(est.C)


def _splits(search):
    folds = search.study_._cube.folds()[:, 0]
    return [(np.flatnonzero(folds != k), np.flatnonzero(folds == k))
            for k in range(int(folds.max()) + 1)]


def _same_results(ours, theirs, skip_rank=()):
    """Every key GridSearchCV has, with its values (the refit scorer's ranks apart when
    the study's rule is the pooled score: documented)."""
    assert not set(theirs.cv_results_) - set(ours.cv_results_)
    for key, want in theirs.cv_results_.items():
        if key.startswith(("split", "mean_test", "std_test", "mean_train", "std_train")):
            np.testing.assert_allclose(ours.cv_results_[key], want, rtol=1e-12, atol=1e-15,
                                       err_msg=key)
        elif key.startswith("rank_test") and key not in skip_rank:
            np.testing.assert_array_equal(ours.cv_results_[key], want, err_msg=key)


def test_callable_scorer_and_train_scores_as_grid_search(data, client):
    X, y = data
    ours = bd.BBCSearchCV(LogisticRegression(), GRID, scoring=penalised, cv=4,
                          return_train_score=True, n_bootstraps=100, random_state=0,
                          client=client).fit(X, y)
    theirs = GridSearchCV(LogisticRegression(), GRID, scoring=penalised, cv=_splits(ours),
                          return_train_score=True).fit(X, y)
    _same_results(ours, theirs)
    assert set(ours.cv_results_) - set(theirs.cv_results_) == set()  # no pooled score of it
    assert ours.best_index_ == theirs.best_index_ and ours.best_score_ == theirs.best_score_
    assert ours.best_estimator_.C == theirs.best_estimator_.C
    assert ours.score(X, y) == theirs.score(X, y)
    # only fold-level scores exist for a callable: BBC-F on them, no sample-level BBC
    assert not hasattr(ours, "bbc_")
    assert ours.bbc_f_ == ours.study_.bbc_f(fit_scorer="test_score", n_bootstraps=100,
                                            random_state=0)
    assert ours.bbc_f_.selected_config == ours.best_index_
    assert ours.study_.fit_scorers == ("test_score", "train_score")
    with pytest.raises(InvalidParameterError, match=r"'fit_scorer' parameter of Study\.fit_scores "
                                                    r"must be one of the study's scorers"):
        ours.study_.fit_scores("test_nope")


def confusion(est, X, y):
    """A plain callable returning a dict of scores: multimetric by callable."""
    from sklearn.metrics import confusion_matrix

    tn, fp, fn, tp = confusion_matrix(y, est.predict(X)).ravel()
    return {"tp": tp, "fp": -fp, "recall": tp / (tp + fn)}


def test_a_callable_returning_a_dict_is_multimetric_as_in_grid_search(data, client):
    """Its names, learnt from one probe fit, are the scorers: every cv_results_ key and
    value of GridSearchCV, refit by the one named, score() by it; a refit naming none of
    them is refused in GridSearchCV's words."""
    X, y = data
    ours = bd.BBCSearchCV(LogisticRegression(), GRID, scoring=confusion, refit="fp", cv=4,
                          n_bootstraps=50, random_state=0, client=client).fit(X, y)
    theirs = GridSearchCV(LogisticRegression(), GRID, scoring=confusion, refit="fp",
                          cv=_splits(ours)).fit(X, y)
    _same_results(ours, theirs)
    assert set(ours.cv_results_) == set(theirs.cv_results_) and ours.multimetric_
    assert ours.best_index_ == theirs.best_index_ and ours.best_score_ == theirs.best_score_
    assert ours.score(X, y) == theirs.score(X, y)
    assert ours.bbc_f_.selected_config == ours.best_index_ and not hasattr(ours, "bbc_")
    with pytest.raises(ValueError, match="For multi-metric scoring, the parameter refit must be "
                                         "set to a scorer key"):
        bd.BBCSearchCV(LogisticRegression(), GRID, scoring=confusion, refit="tn",
                       client=client).fit(X, y)


def test_scorers_reading_other_predictions(data, client):
    """roc_auc next to f1 (another response method) and the train scores of both."""
    X, y = data
    scoring = ["f1", "roc_auc", "accuracy"]
    ours = bd.BBCSearchCV(LogisticRegression(), GRID, scoring=scoring, refit="f1", cv=4,
                          return_train_score=True, selection="fold_mean", n_bootstraps=50,
                          random_state=0, client=client).fit(X, y)
    theirs = GridSearchCV(LogisticRegression(), GRID, scoring=scoring, refit="f1",
                          cv=_splits(ours), return_train_score=True).fit(X, y)
    _same_results(ours, theirs)
    assert set(ours.cv_results_) == set(theirs.cv_results_)
    assert ours.best_index_ == theirs.best_index_ and ours.best_score_ == theirs.best_score_
    # accuracy reads the stored labels; roc_auc and every train score the fitted models
    assert ours.study_.fit_scorers == ("test_roc_auc", "train_f1", "train_roc_auc",
                                       "train_accuracy")
    assert ours.bbc_.selected_config == ours.best_index_


def test_scorer_taking_sample_weight(data, client, tmp_path):
    """Routed sample_weight reaches the fits and the scorers that ask for it, on the
    rows of each split, as in GridSearchCV; other weights are another study."""
    X, y = data
    w = np.random.default_rng(0).uniform(0.2, 2.0, len(y))
    with sklearn.config_context(enable_metadata_routing=True):
        weighted = make_scorer(accuracy_score).set_score_request(sample_weight=True)
        est = LogisticRegression().set_fit_request(sample_weight=True)
        scoring = {"w": weighted, "auc": get_scorer("roc_auc").set_score_request(sample_weight=False)}
        ours = bd.BBCSearchCV(est, GRID, scoring=scoring, refit="w", cv=4, n_bootstraps=50,
                              random_state=0, store=tmp_path / "w.zarr",
                              client=client).fit(X, y, sample_weight=w)
        theirs = GridSearchCV(est, GRID, scoring=scoring, refit="w",
                              cv=_splits(ours)).fit(X, y, sample_weight=w)
        _same_results(ours, theirs)
        assert ours.best_index_ == theirs.best_index_ and ours.best_score_ == theirs.best_score_
        unweighted = ours.study_.fit_scores("test_w")
        assert not np.allclose(unweighted, ours.study_.fold_scores("accuracy"))
        with pytest.raises(ValueError, match=r"What differs: .*score_params"):
            bd.BBCSearchCV(est, GRID, scoring=scoring, refit="w", cv=4, random_state=0,
                           store=tmp_path / "w.zarr", client=client).fit(X, y, sample_weight=w ** 2)


def test_failing_scorer_and_error_score(data, client):
    """A scorer that raises fails its configuration's cell, as a fit that raises; a
    number as error_score is what cv_results_ shows, as in GridSearchCV."""
    X, y = data

    def fussy(est, X, y):
        if est.C > 1:
            raise ValueError("C too large to score")
        return penalised(est, X, y)

    ours = bd.BBCSearchCV(LogisticRegression(), GRID, scoring=fussy, cv=4, error_score=0.0,
                          n_bootstraps=20, random_state=0, client=client)
    with pytest.warns(Warning, match="C too large to score"):
        ours.fit(X, y)
    assert "C too large to score" in ours.study_._cube.errors()[3]
    np.testing.assert_array_equal(ours.cv_results_["mean_test_score"][3], 0.0)
    assert ours.best_index_ != 3
    with pytest.raises(InvalidParameterError, match=r"^The 'dropping' parameter of BBCSearchCV "
                                                    r"must be False with scorers scored by"):
        bd.BBCSearchCV(LogisticRegression(), GRID, scoring=fussy, cv=4, dropping=True,
                       client="tcp://127.0.0.1:1").fit(X, y)


def test_fit_scores_verified_and_repaired(data, client, tmp_path):
    """A damaged chunk of fit_score is found by verify; repair and a rerun restore it
    bit for bit."""
    import shutil

    from bbc_dask.cube import verify_store

    X, y = data
    store = tmp_path / "f.zarr"
    search = bd.BBCSearchCV(LogisticRegression(), GRID, scoring=penalised, cv=4, store=store,
                            n_bootstraps=20, random_state=0, client=client).fit(X, y)
    before = search.study_.fit_scores("test_score")
    chunk = store / "fit_score" / "c" / "0" / "0" / "0" / "0"
    assert chunk.exists()
    chunk.write_bytes(b"garbage")
    report, _ = verify_store(store)
    assert any("fit_score" in d.file for d in report.damaged)
    assert verify_store(store, repair=True)[1] > 0
    again = bd.BBCSearchCV(LogisticRegression(), GRID, scoring=penalised, cv=4, store=store,
                           n_bootstraps=20, random_state=0, client=client).fit(X, y)
    np.testing.assert_array_equal(again.study_.fit_scores("test_score"), before)
    assert verify_store(store)[0].damaged == []
    shutil.rmtree(store)


def test_failed_configuration_scores_as_grid_search(data, client):
    """A configuration that fails on some folds: its trained folds' scores of every
    scorer (stored predictions, fitted models, training rows) and error_score on the
    others, as GridSearchCV shows them."""
    import warnings

    from _estimators import FailsWhenTrainedOn

    X, y = data
    X = X.copy()
    X[0, 0] = 1000  # sample 0: the configuration with bad=0 fails where it trains on it
    grid = {"bad": [-1, 0], "C": [0.1, 1.0]}
    scoring = ["accuracy", "f1", "roc_auc"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = bd.BBCSearchCV(FailsWhenTrainedOn(), grid, scoring=scoring, refit="accuracy",
                              cv=4, error_score=0.0, return_train_score=True,
                              selection="fold_mean", n_bootstraps=20, random_state=0,
                              client=client).fit(X, y)
        theirs = GridSearchCV(FailsWhenTrainedOn(), grid, scoring=scoring, refit="accuracy",
                              cv=_splits(ours), error_score=0.0,
                              return_train_score=True).fit(X, y)
    failed = [c for c in range(4) if (ours.study_.state[c] == 2).any()]
    assert failed == [1, 3] and (ours.study_.state[1] == 1).sum() == 1  # one trained fold
    _same_results(ours, theirs, skip_rank=("rank_test_accuracy",))
