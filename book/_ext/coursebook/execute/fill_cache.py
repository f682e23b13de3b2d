"""What a build of each edition executes, as Sphinx reads the book (:func:`read_book`,
with :class:`ChapterRuns`, a builder that notes each run instead of running it, as
``sphinx.ext.doctest`` runs as a builder): nothing else reads conf.py, tags or myst-nb's
settings. Those chapters run into a cache without a build (shards, ``pytest book``); the
merge checks the shards against the book as the build prepares it now.
"""

from __future__ import annotations

import copy
import io
import json
import logging
import os
import statistics
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import TYPE_CHECKING

import nbformat
from sphinx.builders.dummy import DummyBuilder
from sphinx.util import logging as sphinx_logging

from coursebook.config import BookConfig, book_config
from coursebook.execute.notebook_runs import StoppedRun, run_notebook
from coursebook.execute.shared_cache import (FAILED, cache_key, cache_run, cached_record,
                                             create_cache, notebook_lock, open_cache,
                                             with_notes)
from coursebook.model.cell_notes import without_notes
from coursebook.model.faults import shown_path
from coursebook.model.notebooks import RAISES_TAG, cell_tags
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
    """A chapter as a build runs it: the notebook myst-nb reads, myst-nb's settings for it."""

    path: Path
    notebook: nbformat.NotebookNode
    settings: NbParserConfig


class ChapterRuns(DummyBuilder):
    """Its :attr:`runs` noted by the chapter client (execute/cached_chapters.py)."""

    name = "chapter_runs"
    epilog = "Read the book as a build does; noted the chapters it runs, ran none."
    # Sphinx's tag for this builder, known before it exists: setup starts no kernel server.
    tag = f"builder_{name}"

    def init(self) -> None:
        self.runs: dict[str, Run] = {}


def chapter_runs(app: Sphinx) -> ChapterRuns | None:
    """The builder noting runs, when this read is one; None in a build."""
    return app.builder if isinstance(app.builder, ChapterRuns) else None


@dataclass
class BookRead:
    book: BookConfig  # as the build resolves it: execution versions
    cache_path: str  # the execution cache's folder, as myst-nb resolved it
    runs: dict[Path, Run]  # the chapters it executes, by resolved source file
    failed: dict[Path, str]  # the pages it read that did not prepare: the build's one line


class _PageErrors(logging.Handler):
    """The errors logged while each page is read, worded as Sphinx's warning stream words
    them; every one (the stream shows an error once, however many pages meet it)."""

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
    """Sphinx's application of the book in ``srcdir`` (conf.py in ``confdir``) for
    ``edition``, ``settings`` as -D: set up as its build is, with :class:`ChapterRuns`."""
    from sphinx.application import Sphinx
    from sphinx.util.console import strip_escape_sequences
    from sphinx.util.docutils import docutils_namespace, patch_docutils

    log = io.StringIO()
    tags = [ChapterRuns.tag, *([edition.value] if edition is Edition.INSTRUCTOR else [])]
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
    """Builds' and shards' one way to run a chapter (its key's lock held), with myst-nb's
    settings for it, into the cache, unless cached (a failed run a stopped build left runs
    again). None: cached; else the run's result, where it stopped, its record: a failed
    run's is marked, and made only if ``keep_failed`` (a build's myst-nb reads it back)."""
    record = cached_record(cache_path, run.notebook)
    if record is not None and not record.data.get(FAILED):
        return None
    if record is not None:
        open_cache(cache_path).remove_cache(record.pk)
    settings = run.settings
    logger.info("Executing notebook using %s CWD",
                "temporary" if settings.execution_in_temp else "local", location=location)
    with (TemporaryDirectory() if settings.execution_in_temp
          else nullcontext(str(run.path.parent))) as cwd:
        result, stopped = run_notebook(
            run.notebook, cwd=os.path.abspath(cwd), timeout=settings.execution_timeout,
            allow_errors=settings.execution_allow_errors, meta_override=True)
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
    """The run's notebook with its outputs, from the cache or executed into it; and the
    seconds it took to execute (None: cached)."""
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


