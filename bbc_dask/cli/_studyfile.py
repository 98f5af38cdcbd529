"""Study files (YAML): validation, the resolved study file, data loading and the grid.

A study file::

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
    cv: {splits: 5, repeats: 1}  # or {splitter: GroupKFold, params: {n_splits: 5}}, or
                                 # {column: fold} (your own fold ids, a column of data.path)
    metric: roc_auc
    dropping: false             # or true, or {alpha: 0.99, min_predictions: 50}
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
"""
from __future__ import annotations

import importlib
import os

import numpy as np

from .._described import build_search, build_step, file_error, grid_values
from ..exceptions import StudyFileError
from ._columns import check_columns_spec, select_features

__all__ = ["DEMO", "StudyFileError", "build_search", "load_data", "load_study_file"]

_TOP = {"data", "grid", "cv", "metric", "dropping", "bootstraps", "confidence", "random_state",
        "store", "cluster", "configs_per_task", "name", "storage_options", "error_score",
        "selection", "protocol"}




def _need(d, key, where, types, what):
    if key not in d:
        raise file_error(f"{where}.{key}" if where else key, f"missing (expected {what})")
    v = d[key]
    if not isinstance(v, types):
        raise file_error(f"{where}.{key}" if where else key, f"expected {what}, got {v!r}")
    return v


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
    unknown = sorted(set(raw) - _TOP)
    if unknown:
        raise file_error(unknown[0], f"unknown key (allowed: {', '.join(sorted(_TOP))})")
    resolved = {"name": str(raw.get("name", "study"))}
    data = _need(raw, "data", "", dict, "a mapping with 'path' and 'target', or 'sklearn'")
    resolved["data"] = _resolve_data(data, base)
    grid = _need(raw, "grid", "", list, "a list of estimator or pipeline entries")
    if not grid:
        raise file_error("grid", "empty list")
    resolved["grid"] = [_resolve_entry(e, f"grid[{i}]") for i, e in enumerate(grid)]
    resolved["cv"] = _resolve_cv(raw.get("cv", {}) or {}, resolved["data"])
    from ..exceptions import InvalidParameterError
    from ..metrics import get_metric, metric_names

    metric = raw.get("metric", "roc_auc")
    # a name only (registered, or any scorer name of scikit-learn): a study file never
    # names a function to import and call
    if not isinstance(metric, str):
        raise file_error("metric", f"a scorer name (a string). Got {metric!r}")
    try:
        get_metric(metric, caller="the study file")
    except InvalidParameterError as exc:
        if "clustering" in str(exc):
            raise file_error("metric", f"{metric!r} is a clustering metric: it compares two "
                                 f"partitions, not predictions with their targets") from None
        raise file_error("metric", f"unknown metric {metric!r} (one of {', '.join(metric_names())}, "
                             f"or another scorer name of sklearn.metrics.get_scorer_names())"
                   ) from None
    resolved["metric"] = metric
    drop = raw.get("dropping", False)
    if isinstance(drop, dict):
        bad = sorted(set(drop) - {"alpha", "n_bootstraps", "min_predictions", "test_last_wave"})
        if bad:
            raise file_error(f"dropping.{bad[0]}", "unknown key (allowed: alpha, n_bootstraps, "
                                             "min_predictions, test_last_wave)")
        from ..stats import Dropping

        try:
            Dropping(**drop)
        except (TypeError, ValueError) as e:
            raise file_error("dropping", str(e)) from None
    elif not isinstance(drop, bool):
        raise file_error("dropping", f"expected true, false or a mapping, got {drop!r}")
    resolved["dropping"] = drop
    resolved["bootstraps"] = _int(raw.get("bootstraps", 1000), "bootstraps", 1)
    conf = raw.get("confidence", 0.95)
    if not isinstance(conf, float) or not 0 < conf < 1:
        raise file_error("confidence", f"expected a number in (0, 1), got {conf!r}")
    resolved["confidence"] = conf
    rs = raw.get("random_state", 0)
    if rs is not None and (not isinstance(rs, int) or isinstance(rs, bool) or rs < 0):
        raise file_error("random_state", f"expected a non-negative integer or null, got {rs!r}")
    resolved["random_state"] = rs
    resolved["store"] = _resolve_store(raw.get("store", f"runs/{resolved['name']}.zarr"), base)
    cluster = raw.get("cluster", {"kind": "local"}) or {"kind": "local"}
    if not isinstance(cluster, dict):
        raise file_error("cluster", f"expected a mapping (kind: local|address, options), got {cluster!r}")
    if "address" in cluster and "kind" not in cluster:
        cluster = {"kind": "address", **cluster}
    resolved["cluster"] = check_cluster({"kind": "local", **cluster})
    sec = resolved["cluster"].get("security")
    if sec is not None:
        if not isinstance(sec, dict):
            raise file_error("cluster.security", f"expected a mapping of TLS files (tls_ca_file, "
                                           f"tls_client_cert, tls_client_key), got {sec!r}")
        resolved["cluster"]["security"] = {
            k: os.path.abspath(os.path.join(base, v)) if k.startswith("tls_") and k != "tls_min_version"
            and isinstance(v, str) else v for k, v in sec.items()}
    resolved["storage_options"] = _resolve_storage_options(raw.get("storage_options"), resolved["store"])
    cpt = raw.get("configs_per_task")  # None: the engine's default for the grid's size
    resolved["configs_per_task"] = None if cpt is None else _int(cpt, "configs_per_task", 1)
    es = raw.get("error_score", "nan")
    if isinstance(es, float) and es != es:
        es = "nan"
    if es not in ("nan", "raise"):
        raise file_error("error_score", f"expected nan (a failing configuration is recorded and "
                                  f"skipped) or raise (stop at the first error), got {es!r}")
    resolved["error_score"] = es
    sel = raw.get("selection", "pooled")
    if sel not in ("pooled", "fold_mean"):
        raise file_error("selection", f"expected pooled (the best pooled CV score) or fold_mean (the "
                                f"best mean fold score), got {sel!r}")
    resolved["selection"] = sel
    resolved["protocol"] = _resolve_protocol(raw.get("protocol", "cvt"), resolved)
    return resolved


