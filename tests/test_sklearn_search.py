"""scikit-learn's own search tests, with BBCSearchCV and BBCRandomizedSearchCV swapped in.

The tests are those of the *installed* scikit-learn (``sklearn/model_selection/tests/
test_search.py``), not a copy: this module reads that file and runs it in its own
namespace with one import line added after its ``from sklearn.model_selection import
(...)``::

    from bbc_dask import BBCSearchCV as GridSearchCV, BBCRandomizedSearchCV as RandomizedSearchCV

so every ``GridSearchCV``/``RandomizedSearchCV`` the file names (in its tests and in its
``parametrize`` lists alike) is ours; the line numbers of tracebacks are the installed
file's. The classes and functions it defines live in this module, so Dask's workers unpickle
them by importing it (tests/ is on their path).

Every test passes but those of :data:`DIFFERENCES`, each a deliberate difference from
``GridSearchCV`` with its reason (the same list is docs/usage.md's "Where it differs from
GridSearchCV"). They run as strict xfails: one that starts passing fails the suite, so the
list stays true. The list is keyed by test name (a name alone: all its parameters; with
``[id]``: that case); a test this scikit-learn's file does not have is simply absent.

scikit-learn's tests are marked slow: they fit hundreds of searches (each a study on the
process's warm local cluster), ~125 CPU-seconds on a 2-core machine, workers included — too
much for the default suite's budget (1,000 in all). :func:`test_the_differences_are_documented`
runs in the default suite.
"""
import ast
import os

import pytest
import sklearn

SOURCE = os.path.join(os.path.dirname(sklearn.__file__), "model_selection", "tests",
                      "test_search.py")
SWAP = ("from bbc_dask import BBCSearchCV as GridSearchCV, "
        "BBCRandomizedSearchCV as RandomizedSearchCV")

#: the scikit-learn whose counts docs/usage.md and the README give
COUNTED_ON = "1.9.1"

# The reasons, each said once.
PARTITION = ("cv must partition the samples (each in one test set per repeat, trained on all "
             "the others): BBC and BBC-F resample whole samples and folds. LeavePGroupsOut, "
             "GroupShuffleSplit and StratifiedShuffleSplit are refused in one line.")
NEEDS_Y = ("BBC needs y: fit(X) without y (clustering, density estimation) is refused, and "
           "a clustering scorer (adjusted_rand_score) compares two labellings, not "
           "predictions of y.")
ONE_TARGET = ("y is one target: the cube holds one prediction per sample (and class); a "
              "multi-output or N-d y is refused in one line.")
R2_UNDEFINED = ("R² of a fold whose y is constant is undefined in BBC's statistics (scikit-"
                "learn's r2_score gives 0.0 there, by force_finite): on folds of two samples "
                "the winner's fold score is undefined and the search refuses to select, "
                "saying which fold.")
LABELS_OF_Y = ("a classifier's predict must give labels y holds: the cube stores a "
               "classifier's predictions as y's class codes. The test's classifier predicts a "
               "constant or its row count, which y does not hold; the study refuses it.")
NEEDS_PREDICT = ("BBC resamples out-of-sample predictions: an estimator with a score but no "
                 "predict cannot be studied.")
EXTRA_ATTRIBUTES = ("the test compares every fitted attribute of GridSearchCV with a "
                    "BaseSearchCV's: BBCSearchCV has more (bbc_, bbc_f_, study_, stopped_).")
ALL_FAILED = ("a search whose every configuration failed stops at each one's first failed "
              "fit (the rest would fail alike): its error counts the fits it ran, not "
              "'All the 15 fits'.")
SCORER_RAISES = ("a scorer that raises fails its cell, as a fit that raises (the cell has no "
                 "score); GridSearchCV scores it error_score and goes on. Every cell failing, "
                 "the search raises.")
SCORER_COPIES = ("scorers run in Dask's workers, on copies: what a scorer records of its "
                 "calls (the test's registry of routed metadata) stays in the workers.")
