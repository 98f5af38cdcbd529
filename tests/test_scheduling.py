"""The order and grouping of a stage's blocks: expensive blocks first, tasks sized by the
measured fit times (only which task computes a block changes, never what it computes)."""
from types import SimpleNamespace

import numpy as np

import bbc_dask._tuning as tuning
from bbc_dask.engine import _sizing, _waves


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


def test_grouper_sizes_tasks_by_predicted_block_time(monkeypatch):
    monkeypatch.setattr(tuning, "TARGET_TASK_SECONDS", 0.3)
    cost = np.array([0.05] * 20 + [0.4] * 4 + [np.nan] * 4)
    tasks = [(0, 0, b) for b in _blocks(28)]
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


def test_grouper_bounds_the_predictions_a_task_holds(monkeypatch):
    monkeypatch.setattr(tuning, "TASK_PREDICTION_BYTES", 3000)
    tasks = [(0, 0, b) for b in _blocks(40)]
    g = _sizing.Grouper(tasks, len(tasks), n_threads=1, cost=np.full(40, 0.001), block_bytes=1000)
    g.next()
    g.observe(0.002, 1, fit_seconds=0.001)
    assert len(g.next()) == 3  # 3 x 1000 bytes, although 1 s would take hundreds


def test_a_stages_last_tasks_shrink_with_the_work_left(monkeypatch):
    """Near a stage's end a group holds at most the work left over (TAIL_TASKS_PER_THREAD
    x threads) of predicted seconds, so that no long task starts when the other workers
    are about to run out of work; in the last TAIL_TASKS_PER_THREAD tasks per thread the
    engine keeps one task per thread in flight (``ending``)."""
    monkeypatch.setattr(tuning, "TARGET_TASK_SECONDS", 1.0)
    monkeypatch.setattr(tuning, "TAIL_TASKS_PER_THREAD", 3)
    n = 200
    tasks = [(0, 0, b) for b in _blocks(n)]
    g = _sizing.Grouper(tasks, n, n_threads=2, cost=np.full(n, 0.02))
    g.next(), g.next()
    g.observe(0.02, 2, fit_seconds=0.04)  # 20 ms per block, no overhead
    seconds, ending = [], []
    while (group := g.next()) is not None:
        ending.append(g.ending())
        seconds.append(0.02 * len(group))
        left = g.left * 0.02  # the predicted work still to submit
        assert seconds[-1] <= max(0.02, (left + seconds[-1]) / 6 + 0.02 + 1e-9)
    assert seconds[0] > 0.3 and seconds[-1] == 0.02  # big early, one block at the end
    assert ending[-1] and not ending[0] and sum(ending) <= 3 * 2 + 1
