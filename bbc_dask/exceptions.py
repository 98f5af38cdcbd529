"""Exceptions of bbc_dask.

Errors a user can fix (a bad argument, a study file, a store that holds another study, a
store in use, a full disk, an untrusted model file) derive from :class:`UserError`, and
from ``ValueError``/``TypeError``/``OSError`` where scikit-learn users expect those.
Anything else that escapes the package is an internal failure; the command line reports
the two differently (exit 2 with one line, or exit 1 naming an internal error).
"""
from __future__ import annotations

import signal

__all__ = [
    "BBCDaskError",
    "UserError",
    "AllConfigurationsFailedError",
    "StoreFullError",
    "StoreDamagedError",
    "StudyInterrupted",
    "UntrustedModelError",
]


class BBCDaskError(Exception):
    """Base class of the package's own exceptions."""


class UserError(BBCDaskError):
    """Something the user can fix; the message says what."""


class AllConfigurationsFailedError(UserError, ValueError):
    """Every configuration raised while fitting: there is nothing to select.

    ``errors`` holds the grouped first errors (see :meth:`bbc_dask.Study.failures`).
    """

    def __init__(self, message, errors=()):
        super().__init__(message)
        self.errors = list(errors)


class StoreFullError(UserError, OSError):
    """The device holding the store is full (or over quota); nothing written is lost:
    free space and run the same command to resume."""


class StoreDamagedError(UserError, ValueError):
    """A study store whose files were deleted, truncated or edited: the message names
    what is damaged. Nothing is read from it as if it were whole."""


class UntrustedModelError(UserError, ValueError):
    """A saved model contains types or functions that are not trusted."""


class StudyInterrupted(KeyboardInterrupt):
    """A run stopped by SIGINT (Ctrl-C) or SIGTERM after saving what was finished.

    A subclass of ``KeyboardInterrupt`` so that code which stops on Ctrl-C keeps doing so.
    ``exit_code`` is the shell's convention: 128 + the signal number (130, 143).
    """

    def __init__(self, message, signum=signal.SIGINT, done=None, total=None):
        super().__init__(message)
        self.message = message
        self.signum = int(signum)
        self.done, self.total = done, total

    @property
    def exit_code(self):
        return 128 + self.signum

    def __str__(self):
        return self.message
