"""bbc_dask: cross-validation with tuning on Dask, with estimates that are honest about
the winner's curse (BBC-CV, BBC-F, BBCD-CV).

Names are imported on first use (PEP 562), so a Dask worker that only runs the bootstrap
kernels does not load scikit-learn, xarray or the engine.
"""
import importlib

__version__ = "0.1.0.dev0"

__all__ = [
    "BBCRandomizedSearchCV",
    "BBCResult",
    "BBCSearchCV",
    "BootstrapEstimate",
    "Comparison",
    "ConfidenceInterval",
    "Dropping",
    "HoldoutResult",
    "NestedCVResult",
    "Protocol",
    "RepeatedHoldoutResult",
    "SelectionCI",
    "Stop",
    "Study",
    "bbc",
    "bbc_f",
    "bootstrap_estimate",
    "close_shared_client",
    "compare",
    "coverage",
    "dropping_test",
    "fold_score_matrix",
    "holdout",
    "make_client",
    "metrics",
    "naive_bootstrap",
    "naive_cvt",
    "nested_cv",
    "open_nested",
    "open_study",
    "register_protocol",
    "repeated_holdout",
    "report",
    "run_study",
    "selection_ci",
    "simulate",
    "tibshirani_tibshirani",
    "verify_store",
]

_WHERE = {
    "BBCResult": ".stats",
    "ConfidenceInterval": ".stats",
    "bbc": ".chunked",
    "bbc_f": ".chunked",
    "fold_score_matrix": ".stats",
    "naive_bootstrap": ".stats",
    "naive_cvt": ".stats",
    "tibshirani_tibshirani": ".stats",
    "coverage": ".protocols",
    "SelectionCI": ".stats",
    "selection_ci": ".stats",
    "Dropping": ".stats",
    "dropping_test": ".stats",
    "Study": ".study",
    "Protocol": ".engine",
    "Stop": ".engine",
    "register_protocol": ".engine",
    "open_study": ".study",
    "run_study": ".study",
    "make_client": ".cluster",
    "close_shared_client": ".cluster",
    "BBCSearchCV": ".model_selection",
    "BBCRandomizedSearchCV": ".model_selection",
    "verify_store": ".cube",
    "NestedCVResult": ".protocols",
    "Comparison": ".protocols",
    "compare": ".protocols",
    "nested_cv": ".protocols",
    "open_nested": ".protocols",
    "holdout": ".protocols",
    "repeated_holdout": ".protocols",
    "bootstrap_estimate": ".protocols",
    "HoldoutResult": ".stats",
    "RepeatedHoldoutResult": ".stats",
    "BootstrapEstimate": ".stats",
}


def __getattr__(name):
    if name in ("metrics", "simulate", "report"):
        return importlib.import_module(f".{name}", __name__)
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
