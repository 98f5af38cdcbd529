"""BBCSearchCV: a scikit-learn meta-estimator over run_study."""
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import bbc_dask as bd


@pytest.fixture(scope="module")
def cancer_frame():
    return load_breast_cancer(return_X_y=True, as_frame=True)


def _search(**kw):
    grid = {"logisticregression__C": [0.01, 0.1, 1.0]}
    opts = dict(cv=5, n_bootstraps=200, random_state=0, scoring="roc_auc") | kw
    return bd.BBCSearchCV(make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)), grid, **opts)


def test_fit_matches_the_study_and_delegates(cancer_frame, client, tmp_path):
    X, y = cancer_frame
    est = _search(store=str(tmp_path / "s.zarr")).fit(X, y)
    study = bd.open_study(tmp_path / "s.zarr")
    assert est.best_index_ == study.best_index_ and est.best_params_ == study.best_params_
    assert est.best_score_ == study.best_score_
    want = study.bbc(n_bootstraps=200, random_state=0)
    np.testing.assert_array_equal(est.bbc_.bootstrap_distribution, want.bootstrap_distribution)
    assert est.bbc_.estimate <= est.best_score_ + 1e-12 and est.bbc_f_.method == "bbc_f"
    assert list(est.feature_names_in_) == list(X.columns) and est.n_features_in_ == 30
    np.testing.assert_array_equal(est.classes_, [0, 1])
    np.testing.assert_array_equal(est.predict(X), est.best_estimator_.predict(X))
    np.testing.assert_allclose(est.predict_proba(X), est.best_estimator_.predict_proba(X))
    np.testing.assert_allclose(est.decision_function(X), est.best_estimator_.decision_function(X))
    from sklearn.metrics import roc_auc_score

    assert est.score(X, y) == pytest.approx(roc_auc_score(y, est.decision_function(X)))
    assert est.cv_results_["rank_test_score"][est.best_index_] == 1
    # the same selection as scikit-learn's GridSearchCV on the study's folds would make
    gs = GridSearchCV(clone(est.estimator), est.param_grid, scoring="roc_auc", cv=5).fit(X, y)
    assert set(gs.best_params_) == set(est.best_params_)


def test_clone_params_pipeline_and_temporary_store(cancer_frame, client):
    X, y = cancer_frame
    est = _search(n_repeats=2)
    c = clone(est)
    assert c.get_params()["n_repeats"] == 2 and c is not est
    c.set_params(cv=3, scoring="accuracy")
    assert c.cv == 3 and c.scoring == "accuracy"
    pipe = make_pipeline(StandardScaler(), _search(cv=3, scoring="accuracy"))
    pipe.fit(X.values, y.values)
    inner = pipe[-1]
    assert inner.study_.spec["n_repeats"] == 1 and inner.score(StandardScaler().fit_transform(X.values), y.values) > 0.9
    store = inner.study_.store
    import os

    assert os.path.isdir(store)
    del pipe, inner
    import gc

    gc.collect()
    assert not os.path.exists(store)  # the temporary store goes with the estimator


def test_regression_refit_false_and_dropping(client):
    X, y = load_diabetes(return_X_y=True)
    est = bd.BBCSearchCV(Ridge(), {"alpha": [0.01, 1.0, 100.0]}, scoring="neg_mean_squared_error",
                         cv=4, refit=False, n_bootstraps=100, random_state=1).fit(X, y)
    assert est.bbc_.estimate < 0 and not hasattr(est, "best_estimator_")
    with pytest.raises(AttributeError, match="has no attribute 'predict'"):  # as GridSearchCV
        est.predict(X)
    X2, y2 = load_breast_cancer(return_X_y=True)
    d = _search(dropping=bd.Dropping(min_predictions=50), cv=5).fit(X2, y2)
    assert d.bbc_.method == "bbcd"


def test_bad_input(cancer_frame, client):
    X, y = cancer_frame
    with pytest.raises(ValueError, match=r"The 'cv' parameter of BBCSearchCV must be an int in the range \[2, inf\)"):
        _search(cv=1).fit(X, y)
    with pytest.raises(ValueError, match="requires y to be passed"):
        _search().fit(X, None)
    with pytest.raises(ValueError, match="Unknown label type"):
        _search().fit(X, np.linspace(0, 1, len(y)))
    with pytest.raises(ValueError, match=r"The 'scoring' parameter of BBCSearchCV must be one of"):
        _search(scoring="nope").fit(X, y)


def _checked(base, grid, client):
    est = bd.BBCSearchCV(base, grid, scoring="accuracy", cv=3, n_bootstraps=50, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(est, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed
    assert sum(r["status"] == "passed" for r in results) > 30


@pytest.mark.slow  # ~20 s each: every check fits a study
@pytest.mark.parametrize("base", ["logistic", "tree", "forest", "knn"])
def test_check_estimator(base, client):
    """scikit-learn's check_estimator passes, none exempted, over four base estimators.
    The tags say what fit supports (one target column), not the base estimator's
    multilabel or multi-output abilities: trees, forests and k-NN take 2-D y."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.tree import DecisionTreeClassifier

    est, grid = {"logistic": (LogisticRegression(), {"C": [0.1, 1.0]}),
                 "tree": (DecisionTreeClassifier(random_state=0), {"max_depth": [2, None]}),
                 "forest": (RandomForestClassifier(n_estimators=5, random_state=0), {"max_depth": [2, None]}),
                 "knn": (KNeighborsClassifier(), {"n_neighbors": [1, 3]})}[base]
    _checked(est, grid, client)
    tags = bd.BBCSearchCV(est, grid).__sklearn_tags__()
    assert not tags.classifier_tags.multi_label and not tags.target_tags.multi_output
