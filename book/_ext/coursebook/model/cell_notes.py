"""Each cell's identity: the book's note in its metadata, made when a chapter is read.

The note sits under :data:`CELL_NOTE`. ``line``: the line of the author's file where the
cell's text starts (a cell the book adds stands at its marker's line, or the cell
before's); a Jupyter notebook's cells are ``numbered`` instead, the first 1. ``key``: for
a code cell whose outputs are expected, the name its expected output, pytest item and
comparisons go by. ``exhibit``: for a code cell an exhibit adds, the exhibit and the field
of its file it runs, which messages about the cell name; ``check``: a check cell's verdict. Messages name a cell by this line; nothing searches a file for its
text. The note is never written back, hashed into the cache key, or downloaded.
"""

from __future__ import annotations

import copy

import nbformat

CELL_NOTE = "coursebook"


def source_line(cell) -> int:
    """The cell's line in the author's file (0: none known)."""
    return int(cell.get("metadata", {}).get(CELL_NOTE, {}).get("line", 0))


def cell_key(cell) -> str:
    """The key of a code cell whose outputs are expected ("": none)."""
    return str(cell.get("metadata", {}).get(CELL_NOTE, {}).get("key", ""))


def note(cell, **values) -> None:
    cell.metadata[CELL_NOTE] = {**cell.metadata.get(CELL_NOTE, {}), **values}


def is_numbered(cell) -> bool:
    """Whether the cell's line is a cell's number (an ``.ipynb``'s), not a line of text."""
    return bool(cell.get("metadata", {}).get(CELL_NOTE, {}).get("numbered"))


def place_at(cell, line: int, of=None):
    """The cell, noted at ``line`` unless it has a line already (``of``: the author's cell it
    stands beside or was cut from); returned for chaining."""
    if not source_line(cell) and line:
        note(cell, line=line, **({"numbered": True} if of is not None and is_numbered(of)
                                 else {}))
    return cell


def note_added_lines(cell, at: int, count: int) -> None:
    """Note that the book wrote ``count`` lines of its own into the cell's source (a box,
    a see-also note), from its line ``at`` (0-based, in the source as it is now)."""
    note(cell, added=[*cell.metadata.get(CELL_NOTE, {}).get("added", []), [at, count]])


def line_within(cell, offset: int) -> int:
    """The line of the author's file holding the character at ``offset`` in the cell's
    source, past the lines the book added (0: the cell has no line)."""
    source, line = cell.source, source_line(cell)
    if is_numbered(cell):
        return line  # a cell of an .ipynb: its number, wherever in it
    blank = source.count("\n", 0, len(source) - len(source.lstrip()))  # before its line
    index = source.count("\n", 0, offset)
    for at, count in reversed(cell.get("metadata", {}).get(CELL_NOTE, {}).get("added", [])):
        if index >= at:
            index = max(at, index - count)
    return line and line - blank + index


def without_notes(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of the notebook without the book's notes, as myst-nb reads it back."""
    bare = copy.deepcopy(notebook)
    for cell in bare.cells:
        cell.metadata.pop(CELL_NOTE, None)
    return bare
