"""A Dask worker preload: the modules a study's tasks need, imported while the worker
starts rather than by its first task.

``dask worker --preload bbc_dask.preload ...`` (the manifests in ``deploy/`` do this;
``bd.make_client`` does it for its local workers, and its fork server imports this module
once for all of them). A fresh worker spends about 1.3 s of CPU importing scikit-learn,
Zarr, the chunk codecs and the package's metrics; without the preload, that time falls
into the first wave of the first study, where 16 workers starting at once on a shared
machine delay every first task (docs/performance.md, "Scale-out"). With it, a worker
joins the scheduler only once it is ready, so a worker added to a running cluster (an
autoscaler's) is given tasks it can start at once.

Numba is not imported here: a worker whose tasks call no compiled kernel never loads it
(~140 MiB; ``bbc_dask._jit``).
"""
from __future__ import annotations

import importlib
import logging

__all__ = ["STUDY_MODULES", "dask_setup", "import_study_modules"]

#: What the tasks of a study import: scikit-learn's base (and, through it, NumPy, SciPy and
#: pandas), Zarr and the chunk codecs, the CRC of stored chunks, the package's metrics,
#: statistics and store (its chunk writer).
STUDY_MODULES = ("sklearn.base", "zarr", "numcodecs.blosc", "google_crc32c", "bbc_dask.metrics",
                 "bbc_dask.stats", "bbc_dask.cube")


def import_study_modules():
    """Import :data:`STUDY_MODULES` (those already imported cost nothing; after them the
    engine's task module, which a task's unpickling imports, takes 4 ms). A module that
    cannot be imported is skipped with a warning in the log: the worker starts anyway,
    and a task that needs it says what is wrong."""
    for name in STUDY_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            logging.getLogger(__name__).warning("bbc_dask.preload: %s not imported (%s)", name, exc)


def dask_setup(worker):  # noqa: ARG001 - distributed's preload hook
    import_study_modules()


import_study_modules()  # at import: in the fork server, once for every worker forked from it
