"""The museum's check lines on a page: each ("✓ Raised exactly the error recorded for ...") a
tick that opens on demand in the instructor edition (in print the line stays), none for
students."""

from __future__ import annotations

from html import escape

from docutils import nodes
from sphinx.application import Sphinx

from coursebook.model.cell_notes import noted
from coursebook.page_state import chapter_notebook
from coursebook.prepare.chapters import edition_of
from coursebook.prepare.editions import Edition
from coursebook.verify.chapter_checks import code_cells

TICK = "✓"


def quiet_exhibit_checks(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read`` (a student's check cells go: their outputs were compared already)."""
    notebook = chapter_notebook(app.env, app.env.docname)
    if notebook is None:
        return
    for cell in list(code_cells(doctree)):
        index = cell.get("cell_index")
        # What a check cell verifies ("fix ran", "same error as recorded"); "" for others.
        label = (noted(notebook.cells[index], "check", "")
                 if index is not None and index < len(notebook.cells) else "")
        if not label:
            continue
        if edition_of(app) is Edition.STUDENT:
            cell.parent.remove(cell)
            continue
        for paragraph in list(cell.findall(nodes.paragraph)):
            if paragraph.astext().startswith(TICK):
                # The line inside a <details> whose summary is the tick and the label.
                opening = f'<details class="exhibit-mark"><summary>{TICK} {escape(label)}</summary>'
                paragraph.replace_self([nodes.raw("", opening, format="html"), paragraph.deepcopy(),
                                        nodes.raw("", "</details>", format="html")])
                break
