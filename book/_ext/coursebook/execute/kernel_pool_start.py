"""A cold build's kernels, forked from one server started as the build starts.

A reader starts a chapter's kernel when it reaches the chapter; starting Python,
ipykernel and torch then lies on the path of the longest chapter, once per notebook. When
the execution cache has no database yet, every chapter a build reads executes, so this
extension's setup, the first of conf.py's, starts a kernel forkserver
(:mod:`coursebook.execute.kernel_pool`) importing ``coursebook_kernel_imports`` while
myst-nb and the theme load. A warm cache decides per chapter, once it is prepared: no
server then. At setup myst-nb's two settings this needs are read as Sphinx will resolve
them (a ``-D`` override, else ``conf.py``, else myst-nb's default); at ``config-inited``
a server whose settings do not hold, or that no chapter would use, is stopped.

Builds that start together on one cache (both editions) start one server: the first
takes a lock for its life, and the chapters of both take its kernels; at its end it waits
while the other build's reader that took one runs its chapter.
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

from coursebook.config import BookConfig, book_config, execution_cache_path
from coursebook.execute.fill_cache import read_conf
from coursebook.execute.kernel_pool import (
    POOL_ENV,
    make_pool,
    offer_waiting_kernels,
    start_kernel_forkserver,
    stop_kernel_forkserver,
)
from coursebook.execute.shared_cache import cache_lock
from coursebook.prepare.chapters import executes_when_read

logger = logging.getLogger(__name__)

# myst-nb's defaults for the settings read before it registers them.
MYST_NB_DEFAULTS = {"nb_execution_mode": "auto", "nb_execution_cache_path": ""}

# This build's kernel forkserver, the cache it serves and the lock that makes this build
# the one starting it (main process).
_server: list[tuple[subprocess.Popen, Path, FileLock]] = []


def chapters_to_execute(app: Sphinx, config: Config) -> int:
    """How many chapters this build executes when their notebooks are not cached."""
    project = Project(app.srcdir, config.source_suffix)
    paths = [Path(project.doc2path(docname, absolute=True))
             for docname in project.discover(config.exclude_patterns)]
    return sum(1 for path in paths if not any(
        PurePosixPath(path.as_posix()).match(pattern)
        for pattern in config.nb_execution_excludepatterns) and executes_when_read(path))


def start_kernel_server(app: Sphinx) -> None:
    """This extension's setup: on a cold cache, the kernel forkserver starts importing."""
    if os.environ.get(POOL_ENV):
        return  # the preview keeps kernels waiting
    conf = read_conf(Path(app.confdir), app.tags) if Path(app.confdir, "conf.py").is_file() else {}
    setting = {name: app.config.overrides.get(name, conf.get(name, default))
               for name, default in MYST_NB_DEFAULTS.items()}
    cache = Path(execution_cache_path(app.outdir, setting["nb_execution_cache_path"]))
    if setting["nb_execution_mode"] != "cache" or (cache / "global.db").exists():
        return
    lock = cache_lock(cache, "kernels")
    pool = cache / "kernels"
    try:
        lock.acquire(timeout=0)
    except Timeout:
        # Another build on this cache starts it; this one's chapters take its kernels too
        # (a notebook both share runs in whichever build reaches it first).
        offer_waiting_kernels(pool)
        return
    make_pool(pool)
    offer_waiting_kernels(pool)
    imports = BookConfig.from_namespace(conf).kernel_imports
    _server.append((start_kernel_forkserver(pool, imports), cache, lock))


def check_kernel_server(app: Sphinx, config: Config) -> None:
    """``config-inited``, once the source suffixes are merged: the server stays if the
    settings read at setup hold and some chapter will execute."""
    if not _server:
        return
    cache = _server[0][1]
    chapters = chapters_to_execute(app, config)
    if (config.nb_execution_mode == "cache" and chapters
            and Path(book_config(config).cache_path) == cache):
        logger.info(f"cold cache: {chapters} chapter kernels forked from one server")
    else:
        logger.info("cold cache: no chapter to execute here; kernel server stopped")
        stop_kernel_server(app, None)


def stop_kernel_server(app: Sphinx, exception: Exception | None) -> None:
    """``build-finished``: the server stopped, once the kernels another build took are
    done; the lock released."""
    while _server:
        server, cache, lock = _server.pop()
        stop_kernel_forkserver(cache / "kernels", server)
        lock.release()
