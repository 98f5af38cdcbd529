"""CVT engine: plan, worker tasks, wave scheduler, final refit."""
from ._run import StudyError, run_study, signals_as_interrupts

__all__ = ["StudyError", "run_study", "signals_as_interrupts"]
