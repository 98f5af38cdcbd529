"""A store survives races, lost workers, signals, full disks; huge grids start at once."""
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import psutil
import pytest
import yaml
import zarr

import bbc_dask as bd
from bbc_dask.exceptions import StudyInterrupted

import _estimators
import run_study_cli
from _helpers import store_state, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "scripts", "run_study_cli.py")
CLI = os.path.join(os.path.dirname(sys.executable), "bbc-dask")


@pytest.mark.slow  # 7.5 s: in the slow suite (make test stays under 8 minutes)
def test_a_slow_starting_second_run_never_wipes_a_finished_study(tmp_path, cancer_standardised, client,
                                                                 monkeypatch):
    """Run B looks at the empty store (its read-only check), then stalls before taking the
    lock, as a slow start-up does; run A creates and finishes a study there meanwhile. B
    must then decide again under the lock — refuse, leave no creation marker — and a third
    run of A's study must find it intact (nothing refit)."""
    from bbc_dask.engine import _run
    from sklearn.linear_model import LogisticRegression

    X, y = cancer_standardised
    store = tmp_path / "s.zarr"
    looked, go = threading.Event(), threading.Event()
    original = _run._StudyRun.precheck

    def slow_precheck(self):
        original(self)  # sees an empty store: nothing to refuse yet
        looked.set()
        go.wait(300)

    monkeypatch.setattr(_run._StudyRun, "precheck", slow_precheck)
    out = {}

    def run_b():
        try:
            out["b"] = bd.run_study(LogisticRegression(max_iter=300), {"C": [0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0]},
                                    X, y, store=store, metric="roc_auc", n_splits=5,
                                    random_state=1, client=client, progress=False)
        except Exception as e:  # noqa: BLE001 - recorded for the assertions below
            out["b"] = e

    b = threading.Thread(target=run_b)
    b.start()
    try:
        wait_until(looked.is_set, 60, "run B looked at the store")
        assert not store.exists() or not any(store.iterdir())
        a = subprocess.run([sys.executable, SCRIPT, str(store), "trees"], capture_output=True,
                           text=True, timeout=300)
        assert a.returncode == 0, a.stderr[-2000:]
    finally:
        go.set()
        b.join(300)
    assert isinstance(out["b"], ValueError) and "holds a different study" in str(out["b"]), out["b"]
    assert not (store / ".bbc_creating").exists()
    study = bd.open_study(store)
    assert study.state.shape == (30, 2, 5) and (study.state == 1).all()
    again = run_study_cli.run(store, "trees", client=client)
    assert again.n_fits_ == 0 and (again.state == 1).all()


def _holders(c):
    """Addresses of the workers holding the study's scattered X or y."""
    return [w for w, keys in c.has_what().items() if any(str(k).startswith("ndarray-") for k in keys)]


@pytest.mark.slow  # make test keeps test_faults' kills; CI runs these every time
@pytest.mark.parametrize("kill_at", [0.5, 0.9])
def test_a_study_survives_losing_the_worker_that_holds_the_data(tmp_path, cancer_standardised, make_local_client,
                                                                kill_at):
    """The fits past ``kill_at`` of them wait at a gate, so the kill lands while the run
    surely goes on (a fast run once finished before a timed kill could land)."""
    X, y = cancer_standardised
    grid = {"C": list(np.logspace(-3, 2, 16))}
    kw = dict(metric="roc_auc", n_splits=5, random_state=0, progress=False, configs_per_task=1)
    total = 16 * 5
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / "hold").touch()
    with make_local_client() as c:  # its workers are killed: not the shared cluster
        store = tmp_path / "hit.zarr"
        out = {}

        def run():
            try:
                out["study"] = bd.run_study(_estimators.Gated(nap=0.05, gate=str(gate), after=int(kill_at * total)),
                                            grid, X, y, store=store, client=c, **kw)
            except Exception as e:  # noqa: BLE001
                out["study"] = e

        t = threading.Thread(target=run)
        t.start()
        try:
            wait_until((gate / "blocked").exists, 120, "a fit waiting at the gate")
            assert (store_state(store) == 1).sum() < total  # the run is still going
            pids = c.run(os.getpid)
            victims = _holders(c)
            assert victims, "no worker holds the scattered data"
            for w in victims:
                os.kill(pids[w], signal.SIGKILL)
        finally:
            (gate / "hold").unlink()
        t.join(300)
        study = out["study"]
        assert not isinstance(study, Exception), repr(study)
        assert (study.state == 1).all()
        assert study.final_model is not None
        calm = bd.run_study(_estimators.Sleepy(nap=0.0), grid, X, y, store=tmp_path / "calm.zarr",
                            client=c, **kw)
        np.testing.assert_array_equal(study.cube["prediction"].values, calm.cube["prediction"].values)


