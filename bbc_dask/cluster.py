"""Getting a Dask client: a local cluster (default), an existing scheduler, or a cluster on
Kubernetes through the Dask operator (``dask-kubernetes``' ``KubeCluster``)."""
from __future__ import annotations

import contextlib
import copy
import importlib.machinery
import os
import signal
import sys
import threading
import uuid
import weakref

from .exceptions import InvalidParameterError, SchedulerUnreachableError, UserFileNotFoundError
from ._doors import door, the_parameter

__all__ = ["KUBERNETES_DEFAULTS", "as_security", "close_client", "close_shared_client",
           "current_client", "kubernetes_cluster_spec", "make_client", "resolve_client",
           "shared_client", "threads_of"]

_KINDS = ("local", "address", "kubernetes")


def _default_image():
    from . import __version__

    return os.environ.get("BBC_DASK_IMAGE", f"bbc-dask:{__version__}")


#: Defaults of ``make_client(kind="kubernetes")``; every key can be overridden from
#: ``make_client``'s options, the study file's ``cluster:`` section or the CLI.
KUBERNETES_DEFAULTS = {
    "name": None,               # None: "bbc-dask-<8 hex>"
    "namespace": "default",
    "image": None,              # None: $BBC_DASK_IMAGE or "bbc-dask:<version>" (deploy/Dockerfile)
    "n_workers": 2,
    "threads_per_worker": 1,    # the fits are single-threaded scikit-learn calls
    "resources": {"requests": {"cpu": "1", "memory": "4Gi"},
                  "limits": {"cpu": "1", "memory": "4Gi"}},
    "adapt_minimum": None,      # both None: a fixed number of workers
    "adapt_maximum": None,
    "env": {},
    "scheduler_service_type": "ClusterIP",
    "idle_timeout": 0,
    "resource_timeout": 300,
}

#: Non-root, no privilege escalation, no capabilities: the pod security "restricted" profile.
_CONTAINER_SECURITY = {
    "allowPrivilegeEscalation": False,
    "privileged": False,
    "readOnlyRootFilesystem": False,  # dask writes spill files and a scratch directory
    "runAsNonRoot": True,
    "capabilities": {"drop": ["ALL"]},
}
_POD_SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": 10001,
    "runAsGroup": 10001,
    "fsGroup": 10001,
    "seccompProfile": {"type": "RuntimeDefault"},
}


@door("kubernetes_cluster_spec", always=True)
def kubernetes_cluster_spec(**options):
    """The ``DaskCluster`` custom resource that ``make_client(kind="kubernetes")`` creates.

    Built with ``dask_kubernetes.operator.make_cluster_spec`` from :data:`KUBERNETES_DEFAULTS`
    updated with ``options``, then hardened: ``dask scheduler``/``dask worker`` commands
    with one thread per worker, resource requests and limits on every container, non-root
    pod and container security contexts (no privilege escalation, all capabilities
    dropped, RuntimeDefault seccomp), and the workers preload :mod:`bbc_dask.preload`.

    Returns
    -------
    dict
        ``apiVersion: kubernetes.dask.org/v1``, ``kind: DaskCluster``.
    """
    opts = _kubernetes_options(options)
    make_cluster_spec = _import_operator().make_cluster_spec
    # the study's modules imported as a worker starts: an autoscaled worker runs its
    # first task at once (bbc_dask.preload)
    worker_cmd = ["dask", "worker", "--nthreads", str(opts["threads_per_worker"]),
                  "--preload", "bbc_dask.preload"]
    spec = make_cluster_spec(
        name=opts["name"], image=opts["image"], n_workers=opts["n_workers"],
        resources=copy.deepcopy(opts["resources"]), env=dict(opts["env"]) or None,
        worker_command=worker_cmd, scheduler_service_type=opts["scheduler_service_type"],
        idle_timeout=opts["idle_timeout"])
    spec["metadata"]["namespace"] = opts["namespace"]
    spec["metadata"]["labels"] = {"app.kubernetes.io/name": "bbc-dask",
                                  "app.kubernetes.io/component": "dask-cluster"}
    for role in ("scheduler", "worker"):
        pod = spec["spec"][role]["spec"]
        pod["securityContext"] = copy.deepcopy(_POD_SECURITY)
        pod["automountServiceAccountToken"] = False
        for c in pod["containers"]:
            c["securityContext"] = copy.deepcopy(_CONTAINER_SECURITY)
            c["imagePullPolicy"] = "IfNotPresent"
            env = [e for e in c.get("env") or [] if opts["env"]]
            if role == "worker":  # the user's values win
                env += [{"name": k, "value": v} for k, v in WORKER_ENV.items()
                        if k not in opts["env"]]
            if env:
                c["env"] = env
            else:
                c.pop("env", None)
    # dask-kubernetes' template calls the old `dask-scheduler` entry point.
    sched = spec["spec"]["scheduler"]["spec"]["containers"][0]
    sched["args"] = ["dask", "scheduler", "--host", "0.0.0.0"] + [
        a for a in sched["args"][1:] if a not in ("--host", "0.0.0.0")]
    return spec


