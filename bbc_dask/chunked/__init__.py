"""Bootstraps and dropping tests over configuration chunks of a cube on Dask.

The layer between the statistics (NumPy, in memory) and the store: it knows both, so the
public :func:`bbc_dask.bbc` and :func:`bbc_dask.bbc_f` are defined here and send a Dask-
or Zarr-backed cube to the chunked path. :mod:`._blocks` holds the per-chunk pieces that
run on the workers (NumPy and zarr only: importing it loads no Dask); Zarr's block
rules are :mod:`bbc_dask._zarr`'s, shared with the study's store.
"""
from .._zarr import CHUNK_BYTES, zarr_blocks
from ._dispatch import (
    bbc,
    bbc_f,
    fold_matrix_over_blocks,
    bbc_over_blocks,
    bbc_over_table,
    is_lazy,
    lazy_bbc,
    lazy_bbc_f,
    lazy_dropping_test,
)

__all__ = ["CHUNK_BYTES", "bbc", "bbc_f", "fold_matrix_over_blocks", "bbc_over_blocks", "bbc_over_table",
           "is_lazy", "lazy_bbc", "lazy_bbc_f", "lazy_dropping_test", "zarr_blocks"]
