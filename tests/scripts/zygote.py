"""A process that imports the fault-injection study once and forks a child for each run:
the runs that are killed (``fault_run.py``) are real processes, SIGKILLed at a chosen call
as before, without paying ~2 CPU-seconds of imports each (bbc_dask, scikit-learn, Dask,
Zarr). Driven by ``tests/_zygote.py``.

Protocol, a line each way: the test writes ``{"argv": [...], "out": PATH, "err": PATH}``
(JSON); the zygote forks, answers ``pid N``, and once the child has ended its exit code
(negative: the signal that ended it, as ``subprocess`` gives it). The child's standard
output and error go to the two files.

Nothing here starts a thread before a fork (the study's cluster starts in each child), so
each child is a clean copy of a process that has only imported modules.
"""
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tests/scripts
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests

import fault_run  # noqa: E402 - bbc_dask, scikit-learn, numpy with it


def _preload():
    """What a run imports on its first use, imported here once."""
    import distributed  # noqa: F401
    import zarr  # noqa: F401

    import bbc_dask.cube  # noqa: F401
    import bbc_dask.engine  # noqa: F401
    import bbc_dask.model_selection  # noqa: F401


def _child(cmd):
    code = 0
    try:
        for fd, path in ((1, cmd["out"]), (2, cmd["err"])):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        fault_run.main(cmd["argv"])
    except BaseException:  # noqa: BLE001 - said on the run's stderr, as an interpreter would
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main():
    _preload()
    for line in sys.stdin:
        cmd = json.loads(line)
        pid = os.fork()
        if pid == 0:
            sys.stdin.close()
            _child(cmd)
        print(f"pid {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    main()
