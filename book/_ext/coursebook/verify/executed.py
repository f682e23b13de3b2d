"""The chapter being read, as it ran: taken from the cache once, whichever checks read it.

Reading a notebook back from jupyter-cache costs about 0.1 s for PT01; the outputs kept for
the expected outputs and the claims' verdicts read the same one.
"""

from __future__ import annotations

import nbformat
from sphinx.application import Sphinx

from coursebook.config import book_config
from coursebook.execute.shared_cache import cached_notebook
from coursebook.prepare.chapters import PreparedChapter

# Sphinx empties temp_data after each page is read: the notebook lives as long as its read.
_EXECUTED = "coursebook_executed"


def executed_notebook(app: Sphinx, prepared: PreparedChapter) -> nbformat.NotebookNode | None:
    """The prepared notebook with its outputs (a recorded chapter's from its recordings);
    None when it is not cached (a failed run: reported where it failed)."""
    if prepared.recorded is not None:
        return prepared.recorded
    temp = app.env.temp_data
    if _EXECUTED not in temp:
        temp[_EXECUTED] = cached_notebook(book_config(app.config).cache_path, prepared.notebook)
    return temp[_EXECUTED]
