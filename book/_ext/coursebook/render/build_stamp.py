"""The build stamp in each page's footer: the torch that executed the page, the commit, the date.

A reader (or an instructor with a student's question) can tell which build a page comes
from; the commit is shown in the instructor edition only. The commit is the source tree's
(``GITHUB_SHA`` on GitHub Actions, else ``git``), marked when the tree had uncommitted
changes; a copy outside git says so.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx

from coursebook.config import book_config
from coursebook.model.provenance import NOT_IN_GIT, source_commit
from coursebook.page_state import page_states
from coursebook.prepare.chapters import edition_of
from coursebook.prepare.editions import Edition


def executed_with(app: Sphinx, pagename: str) -> str:
    """Which torch produced the outputs of a page ("" for a page without code)."""
    chapter = page_states(app.env).get(pagename)
    if chapter is None or chapter.notebook is None:
        return ""  # not a chapter, or a failed one (reported when it was read)
    return chapter.recorded_with or f"Executed with torch {book_config(app.config).torch}"


def add_build_stamp(app: Sphinx, pagename: str, templatename: str, context: dict,
                    doctree) -> None:
    """``html-page-context``: the stamp the footer template ``build-stamp.html`` shows."""
    if app.builder.format != "html":
        return
    commit, date = source_commit(Path(app.srcdir)), book_config(app.config).build_date
    executed = executed_with(app, pagename) if doctree is not None else ""
    # The commit is for the course team: students read the date only.
    if edition_of(app) is not Edition.INSTRUCTOR:
        built = f"built on {date}"
    elif commit != NOT_IN_GIT:
        built = f"built from commit {commit} on {date}"
    else:
        built = f"built from {NOT_IN_GIT} on {date}"
    context["coursebook_stamp"] = (f"{executed}; {built}." if executed else
                                   built[0].upper() + built[1:] + ".")
