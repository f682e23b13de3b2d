"""The build stamp in each page's footer: the torch that executed the page, the commit, the date.

A reader (or an instructor with a student's question) can tell which build a page comes
from. The commit is the source tree's (``GITHUB_SHA`` on GitHub Actions, else ``git``),
marked when the tree had uncommitted changes; a copy outside git says so.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx

from coursebook.prepare.chapters import PREPARATION_ERRORS, prepared_notebook
from coursebook.model.recordings import chapter_recordings
from coursebook.config import book_config
from coursebook.model.provenance import NOT_IN_GIT, source_commit

def executed_with(app: Sphinx, pagename: str) -> str:
    """Which torch produced the outputs of a page ("" for a page without code)."""
    notebook = prepared_notebook(app, pagename)  # a failed chapter was reported when read
    if notebook is None:
        return ""
    try:
        config = book_config(app.config)
        recordings = chapter_recordings(notebook, config.machine_kinds, Path(config.recordings_dir))
    except PREPARATION_ERRORS:
        return ""  # the build has already reported it
    if recordings is None:
        return f"Executed with torch {config.torch}"
    runs = "; ".join(recording.summary() for recording in recordings)
    return f"Outputs recorded with {runs}"


def add_build_stamp(app: Sphinx, pagename: str, templatename: str, context: dict,
                    doctree) -> None:
    """``html-page-context``: the stamp the footer template ``build-stamp.html`` shows."""
    if app.builder.format != "html":
        return
    commit, date = source_commit(Path(app.srcdir)), book_config(app.config).build_date
    executed = executed_with(app, pagename) if doctree is not None else ""
    built = f"built from commit {commit} on {date}" if commit != NOT_IN_GIT else \
        f"built from {NOT_IN_GIT} on {date}"
    context["coursebook_stamp"] = (f"{executed}; {built}." if executed else
                                   built[0].upper() + built[1:] + ".")
