"""The study's fingerprint: values compared in one canonical encoding (NaN equals NaN, an
object is its state and never its address), so that a study of a real pipeline resumes;
and the refusal of a store holding another study, short and leading with what matters."""
import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.impute import KNNImputer, MissingIndicator, SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline, make_union
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler

import bbc_dask as bd
from bbc_dask._fingerprint import canonical, encode, readable, same, same_form
from bbc_dask.cli import main
from bbc_dask.engine import _plan
from bbc_dask.exceptions import StoreMismatchError


def _make_function(body):
    """A new function object each call, from the same source (as a new process makes)."""
    ns = {}
    exec(f"f = lambda x: {body}", ns)  # noqa: S102 - a fixed test source
    return ns["f"]


def _pipeline():
    return make_pipeline(
        ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(), StandardScaler()),
             make_column_selector(dtype_include="number")),
            ("cat", OneHotEncoder(handle_unknown="ignore"), make_column_selector(dtype_include=object)),
        ]),
        LogisticRegression(max_iter=500))


VALUES = [
    None, True, False, 0, 1, -3, 1.0, 0.5, "1.0", "nan", np.nan, np.float32("nan"), np.inf,
    -np.inf, np.int64(3), np.float64(2.5), np.bool_(True), 1 + 2j, [np.nan, 1], (np.nan, "a"),
    {"a": np.nan, "b": [np.nan]}, {1: "int key", "1": "str key"}, np.array([np.nan, 1.0]),
    np.array([["a", None]], dtype=object), np.arange(2000), SimpleImputer(), KNNImputer(),
    MissingIndicator(), _pipeline(), make_union(SimpleImputer(), MissingIndicator()),
    make_column_selector(dtype_include="number"), np.log1p, abs, LogisticRegression,
    _make_function("x + 1"), {"$float": "nan"},
]


@pytest.mark.parametrize("value", VALUES, ids=[type(v).__name__ + str(i) for i, v in enumerate(VALUES)])
def test_a_normal_form_comes_back_from_json_unchanged(value):
    form = canonical(value)
    text = json.dumps(form, allow_nan=False)  # strict JSON: no NaN literal
    assert json.loads(text) == form and same_form(json.loads(text), form)  # as a store gives it back
    assert encode(value) == encode(value)
    assert readable(form)


#: Values encoded in other processes, with other hash seeds: a set's order, a main
#: script's function and a column selector's state must not depend on either.
_IN_ANOTHER_PROCESS = """
import functools, json, sys
import numpy as np
from sklearn.compose import make_column_selector
from sklearn.pipeline import make_pipeline
from sklearn.impute import SimpleImputer
from sklearn.preprocessing import FunctionTransformer
from bbc_dask._fingerprint import encode

class Clip:
    def __init__(self, low):
        self.low = low
    def __call__(self, X):
        return np.maximum(X, self.low)

def double(x):
    return 2 * x

values = [make_column_selector(dtype_include="number"), frozenset({"alpha", "beta", "gamma", "delta"}),
          {"b", "a", "c"}, FunctionTransformer(Clip(-1.0)), double, lambda x: x + 1,
          functools.partial(np.clip, a_min=0), make_pipeline(SimpleImputer(), FunctionTransformer(double)),
          np.random.default_rng(3), np.random.RandomState(4)]
print(json.dumps([encode(v) for v in values]))
"""


def test_the_encoding_is_the_same_in_every_process(tmp_path):
    import os
    import subprocess
    import sys

    script = tmp_path / "encode.py"  # a main script of its own: its class and functions
    script.write_text(_IN_ANOTHER_PROCESS)
    runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout
            for seed in ("1", "2")]
    assert runs[0] == runs[1] and len(json.loads(runs[0])) == 10


def test_nan_equals_nan_wherever_it_is():
    pairs = [(np.nan, float("nan")), (np.nan, np.float32("nan")), ([np.nan], [np.nan]),
             ((np.nan, 1), (np.nan, 1)), ({"a": np.nan}, {"a": np.nan}), ({np.nan}, {float("nan")}),
             (np.array([1.0, np.nan]), np.array([1.0, -np.nan])),
             (SimpleImputer(), SimpleImputer(missing_values=np.nan)), (_pipeline(), _pipeline()),
             # an object by its state, not its address; a lambda by its code
             (make_column_selector(dtype_include="number"), make_column_selector(dtype_include="number")),
             (_make_function("x + 1"), _make_function("x + 1"))]
    for a, b in pairs:
        assert a is not b
        assert same(a, b), (a, b)


