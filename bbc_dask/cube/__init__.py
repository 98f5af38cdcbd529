"""The prediction cube: schema, create/open, region writes, completion ledger, lock."""
from ._lock import StoreLock, StoreLockedError
from ._schema import (
    DONE,
    DROPPED,
    FAILED,
    PENDING,
    SCHEMA,
    Cube,
    StoreMismatchError,
    create_cube,
    open_cube,
)

__all__ = [
    "DONE", "DROPPED", "FAILED", "PENDING", "SCHEMA", "Cube", "StoreLock", "StoreLockedError",
    "StoreMismatchError", "create_cube", "open_cube",
]
