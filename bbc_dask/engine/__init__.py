"""CVT engine: plan, worker tasks, wave scheduler, final refit."""
from ._run import StudyError, run_study

__all__ = ["StudyError", "run_study"]
