"""CVT engine: the study request, its protocol (the plan of splits), worker tasks, waves,
final refit; :func:`run_cvt` runs a :class:`StudyRequest` (:func:`bbc_dask.run_study` is
the public face)."""
from ._nested import NestedProtocol, nested_outcome
from ._plan import Configurations
from ._protocol import KFoldProtocol, SplitsProtocol
from ._request import Execution, Search, StudyData, StudyRequest
from ._run import CVTRun, run_cvt

__all__ = ["CVTRun", "Configurations", "Execution", "KFoldProtocol", "NestedProtocol", "Search",
           "SplitsProtocol", "StudyData", "StudyRequest", "nested_outcome", "run_cvt"]
