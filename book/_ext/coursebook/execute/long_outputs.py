"""Outputs too long for a page: the start and the end are kept, the cut is marked.

myst-nb merges a cell's streams in time quadratic in a line's length (a 5 MB line: hours),
so before a run is cached an output longer than :data:`LIMIT` keeps its first and last
:data:`KEEP` characters, and a marker line with a digest of the whole (normalised) output,
which the expected outputs verify. The page shows the marker without the digest.
"""

from __future__ import annotations

import re

import nbformat

from coursebook.model.notebooks import short_digest
from coursebook.model.outputs import normalise

LIMIT = 100_000  # characters of one output (a stream, a text result) shown in full
KEEP = 10_000  # characters kept at each end of a longer one
_DIGEST = 16  # hex digits of sha256 in the marker

CUT_MARKER = re.compile(r"^… (?P<what>[\d,]+ lines?|part of one line) cut "
                        r"\((?P<size>[\d,]+) characters(?P<digest>, sha256 [0-9a-f]+)?\) …$",
                        re.M)


def as_displayed(text: str) -> str:
    """The text as a terminal shows it: in each line, a carriage return followed by more
    text wipes what came before it (myst-nb's rule, in linear time)."""
    if "\r" not in text:
        return text
    lines = text.split("\n")
    for number, line in enumerate(lines):
        wiped = line.rfind("\r", 0, len(line) - 1)
        if wiped >= 0:
            lines[number] = line[wiped + 1:]
    return "\n".join(lines)


def cut(text: str) -> str:
    """The text as the book keeps it: unchanged up to :data:`LIMIT` characters; longer,
    as displayed and normalised, its middle replaced by a marker line."""
    if len(text) <= LIMIT:
        return text
    whole = normalise(as_displayed(text))
    if len(whole) <= LIMIT:
        return whole
    head = whole[:KEEP]
    end = head.rfind("\n")
    if end >= KEEP // 2:
        head = head[:end + 1]
    tail = whole[-KEEP:]
    start = tail.find("\n")
    if 0 <= start < KEEP // 2:
        tail = tail[start + 1:]
    middle = whole[len(head):len(whole) - len(tail)]
    lines = middle.count("\n")
    what = f"{lines:,} line{'s' if lines > 1 else ''}" if lines else "part of one line"
    digest = short_digest(whole, _DIGEST)
    marker = f"… {what} cut ({len(middle):,} characters, sha256 {digest}) …"
    if not head.endswith("\n"):
        head += "\n"
    return f"{head}{marker}\n{tail}"


def cut_long_outputs(notebook: nbformat.NotebookNode) -> None:
    """Shorten, in place, each output longer than :data:`LIMIT` (a stream merged first)."""
    for cell in notebook.cells:
        if cell.get("cell_type") != "code" or not cell.get("outputs"):
            continue
        streams = [o for o in cell.outputs if o.get("output_type") == "stream"]
        for name in {o.get("name") for o in streams}:
            pieces = [o for o in streams if o.name == name]
            if sum(len(piece.text) for piece in pieces) > LIMIT:
                pieces[0].text = cut("".join(piece.text for piece in pieces))
                cell.outputs = [o for o in cell.outputs if not any(o is p for p in pieces[1:])]
        for output in cell.outputs:
            data = output.get("data", {})
            if isinstance(data.get("text/plain"), str):
                data["text/plain"] = cut(data["text/plain"])


def without_digest(text: str) -> str:
    """The text as the page shows it: a cut's marker without its digest."""
    if "… " not in text:
        return text
    return CUT_MARKER.sub(lambda found: found[0].replace(found["digest"] or "", ""), text)
