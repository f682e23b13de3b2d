"""Ctrl-C during a build: one line, not a crash report.

While a notebook executes, nbclient takes SIGINT for its event loop; the interrupt then
surfaces as "Event loop is closed" or a failed kernel clean-up, which Sphinx reports as a
crash. Here SIGINT is blocked in the build's threads (and the kernels it starts) and one
thread waits for it: it says what happened and ends the process at once. Nothing is
left half-done: jupyter-cache stores a notebook only after it ran to the end, Sphinx
saves its environment only after reading, and a kernel exits when its parent does.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

MESSAGE = ("Interrupted: the build stopped. The execution cache keeps only finished runs, "
           "so building again carries on from there.")


def _wait_for_interrupt() -> None:
    signal.sigwait({signal.SIGINT})
    print(f"\n{MESSAGE}", file=sys.stderr, flush=True)
    os._exit(130)  # unwinding nbclient's event loop is what crashes


def stop_cleanly_on_interrupt(app) -> None:
    """``builder-inited``, before any kernel starts: Ctrl-C ends the build with one line."""
    if (threading.current_thread() is not threading.main_thread()
            or not hasattr(signal, "pthread_sigmask")):
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    threading.Thread(target=_wait_for_interrupt, name="coursebook-interrupt", daemon=True).start()
