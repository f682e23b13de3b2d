"""Expected outputs: what each executed code cell must show, per torch version.

For every chapter a build executes there is one text file per torch version,
``book/expected/torch-<version>/<chapter>.txt``, written by ``make accept-outputs`` and
reviewed as a diff. Each entry is one code cell: a header naming the cell (a hash of its
code and its first line) and, indented, the text the cell shows after the book's
normalisation. An entry marked ``(student)`` or ``(instructor)`` holds an output that
differs between the editions; an unmarked entry holds for both. Every build compares
the executed (or cached) outputs with the file for its torch version.

This is the chapters' counterpart of the exhibits' error records (``exhibits/``), which
hold one error text per torch version; ``make accept-outputs`` writes both.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from coursebook.execute.long_outputs import as_displayed
from coursebook.model.faults import shown_path
from coursebook.model.notebooks import content_keys, short_digest
from coursebook.model.outputs import normalise
from coursebook.model.versions import release
from coursebook.page_state import CellOutput
from coursebook.prepare.editions import Edition

ACCEPT_COMMAND = "make accept-outputs"
EDITIONS = tuple(edition.value for edition in Edition)  # as an expectations file names them
# Cell metadata that exempts a cell from verification; its value is the reason, shown in
# the build log.
UNVERIFIED_KEY = "unverified"
_HEADER = re.compile(r"^=== cell (?P<key>[0-9a-f]{8}(?:\.\d+)?)"
                     r"(?: \((?P<edition>student|instructor)\))? · (?P<first>.*)$")
_INDENT = "    "
# The name a file is written under before it is renamed into place (``.pt01.txt.24294``):
# no edit of the book (the preview ignores it).
PARTIAL_FILE = r"(^|/)\.[^/]+\.txt\.\d+$"


class ExpectationsError(Exception):
    """An expectations file that cannot be read."""


def expectations_path(expected_dir: Path, torch_version: str, chapter: str) -> Path:
    """The file, relative to the working folder when it lies under it (as messages show it)."""
    return shown_path(expected_dir / f"torch-{release(torch_version)}" / f"{chapter}.txt")


# --- What a cell shows -----------------------------------------------------------------

def shown_text(cell: nbformat.NotebookNode) -> str:
    """A code cell's outputs as the page shows them, as text, normalised.

    An image counts by the text that comes with it: the book's figures put the data they
    draw there, so a figure is verified by its data, never by its pixels. A progress bar
    counts by what it shows last (carriage returns applied); an output too long for a
    page by its start, its end and the digest of the whole (:mod:`coursebook.execute.long_outputs`).
    """
    parts = []
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(output.get("text", ""))
        elif kind == "error":
            parts.append(f"{output.get('ename')}: {output.get('evalue')}\n")
        else:
            data = output.get("data", {})
            image = next((mime for mime in sorted(data) if mime.startswith("image/")), None)
            if image is not None:
                parts.append(f"[{image}] {data.get('text/plain', '')}\n")
            elif "text/markdown" in data:
                parts.append(data["text/markdown"].rstrip("\n") + "\n")
            else:
                parts.append(data.get("text/plain", "").rstrip("\n") + "\n")
    text = normalise(as_displayed("".join(parts)))
    return "\n".join(line.rstrip() for line in text.rstrip("\n").splitlines())


def code_digest(source: str) -> str:
    """A cell's key before numbering: a hash of its code."""
    return short_digest(source.strip())


def cell_keys(notebook: nbformat.NotebookNode) -> list[str]:
    """A key per code cell: a hash of its code, numbered when the same code recurs.

    Prose edits never change a key; editing a cell's code gives it a new one.
    """
    return content_keys((cell.source.strip() for cell in notebook.cells
                         if cell.cell_type == "code"), ".")


def cell_outputs(notebook: nbformat.NotebookNode) -> list[CellOutput]:
    """Every code cell of an executed notebook, with its key and shown text."""
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    return [CellOutput(key, number, cell.source, shown_text(cell),
                       str(cell.metadata.get(UNVERIFIED_KEY, "")))
            for number, (key, cell) in enumerate(zip(cell_keys(notebook), code), 1)]


# --- The file --------------------------------------------------------------------------

