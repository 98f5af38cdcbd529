"""Study files with composed estimators: a ColumnTransformer's transformers and columns,
nested pipelines, named estimators; string columns accepted when every grid entry encodes
them. In-process: each refusal is one line naming the key, before any cluster starts; the
categorical example study file runs from the command line on the suite's shared cluster."""
import math
import os
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer, make_column_selector, make_column_transformer
from sklearn.ensemble import HistGradientBoostingClassifier, StackingClassifier, VotingClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import FeatureUnion, make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler
from sklearn.svm import SVC

from bbc_dask._composed import build_entry, build_step
from bbc_dask.cli._studyfile import load_data, resolve_study_file
from bbc_dask.exceptions import StudyFileError

CT = "sklearn.compose.ColumnTransformer"
LR = "sklearn.linear_model.LogisticRegression"
OHE = {"estimator": "sklearn.preprocessing.OneHotEncoder", "params": {"handle_unknown": "ignore"}}
NUMBERS = {"pipeline": ["sklearn.impute.SimpleImputer", "sklearn.preprocessing.StandardScaler"]}


def _canon(obj):
    """What an estimator is, comparable with ``==``: its class and parameters, all the way
    down; a column selector by its arguments (its repr is its address), NaN as a word."""
    if hasattr(obj, "get_params") and not isinstance(obj, type):
        return type(obj), {k: _canon(v) for k, v in obj.get_params(deep=False).items()}
    if isinstance(obj, make_column_selector):
        return make_column_selector, vars(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj), [_canon(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _canon(v) for k, v in obj.items()}
    if isinstance(obj, float) and math.isnan(obj):
        return "nan"
    return obj


def _entry(transformers, final=LR, grid=None, **params):
    step = {"estimator": CT, "params": {"transformers": transformers, **params}}
    return {"pipeline": [step, final], **({"grid": grid} if grid else {})}


def _resolved_estimator(entry, tmp_path=None):
    resolved = resolve_study_file({"data": {"sklearn": "iris"}, "grid": [entry]})
    return build_entry(resolved["grid"][0], "grid[0]")


def test_a_column_transformer_study_file_is_the_estimator_python_writes():
    got = _resolved_estimator(_entry(
        [{"name": "numbers", "transformer": NUMBERS, "columns": {"dtype_include": "number"}},
         ["strings", OHE, ["city", "plan"]],
         {"name": "ordinal", "transformer": "sklearn.preprocessing.OrdinalEncoder",
          "columns": {"dtype_exclude": ["number", "bool"], "pattern": "^x_"}}],
        remainder={"estimator": "sklearn.preprocessing.StandardScaler"}, sparse_threshold=0.0))
    want = make_pipeline(
        ColumnTransformer([("numbers", make_pipeline(SimpleImputer(), StandardScaler()),
                            make_column_selector(dtype_include="number")),
                           ("strings", OneHotEncoder(handle_unknown="ignore"), ["city", "plan"]),
                           ("ordinal", OrdinalEncoder(),
                            make_column_selector(pattern="^x_", dtype_exclude=["number", "bool"]))],
                          remainder=StandardScaler(), sparse_threshold=0.0),
        LogisticRegression())
    assert _canon(got) == _canon(want)
    assert _canon(got.get_params(deep=True)) == _canon(want.get_params(deep=True))
    # without a selector (whose repr is its address) the reprs are the same too
    got = _resolved_estimator(_entry([["strings", OHE, ["city"]], ["ids", "drop", [0]]],
                                     remainder="passthrough"))
    want = make_pipeline(ColumnTransformer([("strings", OneHotEncoder(handle_unknown="ignore"), ["city"]),
                                            ("ids", "drop", [0])], remainder="passthrough"),
                         LogisticRegression())
    assert repr(got) == repr(want) and _canon(got) == _canon(want)


def test_transformers_without_names_are_named_as_make_column_transformer_names_them():
    got = _resolved_estimator(_entry([{"transformer": OHE, "columns": ["a"]},
                                      {"transformer": NUMBERS, "columns": ["b"]},
                                      {"transformer": "sklearn.preprocessing.OneHotEncoder", "columns": 2}]))
    want = make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["a"]),
                                   (make_pipeline(SimpleImputer(), StandardScaler()), ["b"]),
                                   (OneHotEncoder(), 2))
    assert [t[0] for t in got[0].transformers] == ["onehotencoder-1", "pipeline", "onehotencoder-2"]
    assert repr(got[0]) == repr(want) and _canon(got[0]) == _canon(want)


