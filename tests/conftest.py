"""Shared fixtures, in the style of distributed.utils_test: Dask clusters (the session's
LocalCluster client, a factory of fresh ones, real `dask scheduler`/`dask worker` processes
with or without TLS), a moto S3 server, the data sets several modules use.

tests/ and tests/scripts/ are on sys.path through pytest's ``pythonpath`` (pyproject.toml);
Dask's worker processes, spawned by multiprocessing, inherit it.
"""
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple

import pytest

import bbc_dask as bd
from _helpers import wait_until
from _reference import ALL_METRICS as METRIC_NAMES  # the metrics under test

# The key that signs saved models' records lives outside any store; the tests (and the
# processes they start, which inherit the environment) use their own, not the user's.
os.environ.setdefault("BBC_DASK_TRUST_KEY", os.path.join(tempfile.mkdtemp(prefix="bbc_key_"), "trust.key"))


# ------------------------------------------------------------------------ signals
def _terminated(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends it at once
    raise KeyboardInterrupt


def pytest_configure(config):
    """SIGTERM (``make test`` forwards it; CI sends it to cancel) ends the session as
    Ctrl-C does: pytest's KeyboardInterrupt path closes the fixtures' clusters and prints
    the summary. By default it killed pytest at once and left the clusters' worker
    processes running. A run in progress turns it into StudyInterrupted (also a
    KeyboardInterrupt) itself."""
    import threading

    if threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminated)


# ------------------------------------------------------------------------ settings
@pytest.fixture
def dask_config():
    """``dask_config({"bbc_dask.chunk-bytes": 8})``: ``dask.config.set`` for the rest of
    the test, undone at its teardown (later calls nest in earlier ones). A setting is seen
    by this process, and by the workers of a cluster started after it; the workers of a
    cluster already running keep the configuration they started with."""
    import dask

    with contextlib.ExitStack() as stack:
        yield lambda settings: stack.enter_context(dask.config.set(settings))


# ------------------------------------------------------------------------ local clusters
LOCAL_CLUSTER = dict(n_workers=2, threads_per_worker=1, dashboard_address=":0")


@contextlib.contextmanager
def local_client(**options):
    """A Client on a new LocalCluster of worker processes: ``LOCAL_CLUSTER`` (two workers
    of one thread, any dashboard port) updated with ``options``; both closed on exit.
    ``client.cluster`` is the cluster."""
    from distributed import Client, LocalCluster

    with LocalCluster(**(LOCAL_CLUSTER | options)) as cluster, Client(cluster) as c:
        yield c


@pytest.fixture(scope="session")
def client():
    """A real two-worker LocalCluster (processes, one thread each), shared by the tests
    that do not disturb it (tests that kill workers, or need another cluster, start their
    own with ``make_local_client``). Started once: a cluster costs seconds."""
    with local_client() as c:
        yield c


def _running_clusters():
    """The local (Spec)clusters of this process that are not closed: none before anything
    imported distributed."""
    if "distributed" not in sys.modules:
        return {}
    from distributed.core import Status
    from distributed.deploy.spec import SpecCluster

    return {id(c): c for c in list(SpecCluster._instances)
            if c.status not in (Status.closing, Status.closed, Status.failed)}


@pytest.fixture(autouse=True)
def no_cluster_left_running():
    """No test leaves a cluster running for the next: a cluster started during a test
    is closed by its end — the session's ``client`` (started before any test's own
    fixtures) and the warm cluster the package keeps for estimators given no client
    (``bbc_dask.cluster.shared_client``, one per process by design) excepted. One left
    running is closed and the test errors, naming it."""
    before = set(_running_clusters())
    yield
    from bbc_dask import cluster as cluster_module

    shared = cluster_module._SHARED["client"]
    kept = getattr(shared, "cluster", None)
    left = [c for key, c in _running_clusters().items() if key not in before and c is not kept]
    for c in left:
        with contextlib.suppress(Exception):
            c.close()
    assert not left, f"the test left {len(left)} cluster(s) running: {left}"


@pytest.fixture(autouse=True)
def no_signal_handler_left_changed():
    """No test leaves this process's SIGINT or SIGTERM handling changed for the next: a
    SIGINT left ignored is inherited by every process a later test starts (a pytest run
    that a test then interrupts with Ctrl-C would never end) and turns off the study's
    own Ctrl-C handling. One left changed is restored and the test errors, naming it."""
    watched = (signal.SIGINT, signal.SIGTERM)
    before = {sig: signal.getsignal(sig) for sig in watched}
    yield
    changed = {sig.name: signal.getsignal(sig) for sig in watched if signal.getsignal(sig) != before[sig]}
    for sig in watched:
        if sig.name in changed and before[sig] is not None:
            signal.signal(sig, before[sig])
    assert not changed, f"the test left signal handlers changed: {changed}"


@pytest.fixture(scope="session", autouse=True)
def close_the_zygote():
    """The fault-injection runs' zygote (``_zygote.SHARED``), ended with the session."""
    yield
    if "_zygote" in sys.modules:
        sys.modules["_zygote"].SHARED.close()


@pytest.fixture
def make_local_client():
    """``local_client`` for tests of their own cluster: ``with make_local_client(n_workers=1)
    as c:``."""
    return local_client


# ------------------------------------------------- `dask scheduler` and `dask worker` processes
DASK = os.path.join(os.path.dirname(sys.executable), "dask")


