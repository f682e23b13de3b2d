"""From a chapter file on disk to the notebook an edition executes."""

from __future__ import annotations

import platform
from importlib import metadata
from pathlib import Path

import nbformat
from sphinx.application import Sphinx
from sphinx.errors import SphinxError

from .editions import (RAISES_TAG, Edition, edition_notebook, is_chapter_source,
                       notebook_to_myst, read_chapter, stamp_environment)
from .verify import hidden_raises_cells


class ChapterFormatError(SphinxError):
    category = "Chapter source is malformed"


def edition_of(app: Sphinx) -> Edition:
    return Edition.from_tags(app.tags)


def environment_versions(packages: list[str]) -> dict[str, str]:
    """The versions that decide what the cells print, for the execution cache key."""
    versions = {"python": platform.python_version()}
    versions.update({name: metadata.version(name) for name in packages})
    return versions


def record_environment(app: Sphinx, config) -> None:
    """``config-inited``: the versions become a config value, so a change re-reads every page."""
    config.coursebook_environment = environment_versions(config.coursebook_environment_packages)


def prepare_chapter(app: Sphinx, text: str, source_path: str) -> nbformat.NotebookNode:
    """The notebook this build's edition runs: answers dealt with, environment stamped."""
    notebook = read_chapter(text, getattr(app.env, "myst_config", None))
    hidden = hidden_raises_cells(notebook)
    if hidden:
        raise ChapterFormatError(
            f"{source_path}: a `{RAISES_TAG}` cell must show its error, but these cells also "
            f"hide their output (remove-cell/remove-output): {hidden}. Drop one of the tags.")
    notebook = edition_notebook(notebook, edition_of(app))
    stamp_environment(notebook, app.config.coursebook_environment)
    return notebook


def chapter_notebook(app: Sphinx, docname: str) -> nbformat.NotebookNode | None:
    """This edition's notebook for a page, or None when the page is not a chapter."""
    path = Path(app.env.doc2path(docname))
    if path.suffix != ".md":
        return None
    text = path.read_text(encoding="utf8")
    return prepare_chapter(app, text, str(path)) if is_chapter_source(text) else None


def render_edition_source(app: Sphinx, docname: str, source: list[str]) -> None:
    """``source-read``: hand myst-nb this edition's chapter instead of the file's text."""
    if not is_chapter_source(source[0]):
        return
    notebook = prepare_chapter(app, source[0], str(app.env.doc2path(docname)))
    source[0] = notebook_to_myst(notebook)
