"""The encoded target a metric is scored against (labels as class codes, regression
values, or survival times and events); :mod:`bbc_dask._validation` encodes a user's
``y`` into it."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np


@dataclass
class Target:
    """Encoded target: class codes, regression values, or survival (time, event)."""

    codes: np.ndarray | None = None  # int64 class codes 0..K-1 (classification)
    classes: np.ndarray | None = None  # labels in sorted order
    pos_code: int | None = None  # binary metrics: code of the positive class
    values: np.ndarray | None = None  # regression targets, float64
    time: np.ndarray | None = None  # survival
    event: np.ndarray | None = None
    center: float | None = None  # regression: the shift of R²'s sums (see _pointwise._R2)

    @classmethod
    def of_codes(cls, codes, n_classes, pos_code=None):
        """The target of class codes 0..n_classes-1 as a study stores them (its classes
        are the codes; the positive class defaults to the last)."""
        return cls(codes=np.asarray(codes, dtype=np.int64),
                   classes=np.arange(n_classes, dtype=np.int64),
                   pos_code=n_classes - 1 if pos_code is None else int(pos_code))

    def subset(self, lo, hi):
        """The target of samples ``lo..hi-1`` of a sample block: classes, positive class
        and (for regression) the centre of the whole sample kept, so that a block's sums
        are the very terms of the whole sample's."""
        fields = {f: getattr(self, f)[lo:hi] for f in ("codes", "values", "time", "event")
                  if getattr(self, f) is not None}
        if self.values is not None:
            fields["center"] = self.value_center()
        return dataclasses.replace(self, **fields)

    def value_center(self):
        """The centre of R²'s sums: the stored one, else the mean of the values."""
        return float(np.mean(self.values)) if self.center is None else self.center

    @property
    def n_samples(self) -> int:
        for a in (self.codes, self.values, self.time):
            if a is not None:
                return a.shape[0]
        raise AttributeError("empty target")
