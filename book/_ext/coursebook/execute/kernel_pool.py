"""Kernels from a kernel forkserver, for the preview and a cold build's chapters
(docs/performance.md): the pool's ``python3`` kernel spec names kernel_pool_provisioner."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import nbformat
from sphinx.application import Sphinx
from sphinx.util import logging

from coursebook.config import book_config
from coursebook.execute.fill_cache import ChapterRuns
from coursebook.execute.kernel_forkserver import (
    moves_to,
    process_alive,
    request_kernel,
    server_command,
    write_whole,
)
from coursebook.execute.shared_cache import cache_lock
from coursebook.model.notebooks import CHAPTER_SUFFIXES, top_matter
from coursebook.model.recordings import recording_name
from coursebook.process.interrupt import remove_folder, short_temporary_folder

if TYPE_CHECKING:
    from filelock import FileLock
    from myst_nb.core.config import NbParserConfig

logger = logging.getLogger(__name__)

POOL_ENV = "COURSEBOOK_KERNEL_POOL"
# pyproject's jupyter_client.kernel_provisioners entry, loaded as a kernel starts
PROVISIONER = "coursebook-pooled-kernel"
SERVER = "forkserver.json"  # in the pool: the server's pid and socket


def _note_taken(pool: Path, name: str, kernel: dict) -> dict:
    """Its taker, whom the server's starter waits for before it ends."""
    kernel["taker"] = os.getpid()
    write_whole(pool / "taken" / f"{name}.json", json.dumps(kernel))
    return kernel


def take_waiting_kernel(pool: Path, cwd: str | None, temporary: str | None) -> dict | None:
    """A waiting kernel, this caller's alone (a rename is atomic), told to run in ``cwd``
    with ``temporary`` as its TMPDIR."""
    for ready in sorted((pool / "ready").glob("*.json")):
        try:
            kernel = json.loads(ready.read_text())
            ready.rename(pool / "taken" / ready.name)
        except OSError:
            continue  # another reader took it
        moves_to(kernel["connection_file"]).write_text(
            json.dumps({"cwd": cwd or os.getcwd(), "TMPDIR": temporary}), encoding="utf8")
        return _note_taken(pool, ready.stem, kernel)
    return None


def fork_kernel(pool: Path, cwd: str | None, env: dict[str, str] | None) -> dict | None:
    """A kernel the pool's server forks now (None: no server)."""
    try:
        server = json.loads((pool / SERVER).read_text())
    except (OSError, ValueError):
        return None
    name = uuid.uuid4().hex
    kernel = {"cwd": str(Path(cwd or os.getcwd()).resolve()),
              "connection_file": str((pool / "connections" / f"{name}.json").resolve())}
    # The server binds its socket once started; until then a request finds no socket.
    while (pid := request_kernel(Path(server["address"]), kernel["cwd"],
                                 kernel["connection_file"], env)) is None:
        if not process_alive(server["pid"]):
            return None
        time.sleep(0.05)
    # 0: its imports changed on disk since it imported them
    return _note_taken(pool, name, {"pid": pid, "server": server["pid"], **kernel}) if pid else None


def make_pool(pool: Path) -> None:
    """An empty pool: what a stopped preview or build left is not taken."""
    for folder in ("ready", "taken", "connections", "ended"):
        (pool / folder).mkdir(parents=True, exist_ok=True)
        for stale in (pool / folder).glob("*"):
            stale.unlink()
    (pool / SERVER).unlink(missing_ok=True)


def offer_waiting_kernels(pool: Path) -> None:
    """This process's and its children's kernels come from ``pool`` while its server runs."""
    share = pool / "share" / "jupyter"
    spec = share / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    # Whole: two builds on one cache write it while readers read it.
    write_whole(spec / "kernel.json", json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)", "language": "python",
        "metadata": {"kernel_provisioner": {"provisioner_name": PROVISIONER}}}, indent=1))
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        filter(None, [str(share), os.environ.get("JUPYTER_PATH")]))
    os.environ[POOL_ENV] = str(pool)


def start_kernel_forkserver(pool: Path, imports: list[str],
                            keep: Path | None = None) -> subprocess.Popen:
    """The pool's server, a kernel waiting in ``keep``; its socket in a folder of its own
    (the server, killed with a stopped build, cannot remove it)."""
    address = short_temporary_folder("kernels-") / "socket"
    server = subprocess.Popen(
        server_command(address, pool.resolve(), imports, keep),
        cwd=pool, stdin=subprocess.DEVNULL, start_new_session=True)
    write_whole(pool / SERVER, json.dumps({"pid": server.pid, "address": str(address)}))
    return server


def connection_of(kernel: dict, timeout: float = 60) -> dict | None:
    """The connection the kernel wrote (None: it died first, or is stopped after
    ``timeout`` seconds, nbclient's own limit)."""
    path = Path(kernel["connection_file"])
    deadline = time.monotonic() + timeout
    while process_alive(kernel["pid"]):
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                os.kill(kernel["pid"], signal.SIGKILL)
                return None
            time.sleep(0.05)  # not written yet, or being written
    return None


