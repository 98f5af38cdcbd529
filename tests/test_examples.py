import subprocess

import pytest
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _example(name):
    p = subprocess.run([sys.executable, str(ROOT / "examples" / name), "--quick"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout


def test_simulated_winners_curse_prints_the_estimates():
    out = _example("simulated_winners_curse.py")
    for word in ("naive CVT", "BBC", "BBC-F", "true AUC", "lower bound"):
        assert word in out


@pytest.mark.parametrize("name, words", [
    ("quickstart.py", ["BBC ", "BBC-F", "held-out AUC", "winner"]),
    # regression and multiclass studies run in the default suite's engine tests
    pytest.param("regression.py", ["BBC ", "BBC-F", "negative mean squared error"],
                 marks=pytest.mark.slow),
    pytest.param("multiclass.py", ["'class': 3", "BBC ", "BBC-F"], marks=pytest.mark.slow),
    # BBCD studies run in the default suite's dropping tests
    pytest.param("bbcd_large.py", ["CVT: trained", "BBCD: trained", "dropped"],
                 marks=pytest.mark.slow),
    # covered in the default suite by the kill/resume and CLI scheduler tests
    pytest.param("interrupt_resume.py", ["killed with", "resumed: fitted",
                                         "cube equal to an uninterrupted run: True"], marks=pytest.mark.slow),
    pytest.param("existing_scheduler.py", ["connected to tcp://", "(2 workers)", "BBC "],
                 marks=pytest.mark.slow),
])
def test_examples_run_in_quick_mode(name, words):
    out = _example(name)
    for w in words:
        assert w in out, out


@pytest.mark.slow  # 6 s: in the slow suite (make test stays under 8 minutes)
def test_benchmark_script_runs_in_quick_mode():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_bbc.py"), "--quick"],
        capture_output=True, text=True, timeout=600, check=True,
    ).stdout
    for tag in ("[auc]", "[accuracy]", "[bbc_f]", "[memory]"):
        assert tag in out


@pytest.mark.slow
def test_cluster_benchmark_runs_in_quick_mode():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_bbc_cluster.py"), "--quick"],
        capture_output=True, text=True, timeout=600, check=True,
    ).stdout
    # speed: 2 metrics x (1, 2 workers of bbc_dask's cluster, 2 of a plain one); scale: 2
    # cubes' BBC and BBC-F, a study's store (stored by fold) and its dropping test, from
    # local disk (folds cut along slots, and whole) and from S3; a ranking metric's BBC
    # and BBC-F by pairs of sample tiles
    assert out.count("equal: True") == 6 + 8 + 6 + 2 and "equal: False" not in out, out
    assert out.count("no restart/pause") == 8 + 6 + 2, out


@pytest.mark.slow  # ~30 s: four clusters of 4 sleeping workers
def test_scale_benchmark_reports_medians_of_interleaved_runs(tmp_path):
    """bench_scale.py's uneven-fit case (CVT and BBCD-CV) repeated twice, interleaved: the
    summary gives each run's median and spread, the fresh run's wall over the warm one's
    and BBCD's over CVT's; every estimate is unchanged by the benchmark's own code."""
    import json

    out_file = tmp_path / "scale.json"
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_scale.py"), "--quick", "--cases", "uneven",
         "--workers", "4", "--sleep-ms", "5", "--cluster", "make_client", "--repeats", "2",
         "--out", str(out_file)],
        capture_output=True, text=True, timeout=600, check=True,
    ).stdout
    assert "medians over the repetitions" in out, out
    summary = json.loads(out_file.read_text())["summary"]
    got = {(e["case"], e["run"]): e for e in summary}
    assert set(got) == {(c, r) for c in ("uneven-cvt", "uneven-bbcd") for r in ("fresh", "warm")}
    for e in summary:
        assert e["wall_s"]["n"] == 2 and e["wall_s"]["min"] <= e["wall_s"]["median"] <= e["wall_s"]["max"]
        assert 0 < e["efficiency"]["median"] <= 1.5 and "load_before" in e and "load_after" in e
    assert got["uneven-cvt", "fresh"]["fresh_over_warm"]["n"] == 2
    assert got["uneven-bbcd", "warm"]["bbcd_over_cvt"] > 0
    rows = json.loads(out_file.read_text())["rows"]
    # BBCD trains fewer cells than CVT's 30 x 10, CVT all of them
    trained = {(r["case"], r["rep"], r["run"]): r["trained_cells"] for r in rows if "trained_cells" in r}
    assert {v for (c, _, _), v in trained.items() if c == "uneven-cvt"} == {300}
    assert all(v <= 300 for (c, _, _), v in trained.items() if c == "uneven-bbcd")
