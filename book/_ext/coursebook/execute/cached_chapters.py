"""A prepared chapter meets the execution cache while its page is read: this stage keys,
locks, executes and caches it; myst-nb only reads it from the cache.

The key's lock is held until the page is read (``doctree-read``). A failed run is cached
too, marked, so that myst-nb shows the cells that ran instead of running the chapter again;
once the page is read (:func:`forget_failed_run`) the record is removed. A read by
:class:`coursebook.execute.fill_cache.ChapterRuns` notes each run instead.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.application import Sphinx
from sphinx.util import logging

from coursebook.config import book_config
from coursebook.execute.cache_key import key_execution_versions
from coursebook.execute.fill_cache import Run, chapter_runs
from coursebook.execute.notebook_runs import StoppedRun, chapter_settings, run_chapter
from coursebook.execute.shared_cache import (
    FAILED,
    cache_recording,
    cache_run,
    cached_record,
    hold_notebook_lock,
    notebook_lock,
    remove_record,
)
from coursebook.model.notebooks import NOTEBOOK_SUFFIX, as_myst_nb_reads, page_text
from coursebook.prepare.chapters import PreparedChapter

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
    """``source-read``: the chapter in the cache; the page's text myst-nb then reads."""
    config = book_config(app.config)
    cache_path = config.cache_path
    source_path = str(app.env.doc2path(app.env.docname))
    runs = chapter_runs(app)
    if prepared.recorded is not None:
        if runs is not None:  # a read that runs nothing caches no recording either
            return _title_only(prepared.notebook, source_path)
        with notebook_lock(cache_path, prepared.recorded):
            cache_recording(cache_path, source_path, prepared.recorded)
        return page_text(prepared.notebook, source_path)
    key_execution_versions(prepared.notebook, config.execution_versions)
    text = page_text(prepared.notebook, source_path)
    settings = chapter_settings(app.env.mystnb_config, prepared.notebook, source_path)
    notebook = as_myst_nb_reads(prepared.notebook, getattr(app.env, "myst_config", None),
                                source_path)
    if runs is None:  # the key it is cached under: the lock the cache's check respects
        hold_notebook_lock(app, notebook)  # until the page is read
    if settings is None:
        return text if runs is None else _title_only(prepared.notebook, source_path)
    if runs is not None:  # the run noted, not run: myst-nb (which would run it) gets the title
        runs.runs[app.env.docname] = Run(Path(source_path).resolve(), notebook, settings)
        return _title_only(prepared.notebook, source_path)
    record = cached_record(cache_path, notebook)
    if record is not None and record.data.get(FAILED):
        remove_record(cache_path, record.pk)  # a failed run a stopped build left
    if record is None or record.data.get(FAILED):
        _run(app, notebook, source_path, settings)
    return text


def _title_only(notebook: nbformat.NotebookNode, source_path: str) -> str:
    """A page of the chapter's title alone: what a read that runs nothing gives myst-nb."""
    title = next((line for cell in notebook.cells if cell.cell_type == "markdown"
                  for line in cell.source.splitlines() if line.startswith("# ")), "# Chapter")
    if source_path.endswith(NOTEBOOK_SUFFIX):  # in the page's format; nothing to execute
        return page_text(nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_markdown_cell(title)], metadata=notebook.metadata),
            source_path)
    return title + "\n"


def _run(app: Sphinx, notebook: nbformat.NotebookNode, source_path: str, settings) -> None:
    docname = app.env.docname
    logger.info("Executing notebook using %s CWD",
                "temporary" if settings.execution_in_temp else "local", location=docname)
    result, stopped = run_chapter(notebook, source_path, settings)
    failed = {} if result.err is None else {FAILED: True}
    record = cache_run(book_config(app.config).cache_path, notebook, source_path,
                       {"execution_seconds": result.time, **failed})
    if result.err is None:
        logger.info("Executed notebook in %.2f seconds", result.time, location=docname)
        return
    app.env.temp_data[_FAILED_RUN] = FailedRun(type(result.err).__name__,
                                               result.exc_string or "", result.time, stopped,
                                               record)


def forget_failed_run(app: Sphinx) -> None:
    """``doctree-read``, before the lock is released: a failed run's record leaves the cache."""
    run: FailedRun | None = app.env.temp_data.get(_FAILED_RUN)
    if run is None:
        return
    remove_record(book_config(app.config).cache_path, run.record)
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
