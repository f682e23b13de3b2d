"""A cold build starts its chapters' kernels as it starts (coursebook.execute.early_kernels):
one per chapter it executes, taken by those chapters, started once for builds that share
a cache, none on a warm cache, none left running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from jupyter_client import BlockingKernelClient

from conftest import both_editions_at_once, sphinx_build
from coursebook.execute.warm_kernels import _take_waiting_kernel, connection_of, make_pool
from coursebook.prepare.chapters import executes_when_read


STARTED = "chapter kernels started ahead"


def _executing_chapters(source: Path) -> int:
    return sum(executes_when_read(path) for path in source.glob("*.md"))


def _pool(cache: Path, folder: str) -> list[Path]:
    return sorted((cache / "kernels-ahead" / folder).glob("*.json"))


def _no_kernel_left(cache: Path) -> bool:
    pool = str(cache / "kernels-ahead")
    return not any(pool in " ".join(process.info["cmdline"] or [])
                   for process in psutil.process_iter(["cmdline"]))


@pytest.mark.slow
def test_a_cold_build_starts_each_chapters_kernel_ahead_and_its_chapters_take_them(
        tiny_book, tmp_path):
    chapters = _executing_chapters(tiny_book)
    assert chapters >= 1
    cache = tmp_path / "cache"
    cold = sphinx_build(tiny_book, tmp_path / "cold", cache)
    assert cold.returncode == 0, cold.log[-3000:]  # outputs verified as in every build
    ahead = min(chapters, os.cpu_count())  # as many as execute at once (-j auto)
    assert f"cold cache: {ahead} {STARTED}" in cold.log
    assert len(_pool(cache, "taken")) == ahead and cold.executed == chapters
    assert not _pool(cache, "ready") and _no_kernel_left(cache)
    # A warm cache: whether a chapter runs is known only once it is prepared; none ahead.
    warm = sphinx_build(tiny_book, tmp_path / "warm", cache)
    assert warm.returncode == 0 and STARTED not in warm.log and warm.executed == 0


@pytest.mark.slow
def test_builds_sharing_a_cold_cache_start_the_kernels_once_and_leave_none(tiny_book, tmp_path):
    builds = both_editions_at_once(tiny_book, tmp_path)
    assert all(build.returncode == 0 for build in builds.values())
    logs = [build.log for build in builds.values()]
    assert sum(STARTED in log for log in logs) == 1
    cache = tmp_path / "cache"
    executed = sum(build.executed for build in builds.values())
    # Each edition's chapter is its own notebook here: both run, each in a kernel ahead
    # or, once those are taken, a kernel of its own.
    ahead = min(_executing_chapters(tiny_book), os.cpu_count())
    assert len(_pool(cache, "taken")) == ahead <= executed
    assert not _pool(cache, "ready") and _no_kernel_left(cache)


def test_a_kernel_another_build_took_outlives_the_build_that_started_it(tmp_path):
    """The pool is shared by builds on one cache; a kernel ends with the process that
    started it, so that process waits, at its end, while the kernel's taker lives."""
    pool = tmp_path / "pool"
    make_pool(pool)
    starter = subprocess.Popen(
        [sys.executable, "-c",
         "import sys\nfrom pathlib import Path\n"
         "from coursebook.execute.warm_kernels import start_waiting_kernel, stop_waiting_kernels\n"
         f"pool = Path({str(pool)!r})\n"
         f"kernel = start_waiting_kernel(pool, Path({str(tmp_path)!r}), [])\n"
         "print('started', flush=True)\nsys.stdin.readline()\n"
         "stop_waiting_kernels(pool, [kernel])\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert starter.stdout.readline().strip() == "started"
    kernel = _take_waiting_kernel(pool, str(tmp_path))
    assert kernel is not None
    starter.stdin.write("\n")
    starter.stdin.flush()  # the starter's build ends: it stops its kernels

    client = BlockingKernelClient()
    connection = connection_of(kernel)
    client.load_connection_info({**connection, "key": connection["key"].encode()})
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        printed = []
        client.execute_interactive("print(6 * 7)", timeout=30, output_hook=lambda message:
                                   printed.append(message["content"].get("text", "")))
        assert "42" in "".join(printed) and starter.poll() is None
    finally:
        client.stop_channels()
    os.kill(kernel["pid"], signal.SIGKILL)  # as nbclient stops it once its chapter ends
    assert starter.wait(timeout=10) == 0


def test_a_waiting_kernel_that_never_starts_is_stopped_and_not_taken(tmp_path):
    """A chapter falls back to a kernel of its own rather than wait for ever."""
    stuck = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    kernel = {"pid": stuck.pid, "connection_file": str(tmp_path / "never-written.json")}
    assert connection_of(kernel, timeout=0.5) is None
    assert stuck.wait(timeout=10) == -signal.SIGKILL
