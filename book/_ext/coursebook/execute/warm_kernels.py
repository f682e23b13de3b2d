"""Kernels started ahead of need: the preview's code edits (``make preview``) and a cold
build's first chapters (:mod:`coursebook.execute.early_kernels`).

A chapter executes in a fresh kernel; starting one and importing torch is most of what a
one-cell edit costs. In the preview a *keeper* (the preview's own process) keeps one
kernel started, the modules chapters spend their first seconds importing (torch, say:
``coursebook_preview_kernel_imports``) imported into its process but nothing run in its
namespace, in a pool folder. jupyter_client starts every kernel through a *kernel
provisioner* named by the kernel's spec: the pool's spec for ``python3`` (same command,
found first through ``JUPYTER_PATH``) names :class:`WarmKernelProvisioner`, which takes the waiting kernel
instead of starting one; the keeper starts the next at once. Each kernel is taken once,
by one notebook, which it runs from the top, and is shut down after it, as nbclient
does with any kernel: what a chapter prints does not depend on how its kernel started
(its outputs are verified against the expected ones as in every build). Without a pool,
or with no kernel waiting, the provisioner starts one as jupyter_client always does. A
waiting kernel binds its own ports and writes its connection file once it has.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from jupyter_client.provisioning import LocalProvisioner

from coursebook.execute.notebook_runs import KERNEL_ARGUMENTS

POOL_ENV = "COURSEBOOK_KERNEL_POOL"
PROVISIONER = "coursebook-warm-kernel"  # pyproject's jupyter_client.kernel_provisioners entry


def launcher(imports: list[str]) -> str:
    """The kernel's usual launcher, ``imports`` imported first into its process (not the
    namespace the cells run in, which IPython makes afresh)."""
    # ipykernel picks the inline backend through MPLBACKEND when it starts; matplotlib
    # reads it when imported, so it is set (as ipykernel sets it) before the imports.
    return ("import importlib, os, runpy\n"
            "if not os.environ.get('MPLBACKEND'):\n"
            "    os.environ['MPLBACKEND'] = 'module://matplotlib_inline.backend_inline'\n"
            f"for name in {imports!r}:\n"
            "    importlib.import_module(name)\n"
            "runpy.run_module('ipykernel_launcher', run_name='__main__', alter_sys=True)")


def write_kernel_spec(pool: Path) -> Path:
    """The pool's ``python3`` spec (the usual command, this provisioner); the folder
    to put first on ``JUPYTER_PATH``."""
    share = pool / "share" / "jupyter"
    spec = share / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    # Written whole, then renamed: two builds on one cache write it while readers read it.
    written = spec / f"kernel.json.{os.getpid()}"
    written.write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)", "language": "python",
        "metadata": {"kernel_provisioner": {"provisioner_name": PROVISIONER}}}, indent=1))
    written.replace(spec / "kernel.json")
    return share


class _AdoptedProcess:
    """A waiting kernel taken over: the keeper started it, this build signals it."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def poll(self) -> int | None:
        return None if _alive(self.pid) else 0

    def wait(self) -> int:
        return 0  # the keeper, its parent, collects its exit status

    def send_signal(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def _take_waiting_kernel(pool: Path, cwd: str | None) -> dict | None:
    """A waiting kernel started in ``cwd``, now this caller's alone (a rename is atomic);
    kernels started for another folder are left to the chapters there."""
    for ready in sorted((pool / "ready").glob("*.json")):
        try:
            kernel = json.loads(ready.read_text())
        except OSError:
            continue  # another reader took it
        if cwd is not None and Path(kernel["cwd"]) != Path(cwd).resolve():
            continue
        taken = pool / "taken" / ready.name
        try:
            ready.rename(taken)
        except OSError:
            continue  # another reader took it
        # Who took it: the process that started it waits for this one before it ends.
        kernel["taker"] = os.getpid()
        taken.with_suffix(".tmp").write_text(json.dumps(kernel))
        taken.with_suffix(".tmp").rename(taken)
        return kernel
    return None


class WarmKernelProvisioner(LocalProvisioner):
    """Takes the kernel the keeper started; or starts one, as jupyter_client does."""

    async def launch_kernel(self, cmd: list[str], **kwargs: Any):
        pool = os.environ.get(POOL_ENV)
        kernel = _take_waiting_kernel(Path(pool), kwargs.get("cwd")) if pool else None
        connection = connection_of(kernel) if kernel is not None else None
        if connection is None:
            return await super().launch_kernel(cmd, **kwargs)
        self.process = _AdoptedProcess(kernel["pid"])
        self.pid = self.pgid = kernel["pid"]  # its own process group
        info = dict(connection)
        info["key"] = info["key"].encode()
        self.connection_info = info
        return info


def make_pool(pool: Path) -> None:
    """An empty pool folder: what a stopped preview or build left is not taken."""
    for folder in ("ready", "taken", "connections"):
        (pool / folder).mkdir(parents=True, exist_ok=True)
        for stale in (pool / folder).glob("*.json"):
            stale.unlink()


def offer_waiting_kernels(pool: Path) -> None:
    """Kernels started by this process and its children (``-j`` readers, forked builds)
    take a waiting kernel from ``pool`` when one is there."""
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        filter(None, [str(write_kernel_spec(pool)), os.environ.get("JUPYTER_PATH")]))
    os.environ[POOL_ENV] = str(pool)


