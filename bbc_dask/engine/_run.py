"""run_study: the CVT engine (plan -> tasks -> cube), resumable from its Zarr store."""
from __future__ import annotations

import math
import sys
import time
import uuid
from collections import deque

import numpy as np

from .. import _validation as V
from .._random import as_seed_sequence, entropy_of
from ..cube import DONE, DROPPED, FAILED, PENDING, StoreMismatchError, as_location, create_cube, open_cube
from ..cube._location import CREATING_NAME, LOCK_NAME
from ..metrics import get_metric
from . import _plan as P
from ._tasks import fit_predict_block, refit

__all__ = ["run_study"]

CALLER = "run_study"


class StudyError(RuntimeError):
    """A configuration raised with ``error_score="raise"``."""


def _py(v):
    """A label as a plain Python value (for messages and JSON)."""
    return v.item() if isinstance(v, np.generic) else v


def _check_X(X):
    """X as the tasks index it: DataFrames kept (column names matter to pipelines), sparse
    kept, anything else a 2-d array (scikit-learn's checks and messages; NaN allowed —
    whether the estimator takes it is its business)."""
    from sklearn.utils.validation import check_array

    if X is None:
        raise ValueError(f"The 'X' parameter of {CALLER} is required. Got None.")
    if hasattr(X, "iloc"):
        return X
    return check_array(X, accept_sparse=("csr", "csc"), dtype=None, ensure_all_finite=False,
                       ensure_min_samples=2, input_name="X")


def _check_inputs(estimator, X, y, groups, metric, n_splits, n_repeats, error_score, pos_label):
    if not hasattr(estimator, "fit") or not hasattr(estimator, "get_params"):
        raise TypeError(
            f"The 'estimator' parameter of {CALLER} must be a scikit-learn estimator. Got "
            f"{type(estimator).__name__} instead."
        )
    if metric.task == "survival":
        raise ValueError(
            f"The metric {metric.name!r} is not supported by {CALLER}: scikit-learn has no "
            f"survival estimators; compute risk scores yourself and call bbc_dask.bbc."
        )
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    y_arr = np.asarray(y)
    if y_arr.ndim != 1:
        raise ValueError(f"The 'y' parameter of {CALLER} must be 1-dimensional. Got shape {y_arr.shape}.")
    if n != y_arr.shape[0]:
        raise ValueError(
            f"'X' and 'y' of {CALLER} must have the same number of samples. Got {n} and "
            f"{y_arr.shape[0]}."
        )
    n_splits = V.check_int(n_splits, "n_splits", CALLER, low=2, high=max(2, n))
    n_repeats = V.check_int(n_repeats, "n_repeats", CALLER)
    target = V.as_target(y_arr, metric, CALLER, pos_label=pos_label)
    if groups is not None:
        groups = np.asarray(groups)
        if groups.shape != (n,):
            raise ValueError(f"The 'groups' parameter of {CALLER} must have shape ({n},). Got {groups.shape}.")
        if np.unique(groups).size < n_splits:
            raise ValueError(
                f"The 'groups' parameter of {CALLER} has {np.unique(groups).size} groups; "
                f"n_splits={n_splits} needs at least as many."
            )
    elif metric.is_classification:
        counts = np.bincount(target.codes, minlength=len(target.classes))
        small = np.flatnonzero(counts < n_splits)
        if small.size:
            k = small[0]
            raise ValueError(
                f"The class {_py(target.classes[k])!r} of 'y' has {counts[k]} members, fewer "
                f"than n_splits={n_splits}: stratified folds need at least n_splits members "
                f"in every class (use fewer splits) in {CALLER}."
            )
    if not (isinstance(error_score, str) and error_score == "raise"):
        if not (isinstance(error_score, float) and math.isnan(error_score)):
            raise ValueError(
                f"The 'error_score' parameter of {CALLER} must be np.nan or 'raise' (a failing "
                f"configuration gets NaN predictions). Got {error_score!r} instead."
            )
    return target, n_splits, n_repeats, groups


def _check_store(store, storage_options):
    loc = as_location(store, storage_options, CALLER)
    if loc.is_file():
        raise ValueError(
            f"The 'store' parameter of {CALLER} must be a directory path or a URL prefix for "
            f"the Zarr store; {loc.url!r} is a file."
        )
    return loc


def _diff(stored, new, prefix=""):
    out = []
    for key in sorted(set(stored) | set(new)):
        a, b = stored.get(key), new.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += _diff(a, b, prefix + key + ".")
        elif a != b:
            out.append(f"{prefix}{key} (stored {_short(a)}, given {_short(b)})")
    return out


