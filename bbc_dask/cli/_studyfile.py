"""Study files (YAML): validation, the resolved study file, data loading and the grid.

The keys, their types and defaults, and the rules between keys are the JSON Schema
``study_file.schema.json`` (:mod:`._schema`; ``bbc-dask schema`` prints it for editors);
this module checks what a schema cannot say. A study file::

    data:                       # one of: path (CSV, Parquet, .npz) | sklearn
      path: data.csv            # relative paths are relative to the study file
      target: label             # the target column (CSV/Parquet)
      groups: patient           # optional group column (folds never split a group)
      # features: [age, "x_*"]  # optional: the feature columns (names, glob patterns)
      # drop: [patient_id]      # optional: columns left out (after features)
      # sklearn: breast_cancer  # a scikit-learn bundled dataset (load_<name>)
    grid:                       # a list of entries, each an estimator or a pipeline
      - estimator: sklearn.linear_model.LogisticRegression
        params: {max_iter: 2000}          # fixed parameters
        grid: {C: [0.01, 0.1, 1.0]}       # tuned parameters
      - pipeline:
          - sklearn.preprocessing.StandardScaler
          - {estimator: sklearn.svm.SVC, params: {probability: false}}
        grid: {svc__C: [0.1, 1.0]}        # names as in make_pipeline
      - pipeline:                         # string columns: encoded in a ColumnTransformer
          - estimator: sklearn.compose.ColumnTransformer
            params:
              transformers:               # {name, transformer, columns} or [name, transformer, columns]
                - name: numbers
                  transformer: {pipeline: [sklearn.impute.SimpleImputer, sklearn.preprocessing.StandardScaler]}
                  columns: {dtype_include: number}     # a selector: make_column_selector's arguments
                - [strings, {estimator: sklearn.preprocessing.OneHotEncoder}, [plan, region]]
              remainder: drop             # or passthrough, or a transformer
          - sklearn.linear_model.LogisticRegression
        grid: {columntransformer__strings__min_frequency: [null, 5]}
    cv: {splits: 5, repeats: 1}  # or {splitter: GroupKFold, params: {n_splits: 5}}, or
                                 # {column: fold} (your own fold ids, a column of data.path)
    metric: roc_auc
    dropping: false             # or true, or {alpha: 0.99, min_predictions: 50}
    # stop: {ci_width: 0.05, max_seconds: 3600, max_fits: 100000}   # optional: end early
    bootstraps: 1000
    confidence: 0.95
    random_state: 0
    error_score: nan            # or raise: stop at the first configuration that fails
    selection: pooled           # or fold_mean: the winner by its mean fold score (2024 code)
    store: runs/study.zarr      # relative to the study file
    cluster: {kind: local, n_workers: 2}   # or {address: "tcp://host:8786"}, or
                                           # {kind: kubernetes, n_workers: 8, image: ...};
                                           # security: {tls_ca_file: ..., tls_client_cert: ...,
                                           # tls_client_key: ...} (paths relative to the file)
    storage_options: {...}      # fsspec options of an s3:// store (endpoint, credentials)

Every entry becomes configurations of one search: the study's estimator is a one-step
pipeline whose ``model`` step is set per configuration (``{"model": [est], "model__C":
[...]}``), as a list of grids in scikit-learn.

A value that is an estimator is ``{estimator, params}`` or ``{pipeline: [steps]}``
(``make_pipeline``), in ``params`` at any depth or in a ``grid`` list, where a grid's value
takes the form of the parameter its key sets and every key is a parameter of the entry's
estimator; a ColumnTransformer's ``transformers`` (names left out of every one:
``make_column_transformer``'s), its ``remainder``, the column selectors and the ``[name,
estimator]`` lists of Pipeline, FeatureUnion and the ensembles have their forms. All are
built by :mod:`bbc_dask._composed`, once :mod:`bbc_dask._described` has checked what each
description names. The data is read as it is (a DataFrame, strings and missing
values kept); a string column is a feature when every grid entry encodes it, else refused
naming it (:func:`._columns.check_encoded`). Everything here is checked when the study
file is read and its data loaded, before any cluster starts: a study file builds nothing
but estimator classes and ``make_column_selector`` (by its own key).
"""
from __future__ import annotations

import os

import numpy as np

from .._composed import build_entry, build_pipeline, build_search, build_step, grid_values
from .._described import file_error, reading
from .._validation import did_you_mean
from ..exceptions import InvalidParameterError, StudyFileError
from . import _schema
from ._columns import check_encoded, select_features

__all__ = ["DEMO", "StudyFileError", "build_search", "load_data", "load_study_file"]


