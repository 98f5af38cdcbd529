"""Getting a Dask client: a local cluster (default) or an existing scheduler."""
from __future__ import annotations

import os

__all__ = ["make_client", "resolve_client"]


def make_client(kind="local", **options):
    """A :class:`distributed.Client`.

    Parameters
    ----------
    kind : {"local", "address"}
        ``"local"``: a :class:`distributed.LocalCluster` of processes with one thread each
        (``n_workers`` defaults to the number of cores); ``"address"``: connect to
        ``options["address"]``.
    **options
        Passed to ``LocalCluster`` (local) or ``Client`` (address).
    """
    from distributed import Client, LocalCluster

    if kind == "local":
        opts = dict(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True)
        opts.update(options)
        return Client(LocalCluster(**opts))
    if kind == "address":
        opts = dict(options)
        address = opts.pop("address")
        return Client(address, **opts)
    raise ValueError(f"The 'kind' parameter of make_client must be one of ['local', 'address']. Got {kind!r} instead.")


def resolve_client(client, caller):
    """``(client, owned)``: None starts a local cluster, a string connects to a scheduler."""
    from distributed import Client

    if client is None:
        return make_client("local", dashboard_address=":0"), True
    if isinstance(client, str):
        return Client(client), True
    if isinstance(client, Client):
        return client, False
    raise TypeError(
        f"The 'client' parameter of {caller} must be a distributed.Client, a scheduler "
        f"address string or None. Got {type(client).__name__} instead."
    )
