"""The engine's run of a study — a CVT, or nested CV's inner CVs as the cube's repeats:
arguments checked, the store opened or created under its run lock, the waves run, the
winner refit. Resumable from the store."""
from __future__ import annotations

import dataclasses
import signal
import sys
import threading
import time
from typing import NamedTuple

import numpy as np
import uuid

from .. import _dask_logs as dask_logs
from .. import _validation as validation
from .._random import as_seed_sequence, entropy_of
from .._signals import signals_as_interrupts
from ._differs import blind_parameters, spec_differences
from ..cube import PENDING, fitted_cells, settle_ledger
from ..exceptions import (
    OldSchemaError,
    StoreDamagedError,
    StoreMismatchError,
    StudyInterrupted,
)
from . import _plan as plan
from ._messages import FitWork, WaveSettings
from ._phases import Phases
from ._stop import Budget, incomplete_bbc, stopped_message
from ._tasks import refit
from ._waves import run_waves, submit_with_data
from .._doors import DIFFERENCES, spelled, the_parameter, warn

__all__ = ["CVTRun", "run_cvt"]


@dataclasses.dataclass(frozen=True)
class CellTimes:
    """Seconds of each cell (C, R, K) that a run fitted, as ``GridSearchCV`` splits them:
    ``fit`` the fit alone, ``score`` the prediction of the test fold, the fitted model's
    own scores and the cell's share of its block's fold scoring (NaN for cells the run did
    not fit; the store records the fit and the prediction together, ``fit_time``)."""

    fit: np.ndarray
    score: np.ndarray

    @classmethod
    def empty(cls, shape):
        return cls(np.full(shape, np.nan), np.full(shape, np.nan))


class CVTRun(NamedTuple):
    """What a run leaves besides its store: the final model it refit (None if it did not),
    the configurations as objects, the number of fits it ran and the cube it had open."""

    location: object
    final_model: object
    configs: object
    fits: int
    cube: object
    warned: dict | None = None  # the fits' warnings: {(module, class, text): count}
    #: seconds of each phase of the run, in order (see :class:`Phases`)
    phases: dict | None = None
    #: the fit and score seconds of the cells this run fitted (:class:`CellTimes`)
    score_times: object = None


def run_cvt(request):
    """Run or resume the study of a :class:`~bbc_dask.engine.StudyRequest` in its store,
    under the run lock, and refit the winner. Returns a :class:`CVTRun`."""
    return _StudyRun(request).run()


#: How many of the differences a store holding another study names in its message.
SHOWN_DIFFERENCES = 5


