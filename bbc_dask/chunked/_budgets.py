"""How many tasks of the chunked path run at once. What each may hold is in
:mod:`bbc_dask._tuning` (``COUNTS_BYTES``, ``SUMS_BYTES``, ``HOLD_BYTES``, the ``RANK_*``
sizes), read at call time, beside the size of a block it reads (``CHUNK_BYTES``)."""
from __future__ import annotations


def slots():
    """Worker threads of the current Dask client (else this machine's cores): how many
    tasks run at once."""
    import os

    from ..cluster import current_client, threads_of

    client = current_client()
    if client is None:
        return os.cpu_count() or 1
    try:
        return threads_of(client)
    except Exception:  # noqa: BLE001 - a client closing: the budget is only a size matter
        return os.cpu_count() or 1