def test_values_that_fit_differently_differ():
    pairs = [(np.nan, None), (1.0, "1.0"), (1, True), (1, 1.0), (np.nan, "nan"), (np.inf, -np.inf),
             ((1, 2), [1, 2]),  # CountVectorizer takes ngram_range=(1, 2), refuses [1, 2]
             ({"$float": "nan"}, np.nan), (np.timedelta64(5), 5),
             (np.array([complex(np.nan, 1)]), np.array([complex(np.nan, 2)])),
             (np.ma.array([1, 2], mask=[0, 1]), np.ma.array([1, 2], mask=[1, 0])),
             ([1, 2], [2, 1]), (np.arange(2000), np.arange(2000) + (np.arange(2000) == 1500)),
             (SimpleImputer(), SimpleImputer(missing_values=-1)),
             (SimpleImputer(), KNNImputer()),
             (make_column_selector(dtype_include="number"), make_column_selector(dtype_include=object)),
             (_make_function("x + 1"), _make_function("x + 2")), (np.log1p, np.expm1),
             (FunctionTransformer(np.log1p), FunctionTransformer(np.expm1))]
    # what an estimator holds outside get_params: its output container, its metadata
    # requests, and a fitted estimator's fit (FrozenEstimator's)
    from sklearn import config_context
    from sklearn.frozen import FrozenEstimator

    Xf = np.arange(20.0).reshape(10, 2)
    yf = np.arange(10) % 2
    pairs += [(StandardScaler().set_output(transform="pandas"), StandardScaler()),
              (FrozenEstimator(LogisticRegression().fit(Xf, yf)), FrozenEstimator(LogisticRegression().fit(Xf, 1 - yf)))]
    with config_context(enable_metadata_routing=True):
        pairs.append((LogisticRegression().set_fit_request(sample_weight=True),
                      LogisticRegression().set_fit_request(sample_weight=False)))
    for a, b in pairs:
        assert not same(a, b), (a, b)
    # an array that repr elides ("...") is still compared whole
    long = [p for p in pairs if isinstance(p[0], np.ndarray) and p[0].size == 2000][0]
    assert repr(long[0]) == repr(long[1])


def _data():
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:150, :6].copy(), y[:150]
    X[::17, 3] = np.nan
    return X, y


def test_a_study_with_an_imputer_resumes(tmp_path, client):
    """The issue's script: a SimpleImputer (missing_values=nan) pipeline run twice, and a
    grid holding NaN among its values: the second run resumes (nothing fitted again)."""
    X, y = _data()
    est = make_pipeline(SimpleImputer(), StandardScaler(), LogisticRegression(max_iter=2000))
    grid = {"logisticregression__C": [0.1, 1], "simpleimputer__missing_values": [np.nan]}
    runs = [bd.run_study(est, grid, X, y, store=tmp_path / "imp.zarr", metric="roc_auc",
                         n_splits=3, random_state=0, client=client, progress=False, refit=False)
            for _ in range(2)]
    assert runs[0].n_fits_ == 6 and runs[1].n_fits_ == 0
    assert runs[0].spec["fingerprint"] == 2
    assert runs[0].spec["estimator"]["simpleimputer__missing_values"] == {"$float": "nan"}