def start_dask_worker(address, name, tls_args=(), env=None, preload=()):
    """One `dask worker` process of one thread joining the scheduler at ``address``, in
    its own session (SIGKILL its group to stop it); ``env``: variables added to its
    environment; ``preload``: modules given to ``--preload``."""
    return subprocess.Popen(
        [DASK, "worker", address, "--nthreads", "1", "--nworkers", "1", "--no-dashboard",
         "--host", "127.0.0.1", "--name", name, *tls_args,
         *[a for m in preload for a in ("--preload", m)]],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env=None if env is None else {**os.environ, **env})


@contextlib.contextmanager
def dask_processes_cluster(directory, n_workers=2, tls=None, env=None):
    """A real `dask scheduler` and ``n_workers`` `dask worker` processes (one thread each)
    on 127.0.0.1, each in its own session, SIGKILLed on exit; the scheduler file goes to
    ``directory``. ``tls``: the (CA, certificate, key) files every process and the client
    use (the scheduler speaks TLS only); ``env``: variables added to the processes'
    environment. Yields (address, the worker processes, the client's security dict or None)
    once every worker has joined."""
    sched_file = directory / "sched.json"
    tls_args, security = [], None
    if tls is not None:
        ca, cert, key = map(str, tls)
        tls_args = ["--tls-ca-file", ca, "--tls-cert", cert, "--tls-key", key]
        security = {"tls_ca_file": ca, "tls_client_cert": cert, "tls_client_key": key}
    popen = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                 env=None if env is None else {**os.environ, **env})
    procs = [subprocess.Popen(
        [DASK, "scheduler", *(["--protocol", "tls"] if tls is not None else []), "--host", "127.0.0.1",
         "--port", "0", "--no-dashboard", "--scheduler-file", str(sched_file), *tls_args], **popen)]
    try:
        wait_until(lambda: sched_file.exists() and sched_file.stat().st_size > 0, 60, "scheduler")
        address = json.loads(sched_file.read_text())["address"]
        if tls is not None:
            assert address.startswith("tls://127.0.0.1:")
        workers = [start_dask_worker(address, f"w{i}", tls_args, env) for i in range(n_workers)]
        procs += workers
        with bd.make_client("address", address=address, security=security) as c:
            c.wait_for_workers(n_workers, timeout=60)
        yield address, workers, security
    finally:
        kill_sessions(procs)


def kill_sessions(procs):
    """SIGKILL the session of each process of ``procs`` (started with
    ``start_new_session``) and reap it."""
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


@pytest.fixture
def dask_processes(tmp_path):
    """A real `dask scheduler` and two `dask worker` processes on 127.0.0.1 for one test
    (which may kill them); yields (address, the worker processes)."""
    with dask_processes_cluster(tmp_path) as (address, workers, _):
        yield address, workers


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    """A TLS-secured `dask scheduler` and two workers (certificates made here, for
    127.0.0.1), encryption required of every connection (dask config read by all
    processes); yields (address, the client's security dict, the certificates' directory)."""
    from _certs import make_certs

    d = tmp_path_factory.mktemp("tls")
    with dask_processes_cluster(d, tls=make_certs(d),
                                env={"DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True"}) as (
            address, _, security):
        yield address, security, d


# ------------------------------------------------------------------------ S3 (moto server)
MOTO = os.path.join(os.path.dirname(sys.executable), "moto_server")


class S3Server(NamedTuple):
    """A moto S3 server on 127.0.0.1 and its bucket ``bucket``; ``env``: the credentials
    and endpoint for processes that use it (the AWS_* variables)."""

    endpoint: str
    env: dict
    bucket = "bbc-studies"

    @property
    def storage_options(self):
        """fsspec/s3fs options that reach the server."""
        return {"key": "testing", "secret": "testing",
                "client_kwargs": {"endpoint_url": self.endpoint, "region_name": "us-east-1"}}

    def url(self, name):
        """A fresh store URL in the bucket (``name`` and a random suffix)."""
        return f"s3://{self.bucket}/{name}-{os.urandom(4).hex()}.zarr"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3():
    """A moto S3 server process (server mode) with an empty bucket, an ``S3Server``; the
    tests that use it are marked ``s3`` (pytest_collection_modifyitems below)."""
    port = _free_port()
    proc = subprocess.Popen([MOTO, "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    endpoint = f"http://127.0.0.1:{port}"
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}
    try:
        import boto3

        deadline = time.time() + 30
        while True:
            try:
                boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                             aws_access_key_id="testing", aws_secret_access_key="testing"
                             ).create_bucket(Bucket=S3Server.bucket)
                break
            except Exception:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        yield S3Server(endpoint, env)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.hookimpl(tryfirst=True)  # before -m selects
def pytest_collection_modifyitems(items):
    for item in items:
        if "s3" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.s3)


# ------------------------------------------------------------------------------ data sets
@pytest.fixture(scope="module")
def cancer():
    """Breast cancer (569 x 30, binary) as scikit-learn loads it (one copy per module)."""
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(return_X_y=True)


@pytest.fixture(scope="module")
def cancer_standardised(cancer):
    """Breast cancer with standardised features: logistic fits converge quietly."""
    X, y = cancer
    return (X - X.mean(axis=0)) / X.std(axis=0), y


@pytest.fixture(params=METRIC_NAMES)
def metric_name(request):
    return request.param