MANIFEST = "shard.json"


class ShardError(Exception):
    """A shard that cannot be executed or merged; the message says why and what to run."""


@dataclass(frozen=True)
class Shard:
    index: int  # from 1
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        try:
            index, count = (int(part) for part in text.split("/"))
        except ValueError:
            index = count = 0
        if not 1 <= index <= count:
            raise ShardError(f"a shard is I/N with 1 <= I <= N (say SHARD=2/3), not {text!r}")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def folder(self, root: Path) -> Path:
        return root / f"shard-{self.index}"

    def cache(self, root: Path) -> Path:
        return self.folder(root) / ".jupyter_cache"

    @property
    def command(self) -> str:
        return f"make execute SHARD={self}"


@dataclass
class Chapter:
    """A chapter that executes: its distinct notebooks (editions sharing code run once)."""

    name: str
    path: Path
    notebooks: dict[str, Run] = field(default_factory=dict)  # by cache key


def book_reads(book_dir: Path, conf_dir: Path) -> dict[Edition, BookRead]:
    """Sphinx's read of the book for each edition; a page that does not prepare stops it."""
    reads = {edition: read_book(book_dir, conf_dir, edition) for edition in Edition}
    for read in reads.values():
        for message in read.failed.values():
            raise ShardError(message)
    return reads


def chapters_to_execute(reads: dict[Edition, BookRead]) -> list[Chapter]:
    chapters: dict[Path, Chapter] = {}
    for read in reads.values():
        for path, run in read.runs.items():
            chapter = chapters.setdefault(path, Chapter(path.stem, path))
            chapter.notebooks.setdefault(cache_key(read.cache_path, run.notebook), run)
    return sorted(chapters.values(), key=lambda chapter: chapter.name)


def deal(chapters: list[Chapter], count: int, seconds: dict[str, float]) -> dict[str, int]:
    """Each chapter's shard (from 1): longest first to the least loaded; by count when
    nothing was recorded (a chapter not recorded weighs the recorded mean)."""
    known = [seconds[c.name] for c in chapters if c.name in seconds]
    mean = statistics.mean(known) if known else 1.0
    weight = {c.name: seconds.get(c.name, mean) * len(c.notebooks) if known else 1.0
              for c in chapters}
    load = [0.0] * count
    shards = {}
    for chapter in sorted(chapters, key=lambda c: (-weight[c.name], c.name)):
        index = min(range(count), key=lambda i: (load[i], i))
        load[index] += weight[chapter.name]
        shards[chapter.name] = index + 1
    return shards


def _copy_notebook(source, record, target: Path) -> None:
    """A cached notebook and its data, from one cache to another (the book caches no artifacts)."""
    cache_run(target, source.get_cache_bundle(record.pk).nb, record.uri, dict(record.data or {}))


