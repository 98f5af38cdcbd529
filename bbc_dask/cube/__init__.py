"""The prediction cube: schema, create/open, region writes, completion ledger, lock."""
from ._location import StoreLocation, as_location, writing
from ._lock import ObjectStoreLock, StoreLock, StoreLockedError
from ._schema import (
    DONE,
    DROPPED,
    FAILED,
    PENDING,
    SCHEMA,
    Cube,
    StoreMismatchError,
    create_cube,
    inspect_store,
    open_cube,
)

__all__ = [
    "DONE", "DROPPED", "FAILED", "PENDING", "SCHEMA", "Cube", "StoreLock", "StoreLockedError",
    "ObjectStoreLock", "StoreLocation", "as_location", "writing",
    "StoreMismatchError", "create_cube", "inspect_store", "open_cube",
]