def _resolve_protocol(p, resolved):
    """``protocol``: ``cvt`` (the default: one study, BBC-CV), or ``nested`` — nested CV
    with ``n_outer`` outer folds (default ``cv.splits``) and ``n_inner`` inner folds
    (default one fewer, the 2018 paper's 10 and 9), ``cv.repeats`` outer repeats; given
    as ``nested`` or ``{kind: nested, n_outer: 5, n_inner: 4}``."""
    if isinstance(p, str):
        p = {"kind": p}
    if not isinstance(p, dict) or p.get("kind") not in ("cvt", "nested"):
        raise file_error("protocol", f"expected cvt, nested or a mapping {{kind: nested, n_outer: ..., "
                               f"n_inner: ...}}, got {p!r}")
    bad = sorted(set(p) - ({"kind"} if p["kind"] == "cvt" else {"kind", "n_outer", "n_inner"}))
    if bad:
        raise file_error(f"protocol.{bad[0]}", f"unknown key for protocol {p['kind']} (allowed: kind"
                                         f"{', n_outer, n_inner' if p['kind'] == 'nested' else ''})")
    if p["kind"] == "cvt":
        return {"kind": "cvt"}
    cv = resolved["cv"]
    if "splitter" in cv or "column" in cv:
        raise file_error("protocol", "nested draws its own outer and inner folds: leave out "
                               "cv.splitter and cv.column")
    if resolved["dropping"] is not False:
        raise file_error("dropping", "nested CV runs every inner fold: leave dropping out")
    n_outer = _int(p.get("n_outer", cv["splits"]), "protocol.n_outer", 2)
    return {"kind": "nested", "n_outer": n_outer,
            "n_inner": _int(p.get("n_inner", max(2, n_outer - 1)), "protocol.n_inner", 2)}


#: What a study file may set for each kind of cluster: data only. Dask's own options
#: that name code to run (``preload``, ``scheduler_kwargs``, ``worker_class``, plugins)
#: are not among them, so a study file cannot make a cluster import or run a file.
CLUSTER_KEYS = {
    "local": {"n_workers": int, "threads_per_worker": int, "memory_limit": (str, int),
              "processes": bool, "dashboard_address": str, "host": str, "protocol": str,
              "local_directory": str},
    "address": {"address": str},
}