def execute_shard(chapters: list[Chapter], versions: dict[str, str], shard: Shard, root: Path,
                  history: Path, reuse: Path | None = None) -> dict[str, float]:
    """Execute the shard's chapters into its cache (dealt by the times ``history``, a cache,
    recorded), taking what ``reuse`` holds; write its manifest. The seconds per chapter."""
    runs: dict[str, list[float]] = {}  # each chapter's recorded runs
    if (history / "global.db").is_file():
        for record in open_cache(history).list_cache_records():
            if (record.data or {}).get("execution_seconds") is not None:
                runs.setdefault(Path(record.uri).stem, []).append(
                    float(record.data["execution_seconds"]))
    shards = deal(chapters, shard.count, {name: statistics.mean(t) for name, t in runs.items()})
    mine = [c for c in chapters if shards[c.name] == shard.index]
    cache = shard.cache(root)
    reusable = reuse is not None and (reuse / "global.db").is_file()
    seconds: dict[str, float] = {}
    for chapter in mine:
        seconds[chapter.name] = 0.0
        for run in chapter.notebooks.values():
            record = cached_record(reuse, run.notebook) if reusable else None
            if record is None:
                seconds[chapter.name] += execute_into_cache(cache, run)[1] or 0.0
            else:
                create_cache(cache)
                _copy_notebook(open_cache(reuse), record, cache)
        print(f"shard {shard}: {chapter.name}: {len(chapter.notebooks)} notebooks, "
              f"{seconds[chapter.name]:.1f} s executing")
    create_cache(cache)  # a shard dealt no chapter still hands over an (empty) cache
    manifest = {"shard": str(shard), "versions": versions,
                "chapters": {c.name: sorted(c.notebooks) for c in mine}, "seconds": seconds}
    (shard.folder(root) / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return seconds


def merge_shards(chapters: list[Chapter], torch: str, count: int, root: Path,
                 target: Path) -> int:
    """Check the shards' caches against the book's ``chapters`` as built now (with this
    ``torch``), then merge them into ``target``. The number of notebooks merged."""
    shards = [Shard(index, count) for index in range(1, count + 1)]
    for shard in shards:
        cache = shard.cache(root)
        if not (shard.folder(root) / MANIFEST).is_file() or not (cache / "global.db").is_file():
            raise ShardError(f"shard {shard}'s cache is missing: {shown_path(cache)} (with "
                             f"{MANIFEST} beside it) should hold what it executed. Run "
                             f"`{shard.command}` (in CI: its execute job uploads it).")
    manifests = {shard: json.loads((shard.folder(root) / MANIFEST).read_text()) for shard in shards}
    for shard, manifest in manifests.items():
        if manifest["shard"] != str(shard):
            raise ShardError(f"{shown_path(shard.folder(root) / MANIFEST)} is shard "
                             f"{manifest['shard']}'s, not shard {shard}'s: the shards were dealt "
                             f"for another count. Run `{shard.command}`.")
        if manifest["versions"].get("torch") != torch:
            raise ShardError(f"shard {shard} executed its chapters with torch "
                             f"{manifest['versions'].get('torch')}; this build has torch {torch}, "
                             f"so their outputs cannot be verified here. Run `{shard.command}` "
                             f"with torch {torch} (or build with the shards' torch).")
    owner: dict[str, Shard] = {}
    for shard, manifest in manifests.items():
        for name in manifest["chapters"]:
            if name in owner:
                raise ShardError(f"two shards executed chapter {name}: shard {owner[name]} and "
                                 f"shard {shard}. Each must be run for the same count from the "
                                 f"same record: run `{owner[name].command}` and `{shard.command}` "
                                 "again.")
            owner[name] = shard
    caches = {shard: open_cache(shard.cache(root)) for shard in shards}
    records = {shard: {r.hashkey: r for r in cache.list_cache_records()}
               for shard, cache in caches.items()}
    for chapter in chapters:
        shard = owner.get(chapter.name)
        if shard is None:
            raise ShardError(f"no shard executed chapter {chapter.name} "
                             f"({shown_path(chapter.path)}): the shards were dealt for other "
                             f"chapters. Run every `make execute SHARD=I/{count}` again.")
        if any(key not in records[shard] for key in chapter.notebooks):
            raise ShardError(f"shard {shard} executed another version of chapter {chapter.name}: "
                             f"{shown_path(chapter.path)} as the build prepares it now is not in "
                             f"its cache (edited since, or another exhibit or extension). "
                             f"Run `{shard.command}` again.")
    create_cache(target)
    for chapter in chapters:
        for key in chapter.notebooks:
            _copy_notebook(caches[owner[chapter.name]], records[owner[chapter.name]][key], target)
    return sum(len(chapter.notebooks) for chapter in chapters)
