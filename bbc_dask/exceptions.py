"""Exceptions of bbc_dask.

Errors a user can fix (a bad argument, a study file, a store that holds another study, a
store in use, a full disk, an untrusted model file) derive from :class:`UserError`, and
from ``ValueError``/``TypeError``/``OSError`` where scikit-learn users expect those.
Anything else that escapes the package is an internal failure; the command line reports
the two differently (exit 2 with one line, or exit 1 naming an internal error).
"""
from __future__ import annotations

import reprlib
import signal

from ._doors import current

__all__ = [
    "AllConfigurationsFailedError",
    "BBCDaskError",
    "InvalidIndexError",
    "InvalidParameterError",
    "BoundAboveObservedWarning",
    "ComparisonInterrupted",
    "LabelsAsScoresWarning",
    "OldSchemaError",
    "SchedulerUnreachableError",
    "StoreAccessError",
    "StoreDamagedError",
    "StoreFullError",
    "StoreLockedError",
    "StoreMismatchError",
    "StoreNotFoundError",
    "StudyError",
    "StudyFileError",
    "StudyInterrupted",
    "StudyNotReadyError",
    "UndefinedScoreError",
    "UntrustedModelError",
    "UserError",
    "UserFileNotFoundError",
]


_REPR = reprlib.Repr()  # keyword arguments need Python 3.12
_REPR.maxstring = _REPR.maxother = 80
_REPR.maxlist = _REPR.maxtuple = 8
_REPR.maxdict, _REPR.maxlevel = 6, 3


class BBCDaskError(Exception):
    """Base class of the package's own exceptions."""


class UserError(BBCDaskError):
    """Something the user can fix; the message says what."""


class InvalidParameterError(UserError, ValueError, TypeError):
    """An argument a public function does not take: the wrong type or value.

    A ``ValueError`` and a ``TypeError`` at once, as scikit-learn's own
    ``InvalidParameterError``, so that code catching either keeps working. Its message has
    one wording, made by :meth:`of`.
    """

    @classmethod
    def of(cls, name, expected, got=None, *, shown=None, note=None):
        """``The 'name' parameter of DOOR must be expected. Got got instead. [note]``

        DOOR is the public entry point the user called (:mod:`bbc_dask._doors`), and
        ``name`` is spelled in its words (the study file's ``cv.splits`` for ``n_splits``).
        ``got`` is shown by its repr, shortened (a large frame or dict must not flood a
        one-line error); ``shown`` replaces it by a description (e.g. "the unknown key(s)
        ['x']"); ``note`` is a sentence added after (the hint of what to do).
        """
        shown = _REPR.repr(got) if shown is None else shown
        shown = " ".join(str(shown).split())  # one line: an array's repr wraps
        door = current()
        return cls(f"The {door.spelled(name)!r} parameter of {door.name} must be {expected}. "
                   f"Got {shown} "
                   f"instead." + (f" {note}" if note else ""))


class InvalidIndexError(InvalidParameterError, IndexError):
    """An index out of range returned by a callable the user gave (``refit``): also an
    ``IndexError``, as scikit-learn's searches raise."""


class LabelsAsScoresWarning(BBCDaskError, UserWarning):
    """Predictions for a ranking metric hold only the class labels: class labels passed
    where scores were meant, or a legitimate score that takes two values (the
    probabilities of fully grown trees)."""


class BoundAboveObservedWarning(BBCDaskError, UserWarning):
    """A comparator's lower bound lies above the selected configuration's observed AUC:
    bootstrap tilting oriented by pROC's direction "auto", as the 2024 paper's R code
    does, reports 1 - AUC for tilted resamples whose AUC fell below 0.5."""


class UnfinishedStudyWarning(BBCDaskError, UserWarning):
    """An estimate of a study with cells still pending: it is computed from the complete
    configurations only (the command line refuses one unless ``--partial``)."""


class StudyFileError(UserError, ValueError):
    """A study file that cannot be run; the message names the key."""


class StudyError(UserError, RuntimeError):
    """A configuration raised with ``error_score="raise"``; the message names it."""


class UndefinedScoreError(UserError, ValueError):
    """The metric is undefined on the data given (a fold with one class; no bootstrap
    whose score is defined): a property of the sample, said with what to change."""


class StudyNotReadyError(UserError, ValueError):
    """The study has not produced what was asked for yet (no complete configuration, no
    final model): run or finish it first."""


class AllConfigurationsFailedError(UserError, ValueError):
    """Every configuration raised while fitting: there is nothing to select.

    ``errors`` holds the grouped first errors (see :meth:`bbc_dask.Study.failures`).
    """

    def __init__(self, message, errors=()):
        super().__init__(message)
        self.errors = list(errors)


class UserFileNotFoundError(UserError, FileNotFoundError):
    """A file named by an argument or a study file does not exist."""


class StoreNotFoundError(UserFileNotFoundError):
    """No study store at the given path or URL."""


class StoreMismatchError(UserError, ValueError):
    """The store holds a different study, or no study at all.

    Attributes
    ----------
    differences : list of str
        Every difference between the stored study and the one given, most telling first
        (the message shows the first few; ``bbc-dask --verbose`` prints them all).
    """

    def __init__(self, *args, differences=()):
        super().__init__(*args)
        self.differences = list(differences)


class OldSchemaError(StoreMismatchError):
    """A study store of an earlier layout: refused (never misread); replaceable with
    ``overwrite=True``."""


class StoreLockedError(UserError, RuntimeError):
    """Another live process is running a study on this store."""


class SchedulerUnreachableError(UserError, OSError):
    """The Dask scheduler named cannot be reached or refuses the connection (its address,
    the network, TLS certificates): nothing was run or written."""


class StoreAccessError(UserError, PermissionError):
    """The store cannot be written by this user (permissions, a read-only device)."""


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


class ComparisonInterrupted(StudyInterrupted):
    """:func:`bbc_dask.compare` stopped by SIGINT (Ctrl-C) or SIGTERM: ``partial`` is the
    :class:`~bbc_dask.protocols.Comparison` of the protocols that had finished (its
    ``partial`` flag set, ``not_run`` naming the others). The stores keep the CVT and
    nested CV fits, so the same call again resumes them."""

    def __init__(self, message, signum=signal.SIGINT, partial=None):
        super().__init__(message, signum)
        self.partial = partial
