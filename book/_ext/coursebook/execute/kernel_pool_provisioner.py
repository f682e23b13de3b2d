"""The kernel provisioner of a pool's kernel spec (pyproject's entry point)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from functools import partialmethod
from pathlib import Path
from typing import Any

from jupyter_client.provisioning import LocalProvisioner

from coursebook.execute.kernel_forkserver import ended_path, process_alive
from coursebook.execute.kernel_pool import POOL_ENV, connection_of, fork_kernel, take_waiting_kernel
from coursebook.execute.notebook_runs import EXIT_STATUS_UNKNOWN, SERVER_ENDED

# The server collects an ended kernel's status within its 0.2 s poll; a server that is gone
# too never does.
STATUS_WAIT = 2.0


class _AdoptedProcess:
    """A kernel the pool's server forked: its exit status read where the server wrote it."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int, server: int, pool: Path) -> None:
        self.pid, self.server, self.pool = pid, server, pool
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """None while it runs; then its status, waited for (it names the advice)."""
        if self.returncode is not None or process_alive(self.pid):
            return self.returncode
        deadline = time.monotonic() + STATUS_WAIT
        while True:
            with contextlib.suppress(OSError, ValueError):
                self.returncode = int(ended_path(self.pool, self.pid).read_text())
                return self.returncode
            if time.monotonic() >= deadline:
                server_alive = process_alive(self.server)
                self.returncode = EXIT_STATUS_UNKNOWN if server_alive else SERVER_ENDED
                return self.returncode
            time.sleep(0.05)

    wait = poll  # jupyter_client polls until it ended, then waits

    def send_signal(self, signum: int) -> None:
        os.kill(self.pid, signum)

    kill = partialmethod(send_signal, signal.SIGKILL)
    terminate = partialmethod(send_signal, signal.SIGTERM)


class PooledKernelProvisioner(LocalProvisioner):
    """Takes a kernel the pool's server forked; or starts one, as jupyter_client does."""

    async def launch_kernel(self, cmd: list[str], **kwargs: Any):
        pool = os.environ.get(POOL_ENV)
        kernel = pool and (take_waiting_kernel(Path(pool), kwargs.get("cwd"),
                                               kwargs.get("env", {}).get("TMPDIR"))
                           or fork_kernel(Path(pool), kwargs.get("cwd"), kwargs.get("env")))
        connection = connection_of(kernel) if kernel else None
        if connection is None:
            return await super().launch_kernel(cmd, **kwargs)
        self.process = _AdoptedProcess(kernel["pid"], kernel["server"], Path(pool))
        self.pid = self.pgid = kernel["pid"]  # its own process group
        self.connection_info = {**connection, "key": connection["key"].encode()}
        return self.connection_info
