"""The warnings of a study's fits, collected per task (a worker runs several tasks in
threads) and handed to the driver, which shows each distinct one once for the run."""
from __future__ import annotations

import contextlib
import threading
import warnings

__all__ = ["collected_warnings"]


#: The warnings of the task running in this thread, while one collects them.
_COLLECTING = threading.local()
_HOOK_LOCK = threading.Lock()
_shown = {"original": None}


def _show(message, category, filename, lineno, file=None, line=None):
    """``warnings.showwarning`` of a worker: a warning raised by a collecting task is kept
    for the driver (which shows each distinct one once for the whole run); any other
    warning is shown as before."""
    seen = getattr(_COLLECTING, "seen", None)
    if seen is None:
        return _shown["original"](message, category, filename, lineno, file, line)
    key = (category.__module__, category.__qualname__, str(message).strip())
    seen[key] = seen.get(key, 0) + 1


@contextlib.contextmanager
def collected_warnings():
    """Collect the warnings the fits of this task raise, instead of printing them: a
    scikit-learn FutureWarning or ConvergenceWarning would otherwise be printed by every
    task of every wave. Yields a dict ``{(module, class name, text): count}``.

    ``catch_warnings`` is not used: it swaps the process's filters and hook, which is
    not safe with several tasks running in threads of one worker; a hook that looks up
    the running thread's collector is. Installed at the first task, again if a library
    restored the old hook (the filters decide, as always, which warnings reach it)."""
    if warnings.showwarning is not _show:
        with _HOOK_LOCK:
            if warnings.showwarning is not _show:
                _shown["original"] = warnings.showwarning
                warnings.showwarning = _show
    from ..metrics import COLLECTED

    _COLLECTING.seen = {}
    COLLECTED.on = True  # the scorers' own silencing would swap the process's filters
    try:
        yield _COLLECTING.seen
    finally:
        _COLLECTING.seen = None
        COLLECTED.on = False
