"""How many tasks of the chunked path run at once. What each may hold is in
:mod:`bbc_dask._tuning` (``COUNTS_BYTES``, ``SUMS_BYTES``, ``HOLD_BYTES``, the ``RANK_*``
sizes), read at call time, beside the size of a block it reads (``CHUNK_BYTES``)."""
from __future__ import annotations


def slots():
    """Worker threads of the current Dask client (else this machine's cores): how many
    tasks run at once."""
    import os

    try:
        from distributed import default_client

        info = default_client().scheduler_info(n_workers=-1)["workers"]
        return max(1, sum(w.get("nthreads", 1) for w in info.values()))
    except (ImportError, ValueError, TypeError, KeyError):
        return os.cpu_count() or 1
