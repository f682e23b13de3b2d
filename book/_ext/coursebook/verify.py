"""Every executed cell did what its tags promise, or the build stops.

myst-nb and nbclient accept a ``raises-exception`` cell that does not raise, and in
cache mode a failing notebook is only a warning. This check reads the rendered cells
of each chapter: an error where none is expected, or none where one is promised,
is a build error naming the chapter, the cell and the error.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from docutils import nodes
from myst_nb.sphinx_ import NbMetadataCollector
from sphinx.application import Sphinx
from sphinx.util import logging

from .chapters import chapter_notebook
from .execution_key import FAILED_KEY
from .notebooks import RAISES_TAG

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CellProblem:
    """One cell that did not behave as its tags say."""

    line: int
    first_line: str
    what: str


def _code_cells(doctree: nodes.document) -> Iterator[nodes.container]:
    for node in doctree.findall(nodes.container):
        if node.get("nb_element") == "cell_code":
            yield node


def _cell_error(cell: nodes.container) -> str | None:
    for block in cell.findall(nodes.literal_block):
        if "traceback" in block.get("classes", []):
            return block.astext().strip()
    return None


def _line_of(source: str, chapter_text: str) -> int:
    """The 1-based line of the chapter file where a cell's source starts."""
    position = chapter_text.find(source.strip()) if source.strip() else -1
    return chapter_text.count("\n", 0, position) + 1 if position >= 0 else 0


def _short(error: str, lines: int = 12) -> str:
    kept = error.splitlines()[-lines:]
    return "\n      ".join(kept)


def cell_problems(doctree: nodes.document, sources: list[str], chapter_text: str,
                  succeeded: bool, traceback: str | None) -> list[CellProblem]:
    """What went wrong in one executed chapter, in cell order.

    ``sources`` are the executed notebook's cell sources (by myst-nb's cell index), so
    that a cell whose input is hidden is still named; ``chapter_text`` is the file.
    """
    problems: list[CellProblem] = []
    for cell in _code_cells(doctree):
        source = sources[cell["cell_index"]]
        tags = cell.get("cell_metadata", {}).get("tags", [])
        error = _cell_error(cell)
        where = dict(line=_line_of(source, chapter_text),
                     first_line=(source.strip().splitlines() or [""])[0])
        if error is not None and RAISES_TAG not in tags:
            problems.append(CellProblem(**where, what=(
                f"raised an error it was not tagged for:\n      {_short(error)}\n"
                f"    Fix the cell, or tag it `{RAISES_TAG}` if the error is what it teaches.")))
            # nbclient stops at the first unexpected error: later cells never ran.
            return problems
        if error is None and RAISES_TAG in tags:
            problems.append(CellProblem(**where, what=(
                f"is tagged `{RAISES_TAG}` but did not raise. Make it raise again, "
                "or drop the tag if it is meant to succeed.")))
    if not succeeded and not problems:
        problems.append(CellProblem(0, "(the notebook)", what=(
            f"failed to execute:\n      {_short(traceback or 'no traceback recorded')}")))
    return problems


def check_executed_chapter(app: Sphinx, doctree: nodes.document) -> None:
    """``doctree-read``: report each cell that broke its promise, as a build error."""
    env = app.env
    exec_data = NbMetadataCollector.get_exec_data(env, env.docname)
    if exec_data is None:
        return
    notebook = chapter_notebook(app, env.docname)
    sources = [cell.source for cell in notebook.cells] if notebook else []
    chapter_text = Path(env.doc2path(env.docname)).read_text(encoding="utf8")
    problems = cell_problems(doctree, sources, chapter_text,
                             bool(exec_data.get("succeeded")), exec_data.get("traceback"))
    for problem in problems:
        logger.error("code cell `%s` %s", problem.first_line, problem.what,
                     location=(env.docname, problem.line or None),
                     type="coursebook", subtype="execution")
    if problems:
        env.metadata[env.docname][FAILED_KEY] = True


def fail_build_on_failed_chapters(app: Sphinx, exception: Exception | None) -> None:
    """``build-finished``: a failed chapter fails the build, with or without ``-W``."""
    if exception is None and any(meta.get(FAILED_KEY) for meta in app.env.metadata.values()):
        app.statuscode = 1
