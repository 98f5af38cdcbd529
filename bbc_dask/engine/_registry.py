"""What reads a store's protocol back: its class by the kind the spec records. Above the
protocols' modules, so that the built-in ones are registered by importing them here."""
from __future__ import annotations

from . import _nested  # noqa: F401 - registers nested CV
from ._protocol import PROTOCOLS

__all__ = ["protocol_class"]


def protocol_class(kind):
    """The class of a stored protocol's ``kind`` (None: K-fold, the default); None for a
    kind this process has not registered."""
    return PROTOCOLS.get(kind or "kfold")
