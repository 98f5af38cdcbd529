"""Preloaded by the worker processes of a local cluster started by bbc_dask.

A terminal's Ctrl-C reaches the whole foreground process group. The worker processes
ignore it: the process running the study stops them cleanly (and says so in one line),
instead of every worker printing a KeyboardInterrupt traceback. This preload covers the
workers a nanny restarts later as well as the first ones.
"""
import signal
import threading


def dask_setup(worker):
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
