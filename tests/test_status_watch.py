"""``bbc-dask status`` and ``--watch`` around a run's life: before its store exists, while
a run holds the lock but has not begun, and after it ended (finished, interrupted,
stopped by its rule) — a watch waits for the first and ends, saying why, on the last."""
import json
import time

import pytest
from click.testing import CliRunner
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

import bbc_dask as bd
import bbc_dask.cli._commands as commands
from bbc_dask.cli import main
from bbc_dask.cube import PENDING, as_location, open_cube
from _helpers import rewrite_ledger, run_in_thread

X, Y = make_classification(60, 4, random_state=0)
GRID = {"C": [0.1, 1.0]}


def _run(store, client, **kw):
    return bd.run_study(LogisticRegression(max_iter=300), GRID, X, Y, store=store,
                        metric="roc_auc", n_splits=3, random_state=0, client=client,
                        progress=False, refit=False, **kw)


class _Clock:
    """``time`` for the status command, whose ``sleep`` calls ``on_sleep(n)`` (n: the
    calls so far) before it sleeps: a test acts between two rounds of a watch. ``real``
    False: a sleep only moves the clock (``monotonic``) on, for a watch over a store that
    nothing changes."""

    def __init__(self, on_sleep, real=True):
        self.on_sleep, self.calls, self.real, self.ahead = on_sleep, 0, real, 0.0
        self.base = time.monotonic()

    def __getattr__(self, name):
        return getattr(time, name)

    def monotonic(self):
        return time.monotonic() if self.real else self.base + self.ahead

    def sleep(self, seconds):
        self.calls += 1
        self.on_sleep(self.calls)
        if self.real:
            time.sleep(seconds)
        else:
            self.ahead += seconds


def _watch(monkeypatch, store, on_sleep, *options, real=True):
    clock = _Clock(on_sleep, real)
    monkeypatch.setattr(commands, "time", clock)
    res = CliRunner().invoke(main, ["status", str(store), "--watch", "0.1", *options])
    res.sleeps = clock.calls
    return res


def test_a_watch_waits_for_the_store_a_starting_run_creates_and_ends_once_finished(
        tmp_path, client, monkeypatch):
    """Started before the run: the watch says it waits for the store (not "no such
    store"), follows the run once it starts, and ends with the finished study."""
    store = tmp_path / "w.zarr"
    run = {}

    def start_the_run(calls):
        if calls == 1:  # the watch has looked once and found no store
            assert not store.exists()
            run["thread"], run["out"] = run_in_thread(
                estimator=LogisticRegression(max_iter=300), param_grid=GRID, X=X, y=Y,
                store=store, metric="roc_auc", n_splits=3, random_state=0, client=client,
                progress=False, refit=False)
        assert calls < 3000, "the watch did not end"

    res = _watch(monkeypatch, store, start_the_run, "--no-estimate")
    run["thread"].join(300)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].endswith(f"waiting: no store at {store} yet (a starting run creates it)"), lines
    assert lines[-1] == "watch ended: the study is finished", lines
    assert "no such store" not in res.output and "0 pending of 6" in lines[-2], lines
    assert not isinstance(run["out"]["study"], Exception), run["out"]


def test_a_run_holding_the_lock_reads_as_starting_until_it_begins(tmp_path, client,
                                                                  monkeypatch):
    """A run that holds the store's lock and has not recorded its start (it is opening
    the store or starting its cluster) is "starting", on a store being created and on
    a study it resumes; once it begins it is "running". A watch never says "not running"
    then, nor ends."""
    store = tmp_path / "s.zarr"
    lock = as_location(store).lock().acquire()  # what a run holds first: nothing else yet
    try:
        res = _watch(monkeypatch, store, lambda calls: _stop_at(calls, 3))
        assert res.exit_code == 130, res.output  # ended by the test's Ctrl-C alone
        assert res.output.splitlines()[0].endswith(
            f"starting: a run holds {store} and has not created its study yet"), res.output
        assert res.output.count("starting:") == 1  # said once while nothing changes
    finally:
        lock.release()
    _run(store, client)
    _pending_again(store)
    lock = as_location(store).lock().acquire()
    try:
        st = bd.open_study(store).status()
        assert st["running"] and st["starting"] and st["elapsed_s"] is None, st
        res = _watch(monkeypatch, store, lambda calls: _stop_at(calls, 2), "--no-estimate")
        assert res.exit_code == 130 and "watch ended" not in res.output, res.output
        assert res.output.count("starting (a run holds the store and has not begun its "
                                "waves); waves done") == 2, res.output
        cube = open_cube(store, mode="r+")
        cube.bind_lock(lock.check)
        cube.begin_run()  # the run begins: its record names its lock
        st = bd.open_study(store).status()
        assert st["running"] and not st["starting"] and st["elapsed_s"] >= 0, st
        res = CliRunner().invoke(main, ["status", str(store), "--no-estimate"])
        assert res.output.startswith("running; waves done"), res.output
    finally:
        lock.release()
    st = bd.open_study(store).status()
    assert not st["running"] and not st["starting"], st


def _stop_at(calls, n):
    if calls >= n:
        raise KeyboardInterrupt


def _pending_again(store):
    """The last fold of the study at ``store`` pending again, as a killed run leaves it."""
    cube = open_cube(store, mode="r+")
    cube.bind_lock(lambda: None)
    st = cube.state()
    st[:, :, -1] = PENDING
    rewrite_ledger(cube, "state", st)


def test_a_watch_ends_on_a_study_no_run_holds_saying_why(tmp_path, client, monkeypatch):
    """An interrupted study (cells pending, no run) and one its rule stopped: the watch
    goes on for NOT_RUNNING_GRACE seconds (a run being started takes the lock only once
    it has loaded its data: it would otherwise end at once), then ends with the reason,
    in text and in JSON. On its clock alone: nothing sleeps."""
    from bbc_dask.cli._status import NOT_RUNNING_GRACE

    rounds = int(NOT_RUNNING_GRACE / 0.1)
    enough = lambda calls: calls <= rounds + 2 or pytest.fail("the watch went on")  # noqa: E731
    interrupted = tmp_path / "i.zarr"
    _run(interrupted, client)
    _pending_again(interrupted)
    res = _watch(monkeypatch, interrupted, enough, "--no-estimate", real=False)
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert rounds <= res.sleeps <= rounds + 1, res.sleeps
    assert len(lines) == res.sleeps + 2 and "not running; waves done 2/3" in lines[0], lines
    assert lines[-1] == ("watch ended: no run holds the study: its last run ended with 2 of "
                         "6 cells pending (interrupted, killed or failed); run the same "
                         "command to resume"), lines
    stopped = tmp_path / "m.zarr"
    _run(stopped, client, stop=bd.Stop(max_fits=2))
    res = _watch(monkeypatch, stopped, enough, "--json", "--no-estimate", real=False)
    assert res.exit_code == 0, res.output
    *_, last = [json.loads(x) for x in res.output.splitlines()]
    assert last["stopped"] == "max_fits" and not last["running"] and last["pending"] == 4
    assert last["watch_ended"] == ("its run was stopped early by its rule (max_fits); run "
                                   "it again without the rule to go on"), last
    # without --watch nothing is said of an end
    res = CliRunner().invoke(main, ["status", str(stopped), "--json", "--no-estimate"])
    assert "watch_ended" not in json.loads(res.output), res.output