def _short(v):
    s = repr(v)
    return s if len(s) < 80 else s[:77] + "..."


def run_study(
    estimator,
    param_grid=None,
    X=None,
    y=None,
    *,
    store,
    metric,
    n_splits=10,
    n_repeats=1,
    groups=None,
    param_distributions=None,
    n_iter=10,
    error_score=np.nan,
    pos_label=None,
    refit=True,
    random_state=None,
    client=None,
    overwrite=False,
    progress=True,
    configs_per_task=10,
    dropping=None,
    metadata=None,
    storage_options=None,
    security=None,
):
    """Cross-validate every configuration on Dask into a resumable Zarr prediction cube.

    Every configuration (grid point or random draw) is K-fold cross-validated (stratified
    for classification, grouped with ``groups``), ``n_repeats`` times with partitions from
    spawned seeds. Out-of-sample predictions go into the cube at ``store``; the winner
    (best pooled CV score, as :func:`bbc_dask.bbc` selects) is refit on all data.

    Calling it again with the same arguments and store resumes: finished cells are read
    back, not recomputed. A store of another study is refused (the error lists what
    differs) unless ``overwrite=True``.

    Parameters
    ----------
    estimator : scikit-learn estimator or Pipeline
    param_grid : dict or list of dicts, default=None
        As in ``GridSearchCV``.
    X : array-like or DataFrame of shape (N, n_features)
    y : array-like of shape (N,)
    store : str or path
        Directory of the Zarr store, or an fsspec URL (``s3://bucket/study.zarr``; needs
        ``bbc-dask[s3]`` for S3). On an object store the run lock is a lease object renewed
        by a heartbeat (see :class:`bbc_dask.cube.ObjectStoreLock`).
    metric : str
        A :mod:`bbc_dask.metrics` name; decides what is stored: the positive-class
        decision function or probability (``roc_auc``), class labels (``accuracy``,
        ``balanced_accuracy``, ``f1``), all class probabilities (``roc_auc_ovr``,
        ``neg_log_loss``) or predicted values (regression).
    n_splits : int, default=10
    n_repeats : int, default=1
    groups : array-like of shape (N,), default=None
        Group labels: folds never split a group.
    param_distributions : dict, default=None
        Random search (``ParameterSampler``) with ``n_iter`` draws instead of a grid.
    n_iter : int, default=10
    error_score : np.nan or "raise", default=np.nan
        A configuration that raises gets NaN predictions and its error text is recorded;
        with ``"raise"`` the study stops with an error naming the configuration.
    pos_label : label, default=None
        Positive class for binary metrics (default: the larger label).
    refit : bool, default=True
        Refit the winner on all data as a task; saved with skops (no pickle).
    random_state : int, SeedSequence, Generator or None
        The seed of the folds (one spawned child per repeat) and of random search. With
        None a fresh seed is drawn and recorded; a resume with None reuses it.
    client : distributed.Client, str or None
        An existing client, a scheduler address, or None for a local cluster of processes
        (one thread each) that the run starts and closes.
    overwrite : bool, default=False
        Replace an existing study store at ``store``.
    progress : bool, default=True
        A progress bar of tasks per wave (and the dashboard link of a started cluster).
    configs_per_task : int, default=10
        Configurations fitted by one task on one training set; also the cube's chunk size
        along ``config`` (fixed when the store is created).
    dropping : bool or Dropping, default=None
        BBCD-CV: after each fold wave, drop the configurations that are worse than the
        current best with bootstrap probability > ``alpha`` (``True`` = ``Dropping()``);
        dropped configurations train no further folds. The test runs as a task on the
        cluster; its decisions are persisted before the next wave and replayed on resume.
    metadata : dict, default=None
        JSON-serialisable description stored with the study when the store is created
        (the command line keeps the resolved study file there); ``Study.metadata``.
    storage_options : dict, default=None
        fsspec options of a URL ``store`` (credentials, ``client_kwargs={"endpoint_url":
        ...}``); they also travel with the tasks that read the cube.
    security : distributed.security.Security, dict or None
        TLS settings of the clients this run creates (a scheduler address in ``client``,
        or the local cluster, which then runs over TLS). A dict is passed to ``Security``
        (e.g. ``{"tls_ca_file": ..., "tls_client_cert": ..., "tls_client_key": ...}``).

    Returns
    -------
    Study

    References
    ----------
    .. [1] Tsamardinos, Greasidou, Borboudakis, Machine Learning 107 (2018), Algorithm 2.
    """
    from .._study import Study

    m = get_metric(metric, caller=CALLER)
    X = _check_X(X)
    y = y if y is None else np.asarray(y)  # the tasks index it by position
    target, n_splits, n_repeats, groups = _check_inputs(
        estimator, X, y, groups, m, n_splits, n_repeats, error_score, pos_label
    )
    loc = _check_store(store, storage_options)
    path = loc.url
    security = _check_security(security)
    configs_per_task = V.check_int(configs_per_task, "configs_per_task", CALLER)
    from ..stats._dropping import Dropping

    dropping = Dropping.coerce(dropping, CALLER)
    existing = None
    ours = {LOCK_NAME, CREATING_NAME}
    entries = set(loc.listdir())
    if CREATING_NAME not in entries and entries - ours:
        try:
            existing = open_cube(loc)
        except StoreMismatchError:
            raise ValueError(
                f"The 'store' parameter of {CALLER} points to {path!r}, which exists and is not "
                f"a bbc_dask study store; refusing to touch it."
            ) from None
    if random_state is None and existing is not None and not overwrite:
        ent = existing.meta["spec"]["seed"]
        root = np.random.SeedSequence(int(ent["entropy"]), spawn_key=tuple(ent["spawn_key"]))
    else:
        root = as_seed_sequence(random_state, caller=CALLER)
    params, search = P.candidates(param_grid, param_distributions, n_iter, root, CALLER)
    methods = P.check_estimator_methods(estimator, params, m, CALLER)
    if dropping is not None and len(params) < 2:
        import warnings

        warnings.warn(
            f"dropping has no effect in {CALLER} with a single configuration; running plain CVT.",
            UserWarning, stacklevel=2,
        )
    x_digest, y_digest, g_digest = P.data_digest(X, np.asarray(y), groups)
    classification = m.is_classification
    spec = {
        "metric": m.name,
        "pos_label": None if target.pos_code is None else _py(target.classes[target.pos_code]),
        "n_splits": n_splits,
        "n_repeats": n_repeats,
        "search": search,
        "n_iter": n_iter if search == "random" else None,
        "error_score": "raise" if isinstance(error_score, str) else "nan",
        "seed": entropy_of(root),
        "data": {"X": x_digest, "y": y_digest, "groups": g_digest, "n_samples": int(len(np.asarray(y)))},
        "estimator": P.describe_estimator(estimator),
        "candidates": P.sha(repr([P.describe_params(p) for p in params])),
        "dropping": None if dropping is None else {
            "alpha": dropping.alpha, "n_bootstraps": dropping.n_bootstraps,
            "min_predictions": dropping.min_predictions},
    }
    spec = __import__("bbc_dask.cube._schema", fromlist=["to_json"]).to_json(spec)
    if existing is not None and not overwrite:
        diffs = _diff(existing.meta["spec"], spec)
        if diffs:
            raise ValueError(
                f"The store {path!r} holds a different study; refusing to mix them. What "
                f"differs: {'; '.join(diffs)}. Use another store, or overwrite=True to replace it."
            )

    lock = loc.lock().acquire()
    client_obj = owned = None
    try:
        # Connect first: a cluster that cannot be reached leaves the store as it was.
        client_obj, owned = _client(client, progress, security)
        if (existing is not None and overwrite) or loc.has(CREATING_NAME):
            loc.wipe()  # our own study store (checked above) or our interrupted creation
            existing = None
        if existing is None:
            loc.write_bytes(CREATING_NAME, b"")
            folds = P.make_folds(np.asarray(y), groups, n_splits, n_repeats, classification, root)
            y_stored = target.codes if classification else target.values
            cube = create_cube(
                loc, n_configs=len(params), n_repeats=n_repeats, n_splits=n_splits,
                folds=folds, y_stored=y_stored,
                classes=None if target.classes is None else target.classes,
                n_classes_axis=len(target.classes) if m.needs_class_axis else 0,
                config_chunk=min(configs_per_task, len(params)),
                meta={"spec": spec,
                      "classes": None if target.classes is None else target.classes.tolist(),
                      "params": [P.describe_params(p) for p in params],
                      "methods": methods, "versions": _versions(), "runs": [],
                      "metadata": metadata},
            )
            loc.remove(CREATING_NAME)
        else:
            cube = open_cube(loc, mode="r+")
        cube.guard = lock.check
        runs = list(cube.meta.get("runs", []))
        runs.append({"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "t0": time.time(),
                     "done_before": int((cube.state() != PENDING).sum())})
        cube.set_meta(runs=runs)
        fits = _run_waves(cube, client_obj, estimator, params, methods, X, y, target, m,
                          error_score, progress, dropping, root)
        runs[-1].update(finished=time.strftime("%Y-%m-%dT%H:%M:%S"), t1=time.time(), fits=fits)
        cube.set_meta(runs=runs)
        final = None
        if refit:
            final = _refit(cube, client_obj, estimator, params, X, y)
    finally:
        if owned and client_obj is not None:
            cluster = getattr(client_obj, "cluster", None)
            client_obj.close()
            if cluster is not None and client is None:
                cluster.close()
        lock.release()
    study = Study(loc, final_model=final)
    study._param_objects = params
    study.n_fits_ = fits
    return study


