"""What a build of each edition executes, as Sphinx reads the book with a builder that notes
each run (:func:`read_book`), and those runs into a cache (tools/shards.py, ``pytest book``)."""

from __future__ import annotations

import copy
import io
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import TYPE_CHECKING

import nbformat
from sphinx.builders.dummy import DummyBuilder
from sphinx.util import logging as sphinx_logging

from coursebook.config import BookConfig, book_config
from coursebook.execute.notebook_runs import StoppedRun, run_notebook
from coursebook.execute.shared_cache import (FAILED, cache_run, cached_record, create_cache,
                                             notebook_lock, open_cache, with_notes)
from coursebook.model.cell_notes import without_notes
from coursebook.model.notebooks import RAISES_TAG, cell_tags
from coursebook.model.solutions import builder_tags
from coursebook.page_state import page_states
from coursebook.prepare.editions import Edition

if TYPE_CHECKING:
    from jupyter_cache.executors.utils import ExecutionResult
    from myst_nb.core.config import NbParserConfig
    from sphinx.application import Sphinx

logger = sphinx_logging.getLogger(__name__)


class ExecutionFailed(Exception):
    """The notebook did not execute to its end; it is not cached."""


class BookReadError(Exception):
    """Sphinx could not read the book (a setting it cannot use): the build's one line."""


@dataclass(frozen=True)
class Run:
    """A chapter as a build runs it: the notebook myst-nb reads, its settings for it."""

    path: Path
    notebook: nbformat.NotebookNode
    settings: NbParserConfig


class ChapterRuns(DummyBuilder):
    """Its :attr:`runs` noted by cached_chapters.chapter_client."""

    name = "chapter_runs"
    epilog = "Read the book as a build does; noted the chapters it runs, ran none."

    def init(self) -> None:
        self.runs: dict[str, Run] = {}


def chapter_runs(app: Sphinx) -> ChapterRuns | None:
    return app.builder if isinstance(app.builder, ChapterRuns) else None


@dataclass
class BookRead:
    book: BookConfig  # as the build resolves it: execution versions
    cache_path: str  # the execution cache's folder, as myst-nb resolved it
    runs: dict[Path, Run]  # the chapters it executes, by resolved source file
    failed: dict[Path, str]  # the pages it read that did not prepare: the build's one line


class _PageErrors(logging.Handler):
    """Each error logged while each page is read, as Sphinx words it (its stream shows an
    error once, however many pages meet it)."""

    def __init__(self, app: Sphinx) -> None:
        from sphinx.util.logging import WarningLogRecordTranslator

        super().__init__(logging.ERROR)
        self.app, self.translator, self.pages = app, WarningLogRecordTranslator(app), {}

    def emit(self, record: logging.LogRecord) -> None:
        record = copy.copy(record)  # the stream translates the one it is handed
        self.translator.filter(record)
        page = self.app.env.temp_data.get("docname")
        self.pages.setdefault(page, []).append(record.getMessage())


@contextmanager
def read_only_app(srcdir: Path, confdir: Path, edition: Edition,
                  settings: dict[str, str] | None = None) -> Iterator[Sphinx]:
    """Sphinx set up as ``edition``'s build is (``settings`` as -D), with :class:`ChapterRuns`."""
    from sphinx.application import Sphinx
    from sphinx.util.console import strip_escape_sequences
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    log = io.StringIO()
    # The builder's tags, given ahead: setup, seeing its name, starts no kernel server.
    tags = [*builder_tags(ChapterRuns.name, ChapterRuns.format),
            *([edition.value] if edition is Edition.INSTRUCTOR else [])]
    with TemporaryDirectory() as out, patch_docutils(confdir), docutils_namespace():
        try:
            app = Sphinx(str(srcdir), str(confdir), f"{out}/out", f"{out}/doctrees",
                         ChapterRuns.name, confoverrides=settings, status=None, warning=log,
                         freshenv=True, tags=tags)
        except SystemExit:  # a setting the build cannot use: its one line is logged
            text = strip_escape_sequences(log.getvalue())
            raise BookReadError(next((line for line in text.splitlines() if "ERROR: " in line),
                                     text.strip())) from None
        yield app


