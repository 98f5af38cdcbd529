"""Runs of ``scripts/fault_run.py`` forked from one process that imported it
(``scripts/zygote.py``): each run is a real process, killed for real, without its own
interpreter start. ``fault_run([STORE, KIND, POINT, N])`` gives what
``subprocess.run([python, fault_run.py, ...], capture_output=True, text=True)`` gives;
the one zygote behind it is closed at the session's end (``conftest.py``)."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "zygote.py")


class Zygote:
    """One ``zygote.py`` process, started on the first run; :meth:`close` ends it."""

    def __init__(self):
        self.proc = None
        self.lock = threading.Lock()

    def _started(self):
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, SCRIPT], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, bufsize=1)
        return self.proc

    def run(self, argv, timeout=300):
        """Fork a run of ``fault_run.main(argv)``; its exit code (-9: killed) and output.
        A run past ``timeout`` seconds is killed and ``subprocess.TimeoutExpired`` raised."""
        argv = [str(a) for a in argv]
        with self.lock, tempfile.TemporaryDirectory() as d:
            out, err = os.path.join(d, "out"), os.path.join(d, "err")
            proc = self._started()
            proc.stdin.write(json.dumps({"argv": argv, "out": out, "err": err}) + "\n")
            proc.stdin.flush()
            pid = int(proc.stdout.readline().split()[1])
            expired = threading.Event()
            timer = threading.Timer(timeout, lambda: (expired.set(), _kill(pid)))
            timer.start()
            try:
                code = int(proc.stdout.readline())
            finally:
                timer.cancel()
            if expired.is_set():  # as subprocess.run(timeout=...) says it, not as a kill
                raise subprocess.TimeoutExpired(["fault_run.py", *argv], timeout)
            with open(out) as f_out, open(err) as f_err:
                return subprocess.CompletedProcess(["fault_run.py", *argv], code, f_out.read(), f_err.read())

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(60)
        self.proc = None


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


#: the test session's zygote
SHARED = Zygote()


def fault_run(argv, timeout=300):
    """``SHARED.run(argv, timeout)``: ``fault_run.py ARGV`` forked from the session's zygote."""
    return SHARED.run(argv, timeout)
