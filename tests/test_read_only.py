"""A study store on a read-only mount (issue 48): status, estimate, report and verify
inspect it, writing nothing and saying once that it cannot be resumed there; run and
verify --repair refuse it in one line naming the store.

The mount is real: each command runs in a private mount namespace (``unshare``) where the
store is bind-mounted read-only, so every write fails with EROFS as on a read-only
device — permission bits would not do, since root ignores them. Where mount namespaces
are not allowed (no root and no user namespaces), those tests are skipped; the test that
the reading commands write nothing runs anywhere.
"""
import fcntl
import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

import bbc_dask as bd
from _cli import run_cli
from bbc_dask.cube import StoreLock

BATCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "cli_batch.py")
NOTE = "is read-only here: it can be inspected, not resumed or repaired"

#: ``sh -c`` script: bind-mount $0 read-only over itself, then run the command ($@).
_READ_ONLY = 'mount --bind -o ro "$0" "$0" && exec "$@"'


@functools.lru_cache(maxsize=1)
def _namespace_prefix():
    """The ``unshare`` command line that gives a private mount namespace here (root's, or
    an unprivileged user's through a user namespace), or None when neither is allowed."""
    import tempfile

    if shutil.which("unshare") is None:
        return None
    with tempfile.TemporaryDirectory() as probe:
        for prefix in (["unshare", "--mount", "--propagation", "private"],
                       ["unshare", "--user", "--map-root-user", "--mount", "--propagation",
                        "private"]):
            p = subprocess.run(prefix + ["sh", "-c", _READ_ONLY, probe, "touch",
                                         os.path.join(probe, "x")],
                               capture_output=True, text=True, timeout=60)
            if "Read-only file system" in p.stderr and not os.path.exists(os.path.join(probe, "x")):
                return prefix
    return None