_RESOURCES = "a dict with 'requests' and/or 'limits' dicts (e.g. {'requests': {'cpu': '1'}})"


def _kubernetes_options(options):
    from . import _validation as validation

    validation.reject_unknown(options, sorted(KUBERNETES_DEFAULTS), what="option")
    opts = copy.deepcopy({**KUBERNETES_DEFAULTS, **options})
    opts["name"] = opts["name"] or f"bbc-dask-{uuid.uuid4().hex[:8]}"
    opts["image"] = opts["image"] or _default_image()
    for key in ("n_workers", "threads_per_worker", "resource_timeout"):
        opts[key] = validation.check_int(opts[key], key)
    opts["adapt_minimum"], opts["adapt_maximum"] = validation.check_bounds(
        opts["adapt_minimum"], opts["adapt_maximum"], ("adapt_minimum", "adapt_maximum"))
    res = validation.check_instance(opts["resources"], "resources", dict, _RESOURCES)
    if set(res) - {"requests", "limits"} or not all(isinstance(v, dict) for v in res.values()):
        raise InvalidParameterError.of("resources", _RESOURCES, res)
    validation.check_instance(opts["env"], "env", dict, "a dict of environment variables")
    opts["env"] = {str(k): str(v) for k, v in opts["env"].items()}
    return opts


def _import_operator():
    try:
        import dask_kubernetes.operator as op
    except ImportError as e:
        raise ImportError(
            f"make_client(kind='kubernetes') needs the optional extra bbc-dask[kubernetes] "
            f"(dask-kubernetes): pip install 'bbc-dask[kubernetes]' ({e})."
        ) from None
    return op


_SECURITY = "a distributed Security, a dict of its arguments, True or None"


def current_client():
    """The default ``distributed.Client`` of this process, or None (none, or distributed
    not installed): what Dask computes on when no client is given."""
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def threads_of(client):
    """The worker threads of ``client``'s cluster now (at least 1): one question to its
    scheduler."""
    return max(1, sum(client.nthreads().values()))


def as_security(security):
    """A :class:`distributed.security.Security` from None, True (temporary self-signed
    certificates, for a local cluster), a ``Security`` or a dict of its arguments."""
    if security is None or security is False:
        return None
    from distributed.security import Security

    if isinstance(security, Security):
        return security
    if security is True:
        return Security.temporary()
    if isinstance(security, dict):
        for key, value in security.items():
            if key.startswith("tls_") and key != "tls_min_version" and isinstance(value, str) \
                    and not value.lstrip().startswith("-----BEGIN") and not os.path.isfile(value):
                raise UserFileNotFoundError(f"{the_parameter('security')}: {key} = {value!r}: "
                                        f"no such file.")
        try:
            return Security(**{"require_encryption": True, **security})
        except TypeError as e:
            raise InvalidParameterError.of("security", _SECURITY, security,
                                           note=f"({e})") from None
    raise InvalidParameterError.of("security", _SECURITY,
                                   shown=f"a {type(security).__name__}")


