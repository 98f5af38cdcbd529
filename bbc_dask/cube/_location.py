"""Where a study store lives: one class per storage backend behind one interface.

The engine needs a few operations beside Zarr's own — does the store exist, what does it
hold, write or read a small object (the creation marker, the final model), wipe it, lock it
— and the size a stored chunk of a fold is cut to along slots. :class:`StoreLocation`
declares them; each backend is a subclass with its own lock and chunk target:

- :class:`LocalLocation`: a directory (or a ``file://`` URL); the kernel's ``fcntl`` lock.
- :class:`FsspecLocation`: any other fsspec URL (``gs://``, ``az://``, ...); a lease object
  written with conditional requests (:class:`~bbc_dask.cube._lock.ObjectStoreLock`).
- :class:`S3Location`: ``s3://`` (and ``s3a://``); the same lease, renewed with S3's
  conditional overwrite (``If-Match``).
- :class:`MemoryLocation`: ``memory://name``, fsspec's in-memory file system of this
  process; a lock of this process, workers that are threads of it.

``StoreLocation(store)`` and :func:`as_location` pick the class by the URL's scheme in
:data:`BACKENDS` (a path is ``file``; an unlisted scheme is :class:`FsspecLocation`): a new
backend is one subclass and one line there.
"""
from __future__ import annotations

import abc
import os
import shutil
import uuid

from .. import _tuning as tuning
from .. import _validation as validation
from ..exceptions import InvalidParameterError, StoreAccessError
from ._lock import LOCK_NAME, ObjectStoreLock, ProcessLock, StoreLock
from ._writing import writing

__all__ = ["BACKENDS", "FsspecLocation", "LocalLocation", "MemoryLocation", "S3Location",
           "StoreLocation", "as_location", "writing"]

#: Our marker of a creation or overwrite in progress (not part of the Zarr hierarchy).
CREATING_NAME = ".bbc_creating"

_STORE = "a directory path or an fsspec URL string such as 's3://bucket/study.zarr'"


def _scheme(store):
    """The URL scheme of ``store`` (``s3`` of ``s3://bucket/x``); ``file`` for a path."""
    return store.split("://", 1)[0] if StoreLocation.is_url(store) else "file"