def test_named_estimators_and_nested_pipelines_anywhere_a_parameter_takes_an_estimator():
    stack = build_step({"estimator": "sklearn.ensemble.StackingClassifier", "params": {
        "estimators": [["lr", {"pipeline": ["sklearn.preprocessing.StandardScaler", LR]}],
                       ["svc", "sklearn.svm.SVC"]],
        "final_estimator": {"estimator": LR, "params": {"C": 0.5}}}}, "grid[0]")
    assert repr(stack) == repr(StackingClassifier([("lr", make_pipeline(StandardScaler(), LogisticRegression())),
                                                   ("svc", SVC())], final_estimator=LogisticRegression(C=0.5)))
    vote = build_step({"estimator": "sklearn.ensemble.VotingClassifier",
                       "params": {"estimators": [["lr", LR], ["off", "drop"]]}}, "grid[0]")
    assert repr(vote) == repr(VotingClassifier([("lr", LogisticRegression()), ("off", "drop")]))
    union = build_step({"estimator": "sklearn.pipeline.FeatureUnion", "params": {
        "transformer_list": [["scaled", "sklearn.preprocessing.StandardScaler"], ["raw", "passthrough"]]}}, "grid[0]")
    assert repr(union) == repr(FeatureUnion([("scaled", StandardScaler()), ("raw", "passthrough")]))
    # a grid's value may be a pipeline too, and a ColumnTransformer's transformer is tuned by its name
    resolved = resolve_study_file({"data": {"sklearn": "iris"}, "grid": [_entry(
        [["strings", OHE, ["a"]]], grid={"columntransformer__strings": [
            {"estimator": "sklearn.preprocessing.OrdinalEncoder"}, {"pipeline": [OHE]}]})]})
    assert resolved["grid"][0]["grid"]["columntransformer__strings"][1] == {"pipeline": [OHE]}


def _refused(raw_entry, pattern):
    with pytest.raises(StudyFileError, match=pattern) as e:
        resolve_study_file({"data": {"sklearn": "iris"}, "grid": [raw_entry]})
    assert "\n" not in str(e.value)


AT = r"^study file: grid\[0\]\.pipeline\[0\]\.params\."


@pytest.mark.parametrize("entry, pattern", [
    (_entry([["num", {"estimater": "sklearn.preprocessing.StandardScaler"}, [0]]]),
     AT + r"transformers\[0\]\[1\]: give exactly one of 'estimator' \(with its 'params'\) or 'pipeline'$"),
    (_entry([["num", "sklearn.preprocessing.StandardScaler"]]),
     AT + r"transformers\[0\]: expected \[name, transformer, columns\], got"),
    (_entry([{"name": "num", "transformer": "scaler", "columns": [0]}]),
     AT + r"transformers\[0\]\.transformer: expected drop, passthrough or an import path"),
    (_entry([{"name": "num", "transformer": "drop"}]),
     AT + r"transformers\[0\]\.columns: missing \(expected a column name, a list of names"),
    (_entry([{"name": "num", "transformer": "drop", "columns": [0], "cols": 1}]),
     AT + r"transformers\[0\]\.cols: unknown key \(allowed: name, transformer, columns\)\. Did you mean 'columns'\?$"),
    (_entry([{"name": "n__m", "transformer": "drop", "columns": [0]}]),
     AT + r"transformers\[0\]\.name: expected a name without '__', got 'n__m'$"),
    (_entry([{"name": "num", "transformer": "drop", "columns": {"dtype_includ": "object"}}]),
     AT + r"transformers\[0\]\.columns\.dtype_includ: unknown key of a column selector "
          r"\(allowed: dtype_include, dtype_exclude, pattern\)\. Did you mean 'dtype_include'\?$"),
    (_entry([{"name": "num", "transformer": "drop", "columns": {}}]),
     AT + r"transformers\[0\]\.columns: expected a selector with dtype_include"),
    (_entry([{"name": "num", "transformer": "drop", "columns": [0, "a"]}]),
     AT + r"transformers\[0\]\.columns: expected a column name, a list of names, a position"),
    (_entry([["num", "drop", [0]]], remainder="passthru"),
     AT + r"remainder: expected drop, passthrough or an import path .*, got 'passthru'$"),
    (_entry([]), AT + r"transformers: expected a non-empty list of transformers"),
    (_entry([["num", {"pipeline": ["sklearn.impute.SimpleImputer", 3]}, [0]]]),
     AT + r"transformers\[0\]\[1\]\.pipeline\[1\]: expected an import path, \{estimator, params\} or"),
    # what the schema cannot know: the code's own checks
    (_entry([["num", LR, [0]]]),
     AT + r"transformers\[0\]\[1\]: LogisticRegression is not a transformer \(it has no transform\)$"),
    (_entry([["num", "drop", {"dtype_include": "nonsense"}]]),
     AT + r"transformers\[0\]\[2\]\.dtype_include: not a dtype pandas selects by: "),
    (_entry([["num", "drop", {"pattern": "x_("}]]),
     AT + r"transformers\[0\]\[2\]\.pattern: not a regular expression: "),
    (_entry([["num", "drop", [0]], ["num", "passthrough", [1]]]),
     AT + r"transformers\[1\]: the name 'num' is given twice$"),
    (_entry([["remainder", "drop", [0]]]),
     AT + r"transformers\[0\]: the name 'remainder' is a parameter of ColumnTransformer: choose another$"),
    (_entry([{"name": "num", "transformer": "drop", "columns": [0]}, {"transformer": "drop", "columns": [1]}]),
     AT + r"transformers\[1\]\.name: missing: name every transformer, or none"),
    ({"pipeline": [LR, "sklearn.svm.SVC"]},
     r"^study file: grid\[0\]\.pipeline\[0\]: LogisticRegression is not a transformer"),
    ({"estimator": "sklearn.ensemble.BaggingClassifier", "params": {"estimator": {"estimater": "x"}}},
     r"^study file: grid\[0\]\.params\.estimator: The 'estimator' parameter of BaggingClassifier must be "
     r"an object implementing 'fit' and 'predict' or None\. Got \{'estimater': 'x'\} instead\.$"),
    ({"estimator": "sklearn.ensemble.StackingClassifier", "params": {"estimators": [["a", "svc"]]}},
     r"^study file: grid\[0\]\.params\.estimators\[0\]\[1\]: expected drop, passthrough or an import path"),
    ({"estimator": "sklearn.ensemble.StackingClassifier", "params": {"estimators": [["a", LR], ["a", LR]]}},
     r"^study file: grid\[0\]\.params\.estimators\[1\]: the name 'a' is given twice$"),
    ({"estimator": "sklearn.ensemble.BaggingClassifier",
      "grid": {"estimator": [{"pipeline": ["sklearn.svm.SVC"]}, {"estimator": "sklearn.svm.SVC", "pipeline": []}]}},
     r"^study file: grid\[0\]\.grid\.estimator\[1\]: give exactly one of 'estimator'"),
])
def test_a_composed_estimator_that_is_not_one_is_refused_when_the_file_is_read(entry, pattern):
    _refused(entry, pattern)


