"""A kernel forkserver: one process that imports what every chapter's kernel imports first
(ipykernel, and ``imports`` such as torch) once, then forks a kernel from itself on request.

Starting a kernel the usual way costs a Python start, ipykernel's import and torch's, about
a second and a half of CPU each time; a cold build of both editions pays it once per
notebook on two cores it keeps busy. A forked kernel shares the imported modules (copy on
write) and is ready in a tenth of that. It is a process like any kernel jupyter_client
starts: a session and process group of its own, the chapter's folder as its working
directory, the environment its starter gives, ipykernel's launcher run from the top with
the usual arguments. Nothing of the book ran in it; IPython makes the namespace the cells
run in afresh; Python's ``random`` reseeds itself at a fork. What Python reads of the
environment as it starts (``PYTHONHASHSEED``), and the modules imported ahead as they
load, comes from the server's: its starter's environment, which is what jupyter_client
gives a kernel but for ``JPY_PARENT_PID``. The server forks before it
makes any ZeroMQ context, event loop or thread of its own (a fork keeps only the thread
that forks), and holds no lock when it does.

Run as ``python -m coursebook.execute.kernel_forkserver`` (:func:`server_command`); this
module imports only the standard library, so a kernel holds nothing of Sphinx or of the
extension. The server ends when it is stopped or the process that started it ends, and
stops its kernels then (and were it killed, ipykernel's parent poller would stop them:
``JPY_PARENT_PID``). Each request is a line of JSON on a Unix
socket, answered with the kernel's pid: ``{"cwd", "connection_file", "env"}``. A kernel binds its
own ports and writes its connection file once it has. The server is each kernel's parent,
so it alone collects a kernel's exit status: it writes it to the pool's ``ended/<pid>``
(an exit code, or minus the signal that killed it, as ``Popen.returncode``) for the build
that took the kernel. With ``--keep``, the server keeps
one kernel forked ahead, its record in the pool's ``ready/`` folder
(:mod:`coursebook.execute.kernel_pool` takes it from there).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import runpy
import select
import signal
import socket
import sys
import uuid
from pathlib import Path


def server_command(address: Path, pool: Path, imports: list[str], kernel_arguments: list[str],
                   keep: Path | None = None) -> list[str]:
    """The command line of a server listening on ``address``, for the pool ``pool``."""
    command = [sys.executable, "-m", __name__, "--address", str(address), "--pool", str(pool),
               "--parent", str(os.getpid())]
    for name in imports:
        command += ["--import", name]
    if keep is not None:
        command += ["--keep", str(keep.resolve())]
    return [*command, "--", *kernel_arguments]


def request_kernel(address: Path, cwd: str, connection_file: str,
                   env: dict[str, str] | None = None) -> int | None:
    """A kernel forked by the server at ``address``: its pid (None: no server listens)."""
    request = {"cwd": cwd, "connection_file": connection_file, "env": env}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(str(address))
            connection.sendall(json.dumps(request).encode() + b"\n")
            reply = connection.makefile("rb").readline()
    except OSError:
        return None
    return json.loads(reply)["pid"] if reply else None


def _write_ready(pool: Path, pid: int, cwd: str, connection_file: str) -> None:
    ready = pool / "ready" / f"{Path(connection_file).stem}.json"
    ready.with_suffix(".tmp").write_text(
        json.dumps({"pid": pid, "cwd": cwd, "connection_file": connection_file}))
    ready.with_suffix(".tmp").rename(ready)  # whole, as takers read it


def ended_path(pool: Path, pid: int) -> Path:
    """Where the server writes the exit status of its kernel ``pid`` once it ended."""
    return pool / "ended" / str(pid)


def _new_connection_file(pool: Path) -> str:
    return str((pool / "connections" / f"{uuid.uuid4().hex}.json").resolve())


def serve(args: argparse.Namespace) -> dict:
    """Fork kernels until the starter ends; returns only in a forked kernel, its request."""
    # ipykernel picks the inline backend through MPLBACKEND when it starts; matplotlib
    # reads it when imported, so it is set (as ipykernel sets it) before the imports.
    if not os.environ.get("MPLBACKEND"):
        os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    for name in [*args.imports, "ipykernel.kernelapp"]:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a chapter importing it gets the error, its own way
            pass
    pool = args.pool
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(args.address))
    listener.listen()
    pending: list[dict] = []
    kernels: set[int] = set()
    # Stopped (SIGTERM) or orphaned, the server stops its kernels: its own children, whose
    # pids it alone collects, so none is another process by then.
    signal.signal(signal.SIGTERM, lambda *_: _stop(kernels, pool))
    while os.getppid() == args.parent:
        kernels -= _reaped(pool)
        if args.keep and not pending and not any((pool / "ready").glob("*.json")):
            pending.append({"cwd": args.keep, "connection_file": _new_connection_file(pool),
                            "ready": True})
        connection = None
        if not pending and select.select([listener], [], [], 0.2)[0]:
            connection, _ = listener.accept()
            pending.append(json.loads(connection.makefile("rb").readline()))
        request = pending.pop(0) if pending else None
        if request is None:
            continue
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            listener.close()
            if connection is not None:
                connection.close()
            return request
        kernels.add(pid)
        ended_path(pool, pid).unlink(missing_ok=True)  # an earlier kernel's, of the same pid
        if request.get("ready"):
            _write_ready(pool, pid, request["cwd"], request["connection_file"])
        if connection is not None:
            with connection:
                connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    _stop(kernels, pool)


def _reaped(pool: Path) -> set[int]:
    """The kernels that ended since last asked, their exit statuses written for their
    takers (the server is their parent, not the build that took them)."""
    ended = set()
    try:
        while True:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if not pid:
                break
            ended.add(pid)
            path = ended_path(pool, pid)
            path.with_suffix(".tmp").write_text(str(os.waitstatus_to_exitcode(status)))
            path.with_suffix(".tmp").rename(path)  # whole, as takers read it
    except ChildProcessError:
        pass
    return ended


def _stop(kernels: set[int], pool: Path) -> None:
    for pid in kernels - _reaped(pool):
        os.kill(pid, signal.SIGKILL)
    # Not sys.exit: a Python holding torch takes a quarter of a second to unload it, and
    # the build that stops the server waits for it at its end. It holds nothing to flush.
    os._exit(0)


def become_kernel(request: dict, kernel_arguments: list[str]) -> None:
    """In the forked process: run ipykernel's launcher as ``python -m ipykernel_launcher
    -f CONNECTION_FILE`` started in ``cwd`` would."""
    os.setsid()
    os.chdir(request["cwd"])
    if request.get("env") is not None:
        os.environ.clear()
        os.environ.update(request["env"])
    # The kernel ends with this server. ipykernel reads JPY_PARENT_PID when imported,
    # which was before the fork: it is given as an argument too.
    os.environ["JPY_PARENT_PID"] = str(os.getppid())
    sys.path[0] = ""  # the launcher takes the working folder off while ipykernel loads
    sys.argv = ["ipykernel_launcher", "-f", request["connection_file"],
                f"--IPKernelApp.parent_handle={os.getppid()}", *kernel_arguments]
    runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", type=Path, required=True, help="the Unix socket to listen on")
    parser.add_argument("--pool", type=Path, required=True,
                        help="the pool folder: ready/ records and connections/ files")
    parser.add_argument("--parent", type=int, required=True, help="serve while this pid lives")
    parser.add_argument("--import", dest="imports", action="append", default=[],
                        help="a module every kernel imports first (repeatable)")
    parser.add_argument("--keep", help="keep one kernel started in this folder in the pool")
    parser.add_argument("kernel_arguments", nargs="*", help="ipykernel's arguments, after --")
    args = parser.parse_args(argv)
    request = serve(args)
    become_kernel(request, args.kernel_arguments)


if __name__ == "__main__":
    main()