#: glibc malloc thresholds of the workers bbc_dask starts (bytes). distributed sets
#: ``MALLOC_TRIM_THRESHOLD_=65536`` so that workers hand freed memory back at once; that
#: also fixes the mmap threshold at 128 kB, so every buffer of a task (a 1.6 MB chunk, a
#: 400 kB argsort, a 256 kB row of bootstrap counts) is mapped and faulted in afresh.
#: Buffers under 1 MiB come from the heap instead, and a worker keeps at most 4 MiB freed
#: at the top of a heap: faster than distributed's setting, and lower peaks than larger
#: thresholds, with which workers paused or stalled in the chunked BBC of 1,000,000
#: samples (the measurements: docs/performance.md, "Tuning constants").
MALLOC_MMAP_THRESHOLD = 2**20
MALLOC_TRIM_THRESHOLD = 4 * 2**20
#: The environment of every worker this module starts (locally through the nanny's
#: ``pre-spawn-environ``, on Kubernetes in the worker containers; the image sets it too).
#: A nanny takes ``MALLOC_TRIM_THRESHOLD_`` from its own environment over its config.
WORKER_ENV = {"MALLOC_TRIM_THRESHOLD_": str(MALLOC_TRIM_THRESHOLD),
              "MALLOC_MMAP_THRESHOLD_": str(MALLOC_MMAP_THRESHOLD)}


def _quiet_resource_tracker():
    """Start multiprocessing's resource tracker (if no process has yet) with its end-of-run
    report silenced. A worker process killed while a fit holds a semaphore (joblib's,
    loky's: a cancelled fit still running when its cluster closes) leaves it registered;
    the tracker removes it when the run's process exits and says "There appear to be 1
    leaked semaphore objects to clean up at shutdown" — nothing the user can act on, and
    printed after the run's own last line. The tracker takes its warning options from
    this process's ``sys.warnoptions`` when it starts, hence the option is set just
    then."""
    from multiprocessing import resource_tracker

    option = "ignore:resource_tracker:UserWarning"
    sys.warnoptions.append(option)
    try:
        resource_tracker.ensure_running()
    finally:
        sys.warnoptions.remove(option)


@contextlib.contextmanager
def _malloc_thresholds():
    """Workers spawned inside get :data:`WORKER_ENV` unless the user configured
    ``distributed.nanny.pre-spawn-environ`` differently from distributed's default."""
    import dask

    key = "distributed.nanny.pre-spawn-environ"
    env = dict(dask.config.get(key, default={}) or {})
    if str(env.get("MALLOC_TRIM_THRESHOLD_", 65536)) != "65536" or "MALLOC_MMAP_THRESHOLD_" in env:
        yield
        return
    env.update(WORKER_ENV)
    with dask.config.set({key: env}):
        yield


#: Intervals of distributed's diagnostics in the processes of a local cluster of ours
#: (distributed's defaults: 20 ms and 500 ms). The event loop's tick measures how late the
#: loop runs (the "Event loop was unresponsive" warning, still given) and the system
#: monitor samples CPU, memory and I/O for the dashboard's graphs; every worker, its
#: nanny and the scheduler run both. Measured on an idle cluster of 32 workers on 2
#: cores: 0.58 of a core with distributed's intervals, 0.27 with these
#: (docs/performance.md, "Scale-out"). A value the user configured is kept.
DIAGNOSTICS_INTERVALS = {"distributed.admin.tick.interval": ("20ms", "500ms"),
                         "distributed.admin.system-monitor.interval": ("500ms", "2s")}


def _settings(profile):
    """The dask settings of a local cluster of ours (flat keys): distributed's
    diagnostics at :data:`DIAGNOSTICS_INTERVALS` where the user left them at
    distributed's defaults, and, unless ``profile``, no statistical task profiler in
    the workers: it samples every running task's thread every 10 ms, and a fit ran 4-8%
    slower with it (a random forest 0.72 against 0.68 s of CPU, scaled logistic
    regressions 0.12 against 0.11 s; docs/performance.md) — the dashboard's Profile page
    is its only reader."""
    import dask

    out = {key: value for key, (default, value) in DIAGNOSTICS_INTERVALS.items()
           if str(dask.config.get(key, default=default)) == default}
    if not profile:
        out["distributed.worker.profile.enabled"] = False
    return out


#: The start method of the worker processes of :func:`make_client`'s local clusters:
#: multiprocessing's fork server on Linux; elsewhere as distributed is configured (spawn:
#: macOS's system frameworks are not safe across a fork).
START_METHOD = "forkserver" if sys.platform.startswith("linux") else None

#: The environment the fork server of this process started with (it keeps it for life),
#: once a cluster of ours started it.
_FORKSERVER_ENV = {}


#: Variables that change while a process runs and that no worker reads: pytest's name of
#: the test running now.
_UNREAD_VARIABLES = {"PYTEST_CURRENT_TEST"}


