"""Errors of a write to a store, told in the user's terms: a full device or a store the
user may not write names the store (:func:`writing`), and the asyncio noise of the other
chunk writes a full device failed is dropped."""
from __future__ import annotations

import contextlib
import errno
import logging

from ..exceptions import StoreAccessError, StoreFullError

__all__ = ["writing"]


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
    log = logging.getLogger("asyncio")
    if _ABANDONED not in log.filters:
        log.addFilter(_ABANDONED)
