"""The execution cache (jupyter-cache) checked before a build reads from it.

Checked only when a build is about to read pages (a build that reads none never looks
a notebook up). A cache entry whose notebook file is gone would fail the lookup with a
``KeyError``; it is dropped instead, and its chapter executes when its page is next read.
A database that cannot be read cannot be repaired: the build stops with one message
naming the file and ``make clean-cache``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from coursebook.execute.cache_locks import create_cache
from coursebook.model.faults import CLEAN_CACHE_COMMAND, shown_path

logger = logging.getLogger(__name__)


def stop_build(message: str, location: str | None = None) -> None:
    """End the build now with one error: no crash report (Sphinx gives one to any exception)."""
    logger.error("%s", message, location=location, type="coursebook", subtype="cache")
    sys.exit(2)


def drop_missing_entries(cache) -> list[str]:
    """Remove the records whose executed notebook file is missing; their URIs."""
    from jupyter_cache.cache.db import NbCacheRecord

    dropped = []
    for record in cache.list_cache_records():
        notebook = cache._get_notebook_path_cache(record.hashkey)  # jupyter-cache's layout
        if not notebook.is_file():
            shutil.rmtree(notebook.parent, ignore_errors=True)
            NbCacheRecord.remove_records([record.pk], cache.db)
            dropped.append(record.uri)
    return dropped


def check_execution_cache(app: Sphinx, env, docnames: list[str]) -> None:
    """``env-before-read-docs``: create the shared cache (before parallel readers race to
    it) and check it, when there is a page to read."""
    from jupyter_cache import get_cache
    from sqlalchemy.exc import SQLAlchemyError

    config = app.config
    if not docnames or config.nb_execution_mode != "cache" or not config.nb_execution_cache_path:
        return
    path = Path(config.nb_execution_cache_path)
    path.mkdir(parents=True, exist_ok=True)
    try:
        create_cache(path)  # its tables, once, however many builds start together
        dropped = drop_missing_entries(get_cache(str(path)))
    except SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or error).splitlines()[0]
        stop_build(f"the execution cache is damaged ({reason}): its database "
                   f"{shown_path(path / 'global.db')} cannot be read. Run `{CLEAN_CACHE_COMMAND}` "
                   "(every chapter then executes again).")
    for uri in dropped:
        logger.info("execution cache: the executed notebook of %s was missing; its entry is "
                    "dropped and the chapter executes when its page is next read",
                    shown_path(uri))