@dataclass
class Expectations:
    """Expected text per edition and cell key, in the chapter's cell order."""

    header: list[str] = field(default_factory=list)
    by_edition: dict[str, dict[str, str]] = field(
        default_factory=lambda: {edition: {} for edition in EDITIONS})
    first_lines: dict[str, str] = field(default_factory=dict)


def read_expectations(path: Path) -> Expectations | None:
    """The file's expectations, or None when there is none for this torch version."""
    if not path.is_file():
        return None
    found = Expectations()
    current: list[tuple[str, str]] = []
    lines: list[str] = []

    def close() -> None:
        text = "\n".join(lines).rstrip("\n")
        for edition, key in current:
            found.by_edition[edition][key] = text

    for number, line in enumerate(path.read_text(encoding="utf8").splitlines(), 1):
        header = _HEADER.match(line)
        if header:
            close()
            key, edition = header["key"], header["edition"]
            current = [(e, key) for e in ([edition] if edition else EDITIONS)]
            found.first_lines[key] = header["first"]
            lines = []
        elif line.startswith("#") and not current:
            found.header.append(line)
        elif line.startswith(_INDENT) or not line:
            if current:
                lines.append(line[len(_INDENT):])
        else:
            raise ExpectationsError(f"{path}:{number}: expected an indented output line or "
                                    "an '=== cell' header; rewrite it with "
                                    f"`{ACCEPT_COMMAND}`")
    close()
    return found


def write_expectations(path: Path, expectations: Expectations,
                       order: Callable[[], list[str]], header: list[str]) -> bool:
    """Write the file; returns False (and writes nothing) when nothing changed.

    ``order()`` gives the cells' keys in the chapter's order; asked only when writing.
    """
    old = read_expectations(path)
    if old is not None and old.by_edition == expectations.by_edition:
        return False
    student, instructor = (expectations.by_edition[e] for e in EDITIONS)
    keys = [key for key in order() if key in student or key in instructor]
    keys += [key for key in {**instructor, **student} if key not in keys]
    out = header + [""]
    for key in keys:
        first = expectations.first_lines.get(key, "")
        texts = {e: expectations.by_edition[e][key] for e in EDITIONS
                 if key in expectations.by_edition[e]}
        if len(texts) == 2 and len(set(texts.values())) == 1:
            texts = {"": texts[Edition.STUDENT.value]}
        for edition, text in texts.items():
            marker = f" ({edition})" if edition else ""
            out.append(f"=== cell {key}{marker} · {first}")
            out += [f"{_INDENT}{line}" if line else "" for line in text.splitlines()]
    path.parent.mkdir(parents=True, exist_ok=True)
    # Whole or not at all: the other edition, built at the same time, may be reading it.
    partial = path.with_name(f".{path.name}.{os.getpid()}")  # as PARTIAL_FILE matches it
    partial.write_text("\n".join(out) + "\n", encoding="utf8")
    partial.replace(path)
    return True


def accept(expectations: Expectations | None, edition: str,
           outputs: list[CellOutput]) -> Expectations:
    """The expectations with this edition's outputs taken as they are now."""
    updated = expectations or Expectations()
    updated.by_edition[edition] = {o.key: o.text for o in outputs if not o.unverified}
    updated.first_lines.update({o.key: o.first_line for o in outputs})
    return updated


# --- Comparing -------------------------------------------------------------------------

@dataclass(frozen=True)
class Mismatch:
    """A cell whose output differs from its expectation, or has none."""

    cell: CellOutput
    expected: str | None

    def diff(self, path: Path) -> str:
        if self.expected is None:
            shown = "\n".join(f"    {line}" for line in self.cell.text.splitlines())
            return (f"has no expected output in {path} (its code is new or changed); "
                    f"it shows:\n{shown or '    (nothing)'}")
        lines = difflib.unified_diff(self.expected.splitlines(), self.cell.text.splitlines(),
                                     f"expected ({path})", "this build", lineterm="")
        return "shows a different output:\n" + "\n".join(f"    {line}" for line in lines)


def compare(expectations: Expectations, edition: str,
            outputs: list[CellOutput]) -> list[Mismatch]:
    """Every verified cell whose shown text is not its expected text."""
    expected = expectations.by_edition[edition]
    return [Mismatch(o, expected.get(o.key)) for o in outputs
            if not o.unverified and expected.get(o.key) != o.text]
