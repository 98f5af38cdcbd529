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

#: The 2024 paper's comparators (bbc_dask.selection_ci's methods) with the paper's names.
#: Here, not in the module that computes them, so that the command line builds its
#: options without loading the statistics.
CI_METHODS = {"delong": "DL", "hanley_mcneil": "HM", "tilting": "BT", "delong_10p": "DL10p",
              "hanley_mcneil_10p": "HM10p", "tilting_10p": "BT10p", "mabt": "MABT"}



def alpha_of(confidence_level):
    """``1 - confidence_level`` as the decimal a user means: 1 - 0.95 is
    0.050000000000000044 in floating point, which would move the methods' brackets."""
    return round(1.0 - confidence_level, 12)


_WHERE = {"BBCResult": "._result", "ConfidenceInterval": "._result"}


def __getattr__(name):
    if name in __all__:
        mod = importlib.import_module(_WHERE.get(name, "._bbc"), __name__)
        return getattr(mod, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
