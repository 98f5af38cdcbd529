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
from bbc_dask.exceptions import StudyNotReadyError, UnfinishedStudyWarning


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


def test_a_stopped_search_is_fitted_on_its_incomplete_cv_and_a_refit_completes_it(
        cancer_frame, client, tmp_path):
    """``stop=``: stopped after 7 of 15 cells, none complete, the search is fitted on its
    incomplete CV (its winner refit, BBC on the incomplete CV, no BBC-F); fitted again
    without the rule on its store, it equals a search never stopped."""
    X, y = cancer_frame
    store = str(tmp_path / "s.zarr")
    with pytest.warns(UnfinishedStudyWarning) as said:
        est = _search(store=store, stop=bd.Stop(max_fits=7), selection="pooled").fit(X, y)
    assert [str(w.message) for w in said] == [  # once, by fit
        "BBCSearchCV stopped early by its rule (max_fits) with 8 cells pending: it is fitted "
        "on its incomplete CV. Fit again with stop=None to finish it."]
    study = bd.open_study(store)
    study.said_unfinished = True
    assert est.stopped_.reason == "max_fits" and study.candidates().size == 0
    assert est.best_index_ == study.best_index_ == study.final_model_record["config"]
    assert est.best_params_ == study.params[est.best_index_]
    want = study.bbc(include_incomplete=True, n_bootstraps=200, random_state=0)
    assert est.bbc_ == want and not hasattr(est, "bbc_f_")
    assert est.cv_results_["rank_test_score"][est.best_index_] == 1
    np.testing.assert_array_equal(est.predict(X), est.best_estimator_.predict(X))
    est.set_params(stop=None).fit(X, y)
    whole = _search(store=str(tmp_path / "w.zarr"), selection="pooled").fit(X, y)
    assert est.stopped_ is None and est.best_index_ == whole.best_index_
    assert est.bbc_ == whole.bbc_ and est.bbc_f_ == whole.bbc_f_
    with pytest.raises(ValueError, match=r"The 'stop' parameter of BBCSearchCV must be None, "
                                         r"an instance of '\S*Stop' or an instance of 'dict'"):
        _search(stop="fast").fit(X, y)
    with pytest.raises(StudyNotReadyError, match=r"stop=Stop\(.*max_fits=1.*ended the "
                                                              r"search before every configuration"):
        _search(stop={"max_fits": 1}).fit(X, y)


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
    _passes_check_estimator(bd.BBCSearchCV(base, grid, scoring="accuracy", cv=3, n_bootstraps=50,
                                           random_state=0))


def _passes_check_estimator(est):
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


# ------------------------------------------------- parity with GridSearchCV (issue 36)
@pytest.fixture(scope="module")
def scaled_cancer():
    from sklearn.model_selection import StratifiedKFold

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    return X, y, list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))


def _unweighted_accuracy(est, X, y):
    """GridSearchCV's default scorer weights its scores by sample_weight since
    scikit-learn 1.9; the study's accuracy is unweighted: the same fits, scored alike."""
    from sklearn.metrics import accuracy_score

    return accuracy_score(y, est.predict(X))