def load_study_file(path):
    """Read and validate a study file; returns the resolved study file (a JSON-able dict with
    absolute paths and defaults filled in)."""
    import yaml

    path = os.path.abspath(os.fspath(path))
    if not os.path.isfile(path):
        raise StudyFileError(f"study file: {path}: no such file")
    try:
        with open(path) as f:
            raw = yaml.safe_load(f)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise StudyFileError(f"study file: {path}: not valid YAML{where}: "
                             f"{getattr(e, 'problem', None) or e}") from None
    except RecursionError:
        raise StudyFileError(f"study file: {path}: nested too deeply") from None
    except UnicodeDecodeError as e:
        raise StudyFileError(f"study file: {path}: not UTF-8 text ({e.reason})") from None
    _check_expansion(raw, path)
    if not isinstance(raw, dict):
        raise StudyFileError(f"study file: {path}: expected a mapping of keys, got {type(raw).__name__}")
    return resolve_study_file(raw, base=os.path.dirname(path))


#: Most values a study file may expand to once YAML aliases are followed: far above any
#: real study file, far below an alias-expansion bomb ("billion laughs").
MAX_NODES = 1_000_000


def _check_expansion(raw, path):
    """Refuse recursive aliases (``C: &a [1.0, *a]``) and alias bombs before anything
    walks the data: sizes are counted once per shared node (memoised), iteratively."""
    size = {}
    on_path = set()
    stack = [(raw, False)]
    while stack:
        node, done = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        key = id(node)
        children = list(node.values()) + list(node.keys()) if isinstance(node, dict) else node
        if done:
            on_path.discard(key)
            total = 1 + sum(size.get(id(c), 1) for c in children)
            if total > MAX_NODES:
                raise StudyFileError(f"study file: {path}: expands to more than {MAX_NODES:,} "
                                     f"values through YAML aliases; refusing it")
            size[key] = total
            continue
        if key in size:
            continue
        if key in on_path:
            raise StudyFileError(f"study file: {path}: a YAML alias refers to itself (a "
                                 f"recursive structure); write the values out")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if isinstance(c, (dict, list)))


def resolve_study_file(raw, base="."):
    """The resolved study file of ``raw`` (the parsed YAML): checked against the schema
    (``study_file.schema.json``), then what a schema cannot say (files, estimator classes,
    the metric's name, the splitter's arguments); paths made absolute against ``base``,
    defaults filled in."""
    if isinstance(raw, dict) and isinstance(raw.get("error_score"), float) \
            and raw["error_score"] != raw["error_score"]:
        raw = dict(raw, error_score="nan")  # YAML's .nan: the same as nan
    _schema.validate(raw)
    from ..cube import StoreLocation

    default = _schema.default
    name = str(raw.get("name", default("name")))
    resolved = {"name": name, "data": _resolve_data(raw["data"], base)}
    with reading(base):  # a module beside the study file is not imported from there
        resolved["grid"] = [_resolve_entry(e, f"grid[{i}]") for i, e in enumerate(raw["grid"])]
    resolved["cv"] = _resolve_cv(raw.get("cv") or {}, resolved["data"])
    resolved["metric"] = _check_metric(raw.get("metric", default("metric")))
    drop = raw.get("dropping", default("dropping"))
    if isinstance(drop, dict):
        from ..stats import Dropping

        try:  # the library's own rule, should the schema's ranges ever lag behind it
            Dropping(**drop)
        except (TypeError, ValueError) as e:
            raise file_error("dropping", str(e)) from None
    resolved["dropping"] = drop
    resolved["stop"] = raw.get("stop")  # None: the run goes to the end
    for key in ("bootstraps", "confidence", "random_state"):
        resolved[key] = raw.get(key, default(key))
    resolved["store"] = StoreLocation.absolute(raw.get("store", f"runs/{name}.zarr"), base)
    cluster = dict(raw.get("cluster") or default("cluster"))
    # the kind a bare address implies (the schema reads it the same way)
    cluster = {"kind": "address" if "address" in cluster else "local", **cluster}
    sec = cluster.get("security")
    if sec is not None:
        cluster["security"] = {
            k: os.path.abspath(os.path.join(base, v)) if k.startswith("tls_") and k != "tls_min_version"
            and isinstance(v, str) else v for k, v in sec.items()}
    resolved["cluster"] = cluster
    options = raw.get("storage_options")
    if options and not StoreLocation.is_url(resolved["store"]):
        raise file_error("storage_options", "applies to URL stores (s3://...) only")
    resolved["storage_options"] = options
    resolved["configs_per_task"] = raw.get("configs_per_task")  # None: the engine's default
    for key in ("error_score", "selection"):
        resolved[key] = raw.get(key, default(key))
    resolved["protocol"] = _resolve_protocol(raw.get("protocol", default("protocol")), resolved)
    return resolved