def stop_kernel_forkserver(pool: Path, server: subprocess.Popen) -> None:
    """Stop the server (so its kernels) once no other build's taker of one lives."""
    address = Path(json.loads((pool / SERVER).read_text())["address"])
    (pool / SERVER).unlink()  # chapters asking from now on start kernels of their own
    for ready in (pool / "ready").glob("*.json"):
        ready.unlink(missing_ok=True)  # not to be taken any more
    for taken in (pool / "taken").glob("*.json"):
        kernel = json.loads(taken.read_text())
        taker = kernel.get("taker")
        while (taker and taker != os.getpid() and process_alive(taker)
               and process_alive(kernel["pid"])):
            time.sleep(0.1)
    server.terminate()
    server.wait()
    remove_folder(address.parent)


# This build's kernel forkserver, its cache and the lock that makes this build its starter.
_server: list[tuple[subprocess.Popen, Path, FileLock]] = []


def cache_at_setup(app: Sphinx) -> Path:
    """The cache folder by myst-nb's rule, before it resolves it at builder-inited (1.3 to
    1.8 s later, lost to the server's imports): a guess that ``plan_reading`` checks."""
    return Path(app.config.nb_execution_cache_path
                or Path(app.outdir).parent.joinpath(".jupyter_cache").resolve())


def start_kernel_server(app: Sphinx) -> None:
    """Setup: on a cold cache, the kernel forkserver starts importing."""
    if os.environ.get(POOL_ENV) or app.tags.has(ChapterRuns.name):
        return  # the preview keeps kernels waiting; a read that runs nothing needs none
    app.setup_extension("myst_nb")  # its settings, as Sphinx resolves them
    config = app.config
    cache = cache_at_setup(app)
    pool = cache / "kernels"
    # A build that started first may have made the database already: while its server runs
    # (its file in the pool), the cache is as cold for this build.
    if config.nb_execution_mode != "cache" or ((cache / "global.db").exists()
                                               and not (pool / SERVER).exists()):
        return
    from filelock import Timeout  # a cold cache only: a warm build imports no filelock

    lock = cache_lock(cache, "kernels")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        offer_waiting_kernels(pool)  # another build's server: its kernels serve this one too
        return
    if (cache / "global.db").exists():  # the server file of a build that was stopped
        (pool / SERVER).unlink(missing_ok=True)  # (or of one that has just stopped)
        lock.release()
        return
    make_pool(pool)
    offer_waiting_kernels(pool)
    _server.append((start_kernel_forkserver(pool, book_config(config).kernel_imports),
                    cache, lock))


def plan_reading(app: Sphinx, env, docnames: list[str]) -> None:
    """``env-before-read-docs``: chapters that would execute keep the kernel server, if any,
    and with ``-j`` go to different readers."""
    spread = app.parallel >= 2 and len(docnames) >= 2
    if not (_server or spread):
        return
    executing = {docname for docname in docnames
                 if executes_when_read(Path(env.doc2path(docname)), env.mystnb_config)}
    if _server and executing and Path(env.mystnb_config.execution_cache_path) == _server[0][1]:
        logger.info(f"cold cache: {len(executing)} chapter kernels forked from one server")
    elif _server:  # its kernels would be of another cache, or of none
        cache = env.mystnb_config.execution_cache_path
        logger.info("cold cache: %s; kernel server stopped", f"the chapters run on {cache}, "
                    f"not on {_server[0][1]}" if executing else "no chapter to execute here")
        stop_kernel_server(app, None)
    if not spread:
        return
    from sphinx.util.parallel import make_chunks

    # Each reader gets a run of pages: chapters that execute go to different runs, each at
    # its run's end, so the other pages are read while its kernel starts.
    runs = [[""] * len(chunk) for chunk in make_chunks(docnames, app.parallel)]
    ordered = iter(sorted(docnames, key=lambda docname: docname not in executing))  # stable
    for back in range(max(map(len, runs))):  # every run's last place first, then the next
        for run in runs:
            if back < len(run):
                run[-1 - back] = next(ordered)
    docnames[:] = [docname for run in runs for docname in run]


def executes_when_read(path: Path, settings: NbParserConfig) -> bool:
    """Whether a build runs this page on a cache miss, guessed before it is read
    (docs/architecture.md, step 2)."""
    from myst_nb.core.execute import create_client
    from myst_nb.core.execute.cache import NotebookClientCache

    if path.suffix not in CHAPTER_SUFFIXES:
        return False
    try:
        matter = top_matter(path.read_text(encoding="utf8", errors="replace"))
        if matter is None or recording_name(matter) is not None:
            return False
        quiet = SimpleNamespace(info=lambda *_args, **_kwargs: None)
        return isinstance(create_client(nbformat.v4.new_notebook(), str(path), settings, quiet),
                          NotebookClientCache)
    except Exception:  # noqa: BLE001 - reading the page reports what is wrong with it
        return False


def stop_kernel_server(app: Sphinx, exception: Exception | None) -> None:
    """``build-finished``: stop the server once the kernels another build took are done."""
    while _server:
        server, cache, lock = _server.pop()
        stop_kernel_forkserver(cache / "kernels", server)
        lock.release()

