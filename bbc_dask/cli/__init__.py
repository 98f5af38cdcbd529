"""The ``bbc-dask`` command line (:mod:`._commands`) and the study files it runs
(:mod:`._studyfile`)."""
from ._commands import main

__all__ = ["main"]
