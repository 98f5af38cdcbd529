"""Sample blocks and count matrices: the layout every metric kernel reads.

A bootstrap is a row of integer *count weights*, one per sample; a block of bootstraps
is a count matrix (B, N). Sums over samples run per *sample block* (:data:`SAMPLE_BLOCK`
consecutive samples) and the block sums are added in block order, so that a task
holding one block computes the very terms the in-memory kernel adds up.
"""
from __future__ import annotations

import sys

import numpy as np

#: Samples per *sample block*. Bootstrap counts are drawn per block of this many
#: consecutive samples (:mod:`bbc_dask.stats._bootstrap`), and pointwise metrics sum their
#: features per block, then add the block sums in block order: a task holding one block
#: of samples computes exactly the partial sums the in-memory kernel adds up, so a cube
#: chunked along samples gives the in-memory result bit for bit. A cube of at most this
#: many samples is one block (the kernels of earlier versions, unchanged).
#:
#: The setting is the package's ``bbc_dask.metrics.SAMPLE_BLOCK`` (re-exported from
#: here); every reader looks it up there at call time (:func:`sample_blocks`), so that
#: setting it on the package (tests do, to cut small samples into many blocks) reaches
#: every reader. This module's own name keeps the default only.
SAMPLE_BLOCK = 2**15


def _package_sample_block():
    """The package's :data:`SAMPLE_BLOCK` now.

    Read from the loaded package module, not from this module's name: a value set on
    ``bbc_dask.metrics`` after import must be seen, and the package module is found in
    ``sys.modules`` (its ``__init__`` imports this module, so importing it back here would
    tie the two in a circle)."""
    return sys.modules[__package__].SAMPLE_BLOCK


def sample_blocks(n, size=None):
    """``[(lo, hi), ...]``: the sample blocks of ``n`` samples (``size`` default
    :data:`SAMPLE_BLOCK`, read at call time)."""
    size = _package_sample_block() if size is None else int(size)
    return [(lo, min(lo + size, n)) for lo in range(0, n, size)]


# Count matrices are (B, N): one row per bootstrap; int32, or uint8 when every count
# fits (the chunked path ships and holds them at a quarter of the memory). The kernels
# accumulate in int64 whatever the count type.
def _as_counts(counts):
    counts = np.asarray(counts)
    if counts.dtype in (np.uint8, np.int32):
        return np.ascontiguousarray(counts)
    return np.ascontiguousarray(counts, dtype=np.int32)
