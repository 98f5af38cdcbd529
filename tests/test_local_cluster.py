"""The local clusters ``make_client`` starts: workers forked ready from a server that
imported the study's modules once (or spawned, as distributed starts them, with the same
modules preloaded), distributed's diagnostics at slower intervals unless the user set
them, and a clear error for an unknown start method."""
import multiprocessing
import sys

import dask
import pytest

import bbc_dask as bd
from bbc_dask.preload import STUDY_MODULES


def _worker_view():
    import psutil

    parent = psutil.Process().parent()
    return {"imported": [m for m in STUDY_MODULES if m not in sys.modules],
            "parent": " ".join(parent.cmdline()) if parent is not None else "",
            "tick": dask.config.get("distributed.admin.tick.interval"),
            "monitor": dask.config.get("distributed.admin.system-monitor.interval")}


@pytest.mark.parametrize("method", ["forkserver", "spawn", None])
def test_local_workers_start_with_the_study_modules_imported(method):
    """Before any task: every module a study's task needs is in each worker; with
    "forkserver" the workers are children of multiprocessing's fork server (where the
    platform has one), otherwise of their nannies' process."""
    with bd.make_client("local", n_workers=2, dashboard_address=":0", start_method=method) as c:
        seen = list(c.run(_worker_view).values())
    assert [v["imported"] for v in seen] == [[], []]  # nothing left to import
    forked = method == "forkserver" and "forkserver" in multiprocessing.get_all_start_methods()
    assert all(("multiprocessing.forkserver" in v["parent"]) == forked for v in seen), seen


def test_a_cluster_of_threads_records_no_fork_server_environment():
    """A cluster of threads forks no worker: it must not record the environment the fork
    server "started with", or a later change (scikit-learn sets KMP_* variables when first
    imported) would send every later cluster's workers to spawn (found by the suite's
    order: a test of threads ran first)."""
    import subprocess

    code = ("import bbc_dask as bd, bbc_dask.cluster as cl\n"
            "c = bd.make_client('local', processes=False, n_workers=1, dashboard_address=':0')\n"
            "cl.close_client(c, close_cluster=True)\n"
            "print('recorded', sorted(cl._FORKSERVER_ENV))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "recorded []" in out.stdout, out.stderr[-2000:]


def test_workers_a_cluster_adds_later_get_its_settings():
    """A worker a scale-up adds (``cluster.scale``, ``adapt``) runs without the task
    profiler and with the slower diagnostics, as the first ones."""
    with bd.make_client("local", n_workers=1, dashboard_address=":0") as c:
        c.cluster.scale(2)
        c.wait_for_workers(2, timeout=120)
        seen = list(c.run(lambda: (dask.config.get("distributed.worker.profile.enabled"),
                                   _worker_view()["tick"], _worker_view()["imported"])).values())
    assert seen == [(False, "500ms", [])] * 2


def test_a_changed_environment_reaches_the_workers_of_a_later_cluster(monkeypatch):
    """The fork server keeps the environment it started with: after a variable changed
    (credentials set after a first cluster), a later cluster's workers see it (they are
    spawned, not forked)."""
    import os

    with bd.make_client("local", n_workers=1, dashboard_address=":0") as c:
        c.run(os.getpid)  # the fork server is up (or was, in this process)
    monkeypatch.setenv("BBC_DASK_TEST_LATE_VARIABLE", "seen")
    with bd.make_client("local", n_workers=1, dashboard_address=":0") as c:
        got = list(c.run(lambda: os.environ.get("BBC_DASK_TEST_LATE_VARIABLE")).values())
    assert got == ["seen"]


def test_local_workers_tick_slower_unless_told():
    with bd.make_client("local", n_workers=1, dashboard_address=":0") as c:
        (seen,) = c.run(_worker_view).values()
    assert (seen["tick"], seen["monitor"]) == ("500ms", "2s")
    with dask.config.set({"distributed.admin.tick.interval": "50ms"}):
        with bd.make_client("local", n_workers=1, dashboard_address=":0") as c:
            (seen,) = c.run(_worker_view).values()
    assert (seen["tick"], seen["monitor"]) == ("50ms", "2s")  # the user's value kept
    assert dask.config.get("distributed.admin.tick.interval") == "20ms"  # ours untouched


def test_an_unknown_start_method_is_refused_by_name():
    with pytest.raises(bd.exceptions.InvalidParameterError,
                       match=r"The 'start_method' parameter of make_client must be one of "
                             r"\['forkserver', 'spawn', None\]\. Got 'fork' instead"):
        bd.make_client("local", n_workers=1, start_method="fork")  # a fork of a running driver
