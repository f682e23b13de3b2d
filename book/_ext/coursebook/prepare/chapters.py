"""From a chapter file on disk to the notebook an edition executes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat
from sphinx.application import Sphinx
from sphinx.util import logging

from coursebook.prepare.answer_space import with_answer_spaces
from coursebook.execute.cache_locks import hold_notebook_lock, notebook_lock
from coursebook.prepare.editions import Edition, edition_notebook, hidden_raises_cells
from coursebook.execute.cache_key import (FAILED_KEY, SOURCE_HASH_KEY, chapter_inputs_digest,
                            outdated_chapters, source_digest, key_execution_versions)
from coursebook.execute.input_digests import remember, unchanged
from coursebook.model.machine_kinds import environments_path, load_environments
from coursebook.model.faults import BookError
from coursebook.model.museum import Wing, link_back_to_exhibits, place_museum
from coursebook.model.notebooks import RAISES_TAG, is_chapter_source, line_of, notebook_to_myst, read_chapter
from coursebook.model.recordings import (RecordingError, attach_recordings, cache_recorded_outputs,
                         load_recordings, recorded_chapter, recording_name)
from coursebook.config import book_config


logger = logging.getLogger(__name__)

class ChapterFormatError(BookError):
    """A chapter whose tags contradict each other; the build logs it as an error."""


# What preparing a chapter can raise (an exhibit, a recording, the chapter's own tags):
# each says where it is, and is logged once, where the page is read.
PREPARATION_ERRORS = (BookError,)


# The step that compares each chapter's edition text with the text it was last read from.
_CHAPTER_INPUTS = "chapter-inputs"


def edition_of(app: Sphinx) -> Edition:
    return Edition.from_tags(app.tags)


@dataclass(frozen=True)
class PreparedChapter:
    """This edition's notebook and, for a recorded chapter, its recorded outputs."""

    notebook: nbformat.NotebookNode
    recorded: nbformat.NotebookNode | None = None


def edition_chapter(text: str, source_path: str, edition: Edition, museum: dict[str, Wing],
                    torch_version: str, md_config=None,
                    answer_spaces: bool = False) -> nbformat.NotebookNode:
    """A chapter's notebook for one edition, exhibits placed: what a machine executes.

    ``answer_spaces``: the student handout's boxes where answers were (markdown only, so
    the same cached outputs serve it).
    """
    notebook = read_chapter(text, md_config)
    place_museum(notebook, museum, torch_version)
    link_back_to_exhibits(notebook, museum)
    hidden = hidden_raises_cells(notebook)
    if hidden:
        raise ChapterFormatError(
            f"a `{RAISES_TAG}` cell must show its error, but these cells also hide their "
            f"output (remove-cell/remove-output): {hidden}. Drop one of the tags.",
            source_path, line_of(hidden[0], text))
    if answer_spaces and edition is Edition.STUDENT:
        return with_answer_spaces(notebook)
    return edition_notebook(notebook, edition)


def prepare_chapter(app: Sphinx, text: str, source_path: str) -> PreparedChapter:
    """The notebook this build's edition runs: answers dealt with, environment stamped.

    Several hooks ask for the same chapter during one build; it is prepared once (and a
    chapter that cannot be prepared fails once: the same error is raised again).
    """
    prepared: dict = app.__dict__.setdefault("_coursebook_prepared", {})
    key = (source_path, source_digest(text))
    if key not in prepared:
        try:
            prepared[key] = _prepare(app, text, source_path)
        except PREPARATION_ERRORS as error:
            prepared[key] = error
    if isinstance(prepared[key], BookError):
        raise prepared[key]
    return prepared[key]


def _prepare(app: Sphinx, text: str, source_path: str) -> PreparedChapter:
    config = book_config(app.config)
    notebook = edition_chapter(text, source_path, edition_of(app), config.museum(), config.torch,
                               getattr(app.env, "myst_config", None), config.answer_space)
    chapter = recorded_chapter(notebook, config.machine_kinds, source_path)
    if chapter is None:
        key_execution_versions(notebook, config.execution_versions)
        return PreparedChapter(notebook)
    # A recorded chapter carries the environment it ran in as its recordings' provenance.
    recordings_dir = Path(config.recordings_dir)
    pinned = load_environments(environments_path(recordings_dir, chapter.name), config.machine_kinds)
    try:
        attached = attach_recordings(notebook, chapter, load_recordings(recordings_dir, chapter),
                                     config.allow_stale_recordings, pinned)
    except RecordingError as error:
        if not error.cell:
            raise
        # A changed cell: located in the chapter.
        raise RecordingError(error.message, source_path, line_of(error.cell, text)) from None
    for kind, lines in attached.drift.items():
        for line in lines:
            logger.info("%s: environment drift in the %s recording: %s", source_path, kind, line)
    return PreparedChapter(attached.labelled, attached.executed)


