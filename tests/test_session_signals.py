"""``make test`` ends on SIGTERM and SIGINT, and leaves nothing running.

Two causes kept it going: make runs a recipe through ``/bin/sh -c``, so the SIGTERM make
forwards killed the shell and left pytest (and its clusters) running — the recipes
``exec`` pytest now, and tests/conftest.py makes SIGTERM end the session as Ctrl-C does
(by default it killed pytest at once and left the clusters' worker processes behind);
and a second Ctrl-C that landed in the warm cluster's close at the interpreter's exit
left the client half closed, whose finaliser then waited a minute for an event loop
already gone (bbc_dask.cluster.close_shared_client ignores it now).

Each test runs pytest on a tiny test file, signals it the way a user or CI does and waits
for the session's processes to end: the bound is a hang detector (they end in seconds),
not a speed target.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(REPO, "tests")
BOUND = 120

TINY = '''
import os
import time

import numpy as np
from sklearn.datasets import make_classification

import bbc_dask as bd
from _estimators import Gated

GATE = os.environ["BBC_TEST_GATE"]


def test_holds_a_cluster(client):
    assert client.submit(os.getpid).result() != os.getpid()
    open(os.path.join(GATE, "blocked"), "w").close()
    time.sleep(600)


def test_fits_on_the_warm_cluster():
    X, y = make_classification(60, 4, random_state=0)
    bd.BBCSearchCV(Gated(gate=GATE), {"C": list(np.geomspace(0.01, 10, 20))}, cv=3,
                   n_jobs=2).fit(X, y)
'''


def _alive(pgid):
    """The processes of the group ``pgid`` still running (zombies, already ended, left
    out: a container's first process may never reap them)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(pid))
    return out


def _session(tmp_path, command, test):
    """Start ``command`` (a list, ending with the pytest arguments) on the tiny test file
    in a new session, and wait until its test holds the cluster; returns the process."""
    (tmp_path / "test_tiny.py").write_text(TINY)
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / "hold").touch()
    env = {**os.environ, "BBC_TEST_GATE": str(gate),
           "PYTHONPATH": os.pathsep.join([TESTS, str(tmp_path)])}
    args = [f"{tmp_path / 'test_tiny.py'}::{test}", "-p", "conftest", "-p", "no:cacheprovider",
            "-c", os.path.join(REPO, "pyproject.toml"), "--rootdir", REPO, "-q"]
    # SIGINT as a terminal's foreground process has it: a shell's background job (CI's
    # `.ci/run &`) starts with SIGINT ignored, which make and pytest would inherit
    proc = subprocess.Popen(command(args), cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + BOUND
    while not (gate / "blocked").exists():
        if proc.poll() is not None or time.time() > deadline:
            out = proc.communicate(timeout=BOUND)[0] if proc.poll() is not None else ""
            _kill(proc)
            pytest.fail(f"the tiny session never held its cluster: {out[-3000:]}")
        time.sleep(0.1)
    time.sleep(0.5)
    return proc


def _ended(proc):
    """Wait (at most BOUND seconds) for the process and its whole session to end; its
    output."""
    try:
        out = proc.communicate(timeout=BOUND)[0]
    except subprocess.TimeoutExpired:
        _kill(proc)
        pytest.fail(f"still running {BOUND} s after the signal")
    deadline = time.time() + BOUND
    while _alive(proc.pid) and time.time() < deadline:
        time.sleep(0.2)
    left = _alive(proc.pid)
    _kill(proc)
    assert not left, f"processes of the session still running: {left}\n{out[-3000:]}"
    return out


def _kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


@pytest.mark.skipif(shutil.which("make") is None
                    or not os.path.exists(os.path.join(REPO, ".venv", "bin", "python")),
                    reason="needs make and the repository's .venv (make test's own)")
def test_sigterm_to_make_test_ends_pytest_and_its_cluster(tmp_path):
    """SIGTERM to make alone (what a CI cancel or ``kill`` sends): make forwards it to
    its child, pytest itself, whose session ends through its KeyboardInterrupt path and
    closes the session's cluster: nothing of it is left."""
    proc = _session(tmp_path, lambda args: [
        "make", "-o", ".venv/.test", "-o", ".venv/.core", "test",
        "PYTEST_ARGS=" + " ".join(args)], "test_holds_a_cluster")
    os.kill(proc.pid, signal.SIGTERM)
    out = _ended(proc)
    assert "KeyboardInterrupt" in out, out[-3000:]


def test_repeated_ctrl_c_ends_a_session_on_the_warm_cluster(tmp_path):
    """Ctrl-C three times (to the process group, as a terminal sends it) while a search
    fits on the warm cluster: the session ends, the warm cluster's close at exit is not
    cut short (it hung for a minute once it was), nothing is left running."""
    proc = _session(tmp_path, lambda args: [sys.executable, "-m", "pytest", *args],
                    "test_fits_on_the_warm_cluster")
    for pause in (0, 0.5, 1.0):
        time.sleep(pause)
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            break
    out = _ended(proc)
    assert "Exception ignored in atexit callback" not in out, out[-3000:]
