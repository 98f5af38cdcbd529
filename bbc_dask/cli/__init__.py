"""The ``bbc-dask`` command line (:mod:`._commands`) and the study files it runs
(:mod:`._studyfile`)."""
from ._commands import main
from . import _protocols  # noqa: F401,E402 - registers the commands of the other protocols

__all__ = ["main"]
