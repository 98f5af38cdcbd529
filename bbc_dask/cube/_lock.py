"""The run lock of a store: one writer per study store. Each kind of store location has
its own (:meth:`bbc_dask.cube.StoreLocation.lock`).

Local directory (:class:`StoreLock`): an ``fcntl`` lock on ``<store>/.bbc_lock``, held by
the process that runs the study for as long as it runs. The kernel releases it when that
process dies, however it dies (SIGKILL included), so a stale lock file never blocks a resume.

Object store (:class:`ObjectStoreLock`): there is no kernel to release a lock, so the lock
is a *lease*: an object ``<store>/.bbc_lock`` created with a conditional write
(``If-None-Match: *``, so two runs cannot both create it) and renewed by a heartbeat thread
with compare-and-swap writes (the location's ``replace_if_match``: ``If-Match: <etag>`` on
S3). A lease whose heartbeat is older than its time-to-live, or whose holder is a dead
process on this host, is stale and taken over with the same compare-and-swap, so a killed
run never blocks its resume for long. A holder that fails to renew (taken over, or cut off
for longer than the TTL) marks itself lost and the engine stops before its next write
(:meth:`ObjectStoreLock.check`).

Store in this process's memory (:class:`ProcessLock`): a table of the stores this process
holds; the run's tasks are threads of the same process and read it.
"""
from __future__ import annotations

import abc
import fcntl
import json
import os
import socket
import threading
import time
import uuid

from .._doors import owned_by
from ..exceptions import InvalidParameterError, StoreLockedError

#: The lock's entry in the store (not part of the Zarr hierarchy).
LOCK_NAME = ".bbc_lock"

__all__ = ["LOCK_NAME", "LockToken", "ObjectStoreLock", "ProcessLock", "StoreLock",
           "StoreLockedError"]


def _locked(where, holder):
    return StoreLockedError(
        f"The store {where!r} is in use by a running study (pid {holder.get('pid', '?')} on "
        f"{holder.get('host', '?')}, started {holder.get('started', '?')}). Wait for it to "
        f"finish or stop it; a store can have one writer only."
    )


def _holder_info(token):
    """What a lock tells of its holder: the run's token, process, host and start time."""
    return {"token": token, "pid": os.getpid(), "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S")}


class _Lock:
    """A run lock used as a context manager: acquired on entry, released on exit."""

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


class StoreLock(_Lock):
    """The ``fcntl`` lock of a local directory (see the module docstring)."""

    def __init__(self, path):
        self.path = os.path.join(os.fspath(path), LOCK_NAME)
        self._fd = None
        self._token = uuid.uuid4().hex

    def acquire(self):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
            except ValueError:
                holder = {}
            os.close(fd)
            raise _locked(os.path.dirname(self.path), holder) from None
        info = json.dumps(_holder_info(self._token)).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, info, 0)
        self._fd = fd
        return self

    def is_held(self):
        """True when a live process holds the lock (tested without taking it for long).

        Read-only, so that a store on a read-only mount can be inspected: the file is
        opened for reading (never created) and probed with a shared lock, which the
        run's exclusive one refuses. A shared lock needs no write access, on NFS too
        (where flock becomes a byte-range lock), and two probes do not see each other."""
        if not os.path.exists(self.path):
            return False
        fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops a lock we took
        return False

    def holder(self):
        """What the lock tells of the run holding it (its ``token``, ``pid``, ``host``,
        ``started``), or None when no run holds it. Read-only, as :meth:`is_held`; an
        empty dict for a lock just taken whose holder is not written yet."""
        if not self.is_held():
            return None
        try:
            with open(self.path, "rb") as f:
                return json.loads(f.read().decode() or "{}")
        except (OSError, ValueError):
            return {}

    def check(self):
        """The kernel lock cannot be lost while the process lives."""

    def token(self):
        """The check the run's tasks make before they write (see :class:`LockToken`)."""
        return FileLockToken(self.path, self._token)

    def release(self):
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _pid_alive(pid):
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError, OverflowError):
        return True
    return True