def test_a_column_transformer_with_selectors_resumes(tmp_path, client):
    """make_column_selector has no repr of its own (its address is in it): its state is
    what the fingerprint holds, so a DataFrame study with strings and NaN resumes."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=120), "b": rng.normal(size=120),
                      "c": rng.choice(["x", "y", "z"], size=120)})
    X.loc[::11, "a"] = np.nan
    y = np.where(X["b"] + (X["c"] == "x") > 0.3, "yes", "no")
    grid = {"logisticregression__C": [0.1, 1.0]}
    first = bd.run_study(_pipeline(), grid, X, y, store=tmp_path / "ct.zarr", metric="roc_auc",
                         n_splits=3, random_state=0, client=client, progress=False, refit=False)
    again = bd.run_study(_pipeline(), grid, X, y, store=tmp_path / "ct.zarr", metric="roc_auc",
                         n_splits=3, random_state=0, client=client, progress=False, refit=False)
    assert first.n_fits_ == 6 and again.n_fits_ == 0
    # the changed step's own parameter first, before its parents' lists of steps
    with pytest.raises(StoreMismatchError, match=r"What differs: estimator\.columntransformer"
                       r"__num__simpleimputer__strategy \(stored 'mean', given 'median'\); "):
        other = _pipeline().set_params(
            columntransformer__num=make_pipeline(SimpleImputer(strategy="median"), StandardScaler()))
        bd.run_study(other, grid, X, y, store=tmp_path / "ct.zarr", metric="roc_auc", n_splits=3,
                     random_state=0, client=client, progress=False, refit=False)


def test_a_store_of_the_first_encoding_keeps_resuming(tmp_path, client, monkeypatch):
    """A store written before the canonical encoding (no ``fingerprint`` in its spec,
    values by repr) resumes, now also with NaN parameters and selectors' addresses; and
    stays in its encoding."""
    X, y = _data()
    X = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    grid = {"columntransformer__num__simpleimputer__strategy": ["mean", "median"]}

    def est():
        return make_pipeline(ColumnTransformer([("num", make_pipeline(SimpleImputer(), StandardScaler()),
                                                 make_column_selector(dtype_include="number"))]),
                             LogisticRegression(max_iter=500))

    def run(e=None, **kw):
        return bd.run_study(e or est(), grid, X, y, store=tmp_path / "v1.zarr", metric="roc_auc", n_splits=3,
                            random_state=0, client=client, progress=False, refit=False, **kw)

    monkeypatch.setattr(_plan, "FINGERPRINT", 1)
    first = run(stop=bd.Stop(max_fits=2))
    assert "fingerprint" not in first.spec
    assert first.spec["estimator"]["columntransformer__num__simpleimputer__missing_values"] != \
        first.spec["estimator"]["columntransformer__num__simpleimputer__missing_values"]  # NaN
    monkeypatch.setattr(_plan, "FINGERPRINT", 2)
    # the selector was recorded by a repr holding its address: compared by class alone
    with pytest.warns(UserWarning, match=r"written before studies recorded every value in full: "
                                         r"columntransformer.*class alone"):
        again = run()
    assert again.n_fits_ == 4 and "fingerprint" not in again.spec
    with pytest.raises(StoreMismatchError, match=r"simpleimputer__missing_values \(stored nan, given -1\)"):
        run(est().set_params(columntransformer__num__simpleimputer__missing_values=-1))


def test_another_study_is_refused_with_its_name_and_five_differences(tmp_path, client):
    X, y = _data()
    est = make_pipeline(SimpleImputer(), StandardScaler(), LogisticRegression(max_iter=2000))
    kw = dict(store=tmp_path / "s.zarr", n_splits=3, random_state=0, client=client, progress=False,
              refit=False)
    bd.run_study(est, {"logisticregression__C": [0.1, 1]}, X, y, metric="roc_auc",
                 metadata={"name": "imputed"}, **kw)
    with pytest.raises(StoreMismatchError) as info:
        bd.run_study(make_pipeline(SimpleImputer(), HistGradientBoostingClassifier(max_iter=5)),
                     {"histgradientboostingclassifier__max_depth": [2]}, X, y, metric="accuracy",
                     metadata={"name": "boosted"}, **kw)
    exc = info.value
    msg = str(exc)
    assert msg.startswith(f"The store {str(tmp_path / 's.zarr')!r} holds the study 'imputed', not 'boosted'")
    assert len(exc.differences) > 20
    shown = msg.split("What differs")[1]
    # the study's own keys first (the metric, the candidates), the estimator's parameters after
    assert "metric (stored 'roc_auc', given 'accuracy')" in shown
    assert shown.count(" (stored ") == 5 and f"and {len(exc.differences) - 5} more" in shown
    assert "the exception's differences" in msg and len(msg) < 1000
    assert all(d in exc.differences for d in ("metric (stored 'roc_auc', given 'accuracy')",))


def test_the_command_line_prints_every_difference_with_verbose(tmp_path):
    study = tmp_path / "s.yaml"
    text = """name: {name}
data: {{sklearn: breast_cancer}}
grid:
  - pipeline:
      - sklearn.impute.SimpleImputer
      - {{estimator: sklearn.linear_model.LogisticRegression, params: {{max_iter: 3000}}}}
    grid: {{logisticregression__C: {C}}}
cv: {{splits: 3}}
metric: {metric}
random_state: 0
store: s.zarr
cluster: {{kind: local, n_workers: 1, processes: false}}
"""
    study.write_text(text.format(name="first", C="[1.0]", metric="roc_auc"))
    runner = CliRunner()
    for _ in range(2):  # the second run resumes: SimpleImputer's NaN no longer differs
        res = runner.invoke(main, ["run", str(study), "--no-progress"])
        assert res.exit_code == 0, res.output
    study.write_text(text.format(name="second", C="[0.5, 2.0]", metric="accuracy"))
    quiet = runner.invoke(main, ["run", str(study), "--no-progress"])
    assert quiet.exit_code == 2
    assert "holds the study 'first', not 'second'" in quiet.output
    assert "candidates: grid.logisticregression__C (stored [1.0], given [0.5, 2.0])" in quiet.output
    loud = runner.invoke(main, ["--verbose", "run", str(study), "--no-progress"])
    assert loud.exit_code == 2
    listed = [line.strip() for line in loud.output.splitlines() if line.startswith("  ")]
    assert sorted(listed) == ["candidates: grid.logisticregression__C (stored [1.0], given [0.5, 2.0])",
                              "metric (stored 'roc_auc', given 'accuracy')"]


def test_a_search_with_an_imputer_and_a_store_fits_twice(tmp_path, client):
    """BBCSearchCV(store=...) of a SimpleImputer pipeline fitted twice: the second fit
    resumes the stored study (nothing fitted again) and selects the same model."""
    X, y = _data()
    X = np.nan_to_num(X)  # the search's own handling of NaN is tested with the drop-ins
    est = make_pipeline(SimpleImputer(), StandardScaler(), LogisticRegression(max_iter=2000))
    searches = [bd.BBCSearchCV(est, {"logisticregression__C": [0.1, 1.0]}, scoring="roc_auc", cv=3,
                               store=tmp_path / "search.zarr", client=client, random_state=0).fit(X, y)
                for _ in range(2)]
    assert searches[0].best_params_ == searches[1].best_params_
    assert searches[1].study_.n_fits_ == 0
