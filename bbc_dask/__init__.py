"""bbc_dask: cross-validation with tuning on Dask, with estimates that are honest about
the winner's curse (BBC-CV, BBC-F, BBCD-CV)."""
from . import metrics, simulate
from ._study import Study, open_study
from .cluster import make_client
from .engine import run_study
from .stats._dropping import Dropping, dropping_test
from .stats import (
    BBCResult,
    ConfidenceInterval,
    bbc,
    bbc_f,
    fold_score_matrix,
    naive_bootstrap,
    naive_cvt,
    tibshirani_tibshirani,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "BBCResult",
    "ConfidenceInterval",
    "Dropping",
    "Study",
    "bbc",
    "bbc_f",
    "dropping_test",
    "fold_score_matrix",
    "make_client",
    "metrics",
    "naive_bootstrap",
    "naive_cvt",
    "open_study",
    "run_study",
    "simulate",
    "tibshirani_tibshirani",
]
