"""Where a study store lives: a local directory or an fsspec URL (``s3://bucket/study.zarr``).

The engine needs a few operations beside Zarr's own — does the store exist, what does it
hold, write or read a small object (the creation marker, the final model), wipe it, lock it
— and this class gives them for both kinds of store. A local directory keeps the kernel's
``fcntl`` lock; an object store gets a lease object written with conditional requests
(:mod:`bbc_dask.cube._lock`).
"""
from __future__ import annotations

import contextlib
import errno
import os
import uuid

from .. import _validation as V
from ..exceptions import InvalidParameterError, StoreAccessError, StoreFullError
from ._lock import LOCK_NAME, ObjectStoreLock, StoreLock

__all__ = ["StoreLocation", "as_location", "writing"]

#: Our marker of a creation or overwrite in progress (not part of the Zarr hierarchy).
CREATING_NAME = ".bbc_creating"


@contextlib.contextmanager
def writing(url):
    """Around a write to the store at ``url``: a full device (or quota) becomes a
    :class:`StoreFullError` that names the store, a store the user may not write (a
    read-only device, no permission) a :class:`StoreAccessError`; other errors pass
    unchanged."""
    try:
        yield
    except OSError as exc:
        if getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT) and not isinstance(exc, StoreFullError):
            err = StoreFullError(
                f"No space left on the device of the store {url!r}: finished cells are kept; "
                f"free space and run the same command again to resume")
            err.errno = exc.errno
            _quiet_abandoned_writes()
            raise err from exc
        if getattr(exc, "errno", None) in (errno.EACCES, errno.EPERM, errno.EROFS) \
                and not isinstance(exc, StoreAccessError):
            raise StoreAccessError(f"Cannot write the store {url!r}: {exc.strerror or exc}; "
                                   f"choose a store this user may write") from exc
        raise


class _AbandonedWrites:
    """Drops what asyncio logs about the other chunk writes of a Zarr call that one full
    device failed (pending tasks destroyed, their own ENOSPC never retrieved): the error
    was raised and reported once, naming the store; 48 lines of asyncio noise would hide
    that line."""

    def filter(self, record):
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return False
        msg = record.getMessage()
        return not ("destroyed but it is pending" in msg and "zarr" in msg)


_ABANDONED = _AbandonedWrites()


def _quiet_abandoned_writes():
    import logging

    log = logging.getLogger("asyncio")
    if _ABANDONED not in log.filters:
        log.addFilter(_ABANDONED)


def _is_url(store):
    return isinstance(store, str) and "://" in store


_STORE = "a directory path or an fsspec URL string such as 's3://bucket/study.zarr'"


