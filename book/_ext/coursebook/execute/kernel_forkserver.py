"""A kernel forkserver (docs/performance.md): one process imports what chapters' kernels import,
then, before any ZeroMQ context, event loop or thread exists, forks kernels when asked on a Unix
socket; as their parent, it writes each one's exit status to the pool's ``ended/<pid>``."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib.util
import json
import os
import runpy
import select
import shutil
import signal
import socket
import sys
import tempfile
import uuid
from functools import partial
from pathlib import Path

from coursebook.execute.pip_refusal import PYTHON, REFUSED

# A chapter's kernel keeps its start-up notices (running over TCP, say) out of the build log,
# and notes the files its cells read (load_ipython_extension).
KERNEL_ARGUMENTS = ["--IPKernelApp.log_level=ERROR",
                    "--IPKernelApp.extra_extensions=coursebook.execute.kernel_forkserver"]
# A cell's reply's payloads: a file it read; a change outside its run or a pip command, refused.
READ, WROTE, PIP_REFUSED = "coursebook.read", "coursebook.wrote", "coursebook.pip_refused"
# The audit events that open, make, move or remove files: how many first arguments are paths.
CHANGES = {"open": 1, "os.mkdir": 1, "os.remove": 1, "os.rmdir": 1, "os.rename": 2,
           "shutil.rmtree": 1}


def server_command(address: Path, pool: Path, imports: list[str], keep: Path | None = None
                   ) -> list[str]:
    return [sys.executable, "-m", __name__, json.dumps({
        "address": str(address), "pool": str(pool), "parent": os.getpid(), "imports": imports,
        "keep": keep and str(keep.resolve())}, ensure_ascii=False)]


def request_kernel(address: Path, cwd: str, connection_file: str,
                   env: dict[str, str] | None = None) -> int | None:
    """The pid of a kernel the server forks (None: no server listens; 0: it forks no more,
    its imports changed on disk)."""
    request = {"cwd": cwd, "connection_file": connection_file, "env": env}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(str(address))
            connection.sendall(json.dumps(request).encode() + b"\n")
            reply = connection.makefile("rb").readline()
    except OSError:
        return None
    return json.loads(reply)["pid"] if reply else None


def write_whole(path: Path, text: str) -> None:
    """Written through a rename, so read whole or not at all (the partial file is hidden,
    as the preview's ``NOT_EDITS`` ignore)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = path.with_name(f".{path.name}.{os.getpid()}")
    written.write_text(text, encoding="utf8")
    written.replace(path)


def ended_path(pool: Path, pid: int) -> Path:
    return pool / "ended" / str(pid)


def moves_to(connection_file: str) -> Path:
    """Where a waiting kernel's taker names the folder its cells run in and its TMPDIR."""
    return Path(connection_file).with_suffix(".cwd")


def kept_outside() -> tuple[str, ...]:
    """The folders outside its own that a run may change: its temporary one (a run's own:
    notebook_runs), the home (libraries' caches), /dev; not a home that is / (containers
    under another uid)."""
    return tuple({os.path.join(os.path.realpath(place), "") for place in (
        tempfile.gettempdir(), os.path.expanduser("~"), "/dev")} - {os.sep})


def load_ipython_extension(shell) -> None:
    """In a cell's reply: each file under the run's folder its cells read (not the book's
    code, which keys the run itself); each change outside the run, refused; each pip command
    pip_refusal.py (PIP_PYTHON) refused. A waiting kernel first moves to its taker's folder."""
    from ipykernel.connect import get_connection_file

    def start() -> None:
        nonlocal kept
        shell.events.unregister("pre_execute", start)
        with contextlib.suppress(OSError):  # none named: started where it runs, for its run
            taker = json.loads(moves_to(get_connection_file()).read_text())
            os.chdir(taker["cwd"])
            if taker["TMPDIR"]:
                os.environ["TMPDIR"] = taker["TMPDIR"]
        tempfile.tempdir = None  # asked again: a forked kernel's server may have asked it
        kept = kept_outside()
        refused = Path(tempfile.gettempdir()) / f"coursebook-pip-{uuid.uuid4().hex}"
        os.environ.update({"PIP_PYTHON": str(Path(__file__).with_name("pip_refusal.py")),
                           PYTHON: sys.executable, REFUSED: str(refused)})
        shell.events.register("post_run_cell", partial(tell_refused, refused))
        sys.addaudithook(partial(note, os.getcwd() + os.sep, set()))

    def note(folder: str, seen: set, event: str, args: tuple) -> None:
        for name in args[:CHANGES.get(event, 0)]:
            name = os.fspath(name) if isinstance(name, os.PathLike) else name  # os.open's
            if isinstance(name, str):  # not a descriptor, nor bytes
                check(folder, seen, event, args, os.path.abspath(name), name)

    def check(folder: str, seen: set, event: str, args: tuple, path: str, name: str) -> None:
        bytecode = f"{os.sep}__pycache__{os.sep}" in path  # an import's
        if event == "open" and not args[2] & (os.O_WRONLY | os.O_RDWR):
            if not path.startswith(folder) or path.startswith(package):
                return
            if path.endswith(".pyc") and bytecode:
                path = importlib.util.source_from_cache(path)
            if path not in seen and os.path.isfile(path):
                seen.add(path)
                shell.payload_manager.write_payload({"source": READ, "file": path[len(folder):],
                                                     "mtime": os.path.getmtime(path)})
            return
        inside = path.startswith(folder)
        # A file opened is written through its link; a name made or removed is its folder's.
        lands = os.path.join(os.path.realpath(path) if event == "open" else os.path.join(
            os.path.realpath(os.path.dirname(path)), os.path.basename(path)), "")
        # A relative name out of its folder (UvA's `../saved_models`) is the lesson's own
        # layout, kept where the next build's run finds it: no library's cache. Once the cell
        # moved elsewhere (a scratch folder of its own), it is judged as an absolute one.
        relative = not os.path.isabs(name) and (os.getcwd() + os.sep).startswith(folder)
        if (bytecode or (event == "os.mkdir" and os.path.lexists(path))  # makes nothing
                or lands.startswith(os.path.join(os.path.realpath(folder), "") if inside
                                    else () if relative else kept)):
            return
        told = path[len(folder):] if inside else os.path.relpath(path, folder) if relative \
            else path
        if told not in seen:
            seen.add(told)
            shell.payload_manager.write_payload({"source": WROTE, "file": told})
        raise PermissionError(f"{told}: a chapter's run keeps what it changes in its own folder")

    package, kept = str(Path(__file__).parents[1]), ()
    shell.events.register("pre_execute", start)

    def tell_refused(refused: Path, result) -> None:
        with contextlib.suppress(FileNotFoundError):  # none refused
            commands = refused.read_text(encoding="utf8").splitlines()
            refused.unlink()
            for command in commands:
                shell.payload_manager.write_payload({"source": PIP_REFUSED, "command": command})


def serve(args: dict) -> dict:
    """Fork kernels until the starter ends; returns only in a forked kernel, its request."""
    # ipykernel sets MPLBACKEND as it starts; matplotlib reads it when imported, below.
    if not os.environ.get("MPLBACKEND"):
        os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    pool, address, keep = Path(args["pool"]), Path(args["address"]), args["keep"]
    # A waiting kernel's environment: the server's before its imports, which may name places in
    # its temporary folder, not the run's (torch._dynamo sets TORCHINDUCTOR_CACHE_DIR).
    environment = dict(os.environ)
    kernels: set[int] = set()
    # Stopped or orphaned, it stops its kernels: its children, so no pid is reused by then.
    signal.signal(signal.SIGTERM, lambda *_: _stop(kernels, pool, address))
    # The loop below, which notices an ended starter, waits for the imports (seconds):
    # Linux's parent-death signal (PR_SET_PDEATHSIG) stops an orphan sooner.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    if os.getppid() != args["parent"]:
        _stop(kernels, pool, address)
    # No collection while importing (a quarter of its time); then frozen, as gc advises
    # for a fork without exec (docs/performance.md).
    gc.disable()
    for name in [*args["imports"], "ipykernel.kernelapp"]:
        with contextlib.suppress(Exception):  # a chapter importing it gets the error
            importlib.import_module(name)
    gc.freeze()
    gc.enable()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(address))
    listener.listen()
    files = _files_now(args["imports"])
    takers: dict[str, tuple[int, int]] = {}
    while os.getppid() == args["parent"]:
        kernels -= _reaped(pool)
        for pid in _left_by_takers(pool, kernels, takers):
            os.kill(pid, signal.SIGKILL)
        request = connection = None
        if keep and not any((pool / "ready").glob("*.json")):
            connection_file = pool.resolve() / "connections" / f"{uuid.uuid4().hex}.json"
            request = {"cwd": keep, "connection_file": str(connection_file), "ready": True,
                       "env": environment}
        elif select.select([listener], [], [], 0.2)[0]:
            connection, _ = listener.accept()
            request = json.loads(connection.makefile("rb").readline())
        if _files_now(args["imports"]) != files:  # its kernels would hold the old code
            keep, pid = None, 0  # 0: it forks no more
            for ready in (pool / "ready").glob("*.json"):
                ready.unlink(missing_ok=True)
        elif request is None:
            continue
        elif (pid := os.fork()) == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            listener.close()
            if connection is not None:
                connection.close()
            return request
        else:
            kernels.add(pid)
            ended_path(pool, pid).unlink(missing_ok=True)  # an earlier kernel's, of the same pid
            if request.get("ready"):
                write_whole(pool / "ready" / f"{Path(request['connection_file']).stem}.json",
                            json.dumps({"pid": pid, "server": os.getpid(),
                                        "connection_file": request["connection_file"]}))
        if connection is not None:
            with connection:
                connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    _stop(kernels, pool, address)