def _versions():
    import dask
    import sklearn
    import zarr

    import bbc_dask

    return {"bbc_dask": bbc_dask.__version__, "scikit-learn": sklearn.__version__,
            "dask": dask.__version__, "zarr": zarr.__version__, "numpy": np.__version__,
            "python": sys.version.split()[0]}


def _check_security(security):
    from ..cluster import as_security

    return as_security(security, CALLER)


def _client(client, progress, security=None):
    from ..cluster import resolve_client

    c, owned = resolve_client(client, CALLER, security=security)
    if progress and client is None:
        print(f"bbc_dask: started a local Dask cluster; dashboard: {c.dashboard_link}",
              file=sys.stderr)
    return c, owned


def _wave_tasks(cube, state, k, active, chunk):
    """Task specs of wave ``k``: per repeat and config chunk, the pending active configs."""
    n_cfg, n_rep, _ = state.shape
    out = []
    for r in range(n_rep):
        for c0 in range(0, n_cfg, chunk):
            cfgs = [c for c in range(c0, min(c0 + chunk, n_cfg))
                    if active[c] and state[c, r, k] == PENDING]
            if cfgs:
                out.append((k, r, np.array(cfgs)))
    return out


def _run_waves(cube, client, estimator, params, methods, X, y, target, m, error_score,
               progress, dropping=None, root=None):
    """Run every pending cell, wave by wave; with ``dropping``, test between waves.

    Without dropping the waves are one queue (no barrier: workers never idle at a wave's
    end). With dropping, wave k+1 is planned only after wave k's decisions are persisted.
    Returns the number of configuration fits performed.
    """
    state = cube.state()
    n_cfg, n_rep, n_splits = state.shape
    chunk = cube.config_chunk
    active = _active(cube)
    record = cube.meta.get("dropping") or {"decided": [], "waves": []}
    stages = [list(range(n_splits))] if dropping is None else [[k] for k in range(n_splits)]
    run = _Executor(cube, client, estimator, params, methods, X, y, target, m, error_score,
                    progress, n_splits)
    try:
        for stage in stages:
            tasks = [t for k in stage for t in _wave_tasks(cube, state, k, active, chunk)]
            run.execute(tasks, int(active.sum()))
            k = stage[0]
            if dropping is None or k >= n_splits - 1 or k in record["decided"]:
                continue
            state = cube.state()
            active, entry = _decide(cube, client, root, dropping, k, state, active, m, target)
            record["decided"].append(k)
            record["waves"].append(entry)
            cube.set_meta(dropping=record)  # persisted before the next wave is submitted
            state = cube.state()
    finally:
        run.close()
    return run.fits