def read_only_cli(store, *commands):
    """Each of ``commands`` (argument lists of ``bbc-dask``) with ``store`` mounted
    read-only: one process in its own mount namespace runs them in turn
    (``scripts/cli_batch.py``), as ``run_cli`` does; a ``subprocess.CompletedProcess`` each."""
    prefix = _namespace_prefix()
    if prefix is None:
        pytest.skip("no mount namespace here (unshare needs root or user namespaces)")
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "results.json")
        todo = json.dumps([[str(a) for a in args] for args in commands])
        p = subprocess.run(prefix + ["sh", "-c", _READ_ONLY, str(store), sys.executable,
                                     BATCH, out, todo],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0 and os.path.exists(out), p.stderr[-3000:]
        with open(out, encoding="utf-8") as f:
            return [subprocess.CompletedProcess(**r) for r in json.load(f)]


def _tree(path):
    """Every file under ``path``: its size, modification time and content digest."""
    out = {}
    for root, _dirs, files in os.walk(path):
        for f in files:
            full = os.path.join(root, f)
            st = os.stat(full)
            with open(full, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            out[os.path.relpath(full, path)] = (st.st_size, st.st_mtime_ns, digest)
    return out


@pytest.fixture(scope="module")
def study_store(tmp_path_factory, client):
    """A small finished study (2 configurations, 3 folds) and a study file of it."""
    tmp = tmp_path_factory.mktemp("read_only")
    store = tmp / "study.zarr"
    X, y = make_classification(80, 5, random_state=0)
    bd.run_study(LogisticRegression(), {"C": [0.1, 1.0]}, X, y, metric="roc_auc", store=store,
                 n_splits=3, random_state=0, client=client, progress=False)
    spec = {"name": "ro", "data": {"sklearn": "breast_cancer"}, "metric": "roc_auc",
            "grid": [{"estimator": "sklearn.linear_model.LogisticRegression",
                      "grid": {"C": [0.1, 1.0]}}],
            "cv": {"splits": 3, "repeats": 1}, "random_state": 0, "store": str(store),
            "cluster": {"kind": "local", "n_workers": 1}}
    study_file = tmp / "study.yaml"
    study_file.write_text(yaml.safe_dump(spec))
    return store, study_file


def _errors(p):
    return [line for line in p.stderr.splitlines() if "error" in line or "Traceback" in line]


def test_reading_commands_inspect_a_read_only_mount(study_store, tmp_path):
    store, _ = study_store
    before = _tree(store)
    note = f"note: the store {store} {NOTE}"

    status, estimate, report, verify = read_only_cli(
        store, ["status", store, "--json"], ["estimate", store, "--bootstraps", 20],
        ["report", store, "--out", tmp_path / "report", "--bootstraps", 20], ["verify", store])
    p = status
    assert p.returncode == 0 and not _errors(p), p.stderr
    assert p.stderr.splitlines().count(note) == 1, p.stderr
    st = json.loads(p.stdout)
    assert st["done"] == st["cells"] == 6 and not st["running"]

    p = estimate
    assert p.returncode == 0 and not _errors(p), p.stderr
    assert note in p.stderr.splitlines() and "BBC" in p.stdout

    p = report
    assert p.returncode == 0 and not _errors(p), p.stderr
    assert note in p.stderr.splitlines() and (tmp_path / "report" / "index.html").exists()

    p = verify
    assert p.returncode == 0 and not _errors(p), p.stderr
    assert note in p.stderr.splitlines() and "no damage" in p.stdout

    # the library as well: a Study opened there reads its progress without the lock file
    code = ("import bbc_dask as bd, sys; st = bd.open_study(sys.argv[1]).status(); "
            "print(st['done'], st['running'])")
    p = subprocess.run(_namespace_prefix() + ["sh", "-c", _READ_ONLY, str(store), sys.executable,
                                              "-c", code, str(store)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.split() == ["6", "False"], p.stderr
    assert _tree(store) == before


def test_writing_commands_refuse_a_read_only_mount_in_one_line(study_store, tmp_path):
    store, study_file = study_store
    before = _tree(store)
    writing = [(["run", study_file, "--no-progress"], "not run or resumed"),
               (["verify", store, "--repair"], "not repaired")]
    # and a report asked to go into the read-only mount: refused before the study is read
    *refused, p = read_only_cli(store, *(args for args, _ in writing),
                                ["report", store, "--out", store / "report"])
    for (args, what), q in zip(writing, refused):
        assert q.returncode == 2, (args, q.returncode, q.stderr)
        assert q.stderr.splitlines() == [
            f"bbc-dask: error: The store '{store}' is read-only here: it can be inspected "
            f"(status, estimate, report, verify), {what}"], q.stderr
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert f"'{store / 'report'}' (--out) cannot be written here" in p.stderr
    assert _tree(store) == before


@pytest.mark.slow  # the default suite keeps the read-only mount itself
def test_reading_commands_write_nothing(study_store, tmp_path):
    """On a writable store too: no lock file made, no file touched (a store copied
    without its lock file, as a read-only copy often is)."""
    store = tmp_path / "copy.zarr"
    shutil.copytree(study_store[0], store)
    os.remove(store / ".bbc_lock")
    before = _tree(store)
    # (estimate never read the lock; the read-only mount above covers it)
    for args in (["status", store], ["verify", store],
                 ["report", store, "--out", tmp_path / "report", "--bootstraps", 20]):
        p = run_cli(*args)
        assert p.returncode == 0 and NOTE not in p.stderr, (args, p.stderr)
    assert _tree(store) == before


def test_lock_probe_sees_a_run_not_another_probe(tmp_path):
    """``is_held`` reads the lock file with a shared lock: a run's exclusive lock is seen,
    a concurrent probe (another status) is not mistaken for a run."""
    lock = StoreLock(tmp_path).acquire()
    try:
        assert StoreLock(tmp_path).is_held()
    finally:
        lock.release()
    assert not StoreLock(tmp_path).is_held()
    fd = os.open(tmp_path / ".bbc_lock", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # another status, mid-probe
        assert not StoreLock(tmp_path).is_held()
    finally:
        os.close(fd)


# ------------------------------------------- a store that cannot be written, before a cluster
def _no_cluster(monkeypatch):
    """A LocalCluster started from now on fails the test: the refusal must come first."""
    import distributed

    def started(*args, **kwargs):
        raise AssertionError("a LocalCluster was started before the store was refused")

    monkeypatch.setattr(distributed.LocalCluster, "__init__", started)


def _tiny_study(store, **kw):
    X, y = make_classification(40, 4, random_state=0)
    return bd.run_study(LogisticRegression(), {"C": [0.1, 1.0]}, X, y, metric="roc_auc",
                        store=store, n_splits=2, random_state=0, progress=False, **kw)


def test_a_store_that_cannot_be_created_is_refused_before_any_cluster(tmp_path, monkeypatch):
    """A store under a file: one line naming the store, from run_study, BBCSearchCV and
    the command line, before a LocalCluster starts (the study would otherwise start one,
    10-50 s, to fail at the lock)."""
    from click.testing import CliRunner

    from bbc_dask.cli import main
    from bbc_dask.exceptions import StoreAccessError

    _no_cluster(monkeypatch)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("")
    store = a_file / "study.zarr"
    with pytest.raises(StoreAccessError, match=(
            rf"^Cannot write the store '{store}': '{a_file}' is a file, not a directory; "
            rf"choose a store this user may write$")):
        _tiny_study(store)
    X, y = make_classification(40, 4, random_state=0)
    with pytest.raises(StoreAccessError, match="is a file, not a directory"):
        bd.BBCSearchCV(LogisticRegression(), {"C": [0.1, 1.0]}, cv=2, store=store).fit(X, y)
    spec = {"name": "w", "data": {"sklearn": "breast_cancer"}, "metric": "roc_auc",
            "grid": [{"estimator": "sklearn.linear_model.LogisticRegression",
                      "grid": {"C": [0.1, 1.0]}}],
            "cv": {"splits": 2, "repeats": 1}, "random_state": 0, "store": str(store)}
    study_file = tmp_path / "study.yaml"
    study_file.write_text(yaml.safe_dump(spec))
    res = CliRunner().invoke(main, ["run", str(study_file), "--no-progress"])
    assert res.exit_code == 2, res.output
    assert res.output.splitlines() == [
        f"bbc-dask: error: Cannot write the store '{store}': '{a_file}' is a file, not a "
        f"directory; choose a store this user may write"], res.output
    assert not store.exists()


def test_a_store_in_a_directory_this_user_may_not_write_is_refused(tmp_path, monkeypatch):
    """Permission bits (a directory of mode 0555): refused as above. They do not stop
    root, for whom this test is skipped (the read-only mount test covers a directory
    that cannot be written, for root too)."""
    from bbc_dask.exceptions import StoreAccessError

    _no_cluster(monkeypatch)
    closed = tmp_path / "closed"
    closed.mkdir()
    closed.chmod(0o555)
    try:
        if os.access(closed, os.W_OK):
            pytest.skip("permission bits do not stop this user (root)")
        with pytest.raises(StoreAccessError, match=(
                rf"^Cannot write the store '{closed / 'a' / 'study.zarr'}': this user may not "
                rf"write the directory '{closed}'; choose a store this user may write$")):
            _tiny_study(closed / "a" / "study.zarr")
    finally:
        closed.chmod(0o755)


_REFUSED_IN_PROCESS = """
import sys, distributed, pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
import bbc_dask as bd
from bbc_dask.exceptions import StoreAccessError
def started(*a, **k):
    raise AssertionError("a LocalCluster was started before the store was refused")
distributed.LocalCluster.__init__ = started
X, y = make_classification(40, 4, random_state=0)
try:
    bd.run_study(LogisticRegression(), {"C": [0.1, 1.0]}, X, y, metric="roc_auc",
                 store=sys.argv[1], n_splits=2, random_state=0, progress=False)
except StoreAccessError as e:
    print(e)
"""


def test_a_new_store_on_a_read_only_mount_is_refused_before_any_cluster(study_store, tmp_path):
    """A real read-only file system (a directory bind-mounted read-only in a private mount
    namespace, as in the tests above): a new store there is refused in one line naming it,
    by run_study and by the command line, before a cluster starts and without a write."""
    prefix = _namespace_prefix()
    if prefix is None:
        pytest.skip("no mount namespace here (unshare needs root or user namespaces)")
    _, study_file = study_store
    ro = tmp_path / "ro"
    ro.mkdir()
    store = ro / "new" / "study.zarr"
    want = (f"Cannot write the store '{store}': the directory '{ro}' is on a read-only file "
            f"system; choose a store this user may write")
    p = subprocess.run(prefix + ["sh", "-c", _READ_ONLY, str(ro), sys.executable, "-c",
                                 _REFUSED_IN_PROCESS, str(store)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.splitlines() == [want], (p.stdout, p.stderr)
    spec = yaml.safe_load(study_file.read_text())
    spec["store"] = str(store)
    spec_file = tmp_path / "new.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    (p,) = read_only_cli(ro, ["run", spec_file])  # with progress: a started cluster says so
    assert p.returncode == 2 and p.stderr.splitlines() == [f"bbc-dask: error: {want}"], p.stderr
    assert os.listdir(ro) == []