def test_cv_results_and_sample_weight_as_grid_search(scaled_cancer, client, capfd):
    """Same folds, same fits: GridSearchCV's cv_results_ keys and shapes, its split
    scores where sample_weight changes every model (and weights the default scorer's
    scores where this scikit-learn's GridSearchCV weights them: 1.7 on), the refit on all
    rows with all weights, n_splits_ = the split columns; silent."""
    from bbc_dask import _sklearn_compat as compat

    X, y, splits = scaled_cancer
    w = np.linspace(0.1, 3.0, len(y))
    grid = {"C": [0.01, 0.1, 1.0]}
    est = bd.BBCSearchCV(LogisticRegression(), grid, cv=splits, n_bootstraps=20,
                         random_state=0).fit(X, y, sample_weight=w)
    assert capfd.readouterr().err == ""  # verbose=0
    gs = GridSearchCV(LogisticRegression(), grid, cv=splits).fit(X, y, sample_weight=w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the callable scorer takes no sample_weight: said
        plain = GridSearchCV(LogisticRegression(), grid, cv=splits,
                             scoring=_unweighted_accuracy).fit(X, y)
    assert set(est.cv_results_) == set(gs.cv_results_)
    # weighted scores are the fitted models' (fold-level): BBC-F alone estimates them
    assert hasattr(est, "bbc_") is not compat.search_scores_with_sample_weight()
    for key, value in gs.cv_results_.items():
        assert np.shape(est.cv_results_[key]) == np.shape(value), key
    for i in range(3):
        np.testing.assert_allclose(est.cv_results_[f"split{i}_test_score"],
                                   gs.cv_results_[f"split{i}_test_score"])
    assert any((est.cv_results_[f"split{i}_test_score"] != plain.cv_results_[f"split{i}_test_score"]).any()
               for i in range(3))  # the weights changed the models
    assert est.n_splits_ == gs.n_splits_ == 3 and est.multimetric_ is gs.multimetric_
    assert np.isfinite(est.refit_time_) and est.refit_time_ > 0
    # GridSearchCV's split: the fits alone (the store's fit times include the prediction)
    # and the prediction with the scores, measured by the tasks
    stored = est.study_.cube.fit_time.values.reshape(3, -1)
    assert (est.cv_results_["mean_fit_time"] < stored.mean(axis=1)).all()
    assert (est.cv_results_["mean_score_time"] > 0).all()
    assert np.isfinite(est.cv_results_["std_fit_time"]).all()
    want = LogisticRegression(**est.best_params_).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(est.best_estimator_.coef_, want.coef_)


def test_resume_with_other_fit_params_refused(scaled_cancer, client, tmp_path):
    """run_study(fit_params=): each fit (and the refit) is given the rows of its own
    training set (the estimator checks them against X's first column; error_score='raise'
    stops at a mismatch); the study's identity holds them: other weights are refused."""
    from _estimators import WeightIsFirstColumn

    X, y, _ = scaled_cancer
    X, y = X[:80].copy(), y[:80]
    X[:, 0] = w = np.linspace(0.5, 2.0, len(y))
    run = dict(store=str(tmp_path / "s.zarr"), metric="accuracy", n_splits=2, progress=False,
               random_state=0, client=client, error_score="raise")
    grid = {"C": [0.1, 1.0]}
    bd.run_study(WeightIsFirstColumn(), grid, X, y, fit_params={"sample_weight": w}, **run)
    again = bd.run_study(WeightIsFirstColumn(), grid, X, y,
                         fit_params={"sample_weight": w.copy()}, **run)
    assert again.status()["done"] == 4 and again.final_model.coef_.shape == (1, 30)
    with pytest.raises(bd.exceptions.StoreMismatchError, match=r"data\.fit_params"):
        bd.run_study(WeightIsFirstColumn(), grid, X, y,
                     fit_params={"sample_weight": w[::-1].copy()}, **run)
    with pytest.raises(bd.exceptions.StoreMismatchError, match=r"data\.fit_params \(stored '"):
        bd.run_study(WeightIsFirstColumn(), grid, X, y, **run)
    with pytest.raises(ValueError, match="The 'fit_params' parameter of run_study must be a dict"):
        bd.run_study(LogisticRegression(), {"C": [0.1]}, X, y, fit_params=[w], **run)


def test_metadata_routing_as_grid_search(scaled_cancer, client):
    """With scikit-learn's metadata routing on, sample_weight reaches the steps that
    request it (the workers fit with the same setting), as in GridSearchCV; off, a
    Pipeline is given step__param names (GridSearchCV's reference here)."""
    import sklearn
    from sklearn.exceptions import UnsetMetadataPassedError

    X, y, splits = scaled_cancer
    w = np.linspace(0.1, 3.0, len(y))
    grid = {"logisticregression__C": [0.01, 1.0]}

    def pipe():
        return make_pipeline(StandardScaler().set_fit_request(sample_weight=False),
                             LogisticRegression().set_fit_request(sample_weight=True))

    with sklearn.config_context(enable_metadata_routing=True):
        est = bd.BBCSearchCV(pipe(), grid, cv=splits, n_bootstraps=20, random_state=0).fit(
            X, y, sample_weight=w)
        with pytest.raises(UnsetMetadataPassedError, match="sample_weight"):
            bd.BBCSearchCV(LogisticRegression(), {"C": [1.0]}, cv=splits).fit(X, y, sample_weight=w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the callable scorer takes no sample_weight: said
        gs = GridSearchCV(make_pipeline(StandardScaler(), LogisticRegression()), grid, cv=splits,
                          scoring=_unweighted_accuracy).fit(X, y, logisticregression__sample_weight=w)
    for i in range(3):
        np.testing.assert_allclose(est.cv_results_[f"split{i}_test_score"],
                                   gs.cv_results_[f"split{i}_test_score"])


def test_error_score_number_as_grid_search(scaled_cancer, client):
    """error_score=0: a failed fit's split score is 0 as in GridSearchCV, its other splits
    their scores; the failed configuration is still never selected (the package's rule)
    and ranks last."""
    from _estimators import FailsWhenTrainedOn
    from sklearn.exceptions import FitFailedWarning

    X, y, splits = scaled_cancer
    X = X.copy()
    X[splits[0][1][0], 0] = 1000 + 7  # trained on in folds 1 and 2 only
    grid = {"bad": [-1, 7], "C": [0.1]}
    with pytest.warns(FitFailedWarning):
        est = bd.BBCSearchCV(FailsWhenTrainedOn(), grid, cv=splits, n_bootstraps=20,
                             error_score=0, random_state=0).fit(X, y)
    with pytest.warns(FitFailedWarning):
        gs = GridSearchCV(FailsWhenTrainedOn(), grid, cv=splits, error_score=0).fit(X, y)
    assert gs.cv_results_["split0_test_score"][1] > 0 == gs.cv_results_["split1_test_score"][1]
    for key in [f"split{i}_test_score" for i in range(3)] + ["mean_test_score", "std_test_score"]:
        np.testing.assert_allclose(est.cv_results_[key], gs.cv_results_[key])
    assert est.cv_results_["rank_test_score"][1] == 2 and est.best_index_ == 0
    assert np.isnan(est.study_.cv_results_["mean_test_score"][1])  # the study stays NaN


def test_verbose_shows_progress(scaled_cancer, client, capfd):
    X, y, splits = scaled_cancer
    bd.BBCSearchCV(LogisticRegression(), {"C": [1.0]}, cv=splits, n_bootstraps=20,
                   verbose=1).fit(X, y)
    assert "3 fits" in capfd.readouterr().err


def test_best_score_follows_the_selection_rule(client):
    """best_score_ is the selection criterion at best_index_, ranked 1: the pooled score
    by default, the mean of the fold scores (scikit-learn's) with selection='fold_mean';
    on data where the two orders differ."""
    from sklearn.datasets import make_classification
    from sklearn.neighbors import KNeighborsClassifier

    X, y = make_classification(60, 5, n_informative=2, flip_y=0.2, random_state=1)
    grid = {"n_neighbors": [1, 3, 5, 7, 9, 15]}
    runs = {sel: bd.BBCSearchCV(KNeighborsClassifier(), grid, scoring="roc_auc", cv=4,
                                n_bootstraps=20, random_state=0, selection=sel).fit(X, y)
            for sel in ("pooled", "fold_mean")}
    res = runs["pooled"].cv_results_
    assert np.argmax(res["pooled_test_score"]) != np.argmax(res["mean_test_score"])
    # GridSearchCV's rule keeps GridSearchCV's keys: the pooled score only where it ranks
    assert "pooled_test_score" not in runs["fold_mean"].cv_results_
    for sel, key in (("pooled", "pooled_test_score"), ("fold_mean", "mean_test_score")):
        est = runs[sel]
        assert est.best_index_ == np.argmax(est.cv_results_[key])
        assert est.best_score_ == pytest.approx(est.cv_results_[key][est.best_index_], abs=1e-12)
        assert est.cv_results_["rank_test_score"][est.best_index_] == 1
        np.testing.assert_array_equal(np.argsort(est.cv_results_["rank_test_score"], kind="stable"),
                                      np.argsort(-est.cv_results_[key], kind="stable"))


def test_randomized_search(scaled_cancer, client):
    """BBCRandomizedSearchCV: n_iter draws of param_distributions, recorded with the seed
    (a resume draws the same), RandomizedSearchCV's cv_results_ keys and shapes."""
    from scipy.stats import loguniform
    from sklearn.model_selection import RandomizedSearchCV

    X, y, splits = scaled_cancer
    dist = {"C": loguniform(1e-3, 1e2), "fit_intercept": [True, False]}
    est = bd.BBCRandomizedSearchCV(LogisticRegression(), dist, n_iter=4, cv=splits,
                                   n_bootstraps=20, random_state=0).fit(X, y)
    rs = RandomizedSearchCV(LogisticRegression(), dist, n_iter=4, cv=splits, random_state=0).fit(X, y)
    assert set(est.cv_results_) == set(rs.cv_results_)
    for key, value in rs.cv_results_.items():
        assert np.shape(est.cv_results_[key]) == np.shape(value), key
    assert len({p["C"] for p in est.cv_results_["params"]}) == 4
    assert all(1e-3 <= p["C"] <= 1e2 for p in est.cv_results_["params"])
    # an int random_state: RandomizedSearchCV's own candidates, run as a grid of them
    assert est.cv_results_["params"] == rs.cv_results_["params"]
    assert est.study_.spec["search"] == "grid"
    # a SeedSequence: the study's own draws, recorded with its seed (a resume draws the same)
    seeded = bd.BBCRandomizedSearchCV(LogisticRegression(), dist, n_iter=4, cv=splits,
                                      n_bootstraps=20, random_state=np.random.SeedSequence(0)).fit(X, y)
    assert seeded.study_.spec["search"] == "random" and seeded.study_.spec["n_iter"] == 4
    assert len({p["C"] for p in seeded.cv_results_["params"]}) == 4
    assert est.get_params()["n_iter"] == 4 and "param_grid" not in est.get_params()
    assert "BBCRandomizedSearchCV" in bd.__all__
    with pytest.raises(ValueError, match=r"The 'n_iter' parameter of BBCRandomizedSearchCV "
                                         r"must be an int in the range \[1, inf\)"):
        bd.BBCRandomizedSearchCV(LogisticRegression(), dist, n_iter=0).fit(X, y)


@pytest.mark.slow  # ~20 s: every check fits a study
def test_check_estimator_randomized(client):
    _passes_check_estimator(bd.BBCRandomizedSearchCV(
        LogisticRegression(), {"C": [0.1, 1.0, 10.0]}, n_iter=2, scoring="accuracy", cv=3,
        n_bootstraps=50, random_state=0))


def test_delegated_methods_as_grid_search():
    """The methods of best_estimator_ that GridSearchCV offers, for the same estimator."""
    from sklearn.decomposition import PCA
    from sklearn.ensemble import IsolationForest

    names = ["predict", "predict_proba", "predict_log_proba", "decision_function",
             "transform", "inverse_transform", "score_samples"]
    for est in (LogisticRegression(), make_pipeline(StandardScaler(), PCA()), IsolationForest()):
        for name in names:
            assert hasattr(bd.BBCSearchCV(est, {}), name) == hasattr(GridSearchCV(est, {}), name), \
                (est, name)


def test_refit_callable_as_grid_search(scaled_cancer, client):
    """refit=callable chooses best_index_ from cv_results_ and refits that configuration,
    as GridSearchCV does; no best_score_; bad indices are GridSearchCV's errors."""
    X, y, splits = scaled_cancer
    grid = {"C": [0.01, 0.1, 1.0]}

    def worst(results):  # not the study's winner: the choice is the callable's
        return int(np.argmin(results["mean_test_score"]))

    est = bd.BBCSearchCV(LogisticRegression(), grid, cv=splits, n_bootstraps=20, random_state=0,
                         refit=worst).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gs = GridSearchCV(LogisticRegression(), grid, cv=splits, refit=worst).fit(X, y)
    assert est.best_index_ == gs.best_index_ == worst(est.cv_results_) != est.study_.best_index_
    assert est.best_params_ == gs.best_params_
    np.testing.assert_allclose(est.best_estimator_.coef_, gs.best_estimator_.coef_)
    np.testing.assert_array_equal(est.predict(X), gs.predict(X))
    assert not hasattr(est, "best_score_") and not hasattr(gs, "best_score_")
    assert est.refit_time_ > 0 and est.bbc_.selected_config == est.study_.best_index_
    for bad, got in ((lambda r: 1.5, "1.5"), (lambda r: 3, "3")):
        with pytest.raises(ValueError, match=rf"The 'refit' parameter of BBCSearchCV must be a "
                                             rf"callable that returns an integer index of "
                                             rf"cv_results_\['params'\] \(0 to 2\)\. Got one "
                                             rf"that returned {got} instead"):
            bd.BBCSearchCV(LogisticRegression(), grid, cv=splits, n_bootstraps=20,
                           refit=bad).fit(X, y)


def test_multimetric_scoring_as_grid_search(scaled_cancer, client):
    """Scorers that read the same stored predictions: GridSearchCV's multimetric keys,
    split scores, ranks and refit=name (tests/test_fit_scores.py: scorers reading others)."""
    X, y, splits = scaled_cancer
    grid = {"C": [0.001, 0.01, 0.1, 1.0]}
    scoring = ["accuracy", "f1", "precision", "balanced_accuracy"]
    est = bd.BBCSearchCV(LogisticRegression(), grid, cv=splits, scoring=scoring, refit="f1",
                         selection="fold_mean", n_bootstraps=20, random_state=0).fit(X, y)
    gs = GridSearchCV(LogisticRegression(), grid, cv=splits, scoring=scoring, refit="f1").fit(X, y)
    assert set(est.cv_results_) == set(gs.cv_results_)
    for name in scoring:
        for i in range(3):
            np.testing.assert_allclose(est.cv_results_[f"split{i}_test_{name}"],
                                       gs.cv_results_[f"split{i}_test_{name}"], rtol=1e-12)
        np.testing.assert_allclose(est.cv_results_[f"mean_test_{name}"],
                                   gs.cv_results_[f"mean_test_{name}"], rtol=1e-12)
        if name != "f1":  # the refit scorer's ranks follow the selection rule (documented)
            np.testing.assert_array_equal(est.cv_results_[f"rank_test_{name}"],
                                          gs.cv_results_[f"rank_test_{name}"])
    assert est.multimetric_ and gs.multimetric_ and set(est.scorer_) == set(scoring)
    assert est.best_index_ == gs.best_index_ and est.best_score_ == gs.best_score_
    assert est.score(X, y) == gs.score(X, y)
    assert est.bbc_.selected_config == est.best_index_
    np.testing.assert_array_equal(est.study_.fold_scores("accuracy")[1],
                                  est.cv_results_["split1_test_accuracy"])
    with pytest.raises(ValueError, match=r"^The 'metric' parameter of Study.fold_scores must be "
                                         r"a metric that reads the study's stored predictions"):
        est.study_.fold_scores("roc_auc")
    # a scorer of the other class cannot be read from responses stored for class 1
    from sklearn.metrics import f1_score, make_scorer

    np.testing.assert_array_equal(est.study_.fold_scores(make_scorer(f1_score, pos_label=1)),
                                  est.study_.fold_scores("f1"))
    with pytest.raises(ValueError, match=r"must be a scorer of the study's positive class \(1\)\. "
                                         r"Got .*make_scorer\(f1_score.* with pos_label=0 instead"):
        est.study_.fold_scores(make_scorer(f1_score, pos_label=0))
    for scoring, refit, match in (
            (["f1", "accuracy"], True, r"The 'refit' parameter of BBCSearchCV must be one of "
                                       r"the scoring keys \['f1', 'accuracy'\]"),
            (["f1", "f1"], "f1", r"a non-empty list of distinct scorer names")):
        with pytest.raises(ValueError, match=match):
            bd.BBCSearchCV(LogisticRegression(), grid, cv=splits, scoring=scoring, refit=refit,
                           client="tcp://127.0.0.1:1").fit(X, y)


class _Hooked(LogisticRegression):
    """A classifier whose fit takes a callable, as libraries' fit callbacks do."""

    def fit(self, X, y, hook=None):
        assert callable(hook) and hook() == "called"
        return super().fit(X, y)


def test_a_local_function_as_a_fit_parameter(scaled_cancer, client):
    """A fit parameter pickle cannot name (a local function) reaches every fit and the
    refit (Dask ships it by cloudpickle; the study fingerprints it by Dask's token), as in
    GridSearchCV."""
    X, y, splits = scaled_cancer

    def hook():
        return "called"

    est = bd.BBCSearchCV(_Hooked(), {"C": [0.1, 1.0]}, cv=splits, n_bootstraps=20,
                         random_state=0).fit(X, y, hook=hook)
    gs = GridSearchCV(_Hooked(), {"C": [0.1, 1.0]}, cv=splits).fit(X, y, hook=hook)
    assert est.best_index_ == gs.best_index_
    np.testing.assert_allclose(est.best_estimator_.coef_, gs.best_estimator_.coef_)


def test_scoring_none_is_the_estimators_own_score(client):
    """scoring=None is GridSearchCV's estimator.score: scikit-learn's accuracy or R² of
    predict (KNeighborsClassifier's documented override of it too) is scored on the stored
    predictions (bbc_ set); another score (PoissonRegressor's D² of its deviance) is called
    on each fold's fitted model (bbc_f_ alone) — GridSearchCV's scores and winner either way."""
    from sklearn.datasets import make_classification
    from sklearn.linear_model import PoissonRegressor
    from sklearn.neighbors import KNeighborsClassifier

    X, y = make_classification(120, 5, random_state=0)
    knn = bd.BBCSearchCV(KNeighborsClassifier(), {"n_neighbors": [3, 9]}, cv=3, n_bootstraps=20,
                         random_state=0).fit(X, y)
    theirs = GridSearchCV(KNeighborsClassifier(), {"n_neighbors": [3, 9]}, cv=3).fit(X, y)
    np.testing.assert_array_equal(knn.cv_results_["mean_test_score"], theirs.cv_results_["mean_test_score"])
    assert knn.study_.metric == "accuracy" and hasattr(knn, "bbc_")
    rng = np.random.default_rng(0)
    counts = rng.poisson(np.exp(0.3 * X[:, 0] + 0.2 * X[:, 1]))
    ours = bd.BBCSearchCV(PoissonRegressor(), {"alpha": [0.01, 1.0]}, cv=3, n_bootstraps=20,
                          random_state=0).fit(X, counts)
    theirs = GridSearchCV(PoissonRegressor(), {"alpha": [0.01, 1.0]}, cv=3).fit(X, counts)
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"],
                               theirs.cv_results_["mean_test_score"], rtol=1e-12)
    assert ours.best_index_ == theirs.best_index_ and not hasattr(ours, "bbc_")
    assert ours.bbc_f_.selected_config == ours.best_index_
