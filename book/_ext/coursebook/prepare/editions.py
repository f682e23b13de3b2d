"""The two editions of a chapter: the student's drops the cells tagged ``answer`` and the
author's comments; the instructor's keeps and boxes them."""

from __future__ import annotations

import copy
import enum
import re
from collections.abc import Callable

import nbformat
from docutils import nodes

from coursebook.answer_checks.model import notebook_checks
from coursebook.answer_checks.prepare import cells_after
from coursebook.model.cell_notes import note_added_lines
from coursebook.model.notebooks import ANSWER_TAG, is_answer
from coursebook.model.solutions import is_solution_marker, without_comments, without_unshown
from coursebook.prepare.answer_space import answer_space_cell, answers

ANSWER_TITLE = "Instructor answer"
ANSWER_CLASS = "instructor-answer"


class Edition(enum.Enum):  # the Sphinx tag ``instructor`` selects the instructor's
    STUDENT = "student"
    INSTRUCTOR = "instructor"


def _box_answer(cell) -> None:
    """A markdown answer in an admonition, a leading heading outside (no section in one)."""
    lines = cell.source.strip().splitlines()
    heading = lines[0] if lines and lines[0].startswith("#") else ""
    body = "\n".join(lines[1:] if heading else lines)
    gap = "\n" * (len(body) - len(body.lstrip("\n")))  # the author's, after the heading
    body = body.strip()
    if not body:
        return
    longest = max((len(run) for run in re.findall(r"^:{3,}", body, re.M)), default=2)
    fence = ":" * (longest + 1)
    boxed = f"{fence}{{admonition}} {ANSWER_TITLE}\n:class: {ANSWER_CLASS}\n\n{body}\n{fence}"
    cell.source = f"{heading}\n{gap}{boxed}" if heading else boxed
    note_added_lines(cell, 1 + len(gap) if heading else 0, 3)


def edition_notebook(notebook: nbformat.NotebookNode, edition: Edition,
                     answer_spaces: bool = False, shown: Callable[[str], bool] = lambda _: True
                     ) -> nbformat.NotebookNode:
    """The student's lacks the answer cells (``answer_spaces``: a box stands for each) and the
    ``{only}`` blocks ``shown`` rejects; the instructor's boxes markdown ones (not a gated
    solution's ends: sphinx-exercise joins them as siblings only), code ones on the doctree."""
    instructor = edition is Edition.INSTRUCTOR
    checks = notebook_checks(notebook)
    spaces = ({start: answer_space_cell(cells) for start, cells in answers(notebook)}
              if answer_spaces and not instructor else {})
    edited = copy.deepcopy(notebook)
    cells, edited.cells = edited.cells, []
    for index, cell in enumerate(cells):
        if index in spaces:
            edited.cells.append(spaces[index])
        if instructor or not is_answer(cell):
            if cell.cell_type == "markdown" and is_answer(cell) and not is_solution_marker(cell):
                _box_answer(cell)
            if cell.cell_type == "markdown" and not instructor:  # each line kept: its place
                cell.source = without_unshown(without_comments(cell.source), shown)
            if instructor or cell.cell_type != "markdown" or cell.source.strip():
                edited.cells.append(cell)  # a comment alone is no cell (MyST writes none)
        edited.cells.extend(cells_after(cell, checks, instructor))
    # A substitution no cell of the student's uses is an answer's (`{{ ans }}`): the top matter
    # stays in the run's notebook (jupyter_execute/), which myst-nb's `{nb-download}` gives.
    substitutions = (edited.metadata.get("myst") or {}).get("substitutions")
    used = "\n".join(cell.source for cell in edited.cells) + str(substitutions)
    for name in list(substitutions) if isinstance(substitutions, dict) and not instructor else ():
        if not re.search(r"\{\{[^}]*\b" + re.escape(name) + r"\b", used):
            del substitutions[name]
    return edited


def box_code_answers(doctree) -> None:
    """Each rendered code answer in an admonition, on the doctree: its code is the cache key."""
    for cell in list(doctree.findall(nodes.container)):
        if cell.get("nb_element") == "cell_code" and f"tag_{ANSWER_TAG}" in cell["classes"]:
            box = nodes.admonition(classes=[ANSWER_CLASS])
            box += nodes.title(ANSWER_TITLE, ANSWER_TITLE)
            cell.parent.replace(cell, box)  # replace_self would copy the cell's classes
            box += cell
