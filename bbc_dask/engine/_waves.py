"""The waves of a CVT run: fold waves of tasks on the cluster, grouped and ordered by
measured fit times, the BBCD dropping test between them, the results recorded in the
ledger as they arrive."""
from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
import uuid
from collections import deque
from concurrent.futures import CancelledError

import numpy as np

from .. import _tuning as tuning
from .. import _dask_logs as dask_logs
from .._signals import deferred_interrupts, raise_swallowed, wait_done
from ..cube import FAILED, PENDING, LedgerRows
from ..exceptions import StoreFullError, StoreLockedError, StudyError
from ._phases import Phases
from ._pooled import PooledAlong, pooled_pass
from ._sizing import ClusterSize, DriverCost, Grouper, Queue, adaptive_seconds
from ._messages import FitInFlight, Placement, PlannedBlock, PooledInFlight, TaskScoring
from ._stop import cancel_unstarted, cells as _cells
from ._tasks import fit_write_blocks
from .._doors import carried


class _WaveTasks:
    """The tasks of some waves: per wave, repeat and configuration chunk, the pending
    active configurations. Counted and generated one (wave, repeat) at a time: a
    million-configuration study never holds its task specs, nor its pending indices of
    every wave at once.

    Within a (wave, repeat) the blocks come in the order ``rank`` gives (most expensive
    first, see :meth:`_Executor.rank`), so that a stage ends on its cheap blocks rather
    than waiting for one long fit started last. The order decides only which block runs
    when, never what any block computes."""

    def __init__(self, state, waves, active, chunk, rank=None, dropped_after=None):
        self.state, self.waves, self.active, self.chunk = state, list(waves), active, chunk
        self.rank = rank
        #: the wave after which each configuration was dropped (-1: never): its cells of
        #: that wave and before were trained before the drop, and one a repair reset pending
        #: is trained again (the study then equals one never damaged)
        self.dropped_after = dropped_after

    def _pending(self):
        for k in self.waves:
            trains = self.active if self.dropped_after is None else \
                self.active | (self.dropped_after >= k)
            for r in range(self.state.shape[1]):
                todo = np.flatnonzero(trains & (self.state[:, r, k] == PENDING))
                if todo.size:
                    yield k, r, todo

    def __len__(self):
        return sum(int(np.count_nonzero(np.diff(t // self.chunk))) + 1 for *_, t in self._pending())

    def cells_by_wave(self):
        """``{wave: cells to fit}`` (the waves with some)."""
        out = {}
        for k, _, todo in self._pending():
            out[k] = out.get(k, 0) + int(todo.size)
        return out

    def __iter__(self):
        for k, r, todo in self._pending():
            bounds = np.concatenate([[0], np.flatnonzero(np.diff(todo // self.chunk)) + 1, [todo.size]])
            blocks = [todo[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
            for cfgs in (blocks if self.rank is None else self.rank(blocks)):
                yield PlannedBlock(k, r, cfgs)


def run_waves(cube, client, work, settings, dropping=None, root=None, pooled=True):
    """Run every pending cell of ``work`` (a :class:`~._messages.FitWork`), wave by wave,
    as ``settings`` (a :class:`~._messages.WaveSettings`) say; with ``dropping``, test
    between waves (seeded from ``root``); then (``pooled``) the pooled scores of complete
    configurations.

    With ``settings.stop_if_all_failed`` the run stops (tasks in flight cancelled, no
    pooled pass) as soon as every active configuration has a failed cell; the caller then
    reports the failure. The fits' warnings are counted into ``settings.warned`` (each task
    collects its own, see ``_fit_warnings.collected_warnings``); ``settings.phases``
    receives the seconds of the waves, the last ledger batch, the dropping decisions and
    the pooled pass.

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
    if settings.phases is None:
        settings = dataclasses.replace(settings, phases=Phases())
    phases, m, target = settings.phases, work.metric, work.target
    run = _Executor(cube, client, work, settings, n_splits,
                    # scored as their blocks complete, among the waves' tasks (no pass at the end)
                    PooledAlong(cube, client, m, target, state) if pooled and dropping is None else None,
                    np.any(state == FAILED, axis=(1, 2)) if settings.stop_if_all_failed else None)
    if run.all_failed(active):  # a resume of a study that failed everywhere
        return 0
    try:
        for stage in stages:
            with phases("waves"):
                run.execute(_WaveTasks(state, stage, active, chunk, run.rank,
                                       cube.dropped_waves()[0]), int(active.sum()))
            if run.all_failed(active):
                return run.fits
            if run.stopped():
                break  # the Stop rule held: no decision, no further wave (a rerun goes on)
            if dropping is None:
                continue
            with phases("decisions"):
                state = cube.state()
                for k in stage:
                    if (k < n_splits - 1 or dropping.test_last_wave) and k not in decided:
                        active = _decide(cube, client, root, dropping, k, state, active, m,
                                         target)
                        state = cube.state()
        if pooled:
            with phases("pooled"):
                pooled_pass(cube, client, m, target)
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
    from .._random import child_seed
    from ..chunked import lazy_dropping_test

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
    # store: the cube never has to fit one worker (or the driver). A pointwise metric goes
    # by runs of sample blocks (the table), so that a task's memory does not grow with N.
    blocks, table = cube.between_waves(idx, k)
    res = lazy_dropping_test(
        client, blocks, cube.y(), avail, metric=m.name, alpha=dropping.alpha,
        n_bootstraps=dropping.n_bootstraps, seed=child_seed(root, "dropping", k),
        pos_label=target.pos_code, key=f"bbc-dropping-k{k}-{uuid.uuid4().hex[:8]}",
        source=table, best=_fold_mean_best(cube, idx, k),
    )
    gone = idx[res.drop]
    new = active.copy()
    new[gone] = False
    entry.update(tested=True, best=int(idx[res.best]), dropped=[int(c) for c in gone],
                 p_hat=[float(p) for p in res.p_hat[res.drop]], active_after=int(new.sum()))
    cube.record_decision(entry)
    return new


def _fold_mean_best(cube, idx, k):
    """θo of a study that selects by the mean fold score (``selection="fold_mean"``): the
    best mean of the ledger's fold scores of waves 0..k among ``idx`` (its position
    there), so that the test never drops the configuration the study would select now;
    None for a study that selects by the pooled score (the test's own θo)."""
    if cube.selection.pooled:
        return None
    fs = cube.fold_scores()[idx][:, :, : k + 1]  # (c, R, k+1): every cell done
    best = cube.selection.winner(None, lambda: fs.reshape(idx.size, -1).T)
    return None if best < 0 else best  # an undefined fold score: the pooled θo


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




def submit_with_data(client, fn, *head, X, y, shipped):
    """``fn(*head, X_future, y_future, shipped_future)`` on the cluster, surviving the
    loss of the data (``shipped`` a :class:`~._messages.ShippedFit`, or None)."""
    data = _Data(client, X, y, *([shipped] if shipped is not None else []), broadcast=False)
    for attempt in range(tuning.MAX_RESUBMITS + 1):
        X_f, y_f, *p_f = data.refresh()
        fut = client.submit(carried(fn), *head, X_f, y_f, *p_f, pure=False, retries=3)
        try:
            return _result(fut)
        except CancelledError:
            if attempt == tuning.MAX_RESUBMITS:
                raise




class _Executor:
    """Submits tasks with a bounded number in flight; tasks write their predictions
    themselves, the results they return (fit times, failures, fold scores) are recorded
    in the ledger in batches."""

    def __init__(self, cube, client, work, settings, n_splits, pooled=None, failed=None):
        self.cube, self.client, self.estimator = cube, client, work.estimator
        self.configs = work.configs
        self.scoring = TaskScoring.of(work.metric, work.target, work.error_score)
        self.n_splits = n_splits
        self.writer = cube.writer(settings.token if settings.token is not None else (lambda: None))
        self.chunk = cube.config_chunk
        # fit parameters travel as X and y do: scattered once, each task slices its rows
        self.data = _Data(client, work.X, work.y, cube.folds(),
                          *([work.shipped] if work.shipped is not None else []))
        self.progress = settings.progress
        self.bar = None
        self.wave_shown = 0
        self.fits = 0
        self.cancel_on_exit = settings.cancel_on_exit
        self.warned = settings.warned  # the fits' warnings, over all tasks
        self.failed = failed  # (n_configs,) has a failed cell, when failing everywhere stops the run
        self.batch, self.flushed = [], time.monotonic()
        # what a resumed run knows of each configuration's cost before timing any
        self.cost = cube.mean_fit_times()
        self.score_times = settings.score_times  # a CellTimes of the cells run here, or None
        self.block_bytes = cube.chunk_nbytes
        self.phases = settings.phases
        self.pooled = pooled  # a PooledAlong when pooled scores are computed along the waves
        self.budget = settings.budget  # the Stop rule's Budget, or None
        self.in_flight = 0  # cells submitted and not yet recorded
        self.wave_left = {}  # cells of each wave this stage has yet to record
        self.completed = False  # a wave's last cell was recorded since the last check
        self.unstarted_cancelled = False

    def stopped(self):
        """Whether the run's Stop rule held (nothing more is submitted)."""
        return self.budget is not None and self.budget.reason is not None

    def _on_stop(self, table):
        """Once the Stop rule holds (once): by the width or the time, the fit tasks no
        worker started are not owed and are cancelled; ``max_fits`` submitted nothing
        beyond its budget, so all of its tasks finish."""
        if not self.stopped() or self.unstarted_cancelled:
            return
        self.unstarted_cancelled = True
        if self.budget.reason != "max_fits":
            cancel_unstarted(self.client, [e.future for e in table.values()
                                           if isinstance(e, FitInFlight)])

    def _check_width(self):
        """A fold wave is complete: the width rule, which reads the store, once the
        wave's last cells are written."""
        self.flush()
        self.completed = False
        self.budget.wave_complete()

    def _may_submit(self):
        """Whether more tasks may be submitted now (the Stop rule's time is checked)."""
        return self.budget is None or not (self.stopped() or self.budget.out_of_time())

    def rank(self, blocks):
        """``blocks`` (config index arrays of one (wave, repeat)) in the order to run them:
        blocks never timed first (in their order), then by measured fit time, longest
        first, in classes of a factor of 2 above 10 ms (blocks of alike cost keep their
        order, so that grouped blocks stay contiguous in the store)."""
        cost = np.array([self.cost[b].sum() for b in blocks])
        with np.errstate(divide="ignore", invalid="ignore"):
            klass = np.floor(np.log2(np.maximum(cost, tuning.RANK_SECONDS) / tuning.RANK_SECONDS))
        klass[~np.isfinite(cost)] = np.inf
        return [blocks[i] for i in np.argsort(-klass, kind="stable")]

    def _submit(self, groups):
        """One task per group, submitted together (one message to the scheduler, which
        keeps their order): their futures, in order."""
        if not groups:
            return []
        data = self.data.refresh()
        params = [[self.configs.take(b.configs) for b in group] for group in groups]
        places = [[self._placement(b.configs) for b in group] for group in groups]
        repeats = [g[0].repeat for g in groups]
        waves = [g[0].wave for g in groups]
        keys = [f"bbc-fit-r{g[0].repeat}-k{g[0].wave}-c{g[0].configs[0]}-n{len(g)}-{uuid.uuid4().hex[:8]}"
                for g in groups]
        n = len(groups)
        X_f, y_f, folds_f, *shipped = ([d] * n for d in data)
        return self.client.map(
            carried(fit_write_blocks), [self.estimator] * n, params, X_f, y_f, folds_f,
            [self.scoring] * n, [self.writer] * n, repeats, waves, places, *shipped, key=keys,
            retries=3, pure=False,
            fifo_timeout="0ms")  # a later batch never runs ahead of an earlier one

    def _placement(self, cfgs):
        """Where a task writes the block of ``cfgs``: from its first chunk's start."""
        first = int(cfgs[0]) // self.chunk * self.chunk
        return Placement(first, np.asarray(cfgs) - first)

    def execute(self, tasks, n_active):
        from distributed import as_completed

        n_tasks = len(tasks)
        if not n_tasks:
            return
        self.wave_left = tasks.cells_by_wave()
        if self.progress:
            # created with its total: a bar drawn at 0 of an unknown total stays behind as
            # a stray "wave 1: 0task [00:00, ?task/s]" line. A study that drops plans each
            # wave after the last one's decision: each gets its own bar, whose total is
            # known (one bar whose total grew would go back: 94% 30/32, then 73% 32/44)
            if self.bar is not None:
                self.bar.close()
            self.bar = _bar(n_tasks, True)
            if self.wave_shown:
                self.bar.set_description(f"wave {self.wave_shown + 1}/{self.n_splits}",
                                         refresh=False)
            self.bar.set_postfix(active=n_active)
        cluster = ClusterSize(self.client)
        groups = Grouper(tasks, n_tasks, cluster.threads(), self.cost, self.block_bytes)
        driver = DriverCost(self.client)
        retry = deque()  # (group, tries) whose data was lost: before any fresh group
        ac = as_completed()
        table = {}
        flight = {}  # fit tasks in flight: key -> predicted seconds (NaN: not yet timed)
        horizon = 2 * adaptive_seconds()
        try:
            while True:
                raise_swallowed()  # a Ctrl-C the interpreter swallowed stops the run here
                n_threads = groups.n_threads = cluster.threads()
                groups.min_seconds = driver.min_task_seconds(n_threads)
                queue = Queue(groups, flight, n_threads, horizon)
                new, planned = [], 0
                while self._may_submit() and queue.wants_more():
                    if retry:
                        group, tries = retry.popleft()
                    else:
                        group, tries = groups.next(), 0
                        if group is None:
                            break
                    if self.budget is not None:  # cut to the fits the Stop rule leaves
                        group = self.budget.cut(group, self.fits, self.in_flight + planned)
                        if group is None:
                            break
                    planned += _cells(group)
                    new.append((group, tries, queue.add(group)))
                for (group, tries, seconds), fut in zip(new, self._submit([g for g, *_ in new])):
                    table[fut.key] = FitInFlight(group, tries, fut)
                    flight[fut.key] = seconds
                    self.in_flight += _cells(group)
                    ac.add(fut)
                self._on_stop(table)
                if not table:
                    break
                # every task done by now, its result fetched in one gather: one round
                # trip per batch, not per task (a cluster of many workers finishes
                # several tasks while the driver records one)
                done = self._collect(self._next_batch(ac))
                for fut, res in done:
                    entry = table.pop(fut.key)
                    flight.pop(fut.key, None)
                    if isinstance(entry, PooledInFlight):
                        self._pooled_done(res, entry.block)
                        continue
                    self.in_flight -= _cells(entry.group)
                    if isinstance(res, CancelledError):
                        # its data was lost with a worker: scatter again and resubmit
                        if entry.tries >= tuning.MAX_RESUBMITS:
                            raise res
                        retry.append((entry.group, entry.tries + 1))
                        continue
                    if isinstance(res, BaseException):
                        raise res
                    self._handle(entry.group, res, groups, table, ac)
                if not table or time.monotonic() - self.flushed >= tuning.LEDGER_INTERVAL:
                    self.flush()
                if self.completed:
                    self._check_width()
                driver.handled(len(done))
                if self.all_failed(tasks.active):
                    break  # the finally below records the results and cancels the rest
        finally:
            # What finished is recorded whatever stops the run: its chunks are written.
            t0 = time.perf_counter()
            self.flush()
            self.phases.add("ledger", time.perf_counter() - t0)
            # Interrupted or failed: nothing is left running for this study on a cluster we
            # do not own. Ours is about to be closed; releasing the futures cancels their
            # tasks, which its workers would report one by one: silence them first.
            with deferred_interrupts():
                if table and self.cancel_on_exit:
                    self.client.cancel([m.future for m in table.values()])
                elif table:
                    with contextlib.suppress(Exception):
                        self.client.run(dask_logs.silence)

    def _next_batch(self, ac):
        """The tasks done by now, waiting for one if none is. Results recorded but not yet
        written are written once ``bbc_dask.ledger-interval`` has passed since the last
        write, even if no other task finishes by then: a reader of the store (``bbc-dask
        status``, a live estimate) would otherwise lag the fits by as long as the next
        task runs."""
        if self._unwritten():
            deadline = self.flushed + tuning.LEDGER_INTERVAL
            while not ac.has_ready():
                left = deadline - time.monotonic()
                if left <= 0:
                    self.flush()
                    break
                raise_swallowed()  # a Ctrl-C the interpreter swallowed stops the run here
                # woken by as_completed as a task finishes (its own wait, as next_batch
                # does): no polling sleep, and no callbacks of ours on the futures
                with ac.thread_condition:
                    ac.thread_condition.wait(timeout=min(left, 0.1))
        return ac.next_batch(block=True)

    def _unwritten(self):
        """Whether results are held for the next ledger batch."""
        return bool(self.batch) or (self.pooled is not None and bool(self.pooled.batch))

    def _collect(self, futures):
        """``(future, its result or the exception it raised)`` for done ``futures``: the
        finished ones fetched in one gather (its transfer not cut by a Ctrl-C, see
        :func:`_result`), the others (failed, cancelled, or lost since) one by one."""
        ok = [f for f in futures if f.status == "finished"]
        got = {}
        if ok:
            with deferred_interrupts():
                try:
                    got = dict(zip((f.key for f in ok), self.client.gather(ok)))
                except Exception:  # noqa: BLE001 - one was lost meanwhile: one by one below
                    got = {}
        out = []
        for fut in futures:
            if fut.key in got:
                out.append((fut, got[fut.key]))
                continue
            try:
                out.append((fut, _result(fut)))
            except Exception as exc:  # noqa: BLE001 - the caller decides (retry or raise)
                out.append((fut, exc))
        return out

    def _handle(self, group, res, groups, table, ac):
        """A fit task's :class:`~._messages.TaskOutcome`: its warnings kept, its blocks
        recorded (and the pooled scores of the windows they complete submitted), its time
        observed; what stopped it raised."""
        for *key, n in res.warnings:
            self.warned[tuple(key)] = self.warned.get(tuple(key), 0) + n
        if res.store_problem is not None:
            problem = res.store_problem
            raise (StoreFullError if problem.kind == "StoreFullError" else StoreLockedError)(problem.text)
        for task, part in zip(group, res.parts):
            self._record(task, part)
            for block in self._complete(task, part):
                pfut = self.pooled.submit(block)
                table[pfut.key] = PooledInFlight(block, pfut)
                ac.add(pfut)
        if res.raised is not None:  # error_score="raise"
            block = group[res.raised_block]
            k, r, cfgs = block.wave, block.repeat, block.configs
            c = int(cfgs[res.raised.index])
            raise StudyError(
                f"Configuration {c} ({self.configs[c]!r}) raised on repeat {r}, fold {k} "
                f"(error_score='raise'): {res.raised.text}\n{res.raised.traceback}"
            ) from res.raised.error
        groups.observe(res.elapsed, len(group), sum(float(np.nansum(p.fit_time)) for p in res.parts))

    def _record(self, task, res):
        """One block's :class:`~._messages.BlockOutcome`, kept for the next ledger batch."""
        k, r, cfgs = task.wave, task.repeat, task.configs
        self.batch.append(LedgerRows(r, k, cfgs, res.fit_time, res.failed, res.errors,
                                     res.fold_score, res.crc, res.fit_score))
        if self.failed is not None:
            self.failed[cfgs[np.asarray(res.failed, bool)]] = True
        self.cost[cfgs] = res.fit_time
        if self.score_times is not None:
            self.score_times.fit[cfgs, r, k] = res.fit_only
            self.score_times.score[cfgs, r, k] = res.score_time
        self.fits += len(cfgs)
        if self.budget is not None and self.budget.checks_width and k in self.wave_left:
            self.wave_left[k] -= len(cfgs)
            self.completed |= self.wave_left[k] == 0
        if self.bar is not None:
            # the furthest wave reached: tasks of a resumed run's earlier waves finish
            # after later ones, and the label must not go back (3/5, 2/5, 3/5)
            if k + 1 > self.wave_shown:
                self.wave_shown = k + 1
                self.bar.set_description(f"wave {k + 1}/{self.n_splits}", refresh=False)
            self.bar.update(1)

    def _complete(self, task, part):
        """Blocks whose pooled scores can be computed now that ``task`` is recorded."""
        if self.pooled is None:
            return []
        return self.pooled.recorded(task.repeat, task.wave, task.configs, part.failed)

    def _pooled_done(self, values, block):
        """A pooled task's result, kept for the next ledger batch. A task that failed
        (its worker lost, a read that failed: ``values`` is the exception) does not stop
        the fits: its block is left to the pass at the end, which scores it again and
        raises what is really wrong."""
        if isinstance(values, BaseException):
            self.pooled.lost(block)
            return
        self.pooled.batch.append((block.configs, values))

    def all_failed(self, active):
        """Whether every active configuration has failed somewhere (tracked only when
        that stops the run)."""
        return self.failed is not None and bool(np.all(self.failed | ~active))

    def flush(self):
        """Write the batch of recorded results to the ledger (one write per array)."""
        batch, self.batch = self.batch, []
        pooled = self.pooled.take() if self.pooled is not None else []
        # A pooled score is written only once the states of the cells it scores are: if
        # this batch fails half-way (Ctrl-C, a full disk), the scores go with it, and a
        # resume (or the pass at the end) computes them again.
        self.cube.record(batch)
        for configs, values in pooled:
            self.cube.record_pooled(configs, values)
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
