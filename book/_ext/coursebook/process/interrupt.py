"""A build stopped by a signal: one line, not a crash report (nbclient takes SIGINT for its
event loop, and Sphinx reported it as a crash), and no process left behind. jupyter-cache
keeps only finished runs; :mod:`coursebook.process.next_build` rewrites the pages."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import sys
import tempfile
import threading
from functools import cache
from pathlib import Path

MESSAGE = ("Interrupted: the build stopped. The execution cache keeps only finished runs, "
           "so building again carries on from there.")
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_REMOVED_WHEN_STOPPED: set[Path] = set()  # folders the processes ended here would remove


def short_temporary_folder(prefix: str) -> Path:
    """A new folder for Unix sockets, whose paths hold at most 107 bytes: under /tmp where
    TMPDIR is deep (a test's). A build stopped by a signal removes it."""
    base = tempfile.gettempdir()
    base = base if len(os.fsencode(base)) < 64 else "/tmp"  # bytes, not characters
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    _REMOVED_WHEN_STOPPED.add(folder)
    return folder


def remove_folder(folder: Path) -> None:
    _REMOVED_WHEN_STOPPED.discard(folder)
    shutil.rmtree(folder, ignore_errors=True)


def _wait_for_stop() -> None:
    received = signal.sigwait(STOP_SIGNALS)
    print(f"\n{MESSAGE}", file=sys.stderr, flush=True)
    import psutil

    # Workers, kernels and the forkserver, in sessions of their own, never got the signal.
    for process in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    for folder in list(_REMOVED_WHEN_STOPPED):  # a copy: a kernel may end meanwhile
        shutil.rmtree(folder, ignore_errors=True)
    os._exit(128 + received)  # unwinding nbclient's event loop is what crashes


_forking: list[int] = [0]  # the pid of the process forking, as its child sees it


def _ignore(signum, frame) -> None:  # a handler, not SIG_IGN: a program it runs gets the default
    pass


@cache  # once per process: a forked build inherits its parent's hooks
def _hook_forks() -> None:
    """In each process forked from now on (``-j`` workers among them): the stop signals are
    the main process's to handle (never blocked, so never left pending), and it dies with its
    parent (Linux's parent-death signal)."""
    prctl = None  # Linux's, looked up before any fork (a forked child only calls it)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            prctl = ctypes.CDLL(None, use_errno=True).prctl

    def after_fork_in_child() -> None:
        for stop in STOP_SIGNALS:
            signal.signal(stop, _ignore)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != _forking[0]:  # it died before the line above
                os._exit(1)

    os.register_at_fork(before=lambda: _forking.__setitem__(0, os.getpid()),
                        after_in_child=after_fork_in_child)


def stop_cleanly_on_interrupt(app) -> None:
    """``builder-inited``, before any kernel starts or worker forks: Ctrl-C and SIGTERM
    blocked in the build's threads, and one thread waiting for them."""
    if (threading.current_thread() is not threading.main_thread()
            or not hasattr(signal, "pthread_sigmask")):
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    _hook_forks()
    threading.Thread(target=_wait_for_stop, name="coursebook-interrupt", daemon=True).start()
