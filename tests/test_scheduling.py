"""The order and grouping of a stage's blocks: expensive blocks first, tasks sized by the
measured fit times (only which task computes a block changes, never what it computes)."""
from types import SimpleNamespace

import numpy as np
import pytest

from bbc_dask.engine import _sizing, _waves
from bbc_dask.engine._messages import PlannedBlock


def _blocks(n):
    return [np.array([c]) for c in range(n)]


def test_rank_runs_untimed_blocks_first_then_longest_first_keeping_alike_blocks_in_order():
    cost = np.array([0.001, 0.5, np.nan, 0.002, 0.11, 0.5, 0.12, np.nan])
    order = _waves._Executor.rank(SimpleNamespace(cost=cost), _blocks(8))
    # never timed (2, 7) first; then 0.5 s (1, 5); then 0.11-0.12 s (4, 6); then < 10 ms
    # blocks (0, 3) in their own order
    assert [int(b[0]) for b in order] == [2, 7, 1, 5, 4, 6, 0, 3]


def test_rank_keeps_the_order_of_alike_cheap_blocks():
    cost = np.random.default_rng(0).uniform(0.0001, 0.009, 50)
    order = _waves._Executor.rank(SimpleNamespace(cost=cost), _blocks(50))
    assert [int(b[0]) for b in order] == list(range(50))


def test_grouper_sizes_tasks_by_predicted_block_time(dask_config):
    dask_config({"bbc_dask.target-task-seconds": 0.3})
    cost = np.array([0.05] * 20 + [0.4] * 4 + [np.nan] * 4)
    tasks = [PlannedBlock(0, 0, b) for b in _blocks(28)]
    g = _sizing.Grouper(tasks, len(tasks), n_threads=1, cost=cost)
    assert g.next() == [tasks[0]]  # one block per task until a thread's worth reported
    g.observe(0.06, 1, fit_seconds=0.05)  # 10 ms of overhead per block
    sizes = []
    while (group := g.next()) is not None:
        sizes.append(len(group))
    # 0.06 s blocks grouped to reach 0.3 s: 5 per task; a 0.41 s block alone; the untimed
    # blocks at the mean block time (0.06 s), capped so that 3 tasks per thread remain
    assert sizes[:4] == [5, 5, 5, 4] and sizes[4:8] == [1, 1, 1, 1]
    assert sum(sizes) == 27 and max(sizes[8:]) <= 4


def test_grouper_bounds_the_predictions_a_task_holds(dask_config):
    dask_config({"bbc_dask.task-prediction-bytes": 3000})
    tasks = [PlannedBlock(0, 0, b) for b in _blocks(40)]
    g = _sizing.Grouper(tasks, len(tasks), n_threads=1, cost=np.full(40, 0.001), block_bytes=1000)
    g.next()
    g.observe(0.002, 1, fit_seconds=0.001)
    assert len(g.next()) == 3  # 3 x 1000 bytes, although 1 s would take hundreds


def _timed_grouper(dask_config, n):
    """A Grouper of ``n`` blocks of 20 ms (no overhead) on 2 threads, its first two
    blocks out and timed (1 s target, 3 tail tasks per thread)."""
    dask_config({"bbc_dask.target-task-seconds": 1.0, "bbc_dask.tail-tasks-per-thread": 3})
    g = _sizing.Grouper([PlannedBlock(0, 0, b) for b in _blocks(n)], n, n_threads=2, cost=np.full(n, 0.02))
    g.next(), g.next()
    g.observe(0.02, 2, fit_seconds=0.04)
    return g


def test_a_stages_last_tasks_shrink_with_the_work_left(dask_config):
    """Near a stage's end a group holds at most the work left over (TAIL_TASKS_PER_THREAD
    x threads) of predicted seconds, so that no long task starts when the other workers
    are about to run out of work; in the last TAIL_TASKS_PER_THREAD tasks per thread the
    engine keeps one task per thread in flight (``ending``)."""
    g = _timed_grouper(dask_config, 200)
    seconds, ending = [], []
    while (group := g.next()) is not None:
        ending.append(g.ending())
        seconds.append(0.02 * len(group))
        left = g.left * 0.02  # the predicted work still to submit
        assert seconds[-1] <= max(0.02, (left + seconds[-1]) / 6 + 0.02 + 1e-9)
    assert seconds[0] > 0.3 and seconds[-1] == 0.02  # big early, one block at the end
    assert ending[-1] and not ending[0] and sum(ending) <= 3 * 2 + 1