def _resolve_store(store, base):
    """The study file's ``store``: a path made absolute against the file's folder, a URL
    as it is (the store location tells which)."""
    from ..cube import StoreLocation

    if not isinstance(store, str) or not store:
        raise file_error("store", f"expected a path, got {store!r}")
    return StoreLocation.absolute(store, base)


def _resolve_storage_options(options, store):
    from ..cube import StoreLocation

    if options is not None and not isinstance(options, dict):
        raise file_error("storage_options", f"expected a mapping of fsspec options, got {options!r}")
    if options and not StoreLocation.is_url(store):
        raise file_error("storage_options", "applies to URL stores (s3://...) only")
    return options


def check_cluster(cluster):
    """Validate a ``cluster:`` section (after any command-line overrides); returns it."""
    kind = cluster.get("kind", "local")
    if kind not in ("local", "address", "kubernetes"):
        raise file_error("cluster.kind", f"expected local, address or kubernetes, got {kind!r}")
    if kind == "kubernetes":
        from ..cluster import KUBERNETES_DEFAULTS

        allowed = {k: object for k in KUBERNETES_DEFAULTS}
    else:
        allowed = CLUSTER_KEYS[kind]
    for key, value in cluster.items():
        if key in ("kind", "security"):
            continue
        if key not in allowed:
            raise file_error(f"cluster.{key}", f"unknown option for a {kind} cluster (allowed: "
                                         f"{', '.join(sorted(allowed))})")
        types = allowed[key]
        if types is not object and (not isinstance(value, types) or (types is int and isinstance(value, bool))):
            raise file_error(f"cluster.{key}", f"expected {getattr(types, '__name__', 'a str or int')}, "
                                         f"got {value!r}")
    if kind == "address" and "address" not in cluster:
        raise file_error("cluster.address", "missing (expected the scheduler's address, tcp://host:8786)")
    return cluster


def _int(v, key, low):
    if not isinstance(v, int) or isinstance(v, bool) or v < low:
        raise file_error(key, f"expected an integer >= {low}, got {v!r}")
    return v


def _resolve_data(data, base):
    bad = sorted(set(data) - {"path", "target", "groups", "sklearn", "features", "drop"})
    if bad:
        raise file_error(f"data.{bad[0]}", "unknown key (allowed: path, target, groups, sklearn, "
                                     "features, drop)")
    if ("path" in data) == ("sklearn" in data):
        raise file_error("data", "give exactly one of 'path' (CSV, Parquet, .npz) or 'sklearn' (a bundled dataset)")
    if "sklearn" in data:
        name = data["sklearn"]
        if not isinstance(name, str) or not hasattr(importlib.import_module("sklearn.datasets"), f"load_{name}"):
            raise file_error("data.sklearn", f"no scikit-learn dataset sklearn.datasets.load_{name}")
        check_columns_spec(data, tabular=False)
        return {"sklearn": name}
    p = data["path"]
    if not isinstance(p, str):
        raise file_error("data.path", f"expected a file path, got {p!r}")
    p = os.path.abspath(os.path.join(base, p))
    if not os.path.isfile(p):
        raise file_error("data.path", f"{p}: no such file")
    ext = os.path.splitext(p)[1].lower()
    if ext not in (".csv", ".parquet", ".pq", ".npz"):
        raise file_error("data.path", f"{p}: expected a .csv, .parquet or .npz file")
    out = {"path": p}
    if ext != ".npz":
        out["target"] = _need(data, "target", "data", str, "the target column's name")
    if "groups" in data:
        out["groups"] = data["groups"]
    return out | check_columns_spec(data, tabular=ext != ".npz")