def test_the_code_refuses_what_the_schema_does_not_see():
    """A class the schema does not name by its public path (a private path, a subclass),
    and a store's study file rebuilt without the schema, get the same checks."""
    private = "sklearn.compose._column_transformer.ColumnTransformer"
    for params, pattern in [
        ({"transformers": [["num", {"estimater": "x"}, [0]]]},
         r"^study file: x\.params\.transformers\[0\]\[1\]: expected drop, passthrough, an import path"),
        ({"transformers": [["num", "drop", {"dtype_includ": "object"}]]},
         r"^study file: x\.params\.transformers\[0\]\[2\]\.dtype_includ: unknown key of a column selector"),
        ({"transformers": [["num", "drop", [0]]], "remainder": "passthru"},
         r"^study file: x\.params\.remainder: expected drop, passthrough, an import path"),
        ({"transformers": [["n__m", "drop", [0]]]}, r"^study file: x\.params\.transformers\[0\]: the name 'n__m' holds '__'"),
        ({"transformers": [["num", "drop", 2.5]]}, r"^study file: x\.params\.transformers\[0\]\[2\]: expected a column name"),
    ]:
        with pytest.raises(StudyFileError, match=pattern):
            build_step({"estimator": private, "params": params}, "x")
    # a column selector is built by its key, never from an import path
    with pytest.raises(StudyFileError, match=r"is not a scikit-learn estimator class"):
        build_step({"estimator": "sklearn.compose.make_column_selector", "params": {}}, "x")


# ------------------------------------------------------------------------- the grid

def _grid_of(entry):
    """The entry's grid values as the command line builds them (``model__`` taken off)."""
    from bbc_dask._composed import build_search

    resolved = resolve_study_file({"data": {"sklearn": "iris"}, "grid": [entry]})
    return {k[len("model__"):]: v for k, v in build_search(resolved)[1][0].items() if k != "model"}


