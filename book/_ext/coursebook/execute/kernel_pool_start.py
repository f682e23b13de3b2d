"""A cold build's kernels, forked from one server started as the build starts.

When the execution cache has no database yet, every chapter a build reads executes, so
this extension's setup starts a kernel forkserver importing ``coursebook_kernel_imports``
while the theme and the other extensions load, and ``env-before-read-docs`` stops it if no
page to read would use it. Builds that start together on one cache share one server: the
first takes a lock for its life.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from sphinx.application import Sphinx
from sphinx.util import logging

from coursebook.config import book_config, execution_cache_path
from coursebook.execute.fill_cache import ChapterRuns
from coursebook.execute.kernel_pool import (
    POOL_ENV,
    make_pool,
    offer_waiting_kernels,
    start_kernel_forkserver,
    stop_kernel_forkserver,
)
from coursebook.execute.notebook_runs import excluded_from_execution
from coursebook.execute.shared_cache import cache_lock
from coursebook.prepare.chapters import executes_when_read

if TYPE_CHECKING:
    from filelock import FileLock

logger = logging.getLogger(__name__)

# This build's kernel forkserver, the cache it serves and the lock that makes this build
# the one starting it (main process).
_server: list[tuple[subprocess.Popen, Path, FileLock]] = []


def start_kernel_server(app: Sphinx) -> None:
    """This extension's setup: on a cold cache, the kernel forkserver starts importing."""
    if os.environ.get(POOL_ENV) or app.tags.has(ChapterRuns.tag):
        return  # the preview keeps kernels waiting; a read that runs nothing needs none
    app.setup_extension("myst_nb")  # its settings, as Sphinx resolves them
    config = app.config
    cache = Path(execution_cache_path(app.outdir, config.nb_execution_cache_path))
    if config.nb_execution_mode != "cache" or (cache / "global.db").exists():
        return
    from filelock import Timeout  # a cold cache only: a warm build imports no filelock

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
    _server.append((start_kernel_forkserver(pool, book_config(config).kernel_imports),
                    cache, lock))


def check_kernel_server(app: Sphinx, env, docnames: list[str]) -> None:
    """``env-before-read-docs``: the server stays if some page Sphinx is about to read is
    a chapter that executes (by its file and myst-nb's settings: nothing is prepared yet)."""
    if not _server:
        return
    settings = env.mystnb_config
    chapters = sum(1 for docname in docnames if executes_when_read(Path(env.doc2path(docname)))
                   and not excluded_from_execution(settings, env.doc2path(docname)))
    if (settings.execution_mode == "cache" and chapters
            and Path(book_config(app.config).cache_path) == _server[0][1]):
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
