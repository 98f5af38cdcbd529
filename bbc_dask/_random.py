"""One seed source for the whole project.

``random_state`` (None, int, SeedSequence, Generator or RandomState) becomes one
:class:`numpy.random.SeedSequence`. Every random draw the project makes comes from a child
of it that is addressed by a *key path* (a stream name and indices), never from a shared
generator that is advanced in task order. Bootstrap ``b`` is therefore the same draw
whether it is computed alone, in a block of 10 or of 10,000, on one worker or on many
(the design of scipy's ``_rng_spawn``; scikit-learn's repeated splitters chain one
generator, which we avoid).
"""
from __future__ import annotations

import numbers
import zlib

import numpy as np

from .exceptions import InvalidParameterError

__all__ = ["STREAMS", "as_seed_sequence", "child_generator", "child_seed"]

# Stream ids keep the draws of different procedures independent even with the same seed.
STREAMS = {
    "bbc": 1,
    "bbc_f": 2,
    "naive_bootstrap": 3,
    "folds": 4,
    "dropping": 5,
    "simulate": 6,
    "search": 7,
    "selection_ci": 8,
    "coverage": 9,
    "holdout": 10,
    "holdout_ci": 11,
    "bootstrap_estimate": 12,
}


def as_seed_sequence(random_state, *, name="random_state"):
    """Turn ``random_state`` into a :class:`numpy.random.SeedSequence`.

    A ``Generator`` or ``RandomState`` is consumed once (128 bits of entropy are drawn
    from it), so passing the same generator twice gives two different, reproducible
    seeds, as in scikit-learn.
    """
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise InvalidParameterError.of(name, _EXPECTED, random_state)
        return np.random.SeedSequence(int(random_state))
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(random_state.integers(0, 2**32, size=4, dtype=np.uint64))
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(random_state.randint(0, 2**32, size=4, dtype=np.uint64))
    raise InvalidParameterError.of(name, _EXPECTED, random_state)


_EXPECTED = "a non-negative int, a numpy SeedSequence, Generator or RandomState, or None"


def _key(part):
    if isinstance(part, str):
        return STREAMS.get(part, zlib.crc32(part.encode()))
    return int(part)


def child_seed(root: np.random.SeedSequence, *path) -> np.random.SeedSequence:
    """The child of ``root`` at ``path`` (e.g. ``("bbc", b)``), independent of spawn order."""
    return np.random.SeedSequence(
        entropy=root.entropy,
        spawn_key=tuple(root.spawn_key) + tuple(_key(p) for p in path),
        pool_size=root.pool_size,
    )


def child_generator(root: np.random.SeedSequence, *path) -> np.random.Generator:
    """A PCG64 generator seeded by :func:`child_seed`."""
    return np.random.Generator(np.random.PCG64(child_seed(root, *path)))


def entropy_of(root: np.random.SeedSequence) -> dict:
    """JSON-serialisable description of ``root`` (stored in study attributes)."""
    return {"entropy": str(root.entropy), "spawn_key": [int(k) for k in root.spawn_key]}