class ObjectStoreLock(_Lock):
    """A lease on an object store (see the module docstring).

    Parameters
    ----------
    location : FsspecLocation
        A URL store.
    ttl : float, default=None
        Seconds without a heartbeat after which the lease is stale; None reads
        ``BBC_DASK_LOCK_TTL`` (default 60). The heartbeat runs every ``ttl / 4``.
    """

    def __init__(self, location, ttl=None):
        self.location = location
        self.fs = location.fs
        self.path = f"{location.root}/{LOCK_NAME}"
        raw = ttl if ttl is not None else os.environ.get("BBC_DASK_LOCK_TTL", 60)
        try:
            self.ttl = float(raw)
        except (TypeError, ValueError):
            self.ttl = float("nan")
        if not self.ttl > 0:
            with owned_by("the store lock (or the environment variable BBC_DASK_LOCK_TTL)"):
                raise InvalidParameterError.of("ttl", "a number of seconds > 0", raw)
        self._token = uuid.uuid4().hex
        self._started = time.strftime("%Y-%m-%dT%H:%M:%S")
        self._etag = None
        self._lost = None
        self._stop = threading.Event()
        self._thread = None

    # ------------------------------------------------------------ primitives
    def _body(self):
        return json.dumps({"token": self._token, "pid": os.getpid(), "host": socket.gethostname(),
                           "started": self._started, "heartbeat": time.time(),
                           "ttl": self.ttl}).encode()

    def _read(self):
        """``(holder, etag)`` of the current lease, ``(None, None)`` if there is none."""
        for _ in range(5):
            self.fs.invalidate_cache(self.path)
            try:
                before = self.fs.info(self.path).get("ETag")
                body = self.fs.cat_file(self.path)
                after = self.fs.info(self.path).get("ETag")
            except FileNotFoundError:
                return None, None
            if before == after:  # the body read belongs to this etag
                try:
                    return json.loads(body.decode() or "{}"), after
                except ValueError:
                    return {}, after
        return {}, after

    def _put(self, if_match=None):
        """Create (``if_match`` None) or compare-and-swap the lease; its new etag, or None
        when the condition failed."""
        body = self._body()
        try:
            if if_match is None:
                out = self.fs.pipe_file(self.path, body, mode="create")
            else:
                written, out = self.location.replace_if_match(self.path, body, if_match)
                if not written:
                    return None
        except FileExistsError:
            return None
        self.fs.invalidate_cache(self.path)
        etag = out.get("ETag") if isinstance(out, dict) else None
        return etag or self.fs.info(self.path).get("ETag") or "-"

    def _stale(self, holder):
        if not holder:
            return True  # unreadable lease: a crash mid-write can't happen (one PUT), so junk
        if time.time() - float(holder.get("heartbeat", 0)) > float(holder.get("ttl", self.ttl)):
            return True
        return holder.get("host") == socket.gethostname() and not _pid_alive(holder.get("pid"))

    # ---------------------------------------------------------------- public
    def acquire(self):
        for _ in range(3):
            etag = self._put()
            if etag is not None:
                break
            holder, current = self._read()
            if current is None:
                continue  # released in between: try to create again
            if not self._stale(holder):
                raise _locked(self.location.url, holder)
            etag = self._put(if_match=current)  # take over the stale lease
            if etag is not None:
                break
        else:
            raise _locked(self.location.url, self._read()[0] or {})
        self._etag, self._lost = etag, None
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat, name="bbc-dask-lease", daemon=True)
        self._thread.start()
        return self

    def _beat(self):
        last_ok = time.monotonic()
        while not self._stop.wait(self.ttl / 4):
            try:
                etag = self._put(if_match=self._etag)
            except Exception as e:  # network trouble: keep trying until the lease expires
                if time.monotonic() - last_ok > self.ttl:
                    self._lost = f"the lease could not be renewed for {self.ttl:g} s ({e})"
                    return
                continue
            if etag is None:
                holder = self._read()[0] or {}
                self._lost = (f"another run took the lease over (pid {holder.get('pid', '?')} on "
                              f"{holder.get('host', '?')})")
                return
            self._etag, last_ok = etag, time.monotonic()

    def check(self):
        """Raise :class:`StoreLockedError` if the lease was lost: the caller must not write.

        The lease object is read at every check (one request; the driver checks before
        each ledger batch and attribute write), not only by the heartbeat: a lease taken
        over is seen before the next write, not up to ``ttl / 4`` later."""
        if not self._lost:
            try:
                self.fs.invalidate_cache(self.path)
                holder = json.loads(self.fs.cat_file(self.path).decode() or "{}")
            except FileNotFoundError:
                holder = {}  # removed behind this run's back: not ours any more
            except Exception:  # noqa: BLE001 - network trouble or a torn read: the heartbeat decides
                holder = None
            if holder is not None and holder.get("token") != self._token:
                self._lost = (f"another run took the lease over (pid {holder.get('pid', '?')} "
                              f"on {holder.get('host', '?')})" if holder else
                              "its lease object was removed")
        if self._lost:
            raise StoreLockedError(f"Lost the run lock of {self.location.url!r}: {self._lost}. "
                                   f"Stopped before writing more.")

    def token(self):
        """The check the run's tasks make before they write (see :class:`LockToken`)."""
        return LeaseToken(self.path, self._token, self.location.storage_options,
                          self.location.protocol, self.ttl)

    def is_held(self):
        return self.holder() is not None

    def holder(self):
        """The live lease's holder (its ``token``, ``pid``, ``host``, ``started``), or
        None when there is no lease or it is stale."""
        holder, etag = self._read()
        return None if etag is None or self._stale(holder) else holder

    def release(self):
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        holder, _ = self._read()
        if holder and holder.get("token") == self._token:
            self.fs.rm_file(self.path)
            self.fs.invalidate_cache(self.path)


