"""A run lock for a store on a local file system.

The lock is an ``fcntl`` lock on ``<store>/.bbc_lock``, held by the process that runs the
study for as long as it runs. The kernel releases it when that process dies, however it
dies (SIGKILL included), so a stale lock file never blocks a resume.
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import time

__all__ = ["StoreLock", "StoreLockedError"]


class StoreLockedError(RuntimeError):
    """Another live process is running a study on this store."""


class StoreLock:
    def __init__(self, path):
        self.path = os.path.join(os.fspath(path), ".bbc_lock")
        self._fd = None

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
            raise StoreLockedError(
                f"The store {os.path.dirname(self.path)!r} is in use by a running study "
                f"(pid {holder.get('pid', '?')} on {holder.get('host', '?')}, started "
                f"{holder.get('started', '?')}). Wait for it to finish or stop it; a store "
                f"can have one writer only."
            ) from None
        info = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                           "started": time.strftime("%Y-%m-%dT%H:%M:%S")}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, info, 0)
        self._fd = fd
        return self

    def is_held(self):
        """True when a live process holds the lock (tested without taking it for long)."""
        if not os.path.exists(self.path):
            return False
        fd = os.open(self.path, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops a lock we took
        return False

    def release(self):
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
