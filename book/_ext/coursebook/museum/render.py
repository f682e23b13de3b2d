"""The museum on a page: each check line a tick the instructor opens (in print the line stays),
none for students; each exhibit's reveal holding the rest of the exhibit."""

from __future__ import annotations

from html import escape

from docutils import nodes
from sphinx.application import Sphinx

from coursebook.model.cell_notes import noted
from coursebook.museum.prepare import REVEAL_CLASS
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


def fold_reveals(doctree: nodes.document) -> None:
    """``doctree-read``: each exhibit's reveal takes in the rest of its section, the fix's code
    cell and output too, which no Markdown dropdown can hold."""
    for reveal in list(doctree.findall(nodes.container)):
        if REVEAL_CLASS in reveal.get("container_classes", ()):
            section, at = reveal.parent, reveal.parent.index(reveal) + 1
            rest = section.children[at:]
            del section.children[at:]
            reveal.extend(rest)