def chapter_notebook(app: Sphinx, docname: str) -> nbformat.NotebookNode | None:
    """This edition's notebook for a page, or None when the page is not a chapter.

    Raises the chapter's preparation error, if any; :func:`prepared_notebook` does not.
    """
    path = Path(app.env.doc2path(docname))
    if path.suffix != ".md":
        return None
    text = path.read_text(encoding="utf8")
    return prepare_chapter(app, text, str(path)).notebook if is_chapter_source(text) else None


def prepared_notebook(app: Sphinx, docname: str) -> nbformat.NotebookNode | None:
    """For hooks after reading: the chapter's notebook, or None (not a chapter, or failed).

    A chapter that could not be prepared was reported when its page was read, and its
    page is a stub; a later phase has nothing to add to it.
    """
    try:
        return chapter_notebook(app, docname)
    except PREPARATION_ERRORS:
        return None


def render_edition_source(app: Sphinx, docname: str, source: list[str]) -> None:
    """``source-read``: hand myst-nb this edition's chapter instead of the file's text."""
    if not is_chapter_source(source[0]):
        return
    path = str(app.env.doc2path(docname))
    try:
        prepared = prepare_chapter(app, source[0], path)
    except PREPARATION_ERRORS as error:
        # An exhibit every chapter loads is reported once, at its own file and line.
        error.report(app, "source", fallback_location=docname)
        app.env.metadata[docname][FAILED_KEY] = True
        source[0] = f"# {docname}\n\nThis page could not be built: see the build log.\n"
        return
    if prepared.recorded is not None:
        with notebook_lock(app.config.nb_execution_cache_path, prepared.recorded):
            cache_recorded_outputs(app.config.nb_execution_cache_path, path, prepared.recorded)
    else:
        hold_notebook_lock(app, prepared.notebook)  # until myst-nb has run and cached it
    source[0] = notebook_to_myst(prepared.notebook)
    app.env.metadata[docname][SOURCE_HASH_KEY] = source_digest(source[0])


def reread_changed_chapters(app: Sphinx, env, added, changed, removed) -> list[str]:
    """``env-get-outdated``: re-read a chapter whose edition text changed, file untouched.

    An exhibit, a recording or the extension can change what a chapter becomes while its
    file stays the same; Sphinx alone would keep the old page. (A new torch changes the
    config, and Sphinx reads every page again.) Preparing each chapter to find out costs
    a warm build about a third of a second, so it is done only when those inputs changed.
    """
    inputs = chapter_inputs_digest(book_config(app.config))
    if unchanged(app, _CHAPTER_INPUTS, inputs):
        return []
    app.__dict__[_CHAPTER_INPUTS] = inputs  # remembered once the outdated pages are read

    def current_source(docname: str) -> str | None:
        if docname in added or docname in changed:
            return None
        try:
            notebook = chapter_notebook(app, docname)
        except PREPARATION_ERRORS:
            return None  # reading it again reports the problem
        return None if notebook is None else notebook_to_myst(notebook)

    return [docname for docname in outdated_chapters(env, current_source)
            if docname not in added and docname not in changed]


def remember_chapter_inputs(app: Sphinx, env) -> None:
    """``env-updated``: the chapters outdated by the inputs compared this build are read."""
    if _CHAPTER_INPUTS in app.__dict__:
        remember(app, _CHAPTER_INPUTS, app.__dict__.pop(_CHAPTER_INPUTS))


def report_unpreparable_chapters(app: Sphinx, env, docnames: list[str]) -> None:
    """``env-before-read-docs``: a chapter that cannot be prepared is reported here, once.

    With ``-j``, the pages are read in processes forked after this: each would report an
    error every chapter shares (a malformed exhibit) again. They inherit the record of
    what was reported, and report nothing twice.
    """
    for docname in docnames:
        try:
            chapter_notebook(app, docname)
        except PREPARATION_ERRORS as error:
            error.report(app, "source", fallback_location=docname)


def spread_chapters_over_readers(app: Sphinx, env, docnames: list[str]) -> None:
    """``env-before-read-docs``: with ``-j``, chapters that execute go to different readers.

    Sphinx hands each reading process a run of consecutive pages (in name order), so two
    chapters side by side would execute one after the other in one process. Each run
    gets one executing chapter before any gets a second.
    """
    if app.parallel < 2 or len(docnames) < 2:
        return
    from sphinx.util.parallel import make_chunks

    def executes(docname: str) -> bool:
        try:
            notebook = chapter_notebook(app, docname)
        except PREPARATION_ERRORS:
            return False  # reading it reports the problem
        return notebook is not None and recording_name(notebook) is None

    chunks = make_chunks(list(range(len(docnames))), app.parallel)
    slots = [(chunk, place) for place in range(max(map(len, chunks)))
             for chunk in range(len(chunks)) if place < len(chunks[chunk])]
    ordered = sorted(docnames, key=lambda docname: not executes(docname))  # stable
    runs: list[list[str]] = [[""] * len(chunk) for chunk in chunks]
    for docname, (chunk, place) in zip(ordered, slots):
        runs[chunk][place] = docname
    docnames[:] = [docname for run in runs for docname in run]
