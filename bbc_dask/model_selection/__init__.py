"""``BBCSearchCV`` and ``BBCRandomizedSearchCV``: the study as a scikit-learn
meta-estimator, a drop-in for ``GridSearchCV`` / ``RandomizedSearchCV`` with BBC's estimate
of the selected model's performance on top.

- ``_search.py``: the estimators (parameters, ``fit``, ``score``, the fitted attributes);
- ``_multimetric.py``: their scorers (one, several, callables) and what each reads — the
  stored predictions or the fitted fold models;
- ``_search_run.py``: how they read ``cv``, ``n_jobs`` and their client, ``cv_results_``
  and the refit.
"""
from ._search import BBCRandomizedSearchCV, BBCSearchCV

__all__ = ["BBCRandomizedSearchCV", "BBCSearchCV"]