#: The stores in this process's memory held by a run of this process: URL -> holder.
_HELD = {}
_HELD_LOCK = threading.Lock()


class ProcessLock(_Lock):
    """The run lock of a store in this process's memory (``memory://``): an entry in a
    table of this process, released by the run or with the process."""

    def __init__(self, url):
        self.url = url
        self._token = uuid.uuid4().hex

    def acquire(self):
        with _HELD_LOCK:
            holder = _HELD.get(self.url)
            if holder is not None:
                raise _locked(self.url, holder)
            _HELD[self.url] = _holder_info(self._token)
        return self

    def is_held(self):
        return self.url in _HELD

    def holder(self):
        """The holder this process's table names (``token``, ``pid``, ...), or None."""
        held = _HELD.get(self.url)
        return None if held is None else dict(held)

    def check(self):
        """The lock cannot be lost while the process lives."""

    def token(self):
        """The check the run's tasks make before they write (see :class:`LockToken`)."""
        return ProcessLockToken(self.url, self._token)

    def release(self):
        with _HELD_LOCK:
            if _HELD.get(self.url, {}).get("token") == self._token:
                del _HELD[self.url]


#: Per worker process: when each token was last seen holding its lease (monotonic time).
_SEEN = {}


class LockToken(abc.ABC):
    """The run lock's check as tasks make it before writing a chunk (picklable).

    The lock (a kernel lock, a lease or a table of this process) belongs to the driver; a
    task on a worker reads the lock and compares its token with the run's: a run that lost
    the store (its lease taken over after it was cut off, or the store overwritten) has
    its late tasks refuse to write. On an object store a lease read costs a request, so a
    worker trusts a seen lease for ``ttl / 8`` seconds: a lease is only taken over after
    ``ttl`` without renewal, so that window cannot let a write pass after another run took
    the store. Each lock has its subclass, which reads the holder.
    """

    ttl = None

    def __init__(self, path, token):
        self.path, self.token = path, token

    @abc.abstractmethod
    def _holder(self):
        """The holder the lock names now (empty when there is none or it is unreadable)."""

    def __call__(self):
        now = time.monotonic()
        if self.ttl is not None and now - _SEEN.get(self.token, -float("inf")) < self.ttl / 8:
            return
        holder = self._holder()
        if holder.get("token") != self.token:
            raise StoreLockedError(
                f"The run that started this task no longer holds the store's lock "
                f"({self.path!r}); not writing.")
        if self.ttl is not None:
            _SEEN[self.token] = now


class FileLockToken(LockToken):
    """The check of a :class:`StoreLock`: the lock file names the holder."""

    def _holder(self):
        try:
            with open(self.path, "rb") as f:
                return json.loads(f.read().decode() or "{}")
        except (OSError, ValueError):
            return {}


class LeaseToken(LockToken):
    """The check of an :class:`ObjectStoreLock`: the lease object names the holder. It is
    read before every write of a task (one small request beside the task's chunk PUTs),
    so a run whose lease was taken over makes at most the write in flight."""

    def __init__(self, path, token, storage_options, protocol, ttl):
        super().__init__(path, token)
        self.storage_options, self.protocol = storage_options, protocol
        self.lease_ttl = ttl  # the lease's; ``ttl`` None: no seen lease is trusted

    def _holder(self):
        import fsspec

        fs = fsspec.filesystem(self.protocol, **(self.storage_options or {}))
        try:
            try:
                # s3fs sends a HEAD for the size before its GET unless told to read in one
                # request: half the check's cost (benchmarks/bench_lease.py)
                body = fs.cat_file(self.path, max_concurrency=1) if self.protocol in ("s3", "s3a") \
                    else fs.cat_file(self.path)
            except TypeError:  # an s3fs without the option
                body = fs.cat_file(self.path)
            return json.loads(body.decode() or "{}")
        except (FileNotFoundError, ValueError):
            return {}


class ProcessLockToken(LockToken):
    """The check of a :class:`ProcessLock` (tasks run in the same process): its table
    names the holder."""

    def _holder(self):
        return _HELD.get(self.path, {})
