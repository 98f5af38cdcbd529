"""How a run's fit tasks are cut and how many are kept in flight: blocks grouped into
tasks by their measured times (:class:`Grouper`), tasks queued for the cluster's size
and an adaptive cluster's view of the work (:class:`Queue`), the cluster's size followed
as it changes (:class:`ClusterSize`) and the driver's own cost per task
(:class:`DriverCost`). None of it decides what a task computes, only which task computes
a block and when."""
from __future__ import annotations

import time

import numpy as np
import os

from .. import _tuning as tuning
from .._signals import deferred_interrupts
from ..cluster import threads_of

__all__ = ["ClusterSize", "DriverCost", "Grouper", "Queue", "adaptive_seconds"]


class Grouper:
    """Groups consecutive configuration blocks of one (repeat, fold) into tasks that should
    last about ``bbc_dask.target-task-seconds`` (one block per task until a thread's worth of
    tasks reported), never so many blocks that fewer than ``bbc_dask.tail-tasks-per-thread``
    tasks per thread remain to balance the end, nor more than
    ``bbc_dask.task-prediction-bytes`` of predictions (``block_bytes`` each). A block's
    predicted time is its configurations' measured fit time (``cost``) plus the mean
    per-block overhead seen so far (writing, scoring), or the mean block time where a fit
    time is unknown. No task is planned shorter than ``min_seconds`` (set by the executor
    from the cluster's threads and the driver's CPU per task, so that the driver keeps
    up), even at a stage's end. ``n_threads`` follows the cluster's size. Grouping only
    changes which task computes a block, never what it computes."""

    def __init__(self, tasks, n_blocks, n_threads, cost, block_bytes=0):
        self.fresh, self.left, self.n_threads = iter(tasks), n_blocks, n_threads
        self.cost = cost
        self.max_blocks = max(1, tuning.TASK_PREDICTION_BYTES // max(1, block_bytes))
        self.peek = None
        self.block_seconds, self.overhead, self.timed = 0.0, 0.0, 0
        self.min_seconds = 0.0
        self.timed_all = False

    def observe(self, elapsed, n_blocks, fit_seconds=0.0):
        # running means per block over the tasks so far
        n = self.timed + n_blocks
        self.block_seconds = (self.block_seconds * self.timed + elapsed) / n
        self.overhead = (self.overhead * self.timed + max(0.0, elapsed - fit_seconds)) / n
        self.timed = n

    def predict(self, task):
        """Predicted seconds of one block."""
        fit = self.cost[task.configs].sum()
        return float(fit) + self.overhead if np.isfinite(fit) else self.block_seconds

    def timing(self):
        """Whether block times are still unknown (until the first thread's worth of
        tasks reported; not again when the cluster grows)."""
        if self.timed_all:
            return False
        self.timed_all = self.timed >= self.n_threads and self.block_seconds > 0
        return not self.timed_all

    def ending(self):
        """Whether the stage is in its last ``bbc_dask.tail-tasks-per-thread`` blocks per
        thread (there, tasks are single blocks unless the driver's floor groups them)."""
        return self.left <= tuning.TAIL_TASKS_PER_THREAD * self.n_threads

    def next(self):
        """The next group: a list of :class:`~._messages.PlannedBlock` of one (wave,
        repeat), or None when done."""
        first = self.peek if self.peek is not None else next(self.fresh, None)
        self.peek = None
        if first is None:
            return None
        group = [first]
        if not self.timing():
            tail = tuning.TAIL_TASKS_PER_THREAD * self.n_threads
            # never shorter than the driver can keep up with, even at the end
            floor = int(np.ceil(self.min_seconds / self.block_seconds))
            limit = min(self.max_blocks, max(1, self.left // tail, floor))
            # the stage's last tasks shrink with the work left (the blocks not yet
            # submitted, at the mean block time): a long task started late would keep
            # one worker busy after the others ran out of work
            budget = max(self.min_seconds, min(tuning.TARGET_TASK_SECONDS,
                                               self.left * self.block_seconds / tail))
            total = self.predict(first)
            while len(group) < limit and total < budget:
                task = next(self.fresh, None)
                if task is None:
                    break
                if task.cell != first.cell:
                    self.peek = task
                    break
                group.append(task)
                total += self.predict(task)
        self.left -= len(group)
        return group


def adaptive_seconds():
    """distributed's ``adaptive.target-duration`` (seconds): an adaptive cluster asks for
    the workers that would finish the work it sees in that time. At most
    ``bbc_dask.queue-seconds``: a user's "5 minutes" would queue whole stages."""
    import dask
    from dask.utils import parse_timedelta

    seconds = parse_timedelta(dask.config.get("distributed.adaptive.target-duration", "5s"))
    return min(float(seconds), tuning.QUEUE_SECONDS)


class Queue:
    """Whether to submit one more fit task. Two per thread (plus two) at least, so that no
    worker waits for the driver; beyond, tasks covering ``horizon`` seconds (twice
    distributed's adaptive target duration) of predicted work per thread, so that an
    adaptive cluster (``cluster.adapt``, Kubernetes' autoscaler: they size a cluster by
    the work the scheduler sees, queued or running) is asked for more workers while the
    stage has work for them, and for fewer when it has not (BBCD's later waves). The
    scheduler queues what its workers cannot start yet (distributed's queuing of
    root-ish tasks), so a deeper queue does not load the workers; never more than
    ``bbc_dask.queue-tasks-per-thread`` tasks per thread (tasks of tiny blocks). At a
    stage's end, one task per thread: none waits behind a long one on a busy worker while
    another idles."""

    def __init__(self, groups, flight, n_threads, horizon):
        self.groups, self.n_threads = groups, n_threads
        self.count = len(flight)
        self.seconds = float(np.nansum(list(flight.values()))) if flight else 0.0
        self.limit = horizon * n_threads

    def wants_more(self):
        if self.groups.ending():
            return self.count < self.n_threads
        if self.count < 2 * self.n_threads + 2:
            return True
        return (not self.groups.timing() and self.seconds < self.limit
                and self.count < tuning.QUEUE_TASKS_PER_THREAD * self.n_threads)

    def add(self, group):
        """Count ``group`` in; its predicted seconds (NaN while blocks are untimed)."""
        self.count += 1
        if self.groups.timing():
            return np.nan
        seconds = sum(self.groups.predict(t) for t in group)
        self.seconds += seconds
        return seconds


class ClusterSize:
    """The cluster's worker threads, asked of the scheduler at most every
    ``bbc_dask.cluster-poll-seconds``: workers added while a run goes on are given
    tasks, and a cluster that shrank is not flooded."""

    def __init__(self, client):
        self.client, self.n, self.at = client, 1, -np.inf

    def threads(self):
        if time.monotonic() - self.at >= tuning.CLUSTER_POLL_SECONDS:
            try:
                with deferred_interrupts():
                    self.n = threads_of(self.client)
            except Exception:  # noqa: BLE001 - a passing comm error: the last size will do
                pass
            self.at = time.monotonic()
        return self.n


class DriverCost:
    """The driver's CPU seconds per task handled (this process: the engine and, for a
    local cluster, the scheduler and the event loop), measured from the first result on
    (the first submission scatters the data); and the shortest task that keeps the
    driver under ``bbc_dask.driver-share`` of a core on a cluster of ``n_threads``
    threads (they finish ``n_threads / seconds`` tasks a second). Where the workers run
    in this process (``LocalCluster(processes=False)``) its CPU is mostly theirs: the
    assumed ``bbc_dask.driver-task-seconds`` then stands."""

    def __init__(self, client):
        try:
            with deferred_interrupts():
                self.measured = os.getpid() not in client.run(os.getpid).values()
        except Exception:  # noqa: BLE001 - the workers cannot say: do not measure
            self.measured = False
        self.cpu0, self.tasks = None, 0

    def handled(self, n):
        if self.cpu0 is None:
            self.cpu0 = time.process_time()
            return
        self.tasks += n

    def per_task(self):
        if not self.measured or self.tasks < tuning.DRIVER_TASKS_MEASURED:
            return tuning.DRIVER_TASK_SECONDS
        return (time.process_time() - self.cpu0) / self.tasks

    def min_task_seconds(self, n_threads):
        # at most the target length: the driver's CPU per task includes the cluster's
        # idle ticks, which grow as tasks get longer and fewer
        return min(tuning.TARGET_TASK_SECONDS, n_threads * self.per_task() / tuning.DRIVER_SHARE)
