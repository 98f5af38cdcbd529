"""The study file's JSON Schema: valid itself, shipped and printed as the docs say, every
study file of the repository valid under it, and its errors one line naming the key."""
import fnmatch
import glob
import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from bbc_dask.cli import main
from bbc_dask.cli._schema import SCHEMA_FILE, schema, schema_text, validate
from bbc_dask.cli._studyfile import DEMO, resolve_study_file
from bbc_dask.exceptions import StudyFileError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = {"data": {"sklearn": "iris"}, "grid": [{"estimator": "sklearn.svm.SVC"}]}


def test_the_shipped_schema_is_a_valid_draft_2020_12_schema():
    Draft202012Validator.check_schema(schema())
    assert schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    # every key an editor completes has its help
    assert all(v.get("description") for v in schema()["properties"].values())


def _docs_yaml_blocks():
    with open(os.path.join(ROOT, "docs", "usage.md"), encoding="utf-8") as f:
        return re.findall(r"```yaml\n(.*?)```", f.read(), re.S)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "examples", "studies", "*.yaml")))
                         + [os.path.join(ROOT, "deploy", "kubernetes", "job", "study.yaml")],
                         ids=os.path.basename)
def test_every_study_file_of_the_repository_is_valid(path):
    with open(path) as f:
        validate(yaml.safe_load(f))


def test_the_demo_and_the_docs_study_files_are_valid():
    validate(DEMO)
    blocks = _docs_yaml_blocks()
    assert blocks, "docs/usage.md shows a study file for editors"
    for block in blocks:
        assert block.startswith("# yaml-language-server: $schema=study_file.schema.json")
        resolve_study_file(yaml.safe_load(block))  # the whole resolution, not the schema only


@pytest.mark.parametrize("over, message", [
    ({"colour": "blue"}, "colour: unknown key (allowed: name, data, grid, cv, "),
    ({"cv": {"splits": 1}}, "cv.splits: expected an integer >= 2, got 1"),
    ({"cv": {"splits": 5.0}}, "cv.splits: expected an integer >= 2, got 5.0"),
    ({"cv": {"splitter": "KFold", "repeats": 2}}, "cv.splitter: sets the splits: leave out 'splits' and 'repeats'"),
    ({"cv": {"column": "fold"}}, "cv.column: applies to CSV/Parquet data (data.path) only"),
    ({"data": {"sklearn": "iris", "path": "d.csv"}}, "data: give exactly one of 'path' (CSV, Parquet, .npz) "
                                                     "or 'sklearn' (a bundled dataset)"),
    ({"data": {"path": "d.csv"}}, "data.target: missing (expected the target column's name)"),
    ({"data": {"path": "d.csv", "target": "y", "drop": [3]}},
     "data.drop: expected a column name, a pattern such as 'x_*' or a non-empty list of them, got [3]"),
    ({"grid": [{"estimator": "sklearn.svm.SVC", "pipeline": ["sklearn.svm.SVC"]}]},
     "grid[0]: give exactly one of 'estimator' or 'pipeline'"),
    ({"grid": [{"estimator": "sklearn.svm.SVC", "grid": {"C": []}}]}, "grid[0].grid.C: expected a non-empty list"),
    ({"grid": [{"estimator": "sklearn.ensemble.BaggingClassifier",
                "params": {"estimator": {"estimator": "sklearn.svm.SVC", "parms": {}}}}]},
     "grid[0].params.estimator.parms: unknown key (allowed: estimator, params)"),
    ({"dropping": {"alpha": 0.3}}, "dropping.alpha: expected a number in (0.5, 1), got 0.3"),
    ({"dropping": "yes"}, "dropping: expected true, false or a mapping, got 'yes'"),
    ({"error_score": 0}, "error_score: expected nan (a failing configuration is recorded and skipped) or "
                         "raise (stop at the first error), got 0"),
    ({"protocol": {"kind": "nested", "outer": 3}},
     "protocol.outer: unknown key for protocol nested (allowed: kind, n_outer, n_inner)"),
    ({"protocol": "nested", "dropping": {}}, "dropping: nested CV runs every inner fold: leave dropping out"),
    ({"cluster": {"kind": "local", "preload": ["evil.py"]}}, "cluster.preload: unknown option for a local cluster"),
    ({"cluster": {"kind": "address"}}, "cluster.address: missing (expected the scheduler's address, tcp://host:8786)"),
    ({"cluster": {"kind": "slurm"}}, "cluster.kind: expected local, address or kubernetes, got 'slurm'"),
])
def test_a_bad_study_file_gives_one_line_naming_the_key(tmp_path, over, message):
    with pytest.raises(StudyFileError) as e:
        resolve_study_file(BASE | over, base=str(tmp_path))
    assert str(e.value).startswith(f"study file: {message}"), str(e.value)
    assert "\n" not in str(e.value)


def test_what_the_schema_accepts_beyond_json():
    # YAML's .nan is nan; a cluster's bare address is an address cluster
    resolved = resolve_study_file(BASE | {"error_score": float("nan"), "cluster": {"address": "tcp://h:8786"}})
    assert resolved["error_score"] == "nan" and resolved["cluster"]["kind"] == "address"


def test_command_line_cluster_options_are_checked_by_the_same_schema():
    from bbc_dask.cli._studyfile import check_cluster

    assert check_cluster({"kind": "local", "n_workers": 2}) == {"kind": "local", "n_workers": 2}
    with pytest.raises(StudyFileError, match=r"^study file: cluster\.n_workers: expected an integer >= 1, got 'x'$"):
        check_cluster({"kind": "local", "n_workers": "x"})


def test_the_schema_agrees_with_the_code_it_describes():
    import sklearn.datasets
    import sklearn.model_selection

    from bbc_dask.cluster import KUBERNETES_DEFAULTS
    from bbc_dask.stats import Dropping

    defs, props = schema()["$defs"], schema()["properties"]
    assert set(defs["kubernetes_cluster"]["properties"]) == set(KUBERNETES_DEFAULTS) | {"kind", "security"}
    for name in props["cv"]["properties"]["splitter"]["enum"]:
        assert hasattr(sklearn.model_selection, name)
    for name in props["data"]["properties"]["sklearn"]["enum"]:
        assert callable(getattr(sklearn.datasets, f"load_{name}"))
    dropping = props["dropping"]["properties"]
    assert {k: v["default"] for k, v in dropping.items()} == vars(Dropping())


def test_bbc_dask_schema_prints_the_shipped_file():
    res = CliRunner().invoke(main, ["schema"])
    assert res.exit_code == 0 and res.output == schema_text()
    assert json.loads(res.output) == schema()


def test_the_schema_is_package_data():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    assert any(dep.startswith("jsonschema") for dep in project["project"]["dependencies"])
    patterns = project["tool"]["setuptools"]["package-data"]["bbc_dask.cli"]
    assert any(fnmatch.fnmatch(SCHEMA_FILE, p) for p in patterns)


def test_reading_commands_do_not_import_jsonschema(tmp_path):
    code = ("import sys; from bbc_dask.cli import main\n"
            "try:\n    main(['status', sys.argv[1]])\nexcept SystemExit:\n    pass\n"
            "print('jsonschema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "none.zarr")],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False", out.stdout + out.stderr
