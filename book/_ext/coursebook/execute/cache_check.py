"""The execution cache (jupyter-cache) checked before a build reads from it.

An entry whose notebook file is gone or damaged is dropped, so its chapter executes again;
one whose key's lock another build holds is left alone (that build is writing it). A
database that cannot be read stops the build, naming ``make clean-cache``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from coursebook.config import book_config
from coursebook.execute.fill_cache import chapter_runs
from coursebook.execute.shared_cache import cache_lock, create_cache, open_cache
from coursebook.model.faults import CLEAN_CACHE_COMMAND, shown_path
from coursebook.reporting import stop_build

logger = logging.getLogger(__name__)


def _unreadable(notebook: Path) -> str | None:
    """Why a cached notebook file cannot be read, or None."""
    if not notebook.is_file():
        return "missing"
    try:
        cells = json.loads(notebook.read_bytes()).get("cells")
    except (ValueError, AttributeError):  # not JSON (or not UTF-8), or not an object
        return "damaged (not a notebook's JSON)"
    return None if isinstance(cells, list) else "damaged (a notebook without cells)"


def drop_unreadable_entries(path: Path) -> list[tuple[str, str]]:
    """Drop the cache's entries whose notebook file is missing or damaged, except those
    another build is writing; each dropped entry's source and why."""
    from filelock import Timeout
    from jupyter_cache.cache.db import NbCacheRecord

    cache, dropped = open_cache(path), []
    for record in cache.list_cache_records():
        try:  # the key's lock: the one its writer holds (a notebook's key is its hashkey)
            lock = cache_lock(path, record.hashkey).acquire(timeout=0)
        except Timeout:
            continue  # another build is writing it
        with lock:
            notebook = cache._get_notebook_path_cache(record.hashkey)  # jupyter-cache's layout
            why = _unreadable(notebook)
            if why is not None:
                shutil.rmtree(notebook.parent, ignore_errors=True)
                NbCacheRecord.remove_records([record.pk], cache.db)
                dropped.append((record.uri, why))
    return dropped


def check_execution_cache(app: Sphinx, env, docnames: list[str]) -> None:
    """``env-before-read-docs``: create the shared cache (before parallel readers race to
    it) and check it, when there is a page to read."""
    config = app.config
    if not docnames or config.nb_execution_mode != "cache" or chapter_runs(app) is not None:
        return  # (a read that runs nothing touches no cache)
    from sqlalchemy.exc import SQLAlchemyError

    path = Path(book_config(config).cache_path)
    try:
        create_cache(path)  # its tables, once, however many builds start together
        dropped = drop_unreadable_entries(path)
    except SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or error).splitlines()[0]
        stop_build("cache", (f"the execution cache is damaged ({reason}): its database "
                             f"{shown_path(path / 'global.db')} cannot be read. Run "
                             f"`{CLEAN_CACHE_COMMAND}` (every chapter then executes again).", None))
    for uri, why in dropped:
        logger.info("execution cache: the executed notebook of %s was %s; its entry is "
                    "dropped and the chapter executes when its page is next read",
                    shown_path(uri), why)