def _files_now(names: list[str]) -> list[tuple[int, int] | None]:
    """The imported modules' files as on disk now (an upgrade replaces them)."""
    stamps = []
    for name in names:
        try:
            found = os.stat(sys.modules[name].__file__)
            stamps.append((found.st_ino, found.st_mtime_ns))
        except (KeyError, AttributeError, TypeError, OSError):  # not imported, or no file
            stamps.append(None)
    return stamps


def _left_by_takers(pool: Path, kernels: set[int], takers: dict[str, tuple[int, int]]
                    ) -> list[int]:
    """The kernels whose taker (a stopped build) ended. ``takers``: each record read so far,
    its kernel's pid and taker; (0, 0) once that kernel ended, as its pid may come again."""
    for taken in (pool / "taken").glob("*.json"):
        with contextlib.suppress(ValueError, KeyError, OSError):  # its taker not yet noted
            if taken.name not in takers:
                kernel = json.loads(taken.read_text())
                takers[taken.name] = kernel["pid"], kernel["taker"]
    takers.update({name: (0, 0) for name, (pid, _) in takers.items() if pid not in kernels})
    return [pid for pid, taker in takers.values() if pid and not process_alive(taker)]


def process_alive(pid: int) -> bool:
    import psutil  # a zombie, which os.kill(pid, 0) finds, has ended

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _reaped(pool: Path) -> set[int]:
    """The kernels that ended since last asked, their exit statuses written for takers."""
    ended = set()
    with contextlib.suppress(ChildProcessError):  # no child left
        while (found := os.waitpid(-1, os.WNOHANG))[0]:
            ended.add(found[0])
            write_whole(ended_path(pool, found[0]), str(os.waitstatus_to_exitcode(found[1])))
    return ended


