"""scikit-learn's fit callbacks (``set_callbacks``, scikit-learn 1.9 on) on a search: the
task tree ``GridSearchCV`` reports — the fit's root, the search, one evaluation per
candidate and split, the refit — built and reported by the search itself, with itself as
the estimator. The fits run on Dask's workers: each propagates the auto-propagated
callbacks to the estimator it fits under its evaluation's context
(:class:`~bbc_dask.engine.FitCallbacks`), so an estimator that supports callbacks reports
its own tasks from there; the evaluations' own hooks are called here once the study has
fitted them (their order is the grid's, not the order the workers ran them in)."""
from __future__ import annotations

import warnings

import numpy as np

from .. import _sklearn_compat as compat

__all__ = ["SearchCallbacks", "managed"]


class SearchCallbacks:
    """The callback tasks of one ``fit`` of ``search`` (which has callbacks, or a parent's
    context); :attr:`shipped` goes with the fits."""

    @classmethod
    def of(cls, search, request, X, y, params):
        """The fit's callbacks, or None when the search has none to report to."""
        if not compat.supports_callbacks(search) or not (
                getattr(search, "_skl_callbacks", None) or hasattr(search, "_parent_callback_ctx")):
            return None
        return cls(search, request, X, y, params)

    def __init__(self, search, request, X, y, params):
        from ..engine import FitCallbacks

        self.search, self.X, self.y = search, X, y
        sw = params.get("sample_weight")
        self.metadata = None if sw is None else {"sample_weight": sw}
        protocol = request.protocol
        n_columns = protocol.n_splits * protocol.n_repeats
        n_configs = len(request.search.grid) if request.search.grid is not None else \
            request.search.n_iter
        self.root = compat.init_callback_context(
            search, max_subtasks=1 + (search.refit is not False)).call_on_fit_task_begin(
            estimator=search, X=X, y=y, metadata=self.metadata)
        self.search_ctx = self.root.subcontext(
            task_name="search", max_subtasks=n_configs * n_columns, sequential_subtasks=False
        ).call_on_fit_task_begin(estimator=search)
        self.evaluations = tuple(
            self.search_ctx.subcontext(task_name="candidate-split-evaluation", task_id=t)
            for t in range(n_configs * n_columns))
        self.refit = self.root.subcontext(task_name="refit-with-best-params") \
            if search.refit is not False else None
        self.shipped = FitCallbacks(self.evaluations, n_columns, protocol.n_splits, self.refit)

    def _hooks(self, ctx, estimator, train=None):
        """``on_fit_task_begin`` and ``on_fit_task_end`` of ``ctx``, the callbacks that
        the fit of ``estimator`` propagated set aside as ``_fit_and_score`` sets them
        (their hooks are the fitted estimator's own); X, y and the metadata of the
        training rows ``train`` (all rows: None), read only by a hook that asks."""
        from ..engine import take_rows

        with warnings.catch_warnings():  # what the fit's propagation said, said there
            warnings.simplefilter("ignore")
            with ctx.propagate_callback_context(estimator):
                pass

        def rows(a):
            return (lambda: take_rows(a, train)) if train is not None else a

        md = self.metadata
        if md is not None and train is not None:
            md = (lambda: {"sample_weight": take_rows(np.asarray(self.metadata["sample_weight"]),
                                                      train)})
        kw = dict(estimator=self.search, X=rows(self.X), y=rows(self.y), metadata=md)
        ctx.call_on_fit_task_begin(**kw)
        ctx.call_on_fit_task_end(**kw)

    def evaluated(self, study):
        """The hooks of every evaluation the study fitted (done or failed), in the grid's
        order; then the search's end."""
        from ..cube import DONE, FAILED
        from ..engine import configured

        state = study.state
        folds = np.asarray(study.cube["fold"].values)  # (sample, repeat)
        n_folds = state.shape[2]
        for c, params in enumerate(study.params):
            est = configured(self.search.estimator, params)
            for r in range(state.shape[1]):
                for k in range(n_folds):
                    if state[c, r, k] in (DONE, FAILED):
                        train = np.flatnonzero((folds[:, r] != k) & (folds[:, r] >= 0))
                        self._hooks(self.shipped.context(c, r, k), est, train)
        self.search_ctx.call_on_fit_task_end(estimator=self.search)

    def refitted(self, params):
        """The refit's hooks (``params`` the configuration refit)."""
        from ..engine import configured

        if self.refit is not None:
            self._hooks(self.refit, configured(self.search.estimator, params))

    def ended(self):
        """The fit's end."""
        self.root.call_on_fit_task_end(estimator=self.search, X=self.X, y=self.y,
                                       metadata=self.metadata)


def managed(method):
    """``fit`` run so that every callback set up is torn down, whatever happens
    (scikit-learn's ``with_callbacks``; the method itself where callbacks do not exist).
    Its wrapper is not counted by a warning's ``stacklevel``: warnings point at the user's
    line."""
    from .._doors import passing

    wrapped = compat.with_callbacks(method)
    if wrapped is not method:
        passing(wrapped)
    return wrapped
