"""Several bbc-dask commands in one process, each as ``_cli.run_cli`` runs it: the tests
that need a process of their own for its surroundings (a read-only mount namespace), not
one per command (each would pay ~2 CPU-seconds of imports).

``python cli_batch.py OUT.json ARGS_JSON``: ``ARGS_JSON`` a JSON list of argument lists;
writes to OUT.json a list of ``{"args", "returncode", "stdout", "stderr"}``, one per
command, in order (a file, not stdout: the commands' own stray output stays apart).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/

from _cli import run_cli  # noqa: E402


def main(out, commands):
    results = [vars(run_cli(*args)) for args in json.loads(commands)]
    with open(out, "w", encoding="utf-8") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(*sys.argv[1:3])
