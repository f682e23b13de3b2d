"""One jupyter-cache, shared safely by builds that run at once (the two editions, say).

jupyter-cache looks a notebook up, executes it when it is missing, then inserts it: two
builds that execute the same notebook at once both insert, and the second one fails
("hashkey already exists"). A lock per cache key, held from the moment a build looks a
notebook up until it is cached, makes the second build wait, then find the first one's
outputs in the cache: a notebook shared by both editions executes once. Notebooks with
different keys still execute at the same time. Creating the cache's tables is locked too
(two builds starting on an empty cache would both create them).

The locks are files under the cache folder (``locks/``), held with ``filelock``; the
operating system drops them when a build dies, so a crash never leaves one behind.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
from filelock import FileLock
from sphinx.application import Sphinx

from coursebook.config import book_config

__all__ = ["cache_lock", "cached_notebook", "create_cache", "notebook_lock",
           "hold_notebook_lock", "release_notebook_lock"]

# The lock the page being read holds (Sphinx's per-page data: dropped after the page).
_HELD = "coursebook_cache_lock"


def cache_lock(cache_path: str | Path, name: str) -> FileLock:
    """The cache's lock named ``name`` (under ``locks/``), not yet taken."""
    folder = Path(cache_path) / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    return FileLock(folder / f"{name}.lock")


def cache_key(cache_path: str | Path, notebook: nbformat.NotebookNode) -> str:
    """jupyter-cache's own key of a notebook (its code cells, their metadata, the kernel)."""
    from jupyter_cache import get_cache

    # Hashing opens no database: the cache's tables are made on first use.
    return get_cache(str(cache_path)).create_hashed_notebook(notebook)[1]


def create_cache(cache_path: str | Path) -> None:
    """Create the cache folder and its tables, once, however many builds start together."""
    from jupyter_cache import get_cache

    with cache_lock(cache_path, "create"):
        get_cache(str(cache_path)).db  # the tables are made on first use of the database


@contextmanager
def notebook_lock(cache_path: str | Path, notebook: nbformat.NotebookNode) -> Iterator[None]:
    """Hold the notebook's key while looking it up, executing and caching it."""
    with cache_lock(cache_path, cache_key(cache_path, notebook)):
        yield


def hold_notebook_lock(app: Sphinx, notebook: nbformat.NotebookNode) -> None:
    """``source-read``: take the key of the notebook myst-nb is about to look up and run.

    Held until :func:`release_notebook_lock` (``doctree-read``: myst-nb has cached it).
    A reader reads one page at a time, so it holds one lock at a time: no deadlock.
    """
    if app.config.nb_execution_mode != "cache" or not book_config(app.config).cache_locks:
        return
    cache_path = app.config.nb_execution_cache_path
    lock = cache_lock(cache_path, cache_key(cache_path, notebook))
    lock.acquire()
    app.env.temp_data[_HELD] = lock


def release_notebook_lock(app: Sphinx, *_args) -> None:
    """``doctree-read``: myst-nb has cached the notebook; let the other build go on. (A
    read that fails drops the page's data, lock included: filelock releases it then.)"""
    lock = app.env.temp_data.pop(_HELD, None)
    if lock is not None:
        lock.release()


def cached_notebook(cache_path: str, notebook: nbformat.NotebookNode
                    ) -> nbformat.NotebookNode | None:
    """The notebook with its outputs from jupyter-cache, or None when it is not cached.

    A notebook whose execution failed is never cached; its failure is reported elsewhere.
    """
    from jupyter_cache import get_cache

    try:
        return get_cache(cache_path).merge_match_into_notebook(notebook)[1]
    except KeyError:
        return None