class StoreLocation:
    """A study store, local or remote.

    Parameters
    ----------
    store : str or path-like
        A directory, a ``file://`` URL, or any fsspec URL (``s3://``, ``gs://``, ...).
    storage_options : dict, optional
        Passed to fsspec for a URL (credentials, ``endpoint_url`` ...). Not allowed for a
        local path.
    """

    def __init__(self, store, storage_options=None, caller="bbc_dask"):
        V.check_instance(store, "store", caller, (str, os.PathLike), _STORE)
        V.check_instance(storage_options, "storage_options", caller, dict, "a dict or None",
                         allow_none=True)
        self.storage_options = dict(storage_options or {})
        if _is_url(store) and store.startswith("file://"):
            store = store[len("file://"):]
        if _is_url(store):
            self.is_local = False
            self.url = store.rstrip("/")
            self.protocol = store.split("://", 1)[0]
            self._fs = None
        else:
            if self.storage_options:
                raise InvalidParameterError.of(
                    "storage_options", caller, "None for a local path", self.storage_options,
                    note=f"Storage options apply to URL stores only; {os.fspath(store)!r} is "
                         f"a local path.")
            self.is_local = True
            self.url = os.path.abspath(os.fspath(store))
            self.protocol = "file"
        if not self.is_local:
            self._check_url(caller)

    def _check_url(self, caller):
        try:
            import fsspec

            fsspec.get_filesystem_class(self.protocol)
        except ImportError as e:
            hint = " Install it with: pip install 'bbc-dask[s3]'." if self.protocol in ("s3", "s3a") else ""
            raise ImportError(f"The store {self.url!r} needs the fsspec backend for "
                              f"{self.protocol!r} ({e}).{hint}") from None
        except ValueError as e:
            raise InvalidParameterError.of("store", caller, _STORE, self.url, note=f"({e})") from None

    def __repr__(self):
        return f"StoreLocation({self.url!r})"

    def __str__(self):
        return self.url

    # -------------------------------------------------------------- file system
    @property
    def fs(self):
        """A synchronous fsspec file system and the store's root path in it."""
        if self._fs is None:
            from fsspec.core import url_to_fs

            self._fs, self._root = url_to_fs(self.url, **self.storage_options)
        return self._fs

    @property
    def root(self):
        if self.is_local:
            return self.url
        self.fs  # noqa: B018 — sets _root
        return self._root

    def _entry(self, name):
        return os.path.join(self.url, name) if self.is_local else f"{self.root}/{name}"

    def zarr_store(self, read_only=False):
        """The Zarr v3 store object for this location."""
        import zarr.storage

        if self.is_local:
            return zarr.storage.LocalStore(self.url, read_only=read_only)
        return zarr.storage.FsspecStore.from_url(self.url, storage_options=self.storage_options,
                                                 read_only=read_only)

    def exists(self):
        if self.is_local:
            return os.path.exists(self.url)
        self.fs.invalidate_cache()
        return bool(self.fs.ls(self.root, detail=False)) if self.fs.exists(self.root) else False

    def is_file(self):
        """True when the location is a single file or object, not a store prefix."""
        if self.is_local:
            return os.path.exists(self.url) and not os.path.isdir(self.url)
        try:
            return self.fs.isfile(self.root)
        except FileNotFoundError:
            return False

    def listdir(self):
        """Names of the entries directly under the store (empty when it does not exist)."""
        if self.is_local:
            return os.listdir(self.url) if os.path.isdir(self.url) else []
        self.fs.invalidate_cache()
        try:
            return [p.rstrip("/").rsplit("/", 1)[-1] for p in self.fs.ls(self.root, detail=False)]
        except FileNotFoundError:
            return []

    def has(self, name):
        if self.is_local:
            return os.path.exists(self._entry(name))
        self.fs.invalidate_cache()
        return self.fs.exists(self._entry(name))

    def write_bytes(self, name, data):
        """Write ``name`` whole: a reader sees the old or the new content, never a part."""
        with writing(self.url):
            self._write_bytes(name, data)

    def _write_bytes(self, name, data):
        if self.is_local:
            os.makedirs(self.url, exist_ok=True)
            tmp = self._entry(f".{name}.{uuid.uuid4().hex}.tmp")
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, self._entry(name))
        else:
            self.fs.pipe_file(self._entry(name), data)  # one PUT: atomic on object stores

    def read_bytes(self, name):
        if self.is_local:
            with open(self._entry(name), "rb") as f:
                return f.read()
        return self.fs.cat_file(self._entry(name))

    def remove(self, name):
        if self.is_local:
            os.remove(self._entry(name))
        else:
            self.fs.rm_file(self._entry(name))

    def wipe(self):
        """Delete every entry but the lock (held by the caller), crash-safely: the
        creation marker goes first and the group's ``zarr.json`` (the study's identity)
        next, so a kill at any point leaves a store that reads as an interrupted creation,
        never as a study with missing parts."""
        import shutil

        self.write_bytes(CREATING_NAME, b"")
        entries = [e for e in self.listdir() if e not in (LOCK_NAME, CREATING_NAME)]
        entries.sort(key=lambda e: e != "zarr.json")
        for entry in entries:
            full = self._entry(entry)
            if self.is_local:
                shutil.rmtree(full) if os.path.isdir(full) else os.remove(full)
            else:
                self.fs.rm(full, recursive=True)
        if not self.is_local:
            self.fs.invalidate_cache()

    def remove_temporaries(self, folders):
        """Delete the temporary files of writes that a killed process left (Zarr's
        ``*.partial`` and our ``.*.tmp``) at the top of the store and inside ``folders``
        (the study's own arrays) — nowhere else, so a mistaken path never loses a user's
        file. Only called under the run lock, once the location is known to hold a study.
        Object stores write whole objects and leave none. Returns how many were removed."""
        if not self.is_local or not os.path.isdir(self.url):
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

    def lock(self, **options):
        """The run lock of this store (not yet acquired)."""
        if self.is_local:
            return StoreLock(self.url)
        return ObjectStoreLock(self, **options)


def as_location(store, storage_options=None, caller="bbc_dask", *, directory=False):
    """The :class:`StoreLocation` of ``store``; with ``directory``, one that is not a file
    (a store to create or resume)."""
    if isinstance(store, StoreLocation):
        if storage_options:
            raise InvalidParameterError.of("storage_options", caller, "None with a StoreLocation "
                                           "(it holds its own)", storage_options)
        loc = store
    else:
        loc = StoreLocation(store, storage_options, caller)
    if directory and loc.is_file():
        raise InvalidParameterError.of("store", caller, "a directory path or a URL prefix for "
                                       "the Zarr store", loc.url, note="It is a file.")
    return loc
