"""Chapters executed into the cache without a build, exactly as a build would execute them.

pytest's chapter items and the execution shards (``tools/shards.py``) prepare a chapter
as a build does (this edition's notebook, the execution versions in its key, read back
as myst-nb reads it), so its cache key is the one a build looks up; they execute what a
build of that edition executes (the pages Sphinx reads, myst-nb's settings for each), as
myst-nb's cache mode does (:func:`coursebook.execute.notebook_runs.run_chapter`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat

from coursebook.config import BookConfig
from coursebook.execute.cache_key import environment_versions, key_execution_versions
from coursebook.execute.notebook_runs import chapter_settings, run_chapter
from coursebook.execute.shared_cache import cache_run, cached_notebook, create_cache, notebook_lock
from coursebook.model.faults import shown_path
from coursebook.model.notebooks import notebook_to_myst, read_chapter
from coursebook.prepare.editions import Edition

if TYPE_CHECKING:
    from myst_nb.core.config import NbParserConfig
    from sphinx.util.tags import Tags


class ExecutionFailed(Exception):
    """The notebook did not execute to its end; it is not cached."""


def read_conf(conf_dir: Path, tags: Tags | None = None) -> dict:
    """conf.py's names, as Sphinx evaluates the file (no tags set unless given)."""
    from sphinx.config import eval_config_file
    from sphinx.util.tags import Tags

    return eval_config_file(conf_dir / "conf.py", tags or Tags())


def _mystnb_config(namespace: dict) -> NbParserConfig:
    """myst-nb's settings as conf.py gives them (myst_nb.sphinx_ext.create_mystnb_config)."""
    from myst_nb.core.config import NbParserConfig

    names = {f"nb_{name}": name for name, _, item in NbParserConfig().as_triple()
             if not item.metadata.get("sphinx_exclude")}
    return NbParserConfig(**{names[key]: value for key, value in namespace.items() if key in names})


@dataclass
class ConfValues:
    """What conf.py says about execution: the book's config and cache; per edition (its
    tags), myst-nb's settings and the patterns of the pages Sphinx reads."""

    book: BookConfig
    versions: dict[str, str]
    cache_path: str
    mystnb: dict[Edition, NbParserConfig]
    patterns: dict[Edition, tuple[list[str], list[str]]]  # exclude_patterns, include_patterns

    @classmethod
    def read(cls, conf_dir: Path) -> ConfValues:
        from sphinx.util.tags import Tags

        namespaces = {edition: read_conf(conf_dir, Tags(
            ["instructor"] if edition is Edition.INSTRUCTOR else [])) for edition in Edition}
        namespace = namespaces[Edition.STUDENT]
        book = BookConfig.from_namespace(namespace)
        return cls(book, environment_versions(book.execution_packages,
                                              shown_path(conf_dir / "conf.py")),
                   namespace["nb_execution_cache_path"],
                   {edition: _mystnb_config(names) for edition, names in namespaces.items()},
                   {edition: (names.get("exclude_patterns", []),
                              names.get("include_patterns", ["**"]))
                    for edition, names in namespaces.items()})

    def reads(self, edition: Edition, path: Path, book_dir: Path) -> bool:
        """Whether that edition's build reads the page at ``path`` (else it never prepares it)."""
        from sphinx.project import Project

        project = Project(book_dir.resolve(), [path.suffix])
        return project.path2doc(path.resolve()) in project.discover(*self.patterns[edition])

    def execution(self, edition: Edition, notebook: nbformat.NotebookNode,
                  path: Path) -> NbParserConfig | None:
        """myst-nb's settings for this edition's notebook of a page its build reads; None
        when myst-nb would not run it from the cache."""
        return chapter_settings(self.mystnb[edition], notebook, str(path.resolve()))


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
                       source_path: Path, settings: NbParserConfig
                       ) -> tuple[nbformat.NotebookNode, float | None]:
    """The notebook with its outputs: from the cache, or executed once with myst-nb's
    ``settings`` and cached. Also the seconds it took to execute (None: from the cache)."""
    create_cache(cache_path)
    with notebook_lock(cache_path, notebook):  # a build may run it too
        executed = cached_notebook(str(cache_path), notebook)
        if executed is not None:
            return executed, None
        result, _ = run_chapter(notebook, str(source_path), settings)
        if result.err is not None:
            raise ExecutionFailed(f"failed to execute: {type(result.err).__name__}; build it "
                                  "for the cell-by-cell report")
        cache_run(cache_path, notebook, str(source_path), {"execution_seconds": result.time})
        return notebook, result.time