def test_a_grid_value_is_built_as_the_parameter_it_sets_takes_it():
    """A grid's value is an estimator, a transformer or a selector exactly where a fixed
    parameter's would be: the owner of the key (``get_params(deep=True)``) and its form."""
    got = _grid_of(_entry([["num", NUMBERS, ["a"]], ["cat", OHE, ["b"]]], grid={
        "columntransformer__remainder": ["passthrough", "sklearn.preprocessing.StandardScaler"],
        "columntransformer__num": ["sklearn.preprocessing.StandardScaler", "drop",
                                   {"pipeline": ["sklearn.impute.SimpleImputer"]}],
        "columntransformer__transformers": [
            [["cat", "sklearn.preprocessing.OneHotEncoder", {"dtype_include": "object"}]],
            [{"name": "cat", "transformer": OHE, "columns": ["b"]}, ["num", "passthrough", [0, 1]]],
            [{"transformer": "sklearn.preprocessing.OrdinalEncoder", "columns": "b"}]],
        "logisticregression__class_weight": [None, {"0": 2}]}))
    assert _canon(got["columntransformer__remainder"]) == _canon(["passthrough", StandardScaler()])
    assert _canon(got["columntransformer__num"]) == _canon([StandardScaler(), "drop", make_pipeline(SimpleImputer())])
    assert _canon(got["columntransformer__transformers"]) == _canon([
        [("cat", OneHotEncoder(), make_column_selector(dtype_include="object"))],
        [("cat", OneHotEncoder(handle_unknown="ignore"), ["b"]), ("num", "passthrough", [0, 1])],
        [("ordinalencoder", OrdinalEncoder(), "b")]])
    assert got["logisticregression__class_weight"] == [None, {"0": 2}]  # a mapping that is no estimator
    # a pipeline's step by its name: a transformer but for the last, which may be any estimator
    got = _grid_of({"pipeline": ["sklearn.preprocessing.StandardScaler", LR], "grid": {
        "standardscaler": ["passthrough", "sklearn.preprocessing.MinMaxScaler"],
        "logisticregression": ["sklearn.svm.SVC", {"estimator": LR, "params": {"C": 0.5}}]}})
    assert [type(v).__name__ for v in got["standardscaler"][1:]] == ["MinMaxScaler"]
    assert repr(got["logisticregression"]) == repr([SVC(), LogisticRegression(C=0.5)])
    # a key below another key of the grid: a parameter of each of that key's values
    got = _grid_of({"estimator": "sklearn.ensemble.BaggingClassifier", "grid": {
        "estimator": [{"estimator": "sklearn.svm.SVC"}, {"estimator": LR}], "estimator__C": [0.5, 1.0]}})
    assert got["estimator__C"] == [0.5, 1.0]


def test_a_selector_tuned_in_a_grid_is_followed_through_the_data(tmp_path):
    """The reviewer's g.yaml: a selector mapping in a tuned ``transformers`` crashed the
    string-column check ("'<=' not supported between 'int' and 'dict'")."""
    _csv(tmp_path)
    tuned = _entry([["strings", OHE, ["city", "plan"]]], grid={"columntransformer__transformers": [
        [["strings", OHE, {"dtype_exclude": "number"}], ["numbers", NUMBERS, {"dtype_include": "number"}]],
        [{"name": "strings", "transformer": OHE, "columns": ["city", "plan"]}]]})
    X, _, _ = _load(tmp_path, tuned)
    assert list(X.columns) == ["age", "income", "city", "plan"]
    with pytest.raises(StudyFileError, match=r"^study file: grid\[0\]: ColumnTransformer transformer 'strings' "
                                             r"selects 'town', which is not a feature column"):
        _load(tmp_path, _entry([["strings", OHE, ["city", "plan"]]], grid={"columntransformer__transformers": [
            [{"name": "strings", "transformer": OHE, "columns": ["town"]}]]}))


G = r"^study file: grid\[0\]\.grid\."


@pytest.mark.parametrize("grid, pattern", [
    ({"columntransformer__remainder": ["passthrough", "passthru"]},
     G + r"columntransformer__remainder\[1\]: expected drop, passthrough, an import path, \{estimator, params\} "
         r"or \{pipeline: \[\.\.\.\]\}, got 'passthru'$"),
    ({"columntransformer__remainder": [LR]},
     G + r"columntransformer__remainder\[0\]: LogisticRegression is not a transformer \(it has no transform\)$"),
    ({"columntransformer__num": ["sklearn.preprocessing.StandardScaler", LR]},
     G + r"columntransformer__num\[1\]: LogisticRegression is not a transformer"),
    ({"columntransformer__transformers": [[["num", "drop", {"dtype_includ": "object"}]]]},
     G + r"columntransformer__transformers\[0\]\[0\]\[2\]\.dtype_includ: unknown key of a column selector"),
    ({"columntransformer__transformers": [[["num", "drop", [0]], ["num", "passthrough", [1]]]]},
     G + r"columntransformer__transformers\[0\]\[1\]: the name 'num' is given twice$"),
    ({"columntransformer__transformers": [[{"name": "num", "transformer": "drop", "cols": [0]}]]},
     G + r"columntransformer__transformers\[0\]\[0\]\.cols: unknown key \(allowed: name, transformer, columns\)$"),
    ({"standardscaler": [LR]}, G + r"standardscaler\[0\]: LogisticRegression is not a transformer"),
    ({"logisticregression__C": [1.0], "logisticregresion__C": [0.1, 1.0]},
     G + r"logisticregresion__C: not a parameter of this entry's estimator\. Did you mean "
         r"'logisticregression__C'\?$"),
    ({"columntransformer__nmu": ["drop"]},
     G + r"columntransformer__nmu: not a parameter of this entry's estimator\. Did you mean "
         r"'columntransformer__num'\?$"),
    ({"zzzzzzzz": [1]}, G + r"zzzzzzzz: not a parameter of this entry's estimator$"),
    ({"columntransformer__num": ["passthrough", "sklearn.preprocessing.StandardScaler"],
      "columntransformer__num__with_mean": [True]},
     G + r"columntransformer__num__with_mean: not a parameter of grid\[0\]\.grid\.columntransformer__num\[0\] "
         r"\('passthrough'\)$"),
])
def test_a_grid_is_checked_as_its_keys_owners_take_it(grid, pattern):
    """Every value refused where its fixed form would be, and a key that is no parameter
    in one line with the closest name (the whole pipeline's repr, cut inside, was the
    first line of scikit-learn's error); all when the file is read."""
    entry = {"pipeline": [{"estimator": CT, "params": {"transformers": [["num", "passthrough", [0]]]}},
                          "sklearn.preprocessing.StandardScaler", LR], "grid": grid}
    _refused(entry, pattern)


