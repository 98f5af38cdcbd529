"""CVT engine: plan, worker tasks, waves, final refit; :func:`run_cvt` runs them
(:func:`bbc_dask.run_study` is the public face)."""
from ._run import CVTRun, run_cvt

__all__ = ["CVTRun", "run_cvt"]