class _StudyRun:
    """One study request run: everything that touches the store happens here, under the
    store's run lock."""

    def __init__(self, request):
        self.request = request
        self.loc = request.location
        self.cube = None
        self.root = None  # the seed, once decided (a resume with None reuses the stored one)
        self.configs = None
        self.token = None
        self.fits = 0
        self.score_times = None
        self.warned = {}
        self.phases = Phases()
        self.warming = []  # the workers' warm-up futures (see _warm_workers)
        self.started = time.monotonic()  # the Stop rule's max_seconds count from here
        self.stopped = None  # the StopRecord of a run its Stop rule stopped

    # ------------------------------------------------------------------ flow
    def run(self):
        from ..cube import writing

        ex = self.request.execution
        final = None
        lock = client_obj = owned = None
        failed = False
        phase = self.phases
        with phase("plan"):
            finished = self.precheck()
        try:
            with signals_as_interrupts():
                if self.loc.exists():
                    # a study's lock first: a watch of the store (bbc-dask status --watch)
                    # reads the run as starting while its cluster starts. A new store is
                    # made only once the cluster is reached: one that cannot be leaves no
                    # trace (a watch waits for the store meanwhile).
                    with phase("store"), writing(self.loc.url):
                        lock = self.loc.lock().acquire()
                if finished:
                    # nothing left to fit: the cluster is started only if something still
                    # asks for it (a pooled score or the final model a kill left unsaved)
                    client_obj = _OnDemand(lambda: _client(ex.client, ex.progress, ex.security))
                    from distributed import Client

                    owned = not isinstance(ex.client, Client)  # as resolve_client decides
                else:
                    with phase("connect"):
                        client_obj, owned = _client(ex.client, ex.progress, ex.security)
                        # held for the run: a released future's task may never start
                        self.warming = _warm_workers(client_obj, self.request.estimator)
                with phase("store"):
                    if lock is None:
                        with writing(self.loc.url):
                            lock = self.loc.lock().acquire()
                    self._open_or_create(lock)
                    self._announce()
                self._run_waves(client_obj, cancel_on_exit=not owned)
                with phase("winner"):
                    self.request.protocol.check_failures(self.cube)
                    final = self.request.protocol.after_waves(self, client_obj)
        except KeyboardInterrupt as exc:
            failed = True
            raise self._interrupted(exc) from None
        except BaseException:
            failed = True
            raise
        finally:
            t0 = time.perf_counter()
            self.warming = []
            try:
                _quietly_close(client_obj, owned, ex.client, keep_going=failed)
            finally:
                if lock is not None:
                    lock.release()
                phase.add("close", time.perf_counter() - t0)
        self.cube.bind_lock(_released)  # the study reads it; a write without the lock fails
        return CVTRun(self.loc, final, self.configs, self.fits, self.cube, self.warned,
                      phase.seconds, self.score_times)

    def _open_or_create(self, lock):
        """Decide, under the lock, whether the store is new, ours to resume, or another
        study's; create it if new."""
        from ..cube import inspect_store

        try:
            kind, existing = inspect_store(self.loc)
        except StoreDamagedError:
            if not self.request.execution.overwrite:
                raise
            kind, existing = "interrupted", None  # a damaged study, replaced as asked
        except StoreMismatchError as exc:
            if not (self.request.execution.overwrite and isinstance(exc, OldSchemaError)):
                raise _unusable(self.loc, exc) from None
            kind, existing = "interrupted", None  # an older layout, replaced as asked
        if existing is not None and self.request.execution.overwrite:
            existing, kind = None, "interrupted"
        spec = self._plan(existing)  # before any wipe: a bad plan leaves the old study
        if kind == "interrupted":
            self.loc.wipe()
        self.cube = existing if existing is not None else self._create(spec)
        self.cube.bind_lock(lock.check)
        self.token = lock.token()
        # a store made before stores described themselves gets it now
        self.cube.describe(lambda: self.configs.columns(self.request.metadata))
        self.cube.record_classes(spec["classes"])  # nor its estimators' classes
        if existing is not None:
            # every ledger chunk as the study recorded it, before this run writes any (a
            # rerun must never record an edit as the study's own); a killed run's pending
            # checksums committed (cube/_ledger_check.py). A store created just now holds
            # its template, whose checksums its creation wrote.
            settle_ledger(self.cube)
        self.cube.apply_decisions()  # a kill between a decision and its cells: finish it
        self.cube.begin_run()

    def precheck(self):
        """Refuse, before taking the lock and without writing anything, a store that holds
        another study or no study at all. Only a refusal is decided here: whether to
        create, resume or replace is decided again under the lock. Returns whether the
        store holds this study with no cell left to fit (its rerun needs no cluster)."""
        from ..cube import inspect_store

        try:
            kind, existing = inspect_store(self.loc, read_only=True)
        except StoreDamagedError:
            if self.request.execution.overwrite:
                return  # a damaged study, replaced as asked
            raise
        except StoreMismatchError as exc:
            if self.request.execution.overwrite and isinstance(exc, OldSchemaError):
                return  # a study of an older layout, replaced as asked
            raise _unusable(self.loc, exc) from None
        if kind == "study":
            self._plan(None if self.request.execution.overwrite else existing)
        req = self.request
        req.protocol.before_lock(self, planned=kind == "study")
        finished = (kind == "study" and not self.request.execution.overwrite
                    and not (existing.state() == PENDING).any())
        if not finished:
            # strings or missing values in X that no configuration takes: said now, by a
            # fit on a few rows, rather than by every fit of the first wave
            from ._xcheck import check_columns

            if self.configs is None:
                self._plan(None)
            check_columns(req.estimator, self.configs, req.data.X, req.data.y,
                          req.metric.is_classification)
        return finished

    def _plan(self, existing):
        """Seed, configurations and spec; refuses an ``existing`` study that differs."""
        req = self.request
        if req.random_state is None and existing is not None:
            ent = existing.spec["seed"]  # a resume with None reuses the stored seed
            self.root = np.random.SeedSequence(int(ent["entropy"]), spawn_key=tuple(ent["spawn_key"]))
        elif self.root is None:  # once: a Generator is consumed by it
            self.root = as_seed_sequence(req.random_state)
        search = req.search
        self.configs, kind = plan.candidates(search.param_grid, search.param_distributions,
                                             search.n_iter, self.root)
        if kind == "random":
            plan.check_estimator_methods(req.estimator, self.configs, req.metric,
                                         data=(req.data.X, req.data.y, req.metric.is_classification))
        # a store keeps the fingerprint's encoding it was written with (stores made before
        # lazy planning fingerprinted the list of parameter dicts)
        spec = self._spec(kind, version=plan.FINGERPRINT if existing is None
                          else existing.spec.get("fingerprint", 1),
                          listed=existing is not None and existing.listed_params is not None)
        if existing is not None:
            diffs = spec_differences(existing.spec, existing.configurations, spec,
                                     self.configs.describe(), self.request.metadata)
            if diffs:
                raise self._mismatch(existing, diffs)
            blind = blind_parameters(existing.spec)
            if blind:
                shown = ", ".join(blind[:3]) + (f" and {len(blind) - 3} more" if len(blind) > 3 else "")
                warn(f"The store {self.loc.url!r} was written before studies recorded every "
                     f"value in full: {shown} were recorded by a repr naming an object's "
                     f"class alone, so a change of their settings would not be seen. Resume "
                     f"only with the same settings (or {spelled('overwrite=True')} to start "
                     f"afresh).", UserWarning, stacklevel=2)
        return spec

    def _mismatch(self, existing, diffs):
        """The refusal of a store holding another study: the two studies' names (a study
        file's), then the first few differences, most telling first (a new estimator
        changes dozens of keys: :func:`spec_differences` orders them); all of them in the
        exception's ``differences``."""
        names = [(m or {}).get("name") if isinstance(m, dict) else None
                 for m in (existing.metadata, self.request.metadata)]
        who = "a different study"
        if any(names):
            who = (f"the study {names[0]!r}, not {names[1]!r}" if names[0] != names[1]
                   else f"another study named {names[0]!r}")
        shown = "; ".join(diffs[:SHOWN_DIFFERENCES])
        more = len(diffs) - SHOWN_DIFFERENCES
        if more > 0:
            shown += f"; and {more} more (all of them: {spelled(DIFFERENCES)})"
        hint = ""
        if any(d.startswith("dropping.test_last_wave (stored False") for d in diffs):
            hint = (" A BBCD study stored before test_last_wave existed did not test "
                    "after its last wave: resume it with Dropping(test_last_wave=False) "
                    "(a study file: dropping: {test_last_wave: false}).")
        return StoreMismatchError(
            f"The store {self.loc.url!r} holds {who}; refusing to mix them. "
            f"What differs: {shown}. Use another store, or "
            f"{spelled('overwrite=True')} to replace it.{hint}", differences=diffs)

    def _spec(self, search, version=plan.FINGERPRINT, listed=False):
        from ..cube import to_json

        req = self.request
        target, dropping, protocol = req.data.target, req.dropping, req.protocol
        digests = req.data.digests
        fit_scoring = req.data.fit_scoring
        return to_json({
            "metric": req.metric.name,
            # a make_scorer's description (function, kwargs, sign, response method): a
            # store reopened rebuilds it for a function of sklearn.metrics alone
            **({} if req.metric.spec is None else {"scorer": req.metric.spec}),
            "pos_label": None if target.pos_code is None else validation.plain(target.classes[target.pos_code]),
            "n_splits": protocol.n_splits,
            "n_repeats": protocol.n_repeats,
            "search": search,
            "n_iter": req.search.n_iter if search == "random" else None,
            "error_score": "raise" if isinstance(req.error_score, str) else "nan",
            "seed": entropy_of(self.root),
            "data": {"X": digests.X, "y": digests.y, "groups": digests.groups,
                     "n_samples": len(req.data.y),
                     # recorded only with fit parameters: a store from before has none
                     **({} if req.data.fit_digest is None
                        else {"fit_params": req.data.fit_digest}),
                     **({} if fit_scoring is None or not fit_scoring.params
                        else {"score_params": plan.params_digest(fit_scoring.params,
                                                                 fit_scoring.routing)})},
            # scores of the fitted fold models (BBCSearchCV's scorers the stored
            # predictions cannot give): recorded only in a study that has them
            **({} if fit_scoring is None else {"fit_scorers": fit_scoring.describe()}),
            # how the values below are encoded: recorded from version 2 on
            **({} if version < 2 else {"fingerprint": version}),
            "estimator": plan.describe_estimator(req.estimator, version),
            "classes": plan.describe_classes(req.estimator, self.configs),
            "candidates": plan.candidates_digest(self.configs, version, listed),
            "dropping": None if dropping is None else {
                "alpha": dropping.alpha, "n_bootstraps": dropping.n_bootstraps,
                "min_predictions": dropping.min_predictions,
                "test_last_wave": dropping.test_last_wave},
            # recorded only when not the default: a store from before it is "pooled"
            **({} if req.selection.pooled else {"selection": req.selection.name}),
            # the user's own splits: their digest (K-fold's follow from the seed)
            **protocol.describe(),
        })

    def _create(self, spec):
        from ..cube import create_cube

        req = self.request
        metric, target, protocol = req.metric, req.data.target, req.protocol
        folds = protocol.folds(req.data.y, req.data.groups, metric.is_classification, self.root)
        n_cfg = len(self.configs)
        per_task = req.execution.configs_per_task
        return create_cube(
            self.loc, n_configs=n_cfg, n_repeats=protocol.n_repeats, n_splits=protocol.n_splits,
            folds=folds, y_stored=target.codes if metric.is_classification else target.values,
            classes=target.classes,
            n_classes_axis=len(target.classes) if metric.needs_class_axis else 0,
            config_chunk=min(protocol.default_block(n_cfg) if per_task is None else per_task, n_cfg),
            meta={"spec": spec,
                  "classes": None if target.classes is None else target.classes.tolist(),
                  "configurations": self.configs.describe(), "versions": _versions(),
                  "runs": [], "metadata": req.metadata},
            config_coords=self.configs.columns(req.metadata),
            fit_scorers=() if req.data.fit_scoring is None else req.data.fit_scoring.labels,
        )

    def _announce(self):
        if not self.request.execution.progress:
            return
        st = self.cube.state()
        n_cfg, n_rep, n_spl = st.shape
        pending = int((st == PENDING).sum())
        tasks = -(-n_cfg // self.cube.config_chunk) * n_rep * n_spl
        shape = self.request.protocol.shape_text(st)
        print(f"bbc_dask: {n_cfg:,} configurations x {shape} in up to {tasks:,} tasks; "
              f"{st.size - pending:,} already done; store {self.loc.url}", file=sys.stderr)

    def _run_waves(self, client, cancel_on_exit):
        req = self.request
        self.score_times = CellTimes.empty((len(self.configs), req.protocol.n_repeats,
                                            req.protocol.n_splits))
        work = FitWork(req.estimator, self.configs, req.data.X, req.data.y, req.data.target,
                       req.metric, req.error_score, req.data.shipped())
        stop, budget = req.execution.stop, None
        if stop is not None:
            budget = Budget(stop, fitted_cells(self.cube.state()), self.started,
                            lambda: incomplete_bbc(self.cube, client, stop))
        settings = WaveSettings(
            req.execution.progress, cancel_on_exit, self.token,
            stop_if_all_failed=req.protocol.stops_when_all_failed,
            warned=self.warned, phases=self.phases, score_times=self.score_times,
            budget=budget)
        self.fits = run_waves(self.cube, client, work, settings, req.dropping, self.root,
                              pooled=req.protocol.needs_pooled(req.selection))
        with self.phases("ledger"):
            st = self.cube.state()
            self.stopped = None if budget is None or not (st == PENDING).any() \
                else budget.record(fitted_cells(st))
            said = {} if self.stopped is None else {"stopped": self.stopped.to_json()}
            self.cube.end_run(finished=time.strftime("%Y-%m-%dT%H:%M:%S"), fits=self.fits,
                              **said)
        if self.stopped is not None and req.execution.progress:
            print(stopped_message(self.stopped, st), file=sys.stderr)

    def plan_new(self):
        """Plan the study's seed and configurations as for a new store."""
        self._plan(None)

    def refit_winner(self, client):
        """The selected configuration refit on all data and saved in the store (None where
        the store holds its model already, as after a rerun of a finished study, or where
        none can be selected). A study stopped by its rule has its incomplete CV's winner
        (see :func:`~bbc_dask.cube.select_winner`); a rerun that completes it refits only
        if the winner changed."""
        from ..cube import save_model
        from ..cube import select_winner

        best = select_winner(self.cube)
        saved = self.cube.final_model_record
        if best is None or (saved is not None and saved["config"] == best):
            return None
        req = self.request
        model, seconds = submit_with_data(client, refit, req.estimator, self.configs[best],
                                          X=req.data.X, y=req.data.y, shipped=req.data.shipped())
        self.cube.save_final_model(best, seconds, save_model(self.cube.location, model))
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


def _released():
    raise RuntimeError("the run's lock is released: its cube is read-only (open the store "
                       "again through run_study to write)")


def _unusable(loc, exc):
    if isinstance(exc, OldSchemaError):
        return OldSchemaError(f"{the_parameter('store')}: {exc}")
    return StoreMismatchError(f"{the_parameter('store')} points to {loc.url!r}, which exists and "
                      f"is not a bbc_dask study store; refusing to touch it.")


def _versions():
    import dask
    import sklearn
    import zarr

    import bbc_dask

    return {"bbc_dask": bbc_dask.__version__, "scikit-learn": sklearn.__version__,
            "dask": dask.__version__, "zarr": zarr.__version__, "numpy": np.__version__,
            "python": sys.version.split()[0]}


class _OnDemand:
    """A run's client started at its first use, for a rerun of a finished study: asking
    again for a study that is done answers in a second rather than after a cluster's start
    (seconds to tens of seconds). ``started`` is the ``(client, owned)`` of
    :func:`_client` once started, else None."""

    def __init__(self, start):
        self._start = start
        self.started = None

    def __getattr__(self, name):
        if self.started is None:
            self.started = self._start()
        return getattr(self.started[0], name)


def _warm_workers(client, estimator):
    """``warm_up`` submitted to every worker (not waited for; the futures are returned to
    be held for the run): fresh workers import while the driver opens the store."""
    from ._tasks import warm_up

    try:
        workers = list(client.scheduler_info().get("workers", {}))
        return [client.submit(warm_up, estimator, workers=[w], allow_other_workers=True,
                              pure=False, key=f"bbc-warm-{uuid.uuid4().hex[:12]}")
                for w in workers]
    except Exception:  # noqa: BLE001 - only a head start: the tasks import what they need
        return []


def _client(client, progress, security):
    from ..cluster import resolve_client

    c, owned = resolve_client(client, security=security)
    if progress and (client is None or (isinstance(client, dict) and client.get("kind") == "local")):
        print(f"bbc_dask: started a local Dask cluster; dashboard: {c.dashboard_link}",
              file=sys.stderr)
    return c, owned


def _quietly_close(client_obj, owned, given, keep_going=False):
    """Close a client (and the cluster) the run started; a second Ctrl-C while closing
    is ignored so that the workers are not left behind. The cluster's own logs are
    silenced while it closes: after an interrupt or a stop its workers would report
    every task cancelled by the shutdown, and a worker still inside a cancelled fit is
    killed after 4 s with a warning ("Worker process still alive after 4.0 seconds,
    killing") — nothing is lost (every finished result is recorded before this) and
    nothing is left to do. With ``keep_going`` (the run is already failing), an error
    while closing is reported as a warning, not raised over the first one."""
    if isinstance(client_obj, _OnDemand):
        if client_obj.started is None:
            return  # never started: nothing to close
        client_obj, owned = client_obj.started
    if not owned or client_obj is None:
        return
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        from ..cluster import close_client

        with dask_logs.quiet():
            close_client(client_obj, close_cluster=given is None or isinstance(given, dict))
    except Exception as exc:
        if not keep_going:
            raise
        warn(f"closing the run's cluster failed: {exc!r}", RuntimeWarning, stacklevel=2)
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)