def test_a_grid_value_is_checked_against_its_owners_constraints():
    """As a fixed parameter written as a mapping is (BaggingClassifier's estimator must
    predict); on one line though scikit-learn's message holds the value's repr."""
    _refused({"estimator": "sklearn.ensemble.BaggingClassifier", "grid": {"estimator": [
        {"estimator": LR}, {"pipeline": ["sklearn.impute.SimpleImputer", "sklearn.preprocessing.StandardScaler"]}]}},
        r"^study file: grid\[0\]\.grid\.estimator\[1\]: The 'estimator' parameter of BaggingClassifier must be "
        r"an object implementing 'fit' and 'predict' or None\. Got Pipeline\(steps=\[\('simpleimputer', "
        r"SimpleImputer\(\)\), \('standardscaler', StandardScaler\(\)\)\]\) instead\.$")
    _refused({"estimator": "sklearn.ensemble.BaggingClassifier", "grid": {
        "estimator": [{"estimator": "sklearn.svm.SVC"}, {"estimator": "sklearn.tree.DecisionTreeClassifier"}],
        "estimator__C": [1.0]}},
        r"^study file: grid\[0\]\.grid\.estimator__C: not a parameter of grid\[0\]\.grid\.estimator\[1\] "
        r"\(DecisionTreeClassifier\(\)\)$")


# --------------------------------------------------------------------- string columns

def _csv(tmp_path):
    """A CSV of 12 rows: numbers with missing values, two string columns (one with a
    missing value), string labels."""
    df = pd.DataFrame({"age": [31, 45, np.nan, 52, 28, 60, 39, 41, np.nan, 35, 47, 58],
                       "income": np.linspace(2e4, 8e4, 12),
                       "city": ["oslo", "rome", "oslo", np.nan, "lima", "rome"] * 2,
                       "plan": ["basic", "premium"] * 6,
                       "label": ["no", "yes", "yes", "no"] * 3})
    df.to_csv(tmp_path / "d.csv", index=False)


def _load(tmp_path, *entries, **data):
    resolved = resolve_study_file({"data": {"path": "d.csv", "target": "label"} | data,
                                   "grid": list(entries)}, base=str(tmp_path))
    return load_data(resolved)


ENCODED = _entry([["numbers", NUMBERS, {"dtype_include": "number"}],
                  ["strings", OHE, {"dtype_exclude": "number"}]])


def test_string_columns_a_column_transformer_encodes_are_features_kept_as_read(tmp_path):
    _csv(tmp_path)
    X, y, _ = _load(tmp_path, ENCODED)
    assert list(X.columns) == ["age", "income", "city", "plan"] and list(y[:2]) == ["no", "yes"]
    assert X["city"].isna().sum() == 2 and X["age"].isna().sum() == 2  # missing values kept
    assert X["city"].dropna().map(type).eq(str).all()  # strings, not codes
    # encoded by name, dropped, or imputed as strings then encoded: all accepted
    _load(tmp_path, _entry([["strings", OHE, ["city", "plan"]]], remainder=NUMBERS))
    _load(tmp_path, _entry([["strings", OHE, ["city"]], ["gone", "drop", ["plan"]]], remainder="passthrough"))
    _load(tmp_path, _entry([["strings", {"pipeline": [
        {"estimator": "sklearn.impute.SimpleImputer", "params": {"strategy": "most_frequent"}}, OHE]},
        ["city", "plan"]]]))
    # the same as Python fits it, strings and missing values as read
    est = build_entry(resolve_study_file({"data": {"sklearn": "iris"}, "grid": [ENCODED]})["grid"][0])
    assert est.fit(X, y).predict(X).dtype == object


