"""A study file chooses its feature columns (data.features, data.drop): in-process, no cluster."""
import re

import numpy as np
import pytest

from bbc_dask.cli._studyfile import load_data, resolve_study_file
from bbc_dask.exceptions import StudyFileError

GRID = [{"estimator": "sklearn.linear_model.LogisticRegression"}]


def _csv(tmp_path, columns):
    """A CSV of 8 rows: ``columns`` maps a name to its values (a label column is added)."""
    import pandas as pd

    df = pd.DataFrame({"label": [0, 1] * 4, **columns})
    df.to_csv(tmp_path / "d.csv", index=False)
    return df


def _load(tmp_path, **data):
    resolved = resolve_study_file({"data": {"path": "d.csv", "target": "label"} | data, "grid": GRID},
                                  base=str(tmp_path))
    return load_data(resolved)


def _one_line_error(fn, pattern):
    with pytest.raises(StudyFileError) as e:
        fn()
    msg = str(e.value)
    assert "\n" not in msg and re.search(pattern, msg), msg
    return msg


X_COLS = {"x_a": np.arange(8.0), "x_b": np.arange(8.0) ** 2, "age": np.arange(8) + 30}


def test_an_id_column_is_refused_before_anything_runs(tmp_path):
    for name in ("patient_id", "ID", "Id", "sample-id", "row id", "index", "Unnamed: 0"):
        _csv(tmp_path, X_COLS | {name: np.arange(8)})
        msg = _one_line_error(lambda: _load(tmp_path), rf"column '{re.escape(name)}' looks like an identifier")
        assert "data.features" in msg and "data.drop" in msg
    _csv(tmp_path, X_COLS | {"patient_id": [f"p{i}" for i in range(8)]})  # a string id too
    _one_line_error(lambda: _load(tmp_path), "'patient_id' looks like an identifier")
    # dropped, or listed by name in data.features: accepted
    assert list(_load(tmp_path, drop=["patient_id"])[0].columns) == ["x_a", "x_b", "age"]
    _csv(tmp_path, X_COLS | {"patient_id": np.arange(8)})
    X = _load(tmp_path, features=["x_a", "patient_id"])[0]
    assert list(X.columns) == ["x_a", "patient_id"]
    # a pattern that happens to match it does not vouch for it
    _one_line_error(lambda: _load(tmp_path, features="*"), "'patient_id' looks like an identifier")


def test_features_names_patterns_and_drop(tmp_path):
    _csv(tmp_path, X_COLS | {"note": np.ones(8)})
    X, y, groups = _load(tmp_path, features=["age", "x_b"])
    assert list(X.columns) == ["age", "x_b"] and list(y) == [0, 1] * 4 and groups is None
    assert list(_load(tmp_path, features="x_*")[0].columns) == ["x_a", "x_b"]
    assert list(_load(tmp_path, features=["age", "x_*"])[0].columns) == ["age", "x_a", "x_b"]
    assert list(_load(tmp_path, drop=["note", "x_?"])[0].columns) == ["age"]
    assert list(_load(tmp_path, features="x_*", drop=["x_b"])[0].columns) == ["x_a"]
    # the target is never a feature, and a listed one is an error
    assert "label" not in _load(tmp_path)[0].columns
    _one_line_error(lambda: _load(tmp_path, features=["label", "age"]),
                    r"data\.features: 'label' is the target")
    _one_line_error(lambda: _load(tmp_path, features="x_*", drop="x_*"), "no feature columns left")


def test_unknown_columns_and_empty_patterns_are_refused(tmp_path):
    _csv(tmp_path, X_COLS)
    _one_line_error(lambda: _load(tmp_path, features=["age", "weight"]), r"data\.features: no column 'weight'")
    _one_line_error(lambda: _load(tmp_path, drop=["weight"]), r"data\.drop: no column 'weight'")
    _one_line_error(lambda: _load(tmp_path, features="z_*"), r"data\.features: pattern 'z_\*' matches no column")
    _one_line_error(lambda: _load(tmp_path, drop=["z_*"]), r"data\.drop: pattern 'z_\*' matches no column")
    _one_line_error(lambda: _load(tmp_path, features=[]), r"data\.features: expected a column name")
    _one_line_error(lambda: _load(tmp_path, drop=[3]), r"data\.drop: expected a column name")


def test_a_string_feature_column_is_refused_at_load(tmp_path):
    _csv(tmp_path, X_COLS | {"colour": ["red", "blue"] * 4})
    msg = _one_line_error(lambda: _load(tmp_path), r"column 'colour' holds strings")
    assert "data.drop" in msg
    assert list(_load(tmp_path, drop=["colour"])[0].columns) == ["x_a", "x_b", "age"]


def test_groups_and_fold_columns_are_never_features(tmp_path):
    _csv(tmp_path, X_COLS | {"patient": np.arange(8) // 2, "fold": np.arange(8) % 2})
    resolved = resolve_study_file({"data": {"path": "d.csv", "target": "label", "groups": "patient"},
                                   "grid": GRID, "cv": {"column": "fold"}}, base=str(tmp_path))
    X, y, groups, folds = load_data(resolved)
    assert list(X.columns) == ["x_a", "x_b", "age"] and list(folds) == [0, 1] * 4
    resolved["data"]["features"] = ["patient"]
    _one_line_error(lambda: load_data(resolved), r"data\.features: 'patient' is the groups")


def test_npz_and_sklearn_data_take_no_column_keys(tmp_path):
    np.savez(tmp_path / "d.npz", X=np.zeros((4, 2)), y=np.array([0, 1, 0, 1]))
    X, y, _ = load_data(resolve_study_file({"data": {"path": "d.npz"}, "grid": GRID}, base=str(tmp_path)))
    assert X.shape == (4, 2)
    for data in ({"path": "d.npz"}, {"sklearn": "iris"}):
        for key in ("features", "drop"):
            _one_line_error(lambda: resolve_study_file({"data": data | {key: ["a"]}, "grid": GRID},
                                                       base=str(tmp_path)),
                            rf"data\.{key}: applies to CSV/Parquet data")
