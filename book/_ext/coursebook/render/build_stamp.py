"""The instructor edition's footer stamp: the torch that executed the page, the commit,
the date, so that an instructor with a student's question can tell which build a page
comes from. A student's footer has none: the build is not the subject.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx

from coursebook.config import book_config
from coursebook.model.provenance import NOT_IN_GIT, source_commit
from coursebook.page_state import page_states
from coursebook.prepare.chapters import edition_of
from coursebook.prepare.editions import Edition


def add_build_stamp(app: Sphinx, pagename: str, templatename: str, context: dict,
                    doctree) -> None:
    """``html-page-context``: for the footer template ``build-stamp.html``."""
    if app.builder.format != "html" or edition_of(app) is not Edition.INSTRUCTOR:
        return
    date = book_config(app.config).build_date
    commit = source_commit(Path(app.srcdir))
    chapter = page_states(app.env).get(pagename) if doctree is not None else None
    # None: not a chapter; no notebook: a failed one (reported when it was read)
    executed = "" if chapter is None or chapter.notebook is None else (
        chapter.recorded_with or f"Executed with torch {book_config(app.config).torch}")
    source = f"commit {commit}" if commit != NOT_IN_GIT else NOT_IN_GIT
    built = f"built from {source} on {date}"
    context["coursebook_stamp"] = (f"{executed}; {built}." if executed else
                                   built[0].upper() + built[1:] + ".")