def _environment_now():
    """The environment a worker started now would see, but for the variables of
    distributed's ``pre-spawn-environ`` (and ours, :data:`WORKER_ENV`), which the nannies
    set themselves before every start (threads per BLAS, malloc's thresholds; a nanny a
    scale-up adds rewrites them in this process's environment), and
    :data:`_UNREAD_VARIABLES`."""
    import dask

    own = set(dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {})
    skip = own | set(WORKER_ENV) | _UNREAD_VARIABLES
    return {k: v for k, v in os.environ.items() if k not in skip}


@contextlib.contextmanager
def _start_method(method):
    """Workers spawned inside are started by ``method``. With "forkserver", one server
    process imports distributed and the modules of :mod:`bbc_dask.preload` once and every
    worker is forked from it, ready: 16 workers on 2 cores were ready to run a study's
    first task 2.1 s after the cluster was asked for, against 13.6 s when each spawned
    worker imported the same modules itself (and 0.34 against 1.95 GiB of memory of their
    own; docs/performance.md, "Scale-out"). Python starts one fork server per process, at
    the first worker it forks, with the environment of that moment (distributed's nanny
    sets its ``pre-spawn-environ`` just before: one thread per BLAS, malloc's thresholds),
    and keeps it for the process's life: when the environment has changed since (S3
    credentials set in a notebook after its first cluster), the workers are spawned as
    distributed is configured instead, so that they see it. Workers a cluster starts later
    (``scale``, ``adapt``, a nanny restarting a killed worker) are started as distributed
    is configured (spawn, by default); the preload imports the same modules in them."""
    import multiprocessing

    import dask

    key = "distributed.worker.multiprocessing-method"
    if method is None or method not in multiprocessing.get_all_start_methods() or (
            method == "forkserver" and _FORKSERVER_ENV
            and _FORKSERVER_ENV["env"] != _environment_now()):
        yield
        return
    with dask.config.set({key: method}):
        if method == "forkserver":
            from distributed.utils import get_mp_context

            # distributed sets its own list at its first call; ours is set after it (a
            # fork server already running keeps the list it was started with)
            get_mp_context().set_forkserver_preload(["distributed", "numpy", "bbc_dask.preload"])
        yield
    if method == "forkserver" and not _FORKSERVER_ENV:
        _FORKSERVER_ENV["env"] = _environment_now()  # what the server started with


