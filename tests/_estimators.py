"""Estimators for the tests, importable by worker processes (the tests directory is on
their sys.path, as on the driver's)."""
import os
import time
import uuid

from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler


class Sleepy(LogisticRegression):
    """A LogisticRegression whose fit also sleeps ``nap`` seconds (work for a cluster)."""

    def __init__(self, nap=0.05, C=1.0, max_iter=200):
        super().__init__(C=C, max_iter=max_iter)
        self.nap = nap

    def fit(self, X, y):
        time.sleep(self.nap)
        return super().fit(X, y)


class Gated(Sleepy):
    """A Sleepy whose fits past the ``after``-th (counted across processes by files in the
    directory ``gate``) wait while ``gate/hold`` exists, after leaving ``gate/blocked``: a
    test can act on a run that is surely still going, however fast or slow the machine."""

    def __init__(self, nap=0.05, C=1.0, max_iter=200, gate="", after=0):
        super().__init__(nap=nap, C=C, max_iter=max_iter)
        self.gate = gate
        self.after = after

    def fit(self, X, y):
        open(os.path.join(self.gate, f"fit-{uuid.uuid4().hex}"), "w").close()
        fits = sum(name.startswith("fit-") for name in os.listdir(self.gate))
        if fits > self.after:
            wait_at(self.gate, ["hold"], "blocked")
        return super().fit(X, y)


def wait_at(gate, holds, blocked):
    """While any of the files ``holds`` of the directory ``gate`` exists (at most 600 s),
    wait, after leaving ``gate/blocked`` for the test to see."""
    holds = [os.path.join(gate, h) for h in holds]
    if any(os.path.exists(h) for h in holds):
        open(os.path.join(gate, blocked), "w").close()
        deadline = time.time() + 600
        while any(os.path.exists(h) for h in holds) and time.time() < deadline:
            time.sleep(0.02)


class CountingScaler(StandardScaler):
    """A StandardScaler that counts its fits in this process (``CountingScaler.fits``)."""

    fits = 0

    def fit(self, X, y=None, sample_weight=None):
        type(self).fits += 1
        return super().fit(X, y, sample_weight=sample_weight)


class FailsWhenTrainedOn(LogisticRegression):
    """Fails to fit whenever sample ``bad`` (its first feature marks it: X[bad, 0] ==
    1000) is among the training rows: a configuration that fails on some splits only."""

    def __init__(self, bad=-1, C=1.0):
        super().__init__(C=C)
        self.bad = bad

    def fit(self, X, y, sample_weight=None):
        import numpy as np

        if self.bad >= 0 and np.any(np.asarray(X)[:, 0] == 1000 + self.bad):
            raise ValueError(f"trained on sample {self.bad}")
        return super().fit(X, y, sample_weight)


class WeightIsFirstColumn(LogisticRegression):
    """Fails to fit unless its ``sample_weight`` is the first column of the X it is given:
    weights sliced to the training rows the way X is, and nothing else."""

    def fit(self, X, y, sample_weight=None):
        import numpy as np

        if sample_weight is None or not np.array_equal(np.asarray(sample_weight), np.asarray(X)[:, 0]):
            raise ValueError("sample_weight is not X[:, 0]")
        return super().fit(X, y, sample_weight)


class HeldIn(Sleepy):
    """A Sleepy that leaves a file per fit in the directory ``gate``
    (``fit-<pid>-<uuid>``: which process fitted, counted across processes) and whose fits
    wait while ``gate/hold-<pid>`` exists for their own process, after leaving
    ``gate/blocked-<pid>`` (``gate/hold-all`` holds every process): a test can keep one
    worker inside a fit while the others go on, however fast or slow the machine.
    ``noise`` adds that much Gaussian noise to the decision function (seeded by the
    training rows and ``noise``: the same predictions on any worker), so that a grid can
    hold configurations a dropping test tells apart."""

    def __init__(self, nap=0.05, C=1.0, max_iter=200, gate="", noise=0.0):
        super().__init__(nap=nap, C=C, max_iter=max_iter)
        self.gate = gate
        self.noise = noise

    def fit(self, X, y):
        pid = os.getpid()
        open(os.path.join(self.gate, f"fit-{pid}-{uuid.uuid4().hex}"), "w").close()
        wait_at(self.gate, [f"hold-{pid}", "hold-all"], f"blocked-{pid}")
        self.rows_ = len(X)
        return super().fit(X, y)

    def decision_function(self, X):
        import numpy as np

        out = super().decision_function(X)
        if self.noise:
            seed = [self.rows_, int(self.noise * 1000), len(X)]
            out = out + self.noise * np.random.default_rng(seed).normal(size=len(out))
        return out


class HeldUntestedOn(LogisticRegression):
    """A LogisticRegression whose fits with ``C == held_C`` that do not train on sample
    ``mark`` (marked by ``X[mark, 0] == 1000 + mark``: the fold that tests it, one per
    repeat) wait while ``gate/hold`` exists, after leaving ``gate/blocked``: a run stays
    going with every other cell done, one fold of one configuration pending per repeat.

    A held fit gives its worker thread back first (``distributed.secede``: the scheduler
    counts it long-running, out of the worker's slots). Held in its thread, two held fits
    could fill a worker of two threads while the scheduler, which takes them for
    ordinary tasks, still gave that worker a third task (worker-saturation 1.1: three
    slots for two threads): a cell that cannot be fitted until the test lifts the hold,
    which waits for that very cell. Only work stealing, or the engine's one task per
    thread at a stage's end, kept that from happening, depending on which folds the seed
    puts sample ``mark`` in and on how busy the other worker looked."""

    def __init__(self, C=1.0, gate="", mark=0, held_C=1.0):
        super().__init__(C=C, max_iter=300)
        self.gate = gate
        self.mark = mark
        self.held_C = held_C

    def fit(self, X, y):
        import numpy as np

        if self.C == self.held_C and not np.any(np.asarray(X)[:, 0] == 1000 + self.mark):
            _give_the_thread_back()
            wait_at(self.gate, ["hold"], "blocked")
        return super().fit(X, y)


def _give_the_thread_back():
    """``distributed.secede()`` in a task on a worker: its thread leaves the worker's
    pool (another takes its place) and the task counts as long-running."""
    from distributed import get_worker, secede

    try:
        get_worker()
    except ValueError:  # not in a task on a worker
        return
    secede()


def fits_by_process(gate):
    """``{pid: fits}`` of the HeldIn fits recorded in ``gate``."""
    out = {}
    for name in os.listdir(gate):
        if name.startswith("fit-"):
            pid = int(name.split("-")[1])
            out[pid] = out.get(pid, 0) + 1
    return out


class FitsRecorded(HistGradientBoostingClassifier):
    """A HistGradientBoostingClassifier that leaves, per fit, a file in the directory
    ``record`` named by the fitting process's id and holding its ``OMP_NUM_THREADS``
    ("" if unset): where a protocol's fits ran, and under which OpenMP thread limit
    (distributed's nannies start their workers with 1)."""

    def __init__(self, record="", max_iter=10, max_depth=None, random_state=0):
        super().__init__(max_iter=max_iter, max_depth=max_depth, random_state=random_state)
        self.record = record

    def fit(self, X, y, sample_weight=None):
        with open(os.path.join(self.record, f"{os.getpid()}-{uuid.uuid4().hex}"), "w") as f:
            f.write(os.environ.get("OMP_NUM_THREADS", ""))
        return super().fit(X, y, sample_weight=sample_weight)
