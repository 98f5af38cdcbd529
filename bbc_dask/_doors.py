"""The door: which public entry point the user called, and that door's own names.

An error is worded once, at the door the user called. The public function (``bbc``,
``run_study``, ``BBCSearchCV.fit``, the study file, ...) is marked with :func:`door`; the
checks far below it (``_validation``, the engine's request, a store's location) word their
errors with :func:`current` instead of a ``caller`` argument passed down every signature.

A door also carries its own names for the engine's parameters (the study file says
``cv.splits`` where ``run_study`` says ``n_splits``): one table per door, read by
:meth:`bbc_dask.exceptions.InvalidParameterError.of` and :func:`spelled`, so that no
message is rewritten as text afterwards.

The outermost door wins: ``run_study`` called by ``compare`` speaks as ``compare``. A door
without a name (the command line's) only lends its spellings (``--overwrite``) to the
door the command calls. The door lives in a :class:`contextvars.ContextVar`, which a
thread or a Dask task does not inherit; work sent there takes the door along with
:class:`carried`.

This module imports nothing of the package: every layer may read it.

The doors' own names, the one table (the engine's name is :func:`bbc_dask.run_study`'s):

=====================  ==================  ===================
engine (run_study)     BBCSearchCV         study file
=====================  ==================  ===================
``metric``             ``scoring``         ``metric``
``n_splits``           ``cv`` (an int)     ``cv.splits``
``n_repeats``          ``n_repeats``       ``cv.repeats``
``cv``                 ``cv`` (a splitter) ``cv.splitter``
``param_grid``         ``param_grid``      ``grid``
``groups``             ``groups``          ``cv.groups``
``n_outer``            (none)              ``protocol.n_outer``
``n_inner``            (none)              ``protocol.n_inner``
``random_state``       ``random_state``    ``random_state``
``fit_params``         ``fit(**params)``   (none)
``overwrite=True``     (none)              ``--overwrite``
(the full list)        (the same)          ``bbc-dask --verbose run``
=====================  ==================  ===================

The full list: ``StoreMismatchError.differences``, which the command line prints with
``--verbose``.

The command line's other commands say ``--overwrite`` too.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import sys
import warnings
from dataclasses import dataclass

__all__ = ["COMMAND_LINE", "DIFFERENCES", "SEARCH_NAMES", "STUDY_FILE", "Door", "by_class", "carried", "current", "door",
           "door_name", "entered", "owned_by", "passing", "spelled", "the_parameter", "warn"]


@dataclass(frozen=True)
class Door:
    """A public entry point: its ``name`` in messages, and ``names``, pairs of (the
    engine's name, this door's name) for parameters and advice it spells differently. A
    door named None lends its names to the next door in (the command line's)."""

    name: str
    names: tuple = ()

    def spelled(self, name):
        """``name`` (a parameter, or advice such as ``"overwrite=True"``) in this door's
        words."""
        return dict(self.names).get(name, name)


#: Where a refusal's every difference is, in the library's words (the exception's
#: attribute); the command line prints them with ``--verbose``.
DIFFERENCES = "the exception's differences"

#: Outside every door: a private function called directly.
OUTSIDE = Door("bbc_dask")

#: ``BBCSearchCV``'s names (the door's name is the class's, known when it is called).
SEARCH_NAMES = (("metric", "scoring"), ("n_splits", "cv"))

#: A study file run by the command line.
STUDY_FILE = Door("the study file", (
    ("n_splits", "cv.splits"), ("n_repeats", "cv.repeats"), ("cv", "cv.splitter"),
    ("param_grid", "grid"),
    ("groups", "cv.groups"), ("n_outer", "protocol.n_outer"), ("n_inner", "protocol.n_inner"),
    ("overwrite=True", "--overwrite"), (DIFFERENCES, "bbc-dask --verbose run ...")))

#: The command line's other commands: the function each calls speaks (``coverage``,
#: ``Study.bbc``, ``verify_store``), in the command line's spelling of its advice.
COMMAND_LINE = Door(None, (("overwrite=True", "--overwrite"), (DIFFERENCES, "bbc-dask --verbose run ...")))

_CURRENT = contextvars.ContextVar("bbc_dask_door", default=None)


def current():
    """The door the user came in by (:data:`OUTSIDE` if none)."""
    d = _CURRENT.get()
    if d is None:
        return OUTSIDE
    return d if d.name is not None else Door(OUTSIDE.name, d.names)


def _open():
    """Whether no named door is set: the next door in speaks."""
    d = _CURRENT.get()
    return d is None or d.name is None


def door_name():
    """The name of the door the user came in by."""
    return current().name


def spelled(name):
    """``name`` in the words of the door the user came in by."""
    return current().spelled(name)


def the_parameter(name):
    """``The 'name' parameter of DOOR``, in the words of the door the user came in by."""
    d = current()
    return f"The {d.spelled(name)!r} parameter of {d.name}"


def by_class(obj, *args, **kwargs):
    """The door of a method named by its object's class (``BBCSearchCV.fit`` speaks as
    ``BBCSearchCV`` or ``BBCRandomizedSearchCV``): ``@door(by_class)``."""
    return type(obj).__name__


def _as_door(name, names=None):
    if isinstance(name, Door):
        return name
    return Door(name, tuple(dict(names or {}).items()))


@contextlib.contextmanager
def entered(name, names=None):
    """Within the block, the door is ``name`` (a :class:`Door` or a str with its
    ``names`` table), unless the user already came in by an outer one."""
    if not _open():
        yield current()
        return
    new, lent = _as_door(name, names), _CURRENT.get()
    if lent is not None:  # a nameless door's spellings, under this door's own
        new = Door(new.name, lent.names + new.names)
    token = _CURRENT.set(new)
    try:
        yield current()
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def owned_by(name):
    """Within the block, errors name ``name`` whatever the door: for a setting that is no
    parameter of the call the user made (Dask's configuration, the store lock's lease)."""
    token = _CURRENT.set(_as_door(name))
    try:
        yield current()
    finally:
        _CURRENT.reset(token)


def door(name, names=None, *, always=False):
    """Decorate a public entry point: errors below it name ``name``.

    ``name`` is a str, a :class:`Door`, or a function of the decorated function's
    arguments giving one (a method named by its class: :func:`by_class`). ``always``: the
    function speaks for its own arguments even when another door called it — they reach
    it as one argument of that door (``make_client``'s as ``run_study``'s ``client``
    dict, ``Dropping``'s as its ``dropping`` dict), so the outer door has no such
    parameter to name.
    """
    def decorate(fn):
        @functools.wraps(fn)
        def entry(*args, **kwargs):
            if not (always or _open()):  # an outer door speaks
                return fn(*args, **kwargs)
            this = name(*args, **kwargs) if callable(name) else name
            with owned_by(this) if always else entered(this, names):
                return fn(*args, **kwargs)

        entry.__door__ = name
        return entry

    return decorate


#: The code of wrappers a warning passes through (see :func:`passing`).
_PASSING = set()


def passing(wrapper):
    """``wrapper``, a function that only calls another (a method's delegate, a filter of
    warnings): not counted by :func:`warn`'s ``stacklevel``, as a door's own wrapper is
    not."""
    _PASSING.add(wrapper.__code__)
    return wrapper


def warn(message, category=None, stacklevel=1):
    """:func:`warnings.warn` with ``stacklevel`` counted in the package's own frames: a
    door's wrapper is not one, nor a wrapper marked :func:`passing`, so a warning still
    points at the user's line."""
    frame, level, extra = sys._getframe(1), stacklevel, 0
    while frame is not None and level > 1:
        frame = frame.f_back
        if frame is not None and (frame.f_code.co_filename == __file__
                                  or frame.f_code in _PASSING):
            extra += 1
        else:
            level -= 1
    warnings.warn(message, category, stacklevel=stacklevel + extra + 1)


@dataclass(frozen=True)
class carried:
    """``fn`` to be called in another thread or a Dask task, inside this door.

    A ``ContextVar`` is not inherited there; the door goes as data, like the task's other
    arguments (a frozen, picklable record). The task's door is always the one it was sent
    from: a cluster of threads started inside another door (``make_client``) keeps that
    door in its event loop, which must not speak for the tasks it runs.
    """

    fn: object
    through: Door = None

    def __post_init__(self):
        if self.through is None:
            object.__setattr__(self, "through", current())

    def __call__(self, *args, **kwargs):
        token = _CURRENT.set(None if self.through == OUTSIDE else self.through)
        try:
            return self.fn(*args, **kwargs)
        finally:
            _CURRENT.reset(token)

    @property
    def __name__(self):  # Dask names a task by its function
        return getattr(self.fn, "__name__", type(self.fn).__name__)