@pytest.mark.parametrize("entry, pattern", [
    ({"estimator": LR},
     r"^study file: grid\[0\]: columns 'city', 'plan' hold strings that no step of this entry encodes "
     r"\(they reach LogisticRegression, which takes numbers\): encode them \(OneHotEncoder or "
     r"OrdinalEncoder in a ColumnTransformer\), or list them in data\.drop$"),
    (_entry([["strings", OHE, ["city"]]], remainder="passthrough"),
     r"^study file: grid\[0\]: column 'plan' holds strings .* \(it reaches LogisticRegression, "),
    (_entry([["strings", {"estimator": "sklearn.impute.SimpleImputer"}, ["city", "plan"]]]),
     r"^study file: grid\[0\]: columns 'city', 'plan' hold strings .* \(they reach SimpleImputer, "),
    (_entry([["strings", OHE, ["city"]]], remainder="passthrough",
            final="sklearn.ensemble.HistGradientBoostingClassifier"),
     r"column 'plan' holds strings .* \(it reaches HistGradientBoostingClassifier, "),
    # a grid whose every configuration passes the column on
    (_entry([["strings", OHE, ["city"]], ["plan", "passthrough", ["plan"]]],
            grid={"columntransformer__plan": ["passthrough", {"estimator": "sklearn.preprocessing.StandardScaler"}]}),
     r"column 'plan' holds strings .* \(it reaches "),
])
def test_a_string_column_that_nothing_encodes_is_refused_at_load(tmp_path, entry, pattern):
    _csv(tmp_path)
    with pytest.raises(StudyFileError, match=pattern) as e:
        _load(tmp_path, entry)
    assert "\n" not in str(e.value)


def test_every_grid_entry_must_encode_them_and_one_configuration_suffices(tmp_path):
    _csv(tmp_path)
    with pytest.raises(StudyFileError, match=r"^study file: grid\[1\]: columns 'city', 'plan' hold strings"):
        _load(tmp_path, ENCODED, {"estimator": LR})
    # a grid that encodes it in some configurations: those that do not fail as fits do
    tuned = _entry([["strings", OHE, ["city"]], ["plan", "passthrough", ["plan"]]],
                   grid={"columntransformer__plan": ["passthrough", OHE]})
    _load(tmp_path, tuned, _entry([["strings", OHE, ["city", "plan"]]]))
    assert list(_load(tmp_path, {"estimator": LR}, drop=["city", "plan"])[0].columns) == ["age", "income"]


def test_the_columns_a_column_transformer_names_are_the_datas(tmp_path):
    _csv(tmp_path)
    with pytest.raises(StudyFileError, match=r"^study file: grid\[0\]: ColumnTransformer transformer 'strings' "
                                             r"selects 'town', which is not a feature column of .*d\.csv "
                                             r"\(features: age, income, city, plan\)$"):
        _load(tmp_path, _entry([["strings", OHE, ["town"]]]))
    with pytest.raises(StudyFileError, match=r"selects position 9, but the data has 4 feature columns$"):
        _load(tmp_path, _entry([["strings", OHE, ["city", "plan"]], ["n", "passthrough", [9]]]))
    # a dropped column is no feature
    with pytest.raises(StudyFileError, match=r"selects 'city', which is not a feature column"):
        _load(tmp_path, _entry([["strings", OHE, ["city", "plan"]]]), drop=["city"])
    # data without column names: positions only
    np.savez(tmp_path / "d.npz", X=np.zeros((6, 3)), y=np.array([0, 1] * 3))
    resolve = lambda entry: resolve_study_file({"data": {"path": "d.npz"}, "grid": [entry]},  # noqa: E731
                                               base=str(tmp_path))
    X, _, _ = load_data(resolve(_entry([["scaled", "sklearn.preprocessing.StandardScaler", [0, 2]]])))
    assert X.shape == (6, 3)
    with pytest.raises(StudyFileError, match=r"^study file: grid\[0\]: ColumnTransformer transformer 'scaled' "
                                             r"selects 'age' by name, but .*d\.npz \(an \.npz file\) has no "
                                             r"column names: select by position$"):
        load_data(resolve(_entry([["scaled", "sklearn.preprocessing.StandardScaler", ["age"]]])))
    with pytest.raises(StudyFileError, match=r"a column selector needs named columns \(CSV/Parquet data\), "
                                             r"not a bundled dataset$"):
        load_data(resolve_study_file({"data": {"sklearn": "iris"}, "grid": [
            _entry([["scaled", "sklearn.preprocessing.StandardScaler", {"dtype_include": "number"}]])]}))


def test_a_meta_estimator_is_left_to_its_fits(tmp_path):
    """How a meta-estimator passes X to the estimator it wraps is its own: not followed,
    and not refused (the run's check on a few rows decides)."""
    _csv(tmp_path)
    bag = {"estimator": "sklearn.ensemble.BaggingClassifier",
           "params": {"estimator": {"pipeline": [{"estimator": CT, "params": {
               "transformers": [["strings", OHE, ["city", "plan"]]]}}, LR]}}}
    assert list(_load(tmp_path, bag)[0].columns) == ["age", "income", "city", "plan"]