@door("make_client", always=True)
def make_client(kind="local", *, security=None, profile=False, start_method=START_METHOD,
                set_as_default=True, **options):
    """A :class:`distributed.Client` on a new or existing cluster.

    Parameters
    ----------
    kind : {"local", "address", "kubernetes"}
        ``"local"``: a :class:`distributed.LocalCluster` of processes with one thread each
        (``n_workers`` defaults to the number of cores), closed with the client. Its
        workers ignore the terminal's Ctrl-C, and while it lives a plain script needs no
        ``if __name__ == "__main__"`` guard: ``__main__`` is marked as not to be
        re-imported by spawned processes (so, meanwhile, a process pool of your own cannot
        unpickle functions defined in ``__main__``). ``"address"``: connect to the
        scheduler at ``options["address"]``. ``"kubernetes"``: create a ``DaskCluster``
        with the Dask operator (dask-kubernetes' ``KubeCluster``, optional extra
        ``bbc-dask[kubernetes]``) from :func:`kubernetes_cluster_spec`, then adaptive
        scaling between ``adapt_minimum`` and ``adapt_maximum`` if given; the cluster is
        deleted when the client's cluster is closed.
    security : distributed.security.Security, dict, True or None
        TLS. ``"address"``: the client's certificates; ``"local"``: the cluster runs over
        TLS (True: temporary self-signed certificates). On Kubernetes, TLS is set up by the
        manifests in ``deploy/`` (connect to them with ``"address"``): ``KubeCluster``
        reaches its scheduler over plain TCP, so it is refused here rather than half-done.
    profile : bool, default False
        ``"local"``: keep distributed's statistical profiler in the workers (the
        dashboard's Profile page). Off by default: it samples each running task every
        10 ms, and fits ran 4-8% slower with it.
    start_method : {"forkserver", "spawn"} or None, default "forkserver" on Linux, else None
        ``"local"``: how the worker processes are started; None: as distributed is
        configured (``distributed.worker.multiprocessing-method``, "spawn" by default).
        With "forkserver" the workers are forked from one process that imported the
        study's modules once, so that a cluster of many workers starts in seconds with
        nothing left to import; that process keeps the environment it started with, so
        after the environment changed a later cluster's workers are spawned instead.
        Every local worker also preloads :mod:`bbc_dask.preload`.
    set_as_default : bool, default True
        ``"local"``: whether the client becomes this process's default one (Dask's
        computations and ``distributed.get_client`` use it), as ``distributed.Client``'s.
    **options
        ``local``: passed to ``LocalCluster``; ``address``: ``address`` and ``Client``
        options; ``kubernetes``: the keys of :data:`KUBERNETES_DEFAULTS`.
    """
    import dask
    from distributed import Client, LocalCluster

    from . import _validation as validation

    validation.check_one_of(kind, "kind", _KINDS)
    validation.check_one_of(start_method, "start_method", ("forkserver", "spawn", None))
    security = as_security(security)
    if kind == "local":
        opts = dict(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True)
        opts.update(options)
        if security is not None:
            opts.setdefault("protocol", "tls://")
            opts["security"] = security
        preload = opts.get("preload") or []
        opts["preload"] = [preload] if isinstance(preload, str) else list(preload)
        # workers ignore the terminal's Ctrl-C, and import a study's modules as they start
        opts["preload"] += ["bbc_dask._worker_setup", "bbc_dask.preload"]
        release = _main_not_reimported()
        if opts.get("processes", True) and os.name == "posix":  # the tracker is POSIX's
            _quiet_resource_tracker()
        try:
            settings = _settings(profile)
            if opts["processes"]:
                # every worker's nanny, those a scale-up adds too: a nanny's worker starts
                # with dask.config.set of its config, where dotted keys set one value each
                opts["config"] = {**settings, **(opts.get("config") or {})}
            # a cluster of threads forks no server: it must not record the environment
            with _sigint_ignored(), _malloc_thresholds(), dask.config.set(settings), \
                    _start_method(start_method if opts["processes"] else None):
                client = Client(LocalCluster(**opts), security=security,
                                set_as_default=set_as_default)
            # Closing the client then closes its cluster too, as for Client(n_workers=...)
            # (distributed closes the cluster of a client it was not given an address for).
            client._start_arg = None
        except BaseException:
            release()
            raise
        # restored when the client is closed (close_client) or collected
        client._bbc_release_main = weakref.finalize(client, release)
        return client
    if kind == "address":
        opts = dict(options)
        address = validation.check_instance(opts.pop("address", None), "address", str, "a scheduler "
                                            "address such as 'tls://scheduler:8786' with kind='address'")
        try:
            return Client(address, security=security, **opts)
        except (OSError, TypeError, ValueError) as e:
            # refused, unreachable, timed out, a TLS handshake refused, a tls:// address
            # without certificates (distributed raises TypeError), a malformed address
            raise SchedulerUnreachableError(
                f"Cannot connect to the Dask scheduler at {address!r}: {e}") from e
    if security is not None:
        raise InvalidParameterError.of(
            "security", "None with kind='kubernetes'", shown="TLS settings",
            note="dask-kubernetes' KubeCluster connects to its scheduler over plain TCP. Deploy "
                 "a TLS cluster with the manifests in deploy/ and connect with kind='address'.")
    return _kubernetes_client(options)


def _kubernetes_client(options):
    from distributed import Client

    op = _import_operator()
    spec = kubernetes_cluster_spec(**options)
    opts = _kubernetes_options(dict(options, name=spec["metadata"]["name"]))
    cluster = op.KubeCluster(
        custom_cluster_spec=spec, namespace=opts["namespace"], shutdown_on_close=True,
        resource_timeout=opts["resource_timeout"], quiet=True,
    )
    try:
        if opts["adapt_minimum"] is not None:
            cluster.adapt(minimum=opts["adapt_minimum"], maximum=opts["adapt_maximum"])
        return Client(cluster)
    except BaseException:
        cluster.close()
        raise


def resolve_client(client, security=None):
    """``(client, owned)``: None starts a local cluster, a dict is :func:`make_client`'s
    arguments, a string connects to a scheduler (all with ``security``); a Client is used
    as it is."""
    from distributed import Client

    if client is None:
        return make_client("local", dashboard_address=":0", security=security), True
    if isinstance(client, str):
        return make_client("address", address=client, security=security), True
    if isinstance(client, Client):
        return client, False
    if isinstance(client, dict):
        opts = dict(client)
        kind = opts.pop("kind", "local")
        if kind == "local":
            opts.setdefault("dashboard_address", ":0")
        return make_client(kind, security=security, **opts), True
    raise InvalidParameterError.of(
        "client", "a distributed.Client, a scheduler address string, a dict of "
        "make_client arguments or None", shown=f"a {type(client).__name__}")


