"""What Sphinx and MyST say while they read a notebook chapter's page names the author's
cell (``lesson.ipynb:4``) and the line in it, as the book's own messages do: myst-nb numbers
a notebook page's lines as the cell's number times 10000 plus the line in the cell, and a
filter on Sphinx's handlers, after theirs wrote the place as ``path:line``, rewrites it.
"""

from __future__ import annotations

import logging
import re

from sphinx.util.logging import NAMESPACE

from coursebook.model.notebooks import NOTEBOOK_SUFFIX, notebook_place

_PLACE = re.compile(rf"(?P<path>.*{re.escape(NOTEBOOK_SUFFIX)}):(?P<line>\d+)")


def _name_the_cell(record: logging.LogRecord) -> bool:
    found = _PLACE.fullmatch(str(getattr(record, "location", None) or ""))
    place = notebook_place(int(found["line"])) if found else None
    if place is not None:
        cell, line = place
        record.location = f"{found['path']}:{cell}"
        record.msg = f"cell {cell}, line {line}: {record.msg}"
    return True


def name_notebook_cells() -> None:
    """At setup, when Sphinx's handlers are this build's: after their filters."""
    for handler in logging.getLogger(NAMESPACE).handlers:
        handler.addFilter(_name_the_cell)
