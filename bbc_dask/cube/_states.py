"""The values of a ledger cell's ``state``: kept apart so that the modules writing the
ledger (``_ledger_check``) and defining the store (``_schema``) import them one way."""

__all__ = ["DONE", "DROPPED", "FAILED", "MISSING", "PENDING"]

PENDING, DONE, FAILED, DROPPED = 0, 1, 2, 3
#: ``state`` of a ledger chunk that is missing from the store (its fill value).
MISSING = -1
