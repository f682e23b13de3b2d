"""``pytest book/pt01.md`` (a ``pytest11`` entry point): an item per code cell with an
expected output and edition, run as a build of that edition runs it, from the book's cache.
Recorded chapters are left to ``make recording-check``."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from coursebook.model.faults import CLEAN_CACHE_COMMAND

# Every pytest process loads this plugin: what a chapter's items need (a build's modules, with
# myst-nb's execution: about 1 s of CPU) is imported where they need it.
if TYPE_CHECKING:
    from coursebook.execute.fill_cache import BookRead, Run
    from coursebook.page_state import CellOutput
    from coursebook.prepare.editions import Edition
    from coursebook.verify.expectations import Expectations, Mismatch

# A test session that has just built the book puts its fresh cache's path here for the
# chapters' items, which then run nothing again; else conf.py's cache.
CHAPTER_CACHE = pytest.StashKey[str]()
# Sphinx's read of the book for each edition (or why it could not read it), once a session.
BOOK_READS = pytest.StashKey[dict["Edition", "BookRead | pytest.Collector.CollectError"]]()


def _folder(config: pytest.Config, setting: str) -> Path:  # coursebook_book or _conf
    return config.rootpath / config.getini(setting)


def book_read(config: pytest.Config, edition: Edition) -> BookRead:
    from coursebook.execute.fill_cache import BookReadError, read_book

    reads = config.stash.setdefault(BOOK_READS, {})
    if edition not in reads:
        try:
            reads[edition] = read_book(_folder(config, "coursebook_book"),
                                       _folder(config, "coursebook_conf"), edition)
        except BookReadError as error:  # one line, no traceback
            reads[edition] = pytest.Collector.CollectError(str(error))
    if isinstance(reads[edition], pytest.Collector.CollectError):
        raise reads[edition]
    return reads[edition]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("coursebook_book", "the book's source folder, relative to the rootdir",
                  default="book")
    parser.addini("coursebook_conf", "the folder of the book's conf.py", default=".")


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    collected = yield
    if _folder(parent.config, "coursebook_book") not in file_path.parents:
        return collected
    from coursebook.model.notebooks import CHAPTER_SUFFIXES, is_chapter_source

    if file_path.suffix not in CHAPTER_SUFFIXES \
            or not is_chapter_source(file_path.read_text(encoding="utf8")):
        return collected
    # A script chapter named on the command line (or test_*.py) is no module for pytest to
    # import: that would run its cells, answers and errors included, in pytest's process.
    return [node for node in collected if not isinstance(node, pytest.Module)] \
        + [ChapterFile.from_parent(parent, path=file_path)]


class CellFailed(AssertionError):
    """A cell's output is not its expected output, or its chapter did not execute."""


class ChapterFile(pytest.File):
    def run_for(self, edition: Edition) -> Run | None:
        """The chapter as a build of this edition runs it; None where it does not (not
        read, recorded, excluded, or execution off)."""
        read = book_read(self.config, edition)
        path = self.path.resolve()
        if path in read.failed:  # the build's one line, with its file and line
            raise self.CollectError(read.failed[path])
        return read.runs.get(path)

    def collect(self):
        from coursebook.prepare.editions import Edition
        from coursebook.verify.expectations import cell_outputs

        for edition in Edition:
            run = self.run_for(edition)
            if run is None:
                continue
            names = set()
            for cell in cell_outputs(run.notebook):
                if cell.unverified:
                    continue
                # A cell the edition adds stands at its marker, or at the cell before it.
                name = f"{edition.value}::L{cell.line} {cell.first_line}"
                # A museum room's cells all stand at its marker's line: a repeated name (which
                # pytest-xdist would run once) gets the cell's key in the expectations file.
                name += f" (cell {cell.key})" if name in names else ""
                names.add(name)
                yield CellItem.from_parent(self, name=name, edition=edition, key=cell.key,
                                           line=cell.line)

    @cached_property
    def expectations(self) -> Expectations | None:
        from coursebook.verify.expectations import read_expectations

        return read_expectations(self.expectations_path)

    @cached_property
    def expectations_path(self) -> Path:
        from coursebook.prepare.editions import Edition
        from coursebook.verify.expectations import expectations_path

        built = book_read(self.config, Edition.STUDENT).book
        return expectations_path(_folder(self.config, "coursebook_book") / built.expected_dir,
                                 built.torch, self.path.stem)

    def compared(self, edition: Edition) -> tuple[dict[str, Mismatch], dict[str, CellOutput]]:
        """The edition's mismatches and outputs by cell key, its chapter from the cache or run
        once, and compared once among all its cells, as the build compares them: an edited
        cell's diff is against the entry its place among the others says it replaced."""
        from coursebook.execute.fill_cache import ExecutionFailed, execute_into_cache
        from coursebook.verify.expectations import cell_outputs, compare

        compared = self.__dict__.setdefault("_compared", {})
        if edition not in compared:
            cache_path = self.config.stash.get(CHAPTER_CACHE,
                                               book_read(self.config, edition).cache_path)
            try:
                executed, _ = execute_into_cache(cache_path, self.run_for(edition))
                outputs = cell_outputs(executed)
                compared[edition] = (
                    {mismatch.cell.key: mismatch for mismatch in compare(
                        self.expectations, edition.value, outputs)},
                    {output.key: output for output in outputs})
            except ExecutionFailed as failure:
                compared[edition] = CellFailed(f"{self.path.name} ({edition.value}) {failure}")
        if isinstance(compared[edition], CellFailed):
            raise compared[edition]
        return compared[edition]


class CellItem(pytest.Item):
    def __init__(self, *, edition: Edition, key: str, line: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.edition, self.key, self.line = edition, key, line

    def runtest(self) -> None:
        from coursebook.verify.chapter_checks import compared_account, patterns_alone
        from coursebook.verify.expectations import ACCEPT_COMMAND

        chapter: ChapterFile = self.parent
        if chapter.expectations is None:
            raise CellFailed(
                f"no expected outputs for this torch version ({chapter.expectations_path} is "
                f"missing): accept them with `{ACCEPT_COMMAND}`")
        mismatches, outputs = chapter.compared(self.edition)
        if self.key in mismatches:
            raise CellFailed(f"{mismatches[self.key].diff(chapter.expectations_path)}\n"
                             f"If the new output is right: `{ACCEPT_COMMAND}`.")
        if self.key not in outputs:  # the cached run is not this chapter's: never a pass
            raise CellFailed(f"is not in its chapter's cached run ({self.edition.value}): "
                             f"clear the cache with `{CLEAN_CACHE_COMMAND}`")
        alone = patterns_alone(chapter.expectations, self.edition.value)
        if not outputs[self.key].compared or self.key in alone:  # as the summary: never a pass
            _, left = compared_account([outputs[self.key]], [], alone)
            pytest.skip(f"{self.path.name} ({self.edition.value}): {left[2:]}")

    def repr_failure(self, excinfo, style=None) -> str:
        if isinstance(excinfo.value, CellFailed):
            return f"{self.path.name}:{self.line}: code cell {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, self.line - 1 if self.line else None, self.name