def test_no_task_is_planned_shorter_than_the_driver_can_keep_up_with(dask_config):
    """With a floor of 0.1 s (a big cluster, a driver that costs milliseconds per task)
    blocks of 20 ms go five to a task even in a stage's last tasks, where they would
    otherwise go one by one."""
    g = _timed_grouper(dask_config, 200)
    g.min_seconds = 0.1
    sizes = []
    while (group := g.next()) is not None:
        sizes.append(len(group))
    assert min(sizes[:-1]) >= 5 and sum(sizes) == 200 - 2


def test_the_driver_floor_grows_with_the_threads_and_the_measured_cost(dask_config):
    dask_config({"bbc_dask.driver-share": 0.25, "bbc_dask.driver-task-seconds": 0.004,
                 "bbc_dask.driver-tasks-measured": 20, "bbc_dask.target-task-seconds": 1.0})
    import os

    class Workers:  # a client whose workers run in other processes, or in this one
        def __init__(self, pid):
            self.pid = pid

        def run(self, fn):
            return {"tcp://w": self.pid}

    cost = _sizing.DriverCost(Workers(-1))
    # until 20 tasks are handled, the assumed 4 ms: 2 threads 32 ms, 16 threads 256 ms
    assert cost.min_task_seconds(2) == pytest.approx(0.032)
    assert cost.min_task_seconds(16) == pytest.approx(0.256)
    assert cost.min_task_seconds(200) == 1.0  # never beyond the target length
    cost.handled(2)  # the first results: the measure starts after the first scatter
    cost.cpu0 -= 0.2  # 0.2 s of this process's CPU over 50 tasks: 4 ms each
    cost.handled(50)
    assert cost.per_task() == pytest.approx(0.004, abs=0.002)
    local = _sizing.DriverCost(Workers(os.getpid()))  # its CPU is the fits': not measured
    local.handled(1)
    local.cpu0 -= 5.0
    local.handled(50)
    assert local.per_task() == 0.004


def test_the_queue_shows_the_stages_work_to_an_adaptive_cluster(dask_config):
    """At least two tasks per thread (plus two); once blocks are timed, tasks covering
    ``horizon`` seconds of predicted work per thread (what an adaptive cluster sizes
    itself by); at a stage's end one task per thread."""
    dask_config({"bbc_dask.tail-tasks-per-thread": 3})
    n = 1000
    tasks = [PlannedBlock(0, 0, b) for b in _blocks(n)]
    g = _sizing.Grouper(tasks, n, n_threads=2, cost=np.full(n, 0.5))
    queue = _sizing.Queue(g, {}, n_threads=2, horizon=10.0)
    while queue.wants_more():  # untimed: 2 x 2 + 2 single blocks
        queue.add(g.next())
    assert queue.count == 6 and np.isnan(queue.add(g.next()))
    g.observe(0.5, 2, fit_seconds=1.0)
    queue = _sizing.Queue(g, {"a": np.nan, "b": 1.0}, n_threads=2, horizon=10.0)
    while queue.wants_more():
        queue.add(g.next())
    assert 20.0 <= queue.seconds < 21.0  # 10 s per thread of 0.5 s blocks, grouped
    dask_config({"bbc_dask.queue-tasks-per-thread": 4})  # and never more tasks than that
    queue = _sizing.Queue(g, {}, n_threads=2, horizon=1e6)
    while queue.wants_more():
        queue.add(g.next())
    assert queue.count == 8
    g.left = 5  # a stage's end: one task per thread
    assert not _sizing.Queue(g, {"a": 1.0, "b": 1.0}, n_threads=2, horizon=10.0).wants_more()
    assert _sizing.Queue(g, {"a": 1.0}, n_threads=2, horizon=10.0).wants_more()


def test_the_cluster_size_is_asked_again_after_the_poll_interval(dask_config):
    class Client:
        asked = 0

        def nthreads(self):
            Client.asked += 1
            return {"a": 1, "b": 2} if Client.asked == 1 else {"a": 1, "b": 2, "c": 4}

    dask_config({"bbc_dask.cluster-poll-seconds": 3600})
    size = _sizing.ClusterSize(Client())
    assert size.threads() == 3 and size.threads() == 3 and Client.asked == 1
    dask_config({"bbc_dask.cluster-poll-seconds": 0})
    assert size.threads() == 7 and Client.asked == 2
