"""A study: a cross-validation-with-tuning run and its results, read from its Zarr store.

- :func:`run_study` (:mod:`._run`): the door of a run — its request built from the
  arguments, the engine called, the run's :class:`Study` returned;
- :class:`Study` and :func:`open_study` (:mod:`._study`): the reading half — what the
  store holds, the scikit-learn view (``cv_results_``, ``best_*``), the final model;
- :class:`StudyEstimates` (:mod:`._estimates`): the computing half a :class:`Study`
  holds and offers as its own methods — BBC, BBC-F, BBCD and the 2024 paper's
  comparators on the store's configurations, from the store's gateway alone.
"""
from ._estimates import StudyEstimates
from ._run import run_study
from ._study import Study, open_study, study_of

__all__ = ["Study", "StudyEstimates", "open_study", "run_study", "study_of"]