def read_book(srcdir: Path, confdir: Path, edition: Edition) -> BookRead:
    """Sphinx's read of the book for ``edition``: the chapters it runs, the pages it failed."""
    from sphinx.util.logging import NAMESPACE

    with read_only_app(srcdir, confdir, edition) as app:
        errors = _PageErrors(app)
        logging.getLogger(NAMESPACE).addHandler(errors)
        try:
            app.build()
        finally:
            logging.getLogger(NAMESPACE).removeHandler(errors)
    failed = {}
    for docname, state in page_states(app.env).items():
        if state.failed:
            path = Path(app.env.doc2path(docname)).resolve()
            failed[path] = errors.pages.get(docname, [f"{path}: did not prepare"])[0]
    return BookRead(book_config(app.config), app.env.mystnb_config.execution_cache_path,
                    {run.path: run for run in app.builder.runs.values()}, failed)


def run_into_cache(cache_path: str | Path, run: Run, location: str | None = None,
                   keep_failed: bool = True
                   ) -> tuple[ExecutionResult, StoppedRun | None, int | None] | None:
    """Builds' and shards' one way to run a chapter into the cache (its key's lock held),
    unless cached. None: cached; else its result, where it stopped, its record: a failed
    run's is marked, and made only if ``keep_failed`` (a build's myst-nb reads it back)."""
    record = cached_record(cache_path, run.notebook)
    if record is not None and not record.data.get(FAILED):
        return None
    if record is not None:
        open_cache(cache_path).remove_cache(record.pk)
    logger.info("Executing notebook using temporary CWD", location=location)
    # It runs among links to the files beside it in a temporary folder (so myst-nb's
    # execution_in_temp changes nothing): what it writes is not left where its next run
    # finds it (%%writefile's "Overwriting"). Its kernel refuses a write through a link.
    with TemporaryDirectory() as cwd:
        for entry in run.path.parent.iterdir():
            os.symlink(entry, os.path.join(cwd, entry.name))
        result, stopped = run_notebook(
            run.notebook, str(run.path), cwd=cwd, timeout=run.settings.execution_timeout,
            allow_errors=run.settings.execution_allow_errors, meta_override=True)
    if result.err is not None and not keep_failed:
        return result, stopped, None
    # A run that went on past an error no cell is tagged for (errors allowed) would have
    # stopped there: kept for this read, run again when next looked up, as a failed run is.
    faulty = result.err is not None or any(
        output.output_type == "error" for cell in run.notebook.cells
        if RAISES_TAG not in cell_tags(cell) for output in cell.get("outputs", ()))
    pk = cache_run(cache_path, run.notebook, str(run.path), {
        "execution_seconds": result.time, **({FAILED: True} if faulty else {})})
    if result.err is None:
        logger.info("Executed notebook in %.2f seconds", result.time, location=location)
    return result, stopped, pk


def execute_into_cache(cache_path: str | Path, run: Run
                       ) -> tuple[nbformat.NotebookNode, float | None]:
    """The run's notebook with its outputs, and its seconds executing (None: cached)."""
    create_cache(cache_path)
    run = replace(run, notebook=nbformat.from_dict(run.notebook))  # the read's stays as it was
    with notebook_lock(cache_path, run.notebook):  # a build may run it too
        ran = run_into_cache(cache_path, run, keep_failed=False)
        if ran is not None and ran[0].err is not None:
            raise ExecutionFailed(f"failed to execute: {type(ran[0].err).__name__}; build it "
                                  "for the cell-by-cell report")
        if ran is not None:
            return run.notebook, ran[0].time
        merged = open_cache(cache_path).merge_match_into_notebook(without_notes(run.notebook))[1]
        return with_notes(merged, run.notebook), None
