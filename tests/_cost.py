"""What each test file costs: a pytest plugin (``pytest -p _cost``, ``make test-cost``).

At the end of the run it prints, per test file, the wall seconds and the CPU seconds its
tests took — this process's, its children's (reaped: a cluster closed, a command that
exited) and those of its live descendants (the workers of a cluster a session fixture
keeps) — sorted by CPU, with the totals, and how many local clusters and subprocesses
(a command run as a shell would, a `dask scheduler`) its tests started and how many studies
they ran in this process. A fixture's start is charged to the first test that asks for
it; a shared cluster's work to the test that gave it.

CPU seconds are steadier than wall time on a shared machine, so they are what the suite's
budget is written in. ``BBC_TEST_COST=path.json`` also writes the table as JSON.
"""
import json
import os
import resource
import time

import pytest

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _descendants_cpu(root):
    """CPU seconds of the live descendants of ``root`` (their own and their reaped
    children's), read from /proc; 0 where there is none."""
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0.0
    parent, cpu = {}, {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after the command's name
        parent[pid] = int(fields[1])
        cpu[pid] = sum(int(v) for v in fields[11:15]) / _TICKS  # utime stime cutime cstime
    total, stack = 0.0, [root]
    children = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    while stack:
        for child in children.get(stack.pop(), ()):
            total += cpu.get(child, 0.0)
            stack.append(child)
    return total


def _cpu():
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
            + _descendants_cpu(os.getpid()))


class _Cost:
    def __init__(self):
        self.files = {}
        self.start = None
        # started so far, by anyone: clusters, subprocesses; studies run in this process
        self.counts = {"clusters": 0, "processes": 0, "studies": 0}
        self._count_starts()

    def _count_starts(self):
        """Count the local clusters (in-process or not) and the subprocesses started: the
        two process-start costs a test can avoid."""
        import subprocess

        from distributed import LocalCluster

        counts = self.counts

        def counting(cls, key):
            init = cls.__init__

            def __init__(self, *args, **kwargs):
                counts[key] += 1
                init(self, *args, **kwargs)

            cls.__init__ = __init__

        counting(LocalCluster, "clusters")
        counting(subprocess.Popen, "processes")
        self._count_studies()

    def _count_studies(self):
        """Count the study runs of this process (each CVT, BBCD or search fit; nested CV's
        inner runs too): ~0.3-0.5 CPU-seconds each on a 2-core machine before its fits —
        the store, its ledger and the cluster round trips — so the suite's floor."""
        from bbc_dask.engine import _run

        counts, run = self.counts, _run._StudyRun.run

        def counted(study_run, *args, **kwargs):
            counts["studies"] += 1
            return run(study_run, *args, **kwargs)

        _run._StudyRun.run = counted

    def _add(self, item, wall, cpu, started):
        path = item.nodeid.split("::")[0]
        entry = self.files.setdefault(path, {"tests": 0, "wall": 0.0, "cpu": 0.0, "clusters": 0,
                                             "processes": 0, "studies": 0})
        entry["wall"] += wall
        entry["cpu"] += cpu
        for key, n in started.items():
            entry[key] += n

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if self.start is None:
            self.start = (time.perf_counter(), _cpu())
        t0, c0, n0 = time.perf_counter(), _cpu(), dict(self.counts)
        yield
        self._add(item, time.perf_counter() - t0, _cpu() - c0,
                  {k: v - n0[k] for k, v in self.counts.items()})
        self.files[item.nodeid.split("::")[0]]["tests"] += 1

    def pytest_terminal_summary(self, terminalreporter):
        if self.start is None:
            return
        wall, cpu = time.perf_counter() - self.start[0], _cpu() - self.start[1]
        rows = sorted(self.files.items(), key=lambda kv: -kv[1]["cpu"])
        tr = terminalreporter
        tr.section("cost per test file (CPU: this process, its children and descendants)")
        tr.write_line(_header("file", 44))
        for path, e in rows:
            tr.write_line(_line(path, e, 44, 1))
        total = {"tests": sum(e["tests"] for e in self.files.values()), "wall": wall,
                 "cpu": cpu, **self.counts}
        tr.write_line(_line("total (from the first test to the last)", total, 44, 1))
        out = os.environ.get("BBC_TEST_COST")
        if out:
            os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
            with open(out, "w") as f:
                json.dump({"files": self.files, "total": total}, f, indent=1, sort_keys=True)


#: the table's columns after the file's (or run's) name, with their headings
COLUMNS = ("tests", "wall", "cpu", "clusters", "processes", "studies")
_HEADINGS = ("tests", "wall s", "CPU s", "clusters", "processes", "studies")


def _header(first, width):
    return f"{first:<{width}} " + " ".join(f"{h:>9}" for h in _HEADINGS)


def _line(name, t, width, digits):
    """One row: counts as integers, seconds with ``digits`` decimals."""
    cells = [f"{t.get(k, 0):>9.{digits}f}" if k in ("wall", "cpu") else f"{t.get(k, 0):>9}"
             for k in COLUMNS]
    return f"{name:<{width}} " + " ".join(cells)


def pytest_configure(config):
    # The table measures the process that runs the tests: under pytest-xdist (make test's
    # -n 2) that is each worker, and the controller would print an empty table.
    if (getattr(config.option, "numprocesses", None) or 0) > 0 and not hasattr(config, "workerinput"):
        raise pytest.UsageError("-p _cost: the cost table measures one pytest process; "
                                "run it with -n 0 (make test-cost does)")
    config.pluginmanager.register(_Cost(), "bbc_dask_test_cost")


def _summary(paths):
    """``python tests/_cost.py A.json B.json ...``: the totals of each run's table (the
    stages of ``make test-cost``), and of all of them."""
    rows = []
    for path in paths:
        with open(path) as f:
            total = json.load(f)["total"]
        rows.append((os.path.splitext(os.path.basename(path))[0], total))
    print(_header("run", 20))
    for name, t in rows + [("all", {k: sum(t.get(k, 0) for _, t in rows) for k in COLUMNS})]:
        print(_line(name, t, 20, 0))


if __name__ == "__main__":
    import sys

    _summary(sys.argv[1:])
