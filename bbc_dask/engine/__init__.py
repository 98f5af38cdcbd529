"""CVT engine: the study request, its protocol (the plan of splits), worker tasks, waves,
final refit; :func:`run_cvt` runs a :class:`StudyRequest` (:func:`bbc_dask.run_study` is
the public face)."""
from ._nested import NestedProtocol, nested_outcome
from ._plan import Configurations, is_study_file
from ._protocol import KFoldProtocol, SplitsProtocol
from ._request import Execution, Search, StudyData, StudyRequest
from ._run import CVTRun, run_cvt, wall_seconds
from ._tasks import _fold_scores as score_fold
from ._tasks import _fold_target as fold_target
from ._tasks import (FitScoring, configured, fit_predict_block, method_problem, refit, response_method,
                     stored_as)

__all__ = ["CVTRun", "Configurations", "Execution", "FitScoring", "KFoldProtocol",
           "NestedProtocol", "Search", "SplitsProtocol", "StudyData", "StudyRequest",
           "configured", "fit_predict_block", "fold_target", "is_study_file", "method_problem",
           "nested_outcome", "refit", "response_method", "run_cvt", "score_fold", "stored_as",
           "wall_seconds"]
