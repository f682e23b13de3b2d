"""Each cell's identity: the book's note in its metadata, made when a chapter is read, never
written back, hashed or downloaded (docs/architecture.md, "One identity per cell")."""

from __future__ import annotations

import copy

import nbformat

CELL_NOTE = "coursebook"


def noted(cell, name: str, default=None):
    return cell.get("metadata", {}).get(CELL_NOTE, {}).get(name, default)


def source_line(cell) -> int:
    """The cell's line in the author's file (0: none known)."""
    return int(noted(cell, "line", 0))


def cell_key(cell) -> str:
    """The key of a code cell whose outputs are expected ("": none)."""
    return str(noted(cell, "key", ""))


def note(cell, **values) -> None:
    cell.metadata[CELL_NOTE] = {**cell.metadata.get(CELL_NOTE, {}), **values}


def place_at(cell, line: int, of=None):
    """The cell, noted at ``line`` unless it has a line already (``of``: the author's cell it
    stands beside or was cut from)."""
    if not source_line(cell) and line:
        note(cell, line=line, **({"numbered": True} if of is not None and noted(of, "numbered")
                                 else {}))
    return cell


def note_added_lines(cell, at: int, count: int) -> None:
    """Note ``count`` lines the book wrote into the cell's source (a box, a see-also note)
    from its line ``at`` (0-based, in the source as it is now)."""
    note(cell, added=[*noted(cell, "added", []), [at, count]])


def line_within(cell, offset: int) -> int:
    """The author's line of the character at ``offset`` of the cell's source (0: none)."""
    return cell_line(cell, cell.source.count("\n", 0, offset))


def cell_line(cell, index: int) -> int:
    """The line of the author's file of line ``index`` (from 0) of the cell's source."""
    source, line = cell.source, source_line(cell)
    if noted(cell, "numbered"):
        return line  # a cell of an .ipynb (its line is its number), wherever in it
    blank = source.count("\n", 0, len(source) - len(source.lstrip()))  # before its line
    for at, count in reversed(noted(cell, "added", [])):
        if index >= at:
            index = max(at, index - count)
    return line and line - blank + index


def without_notes(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of the notebook without the book's notes, as myst-nb reads it back."""
    bare = copy.deepcopy(notebook)
    for cell in bare.cells:
        cell.metadata.pop(CELL_NOTE, None)
    return bare
