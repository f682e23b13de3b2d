"""The kernel provisioner of a pool's kernel spec (:mod:`coursebook.execute.kernel_pool`).

jupyter_client loads it by its entry point (pyproject's
``jupyter_client.kernel_provisioners``) when it starts a kernel of that spec; a build
that starts no kernel never imports jupyter_client for it.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from jupyter_client.provisioning import LocalProvisioner

from coursebook.execute.kernel_pool import (
    POOL_ENV,
    connection_of,
    fork_kernel,
    process_alive,
    take_waiting_kernel,
)


class _AdoptedProcess:
    """A kernel the pool's server forked, taken over: this build signals it."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def poll(self) -> int | None:
        return None if process_alive(self.pid) else 0

    def wait(self) -> int:
        return 0  # the server, its parent, collects its exit status

    def send_signal(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class PooledKernelProvisioner(LocalProvisioner):
    """Takes a kernel the pool's server forked; or starts one, as jupyter_client does."""

    async def launch_kernel(self, cmd: list[str], **kwargs: Any):
        pool = os.environ.get(POOL_ENV)
        kernel = None
        if pool:
            kernel = (take_waiting_kernel(Path(pool), kwargs.get("cwd"))
                      or fork_kernel(Path(pool), kwargs.get("cwd"), kwargs.get("env")))
        connection = connection_of(kernel) if kernel is not None else None
        if connection is None:
            return await super().launch_kernel(cmd, **kwargs)
        self.process = _AdoptedProcess(kernel["pid"])
        self.pid = self.pgid = kernel["pid"]  # its own process group
        info = dict(connection)
        info["key"] = info["key"].encode()
        self.connection_info = info
        return info