@pytest.fixture
def foreground_sigint():
    """SIGINT as a terminal's foreground process has it (Python's KeyboardInterrupt),
    whatever this process inherited: a shell's background job starts with SIGINT
    ignored, and a test that signals itself would then wait forever (seen: the suite
    run as ``.ci/run &`` hung in the million-configuration run)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.slow  # 10 s: in the slow suite (make test stays under 8 minutes)
def test_a_million_configurations_plan_lazily_and_start_at_once(tmp_path, cancer_standardised, client, capfd,
                                                                foreground_sigint):
    """1,000,000 configurations: the size is printed first, nothing is materialised per
    configuration, the first cells are written while the driver has grown by little; then
    SIGINT stops the run with one line."""
    X, y = cancer_standardised
    grid = {"C": list(np.linspace(0.1, 10, 1000)), "tol": list(np.linspace(1e-4, 1e-2, 1000))}
    store = tmp_path / "huge.zarr"
    proc = psutil.Process()
    base = proc.memory_info().rss
    seen = {"peak": base, "first": None, "signals": 0}
    stopped = threading.Event()

    def watch():
        t0 = time.time()
        try:
            while time.time() - t0 < 180:
                seen["peak"] = max(seen["peak"], proc.memory_info().rss)
                if (store / "zarr.json").exists() and not (store / ".bbc_creating").exists():
                    # tasks go in configuration order: the first ledger chunk records first
                    try:
                        state = zarr.open_array(str(store / "state"), mode="r")[:1000, 0]
                    except Exception:  # noqa: BLE001 — a chunk being written: look again
                        state = np.zeros(1)
                    if (state == 1).any():
                        seen["first"] = time.time() - t0
                        break
                time.sleep(0.05)
        finally:
            # whatever happened here, the run is stopped: else it goes on for 5,000,000
            # fits. A signal the run lost is sent again after a minute (as a user would
            # press Ctrl-C again), and counted: the test then fails instead of hanging.
            for _ in range(3):
                seen["signals"] += 1
                os.kill(os.getpid(), signal.SIGINT)
                if stopped.wait(60):
                    break

    w = threading.Thread(target=watch, daemon=True)
    w.start()
    from sklearn.linear_model import LogisticRegression

    try:
        with pytest.raises(StudyInterrupted, match=r"interrupted: \d+ of 5000000 cells saved") as info:
            bd.run_study(LogisticRegression(max_iter=1000), grid, X[:200], y[:200], store=store,
                         metric="accuracy", n_splits=5, random_state=0, client=client,
                         progress=True)
    finally:
        stopped.set()
    w.join(10)
    assert seen["signals"] == 1, "the run lost the first SIGINT"
    assert info.value.exit_code == 130 and info.value.done > 0
    assert seen["first"] is not None, "no cell was written"
    grown = (seen["peak"] - base) / 2**20
    # ~90 MiB measured (the ledger of 5,000,000 cells, its chunk buffers); eager planning
    # cloned every configuration first: 450 MiB and 240 s
    assert grown < 200, f"the driver grew by {grown:.0f} MiB before the first cells"
    err = capfd.readouterr().err
    assert re.search(r"1,000,000 configurations x 5 folds x 1 repeat = 5,000,000 fits", err), err
    # the interrupt never cut a client call in the middle: the caller's client still works
    assert client.submit(sum, [1, 2], pure=False).result(timeout=60) == 3
    study = bd.open_study(store)
    assert study.meta["configurations"]["kind"] == "grid" and "params" not in study.meta
    assert study._configs[999_999] == {"C": 10.0, "tol": 0.01}
    assert not study.status()["running"]


TREES = {
    "data": {"sklearn": "breast_cancer"},
    "grid": [{"estimator": "sklearn.ensemble.RandomForestClassifier",
              "params": {"n_estimators": 20, "random_state": 0},
              "grid": {"max_depth": [2, 3, 4, 5, 6, 8], "min_samples_leaf": [1, 2, 4, 8, 16]}}],
    "cv": {"splits": 5}, "metric": "roc_auc", "bootstraps": 200, "random_state": 0,
    "configs_per_task": 1, "cluster": {"kind": "local", "n_workers": 2},
}


def _start(study_file, **kw):
    # SIGINT as a terminal delivers it: to the whole process group; the command's own
    # disposition reset (a background job's SIGINT is ignored otherwise)
    return subprocess.Popen([CLI, "run", str(study_file), "--no-progress"], start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kw)


def _interrupt(proc, store, at, sig, group):
    wait_until(lambda: proc.poll() is not None
               or ((s := store_state(store)) is not None and (s > 0).sum() >= at), 180, "progress")
    assert proc.poll() is None, "the run finished before the signal; make it bigger"
    (os.killpg if group else os.kill)(proc.pid, sig)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


# slow (19 s, three command-line runs): CI runs it every time; kill/resume is in the
# default suite through test_engine_cluster and test_faults
@pytest.mark.slow
def test_ctrl_c_and_sigterm_say_one_line_and_resume(tmp_path):
    f = tmp_path / "study.yaml"
    f.write_text(yaml.safe_dump(dict(TREES, store="t.zarr")))
    store = tmp_path / "t.zarr"
    line = r"interrupted: (\d+) of 150 cells saved; run the same command to resume"
    rc, out, err = _interrupt(_start(f), store, 30, signal.SIGINT, group=True)
    assert rc == 130 and re.fullmatch(line, err.strip()), (rc, err)
    saved = int(re.fullmatch(line, err.strip()).group(1))
    assert saved == int((store_state(store) > 0).sum())
    rc, out, err = _interrupt(_start(f), store, saved + 30, signal.SIGTERM, group=False)
    assert rc == 143 and re.fullmatch(line, err.strip()), (rc, err)  # no leaked-semaphore lines
    # temporary files of writes a kill interrupted are removed by the next run
    junk = [store / "prediction" / "c" / "0" / "0" / "0.deadbeef.partial", store / ".final_model.skops.0.tmp"]
    for j in junk:
        j.parent.mkdir(parents=True, exist_ok=True)
        j.write_bytes(b"half")
    pending = int((store_state(store) == 0).sum())
    done = subprocess.run([CLI, "run", str(f), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not any(j.exists() for j in junk)
    study = bd.open_study(store)
    assert (study.state == 1).all() and study.meta["runs"][-1]["fits"] == pending


def _mount_tmpfs(path, size):
    path.mkdir(exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                       capture_output=True, text=True)
    return r.returncode == 0


# slow (14 s, command-line runs on a filling tmpfs): CI runs it every time
@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_full_disk_names_the_store_and_the_run_resumes(tmp_path):
    disk = tmp_path / "small"
    assert _mount_tmpfs(disk, "140k"), "mount -t tmpfs failed"  # fills part-way (100k-180k do)
    try:
        f = tmp_path / "study.yaml"
        f.write_text(yaml.safe_dump(dict(TREES, store=str(disk / "t.zarr"), configs_per_task=1)))
        p = subprocess.run([CLI, "run", str(f), "--no-progress"], capture_output=True, text=True, timeout=300)
        assert p.returncode == 2, (p.returncode, p.stderr[-3000:])
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert re.search(r"No space left on the device of the store '.*t\.zarr'.*run the same command",
                         p.stderr), p.stderr
        before = store_state(disk / "t.zarr")
        assert before is not None and (before == 0).any(), "the disk did not fill mid-run"
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        p = subprocess.run([CLI, "run", str(f), "--no-progress"], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        study = bd.open_study(disk / "t.zarr")
        assert (study.state == 1).all()
        # cells the full disk let through were kept, not refit
        assert study.meta["runs"][-1]["done_before"] == int((before == 1).sum())
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_a_creation_marker_beside_a_complete_study_is_not_permission_to_wipe(tmp_path, cancer_standardised,
                                                                              client):
    from sklearn.linear_model import LogisticRegression

    X, y = cancer_standardised
    kw = dict(metric="roc_auc", n_splits=3, random_state=0, client=client, progress=False)
    store = tmp_path / "s.zarr"
    first = bd.run_study(LogisticRegression(), {"C": [0.1, 1.0]}, X, y, store=store, **kw)
    (store / ".bbc_creating").write_bytes(b"")  # a kill between the attributes and its removal
    again = bd.run_study(LogisticRegression(), {"C": [0.1, 1.0]}, X, y, store=store, **kw)
    assert again.n_fits_ == 0 and not (store / ".bbc_creating").exists()
    np.testing.assert_array_equal(again.cube["prediction"].values, first.cube["prediction"].values)
    # an overwrite killed after it removed the study's zarr.json: an interrupted creation
    (store / ".bbc_creating").write_bytes(b"")
    (store / "zarr.json").unlink()
    with pytest.raises(ValueError, match="interrupted creation or overwrite"):
        bd.open_study(store)
    redone = bd.run_study(LogisticRegression(), {"C": [0.1, 1.0]}, X, y, store=store, **kw)
    assert redone.n_fits_ == 2 * 3 and (redone.state == 1).all()


def test_an_interrupt_inside_a_client_call_acts_when_the_call_ends(foreground_sigint):
    """Ctrl-C inside ``Future.result()`` can leave distributed's client unable to gather
    anything again (its shared gather request cancelled before it started): the engine
    holds signals for the length of such calls; a second signal does not wait."""
    from bbc_dask._signals import deferred_interrupts, signals_as_interrupts

    reached = []
    with pytest.raises(KeyboardInterrupt):
        with deferred_interrupts():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)  # the handler has run by now and held the signal
            reached.append("end of the call")
    assert reached == ["end of the call"]
    with pytest.raises(KeyboardInterrupt):
        with deferred_interrupts():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
            reached.append("not reached")
    assert reached == ["end of the call"]
    with pytest.raises(StudyInterrupted) as info:
        with signals_as_interrupts(), deferred_interrupts():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
            reached.append("end of the second call")
    assert info.value.exit_code == 143 and reached[-1] == "end of the second call"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    # a call that fails after the signal: the interrupt is not lost with its error
    with pytest.raises(KeyboardInterrupt) as stopped:
        with deferred_interrupts():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
            raise ConnectionError("the call failed")
    assert isinstance(stopped.value.__context__, ConnectionError)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_full_disk_leaves_no_asyncio_noise_about_the_abandoned_chunk_writes(caplog):
    """When one chunk write of a Zarr call meets a full device, the call's other writes
    are abandoned; what asyncio would log about them (never-retrieved ENOSPC, destroyed
    pending tasks) is dropped once the error has been raised naming the store."""
    import asyncio
    import errno
    import gc
    import logging

    from bbc_dask.cube._location import writing
    from bbc_dask.exceptions import StoreFullError

    def abandon():
        loop = asyncio.new_event_loop()
        fut = loop.create_future()
        fut.set_exception(OSError(errno.ENOSPC, "No space left on device"))
        del fut
        gc.collect()
        loop.close()

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        abandon()
        assert any("never retrieved" in r.getMessage() for r in caplog.records)
        caplog.clear()
        with pytest.raises(StoreFullError, match="No space left on the device of the store 's'"):
            with writing("s"):
                raise OSError(errno.ENOSPC, "No space left on device")
        abandon()
        assert not caplog.records


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_an_interrupt_the_interpreter_swallowed_is_raised_again(foreground_sigint):
    """A Ctrl-C whose KeyboardInterrupt lands in a __del__ or a GC callback is printed and
    ignored by the interpreter (seen once in distributed's GC diagnosis): the run raises it
    again at its next safe point, never during the cleanup of one that did propagate."""
    from bbc_dask._signals import _RAISED, raise_swallowed, signals_as_interrupts

    class Landing:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler runs here: its exception goes nowhere

    with pytest.raises(KeyboardInterrupt):
        with signals_as_interrupts():
            Landing()
            assert _RAISED == [signal.SIGINT]
            try:
                raise ValueError("a cleanup in progress")
            except ValueError:
                raise_swallowed()  # not while another exception is being handled
            raise_swallowed()
    assert _RAISED == []
    raise_swallowed()  # outside a run: nothing pending
