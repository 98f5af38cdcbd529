"""CVT engine: the study request, its protocol (the plan of splits), worker tasks, waves,
final refit; :func:`run_cvt` runs a :class:`StudyRequest` (:func:`bbc_dask.run_study` is
the public face).

Names are imported on first use (PEP 562): a Dask worker unpickling its first task
imports ``bbc_dask.engine._tasks``, and with it this package; it need not load the
driver's modules (planning, the run, nested CV; scikit-learn's model_selection among
them: ~0.1 s of a cold worker's start, on the clock of the user's first run).
"""
from .._lazy_names import lazy_names

#: public name -> (module, its name there)
_WHERE = {
    "NestedProtocol": ("._nested", "NestedProtocol"),
    "nested_outcome": ("._nested", "nested_outcome"),
    "Configurations": ("._plan", "Configurations"),
    "check_search": ("._plan", "check_search"),
    "is_study_file": ("._plan", "is_study_file"),
    "KFoldProtocol": ("._protocol", "KFoldProtocol"),
    "Protocol": ("._protocol", "Protocol"),
    "protocol_class": ("._registry", "protocol_class"),
    "register_protocol": ("._protocol", "register_protocol"),
    "SplitsProtocol": ("._protocol", "SplitsProtocol"),
    "Execution": ("._request", "Execution"),
    "Resampling": ("._request", "Resampling"),
    "Scoring": ("._request", "Scoring"),
    "Search": ("._request", "Search"),
    "Storage": ("._request", "Storage"),
    "StudyData": ("._request", "StudyData"),
    "StudyRequest": ("._request", "StudyRequest"),
    "CVTRun": ("._run", "CVTRun"),
    "Stop": ("._stop", "Stop"),
    "StopRecord": ("._stop", "StopRecord"),
    "run_cvt": ("._run", "run_cvt"),
    "score_fold": ("._tasks", "_fold_scores"),
    "fold_target": ("._tasks", "_fold_target"),
    "FitScoring": ("._fit_scoring", "FitScoring"),
    "FitCallbacks": ("._callbacks", "FitCallbacks"),
    "configured": ("._tasks", "configured"),
    "fit_predict_block": ("._tasks", "fit_predict_block"),
    "method_problem": ("._tasks", "method_problem"),
    "problem_before_run": ("._xcheck", "problem_before_run"),
    "refit": ("._tasks", "refit"),
    "submit_with_data": ("._waves", "submit_with_data"),
    "take_rows": ("._tasks", "take_rows"),
    "response_method": ("._tasks", "response_method"),
    "stored_as": ("._tasks", "stored_as"),
    "BlockFits": ("._messages", "BlockFits"),
    "ShippedFit": ("._messages", "ShippedFit"),
    "TaskScoring": ("._messages", "TaskScoring"),
}

__all__, __getattr__, __dir__ = lazy_names(__name__, _WHERE)
