"""Bootstrap statistics on prediction matrices: pure NumPy/numba, no Dask.

The estimators are loaded on first access, so that a process which only unpickles a
result (:mod:`._result`, NumPy alone) does not import numba.
"""
import importlib

__all__ = [
    "BBCResult",
    "ConfidenceInterval",
    "bbc",
    "bbc_f",
    "fold_score_matrix",
    "naive_bootstrap",
    "naive_cvt",
    "tibshirani_tibshirani",
]

_WHERE = {"BBCResult": "._result", "ConfidenceInterval": "._result"}


def __getattr__(name):
    if name in __all__:
        mod = importlib.import_module(_WHERE.get(name, "._bbc"), __name__)
        return getattr(mod, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