def _check_metric(metric):
    """``metric``: a name only (registered, or any scorer name of scikit-learn); a study
    file never names a function to import and call."""
    from ..metrics import get_metric, is_clustering_scorer, metric_names

    if is_clustering_scorer(metric):
        raise file_error("metric", f"{metric!r} is a clustering metric: it compares two "
                                   f"partitions, not predictions with their targets")
    try:
        get_metric(metric)
    except InvalidParameterError:
        from sklearn.metrics import get_scorer_names

        hint = did_you_mean(metric, [*metric_names(), *get_scorer_names()])
        raise file_error("metric", f"unknown metric {metric!r} (one of {', '.join(metric_names())}, "
                                   f"or another scorer name of sklearn.metrics.get_scorer_names())"
                                   f"{f'. {hint}' if hint else ''}") from None
    return metric


def _resolve_protocol(p, resolved):
    """``protocol``: ``cvt`` (the default: one study, BBC-CV), or ``nested`` — nested CV
    with ``n_outer`` outer folds (default ``cv.splits``) and ``n_inner`` inner folds
    (default one fewer, the 2018 paper's 10 and 9), ``cv.repeats`` outer repeats; given
    as ``nested`` or ``{kind: nested, n_outer: 5, n_inner: 4}``. The schema checked its
    keys and its rules with ``cv`` and ``dropping``."""
    p = {"kind": p} if isinstance(p, str) else p
    if p["kind"] == "cvt":
        return {"kind": "cvt"}
    n_outer = p.get("n_outer", resolved["cv"]["splits"])
    return {"kind": "nested", "n_outer": n_outer, "n_inner": p.get("n_inner", max(2, n_outer - 1))}


def check_cluster(cluster):
    """Validate a ``cluster:`` section (after any command-line overrides) against the
    schema's; returns it. What a study file may set is data only: Dask's options that name
    code to run (``preload``, ``scheduler_kwargs``, ``worker_class``, plugins) are not
    among them, so a study file cannot make a cluster import or run a file."""
    _schema.validate(cluster, at=("cluster",))
    return cluster


def _resolve_data(data, base):
    """``data``: a bundled dataset, or a file that exists (its columns are checked when
    :func:`load_data` reads it)."""
    if "sklearn" in data:
        return {"sklearn": data["sklearn"]}
    p = os.path.abspath(os.path.join(base, data["path"]))
    if not os.path.isfile(p):
        raise file_error("data.path", f"{p}: no such file")
    out = {"path": p}
    if not p.lower().endswith(".npz"):
        out["target"] = data["target"]
    if "groups" in data:
        out["groups"] = data["groups"]
    # a single name or pattern is a list of one
    return out | {k: [data[k]] if isinstance(data[k], str) else list(data[k])
                  for k in ("features", "drop") if k in data}


def _resolve_entry(e, where):
    """A grid entry with its estimator built (the classes checked, the parameters
    accepted, every nested estimator and ColumnTransformer form built) and its grid's
    keys and values checked on it (:func:`bbc_dask._composed.grid_values`)."""
    grid = e.get("grid") or {}
    if "estimator" in e:
        step = {"estimator": e["estimator"], "params": e.get("params") or {}}
        est = build_step(step, where)
        out = {"estimator": step["estimator"], "params": step["params"], "grid": grid}
    else:
        norm = [{"estimator": st, "params": {}} if isinstance(st, str)
                else {"estimator": st["estimator"], "params": st.get("params") or {}}
                for st in e["pipeline"]]
        est = build_pipeline(norm, f"{where}.pipeline")
        out = {"pipeline": norm, "grid": grid}
    grid_values(grid, where, est)  # its keys are the estimator's, its values built and checked
    return out


def _resolve_cv(cv, data):
    """``cv``: K-fold (``splits``, ``repeats``), a named splitter with its ``params``, or
    the user's own folds in a data ``column`` (fold ids, as ``PredefinedSplit``). The
    splitters a study file may name are the schema's list: a study file calls nothing
    that is not on a list."""
    out = {"splits": cv.get("splits", _schema.default("cv", "splits")),
           "repeats": cv.get("repeats", _schema.default("cv", "repeats")),
           "groups": cv.get("groups", data.get("groups"))}
    if "splitter" in cv:
        params = cv.get("params") or {}
        try:
            _splitter(cv["splitter"], params)
        except (TypeError, ValueError) as e:
            raise file_error("cv.params", str(e)) from None
        out["splitter"] = {"name": cv["splitter"], "params": params}
    if "column" in cv:
        out["column"] = cv["column"]
    return out


def _splitter(name, params):
    import sklearn.model_selection as model_selection

    return getattr(model_selection, name)(**params)