def _active(cube):
    """Configurations that still train: not dropped."""
    return cube.group["drop_wave"][...] < 0


def _decide(cube, client, root, dropping, k, state, active, m, target):
    """The dropping test after wave ``k``; persists and returns the new active mask."""
    from .._lazy import _DIMS, lazy_dropping_test, zarr_blocks
    from .._random import child_seed

    # A configuration that failed somewhere has no usable column: it is not tested.
    idx = np.flatnonzero(active & ~np.any(state == FAILED, axis=(1, 2)))
    avail = cube.folds() <= k
    n_avail = int(avail.sum(axis=0).min())
    entry = {"wave": int(k), "active_before": int(idx.size), "tested": False, "dropped": []}
    if idx.size < 2 or n_avail < dropping.min_predictions:
        entry["reason"] = ("one configuration" if idx.size < 2 else
                           f"{n_avail} predictions per repeat < min_predictions={dropping.min_predictions}")
        return active, entry
    # Chunked over the tested configurations, each task reading its chunk from the store:
    # the cube never has to fit one worker (or the driver).
    pred = cube.group["prediction"]
    blocks, _ = zarr_blocks(pred, _DIMS[: pred.ndim], configs=idx)
    res = lazy_dropping_test(
        client, blocks, cube.y(), avail, metric=m.name, alpha=dropping.alpha,
        n_bootstraps=dropping.n_bootstraps, seed=child_seed(root, "dropping", k),
        pos_label=target.pos_code, key=f"bbc-dropping-k{k}-{uuid.uuid4().hex[:8]}",
    )
    gone = idx[res.drop]
    entry.update(tested=True, best=int(idx[res.best]), dropped=[int(c) for c in gone])
    if gone.size:
        st = cube.group["state"]
        for c in gone:  # pending cells of a dropped configuration become "dropped"
            row = st[int(c)]
            st[int(c)] = np.where(row == PENDING, DROPPED, row).astype(np.int8)
        dw, dp = cube.group["drop_wave"], cube.group["drop_p"]
        dw.oindex[gone] = np.full(gone.size, k, dtype=np.int16)
        dp.oindex[gone] = res.p_hat[res.drop]
    new = active.copy()
    new[gone] = False
    entry["active_after"] = int(new.sum())
    return new, entry


