"""bbc_dask: cross-validation with tuning on Dask, with estimates that are honest about
the winner's curse (BBC-CV, BBC-F, BBCD-CV)."""
from . import metrics, simulate
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
    "bbc",
    "bbc_f",
    "fold_score_matrix",
    "metrics",
    "naive_bootstrap",
    "naive_cvt",
    "simulate",
    "tibshirani_tibshirani",
]
