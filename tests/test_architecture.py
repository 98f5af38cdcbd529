"""The package's structure: one-way layers, one exceptions module, one selection rule,
short functions, and the command line's line between a user's mistake and a bug."""
import ast
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import bbc_dask
from bbc_dask import exceptions as E
from bbc_dask._doors import entered
from bbc_dask.chunked._blocks import merge_winners
from bbc_dask.stats._winner import ranking, select

PACKAGE = os.path.dirname(bbc_dask.__file__)

#: Each layer and the package modules it must never import (at any depth of a function).
LAYERS = [
    ("metrics", ("stats", "chunked", "cube", "engine", "study", "model_selection", "cli", "report", "protocols")),
    ("stats", ("chunked", "cube", "engine", "study", "model_selection", "cli", "report", "protocols")),
    ("chunked", ("cube", "engine", "study", "model_selection", "cli", "report", "protocols")),
    ("cube", ("engine", "study", "model_selection", "cli", "report", "protocols")),
    ("engine", ("study", "model_selection", "cli", "report", "protocols")),
]


def _modules():
    for root, _, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(root, f)
                rel = os.path.relpath(path, PACKAGE)
                with open(path) as fh:
                    yield rel, ast.parse(fh.read())


def _imported(rel, tree):
    """Package-relative names of the bbc_dask modules ``tree`` imports."""
    parts = rel[:-3].split(os.sep)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = parts[: len(parts) - node.level]
                mod = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").startswith("bbc_dask"):
                mod = node.module[len("bbc_dask."):]
            else:
                continue
            out.add(mod)
            out.update(f"{mod}.{a.name}".strip(".") for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name[len("bbc_dask."):] for a in node.names if a.name.startswith("bbc_dask."))
    return out


@pytest.mark.parametrize("layer,above", LAYERS, ids=[layer for layer, _ in LAYERS])
def test_layers_import_only_downwards(layer, above):
    bad = []
    for rel, tree in _modules():
        if rel.split(os.sep)[0] not in (layer, layer + ".py"):
            continue
        for mod in _imported(rel, tree):
            if mod.split(".")[0] in above:
                bad.append(f"{rel} imports {mod}")
    assert not bad, bad