class _Executor:
    """Submits tasks with a bounded number in flight and writes results as they come."""

    def __init__(self, cube, client, estimator, params, methods, X, y, target, m, error_score,
                 progress, n_splits):
        self.cube, self.client, self.estimator = cube, client, estimator
        self.params, self.methods, self.X, self.y = params, methods, X, y
        self.target, self.error_score, self.n_splits = target, error_score, n_splits
        self.n_cls_axis = len(target.classes) if m.needs_class_axis else 0
        self.folds = cube.folds()
        self.progress = progress
        self.bar = None
        self.scattered = None
        self.fits = 0

    def execute(self, tasks, n_active):
        from distributed import as_completed

        if not tasks:
            return
        if self.scattered is None:
            # hash=False: a content-hashed key is shared with any earlier scatter of the same data
            # in this client, and its release by that run can lose our copy (lost dependencies)
            self.scattered = self.client.scatter([self.X, self.y], broadcast=True, hash=False)
        X_f, y_f = self.scattered
        n_threads = max(1, sum(self.client.nthreads().values()))
        max_in_flight = 2 * n_threads + 2  # keeps workers busy; bounds driver memory
        if self.progress and self.bar is None:
            self.bar = _bar(0, True)
        if self.bar is not None:
            self.bar.total += len(tasks)
            self.bar.set_postfix(active=n_active)
            self.bar.refresh()
        queue = deque(tasks)
        ac = as_completed()
        meta = {}
        params, methods = self.params, self.methods
        while queue or meta:
            while queue and len(meta) < max_in_flight:
                k, r, cfgs = queue.popleft()
                test = np.flatnonzero(self.folds[:, r] == k)
                train = np.flatnonzero(self.folds[:, r] != k)
                fut = self.client.submit(
                    fit_predict_block, self.estimator, [params[c] for c in cfgs], X_f, y_f,
                    train, test, [methods[c] for c in cfgs], self.target.classes,
                    self.target.pos_code, self.n_cls_axis, self.error_score,
                    key=f"bbc-fit-r{r}-k{k}-c{cfgs[0]}-{uuid.uuid4().hex[:8]}",
                    retries=3, pure=False,
                )
                meta[fut.key] = (k, r, cfgs, test)
                ac.add(fut)
            fut = next(ac)
            k, r, cfgs, test = meta.pop(fut.key)
            res = fut.result()
            if "raise_" in res:
                j, text, tb = res["raise_"]
                c = int(cfgs[j])
                raise StudyError(
                    f"Configuration {c} ({params[c]!r}) raised on repeat {r}, fold {k} "
                    f"(error_score='raise'): {text}\n{tb}"
                )
            self.cube.write_cells(test, cfgs, r, k, res["values"], res["fit_time"],
                                  res["failed"], res["errors"])
            self.fits += len(cfgs)
            if self.bar is not None:
                self.bar.set_description(f"wave {k + 1}/{self.n_splits}")
                self.bar.update(1)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _bar(total, progress):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="task", desc="wave 1", file=sys.stderr, dynamic_ncols=True,
                mininterval=0.5)


def _refit(cube, client, estimator, params, X, y):
    import skops.io as sio

    from .._study import select_winner

    best = select_winner(cube)
    if best is None:
        return None
    X_f, y_f = client.scatter([X, y], broadcast=False, hash=False)
    model = client.submit(refit, estimator, params[best], X_f, y_f, pure=False, retries=3).result()
    cube._guard()
    cube.location.write_bytes("final_model.skops", sio.dumps(model))
    cube.set_meta(final_model={"config": int(best), "file": "final_model.skops"})
    return model
