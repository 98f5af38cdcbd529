"""Estimators for the tests, importable by worker processes (the tests directory is on
their sys.path, as on the driver's)."""
import threading
import time

from sklearn.linear_model import LogisticRegression

#: Cleared by a test to hold SlowStart.get_params in the test process; set elsewhere.
GATE = threading.Event()
GATE.set()


class SlowStart(LogisticRegression):
    """A LogisticRegression whose get_params waits for GATE: holds a run at the start
    (planning reads the estimator's parameters), as a slow start-up on a large grid does."""

    def get_params(self, deep=True):
        GATE.wait(timeout=300)
        return super().get_params(deep=deep)


class Sleepy(LogisticRegression):
    """A LogisticRegression whose fit also sleeps ``nap`` seconds (work for a cluster)."""

    def __init__(self, nap=0.05, C=1.0, max_iter=200):
        super().__init__(C=C, max_iter=max_iter)
        self.nap = nap

    def fit(self, X, y):
        time.sleep(self.nap)
        return super().fit(X, y)