def test_statistics_load_no_dask_xarray_or_zarr():
    code = ("import sys, bbc_dask.stats._bbc, bbc_dask.stats._dropping, bbc_dask.metrics; "
            "print(sorted(m for m in ('dask', 'distributed', 'xarray', 'zarr', 'sklearn') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_every_exception_class_lives_in_the_exceptions_module():
    names = {n for n in dir(E) if isinstance(getattr(E, n), type)}
    found = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                if any(b.endswith(("Error", "Exception", "Interrupt", "Interrupted")) or b in names
                       for b in bases):
                    found.append((rel, node.name))
    assert found and all(rel == "exceptions.py" for rel, _ in found), found
    for name in E.__all__:
        assert issubclass(getattr(E, name), (E.BBCDaskError, KeyboardInterrupt)), name


def test_user_errors_are_the_builtin_kinds_users_catch():
    with entered("bbc"):
        err = E.InvalidParameterError.of("n_bootstraps", "an int in the range [1, inf)", 0)
    assert isinstance(err, (E.UserError, ValueError)) and isinstance(err, TypeError)
    assert str(err) == ("The 'n_bootstraps' parameter of bbc must be an int in the range "
                        "[1, inf). Got 0 instead.")
    with pytest.raises(E.InvalidParameterError, match="'n_bootstraps' parameter of bbc must be"):
        bbc_dask.bbc(np.random.default_rng(0).normal(size=(4, 2)), np.array([0, 1, 0, 1]),
                     metric="roc_auc", n_bootstraps=0)
    assert issubclass(E.StoreNotFoundError, FileNotFoundError)
    assert issubclass(E.StoreLockedError, E.UserError) and issubclass(E.StudyFileError, ValueError)


#: Where a built-in ValueError/TypeError may still be raised: inside a fitting task, where
#: it is recorded as the configuration's failure (scikit-learn's error_score), never shown
#: to the caller as an argument error.
IN_TASK = {os.path.join("engine", "_tasks.py")}


def test_argument_errors_have_one_place_and_one_wording():
    """InvalidParameterError is built in _validation, or elsewhere only through its ``of``
    (the one wording); no argument check raises a bare ValueError or TypeError."""
    bad = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = getattr(f, "id", None)
            if name == "InvalidParameterError" and rel not in ("_validation.py", "exceptions.py"):
                bad.append(f"{rel}:{node.lineno} builds InvalidParameterError without .of")
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                name = getattr(node.exc.func, "id", None)
                if name in ("ValueError", "TypeError") and rel not in IN_TASK:
                    bad.append(f"{rel}:{node.lineno} raises a bare {name}")
    assert not bad, bad


def _door_of(fn):
    """The door a public function (or method) opens, through its wrappers; None if none."""
    while fn is not None:
        if hasattr(fn, "__door__"):
            return fn.__door__
        fn = getattr(fn, "__wrapped__", None)
    return None


def test_errors_are_worded_at_the_door_not_passed_down():
    """Issue 49, point 2: no ``caller`` travels below the door — no parameter, argument or
    variable of that name in the package (scikit-learn's ``MethodMapping.add(caller=)``
    of a method name aside) — and no message is rewritten as text afterwards. Each public function opens
    its door (a decorator), and so do the public methods that check their arguments."""
    bad = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.arg) and node.arg == "caller":
                bad.append(f"{rel}:{node.lineno} takes a 'caller' parameter")
            elif isinstance(node, ast.Name) and node.id == "caller":
                bad.append(f"{rel}:{node.lineno} names 'caller'")
            elif isinstance(node, ast.Attribute) and node.attr in ("caller", "_caller"):
                bad.append(f"{rel}:{node.lineno} reads an attribute 'caller'")
            elif (isinstance(node, ast.keyword) and node.arg == "caller"
                  and not (isinstance(node.value, ast.Constant)
                           and node.value.value in ("fit", "score"))):
                bad.append(f"{rel}:{node.lineno} passes caller=")
            elif isinstance(node, ast.FunctionDef) and node.name == "_renamed":
                bad.append(f"{rel}:{node.lineno} renames a message's parameters")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr == "replace" and node.args
                  and isinstance(node.args[0], ast.Constant) and "=True" in str(node.args[0].value)):
                bad.append(f"{rel}:{node.lineno} rewrites advice in a message")
    assert not bad, bad
    undoored = []
    for name in bbc_dask.__all__:
        obj = getattr(bbc_dask, name)
        if inspect.isfunction(obj) and inspect.signature(obj).parameters and not _door_of(obj):
            undoored.append(name)
    for cls, methods in ((bbc_dask.BBCSearchCV, ("fit", "score", "get_metadata_routing")),
                         (bbc_dask.Study, ("bbc", "bbc_f", "selection_ci", "fold_scores",
                                           "fit_scores", "load_final_model"))):
        undoored += [f"{cls.__name__}.{m}" for m in methods if not _door_of(getattr(cls, m))]
    assert not undoored, undoored


def test_the_outermost_door_speaks_in_its_own_names():
    from bbc_dask._doors import STUDY_FILE, door

    @door("inner")
    def inner(n_splits):
        raise E.InvalidParameterError.of("n_splits", "an int >= 2", n_splits)

    with pytest.raises(E.InvalidParameterError, match=r"^The 'n_splits' parameter of inner "):
        inner(1)
    with entered(STUDY_FILE), pytest.raises(
            E.InvalidParameterError, match=r"^The 'cv.splits' parameter of the study file must"):
        inner(1)  # the study file called it: its door and its key
    with pytest.warns(UserWarning) as got:
        door("warns")(lambda: bbc_dask._doors.warn("here", UserWarning, stacklevel=2))()
    assert got[0].filename == __file__  # a door's wrapper is not counted in stacklevel