XT_KEYWORD = ("inverse_transform(Xt=...), deprecated in scikit-learn 1.5 and gone in 1.7, is "
              "not taken: inverse_transform(X) (scikit-learn 1.6's file tests it).")

#: test name (all its cases) or "name[id]" (one case) -> the reason it differs
DIFFERENCES = {
    "test_grid_search_groups": PARTITION,
    "test_unsupervised_grid_search": NEEDS_Y,
    "test_gridsearch_no_predict": NEEDS_Y,
    "test_gridsearch_nd": ONE_TARGET,
    "test_grid_search_with_multioutput_data": ONE_TARGET,
    "test_grid_search_pipeline_steps": R2_UNDEFINED,
    "test_classes__property": R2_UNDEFINED,
    "test_search_cv_results_none_param": R2_UNDEFINED,
    # search0/search1 are ours; search2/search3 scikit-learn's halving searches (they pass)
    **{f"test_search_callbacks_propagation[search{i}-{refit}]": R2_UNDEFINED
       for i in (0, 1) for refit in (True, False)},
    **{f"test_search_callbacks_receive_search_instance[search{i}]": R2_UNDEFINED for i in (0, 1)},
    "test_grid_search_allows_nans": LABELS_OF_Y,
    "test_search_callbacks_with_partial_fit_failures": LABELS_OF_Y,
    "test_cv_results_dtype_issue_29074": NEEDS_PREDICT,
    "test_custom_run_search": EXTRA_ATTRIBUTES,
    "test_grid_search_classifier_all_fits_fail": ALL_FAILED,
    "test_callable_multimetric_clf_all_fits_fail": ALL_FAILED,
    "test_unsupported_sample_weight_scorer": SCORER_RAISES,
    "test_multi_metric_search_forwards_metadata": SCORER_COPIES,
    "test_inverse_transform_Xt_deprecation": XT_KEYWORD,
}


def _swapped(path):
    """The installed file's code with :data:`SWAP` after its import of the searches."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for i, node in enumerate(tree.body):
        if isinstance(node, ast.ImportFrom) and node.module == "sklearn.model_selection" and \
                {"GridSearchCV", "RandomizedSearchCV"} <= {a.name for a in node.names}:
            line = ast.parse(SWAP).body[0]
            tree.body.insert(i + 1, ast.copy_location(line, node))
            break
    else:
        raise ImportError(f"{path} imports no GridSearchCV and RandomizedSearchCV from "
                          "sklearn.model_selection: the swap has no place")
    return compile(ast.fix_missing_locations(tree), path, "exec")


exec(_swapped(SOURCE), globals())  # noqa: S102 - scikit-learn's installed test file
for _name, _test in list(globals().items()):  # scikit-learn's tests: the slow suite
    if _name.startswith("test_") and callable(_test):
        globals()[_name] = pytest.mark.slow(_test)


def test_the_differences_are_documented():
    """docs/usage.md's "Where it differs from GridSearchCV" lists every test of
    :data:`DIFFERENCES` with its reason, and README.md gives their count."""
    import re

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "docs", "usage.md"), encoding="utf-8") as f:
        usage = f.read()
    section = usage.split("### Where it differs from GridSearchCV", 1)[1].split("\n## ", 1)[0]
    documented = dict(re.findall(r"^- `([^`]+)`: (.+)$", section, flags=re.MULTILINE))
    tests = {key.split("[")[0] for key in DIFFERENCES}
    assert set(documented) == tests
    for key, reason in DIFFERENCES.items():
        assert documented[key.split("[")[0]] == reason.replace("\n", " "), key
    if sklearn.__version__ == COUNTED_ON:  # the counts the README gives are this version's
        present = {name for name in tests if name in globals()}
        with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
            assert f"{len(present)} tests differ on purpose" in f.read()


@pytest.fixture(autouse=True)
def _deliberate_difference(request):
    """A test of :data:`DIFFERENCES` runs as a strict xfail with its reason."""
    node = request.node
    reason = DIFFERENCES.get(node.name, DIFFERENCES.get(getattr(node, "originalname", None)))
    if reason is not None:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
