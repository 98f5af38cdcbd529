"""How many tasks of the chunked path run at once. What each may hold is in the
settings (:mod:`bbc_dask._tuning`: ``bbc_dask.counts-bytes``, ``bbc_dask.sums-bytes``,
``bbc_dask.hold-bytes``, the ``bbc_dask.rank-*`` sizes), read at call time, beside the
size of a block it reads (``bbc_dask.chunk-bytes``)."""
from __future__ import annotations

import os


def slots():
    """Worker threads of the current Dask client (else this machine's cores): how many
    tasks run at once."""
    from ..cluster import current_client, threads_of

    client = current_client()
    if client is None:
        return os.cpu_count() or 1
    try:
        return threads_of(client)
    except Exception:  # noqa: BLE001 - a client closing: the budget is only a size matter
        return os.cpu_count() or 1
