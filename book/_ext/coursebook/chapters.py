"""From a chapter file on disk to the notebook an edition executes."""

from __future__ import annotations

import hashlib
import platform
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import nbformat
from sphinx.application import Sphinx
from sphinx.util import logging

from .editions import (RAISES_TAG, Edition, edition_notebook, hidden_raises_cells,
                       is_chapter_source, notebook_to_myst, read_chapter, stamp_environment)
from .museum import ExhibitError, link_back_from_pt01, load_museum, place_museum
from .records import RecordError, attach_records, cache_recorded_outputs, load_records, records_name

logger = logging.getLogger(__name__)

# Set on a page whose chapter failed, so that the next build reads it (and fails) again.
FAILED_KEY = "coursebook_failed"


class ChapterFormatError(Exception):
    """A chapter whose tags contradict each other; the build logs it as an error."""


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


@dataclass(frozen=True)
class PreparedChapter:
    """This edition's notebook and, for a recorded chapter, its recorded outputs."""

    notebook: nbformat.NotebookNode
    recorded: nbformat.NotebookNode | None = None


def edition_chapter(text: str, source_path: str, edition: Edition, exhibits_dir: Path,
                    torch_version: str, md_config=None) -> nbformat.NotebookNode:
    """A chapter's notebook for one edition, exhibits placed: what a builder executes."""
    notebook = read_chapter(text, md_config)
    museum = load_museum(exhibits_dir)
    place_museum(notebook, museum, torch_version)
    link_back_from_pt01(notebook, museum)
    hidden = hidden_raises_cells(notebook)
    if hidden:
        raise ChapterFormatError(
            f"{source_path}: a `{RAISES_TAG}` cell must show its error, but these cells also "
            f"hide their output (remove-cell/remove-output): {hidden}. Drop one of the tags.")
    return edition_notebook(notebook, edition)


def prepare_chapter(app: Sphinx, text: str, source_path: str) -> PreparedChapter:
    """The notebook this build's edition runs: answers dealt with, environment stamped.

    Several hooks ask for the same chapter during one build; it is prepared once.
    """
    prepared: dict = app.__dict__.setdefault("_coursebook_prepared", {})
    key = (source_path, _digest(text))
    if key not in prepared:
        prepared[key] = _prepare(app, text, source_path)
    return prepared[key]


def _prepare(app: Sphinx, text: str, source_path: str) -> PreparedChapter:
    notebook = edition_chapter(text, source_path, edition_of(app),
                               Path(app.config.coursebook_exhibits_dir),
                               app.config.coursebook_environment["torch"],
                               getattr(app.env, "myst_config", None))
    name = records_name(notebook)
    if name is None:
        stamp_environment(notebook, app.config.coursebook_environment)
        return PreparedChapter(notebook)
    # A recorded chapter carries the environment it ran in as its records' provenance.
    records = load_records(Path(app.config.coursebook_records_dir), name)
    labelled, recorded = attach_records(notebook, records,
                                        app.config.coursebook_allow_stale_records)
    return PreparedChapter(labelled, recorded)


def chapter_notebook(app: Sphinx, docname: str) -> nbformat.NotebookNode | None:
    """This edition's notebook for a page, or None when the page is not a chapter."""
    path = Path(app.env.doc2path(docname))
    if path.suffix != ".md":
        return None
    text = path.read_text(encoding="utf8")
    return prepare_chapter(app, text, str(path)).notebook if is_chapter_source(text) else None


def render_edition_source(app: Sphinx, docname: str, source: list[str]) -> None:
    """``source-read``: hand myst-nb this edition's chapter instead of the file's text."""
    if not is_chapter_source(source[0]):
        return
    path = str(app.env.doc2path(docname))
    try:
        prepared = prepare_chapter(app, source[0], path)
    except (ChapterFormatError, ExhibitError, RecordError) as error:
        logger.error("%s", error, location=docname, type="coursebook", subtype="source")
        app.env.metadata[docname][FAILED_KEY] = True
        source[0] = f"# {docname}\n\nThis page could not be built: see the build log.\n"
        return
    if prepared.recorded is not None:
        cache_recorded_outputs(app.config.nb_execution_cache_path, path, prepared.recorded)
    source[0] = notebook_to_myst(prepared.notebook)
    app.env.metadata[docname][SOURCE_HASH_KEY] = _digest(source[0])


SOURCE_HASH_KEY = "coursebook_source_hash"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf8")).hexdigest()


def reread_changed_chapters(app: Sphinx, env, added, changed, removed) -> list[str]:
    """``env-get-outdated``: re-read a chapter whose edition text changed, file untouched.

    An exhibit, a torch version or the extension can change what a chapter becomes
    while its file stays the same; Sphinx alone would keep the old page.
    """
    outdated = []
    for docname in sorted(env.found_docs - set(added) - set(changed)):
        stored = env.metadata.get(docname, {}).get(SOURCE_HASH_KEY)
        if stored is None:
            continue
        try:
            current = chapter_notebook(app, docname)
        except (ChapterFormatError, ExhibitError, RecordError):
            current = None  # reading it again reports the problem
        if current is None or _digest(notebook_to_myst(current)) != stored:
            outdated.append(docname)
    return outdated