def build_cv(resolved, folds=None):
    """The study's ``cv`` argument: None for K-fold, else the named splitter or the
    ``PredefinedSplit`` of a fold column (``folds``, from :func:`load_data`)."""
    cv = resolved["cv"]
    if "splitter" in cv:
        return _splitter(cv["splitter"]["name"], cv["splitter"]["params"])
    if "column" in cv:
        from sklearn.model_selection import PredefinedSplit

        return PredefinedSplit(folds)
    return None


def load_data(resolved):
    """``(X, y, groups)`` of the resolved study file's ``data``, and the fold ids when ``cv.column`` names
    a column of them; errors name the key. A CSV/Parquet file's X is its DataFrame of
    feature columns as read (strings and missing values kept); its string columns, and the
    columns a ColumnTransformer selects, are checked against each grid entry's estimator
    (:func:`._columns.check_encoded`) before anything runs."""
    loaded = _read_data(resolved)
    d = resolved["data"]
    entries = []
    for i, e in enumerate(resolved["grid"]):
        est = build_entry(e, f"grid[{i}]")
        entries.append((f"grid[{i}]", est, grid_values(e.get("grid") or {}, f"grid[{i}]", est)))
    check_encoded(loaded[0], entries, d.get("path"))
    return loaded


def _read_data(resolved):
    d = resolved["data"]
    gcol = resolved["cv"].get("groups")
    if "sklearn" in d:
        from sklearn import datasets

        X, y = getattr(datasets, f"load_{d['sklearn']}")(return_X_y=True)
        if gcol is not None:
            raise file_error("cv.groups", "a bundled dataset has no group column")
        return X, y, None
    p = d["path"]
    if not os.path.isfile(p):
        raise file_error("data.path", f"{p}: no such file")
    if p.lower().endswith(".npz"):
        with np.load(p, allow_pickle=False) as z:
            if "X" not in z or "y" not in z:
                raise file_error("data.path", f"{p}: an .npz study file needs arrays 'X' and 'y' "
                           f"(and optionally 'groups'); found {sorted(z.files)}")
            return z["X"], z["y"], (z["groups"] if "groups" in z.files else None)
    import pandas as pd

    try:
        df = pd.read_csv(p) if p.lower().endswith(".csv") else pd.read_parquet(p)
    except Exception as e:  # parser errors of any kind: say which file
        raise file_error("data.path", f"{p}: cannot be read: {e}") from None
    df.columns = [str(c) for c in df.columns]
    t = d["target"]
    if t not in df.columns:
        raise file_error("data.target", f"no column {t!r} in {p} (columns: {', '.join(df.columns[:20])})")
    groups = None
    reserved = {t: "the target (data.target)"}
    if gcol is not None:
        if gcol not in df.columns:
            raise file_error("cv.groups", f"no column {gcol!r} in {p}")
        groups = df[gcol].to_numpy()
        reserved.setdefault(gcol, "the groups (cv.groups)")
    fcol = resolved["cv"].get("column")
    if fcol is not None:  # the user's own folds: not a feature
        if fcol not in df.columns:
            raise file_error("cv.column", f"no column {fcol!r} in {p}")
        reserved.setdefault(fcol, "the folds (cv.column)")
    X = df[select_features(df, d, reserved, p)]
    if fcol is not None:
        return X, df[t].to_numpy(), groups, df[fcol].to_numpy()
    return X, df[t].to_numpy(), groups


#: The study of ``bbc-dask demo``.
DEMO = {
    "name": "demo",
    "data": {"sklearn": "breast_cancer"},
    "grid": [
        {"pipeline": [{"estimator": "sklearn.preprocessing.StandardScaler", "params": {}},
                      {"estimator": "sklearn.linear_model.LogisticRegression", "params": {"max_iter": 2000}}],
         "grid": {"logisticregression__C": [0.001, 0.01, 0.1, 1.0, 10.0, 100.0]}},
        {"pipeline": [{"estimator": "sklearn.preprocessing.StandardScaler", "params": {}},
                      {"estimator": "sklearn.svm.SVC", "params": {}}],
         "grid": {"svc__C": [0.1, 1.0, 10.0], "svc__gamma": ["scale", 0.001, 0.01]}},
        {"estimator": "sklearn.ensemble.RandomForestClassifier", "params": {"n_estimators": 50},
         "grid": {"max_depth": [2, 4, None], "max_features": ["sqrt", 0.5]}},
    ],
    "cv": {"splits": 5, "repeats": 2}, "metric": "roc_auc", "dropping": False,
    "bootstraps": 1000, "confidence": 0.95, "random_state": 0, "configs_per_task": 3,
    "cluster": {"kind": "local", "n_workers": 2},
}