class StoreLocation(abc.ABC):
    """A study store, whatever its backend.

    ``StoreLocation(store, storage_options)`` gives the subclass of the store's backend
    (see :data:`BACKENDS`).

    Parameters
    ----------
    store : str or path-like
        A directory, a ``file://`` URL, or any fsspec URL (``s3://``, ``gs://``, ...).
    storage_options : dict, optional
        Passed to fsspec for a URL (credentials, ``endpoint_url`` ...). Not allowed for a
        local path.
    """

    #: Whether the store lives in this process only (its workers must be threads of it).
    in_process_only = False

    def __new__(cls, store=None, storage_options=None):
        if cls is StoreLocation:
            cls = BACKENDS.get(_scheme(store), FsspecLocation)
        return super().__new__(cls)

    def __init__(self, store, storage_options=None):
        validation.check_instance(store, "store", (str, os.PathLike), _STORE)
        validation.check_instance(storage_options, "storage_options", dict,
                                  "a dict or None", allow_none=True)
        self.storage_options = dict(storage_options or {})
        self._open(store)

    @abc.abstractmethod
    def _open(self, store):
        """Set ``url`` and ``protocol`` from ``store`` (checked first)."""

    # -------------------------------------------------- what the command line asks
    @staticmethod
    def is_url(store):
        """True when ``store`` is a URL (``scheme://...``), not a local path."""
        return isinstance(store, str) and "://" in store

    @staticmethod
    def absolute(store, base=None):
        """``store`` as it can be passed on from any directory: a path made absolute
        (against ``base``, else the working directory), a URL as it is."""
        if StoreLocation.is_url(store):
            return store
        return os.path.abspath(os.path.join(base, store) if base else store)

    def __repr__(self):
        return f"{type(self).__name__}({self.url!r})"

    def __str__(self):
        return self.url

    # -------------------------------------------------------------- the backend
    @property
    @abc.abstractmethod
    def slot_chunk_bytes(self):
        """Target bytes of a stored prediction chunk along slots (see
        :func:`~bbc_dask.cube._layout.slot_chunk`)."""

    @abc.abstractmethod
    def zarr_store(self, read_only=False):
        """The Zarr v3 store object for this location."""

    @abc.abstractmethod
    def lock(self, **options):
        """The run lock of this store (not yet acquired)."""

    @abc.abstractmethod
    def exists(self):
        """True when the store exists and holds something."""

    @abc.abstractmethod
    def is_file(self):
        """True when the location is a single file or object, not a store prefix."""

    @abc.abstractmethod
    def listdir(self):
        """Names of the entries directly under the store (empty when it does not exist)."""

    @abc.abstractmethod
    def has(self, name):
        """True when the store holds the entry ``name``."""

    @abc.abstractmethod
    def read_bytes(self, name):
        """The content of the entry ``name``."""

    @abc.abstractmethod
    def _write_bytes(self, name, data):
        """Write the entry ``name`` whole (see :meth:`write_bytes`)."""

    @abc.abstractmethod
    def _remove(self, name):
        """Delete the entry ``name`` (a file or an object)."""

    @abc.abstractmethod
    def _remove_tree(self, name):
        """Delete the entry ``name`` and everything under it."""

    def read_only(self):
        """True when this process cannot write the store (a read-only mount, no
        permission): it can be inspected, not run, resumed or repaired. False when it
        can, or when it cannot tell without writing (an object store: credentials that
        read only are found by the first write)."""
        return False

    def check_writable(self):
        """Refuse (:class:`~bbc_dask.exceptions.StoreAccessError`, one line naming the
        store) a store this process could not create or write: a read-only file system,
        a directory this user may not write, a path under a file. Checked before any
        cluster starts, without writing anything; a store that cannot tell without
        writing (an object store) is left to its first write."""
        problem = self._write_problem()
        if problem is not None:
            raise StoreAccessError(f"Cannot write the store {self.url!r}: {problem}; choose a "
                                   f"store this user may write")

    def _write_problem(self):
        """Why this process could not write the store, or None (see
        :meth:`check_writable`)."""
        return None

    def check_client(self, client):
        """Refuse a ``client`` whose workers cannot reach this store (every store but one
        in memory can be reached from anywhere given its URL)."""

    # ------------------------------------------------------------- operations
    def write_bytes(self, name, data):
        """Write ``name`` whole: a reader sees the old or the new content, never a part."""
        with writing(self.url):
            self._write_bytes(name, data)

    def remove(self, name):
        """Delete the entry ``name``."""
        self._remove(name)

    def wipe(self):
        """Delete every entry but the lock (held by the caller), crash-safely: the
        creation marker goes first and the group's ``zarr.json`` (the study's identity)
        next, so a kill at any point leaves a store that reads as an interrupted creation,
        never as a study with missing parts."""
        self.write_bytes(CREATING_NAME, b"")
        entries = [e for e in self.listdir() if e not in (LOCK_NAME, CREATING_NAME)]
        entries.sort(key=lambda e: e != "zarr.json")
        for entry in entries:
            self._remove_tree(entry)

    def remove_temporaries(self, folders):
        """Delete the temporary files of writes that a killed process left; only called
        under the run lock, once the location is known to hold a study. Returns how many
        were removed. Object stores write whole objects and leave none."""
        return 0


