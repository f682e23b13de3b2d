"""The museum's verdicts, kept quiet: each check's line becomes a small mark on the page.

Each exhibit's hidden check cells (:func:`coursebook.model.museum.check_cells`) print one line,
"✓ Raised exactly the error recorded for torch 2.13.0 (where, when)." In the instructor
edition that line becomes a mark, a tick and a few words, which opens on demand to show it
(in print the line stays as it is), and what torch changed since the museum's record (the
"changed since" boxes) stays in view. The student edition shows none of it: a student
reads the error and the fix; the downloads say how other torch releases word the error.
"""

from __future__ import annotations

from html import escape

from docutils import nodes
from sphinx.application import Sphinx

from coursebook.config import book_config
from coursebook.model.museum import ExhibitError, check_cells
from coursebook.page_state import chapter_notebook
from coursebook.prepare.chapters import edition_of
from coursebook.prepare.editions import Edition
from coursebook.verify.chapter_checks import code_cells

MARK_CLASS = "exhibit-mark"
TICK = "✓"


def quiet_exhibit_checks(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read``: in a chapter showing exhibits, each check's line becomes a mark;
    in the student edition each check cell goes (its output was compared already)."""
    notebook = chapter_notebook(app.env, app.env.docname)
    if notebook is None:
        return
    try:
        checks = check_cells(book_config(app.config).museum())
    except ExhibitError:
        return  # the chapters that place the exhibits report it
    for cell in list(code_cells(doctree)):
        index = cell.get("cell_index")
        if index is None or index >= len(notebook.cells):
            continue
        label = checks.get(notebook.cells[index].source)
        if label is None:
            continue
        if edition_of(app) is Edition.STUDENT:
            cell.parent.remove(cell)
            continue
        for paragraph in list(cell.findall(nodes.paragraph)):
            if paragraph.astext().startswith(TICK):
                # The line inside a <details> whose summary is the tick and the label.
                opening = f'<details class="{MARK_CLASS}"><summary>{TICK} {escape(label)}</summary>'
                paragraph.replace_self([nodes.raw("", opening, format="html"), paragraph.deepcopy(),
                                        nodes.raw("", "</details>", format="html")])
                break
