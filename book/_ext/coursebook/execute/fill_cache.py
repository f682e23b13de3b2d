"""What a build of each edition executes, as Sphinx reads the book; those chapters run
into a cache without a build.

Shards and ``pytest book`` ask :func:`read_book`: Sphinx reads the book in this process
with the edition's tags and :class:`ChapterRuns`, a builder that writes nothing and notes
each run instead of running it (as ``sphinx.ext.doctest`` runs as a builder). Nothing else
reads conf.py, tags or myst-nb's settings, so what they execute is what a build executes.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import TYPE_CHECKING

import nbformat
from sphinx.builders.dummy import DummyBuilder

from coursebook.config import BookConfig, book_config
from coursebook.execute.notebook_runs import run_chapter
from coursebook.execute.shared_cache import cache_run, cached_notebook, create_cache, notebook_lock
from coursebook.page_state import page_states
from coursebook.prepare.editions import Edition

if TYPE_CHECKING:
    from myst_nb.core.config import NbParserConfig
    from sphinx.application import Sphinx


class ExecutionFailed(Exception):
    """The notebook did not execute to its end; it is not cached."""


class BookReadError(Exception):
    """Sphinx could not read the book (a setting it cannot use): the build's one line."""


@dataclass(frozen=True)
class Run:
    """A chapter as a build runs it: the notebook myst-nb reads (its cache key) and
    myst-nb's settings for the page."""

    path: Path
    notebook: nbformat.NotebookNode
    settings: NbParserConfig


class ChapterRuns(DummyBuilder):
    """Reads the book as a build does, writes nothing; each chapter the build would run is
    noted in :attr:`runs` instead (and myst-nb is handed its title alone)."""

    name = "chapter_runs"
    epilog = "Read the book as a build does; noted the chapters it runs, ran none."
    # The tag Sphinx gives a build of this builder, given ahead so that this extension's
    # setup, before any builder exists, starts no kernel server for it.
    tag = f"builder_{name}"

    def init(self) -> None:
        self.runs: dict[str, Run] = {}


def chapter_runs(app: Sphinx) -> ChapterRuns | None:
    """The builder noting runs, when this read is one; None in a build."""
    return app.builder if isinstance(app.builder, ChapterRuns) else None


@dataclass
class BookRead:
    book: BookConfig  # as the build resolves it: execution versions, cache folder
    runs: dict[Path, Run]  # the chapters it executes, by source file
    failed: dict[Path, str]  # the pages it read that did not prepare: the build's one line

    def executes(self, path: Path) -> Run | None:
        return self.runs.get(path.resolve())


def _errors(log: str) -> list[str]:
    from sphinx.util.console import strip_escape_sequences

    return [line for line in strip_escape_sequences(log).splitlines() if "ERROR: " in line]


def read_book(srcdir: Path, confdir: Path, edition: Edition) -> BookRead:
    """Sphinx's read of the book in ``srcdir`` (conf.py in ``confdir``) for ``edition``."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    log = io.StringIO()
    tags = [ChapterRuns.tag, *([edition.value] if edition is Edition.INSTRUCTOR else [])]
    with TemporaryDirectory() as out, patch_docutils(confdir), docutils_namespace():
        try:
            app = Sphinx(str(srcdir), str(confdir), f"{out}/out", f"{out}/doctrees",
                         ChapterRuns.name, status=None, warning=log, freshenv=True,
                         tags=tags)
            app.build()
        except SystemExit:  # a setting the build cannot use: its one line is logged
            errors = _errors(log.getvalue())
            raise BookReadError(errors[0] if errors else log.getvalue().strip()) from None
    errors = _errors(log.getvalue())
    failed = {}
    for docname, state in page_states(app.env).items():
        if state.failed:
            path = Path(app.env.doc2path(docname)).resolve()
            failed[path] = next((line for line in errors if path.name in line),
                                errors[0] if errors else f"{path}: did not prepare")
    return BookRead(book_config(app.config),
                    {run.path: run for run in app.builder.runs.values()}, failed)


def execute_into_cache(cache_path: str | Path, run: Run
                       ) -> tuple[nbformat.NotebookNode, float | None]:
    """The run's notebook with its outputs: from the cache, or executed once with
    myst-nb's settings and cached. Also the seconds it took to execute (None: cached)."""
    create_cache(cache_path)
    notebook = nbformat.from_dict(run.notebook)  # the read's stays as it was
    with notebook_lock(cache_path, notebook):  # a build may run it too
        executed = cached_notebook(str(cache_path), notebook)
        if executed is not None:
            return executed, None
        result, _ = run_chapter(notebook, str(run.path), run.settings)
        if result.err is not None:
            raise ExecutionFailed(f"failed to execute: {type(result.err).__name__}; build it "
                                  "for the cell-by-cell report")
        cache_run(cache_path, notebook, str(run.path), {"execution_seconds": result.time})
        return notebook, result.time
