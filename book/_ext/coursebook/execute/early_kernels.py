"""Kernels started as a cold build starts, for the chapters it will execute.

A reader starts a chapter's kernel when it reaches the chapter, once Sphinx has loaded
its extensions and read the environment, about a second into a build here, while the
other core idles; starting Python, ipykernel and torch then lies on the path of the
longest chapter, and is paid again for every notebook. When the execution cache has no
database yet, every chapter a build reads will execute, so this build starts a kernel
forkserver as soon as its configuration is read (the preview's pool, provisioner and
server: :mod:`coursebook.execute.warm_kernels`). The server imports
``coursebook_kernel_imports`` once (into its process, never the namespace a chapter runs
in) and forks one kernel per chapter up to the number of chapters the build executes at
once (``-j``) into the pool at once; every other chapter's kernel is forked when the
chapter asks. A kernel runs one chapter from the top and is stopped after it, like any
other; the outputs are verified as in every build. A warm cache decides per chapter,
which is known only once the chapter is prepared: no server is started then.

Builds that start together on one cache (both editions) start one server: the first
takes a lock for its life, and the chapters of both take its kernels. Kernels nobody
took are stopped when the build that started the server ends; a kernel ends with the
server, so that build, at its end, waits while the other build's reader that took one
runs its chapter. The other build's chapters asking after that start kernels of their own.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path, PurePosixPath

from filelock import FileLock, Timeout
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.project import Project
from sphinx.util import logging

from coursebook.config import book_config
from coursebook.execute.cache_locks import cache_lock
from coursebook.execute.warm_kernels import (POOL_ENV, make_pool, offer_waiting_kernels,
                                             start_kernel_forkserver, stop_kernel_forkserver)
from coursebook.prepare.chapters import executes_when_read

logger = logging.getLogger(__name__)

# This build's kernel forkserver and the lock that makes it the one starting it (main process).
_server: list[subprocess.Popen] = []
_lock: list[FileLock] = []


def chapter_folders(app: Sphinx, config: Config) -> list[Path]:
    """The folder of each chapter this build executes when its notebook is not cached."""
    project = Project(app.srcdir, config.source_suffix)
    folders = []
    for docname in sorted(project.discover(config.exclude_patterns)):
        path = Path(project.doc2path(docname, absolute=True))
        excluded = any(PurePosixPath(path.as_posix()).match(pattern)
                       for pattern in config.nb_execution_excludepatterns)
        if not excluded and executes_when_read(path):
            folders.append(path.parent)
    return folders


def start_kernels_ahead(app: Sphinx, config: Config) -> None:
    """``config-inited``: on a cold cache, a kernel started for each chapter to execute."""
    if config.nb_execution_mode != "cache" or os.environ.get(POOL_ENV):
        return  # not executing through the cache, or the preview keeps kernels waiting
    cache = Path(config.nb_execution_cache_path or Path(app.outdir).parent / ".jupyter_cache")
    if (cache / "global.db").exists():
        return
    lock = cache_lock(cache, "kernels-ahead")
    pool = cache / "kernels-ahead"
    try:
        lock.acquire(timeout=0)
    except Timeout:
        # Another build on this cache starts them; this one's chapters take them too (a
        # notebook both share runs in whichever build reaches it first).
        offer_waiting_kernels(pool)
        return
    _lock.append(lock)
    make_pool(pool)
    offer_waiting_kernels(pool)
    # As many waiting as run at once (-j); the server forks the others when asked.
    folders = chapter_folders(app, config)[:max(app.parallel, 1)]
    _server.append(start_kernel_forkserver(pool, book_config(config).kernel_imports, folders))
    logger.info(f"cold cache: {len(folders)} chapter kernels started ahead")


def stop_kernels_ahead(app: Sphinx, exception: Exception | None) -> None:
    """``build-finished``: kernels no chapter took are stopped, those another build took
    waited for; the lock released."""
    while _server:
        stop_kernel_forkserver(Path(os.environ[POOL_ENV]), _server.pop())
    while _lock:
        _lock.pop().release()
