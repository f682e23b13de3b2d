"""A test's builds forked, not started (coursebook.process.forked_builds): each worker
starts one process that imports what the builds import (those of each build, after it),
and each ``python -m sphinx`` a test runs (tests/conftest.py's run_sphinx) is forked from
it, in the test's folder, environment and output files, its own exit status sent back:
about 2 s of CPU a build.

Run as a program (by :class:`BuildServer`): FD, a Unix socket listening for requests, one a
connection, a line of JSON ``{"arguments", "cwd", "env", "output", "errors"}`` answered by
``{"status"}`` when the build ends; the server ends when its input closes.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path

from coursebook.execute.myst_nb_clients import defer
from coursebook.process.forked_builds import Forked, build_modules, import_modules, sphinx_build

SPHINX = [sys.executable, "-m", "sphinx"]
# A build that defers no import is started afresh: the server deferred them (see serve).
DEFERRAL_OFF = ("COURSEBOOK_DEFER_IMPORTS", "0")


@dataclass(frozen=True)
class Surroundings:
    """Where a forked build runs as ``python -m sphinx`` run there would: in the folder
    ``cwd`` (first on ``sys.path``), with the environment ``env`` alone, no input, its
    output to the file ``output`` and its errors to the file ``errors`` (None: to
    ``output``)."""

    cwd: str
    env: dict[str, str]
    output: str
    errors: str | None = None

    def enter(self) -> None:
        os.chdir(self.cwd)
        sys.path[0] = self.cwd  # -m's first entry (the forking process's: its script's folder)
        os.environ.clear()
        os.environ.update(self.env)
        written = os.O_WRONLY | os.O_TRUNC
        streams = [(os.devnull, os.O_RDONLY), (self.output, written), (self.errors, written)]
        for target, (path, flags) in enumerate(streams):
            if path is None:  # errors with the output
                os.dup2(1, target)
                continue
            descriptor = os.open(path, flags)
            os.dup2(descriptor, target)
            os.close(descriptor)


def _build_in(imported, arguments: Sequence[str], surroundings: Surroundings) -> None:
    surroundings.enter()
    sphinx_build(imported, arguments)


@functools.cache
def compile_ahead() -> None:
    """What a build compiles at its first use and keeps for its process, compiled here once
    rather than in each forked build: nbformat's schema validators (one per minor version),
    soupsieve's selector parser (the theme's BeautifulSoup selects) and the lexers of the
    book's cells and outputs (their token regexes): about 0.3 s of CPU a forked build of the
    tiny book (seven of them, the server included: 7.5 and 8.4 s without, 6.1 and 6.1 with)."""
    import nbformat
    import soupsieve
    from nbformat.validator import get_validator
    from pygments.lexers import get_lexer_by_name

    for minor in range(nbformat.current_nbformat_minor + 1):
        get_validator(version=4, version_minor=minor)
    soupsieve.compile("li.toctree-l1 > a:not([href]), ul ul")
    for name in ("ipython3", "ipythontb", "myst-ansi"):
        get_lexer_by_name(name)


def serve(listener: socket.socket) -> None:
    # myst-nb's clients stay deferred in the builds, as in `python -m sphinx` (their
    # placeholders in place before a build's imports bring myst-nb in here).
    defer()
    import_modules(build_modules({}))
    running = {}  # a build's receiver: the build, the connection waiting for its status
    while True:
        for ready in wait([sys.stdin, listener, *running]):
            if ready is sys.stdin:
                if not sys.stdin.buffer.read1():
                    return  # the worker ended
            elif ready is listener:
                connection, _ = listener.accept()
                with connection.makefile("r") as lines:
                    request = json.loads(lines.readline())
                build = Forked(_build_in, request.pop("arguments"), Surroundings(**request))
                running[build.receiver] = build, connection
            else:
                build, connection = running.pop(ready)
                status, imported = build.result()
                with connection:
                    connection.sendall(json.dumps({"status": status}).encode() + b"\n")
                import_modules(imported or [])
                compile_ahead()  # once a build brought its modules in: no cost to a server of one


class BuildServer:
    """A worker's build server, started at its first build in the environment ``env``
    (None: this process's now); :meth:`run` is thread-safe."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._folder: Path | None = None
        self._env = dict(os.environ if env is None else env)  # the server's, at its start

    def _start(self) -> None:
        from coursebook.process.interrupt import short_temporary_folder

        self._folder = short_temporary_folder("builds-")
        # Listening before the server starts: a request waits in the socket's queue.
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self._folder / "socket"))
        listener.listen()
        with listener:
            self._process = subprocess.Popen(
                [sys.executable, __file__, str(listener.fileno())], env=self._env,
                pass_fds=[listener.fileno()], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)

    def stands_in(self, command: Sequence[str], env: dict[str, str]) -> bool:
        """Whether a forked build is the build ``command`` would start: this Python's
        ``-m sphinx``, with the interpreter's settings of the server's start."""
        return (list(command[:3]) == SPHINX and env.get(DEFERRAL_OFF[0]) != DEFERRAL_OFF[1]
                and _python_settings(env) == _python_settings(self._env))

    def run(self, command: Sequence[str], *, cwd: Path, env: dict[str, str],
            merged: bool) -> subprocess.CompletedProcess:
        with self._lock:
            if self._process is None:
                self._start()
        files = [tempfile.mkstemp(dir=self._folder) for _ in range(1 if merged else 2)]
        for descriptor, _ in files:
            os.close(descriptor)
        output, errors = files[0][1], None if merged else files[1][1]
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
                connection.connect(str(self._folder / "socket"))
                request = {"arguments": list(command[3:]), "cwd": str(cwd), "env": env,
                           "output": output, "errors": errors}
                connection.sendall(json.dumps(request).encode() + b"\n")
                with connection.makefile("r") as lines:
                    reply = lines.readline()
            if not reply:
                raise RuntimeError(f"the build server ended (its pid: {self._process.pid})")
            texts = [Path(path).read_text() for _, path in files]
        finally:
            for _, path in files:
                os.unlink(path)
        return subprocess.CompletedProcess(list(command), json.loads(reply)["status"],
                                           texts[0], None if merged else texts[1])

    def close(self) -> None:
        if self._process is not None:
            self._process.stdin.close()
            self._process.wait()
            (self._folder / "socket").unlink()
            self._folder.rmdir()


def _python_settings(env: dict[str, str]) -> dict[str, str]:
    """What of an environment a Python reads as it starts (PYTHONPATH, ...)."""
    return {name: value for name, value in env.items() if name.startswith("PYTHON")}


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))