def start_waiting_kernel(pool: Path, cwd: Path, imports: list[str]) -> subprocess.Popen:
    """A kernel started in ``cwd`` with ``imports`` done, put in the pool.

    The kernel binds its own ports and writes the connection file once it has: ports
    chosen here would stay free only until the kernel binds them, seconds later under
    load, while other kernels and their clients take ports too.
    """
    name = uuid.uuid4().hex
    connection_file = (pool / "connections" / f"{name}.json").resolve()
    # Its parent is this process: ipykernel ends the kernel when this process ends.
    process = subprocess.Popen(
        [sys.executable, "-c", launcher(imports), "-f", str(connection_file),
         *KERNEL_ARGUMENTS],
        cwd=cwd, env={**os.environ, "JPY_PARENT_PID": str(os.getpid())},
        stdin=subprocess.DEVNULL, start_new_session=True)
    ready = pool / "ready" / f"{name}.json"
    ready.with_suffix(".tmp").write_text(json.dumps(
        {"pid": process.pid, "cwd": str(cwd.resolve()), "connection_file": str(connection_file)}))
    ready.with_suffix(".tmp").rename(ready)
    return process


def connection_of(kernel: dict, timeout: float = 60) -> dict | None:
    """The connection the kernel wrote once its ports were bound (None: it died first, or
    has not started within ``timeout`` seconds, nbclient's own limit: it is stopped)."""
    path = Path(kernel["connection_file"])
    deadline = time.monotonic() + timeout
    while _alive(kernel["pid"]):
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                os.kill(kernel["pid"], signal.SIGKILL)
                return None
            time.sleep(0.05)  # not written yet, or being written
    return None


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def stop_waiting_kernels(pool: Path, started: list[subprocess.Popen]) -> None:
    """Stop the kernels of ``started``. One that another build took (the pool is shared)
    would end with this process, its parent: wait while its taker lives (nbclient stops it
    after its chapter). Those nobody took are stopped at once."""
    for ready in (pool / "ready").glob("*.json"):
        ready.unlink(missing_ok=True)  # not to be taken any more
    takers = {}
    for taken in (pool / "taken").glob("*.json"):
        record = json.loads(taken.read_text())
        takers[record["pid"]] = record.get("taker")
    for process in started:
        taker = takers.get(process.pid)
        while taker and process.poll() is None and _alive(taker):
            time.sleep(0.1)
        if process.poll() is None:
            process.kill()
        process.wait()


class KernelKeeper:
    """Keeps one kernel waiting in the pool, started in ``cwd`` with ``imports`` done,
    until stopped."""

    def __init__(self, pool: Path, cwd: Path, imports: list[str]) -> None:
        self.pool, self.cwd, self.imports = pool, cwd.resolve(), imports
        self.started: list[subprocess.Popen] = []
        self._stop = threading.Event()
        make_pool(pool)
        self._thread = threading.Thread(target=self._keep, name="kernel-keeper", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _keep(self) -> None:
        while not self._stop.wait(0.2):
            self.started = [p for p in self.started if p.poll() is None]  # reaps the exited
            if not any((self.pool / "ready").glob("*.json")):
                self.started.append(start_waiting_kernel(self.pool, self.cwd, self.imports))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for process in self.started:
            if process.poll() is None:
                process.terminate()