_SHARED = {"client": None, "n_workers": None, "at_exit": False}
_SHARED_LOCK = threading.Lock()


def shared_client(n_workers=None):
    """This process's warm local cluster, for the estimators given no client: started on
    first use, kept for the next fit (as joblib keeps its workers), replaced when another
    number of workers is asked for or it has stopped, and closed at the interpreter's
    exit (or by :func:`close_shared_client`). It is not the process's default client, so
    the user's own Dask computations are not sent to it.

    Parameters
    ----------
    n_workers : int or None
        Worker processes of one thread; None: one per core.
    """
    with _SHARED_LOCK:
        client = _SHARED["client"]
        if client is not None and (client.status != "running" or _SHARED["n_workers"] != n_workers):
            _close_shared()
            client = None
        if client is None:
            opts = {"dashboard_address": ":0"} | ({} if n_workers is None else {"n_workers": n_workers})
            client = make_client("local", set_as_default=False, **opts)
            _SHARED.update(client=client, n_workers=n_workers)
            if not _SHARED["at_exit"]:
                import atexit
                # before distributed's own exit hooks (registered earlier, so run later):
                # the cluster closes while its event loop still runs, without warnings
                atexit.register(close_shared_client)
                _SHARED["at_exit"] = True
        return client


def close_shared_client():
    """Close the warm local cluster of :func:`shared_client`, if one is running. A
    Ctrl-C meanwhile is ignored, as when a run closes its own cluster: at the exit, right
    after a Ctrl-C, a second one left the client half closed (its finaliser then waited
    a minute for an event loop already gone) and the workers behind."""
    with _sigint_ignored(), _SHARED_LOCK:
        _close_shared()


def _close_shared():
    client = _SHARED["client"]
    _SHARED.update(client=None, n_workers=None)
    if client is not None:
        with contextlib.suppress(Exception):  # already stopped: nothing left to close
            close_client(client)


def close_client(client, close_cluster=True):
    """Close ``client`` and, with ``close_cluster``, the cluster it was started with."""
    cluster = getattr(client, "cluster", None)
    client.close()
    if cluster is not None and close_cluster:
        cluster.close()
    release = getattr(client, "_bbc_release_main", None)
    if release is not None:
        release()


# ------------------------------------------------------------- local worker processes
_MAIN_LOCK = threading.Lock()
_MAIN_USERS = [0]


def _main_not_reimported():
    """Let a plain script start a local cluster without an ``if __name__ == "__main__"``
    guard, as scikit-learn users expect; returns the function that undoes it.

    Worker processes are started with multiprocessing's "spawn" or "forkserver", which
    re-run the parent's ``__main__`` script in every child: an unguarded script would start a
    cluster inside each worker ("An attempt has been made to start a new process
    before the current process has finished its bootstrapping phase"). The workers
    never need the script: Dask sends functions and classes defined in ``__main__`` by
    value. While a local cluster of ours lives, ``__main__`` gets a module spec named
    "__main__", which multiprocessing takes as "do not re-import"; the user's own code
    still runs in the parent, so its errors surface there as usual."""
    main = sys.modules.get("__main__")
    if main is None or getattr(main, "__spec__", None) is not None or not getattr(main, "__file__", None):
        return lambda: None
    with _MAIN_LOCK:
        _MAIN_USERS[0] += 1
        if _MAIN_USERS[0] == 1:
            main.__spec__ = importlib.machinery.ModuleSpec("__main__", None)
    done = []

    def release():
        if done:
            return
        done.append(True)
        with _MAIN_LOCK:
            _MAIN_USERS[0] -= 1
            if _MAIN_USERS[0] == 0 and getattr(main, "__spec__", None) is not None \
                    and main.__spec__.name == "__main__" and main.__spec__.origin is None:
                main.__spec__ = None

    return release


@contextlib.contextmanager
def _sigint_ignored():
    """SIGINT ignored for the block (main thread): worker processes started in it keep
    that across exec, so a Ctrl-C in the terminal reaches the process running the study,
    which stops them cleanly, not a traceback from every worker; a close is not cut."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