def test_a_grid_entry_of_many_configurations_is_left_to_the_run(tmp_path, monkeypatch):
    from bbc_dask.cli import _columns

    _csv(tmp_path)
    entry = {"estimator": LR, "grid": {"solver": ["lbfgs", "liblinear"], "penalty": ["l2", None]}}
    with pytest.raises(StudyFileError, match="hold strings"):
        _load(tmp_path, entry)
    monkeypatch.setattr(_columns, "MAX_VARIANTS", 3)  # 4 configurations: too many to follow
    _load(tmp_path, entry)


def test_a_string_column_is_refused_before_any_cluster_starts(tmp_path, monkeypatch):
    """The command line's run: refused by the study file's check, with no cluster made."""
    import distributed
    from click.testing import CliRunner

    from bbc_dask.cli import main

    def no_cluster(*a, **k):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(distributed.LocalCluster, "__init__", no_cluster)
    _csv(tmp_path)
    import yaml

    for entry, said in [({"estimator": LR}, "columns 'city', 'plan' hold strings"),
                        (_entry([["num", {"estimater": "x"}, ["age"]]]), "give exactly one of 'estimator'"),
                        (_entry([["s", OHE, ["city", "plan"]]], grid={"columntransformer__remainder": [
                            "passthrough", LR]}), "remainder[1]: LogisticRegression is not a transformer"),
                        (_entry([["s", OHE, ["city", "plan"]]], grid={"logisticregresion__C": [0.1]}),
                         "Did you mean 'logisticregression__C'?")]:
        (tmp_path / "s.yaml").write_text(yaml.safe_dump(
            {"data": {"path": "d.csv", "target": "label"}, "grid": [entry], "store": "s.zarr"}))
        got = CliRunner().invoke(main, ["run", str(tmp_path / "s.yaml"), "--no-progress"])
        assert got.exit_code == 2 and said in got.output and "a cluster was started" not in got.output, got.output
        assert len(got.output.strip().splitlines()) == 1, got.output
        assert not (tmp_path / "s.zarr").exists()


def test_the_string_feature_names_a_hist_gradient_boosting_entry_needs(tmp_path):
    """HistGradientBoosting takes missing values but not strings: encoded ordinally in a
    ColumnTransformer (the example's second entry), the numbers passed through."""
    _csv(tmp_path)
    entry = _entry([["strings", {"estimator": "sklearn.preprocessing.OrdinalEncoder", "params": {
        "handle_unknown": "use_encoded_value", "unknown_value": -1}}, ["city", "plan"]]],
        final="sklearn.ensemble.HistGradientBoostingClassifier", remainder="passthrough")
    X, y, _ = _load(tmp_path, entry)
    est = build_entry(resolve_study_file({"data": {"sklearn": "iris"}, "grid": [entry]})["grid"][0])
    assert isinstance(est[-1], HistGradientBoostingClassifier)
    assert set(est.fit(X, y).predict(X)) <= {"no", "yes"}


# ------------------------------------------------------------- the example, from the CLI

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "studies")


def _example(tmp_path):
    """examples/studies/csv_categorical.yaml with its store in ``tmp_path`` and no cluster
    of its own (the suite's shared one runs it)."""
    import yaml

    with open(os.path.join(EXAMPLES, "csv_categorical.yaml")) as fh:
        spec = yaml.safe_load(fh)
    spec["data"]["path"] = os.path.join(EXAMPLES, spec["data"]["path"])
    spec["store"] = str(tmp_path / "cat.zarr")
    spec.pop("cluster")
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path, spec


def test_the_categorical_example_study_file_runs_from_the_command_line(tmp_path, client):
    """String columns with missing values encoded in a ColumnTransformer (OneHotEncoder by
    a dtype selector, OrdinalEncoder by names), numbers imputed and scaled or passed to
    HistGradientBoosting with their missing values, string labels: every configuration
    fits, and the refit model predicts on the file's rows as read."""
    from click.testing import CliRunner

    import bbc_dask as bd
    from bbc_dask.cli import main

    path, spec = _example(tmp_path)
    got = CliRunner().invoke(main, ["run", str(path), "--scheduler", client.scheduler.address, "--no-progress"])
    assert got.exit_code == 0, got.output
    assert "40 cells done, 0 failed" in got.stdout and "BBC-F" in got.stdout
    study = bd.open_study(tmp_path / "cat.zarr")
    assert study.cube.sizes["sample"] == 240 and study.cube.sizes["config"] == 8
    assert study.meta["classes"] == ["no", "yes"]
    assert study.metadata["data"]["columns"] == ["age", "tenure_months", "income", "plan", "region", "payment"]
    frame = pd.read_csv(spec["data"]["path"])
    X = frame.drop(columns="churn")
    assert X[["plan", "payment"]].isna().any().all() and X[["age", "income"]].isna().any().all()
    pred = study.final_model.predict(X)
    assert set(pred) <= {"no", "yes"} and len(pred) == 240
    assert 0.6 < study.bbc().estimate < 0.95  # the file's signal: far from chance


