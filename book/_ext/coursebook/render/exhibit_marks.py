"""The museum's verdicts, kept quiet: each check's line becomes a small mark on the page.

Each exhibit's hidden check cells (:func:`coursebook.model.museum.check_cells`) print one line,
"✓ Raised exactly the error recorded for torch 2.13.0 (where, when)." On a page that line
becomes a mark, a tick and a few words, which opens on demand to show it; in print the line
stays as it is. What torch changed since the museum's record (the "changed since" box)
stays in view: that is the subject, not the verification.
"""

from __future__ import annotations

from html import escape

from docutils import nodes
from sphinx.application import Sphinx

from coursebook.config import book_config
from coursebook.model.museum import ExhibitError, check_cells
from coursebook.page_state import chapter_notebook
from coursebook.verify.chapter_checks import code_cells

MARK_CLASS = "exhibit-mark"
TICK = "✓"


def _mark(paragraph: nodes.paragraph, label: str) -> list[nodes.Node]:
    """The line inside a ``<details>`` whose summary is the tick and the label."""
    opening = f'<details class="{MARK_CLASS}"><summary>{TICK} {escape(label)}</summary>'
    return [nodes.raw("", opening, format="html"), paragraph.deepcopy(),
            nodes.raw("", "</details>", format="html")]


def quiet_exhibit_checks(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read``: in a chapter showing exhibits, each check's line becomes a mark."""
    notebook = chapter_notebook(app.env, app.env.docname)
    if notebook is None:
        return
    try:
        checks = check_cells(book_config(app.config).museum())
    except ExhibitError:
        return  # the chapters that place the exhibits report it
    for cell in code_cells(doctree):
        index = cell.get("cell_index")
        if index is None or index >= len(notebook.cells):
            continue
        label = checks.get(notebook.cells[index].source)
        if label is None:
            continue
        for paragraph in list(cell.findall(nodes.paragraph)):
            if paragraph.astext().startswith(TICK):
                paragraph.replace_self(_mark(paragraph, label))
                break
