"""The fits' warnings and failures of a run, told once: each distinct warning with its
count, and the failed configurations grouped by their first error (as ``GridSearchCV``'s
``FitFailedWarning``). The command line prints the same groups itself."""
from __future__ import annotations

import sys
from ._doors import warn

__all__ = ["fit_warning_groups", "warn_failures", "warn_fit_warnings"]


def fit_warning_groups(warned):
    """The fits' warnings of a run (``{(module, class, text): count}``), most frequent
    first: ``[(category or None, class name, text, count)]``. The category is the class
    itself when its module is already imported here (scikit-learn's, Python's), never
    imported for the purpose; else None."""
    out = []
    for (module, name, text), n in sorted((warned or {}).items(), key=lambda kv: -kv[1]):
        cat = getattr(sys.modules.get(module), name, None)
        if not (isinstance(cat, type) and issubclass(cat, Warning)):
            cat = None
        out.append((cat, name, text, n))
    return out


def warn_fit_warnings(warned, stacklevel):
    """Show each distinct warning the fits raised once, with how many fits raised it (the
    tasks collect them instead of printing one per task). ``stacklevel`` as
    :func:`warn_failures`."""
    for cat, name, text, n in fit_warning_groups(warned):
        # at least: Python shows a warning of one line of code once per worker process
        # unless a library resets its registry, so repeats may never reach the tasks
        note = f" [shown once; the study's fits raised it at least {n} time{'s' if n > 1 else ''}]"
        if cat is None:
            warn(f"{name}: {text}{note}", UserWarning, stacklevel=stacklevel + 1)
        else:
            warn(f"{text}{note}", cat, stacklevel=stacklevel + 1)


def warn_failures(study, stacklevel):
    """Warn once (scikit-learn's ``FitFailedWarning``, as ``GridSearchCV`` does) when some
    configurations of ``study`` failed: how many, and their first errors grouped (the three
    most frequent, with their counts and an example configuration). A resumed run whose
    store holds failures warns again. ``stacklevel`` counts from the caller of this
    function (1: that caller's line). The command line prints the failures itself and
    does not call this. The fits' own warnings of this run come first
    (:func:`warn_fit_warnings`)."""
    warn_fit_warnings(study.fit_warnings_, stacklevel + 1)
    groups = study.failures()
    if not groups:
        return
    from sklearn.exceptions import FitFailedWarning

    n, m = sum(g["count"] for g in groups), len(study.params)
    lines = [f"{n} of {m} configuration{'s' if m > 1 else ''} failed on some fold and "
             f"{'are' if n > 1 else 'is'} left out of the selection (their scores are NaN). "
             f"The errors, grouped:"]
    for g in groups[:3]:
        first = g["error"].splitlines()[0] if g["error"] else ""
        c = g["configs"][0]
        lines.append(f"  {g['count']} x {first}  (e.g. configuration {c}: {study.params[c]})")
    if len(groups) > 3:
        lines.append(f"  ... {len(groups) - 3} other errors: Study.failures() lists all")
    warn("\n".join(lines), FitFailedWarning, stacklevel=stacklevel + 1)
