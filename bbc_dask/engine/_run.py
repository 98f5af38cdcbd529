"""run_study: the CVT engine (plan -> tasks -> cube), resumable from its Zarr store."""
from __future__ import annotations

import contextlib
import math
import signal
import sys
import threading
import time
import uuid
from collections import deque
from concurrent.futures import CancelledError

import numpy as np

from .. import _validation as V
from .._random import as_seed_sequence, entropy_of
from ..cube import DONE, FAILED, PENDING, as_location
from .._signals import deferred_interrupts, signals_as_interrupts, wait_done
from ..exceptions import AllConfigurationsFailedError, StudyInterrupted, UserError
from ..metrics import get_metric
from . import _plan as P
from ._tasks import fit_write_blocks, refit

__all__ = ["run_study"]

CALLER = "run_study"


class StudyError(UserError, RuntimeError):
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
    configs_per_task=None,
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
    client : distributed.Client, str, dict or None
        An existing client, a scheduler address, None for a local cluster of processes (one
        thread each), or a dict of :func:`bbc_dask.make_client` arguments (``{"kind":
        "local", "n_workers": 4}``); the last two are started and closed by the run.
    overwrite : bool, default=False
        Replace an existing study store at ``store``.
    progress : bool, default=True
        A progress bar of tasks per wave (and the dashboard link of a started cluster).
    configs_per_task : int or None, default=None
        Configurations per block: the cube's chunk size along ``config`` (fixed when the
        store is created) and the smallest unit of work. A task fits one or more
        blocks on one training set: blocks are grouped by their measured fit times so that
        a task lasts about 1 s, hence small blocks cost little. None: 1 for up to
        127 configurations, then ``n_configs // 64`` up to 10 — small blocks balance the
        waves of uneven grids (a forest next to a logistic regression), large grids keep
        the number of chunk files down.
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
    m = get_metric(metric, caller=CALLER)
    X = _check_X(X)
    y = y if y is None else np.asarray(y)  # the tasks index it by position
    target, n_splits, n_repeats, groups = _check_inputs(
        estimator, X, y, groups, m, n_splits, n_repeats, error_score, pos_label
    )
    loc = _check_store(store, storage_options)
    security = _check_security(security)
    if configs_per_task is not None:
        configs_per_task = V.check_int(configs_per_task, "configs_per_task", CALLER)
    from ..stats._dropping import Dropping

    dropping = Dropping.coerce(dropping, CALLER)
    grid = P.check_search(param_grid, param_distributions, n_iter, CALLER)
    if grid is not None:  # random draws are checked once the seed is known
        P.check_estimator_methods(estimator, grid, m, CALLER)
    if dropping is not None and (len(grid) if grid is not None else n_iter) < 2:
        import warnings

        warnings.warn(
            f"dropping has no effect in {CALLER} with a single configuration; running plain CVT.",
            UserWarning, stacklevel=2,
        )
    study = _StudyRun(
        loc, estimator=estimator, X=X, y=y, groups=groups, target=target, metric=m,
        n_splits=n_splits, n_repeats=n_repeats, search=(param_grid, param_distributions, n_iter),
        error_score=error_score, random_state=random_state, overwrite=overwrite,
        progress=progress, configs_per_task=configs_per_task, dropping=dropping,
        metadata=metadata, digests=P.data_digest(X, np.asarray(y), groups),
    )
    return study.run(client, security, refit)