class LocalLocation(StoreLocation):
    """A store in a local directory, locked with the kernel's ``fcntl`` lock."""

    def _open(self, store):
        if self.is_url(store) and store.startswith("file://"):
            store = store[len("file://"):]
        if self.storage_options:
            raise InvalidParameterError.of(
                "storage_options", "None for a local path", self.storage_options,
                note=f"Storage options apply to URL stores only; {os.fspath(store)!r} is "
                     f"a local path.")
        self.url = os.path.abspath(os.fspath(store))
        self.protocol = "file"

    @property
    def slot_chunk_bytes(self):
        return tuning.SLOT_CHUNK_BYTES

    @property
    def root(self):
        return self.url

    def _entry(self, name):
        return os.path.join(self.url, name)

    def zarr_store(self, read_only=False):
        import zarr.storage

        return zarr.storage.LocalStore(self.url, read_only=read_only)

    def lock(self, **options):
        return StoreLock(self.url)

    def exists(self):
        return os.path.exists(self.url)

    def read_only(self):
        # access(2) answers for the effective user and refuses a read-only mount even to
        # root (EROFS), whom permission bits do not stop; nothing is written to find out
        if not os.path.isdir(self.url):
            return False
        return not os.access(self.url, os.W_OK, effective_ids=os.access in os.supports_effective_ids)

    def _write_problem(self):
        # the store's directory, or where a new one would be made (its nearest existing
        # ancestor); access(2) answers for the effective user, refuses a read-only mount
        # even to root and writes nothing
        target = self.url
        while not os.path.exists(target):
            target = os.path.dirname(target)
        if not os.path.isdir(target):
            if target == self.url:
                return None  # a file where the store should be: the run's check says so
            return f"{target!r} is a file, not a directory"
        if os.access(target, os.W_OK | os.X_OK,
                     effective_ids=os.access in os.supports_effective_ids):
            return None
        where = "its directory" if target == self.url else f"the directory {target!r}"
        try:
            if os.statvfs(target).f_flag & os.ST_RDONLY:
                return f"{where} is on a read-only file system"
        except OSError:
            pass
        return f"this user may not write {where}"

    def is_file(self):
        return os.path.exists(self.url) and not os.path.isdir(self.url)

    def listdir(self):
        return os.listdir(self.url) if os.path.isdir(self.url) else []

    def has(self, name):
        return os.path.exists(self._entry(name))

    def read_bytes(self, name):
        with open(self._entry(name), "rb") as f:
            return f.read()

    def _write_bytes(self, name, data):
        folder, base = os.path.split(name)  # the temporary beside its file: one rename
        os.makedirs(os.path.join(self.url, folder), exist_ok=True)
        tmp = self._entry(os.path.join(folder, f".{base}.{uuid.uuid4().hex}.tmp"))
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, self._entry(name))

    def _remove(self, name):
        os.remove(self._entry(name))

    def _remove_tree(self, name):
        full = self._entry(name)
        shutil.rmtree(full) if os.path.isdir(full) else os.remove(full)

    def remove_temporaries(self, folders):
        """Delete Zarr's ``*.partial`` and our ``.*.tmp`` files at the top of the store
        and inside ``folders`` (the study's own arrays) — nowhere else, so a mistaken path
        never loses a user's file (see :meth:`StoreLocation.remove_temporaries`)."""
        if not os.path.isdir(self.url):
            return 0

        def junk(name):
            return name.endswith(".partial") or (name.startswith(".") and name.endswith(".tmp"))

        found = [os.path.join(self.url, f) for f in os.listdir(self.url)
                 if junk(f) and os.path.isfile(os.path.join(self.url, f))]
        for folder in folders:
            for root, _dirs, files in os.walk(os.path.join(self.url, folder)):
                found += [os.path.join(root, f) for f in files if junk(f)]
        for path in found:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
        return len(found)


class FsspecLocation(StoreLocation):
    """A store at an fsspec URL (an object store), locked with a lease object."""

    #: Said when the URL's fsspec backend is not installed.
    install_hint = ""

    def _open(self, store):
        self.url = store.rstrip("/")
        self.protocol = store.split("://", 1)[0]
        self._fs = None
        try:
            import fsspec

            fsspec.get_filesystem_class(self.protocol)
        except ImportError as e:
            raise ImportError(f"The store {self.url!r} needs the fsspec backend for "
                              f"{self.protocol!r} ({e}).{self.install_hint}") from None
        except ValueError as e:
            raise InvalidParameterError.of("store", _STORE, self.url, note=f"({e})") from None

    @property
    def slot_chunk_bytes(self):
        return tuning.SLOT_CHUNK_BYTES_REMOTE

    @property
    def fs(self):
        """A synchronous fsspec file system and the store's root path in it."""
        if self._fs is None:
            from fsspec.core import url_to_fs

            self._fs, self._root = url_to_fs(self.url, **self.storage_options)
        return self._fs

    @property
    def root(self):
        self.fs  # noqa: B018 — sets _root
        return self._root

    def _entry(self, name):
        return f"{self.root}/{name}"

    def zarr_store(self, read_only=False):
        import zarr.storage

        return zarr.storage.FsspecStore.from_url(self.url, storage_options=self.storage_options,
                                                 read_only=read_only)

    def lock(self, **options):
        return ObjectStoreLock(self, **options)

    def replace_if_match(self, path, data, etag):
        """Overwrite the object ``path`` with ``data`` if its ETag is still ``etag``:
        ``(True, what the write returned)``, or ``(False, None)`` when it changed. fsspec
        has no conditional overwrite in general: compare, then write."""
        self.fs.invalidate_cache(path)
        try:
            current = self.fs.info(path).get("ETag")
        except FileNotFoundError:
            return False, None
        if current != etag:
            return False, None
        return True, self.fs.pipe_file(path, data)

    def exists(self):
        self.fs.invalidate_cache()
        return bool(self.fs.ls(self.root, detail=False)) if self.fs.exists(self.root) else False

    def is_file(self):
        try:
            return self.fs.isfile(self.root)
        except FileNotFoundError:
            return False

    def listdir(self):
        self.fs.invalidate_cache()
        try:
            return [p.rstrip("/").rsplit("/", 1)[-1] for p in self.fs.ls(self.root, detail=False)]
        except FileNotFoundError:
            return []

    def has(self, name):
        self.fs.invalidate_cache()
        return self.fs.exists(self._entry(name))

    def read_bytes(self, name):
        return self.fs.cat_file(self._entry(name))

    def _write_bytes(self, name, data):
        self.fs.pipe_file(self._entry(name), data)  # one PUT: atomic on object stores

    def _remove(self, name):
        self.fs.rm_file(self._entry(name))

    def _remove_tree(self, name):
        self.fs.rm(self._entry(name), recursive=True)

    def wipe(self):
        super().wipe()
        self.fs.invalidate_cache()


