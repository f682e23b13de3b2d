"""Room to write: a ruled box where each answer was, in the student handout (docs/publishing.md):
a markdown cell, so the cached outputs stay the student notebook's; raw LaTeX, for print only."""

from __future__ import annotations

import math
import re

import nbformat

from coursebook.model.notebooks import is_answer

MIN_LINES, MAX_LINES = 4, 26
# Handwriting is larger than print: about 65 characters fill a ruled line of the A4 text
# width; a line of code is copied out as one line.
HANDWRITTEN_CHARS_PER_LINE = 65
LINE_SPACING_MM = 8
LABEL = "Your answer"
_LEAD_IN = re.compile(r"^\*\*(?P<number>\d+)\.")


def answers(notebook: nbformat.NotebookNode) -> list[tuple[int, list]]:
    found: list[tuple[int, list]] = []
    for index, cell in enumerate(notebook.cells):
        if not is_answer(cell):
            continue
        opens = cell.cell_type == "markdown" and cell.source.lstrip().startswith(("#", "**"))
        if index and is_answer(notebook.cells[index - 1]) and not opens:
            found[-1][1].append(cell)
        else:
            found.append((index, [cell]))
    return found


def answer_lines(cells: list) -> int:
    lines = 0
    for cell in cells:
        for line in cell.source.strip().splitlines():
            if (not line.strip()
                    or re.fullmatch(r"\s*#+\s.*", line) and cell.cell_type == "markdown"):
                continue  # blank lines and the answer's own heading need no room
            if cell.cell_type == "code":
                lines += 1
            else:
                lines += math.ceil(len(line.strip()) / HANDWRITTEN_CHARS_PER_LINE)
    return max(MIN_LINES, min(MAX_LINES, lines))


def answer_space_cell(cells: list) -> nbformat.NotebookNode:
    """The box, labelled with the number of the question its answer opens with (``**2.**``)."""
    first = next((line.strip() for line in cells[0].source.strip().splitlines()
                  if line.strip() and not line.lstrip().startswith("#")), "")
    label = f"{LABEL} ({match['number']})" if (match := _LEAD_IN.match(first)) else LABEL
    # One unbreakable box: the label, then ruled lines exactly LINE_SPACING_MM apart (a
    # box of MAX_LINES fits a page). Grey rules print on any printer; the frame and the
    # label say what the box is for.
    # The rule spans the box: a rule in a \vbox otherwise takes the vbox's own width, none.
    rule = (rf"\vbox to {LINE_SPACING_MM}mm{{\vfill\color{{black!45}}"
            r"\hrule width \hsize height 0.4pt}")
    return nbformat.v4.new_markdown_cell(
        "```{raw} latex\n\\par\\medskip\\noindent\\begin{minipage}{\\linewidth}"
        f"{{\\sffamily\\bfseries {label}}}\\par\\nobreak\\smallskip"
        "\\noindent\\fbox{\\begin{minipage}{\\dimexpr\\linewidth-2\\fboxsep-2\\fboxrule\\relax}"
        "\\offinterlineskip" + rule * answer_lines(cells) + "\\vspace{2mm}"
        "\\end{minipage}}\\end{minipage}\\par\\medskip\n```")
