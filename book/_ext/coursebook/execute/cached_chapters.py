"""A prepared chapter meets the execution cache while its page is read: keyed, locked
(until ``doctree-read``), executed and cached here; myst-nb only reads it from the cache.

A failed run is cached too, marked, so that myst-nb shows the cells that ran instead of
running the chapter again; once the page is read the record is removed. Before a build
reads, an entry whose notebook file is gone or damaged is dropped (its chapter executes
again) unless another build holds its key's lock; an unreadable database stops the build.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.application import Sphinx
from sphinx.util import logging

from coursebook.config import book_config
from coursebook.execute.fill_cache import Run, chapter_runs
from coursebook.execute.notebook_runs import StoppedRun, chapter_settings, run_chapter
from coursebook.execute.shared_cache import (FAILED, cache_lock, cache_run, cached_record,
                                             create_cache, hold_notebook_lock,
                                             key_execution_versions, notebook_lock, open_cache)
from coursebook.model.faults import CLEAN_CACHE_COMMAND, shown_path
from coursebook.model.notebooks import as_myst_nb_reads, page_text, reads_as_json
from coursebook.prepare.chapters import PreparedChapter
from coursebook.reporting import stop_build

logger = logging.getLogger(__name__)

_FAILED_RUN = "coursebook_failed_run"  # the page's failed run (Sphinx's per-page data)


@dataclass(frozen=True)
class FailedRun:
    """A chapter's run that failed, as myst-nb records one, and where it stopped."""

    error: str  # the exception's class name
    traceback: str
    seconds: float
    stopped: StoppedRun | None
    record: int  # the marked cache record


def enter_cache(app: Sphinx, prepared: PreparedChapter) -> str:
    """``source-read``: the chapter in the cache; the page's text myst-nb then reads. A read
    that runs nothing (:class:`ChapterRuns`) notes the run, and gives myst-nb the title."""
    cache_path = app.env.mystnb_config.execution_cache_path  # as myst-nb resolved it
    source_path = str(app.env.doc2path(app.env.docname))
    runs = chapter_runs(app)
    if prepared.recorded is not None:
        if runs is not None:  # a read that runs nothing caches no recording either
            return _title_only(prepared.notebook, source_path)
        with notebook_lock(cache_path, prepared.recorded):
            if cached_record(cache_path, prepared.recorded) is None:
                cache_run(cache_path, prepared.recorded, source_path, {"recorded": True})
        return page_text(prepared.notebook, source_path)
    key_execution_versions(prepared.notebook, book_config(app.config).execution_versions)
    text = page_text(prepared.notebook, source_path)
    settings = chapter_settings(app.env.mystnb_config, prepared.notebook.metadata, source_path)
    notebook = as_myst_nb_reads(prepared.notebook, getattr(app.env, "myst_config", None),
                                source_path)
    if runs is not None:  # the run noted, not run: myst-nb (which would run it) gets the title
        if settings is not None:
            runs.runs[app.env.docname] = Run(Path(source_path).resolve(), notebook, settings)
        return _title_only(prepared.notebook, source_path)
    hold_notebook_lock(app, notebook)  # the key the cache's check respects, until read
    if settings is None:
        return text
    record = cached_record(cache_path, notebook)
    if record is not None and record.data.get(FAILED):
        open_cache(cache_path).remove_cache(record.pk)  # a failed run a stopped build left
    if record is None or record.data.get(FAILED):
        docname = app.env.docname
        logger.info("Executing notebook using %s CWD",
                    "temporary" if settings.execution_in_temp else "local", location=docname)
        result, stopped = run_chapter(notebook, source_path, settings)
        pk = cache_run(cache_path, notebook, source_path, {
            "execution_seconds": result.time, **({} if result.err is None else {FAILED: True})})
        if result.err is None:
            logger.info("Executed notebook in %.2f seconds", result.time, location=docname)
        else:
            app.env.temp_data[_FAILED_RUN] = FailedRun(
                type(result.err).__name__, result.exc_string or "", result.time, stopped, pk)
    return text


def _title_only(notebook: nbformat.NotebookNode, source_path: str) -> str:
    """A page of the chapter's title alone, in the page's format: nothing to execute."""
    title = next((line for cell in notebook.cells if cell.cell_type == "markdown"
                  for line in cell.source.splitlines() if line.startswith("# ")), "# Chapter")
    if reads_as_json(source_path):
        return page_text(nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_markdown_cell(title)], metadata=notebook.metadata),
            source_path)
    return title + "\n"


def forget_failed_run(app: Sphinx) -> None:
    """``doctree-read``, before the lock is released: a failed run's record leaves the cache;
    myst-nb's execution data and report say it failed."""
    run: FailedRun | None = app.env.temp_data.get(_FAILED_RUN)
    if run is None:
        return
    open_cache(app.env.mystnb_config.execution_cache_path).remove_cache(run.record)
    NbMetadataCollector.set_exec_data(app.env, app.env.docname, {
        "mtime": time.time(), "runtime": run.seconds, "method": "cache", "succeeded": False,
        "error": run.error, "traceback": run.traceback})
    report = report_folder(app).joinpath(*f"{app.env.docname}.err.log".split("/"))
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(run.traceback, encoding="utf8")


def report_folder(app: Sphinx) -> Path:
    """Where myst-nb writes a failed page's traceback (its sphinx_.py): the output folder's."""
    return Path(app.outdir, "reports")


def stopped_run(app: Sphinx) -> StoppedRun | None:
    """Where the page's failed run stopped, when it stopped in a cell (timed out, or its
    kernel died) rather than on an error."""
    run: FailedRun | None = app.env.temp_data.get(_FAILED_RUN)
    return run.stopped if run is not None else None


def _unreadable(notebook: Path) -> str | None:
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
    it) and check it, when there is a page to read (a read that runs nothing touches none)."""
    settings = env.mystnb_config  # as myst-nb resolved them (deprecated names included)
    if not docnames or settings.execution_mode != "cache" or chapter_runs(app) is not None:
        return
    from sqlalchemy.exc import SQLAlchemyError

    path = Path(settings.execution_cache_path)
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
