"""scikit-learn's fit callbacks (1.9 on) through a study's fits: worker-side, plain and
picklable, as :mod:`._tasks`.

A search with callbacks (``set_callbacks``) builds ``GridSearchCV``'s task tree on the
driver — its root, the search, one leaf per candidate and split, the refit — and calls
the hooks of those tasks itself, with itself as the estimator. What must happen where the
estimator is fitted travels with the fits as a :class:`FitCallbacks`: each fit
propagates the auto-propagated callbacks to the estimator it fits, under its leaf's
context (``CallbackContext.propagate_callback_context``, as ``_fit_and_score`` does), so
that an estimator supporting callbacks reports its own tasks from the worker; the
callbacks send their messages to the driver's process themselves (scikit-learn's
transport).
"""
from __future__ import annotations

import contextlib
import dataclasses

__all__ = ["FitCallbacks"]


@dataclasses.dataclass(frozen=True)
class FitCallbacks:
    """The contexts the fits propagate callbacks under: ``evaluations`` the leaves of the
    candidate-split evaluations in ``GridSearchCV``'s order (candidate-major, then the
    ``n_columns`` split columns: repeat-major, ``n_folds`` per repeat), ``refit`` the
    refit's (or None)."""

    evaluations: tuple
    n_columns: int
    n_folds: int
    refit: object = None

    def context(self, config, repeat, fold):
        """The leaf of configuration ``config`` on (``repeat``, ``fold``)."""
        return self.evaluations[config * self.n_columns + repeat * self.n_folds + fold]

    @staticmethod
    def around(estimator, ctx):
        """The context manager a fit of ``estimator`` under ``ctx`` runs in (nothing
        without one)."""
        if ctx is None:
            return contextlib.nullcontext()
        return ctx.propagate_callback_context(estimator)