def _resolve_entry(e, where):
    if not isinstance(e, dict):
        raise file_error(where, f"expected a mapping with 'estimator' or 'pipeline', got {e!r}")
    bad = sorted(set(e) - {"estimator", "pipeline", "params", "grid"})
    if bad:
        raise file_error(f"{where}.{bad[0]}", "unknown key (allowed: estimator, pipeline, params, grid)")
    if ("estimator" in e) == ("pipeline" in e):
        raise file_error(where, "give exactly one of 'estimator' or 'pipeline'")
    grid = e.get("grid", {}) or {}
    if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
        raise file_error(f"{where}.grid", f"expected a mapping of parameter -> non-empty list, got {grid!r}")
    if "estimator" in e:
        step = {"estimator": e["estimator"], "params": e.get("params", {}) or {}}
        est = build_step(step, where)
        out = {"estimator": step["estimator"], "params": step["params"], "grid": grid}
    else:
        steps = e["pipeline"]
        if not isinstance(steps, list) or not steps:
            raise file_error(f"{where}.pipeline", "expected a non-empty list of steps")
        norm, built = [], []
        for i, st in enumerate(steps):
            st = {"estimator": st} if isinstance(st, str) else st
            if not isinstance(st, dict) or "estimator" not in st:
                raise file_error(f"{where}.pipeline[{i}]", f"expected an import path or {{estimator, params}}, got {st!r}")
            st = {"estimator": st["estimator"], "params": st.get("params", {}) or {}}
            built.append(build_step(st, f"{where}.pipeline[{i}]"))
            norm.append(st)
        from sklearn.pipeline import make_pipeline

        est = make_pipeline(*built)
        out = {"pipeline": norm, "grid": grid}
    try:  # the grid's names exist (set_params checks them)
        est.set_params(**{k: v[0] for k, v in grid_values(grid, where).items()})
    except (ValueError, TypeError) as exc:
        raise file_error(f"{where}.grid", f"{exc}") from None
    return out


#: The scikit-learn splitters a study file may name (``cv.splitter``): a study file calls
#: nothing that is not on a list.
SPLITTERS = ("KFold", "StratifiedKFold", "GroupKFold", "StratifiedGroupKFold", "RepeatedKFold",
             "RepeatedStratifiedKFold", "LeaveOneGroupOut")
_CV_KEYS = ("splits", "repeats", "groups", "splitter", "params", "column")


def _resolve_cv(cv, data):
    """``cv``: K-fold (``splits``, ``repeats``), a named splitter with its ``params``, or
    the user's own folds in a data ``column`` (fold ids, as ``PredefinedSplit``)."""
    if not isinstance(cv, dict):
        raise file_error("cv", f"expected a mapping with 'splits', 'repeats', 'groups', got {cv!r}")
    bad = sorted(set(cv) - set(_CV_KEYS))
    if bad:
        raise file_error(f"cv.{bad[0]}", f"unknown key (allowed: {', '.join(_CV_KEYS)})")
    out = {"splits": _int(cv.get("splits", 10), "cv.splits", 2),
           "repeats": _int(cv.get("repeats", 1), "cv.repeats", 1),
           "groups": cv.get("groups", data.get("groups"))}
    own = [k for k in ("splitter", "column") if k in cv]
    if len(own) > 1:
        raise file_error("cv", "give 'splitter' or 'column', not both")
    if own and ({"splits", "repeats"} & set(cv)):
        raise file_error(f"cv.{own[0]}", "sets the splits: leave out 'splits' and 'repeats'")
    if "params" in cv and "splitter" not in cv:
        raise file_error("cv.params", "applies to a 'splitter' only")
    if "splitter" in cv:
        if cv["splitter"] not in SPLITTERS:
            raise file_error("cv.splitter", f"expected one of {', '.join(SPLITTERS)}, got {cv['splitter']!r}")
        params = cv.get("params", {}) or {}
        if not isinstance(params, dict):
            raise file_error("cv.params", f"expected a mapping of the splitter's arguments, got {params!r}")
        try:
            _splitter(cv["splitter"], params)
        except (TypeError, ValueError) as e:
            raise file_error("cv.params", str(e)) from None
        out["splitter"] = {"name": cv["splitter"], "params": params}
    if "column" in cv:
        if not isinstance(cv["column"], str) or "sklearn" in data:
            raise file_error("cv.column", "expected the name of a column of fold ids in data.path")
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
    a column of them; errors name the key."""
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
