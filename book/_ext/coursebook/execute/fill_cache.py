"""Chapters executed into the cache without a build, exactly as a build would execute them.

pytest's chapter items and the execution shards (``tools/shards.py``) prepare a chapter
as a build does (this edition's notebook, the execution versions in its key, read back
as myst-nb reads it), so its cache key is the one a build looks up; and they execute it
as myst-nb's cache mode does (in the chapter's folder, its run time in the record).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat

from coursebook.config import BookConfig
from coursebook.execute.cache_key import environment_versions, key_execution_versions
from coursebook.execute.notebook_runs import TIMEOUT_KEY, run_notebook
from coursebook.execute.shared_cache import cache_run, cached_notebook, create_cache, notebook_lock
from coursebook.model.faults import shown_path
from coursebook.model.notebooks import notebook_to_myst, read_chapter
from coursebook.prepare.editions import Edition

if TYPE_CHECKING:
    from sphinx.util.tags import Tags


class ExecutionFailed(Exception):
    """The notebook did not execute to its end; it is not cached."""


def read_conf(conf_dir: Path, tags: Tags | None = None) -> dict:
    """conf.py's names, as Sphinx evaluates the file (no tags set unless given)."""
    from sphinx.config import eval_config_file
    from sphinx.util.tags import Tags

    return eval_config_file(conf_dir / "conf.py", tags or Tags())


@dataclass
class ConfValues:
    """What conf.py says about execution: the book's config, the cache and its timeout."""

    book: BookConfig
    versions: dict[str, str]
    cache_path: str
    timeout: int

    @classmethod
    def read(cls, conf_dir: Path) -> ConfValues:
        namespace = read_conf(conf_dir)
        book = BookConfig.from_namespace(namespace)
        return cls(book, environment_versions(book.execution_packages,
                                              shown_path(conf_dir / "conf.py")),
                   namespace["nb_execution_cache_path"], namespace.get("nb_execution_timeout", 300))


def notebook_to_execute(text: str, source_path: Path, edition: Edition,
                        conf: ConfValues) -> nbformat.NotebookNode:
    """The notebook a build of this edition hands to myst-nb, read back as myst-nb does."""
    from coursebook.prepare.chapters import edition_chapter

    notebook = edition_chapter(text, str(source_path), edition, conf.book.museum(),
                               conf.versions["torch"], machine_kinds=conf.book.machine_kinds,
                               runtimes_file=conf.book.runtimes_file)
    key_execution_versions(notebook, conf.versions)
    return read_chapter(notebook_to_myst(notebook))


def execute_into_cache(cache_path: str | Path, notebook: nbformat.NotebookNode,
                       source_path: Path, timeout: int) -> tuple[nbformat.NotebookNode, float | None]:
    """The notebook with its outputs: from the cache, or executed once and cached. Also the
    seconds it took to execute (None: taken from the cache)."""
    create_cache(cache_path)
    with notebook_lock(cache_path, notebook):  # a build may run it too
        executed = cached_notebook(str(cache_path), notebook)
        if executed is not None:
            return executed, None
        # As a build runs it: its top matter's time limit, the same cut of long outputs, a
        # dead kernel no crash.
        timeout = notebook.metadata.get("mystnb", {}).get(TIMEOUT_KEY, timeout)
        result, _ = run_notebook(notebook, cwd=str(source_path.parent), timeout=timeout,
                                 allow_errors=False, meta_override=True)
        if result.err is not None:
            raise ExecutionFailed(f"failed to execute: {type(result.err).__name__}; build it "
                                  "for the cell-by-cell report")
        cache_run(cache_path, notebook, str(source_path), {"execution_seconds": result.time})
        return notebook, result.time