def _stop(kernels: set[int], pool: Path, address: Path) -> None:
    for pid in kernels - _reaped(pool):
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(address.parent, ignore_errors=True)  # its own: its starter may be gone
    # Not sys.exit: unloading torch takes 0.25 s, which the build's end waits for; it holds
    # nothing to flush.
    os._exit(0)


if __name__ == "__main__":
    settings = json.loads(sys.argv[1])
    request = serve(settings)
    # Now the forked kernel, run as `python -m ipykernel_launcher -f FILE`. Its random state
    # is the server's (Python's random alone reseeds itself): reseeded, or every chapter's
    # unseeded draw would print alike and pass as seeded.
    for module in ("torch", "numpy.random"):
        if module in sys.modules:
            sys.modules[module].seed()
    os.setsid()
    os.chdir(request["cwd"])
    if request.get("env") is not None:
        os.environ.clear()
        os.environ.update(request["env"])
    # The kernel ends with this server; ipykernel read JPY_PARENT_PID before the fork.
    os.environ["JPY_PARENT_PID"] = str(os.getppid())
    sys.path[0] = ""  # the launcher takes the working folder off while ipykernel loads
    sys.argv = ["ipykernel_launcher", "-f", request["connection_file"],
                f"--IPKernelApp.parent_handle={os.getppid()}", *KERNEL_ARGUMENTS]
    runpy.run_module("ipykernel_launcher", run_name="__main__", alter_sys=True)
