"""pytest collects the book's chapters as doctests: one test per verified cell and edition.

``pytest book/pt01.md`` (or ``pytest book/``) yields an item for each code cell that has an
expected output, per edition, named by chapter, edition, line and first code line. The
outputs come from the book's execution cache, prepared exactly as a build prepares the
chapter; a chapter that is not cached yet is executed once and cached, as a build would.
A recorded chapter (its cells run only on a special machine) is left to ``make recording-check``;
an edition whose build does not execute the chapter (excluded, or execution off) has no items.

Registered through the ``pytest11`` entry point in ``pyproject.toml``.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

import nbformat
import pytest

from coursebook.execute.cache_key import MissingPackage
from coursebook.execute.fill_cache import (
    ConfValues,
    ExecutionFailed,
    execute_into_cache,
    notebook_to_execute,
)
from coursebook.model.faults import BookError
from coursebook.model.notebooks import is_chapter_source, line_of
from coursebook.model.recordings import recording_name
from coursebook.page_state import CellOutput
from coursebook.prepare.editions import Edition
from coursebook.verify.expectations import (
    ACCEPT_COMMAND,
    Expectations,
    cell_outputs,
    compare,
    expectations_path,
    read_expectations,
)

# A test session that has just built the book hands its fresh cache to the chapters'
# items (:func:`use_chapter_cache`), which then run nothing again; else conf.py's cache.
CHAPTER_CACHE = pytest.StashKey[str]()


def use_chapter_cache(config: pytest.Config, cache_path: str | Path) -> None:
    config.stash[CHAPTER_CACHE] = str(cache_path)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("coursebook_book", "the book's source folder, relative to the rootdir",
                  default="book")
    parser.addini("coursebook_conf", "the folder of the book's conf.py", default=".")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    config = parent.config
    book = config.rootpath / config.getini("coursebook_book")
    if file_path.suffix != ".md" or book not in file_path.parents \
            or not is_chapter_source(file_path.read_text(encoding="utf8")):
        return None
    return ChapterFile.from_parent(parent, path=file_path)


class ChapterFailed(Exception):
    """The chapter did not execute; its cells cannot be compared."""


class ChapterFile(pytest.File):
    """A chapter: its verified cells, per edition."""

    @cached_property
    def book_config(self) -> ConfValues:
        try:
            return ConfValues.read(self.config.rootpath / self.config.getini("coursebook_conf"))
        except MissingPackage as error:
            raise self.CollectError(str(error)) from None  # one line, no traceback

    @cached_property
    def text(self) -> str:
        return self.path.read_text(encoding="utf8")

    def notebook_for(self, edition: Edition) -> nbformat.NotebookNode:
        """The notebook a build of this edition hands to myst-nb, read back as myst-nb does."""
        try:
            return notebook_to_execute(self.text, self.path, edition, self.book_config)
        except BookError as error:  # the build's one line, with its file and line
            raise self.CollectError(str(error)) from None

    def settings_for(self, edition: Edition, notebook: nbformat.NotebookNode):
        """myst-nb's settings for it; None when that edition's build does not execute it."""
        return self.book_config.execution(edition, notebook, self.path)

    def collect(self):
        book = self.config.rootpath / self.config.getini("coursebook_book")
        for edition in Edition:
            if not self.book_config.reads(edition, self.path, book):
                continue  # nor prepares it
            notebook = self.notebook_for(edition)
            if recording_name(notebook) is not None:
                return
            if self.settings_for(edition, notebook) is None:
                continue
            line, names = 0, set()
            for cell in cell_outputs(notebook):
                # A cell the edition adds (an answer's checks) is named at the cell before it.
                line = line_of(cell.source, self.text) or line
                if cell.unverified:
                    continue
                name = f"{edition.value}::L{line} {cell.first_line}"
                # A museum room's cells all stand at its marker's line: a repeated name (which
                # pytest-xdist would run once) gets the cell's key in the expectations file.
                name += f" (cell {cell.key})" if name in names else ""
                names.add(name)
                yield CellItem.from_parent(self, name=name, edition=edition, key=cell.key,
                                           line=line)

    @cached_property
    def expectations(self) -> Expectations | None:
        return read_expectations(self.expectations_path)

    @cached_property
    def expectations_path(self) -> Path:
        book = self.config.rootpath / self.config.getini("coursebook_book")
        return expectations_path(book / self.book_config.book.expected_dir,
                                 self.book_config.versions["torch"], self.path.stem)

    def executed(self, edition: Edition) -> list[CellOutput]:
        """This edition's cells with their outputs, from the cache or executed once."""
        cache = self.__dict__.setdefault("_executed", {})
        if edition not in cache:
            cache_path = self.config.stash.get(CHAPTER_CACHE, self.book_config.cache_path)
            notebook = self.notebook_for(edition)
            try:
                executed, _ = execute_into_cache(cache_path, notebook, self.path,
                                                 self.settings_for(edition, notebook))
                cache[edition] = cell_outputs(executed)
            except ExecutionFailed as failure:
                cache[edition] = ChapterFailed(f"{self.path.name} ({edition.value}) {failure}")
        if isinstance(cache[edition], ChapterFailed):
            raise cache[edition]
        return cache[edition]


class CellItem(pytest.Item):
    """One code cell of one edition: its output must equal its expected output."""

    def __init__(self, *, edition: Edition, key: str, line: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.edition, self.key, self.line = edition, key, line

    def runtest(self) -> None:
        chapter: ChapterFile = self.parent
        cell = next(c for c in chapter.executed(self.edition) if c.key == self.key)
        expectations = chapter.expectations
        if expectations is None:
            raise CellOutputMismatch(
                f"no expected outputs for this torch version ({chapter.expectations_path} is "
                f"missing): accept them with `{ACCEPT_COMMAND}`")
        for mismatch in compare(expectations, self.edition.value, [cell]):
            raise CellOutputMismatch(f"{mismatch.diff(chapter.expectations_path)}\n"
                                     f"If the new output is right: `{ACCEPT_COMMAND}`.")

    def repr_failure(self, excinfo, style=None) -> str:
        if isinstance(excinfo.value, (CellOutputMismatch, ChapterFailed)):
            return f"{self.path.name}:{self.line}: code cell {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, self.line - 1 if self.line else None, self.name


class CellOutputMismatch(AssertionError):
    """A cell's output is not its expected output."""
