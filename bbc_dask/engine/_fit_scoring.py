"""The scores of each fold's fitted model (``GridSearchCV``'s scorers, called by the
tasks): worker-side, plain and picklable, as :mod:`._tasks`."""
from __future__ import annotations

from .. import _sklearn_compat as compat

__all__ = ["FitScoring"]


class FitScoring:
    """The scores a study computes with each fold's fitted model: scikit-learn scorers
    ``scorer(estimator, X, y, **params)``, as ``GridSearchCV`` calls them, on the test
    rows (``test``: ``{name: scorer}``) and on the training rows (``train``: for
    ``return_train_score``), with the scorers' own parameters (``params``: metadata routed
    to them, one row per sample, sliced per split by :meth:`sliced`; ``routing`` whether
    scikit-learn's metadata routing was on, as the scorers must run with it). Columns of
    ``fit_score``: ``test_<name>`` then ``train_<name>`` (:attr:`labels`)."""

    def __init__(self, test, train, params=None, routing=False):
        self.test, self.train = dict(test), dict(train)
        self.params, self.routing = dict(params or {}), bool(routing)
        self.y_test = self.test_params = self.train_params = None

    @property
    def labels(self):
        return tuple(f"test_{k}" for k in self.test) + tuple(f"train_{k}" for k in self.train)

    @property
    def width(self):
        return len(self.test) + len(self.train)

    def describe(self):
        """The store's record of the scorers (JSON): each label with its scorer (a name,
        a ``make_scorer``'s repr, a function by module and name): part of the study's
        identity, as the fit parameters are."""
        from ..metrics import scorer_name

        def text(sc):
            if isinstance(sc, str):
                return sc
            if compat.is_function_scorer(sc):
                return scorer_name(sc)
            return f"{getattr(sc, '__module__', '?')}.{getattr(sc, '__qualname__', repr(sc))}"

        return [{"label": label, "scorer": text(sc)} for label, sc in zip(
            self.labels, list(self.test.values()) + list(self.train.values()))]

    def sliced(self, X, y_test, train, test):
        """A copy for one split: its test target and the parameters of its rows."""
        out = FitScoring(self.test, self.train, self.params, self.routing)
        out.y_test = y_test
        out.train_params = compat.check_method_params(X, self.params, train)
        out.test_params = compat.check_method_params(X, self.params, test)
        return out

    def score(self, est, X_train, y_train, X_test):
        """The scores of the fitted ``est`` in :attr:`labels` order; a scorer's error
        is raised (the configuration fails)."""
        import sklearn

        out = []
        with sklearn.config_context(enable_metadata_routing=self.routing):
            for scorers, X, y, params in ((self.test, X_test, self.y_test, self.test_params),
                                          (self.train, X_train, y_train, self.train_params)):
                if scorers:  # one call: the scorers share the estimator's predictions
                    got = compat.MultimetricScorer(scorers=scorers, raise_exc=True)(
                        est, X, y, **(params or {}))
                    out += [float(got[k]) for k in scorers]
        return out
