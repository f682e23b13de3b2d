"""Chapter notebooks: reading and writing MyST Markdown, and the book's cell tags.

A chapter is a MyST Markdown notebook (myst-nb's format). Every other module reads
chapters, writes them back and asks about tags through this one.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable

import nbformat
import yaml
from myst_nb.core.read import is_myst_markdown_notebook, read_myst_markdown_notebook
from myst_parser.config.main import MdParserConfig

from coursebook.model.solutions import solutions_as_answers

# --- The book's tags (myst-nb's own, such as remove-cell, keep their meaning) ----------
ANSWER_TAG = "answer"  # instructor material, dropped from the student edition
RAISES_TAG = "raises-exception"  # the cell's error is its lesson (nbclient's tag)
BOOK_ONLY_TAG = "book-only"  # runs in the book (a figure, say), left out of downloads
# Shown only in downloads (with remove-cell, which hides it in the book): an exhibit's
# expected error, say, which the book shows by running the check instead.
DOWNLOAD_ONLY_TAG = "download-only"
# A recorded chapter's cells (coursebook.model.recordings): which machine kinds run them.
ACCELERATOR_ONLY_TAG = "accelerator-only"  # needs a real accelerator: not the stand-in
STAND_IN_ONLY_TAG = "stand-in-only"  # a CPU reproduction: only the stand-in runs it
# A cell that runs its code in a new Python process (and the cells that check it): a
# recording runs these in a kernel that holds no device, so that the new process can take it.
FRESH_PYTHON_TAG = "fresh-python"
# A check of a sentence above it (coursebook.model.claims): runs on every build, never shown.
CLAIM_TAG = "claim"
# Where a new runtime starts on a machine with the device (coursebook.prepare.runtime_setup):
# a cell that prints nothing where nothing holds the device.
RESTART_TAG = "runtime-restart"


def cell_tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def is_answer(cell) -> bool:
    return ANSWER_TAG in cell_tags(cell)


def is_claim(cell) -> bool:
    return cell.get("cell_type") == "code" and CLAIM_TAG in cell_tags(cell)


def first_line(cell) -> str:
    """How messages name a cell: its first line of code or text."""
    return (cell.source.strip().splitlines() or [""])[0]


def short_digest(text: str) -> str:
    """Eight hex digits of the text's sha256: how the book keys a cell by its content."""
    return hashlib.sha256(text.encode("utf8")).hexdigest()[:8]


def content_keys(texts: Iterable[str], separator: str) -> list[str]:
    """A short hash of each text, numbered (``separator`` 2, 3, …) when a text recurs: the
    same texts get the same keys on every run, and an edit changes only its own key."""
    seen: Counter[str] = Counter()
    keys = []
    for text in texts:
        digest = short_digest(text)
        seen[digest] += 1
        keys.append(digest if seen[digest] == 1 else f"{digest}{separator}{seen[digest]}")
    return keys


def with_stable_ids(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook, each cell's id derived from its type and source (nbformat draws them
    at random): a notebook written again from the same chapter diffs only where it changed."""
    texts = (f"{cell.cell_type}\n{cell.source}" for cell in notebook.cells)
    for cell, key in zip(notebook.cells, content_keys(texts, "-")):
        cell.id = key
    return notebook


def line_of(source: str, chapter_text: str) -> int:
    """The 1-based line of the chapter file where a cell's source starts (0: not found):
    where it starts a line, as a cell's source does, before a mention inside prose."""
    wanted = source.strip()
    if not wanted:
        return 0
    starts_line = re.search(rf"^[ \t]*{re.escape(wanted)}", chapter_text, re.MULTILINE)
    position = starts_line.start() if starts_line else chapter_text.find(wanted)
    return chapter_text.count("\n", 0, position) + 1 if position >= 0 else 0


# --- Reading and writing --------------------------------------------------------------

def is_chapter_source(text: str) -> bool:
    """A page is a chapter notebook when its top matter says so (myst-nb's own rule)."""
    return is_myst_markdown_notebook(text)


def read_chapter(text: str, md_config: MdParserConfig | None = None) -> nbformat.NotebookNode:
    """The chapter as written, every cell included; each sphinx-exercise solution in cells
    of its own, tagged as an answer (:mod:`coursebook.model.solutions`)."""
    notebook = read_myst_markdown_notebook(text, config=md_config or MdParserConfig())
    return solutions_as_answers(notebook, ANSWER_TAG)


def _plain(metadata) -> dict:
    """NotebookNode metadata as plain dicts and lists, which YAML can write."""
    return json.loads(json.dumps(metadata))


def notebook_to_myst(notebook: nbformat.NotebookNode) -> str:
    """Write a notebook back as MyST Markdown that myst-nb reads into the same cells."""
    metadata = {key: value for key, value in _plain(notebook.metadata).items()
                if key != "source_map"}
    parts = ["---", yaml.safe_dump(metadata, sort_keys=False).rstrip(), "---", ""]
    for cell in notebook.cells:
        metadata = _plain(cell.metadata)
        if cell.cell_type == "markdown":
            parts.append("+++" + (f" {json.dumps(metadata)}" if metadata else ""))
            parts += [cell.source, ""]
            continue
        directive = "{code-cell} ipython3" if cell.cell_type == "code" else "{raw-cell}"
        # Longer than any backtick run in the code, so that none closes it.
        fence = "`" * (max((len(run) for run in re.findall("`{3,}", cell.source)), default=2) + 1)
        parts.append(fence + directive)
        if metadata:
            parts += ["---", yaml.safe_dump(metadata, sort_keys=False).rstrip(), "---"]
        parts += [cell.source, fence, ""]
    return "\n".join(parts)


def replace_markers(notebook: nbformat.NotebookNode, marker: re.Pattern,
                    cells_for: Callable[[re.Match], list[nbformat.NotebookNode]]) -> None:
    """Replace each ``marker`` in a markdown cell by the cells ``cells_for`` makes of it;
    the text around a marker stays, as markdown cells of its own."""
    cells = []
    for cell in notebook.cells:
        if cell.cell_type != "markdown" or not marker.search(cell.source):
            cells.append(cell)
            continue
        position = 0
        for found in marker.finditer(cell.source):
            before = cell.source[position:found.start()].strip()
            if before:
                cells.append(nbformat.v4.new_markdown_cell(before))
            cells += cells_for(found)
            position = found.end()
        if cell.source[position:].strip():
            cells.append(nbformat.v4.new_markdown_cell(cell.source[position:].strip()))
    notebook.cells = cells
