"""What the command line says of a store: a missing store or one that is not a study in
its words, a store this process cannot write, and the nested CV stores that status,
estimate and report read."""
from __future__ import annotations

import contextlib

import click

from .. import _json as strict_json
from ..exceptions import StoreAccessError, StoreMismatchError, StoreNotFoundError, UserError

__all__ = ["nested_result_of", "nested_status", "not_yet_a_study", "note_read_only",
           "refuse_read_only", "store_errors"]


@contextlib.contextmanager
def store_errors(store):
    """A missing store or one that is not a study, said in the command line's words."""
    try:
        yield
    except StoreNotFoundError:
        raise StoreNotFoundError(f"{store}: no such store") from None
    except StoreMismatchError as e:
        if "study store" in str(e) or "nested cross-validation" in str(e):
            raise  # it names the store and says what it is: once is enough
        raise StoreMismatchError(f"{store} is not a bbc_dask study store ({e})") from None


def _read_only_url(store, storage_options):
    """The store's location if this process cannot write it (see
    :meth:`bbc_dask.cube.StoreLocation.read_only`), else None."""
    from ..cube import as_location

    try:
        location = as_location(store, storage_options or None)
    except (UserError, ImportError):
        return None  # a bad store or option: the command's own opening says so
    return location.url if location.read_only() else None


def note_read_only(store, storage_options):
    """Say on stderr that a store this process cannot write is inspected only. The
    reading commands write nothing, so they work there; a run or a repair would not."""
    url = _read_only_url(store, storage_options)
    if url is not None:
        click.echo(f"note: the store {url} is read-only here: it can be inspected, not "
                   f"resumed or repaired", err=True)


def refuse_read_only(store, storage_options, what):
    """Refuse, before anything is read or started, a store this process cannot write,
    for a command that writes it; ``what`` says what it cannot be (``repaired``). A new
    store is refused where it could not be created (see
    :meth:`bbc_dask.cube.StoreLocation.check_writable`)."""
    url = _read_only_url(store, storage_options)
    if url is not None:
        raise StoreAccessError(f"The store {url!r} is read-only here: it can be inspected "
                               f"(status, estimate, report, verify), not {what}")
    from ..cube import as_location

    try:
        location = as_location(store, storage_options or None)
    except (UserError, ImportError):
        return  # a bad store or option: the command's own opening says so
    location.check_writable()


def _nested_cube(store, storage_options):
    """The open store if it holds a nested CV, else None (a missing store or another
    kind is left to the study's commands, which say so in their words)."""
    from ..cube import open_cube

    try:
        cube = open_cube(store, storage_options=storage_options or None)
    except (StoreNotFoundError, StoreMismatchError):
        return None
    return cube if cube.protocol_kind == "nested" else None


def nested_status(store, storage_options, as_json):
    """Print the progress of a nested CV's store and return True; False otherwise."""
    from ..cube import PENDING
    from ..engine import nested_outcome

    cube = _nested_cube(store, storage_options)
    if cube is None:
        return False
    out, st = nested_outcome(cube), cube.state()
    info = {"protocol": "nested", "inner_cells": int(st.size),
            "inner_done": int((st != PENDING).sum()), "outer_folds": int(out["outer_scores"].size),
            "outer_recorded": out["recorded"]}
    click.echo(strict_json.dumps(info) if as_json else
               f"nested CV: inner cells {info['inner_done']} of {info['inner_cells']} run; outer "
               f"folds {info['outer_recorded']} of {info['outer_folds']} recorded")
    return True


def nested_result_of(store, storage_options=None, confidence=0.95):
    """The nested CV result of ``store`` if it holds one, else None."""
    from ..protocols import nested_of_cube

    cube = _nested_cube(store, storage_options)
    if cube is None:
        return None
    with store_errors(store):
        return nested_of_cube(cube, confidence)  # the store opened once


def not_yet_a_study(store, storage_options):
    """``(text, starting)`` for ``status --watch`` on a store that holds no study yet: none
    there, an empty one, or one being created (``starting``: a run holds its lock); None
    when it never will without being replaced (it holds something else), which the
    command then says as it does without ``--watch``."""
    from ..cube import as_location, inspect_store

    try:
        location = as_location(store, storage_options or None)
        kind, _ = inspect_store(location, read_only=True)
    except (UserError, ImportError):
        return None
    if location.lock().holder() is not None or kind == "study":  # created meanwhile
        return (f"starting: a run holds {location.url} and has not created its study yet",
                True)
    if not location.exists():
        return f"waiting: no store at {location.url} yet (a starting run creates it)", False
    return (f"waiting: {location.url} holds no study yet and no run holds it (an empty "
            f"store, or a creation that was interrupted: a run starts it again)", False)
