"""The build stamp in each page's footer: the torch that executed the page, the commit, the date.

A reader (or an instructor with a student's question) can tell which build a page comes
from; the commit is shown in the instructor edition only. The commit is the source tree's (``GITHUB_SHA`` on GitHub Actions, else ``git``),
marked when the tree had uncommitted changes; a copy outside git says so.
"""

from __future__ import annotations

import datetime
import os
import subprocess
from pathlib import Path

from sphinx.application import Sphinx

from .chapters import PREPARATION_ERRORS, prepared_notebook
from .editions import Edition
from .recordings import chapter_recordings

NOT_IN_GIT = "a copy outside git"


def source_commit(srcdir: Path) -> str:
    """The commit the book is built from, ``+ local changes`` when tracked files differ from it."""
    if os.environ.get("GITHUB_SHA"):
        return os.environ["GITHUB_SHA"][:12]

    def git(*arguments: str) -> str:
        done = subprocess.run(["git", "-C", str(srcdir), *arguments], capture_output=True,
                              text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short=12", "HEAD")
    if not commit:
        return NOT_IN_GIT
    changed = git("status", "--porcelain", "--untracked-files=no")
    return commit + (" + local changes" if changed else "")


def set_build_stamp(app: Sphinx) -> None:
    """``builder-inited``: the commit and date, once per build."""
    app.coursebook_build = (source_commit(Path(app.srcdir)),
                            datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"))


def executed_with(app: Sphinx, pagename: str) -> str:
    """Which torch produced the outputs of a page ("" for a page without code)."""
    notebook = prepared_notebook(app, pagename)  # a failed chapter was reported when read
    if notebook is None:
        return ""
    try:
        recordings = chapter_recordings(notebook, Path(app.config.coursebook_builders_file),
                                        Path(app.config.coursebook_recordings_dir))
    except PREPARATION_ERRORS:
        return ""  # the build has already reported it
    if recordings is None:
        return f"Executed with torch {app.config.coursebook_execution_environment['torch']}"
    runs = "; ".join(recording.summary() for recording in recordings)
    return f"Outputs recorded with {runs}"


def add_build_stamp(app: Sphinx, pagename: str, templatename: str, context: dict,
                    doctree) -> None:
    """``html-page-context``: the stamp the footer template ``build-stamp.html`` shows."""
    if app.builder.format != "html":
        return
    commit, date = app.coursebook_build
    executed = executed_with(app, pagename) if doctree is not None else ""
    # The commit is for the course team: students read the date only.
    if Edition.from_tags(app.tags) is not Edition.INSTRUCTOR:
        built = f"built on {date}"
    elif commit != NOT_IN_GIT:
        built = f"built from commit {commit} on {date}"
    else:
        built = f"built from {NOT_IN_GIT} on {date}"
    context["coursebook_stamp"] = (f"{executed}; {built}." if executed else
                                   built[0].upper() + built[1:] + ".")