def test_a_task_speaks_for_the_door_it_was_sent_from():
    """A cluster of threads started inside one door (``make_client``) keeps it in its event
    loop; a task sent there from another door speaks for the door it was sent from."""
    from bbc_dask._doors import carried, door_name

    with entered("outer"):
        assert carried(door_name, bbc_dask._doors.Door("sent from"))() == "sent from"
    client = bbc_dask.make_client(kind="local", processes=False, n_workers=1,
                                  threads_per_worker=1, dashboard_address=":0")
    try:
        with entered("run_study"):
            assert client.submit(carried(door_name), pure=False).result() == "run_study"
    finally:
        bbc_dask.cluster.close_client(client, close_cluster=True)


def test_a_dict_of_another_functions_arguments_is_checked_in_its_name(tmp_path):
    """``run_study(client={...})`` and ``run_study(dropping={...})`` hand their dict to
    ``make_client`` and ``Dropping``: a bad key is named as theirs (run_study has no such
    parameter), as it was before the doors."""
    from sklearn.tree import DecisionTreeClassifier

    X, y = np.random.default_rng(0).normal(size=(40, 3)), np.arange(40) % 2
    grid = {"max_depth": [1, 2]}
    with pytest.raises(E.InvalidParameterError, match=r"^The 'alpha' parameter of Dropping must"):
        bbc_dask.run_study(DecisionTreeClassifier(), grid, X, y, store=tmp_path / "a.zarr",
                           metric="accuracy", n_splits=2, dropping={"alpha": 3}, progress=False)
    with pytest.raises(E.InvalidParameterError, match=r"^The 'kind' parameter of make_client must"):
        bbc_dask.run_study(DecisionTreeClassifier(), grid, X, y, store=tmp_path / "b.zarr",
                           metric="accuracy", n_splits=2, client={"kind": "nope"}, progress=False)


def test_a_command_names_the_function_it_calls_in_the_command_lines_words(tmp_path):
    """The command line's door has no name of its own: ``bbc-dask coverage`` speaks as
    ``coverage``; its spellings (``--overwrite``) still apply to what the command calls."""
    from click.testing import CliRunner

    from bbc_dask._doors import COMMAND_LINE, spelled
    from bbc_dask.cli import main

    out = CliRunner().invoke(main, ["coverage", str(tmp_path / "c"), "--setting", "bogus=1"])
    assert out.exit_code == 2 and "parameter of coverage" in out.output, out.output
    with entered(COMMAND_LINE), entered("verify_store"):
        assert (bbc_dask._doors.door_name(), spelled("overwrite=True")) == ("verify_store", "--overwrite")


def test_of_words_every_argument_error_alike():
    with entered("run_study"):
        err = E.InvalidParameterError.of("store", "a path", {"k": list(range(100))}, note="Hint.")
    assert str(err).startswith("The 'store' parameter of run_study must be a path. Got {'k': [0, 1")
    assert str(err).endswith("...]} instead. Hint.") and len(str(err)) < 150
    with entered("f"):
        err = E.InvalidParameterError.of("x", "an int", shown="a DataFrame")
    assert str(err) == "The 'x' parameter of f must be an int. Got a DataFrame instead."


def _body_lines(fn):
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body[-1].end_lineno - body[0].lineno + 1 if body else 0


def test_no_function_is_longer_than_100_lines():
    long = [(rel, node.name, _body_lines(node)) for rel, tree in _modules()
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _body_lines(node) > 100]
    assert not long, long


def test_one_selection_rule():
    s = np.array([[0.5, 0.9, 0.9, 0.1], [0.2, np.nan, 0.3, 0.3], [0.1, 0.1, 0.1, 0.1]])
    np.testing.assert_array_equal(select(s), [1, -1, 0])
    assert select(s[0]) == 1 and ranking(s[0])[0] == 1
    np.testing.assert_array_equal(ranking(s[1]), [2, 3, 0, 1])  # ties by index, NaN last
    # chunk winners merged in any order = the whole matrix's winner (ties -> lower index)
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 4, size=(200, 12)).astype(float)  # many ties
    whole = select(scores)
    chunks = [(0, 5), (5, 9), (9, 12)]
    parts = []
    for a, b in chunks:
        w = select(scores[:, a:b])
        best = scores[np.arange(200), a + w]
        parts.append((best, a + w, best * 10))
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        merged = parts[order[0]]
        for i in order[1:]:
            merged = merge_winners(merged, parts[i])
        np.testing.assert_array_equal(merged[1], whole)