def test_the_categorical_example_study_file_resumes(tmp_path, client):
    from click.testing import CliRunner

    import bbc_dask as bd
    from bbc_dask.cli import main

    path, _ = _example(tmp_path)
    args = ["run", str(path), "--scheduler", client.scheduler.address, "--no-progress"]
    first = CliRunner().invoke(main, args + ["--max-fits", "10"])
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    study = bd.open_study(tmp_path / "cat.zarr")
    assert study.status()["done"] == 40
    # the configurations rebuilt as estimators from the stored study file (their selectors'
    # reprs hold addresses, SimpleImputer's missing_values is NaN: still the same)
    assert all(hasattr(p["model"], "fit") for p in study.params)


def test_the_docs_categorical_study_file_resolves_and_loads():
    """docs/usage.md's categorical study file, on the example's data: the whole resolution
    and the string columns' check, as the command line does before any cluster."""
    import yaml

    with open(os.path.join(os.path.dirname(EXAMPLES), "..", "docs", "usage.md"), encoding="utf-8") as f:
        text = f.read()
    block = text.split("<!-- categorical study file: resolved by tests/test_studyfile_composed.py -->\n```\n")[1]
    raw = yaml.safe_load(block.split("```")[0])
    X, y, _ = load_data(resolve_study_file(raw, base=EXAMPLES))
    assert X.shape == (240, 6) and set(y) == {"no", "yes"}


def test_the_schemas_composed_classes_are_the_codes():
    """Every class whose parameters the schema gives a form is one the code builds so, by
    the same parameter, and each of the code's is named in the schema."""
    import importlib

    from bbc_dask._composed import special_params
    from bbc_dask.cli._schema import schema

    named = {}
    for rule in schema()["$defs"]["composed"]["allOf"]:
        est = rule["if"]["properties"]["estimator"]
        for path in est.get("enum", [est.get("const")]):
            named[path] = set(rule["then"]["properties"]["params"]["properties"])
    for path, params in named.items():
        module, _, name = path.rpartition(".")
        assert set(special_params(getattr(importlib.import_module(module), name))) == params, path
    import sklearn.compose
    import sklearn.ensemble
    import sklearn.pipeline

    for module in (sklearn.compose, sklearn.ensemble, sklearn.pipeline):
        for name in module.__all__:
            cls = getattr(module, name)
            if isinstance(cls, type) and special_params(cls):
                assert f"{module.__name__}.{name}" in named, name


@pytest.mark.parametrize("entry, match", [
    (_entry([["x", {"estimator": "numpy.save", "params": {"file": "{marker}", "arr": [1]}}, [0]]]),
     r"transformers\[0\]\[1\]\.estimator: numpy\.save is not a scikit-learn estimator class"),
    (_entry([["x", "subprocess.Popen", [0]]], remainder="drop"),
     r"transformers\[0\]\[1\]\.estimator: subprocess\.Popen is not a scikit-learn estimator class"),
    (_entry([["x", "drop", [0]]], remainder={"pipeline": [{"estimator": "numpy.save", "params": {
        "file": "{marker}", "arr": [1]}}]}),
     r"remainder\.pipeline\[0\]\.estimator: numpy\.save is not"),
    ({"estimator": "sklearn.ensemble.StackingClassifier", "params": {"estimators": [
        ["a", {"estimator": "numpy.save", "params": {"file": "{marker}", "arr": [1]}}]]}},
     r"estimators\[0\]\[1\]\.estimator: numpy\.save is not"),
    ({"estimator": "sklearn.ensemble.BaggingClassifier", "params": {"estimator": {"pipeline": [
        {"estimator": "numpy.save", "params": {"file": "{marker}", "arr": [1]}}]}}},
     r"params\.estimator\.pipeline\[0\]\.estimator: numpy\.save is not"),
])
def test_a_composed_study_file_calls_only_estimator_classes(tmp_path, entry, match):
    """The new forms keep the study file's rule: nothing but an estimator class is called
    (numpy.save would write CALLED.npy), and the column selector is no import path."""
    import json

    import yaml
    from click.testing import CliRunner

    from bbc_dask.cli import main

    marker = tmp_path / "CALLED"
    entry = json.loads(json.dumps(entry).replace("{marker}", str(marker)))
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"data": {"sklearn": "breast_cancer"}, "grid": [entry],
                                                     "store": "s.zarr"}))
    res = CliRunner().invoke(main, ["run", str(tmp_path / "s.yaml"), "--no-progress"])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output
    assert re.search(match, res.output), res.output
    assert not list(tmp_path.glob("CALLED*")) and not (tmp_path / "s.zarr").exists()