class S3Location(FsspecLocation):
    """A store on S3 (or an S3-compatible object store): the lease is renewed with S3's
    conditional overwrite, so two runs can never both renew it."""

    install_hint = " Install it with: pip install 'bbc-dask[s3]'."

    def replace_if_match(self, path, data, etag):
        try:
            return True, self.fs.pipe_file(path, data, IfMatch=etag)
        except OSError as e:
            if getattr(e, "errno", None) == 22:
                return False, None  # 412 PreconditionFailed: someone else wrote the lease
            raise


class MemoryLocation(FsspecLocation):
    """A store in this process's memory (``memory://name``: fsspec's in-memory file
    system), gone when the process ends: for tests and trials. The run lock is a table of
    this process; the workers must be threads of it (``client={"kind": "local",
    "processes": False}``) — worker processes would each see a memory of their own."""

    in_process_only = True

    @property
    def slot_chunk_bytes(self):
        return tuning.SLOT_CHUNK_BYTES  # a chunk costs no request here

    def lock(self, **options):
        return ProcessLock(self.url)

    def check_client(self, client):
        if not _workers_in_process(client):
            raise InvalidParameterError.of(
                "store", "a directory or an object store URL when the workers are "
                "other processes", self.url,
                note="A memory:// store lives in this process only: run it with "
                     "client={'kind': 'local', 'processes': False} (worker threads).")


def _workers_in_process(client):
    """True when the workers of ``client`` (a :func:`bbc_dask.run_study` argument) are
    threads of this process: a dict of a local cluster without processes, or a Client
    whose workers all report this process's id."""
    if isinstance(client, dict):
        return client.get("kind", "local") == "local" and client.get("processes") is False
    if client is None or isinstance(client, str):
        return False  # a local cluster of processes; a scheduler elsewhere
    pids = client.run(os.getpid)
    return all(pid == os.getpid() for pid in pids.values())


#: The location class of each URL scheme (a path is ``file``); any other scheme is an
#: :class:`FsspecLocation`.
BACKENDS = {
    "file": LocalLocation,
    "s3": S3Location,
    "s3a": S3Location,
    "memory": MemoryLocation,
}


def as_location(store, storage_options=None, *, directory=False):
    """The :class:`StoreLocation` of ``store`` (of the class its scheme names in
    :data:`BACKENDS`); with ``directory``, one that is not a file (a store to create or
    resume)."""
    if isinstance(store, StoreLocation):
        if storage_options:
            raise InvalidParameterError.of("storage_options", "None with a StoreLocation "
                                           "(it holds its own)", storage_options)
        loc = store
    else:
        loc = StoreLocation(store, storage_options)
    if directory and loc.is_file():
        raise InvalidParameterError.of("store", "a directory path or a URL prefix for "
                                       "the Zarr store", loc.url, note="It is a file.")
    return loc
