import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quickstart_runs_and_prints_the_estimates():
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py"), "--quick"],
        capture_output=True, text=True, timeout=300, check=True,
    ).stdout
    for word in ("naive CVT", "BBC", "BBC-F", "true AUC", "lower bound"):
        assert word in out


def test_benchmark_script_runs_in_quick_mode():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_bbc.py"), "--quick"],
        capture_output=True, text=True, timeout=600, check=True,
    ).stdout
    for tag in ("[auc]", "[accuracy]", "[bbc_f]", "[memory]"):
        assert tag in out


def test_cluster_benchmark_runs_in_quick_mode():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_bbc_cluster.py"), "--quick"],
        capture_output=True, text=True, timeout=600, check=True,
    ).stdout
    assert out.count("equal: True") == 4 and "equal: False" not in out
    assert out.count("no restart/pause") == 2