class _StudyRun:
    """One call of :func:`run_study` once its arguments are valid: everything that
    touches the store happens here, under the store's run lock."""

    def __init__(self, loc, **kw):
        self.loc = loc
        self.__dict__.update(kw)
        self.cube = None
        self.fits = 0

    # ------------------------------------------------------------------ flow
    def run(self, client, security, refit):
        from .._study import Study
        from ..cube import writing

        final = None
        lock = client_obj = owned = None
        interrupted = failed = False
        self.precheck()
        try:
            with signals_as_interrupts():
                # Connect first: a cluster that cannot be reached leaves the store as it was.
                client_obj, owned = _client(client, self.progress, security)
                with writing(self.loc.url):
                    lock = self.loc.lock().acquire()
                self._open_or_create(lock)
                self._announce()
                self._run_waves(client_obj, cancel_on_exit=not owned)
                self._check_not_all_failed()
                if refit:
                    final = self._refit(client_obj)
        except KeyboardInterrupt as exc:
            interrupted = failed = True
            raise self._interrupted(exc) from None
        except BaseException:
            failed = True
            raise
        finally:
            try:
                _quietly_close(client_obj, owned, client, interrupted, keep_going=failed)
            finally:
                if lock is not None:
                    lock.release()
        study = Study(self.loc, final_model=final)
        study._param_objects = self.configs
        study.n_fits_ = self.fits
        return study

    def _open_or_create(self, lock):
        """Decide, under the lock, whether the store is new, ours to resume, or another
        study's; create it if new."""
        from ..cube import OldSchemaError, StoreMismatchError, inspect_store

        try:
            kind, existing = inspect_store(self.loc)
        except StoreMismatchError as exc:
            if not (self.overwrite and isinstance(exc, OldSchemaError)):
                raise _unusable(self.loc, exc) from None
            kind, existing = "interrupted", None  # an older layout, replaced as asked
        if existing is not None and self.overwrite:
            existing, kind = None, "interrupted"
        spec = self._plan(existing)  # before any wipe: a bad plan leaves the old study
        if kind == "interrupted":
            self.loc.wipe()
        self.cube = existing if existing is not None else self._create(spec)
        self.cube.guard = lock.check
        self.token = lock.token()
        self.cube.apply_decisions()  # a kill between a decision and its cells: finish it
        runs = list(self.cube.meta.get("runs", []))
        runs.append({"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "t0": time.time(),
                     "done_before": int((self.cube.state() != PENDING).sum())})
        self.cube.set_meta(runs=runs)

    def precheck(self):
        """Refuse, before taking the lock and without writing anything, a store that holds
        another study or no study at all. Only a refusal is decided here: whether to
        create, resume or replace is decided again under the lock."""
        from ..cube import OldSchemaError, StoreMismatchError, inspect_store

        try:
            kind, existing = inspect_store(self.loc, read_only=True)
        except StoreMismatchError as exc:
            if self.overwrite and isinstance(exc, OldSchemaError):
                return  # a study of an older layout, replaced as asked
            raise _unusable(self.loc, exc) from None
        if kind == "study":
            self._plan(None if self.overwrite else existing)

    def _plan(self, existing):
        """Seed, configurations and spec; refuses an ``existing`` study that differs."""
        if self.random_state is None and existing is not None:
            ent = existing.meta["spec"]["seed"]  # a resume with None reuses the stored seed
            self.root = np.random.SeedSequence(int(ent["entropy"]), spawn_key=tuple(ent["spawn_key"]))
        elif getattr(self, "root", None) is None:  # once: a Generator is consumed by it
            self.root = as_seed_sequence(self.random_state, caller=CALLER)
        p_grid, p_dist, n_iter = self.search
        self.configs, search = P.candidates(p_grid, p_dist, n_iter, self.root, CALLER)
        if search == "random":
            P.check_estimator_methods(self.estimator, self.configs, self.metric, CALLER)
        # stores made before lazy planning fingerprinted the list of parameter dicts
        spec = self._spec(search, legacy=existing is not None and "params" in existing.meta)
        if existing is not None:
            diffs = _diff(existing.meta["spec"], spec)
            if diffs:
                raise ValueError(
                    f"The store {self.loc.url!r} holds a different study; refusing to mix them. "
                    f"What differs: {'; '.join(diffs)}. Use another store, or overwrite=True to "
                    f"replace it.")
        return spec

    def _spec(self, search, legacy=False):
        from ..cube import to_json

        m, target, d = self.metric, self.target, self.dropping
        x_digest, y_digest, g_digest = self.digests
        return to_json({
            "metric": m.name,
            "pos_label": None if target.pos_code is None else _py(target.classes[target.pos_code]),
            "n_splits": self.n_splits,
            "n_repeats": self.n_repeats,
            "search": search,
            "n_iter": self.search[2] if search == "random" else None,
            "error_score": "raise" if isinstance(self.error_score, str) else "nan",
            "seed": entropy_of(self.root),
            "data": {"X": x_digest, "y": y_digest, "groups": g_digest,
                     "n_samples": int(len(self.y))},
            "estimator": P.describe_estimator(self.estimator),
            "candidates": P.sha(repr([P.describe_params(p) for p in self.configs] if legacy
                                     else self.configs.describe())),
            "dropping": None if d is None else {
                "alpha": d.alpha, "n_bootstraps": d.n_bootstraps,
                "min_predictions": d.min_predictions},
        })

    def _create(self, spec):
        from ..cube import create_cube

        m, target = self.metric, self.target
        folds = P.make_folds(self.y, self.groups, self.n_splits, self.n_repeats,
                             m.is_classification, self.root)
        n_cfg = len(self.configs)
        return create_cube(
            self.loc, n_configs=n_cfg, n_repeats=self.n_repeats, n_splits=self.n_splits,
            folds=folds, y_stored=target.codes if m.is_classification else target.values,
            classes=target.classes,
            n_classes_axis=len(target.classes) if m.needs_class_axis else 0,
            config_chunk=min(auto_block(n_cfg) if self.configs_per_task is None
                             else self.configs_per_task, n_cfg),
            meta={"spec": spec,
                  "classes": None if target.classes is None else target.classes.tolist(),
                  "configurations": self.configs.describe(), "versions": _versions(),
                  "runs": [], "metadata": self.metadata},
        )

    def _announce(self):
        if not self.progress:
            return
        st = self.cube.state()
        n_cfg, n_rep, n_spl = st.shape
        pending = int((st == PENDING).sum())
        tasks = -(-n_cfg // self.cube.config_chunk) * n_rep * n_spl
        print(f"bbc_dask: {n_cfg:,} configurations x {n_spl} folds x {n_rep} repeat"
              f"{'s' if n_rep > 1 else ''} = {st.size:,} fits in up to {tasks:,} tasks; "
              f"{st.size - pending:,} already done; store {self.loc.url}", file=sys.stderr)

    def _run_waves(self, client, cancel_on_exit):
        self.fits = _run_waves(self.cube, client, self.estimator, self.configs, self.X, self.y,
                               self.target, self.metric, self.error_score, self.progress,
                               self.dropping, self.root, cancel_on_exit, self.token)
        runs = list(self.cube.meta["runs"])
        runs[-1].update(finished=time.strftime("%Y-%m-%dT%H:%M:%S"), t1=time.time(),
                        fits=self.fits)
        self.cube.set_meta(runs=runs)

    def _check_not_all_failed(self):
        from .._study import failure_groups

        st = self.cube.state()
        if not np.all(np.any(st == FAILED, axis=(1, 2))):
            return
        groups = failure_groups(self.cube)
        shown = "; ".join(f"{g['error'].splitlines()[0] if g['error'] else '?'} ({g['count']} "
                          f"configuration{'s' if g['count'] > 1 else ''}, e.g. configuration "
                          f"{g['configs'][0]})" for g in groups[:3])
        more = f"; and {len(groups) - 3} other errors" if len(groups) > 3 else ""
        raise AllConfigurationsFailedError(
            f"Every configuration failed ({st.shape[0]} of {st.shape[0]}): no model can be "
            f"selected. {shown}{more}. The errors are kept in the store ({self.loc.url}).",
            groups)

    def _refit(self, client):
        from ..cube import save_model
        from .._study import select_winner

        if "final_model" in self.cube.meta:  # a rerun of a finished study: it is saved
            return None
        best = select_winner(self.cube)
        if best is None:
            return None
        model = _submit_with_data(client, refit, self.estimator, self.configs[best], self.X, self.y)
        self.cube.set_meta(final_model={"config": int(best), **save_model(self.cube.location, model)})
        return model

    def _interrupted(self, exc):
        signum = getattr(exc, "signum", signal.SIGINT)
        done = total = None
        if self.cube is not None:
            try:
                st = self.cube.state()
                done, total = int((st != PENDING).sum()), int(st.size)
            except Exception:  # the store may be unreadable at this instant; say less
                pass
        saved = (f"{done} of {total} cells saved" if done is not None
                 else "no cell was run")
        return StudyInterrupted(f"interrupted: {saved}; run again with the same arguments to "
                                f"resume", signum, done, total)


def auto_block(n_configs):
    """The default block (chunk) width: see ``configs_per_task`` of :func:`run_study`."""
    return max(1, min(10, n_configs // 64))


def _unusable(loc, exc):
    from ..cube import OldSchemaError

    if isinstance(exc, OldSchemaError):
        return ValueError(f"The 'store' parameter of {CALLER}: {exc}")
    return ValueError(f"The 'store' parameter of {CALLER} points to {loc.url!r}, which exists and "
                      f"is not a bbc_dask study store; refusing to touch it.")


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
    if progress and (client is None or (isinstance(client, dict) and client.get("kind") == "local")):
        print(f"bbc_dask: started a local Dask cluster; dashboard: {c.dashboard_link}",
              file=sys.stderr)
    return c, owned


def _quietly_close(client_obj, owned, given, interrupted=False, keep_going=False):
    """Close a client (and the cluster) the run started; a second Ctrl-C while closing
    is ignored so that the workers are not left behind. After an interrupt the
    cluster's own logs are silenced first: its workers would otherwise report every
    task cancelled by the shutdown. With ``keep_going`` (the run is already failing),
    an error while closing is reported as a warning, not raised over the first one."""
    if not owned or client_obj is None:
        return
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        from ..cluster import close_client

        with _quiet_logs(interrupted):
            close_client(client_obj, close_cluster=given is None or isinstance(given, dict))
    except Exception as exc:
        if not keep_going:
            raise
        import warnings

        warnings.warn(f"closing the run's cluster failed: {exc!r}", RuntimeWarning, stacklevel=2)
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)


def _silence_distributed_logs():
    import logging

    logging.getLogger("distributed").setLevel(logging.CRITICAL)


@contextlib.contextmanager
def _quiet_logs(on):
    import logging

    log = logging.getLogger("distributed")
    level = log.level
    if on:
        log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


class _WaveTasks:
    """The tasks of some waves: per wave, repeat and configuration chunk, the pending
    active configurations. Counted and generated one (wave, repeat) at a time: a
    million-configuration study never holds its task specs, nor its pending indices of
    every wave at once.

    Within a (wave, repeat) the blocks come in the order ``rank`` gives (most expensive
    first, see :meth:`_Executor.rank`), so that a stage ends on its cheap blocks rather
    than waiting for one long fit started last. The order decides only which block runs
    when, never what any block computes."""

    def __init__(self, state, waves, active, chunk, rank=None):
        self.state, self.waves, self.active, self.chunk = state, list(waves), active, chunk
        self.rank = rank

    def _pending(self):
        for k in self.waves:
            for r in range(self.state.shape[1]):
                todo = np.flatnonzero(self.active & (self.state[:, r, k] == PENDING))
                if todo.size:
                    yield k, r, todo

    def __len__(self):
        return sum(int(np.count_nonzero(np.diff(t // self.chunk))) + 1 for *_, t in self._pending())

    def __iter__(self):
        for k, r, todo in self._pending():
            bounds = np.concatenate([[0], np.flatnonzero(np.diff(todo // self.chunk)) + 1, [todo.size]])
            blocks = [todo[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
            for cfgs in (blocks if self.rank is None else self.rank(blocks)):
                yield k, r, cfgs


def _run_waves(cube, client, estimator, configs, X, y, target, m, error_score,
               progress, dropping=None, root=None, cancel_on_exit=True, token=None):
    """Run every pending cell, wave by wave; with ``dropping``, test between waves; then
    the pooled scores of complete configurations.

    Without dropping the waves are one queue (no barrier: workers never idle at a wave's
    end). With dropping, wave k+1 is planned only after wave k's decision is persisted.
    Returns the number of configuration fits performed.
    """
    state = cube.state()
    n_cfg, n_rep, n_splits = state.shape
    chunk = cube.config_chunk
    active = _active(cube)
    decided = {e["wave"] for e in cube.decisions()}
    stages = ([list(range(n_splits))] if dropping is None
              else _stages(cube.folds(), n_splits, dropping))
    run = _Executor(cube, client, estimator, configs, X, y, target, m, error_score,
                    progress, n_splits, token)
    run.cancel_on_exit = cancel_on_exit
    try:
        for stage in stages:
            run.execute(_WaveTasks(state, stage, active, chunk, run.rank), int(active.sum()))
            if dropping is None:
                continue
            state = cube.state()
            for k in stage:
                if k < n_splits - 1 and k not in decided:
                    active = _decide(cube, client, root, dropping, k, state, active, m, target)
                    state = cube.state()
        _pooled_pass(cube, client, m, target)
    finally:
        run.close()
    return run.fits


def _stages(folds, n_splits, dropping):
    """The waves run together between dropping decisions.

    After wave k the dropping test runs only once every repeat has ``min_predictions``
    out-of-fold predictions (a property of the folds alone, known before any fit); until
    then no configuration can be dropped, so those waves form one stage with no barrier.
    From the first tested wave on, each wave is its own stage."""
    stages, current = [], []
    for k in range(n_splits):
        current.append(k)
        if k == n_splits - 1 or _n_available(folds, k) >= dropping.min_predictions:
            stages.append(current)
            current = []
    return stages


def _n_available(folds, k):
    """Out-of-fold predictions per repeat after wave ``k`` (the fewest over repeats): the
    dropping test needs ``min_predictions`` of them."""
    return int((folds <= k).sum(axis=0).min())


def _active(cube):
    """Configurations that still train: not dropped."""
    return cube.dropped_waves()[0] < 0


def _decide(cube, client, root, dropping, k, state, active, m, target):
    """The dropping test after wave ``k``; persists the decision (whole) and returns the
    new active mask."""
    from .._lazy import lazy_dropping_test
    from .._random import child_seed

    # A configuration that failed somewhere has no usable column: it is not tested. Only
    # waves <= k count: the decision is the same whether later waves of a stage ran.
    idx = np.flatnonzero(active & ~np.any(state[:, :, :k + 1] == FAILED, axis=(1, 2)))
    folds = cube.folds()
    avail = folds <= k
    n_avail = _n_available(folds, k)
    entry = {"wave": int(k), "active_before": int(idx.size), "tested": False, "dropped": [],
             "p_hat": []}
    if idx.size < 2 or n_avail < dropping.min_predictions:
        entry["reason"] = ("one configuration" if idx.size < 2 else
                           f"{n_avail} predictions per repeat < min_predictions={dropping.min_predictions}")
        entry["active_after"] = int(active.sum())
        cube.record_decision(entry)
        return active
    # Chunked over the tested configurations, each task reading its chunks from the
    # store: the cube never has to fit one worker (or the driver).
    blocks, _ = cube.blocks(idx)
    res = lazy_dropping_test(
        client, blocks, cube.y(), avail, metric=m.name, alpha=dropping.alpha,
        n_bootstraps=dropping.n_bootstraps, seed=child_seed(root, "dropping", k),
        pos_label=target.pos_code, key=f"bbc-dropping-k{k}-{uuid.uuid4().hex[:8]}",
    )
    gone = idx[res.drop]
    new = active.copy()
    new[gone] = False
    entry.update(tested=True, best=int(idx[res.best]), dropped=[int(c) for c in gone],
                 p_hat=[float(p) for p in res.p_hat[res.drop]], active_after=int(new.sum()))
    cube.record_decision(entry)
    return new


def _pooled_pass(cube, client, m, target):
    """Pooled scores of complete configurations that have none yet, as tasks reading
    their chunks (the driver never loads predictions)."""
    from ..stats._blocks import chunk_pooled

    state = cube.state()
    complete = np.all(state == DONE, axis=(1, 2))
    need = np.flatnonzero(complete & np.isnan(cube.pooled()).any(axis=1))
    if not need.size:
        return
    blocks, _ = cube.blocks(need)
    y = cube.y()
    y_f = client.scatter(y, broadcast=False, hash=False) if len(blocks) > 1 else y
    futures = [client.submit(chunk_pooled, b, y_f, m.name, target.pos_code, pure=False,
                             key=f"bbc-pooled-{b.configs[0]}-{uuid.uuid4().hex[:8]}")
               for b in blocks]
    wait_done(futures)
    with deferred_interrupts():
        values = client.gather(futures)
    for b, v in zip(blocks, values):
        cube.record_pooled(b.configs, v)


class _Data:
    """Arrays on the cluster (X, y and the folds), scattered again whenever the
    scheduler lost them.

    ``scatter(broadcast=True)`` puts a copy on every worker, but Dask's memory manager
    trims replicas; if the one worker left holding the data dies, the scheduler cannot
    recompute it (scattered data has no task) and forgets it, cancelling every task that
    needs it. The executor then calls :meth:`refresh` and resubmits those tasks."""

    def __init__(self, client, *arrays, broadcast=True):
        self.client, self.arrays, self.broadcast = client, list(arrays), broadcast
        self.futures = None

    def refresh(self):
        if self.futures is None or any(f.status != "finished" for f in self.futures):
            # hash=False: a content-hashed key is shared with any earlier scatter of the same
            # data in this client, and its release by that run can lose our copy
            with deferred_interrupts():
                self.futures = self.client.scatter(self.arrays, broadcast=self.broadcast,
                                                   hash=False)
        return self.futures


def _result(fut):
    """``fut.result()`` that a Ctrl-C cannot cut in the middle: the wait for the task is
    interruptible, the transfer of its result is not (see :func:`deferred_interrupts`)."""
    wait_done([fut])
    with deferred_interrupts():
        return fut.result()


#: Resubmissions of one task after its data was lost before giving up.
MAX_RESUBMITS = 5


def _submit_with_data(client, fn, *args):
    """``fn(*args[:-2], X_future, y_future)`` on the cluster, surviving the loss of the data."""
    *head, X, y = args
    data = _Data(client, X, y, broadcast=False)
    for attempt in range(MAX_RESUBMITS + 1):
        X_f, y_f = data.refresh()
        fut = client.submit(fn, *head, X_f, y_f, pure=False, retries=3)
        try:
            return _result(fut)
        except CancelledError:
            if attempt == MAX_RESUBMITS:
                raise


#: Seconds between ledger writes while results arrive: one batched write, not one per task.
LEDGER_INTERVAL = 0.5
#: The run time a task aims at once blocks are timed: long enough that Dask's cost per
#: task (a few ms of client, scheduler and worker time, on the workers' cores when the
#: scheduler is local) is small next to the work. Measured (bench_cvt B, best of 3):
#: 0.3 s -> 1.06x GridSearchCV's time, 0.6 s -> 1.03x, 1.0 s -> 1.02x.
TARGET_TASK_SECONDS = 1.0
#: A task holds its blocks' predictions until it writes them: at most this many bytes.
TASK_PREDICTION_BYTES = 64 * 2**20
#: Tasks per worker thread kept for the end of a stage, so that the last tasks balance.
TAIL_TASKS_PER_THREAD = 3
#: Blocks whose fits take less than this are not reordered among themselves.
RANK_SECONDS = 0.01


class _Grouper:
    """Groups consecutive configuration blocks of one (repeat, fold) into tasks that should
    last about :data:`TARGET_TASK_SECONDS` (one block per task until a thread's worth of
    tasks reported), never so many blocks that fewer than :data:`TAIL_TASKS_PER_THREAD`
    tasks per thread remain to balance the end, nor more than
    :data:`TASK_PREDICTION_BYTES` of predictions (``block_bytes`` each). A block's
    predicted time is its configurations' measured fit time (``cost``) plus the mean
    per-block overhead seen so far (writing, scoring), or the mean block time where a fit
    time is unknown. Grouping only changes which task computes a block, never what it
    computes."""

    def __init__(self, tasks, n_blocks, n_threads, cost, block_bytes=0):
        self.fresh, self.left, self.n_threads = iter(tasks), n_blocks, n_threads
        self.cost = cost
        self.max_blocks = max(1, TASK_PREDICTION_BYTES // max(1, block_bytes))
        self.peek = None
        self.block_seconds, self.overhead, self.timed = 0.0, 0.0, 0

    def observe(self, elapsed, n_blocks, fit_seconds=0.0):
        # running means per block over the tasks so far
        n = self.timed + n_blocks
        self.block_seconds = (self.block_seconds * self.timed + elapsed) / n
        self.overhead = (self.overhead * self.timed + max(0.0, elapsed - fit_seconds)) / n
        self.timed = n

    def predict(self, task):
        """Predicted seconds of one block."""
        fit = self.cost[task[2]].sum()
        return float(fit) + self.overhead if np.isfinite(fit) else self.block_seconds

    def next(self):
        """The next group: a list of (k, r, cfgs) of one (k, r), or None when done."""
        first = self.peek if self.peek is not None else next(self.fresh, None)
        self.peek = None
        if first is None:
            return None
        group = [first]
        if self.timed >= self.n_threads and self.block_seconds > 0:
            limit = min(self.max_blocks,
                        max(1, self.left // (TAIL_TASKS_PER_THREAD * self.n_threads)))
            total = self.predict(first)
            while len(group) < limit and total < TARGET_TASK_SECONDS:
                task = next(self.fresh, None)
                if task is None:
                    break
                if task[:2] != first[:2]:
                    self.peek = task
                    break
                group.append(task)
                total += self.predict(task)
        self.left -= len(group)
        return group


class _Executor:
    """Submits tasks with a bounded number in flight; tasks write their predictions
    themselves, the results they return (fit times, failures, fold scores) are recorded
    in the ledger in batches."""

    def __init__(self, cube, client, estimator, configs, X, y, target, m, error_score,
                 progress, n_splits, token=None):
        self.cube, self.client, self.estimator = cube, client, estimator
        self.configs = configs
        self.spec = (m.name, target.classes, target.pos_code,
                     len(target.classes) if m.needs_class_axis else 0, error_score)
        self.n_splits = n_splits
        self.writer = cube.writer(token if token is not None else (lambda: None))
        self.chunk = cube.config_chunk
        self.data = _Data(client, X, y, cube.folds())
        self.progress = progress
        self.bar = None
        self.fits = 0
        self.cancel_on_exit = True
        self.batch, self.flushed = [], time.monotonic()
        # what a resumed run knows of each configuration's cost before timing any
        self.cost = cube.mean_fit_times()
        self.block_bytes = cube.chunk_nbytes

    def rank(self, blocks):
        """``blocks`` (config index arrays of one (wave, repeat)) in the order to run them:
        blocks never timed first (in their order), then by measured fit time, longest
        first, in classes of a factor of 2 above 10 ms (blocks of alike cost keep their
        order, so that grouped blocks stay contiguous in the store)."""
        cost = np.array([self.cost[b].sum() for b in blocks])
        with np.errstate(divide="ignore", invalid="ignore"):
            klass = np.floor(np.log2(np.maximum(cost, RANK_SECONDS) / RANK_SECONDS))
        klass[~np.isfinite(cost)] = np.inf
        return [blocks[i] for i in np.argsort(-klass, kind="stable")]

    def _submit(self, group):
        k, r, first = group[0]
        X_f, y_f, folds_f = self.data.refresh()
        params, places = [], []
        for _, _, cfgs in group:
            c0 = int(cfgs[0]) // self.chunk * self.chunk
            params.append(self.configs.take(cfgs))
            places.append((c0, np.asarray(cfgs) - c0))
        return self.client.submit(
            fit_write_blocks, self.estimator, params, X_f, y_f, folds_f, self.spec,
            self.writer, r, k, places,
            key=f"bbc-fit-r{r}-k{k}-c{first[0]}-n{len(group)}-{uuid.uuid4().hex[:8]}",
            retries=3, pure=False,
        )

    def execute(self, tasks, n_active):
        from distributed import as_completed

        n_tasks = len(tasks)
        if not n_tasks:
            return
        with deferred_interrupts():
            n_threads = max(1, sum(self.client.nthreads().values()))
        max_in_flight = 2 * n_threads + 2  # keeps workers busy; bounds driver memory
        if self.progress and self.bar is None:
            self.bar = _bar(0, True)
        if self.bar is not None:
            self.bar.total += n_tasks
            self.bar.set_postfix(active=n_active)
            self.bar.refresh()
        groups = _Grouper(tasks, n_tasks, n_threads, self.cost, self.block_bytes)
        retry = deque()  # (group, tries) whose data was lost: before any fresh group
        ac = as_completed()
        meta = {}
        try:
            while True:
                while len(meta) < max_in_flight:
                    if retry:
                        group, tries = retry.popleft()
                    else:
                        group, tries = groups.next(), 0
                        if group is None:
                            break
                    fut = self._submit(group)
                    meta[fut.key] = (group, tries, fut)
                    ac.add(fut)
                if not meta:
                    break
                fut = next(ac)
                group, tries, _ = meta.pop(fut.key)
                try:
                    res = _result(fut)
                except CancelledError:
                    # its data was lost with a worker: scatter again and resubmit
                    if tries >= MAX_RESUBMITS:
                        raise
                    retry.append((group, tries + 1))
                    continue
                for task, part in zip(group, res.get("done", res.get("parts", []))):
                    self._record(task, part)
                if "parts" not in res:  # a store problem or error_score="raise"
                    self._record(group[len(res["done"])], res)
                groups.observe(res["elapsed"], len(group),
                               sum(float(np.nansum(p["fit_time"])) for p in res.get("parts", [])))
                if not meta or time.monotonic() - self.flushed >= LEDGER_INTERVAL:
                    self.flush()
        finally:
            # What finished is recorded whatever stops the run: its chunks are written.
            self.flush()
            # Interrupted or failed: nothing is left running for this study on a cluster we
            # do not own. Ours is about to be closed; releasing the futures cancels their
            # tasks, which its workers would report one by one: silence them first.
            with deferred_interrupts():
                if meta and self.cancel_on_exit:
                    self.client.cancel([m[2] for m in meta.values()])
                elif meta:
                    with contextlib.suppress(Exception):
                        self.client.run(_silence_distributed_logs)

    def _record(self, task, res):
        k, r, cfgs = task
        if "store_problem" in res:
            from ..cube import StoreLockedError
            from ..exceptions import StoreFullError

            kind, text = res["store_problem"]
            raise (StoreFullError if kind == "StoreFullError" else StoreLockedError)(text)
        if "raise_" in res:
            j, text, tb = res["raise_"]
            c = int(cfgs[j])
            raise StudyError(
                f"Configuration {c} ({self.configs[c]!r}) raised on repeat {r}, fold {k} "
                f"(error_score='raise'): {text}\n{tb}"
            )
        self.batch.append(dict(res, r=r, k=k, configs=cfgs))
        self.cost[cfgs] = res["fit_time"]
        self.fits += len(cfgs)
        if self.bar is not None:
            self.bar.set_description(f"wave {k + 1}/{self.n_splits}")
            self.bar.update(1)

    def flush(self):
        """Write the batch of recorded results to the ledger (one write per array)."""
        batch, self.batch = self.batch, []
        self.cube.record(batch)
        self.flushed = time.monotonic()

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _bar(total, progress):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="task", desc="wave 1", file=sys.stderr, dynamic_ncols=True,
                mininterval=0.5)
