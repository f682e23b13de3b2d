"""A prepared chapter meets the execution cache through :func:`chapter_client`
(docs/architecture.md, step 4); a failed run is cached, marked, only while its page is read,
for myst-nb to show the cells that ran."""

from __future__ import annotations

import copy
import shutil
import time
from pathlib import Path

from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.application import Sphinx
from sphinx.util import logging

from coursebook.config import book_config
from coursebook.execute.fill_cache import Run, chapter_runs, run_into_cache
from coursebook.execute.notebook_runs import StoppedRun
from coursebook.execute.shared_cache import (cache_lock, cache_run, cached_record,
                                             create_cache, hold_notebook_lock,
                                             key_execution_versions, notebook_lock, open_cache,
                                             with_notes)
from coursebook.model.faults import CLEAN_CACHE_COMMAND, shown_path
from coursebook.model.notebooks import notebook_json, page_text
from coursebook.page_state import PREPARED
from coursebook.prepare.chapters import PreparedChapter
from coursebook.reporting import stop_build

logger = logging.getLogger(__name__)

# The page's failed run (Sphinx's per-page data): where it stopped, myst-nb's execution data.
_FAILED_RUN = "coursebook_failed_run"
# The page's chapter as it ran, each cell noted (None: its run failed); Sphinx's per-page data.
EXECUTED = "coursebook_executed"


def enter_cache(app: Sphinx, prepared: PreparedChapter) -> str:
    """``source-read``: the page's text myst-nb reads, keyed by the execution versions; a
    recording cached for myst-nb to take (a read that runs nothing caches none)."""
    source_path = str(app.env.doc2path(app.env.docname))
    if prepared.recorded is None:
        key_execution_versions(prepared.notebook, book_config(app.config).execution_versions,
                               prepared.reads)
    elif chapter_runs(app) is None:
        cache_path = app.env.mystnb_config.execution_cache_path  # as myst-nb resolved it
        with notebook_lock(cache_path, prepared.recorded):
            if cached_record(cache_path, prepared.recorded) is None:
                cache_run(cache_path, prepared.recorded, source_path, {"recorded": True})
    return page_text(prepared.notebook, source_path)


def chapter_client(app: Sphinx) -> type:
    """myst-nb's cache client: a prepared chapter is run into the cache before myst-nb's own
    client takes it from there (in a read that runs nothing, noted)."""
    from myst_nb.core.execute.cache import NotebookClientCache

    class ChapterClient(NotebookClientCache):
        def start_client(self) -> None:
            prepared: PreparedChapter | None = app.env.temp_data.get(PREPARED)
            runs = chapter_runs(app)
            if prepared is not None and runs is not None:  # noted, not run; a recording neither
                if prepared.recorded is None:
                    runs.runs[app.env.docname] = Run(self.path.resolve(), with_notes(
                        copy.deepcopy(self.notebook), prepared.notebook), self.nb_config)
                return
            if prepared is None or prepared.recorded is not None:
                return super().start_client()
            cache = app.env.mystnb_config.execution_cache_path
            notebook = copy.deepcopy(self.notebook)
            hold_notebook_lock(app, notebook)  # until the page is read
            ran = run_into_cache(cache, Run(self.path, notebook, self.nb_config), app.env.docname)
            failed = None
            if ran is not None and ran[0].err is not None:
                result, stopped, failed = ran
                app.env.temp_data[_FAILED_RUN] = (stopped, {
                    "mtime": time.time(), "runtime": result.time, "method": "cache",
                    "succeeded": False, "error": type(result.err).__name__,
                    "traceback": result.exc_string or ""})
            super().start_client()  # the run taken from the cache; a failed one then forgotten
            if failed is not None:
                open_cache(cache).remove_cache(failed)
            app.env.temp_data[EXECUTED] = (None if failed else
                                            as_run(with_notes(self.notebook, prepared.notebook)))

    return ChapterClient


def as_run(notebook):
    """Its cells' outputs as run: myst-nb, reading it next, takes out of them each value glued
    unshown (``glue(key, value, display=False)``), which a page pastes and the build compares."""
    kept = copy.copy(notebook)
    kept.cells = [copy.copy(cell) for cell in notebook.cells]
    return kept


def report_failed_run(app: Sphinx) -> None:
    """``doctree-read``: myst-nb's execution data and report say a failed run failed."""
    if _FAILED_RUN not in app.env.temp_data:
        return
    exec_data = app.env.temp_data[_FAILED_RUN][1]
    NbMetadataCollector.set_exec_data(app.env, app.env.docname, exec_data)
    report = report_folder(app).joinpath(*f"{app.env.docname}.err.log".split("/"))
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(exec_data["traceback"], encoding="utf8")


def report_folder(app: Sphinx) -> Path:
    """Where myst-nb writes a failed page's traceback (its sphinx_.py): the output folder's."""
    return Path(app.outdir, "reports")


def stopped_run(app: Sphinx) -> StoppedRun | None:
    """Where the page's failed run stopped, if in a cell."""
    return app.env.temp_data.get(_FAILED_RUN, (None,))[0]


def _unreadable(notebook: Path) -> str | None:
    if not notebook.is_file():
        return "missing"
    try:  # strictly, as myst-nb reads it: one byte no UTF-8 holds stopped the build
        found = notebook_json(notebook.read_bytes().decode("utf8"))
    except UnicodeDecodeError:
        found = None
    return None if found is not None else "damaged (not a notebook's JSON)"


def drop_unreadable_entries(path: Path) -> list[tuple[str, str]]:
    """Drop the entries whose notebook is missing or damaged (its chapter runs again), unless
    another build holds its key's lock: why, each."""
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
    """``env-before-read-docs``: create the shared cache (before parallel readers race to it)
    and check it; an unreadable database stops the build."""
    settings = env.mystnb_config  # as myst-nb resolved them (deprecated names included)
    if not docnames or settings.execution_mode != "cache" or chapter_runs(app) is not None:
        return
    from sqlalchemy.exc import SQLAlchemyError

    path = Path(settings.execution_cache_path)
    try:
        create_cache(path)
        dropped = drop_unreadable_entries(path)
    except (SQLAlchemyError, RuntimeError) as error:  # jupyter-cache wraps OperationalError
        cause = error.__cause__ if isinstance(error, RuntimeError) else error
        if not isinstance(cause, SQLAlchemyError):
            raise
        reason = str(getattr(cause, "orig", None) or cause).splitlines()[0]
        stop_build("cache", (f"the execution cache is damaged ({reason}): its database "
                             f"{shown_path(path / 'global.db')} cannot be read. Run "
                             f"`{CLEAN_CACHE_COMMAND}` (every chapter then executes again).", None))
    for uri, why in dropped:
        logger.info("execution cache: the executed notebook of %s was %s; its entry is "
                    "dropped and the chapter executes when its page is next read",
                    shown_path(uri), why)