def test_cli_user_error_is_one_line_exit_2_and_a_bug_is_exit_1_with_traceback(tmp_path, monkeypatch):
    from bbc_dask.cli import main

    res = CliRunner().invoke(main, ["status", str(tmp_path / "missing.zarr")])
    assert res.exit_code == 2 and res.output.strip().count("\n") == 0, res.output
    assert "no such store" in res.output and "Traceback" not in res.output

    import bbc_dask.study

    def planted(*args, **kwargs):  # a bug inside the package: an internal KeyError
        return {}["metric"]

    monkeypatch.setattr(bbc_dask.study, "open_study", planted)
    res = CliRunner().invoke(main, ["status", str(tmp_path / "missing.zarr")])
    assert res.exit_code == 1, res.output
    assert "internal error: KeyError" in res.output and "Traceback" in res.output, res.output


def test_a_store_the_user_may_not_write_is_a_user_error():
    import errno

    from bbc_dask.cube import writing

    with pytest.raises(E.StoreAccessError, match="Cannot write the store 'https://x/s.zarr'"):
        with writing("https://x/s.zarr"):
            raise PermissionError(errno.EACCES, "Permission denied")
    with pytest.raises(KeyError):  # anything else passes unchanged
        with writing("https://x/s.zarr"):
            raise KeyError("other")


#: The subpackages, each with its declared interface (its ``__init__``). A module of one may
#: import another only through that interface: never its private modules, never an
#: underscore name. The package's root-level ``_modules`` (validation, seeds, signals, the
#: JIT switch, Zarr's block rules) are the shared base every layer may use.
PACKAGES = ("metrics", "stats", "chunked", "cube", "engine", "cli", "protocols",
            "model_selection", "study")


def _owner(rel_or_mod):
    """The subpackage a module belongs to, or '' for a root-level module."""
    head = rel_or_mod.replace(os.sep, ".").split(".")[0]
    return head if head in PACKAGES else ""


def _cross_private(rel, tree):
    """``(importer, what)`` for every import in ``tree`` of another package's private
    module or underscore name."""
    parts = rel[:-3].split(os.sep)
    own = _owner(rel)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                mod = ".".join(parts[: len(parts) - node.level] + ([node.module] if node.module else []))
            elif (node.module or "").startswith("bbc_dask"):
                mod = node.module[len("bbc_dask."):]
            else:
                continue
            targets = [(mod, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [(a.name[len("bbc_dask."):], "") for a in node.names
                       if a.name.startswith("bbc_dask.")]
        else:
            continue
        for mod, name in targets:
            full = f"{mod}.{name}".strip(".")
            other = _owner(full)
            if other and other != own:
                private = any(p.startswith("_") and not p.startswith("__")
                              for p in full.split(".")[1:])
            else:  # a root-level module: its underscore names, not the module itself
                private = bool(mod) and name.startswith("_") and not name.startswith("__") \
                    and not other
            if private:
                out.append(f"{rel} imports {full}")
    return out


def test_packages_import_each_other_only_through_their_interfaces():
    bad = sorted({b for rel, tree in _modules() for b in _cross_private(rel, tree)})
    assert not bad, f"{len(bad)} imports of another package's internals:\n" + "\n".join(bad)


def test_no_module_is_longer_than_600_lines():
    long = {}
    for rel, _ in _modules():
        with open(os.path.join(PACKAGE, rel)) as fh:
            n = sum(1 for _ in fh)
        if n > 600:
            long[rel] = n
    assert not long, long


def test_the_project_links_nothing_outside_it():
    """Docs, examples, code and manifests speak for the project: no path that leaves the
    repository (a link to a sibling directory would be dead in every clone)."""
    root = os.path.dirname(PACKAGE)
    bad = []
    for top in ("README.md", "docs", "examples", "bbc_dask", "deploy", "benchmarks", "Makefile"):
        path = os.path.join(root, top)
        files = [path] if os.path.isfile(path) else [
            os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs
            if f.endswith((".md", ".py", ".yaml", ".yml", ".txt", ".cfg", ".toml", "Dockerfile"))]
        for f in files:
            with open(f, encoding="utf-8", errors="replace") as fh:
                for i, line in enumerate(fh, 1):
                    if "../shared" in line or "/work/shared" in line:
                        bad.append(f"{os.path.relpath(f, root)}:{i}")
    assert not bad, bad


#: Attributes of scikit-learn's scorer objects that it keeps private.
_SKLEARN_PRIVATE_ATTRS = {"_score_func", "_kwargs", "_sign", "_response_method"}


def test_sklearn_private_names_are_taken_in_one_module():
    """scikit-learn's private modules, names and scorer attributes are read in
    ``_sklearn_compat.py`` alone, so that a release that moves one breaks one module (and
    CI tests the lowest supported scikit-learn as well as the newest)."""
    found = []
    for rel, tree in _modules():
        if rel == "_sklearn_compat.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sklearn"):
                private = [p for p in node.module.split(".") if p.startswith("_")] + \
                    [a.name for a in node.names if a.name.startswith("_")]
                if private:
                    found.append(f"{rel}:{node.lineno} from {node.module} ({private})")
            elif isinstance(node, ast.Attribute) and node.attr in _SKLEARN_PRIVATE_ATTRS:
                found.append(f"{rel}:{node.lineno} .{node.attr}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    node.value in _SKLEARN_PRIVATE_ATTRS | {"sklearn.metrics._scorer"}:
                found.append(f"{rel}:{node.lineno} {node.value!r}")
    assert not found, found


def test_dasks_log_level_is_set_in_one_place():
    """distributed's logger is read and set by ``_dask_logs.py`` alone (silence, quiet,
    restored): no module changes it on its own, none leaves it changed by mistake."""
    calls = []
    for rel, tree in _modules():
        if rel == "_dask_logs.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "getLogger" and \
                    node.args and isinstance(node.args[0], ast.Constant) and \
                    str(node.args[0].value).startswith("distributed"):
                calls.append(f"{rel}:{node.lineno}")
    assert not calls, calls


#: What the driver and its tasks exchange, and what the executor keeps of a task in
#: flight: the worker tasks, the executor and its sizing, the pooled and outer steps, the
#: holdout family's tasks.
MESSAGE_MODULES = ("engine/_tasks.py", "engine/_waves.py", "engine/_sizing.py", "engine/_pooled.py",
                   "engine/_nested.py", "engine/_run.py", "engine/_request.py",
                   "protocols/_holdout.py")


def _unpacked(tree):
    """``(line, text)`` of each tuple of three or more names unpacked from a variable, an
    attribute or an item (a message read by position), a shape aside."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            target, value = node.targets[0], node.value
        elif isinstance(node, (ast.For, ast.comprehension)):
            target, value = node.target, node.iter
        else:
            continue
        if isinstance(target, ast.Tuple) and len(target.elts) >= 3 and \
                isinstance(value, (ast.Name, ast.Attribute, ast.Subscript)) and \
                not (isinstance(value, ast.Attribute) and value.attr == "shape"):
            yield getattr(node, "lineno", getattr(value, "lineno", 0)), ast.unparse(target)


def test_engine_messages_are_typed():
    """What crosses the driver–task line (a task's scoring, its fit parameters, its
    outcome) and the executor's table is a frozen dataclass of ``engine/_messages.py``,
    read by name: no tuple of three or more read by position, no task returning a dict,
    no outcome read by a string key."""
    bad = []
    for rel in MESSAGE_MODULES:
        with open(os.path.join(PACKAGE, rel)) as fh:
            tree = ast.parse(fh.read())
        bad += [f"{rel}:{line}: {text} unpacked by position" for line, text in _unpacked(tree)]
        if rel in ("engine/_tasks.py", "engine/_sizing.py", "engine/_pooled.py"):
            bad += [f"{rel}:{n.lineno}: returns a dict" for n in ast.walk(tree)
                    if isinstance(n, ast.Return) and isinstance(n.value, ast.Dict)]
            bad += [f"{rel}:{n.lineno}: {ast.unparse(n)} read by key" for n in ast.walk(tree)
                    if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant)
                    and isinstance(n.slice.value, str)]
    assert not bad, "\n".join(bad)
    from bbc_dask.engine import _messages

    for name in _messages.__all__:
        params = getattr(_messages, name).__dataclass_params__
        assert params.frozen, name


def test_the_stores_format_stays_inside_cube():
    """Outside ``cube/`` the study's attributes are read and written through the cube's
    typed accessors (``cube.spec``, ``cube.runs``, ``begin_run``/``end_run``,
    ``final_model``, ``outer_results``...): no ``meta[...]``, ``meta.get(...)`` or
    ``set_meta``, and no reader or cube configured by setting its attributes."""
    found = []
    for rel, tree in _modules():
        if rel.startswith("cube" + os.sep):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and \
                    node.value.attr == "meta":
                found.append(f"{rel}:{node.lineno} {ast.unparse(node)}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                    node.func.attr == "set_meta" or (node.func.attr == "get" and isinstance(
                        node.func.value, ast.Attribute) and node.func.value.attr == "meta")):
                found.append(f"{rel}:{node.lineno} {ast.unparse(node.func)}")
            elif isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for el in (t.elts if isinstance(t, ast.Tuple) else [t]):
                        if isinstance(el, ast.Attribute) and (el.attr in ("guard", "drop_session") or (
                                el.attr in ("checked", "check_folds", "session")
                                and "reader" in ast.unparse(el.value))):
                            found.append(f"{rel}:{node.lineno} sets .{el.attr}")
    assert not found, "\n".join(found)


def test_each_public_name_is_defined_where_the_package_says():
    """``bbc_dask``'s table of public names (its ``__init__``) names a public package or
    module for each, and the name is defined inside it (``__module__``): a reader who
    follows the table lands on the definition (``bbc`` on the chunked layer's door, the
    lowest that knows both arrays in memory and lazy cubes)."""
    from bbc_dask import _WHERE

    bad = []
    for name in bbc_dask.__all__:
        obj = getattr(bbc_dask, name)
        where = "bbc_dask" + _WHERE.get(name, "." + name)
        module = getattr(obj, "__module__", None) or obj.__name__
        if (any(p.startswith("_") for p in where.split("."))
                or not (module == where or module.startswith(where + "."))):
            bad.append(f"{name}: the table says {where}, defined in {module}")
        # so plain pickle finds it by its name (a process pool, joblib): bbc_dask.bbc
        # once said the statistics' module, whose bbc is the in-memory function alone
        if callable(obj) and not isinstance(obj, type(bbc_dask)):
            import pickle

            if pickle.loads(pickle.dumps(obj)) is not obj:
                bad.append(f"{name}: not itself once pickled")
    assert not bad, "\n".join(bad)


def test_a_study_is_composed_of_its_reading_and_its_estimates():
    """``Study`` reads its store and holds a ``StudyEstimates`` that computes: no mixin
    (a base class made to pass the size rule), and the estimates know no ``Study``."""
    from bbc_dask.study import Study, StudyEstimates

    assert Study.__bases__ == (object,) and StudyEstimates.__bases__ == (object,)
    tree = dict(_modules())[os.path.join("study", "_estimates.py")]
    assert not {m for m in _imported(os.path.join("study", "_estimates.py"), tree)
                if m.startswith("study.")}, "the estimates import the study"
    assert not [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "Study"]
    for name in ("bbc", "bbc_f", "selection_ci", "fold_scores", "fit_scores"):
        assert getattr(Study, name).__doc__ == getattr(StudyEstimates, name).__doc__


def test_the_run_does_not_branch_on_the_protocol():
    """A protocol is a class with hooks (``engine/_protocol.py``): no module of the engine
    compares a protocol's kind; what differs is the protocol's own method."""
    found = []
    for rel, tree in _modules():
        if not rel.startswith(("engine" + os.sep, "study" + os.sep)):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                for side in [node.left, *node.comparators]:
                    text = ast.unparse(side)
                    if text.endswith("protocol.kind") or text.endswith("protocol_kind"):
                        found.append(f"{rel}:{node.lineno} {ast.unparse(node)}")
    assert not found, "\n".join(found)


def _tuning_assignments(tree, where):
    """Where ``tree`` assigns to (or deletes) an attribute of ``bbc_dask._tuning``, under
    any alias, or sets one with ``setattr`` or ``monkeypatch.setattr`` (of the module or
    of its dotted name) — but inside ``with pytest.raises(...)``, a test that it fails."""
    aliases, raising = {"tuning", "_tuning"}, set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            # "import bbc_dask._tuning as t", "from .. import _tuning (as t)"
            aliases.update(a.asname or a.name for a in node.names if a.name.endswith("_tuning")
                           and (a.asname or a.name == "_tuning"))
        elif isinstance(node, ast.With) and any(
                getattr(getattr(i.context_expr, "func", None), "attr", None) == "raises"
                for i in node.items):
            raising.update(range(node.lineno, node.end_lineno + 1))

    def is_module(expr):
        return (isinstance(expr, ast.Name) and expr.id in aliases) or \
            (isinstance(expr, ast.Attribute) and expr.attr == "_tuning") or \
            (isinstance(expr, ast.Constant) and str(expr.value).startswith("bbc_dask._tuning"))

    found = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in raising:
            continue
        targets = getattr(node, "targets", None) or [getattr(node, "target", None)]
        if not isinstance(node, (ast.Assign, ast.Delete, ast.AugAssign, ast.AnnAssign)):
            targets = []
        targets = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
        call = isinstance(node, ast.Call) and node.args and \
            getattr(node.func, "id", getattr(node.func, "attr", None)) in ("setattr", "delattr")
        if any(isinstance(t, ast.Attribute) and is_module(t.value) for t in targets) or \
                (call and is_module(node.args[0])):
            found.append(f"{where}:{node.lineno}")
    return found


def test_settings_are_set_through_dask_config_only():
    """No module of the package, the tests or the benchmarks assigns a setting of
    ``bbc_dask._tuning`` (a worker process would never see it; ``dask.config.set`` is the
    way), and the settings module imports nothing of the package (every layer reads it)."""
    example = _tuning_assignments(ast.parse(
        "import bbc_dask._tuning as t\nt.CHUNK_BYTES = 1\nbbc_dask._tuning.HOLD_BYTES += 1\n"
        "monkeypatch.setattr(tuning, 'X', 1)\nmonkeypatch.setattr('bbc_dask._tuning.X', 1)\n"
        "setattr(tuning, 'X', 1)\ntuning.A, tuning.B = 1, 2\ndel tuning.X\n"
        "with pytest.raises(AttributeError):\n    tuning.X = 1\n"), "example")
    assert len(example) == 7, example  # the check finds each way
    bad = []
    root = os.path.dirname(PACKAGE)
    for top in ("bbc_dask", "tests", "benchmarks"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith(".py"):
                    with open(os.path.join(d, f)) as fh:
                        bad += _tuning_assignments(ast.parse(fh.read()), os.path.join(d, f))
    assert not bad, bad
    tree = dict(_modules())["_tuning.py"]
    # the exceptions and doors modules alone (they import nothing else of the package): a
    # bad value's error, worded as the setting's
    assert _imported("_tuning.py", tree) <= {"exceptions", "exceptions.InvalidParameterError",
                                             "_doors", "_doors.owned_by"}, \
        _imported("_tuning.py", tree)


def test_the_engine_selects_by_a_selection_object():
    """How a study selects its winner is a ``stats.Selection`` (its ``winner`` and
    ``pooled``), not a string compared across the engine and the cube."""
    found = []
    for rel, tree in _modules():
        if not (rel.startswith("engine" + os.sep) or rel.startswith("cube" + os.sep)):
            continue
        for node in ast.walk(tree):
            sides = [node.left, *node.comparators] if isinstance(node, ast.Compare) else []
            words = {c.value for c in sides if isinstance(c, ast.Constant)}
            # "pooled" is also a ledger array's name: a selection by its name is compared
            # with something called selection
            if "fold_mean" in words or ("pooled" in words and "selection" in ast.unparse(node)):
                found.append(f"{rel}:{node.lineno} {ast.unparse(node)}")
    assert not found, "\n".join(found)
