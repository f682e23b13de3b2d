"""Expected outputs, ``book/expected/torch-<version>/<chapter>.txt`` (docs/authoring.md,
"Expected outputs"): read, accepted, compared."""

from __future__ import annotations

import ast
import difflib
import json
import platform
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import nbformat

from coursebook.execute.kernel_forkserver import write_whole
from coursebook.execute.notebook_runs import as_displayed
from coursebook.model.cell_notes import CELL_NOTE, cell_key, source_line
from coursebook.model.faults import BookError, shown_path
from coursebook.model.notebooks import (
    BOOK_ONLY_TAG,
    UNVERIFIED_KEY,
    cell_tags,
    expects_output,
    parsed_cell,
    short_digest,
)
from coursebook.model.outputs import normalise, normalised_html
from coursebook.model.versions import release
from coursebook.page_state import CellOutput
from coursebook.prepare.editions import Edition
from coursebook.verify.varying_outputs import clock_readings, matches, suggest, what_varies

ACCEPT_COMMAND = "make accept-outputs"
EDITIONS = tuple(edition.value for edition in Edition)  # as an expectations file names them
_EDITION = r"(?: \((?P<edition>student|instructor)\))?"
_HEADERS = {  # an entry's header, by the kind of file
    "cell": re.compile(rf"^=== cell (?P<key>[0-9a-f]{{8}}(?:\.\d+)?){_EDITION}"
                       r"(?P<varies> \(varies\))? · (?P<first>.*)$"),
    "claim": re.compile(rf"^=== claim (?P<key>[0-9a-f]{{12}}){_EDITION}$")}
_SHAPES = {"cell": "`=== cell KEY (student) (varies) · FIRST LINE` (edition and mark optional, "
                   "in that order)", "claim": "`=== claim KEY (student)` (edition optional)"}
VARIES_MARK = " (varies)"
_RUNS = "# Accepted runs (a hash of the code, versions and platform each edition ran): "
_READS = "# Files the cells read (a hash of each): "  # another torch's file: stale when edited
INDENT = "    "


class ExpectationsError(BookError):
    """An expected outputs or accepted claims file that cannot be read."""


def entry_lines(kind: str, key: str, text: str, edition: str | None = None,
                varies: bool = False, first: str = "") -> list[str]:
    """An entry as :func:`read_expectations` reads it (``first``: a cell's first line)."""
    marks = (f" ({edition})" if edition else "") + (VARIES_MARK if varies else "")
    return [f"=== {kind} {key}{marks}" + (f" · {first}" if kind == "cell" else ""),
            *(f"{INDENT}{line}" if line else "" for line in text.splitlines())]


def expectations_path(expected_dir: Path, torch_version: str, chapter: str) -> Path:
    return shown_path(expected_dir / f"torch-{release(torch_version)}" / f"{chapter}.txt")


# --- What a cell shows -----------------------------------------------------------------

def shown_text(cell: nbformat.NotebookNode) -> str:
    """A code cell's outputs as the page shows them, as normalised text: an image by its text,
    where the book's figures put their data (a bare repr: :data:`~.outputs.BARE_REPR`)."""
    parts = []
    for output in cell.get("outputs", []):
        kind = output.get("output_type")
        if kind == "stream":
            parts.append(output.get("text", ""))
        elif kind == "error":
            parts.append(f"{output.get('ename')}: {output.get('evalue')}\n")
        else:  # a value glued unshown (myst-nb's display=False) by its types: pages paste it
            prefix = output.get("metadata", {}).get("scrapbook", {}).get("mime_prefix", "")
            data = {mime.removeprefix(prefix): v for mime, v in output.get("data", {}).items()}
            image = next((mime for mime in sorted(data) if mime.startswith("image/")), None)
            if image is not None:
                parts.append(f"[{image}] {data.get('text/plain', '')}\n")
            elif "application/vnd.jupyter.widget-view+json" in data or "<script" in str(
                    data.get("text/html", "")).lower():  # its text: as made; or a drawing its
                parts.append("[widget] <widget>\n")  # script makes (treescope's, plotly's)
            elif "text/html" in data and "text/markdown" not in data:  # as the page shows it
                parts.append(f"[text/html] {normalised_html(data['text/html'])}\n")
            else:
                text = data.get("text/markdown", data.get("text/plain", ""))
                parts.append(text.rstrip("\n") + "\n")
    text = normalise(as_displayed("".join(parts)))
    return "\n".join(line.rstrip() for line in text.rstrip("\n").splitlines())


def code_digest(source: str) -> str:
    """A cell's key before numbering."""
    return short_digest(source.strip())


def keyed_cells(notebook: nbformat.NotebookNode,
                downloaded: bool = False) -> list[tuple[str, nbformat.NotebookNode]]:
    """Each code cell whose output is expected, with its key (``downloaded``: no book-only)."""
    return [(cell_key(cell), cell) for cell in notebook.cells if expects_output(cell)
            and not (downloaded and BOOK_ONLY_TAG in cell_tags(cell))]


def cell_outputs(notebook: nbformat.NotebookNode,
                 ran: dict[str, nbformat.NotebookNode] | None = None) -> list[CellOutput]:
    """Each of :func:`keyed_cells` of an executed notebook, shown (given ``ran``, as its
    download's cells by key showed)."""
    return [CellOutput(key, number, cell.source, shown_text(cell if ran is None else ran[key]),
                       str(cell.metadata.get(UNVERIFIED_KEY, "")), source_line(cell))
            for number, (key, cell) in enumerate(keyed_cells(notebook, ran is not None), 1)]


# --- The file --------------------------------------------------------------------------

@dataclass
class Expectations:
    """Expected text per edition and cell key, in the chapter's cell order."""
    by_edition: dict[str, dict[str, str]] = field(
        default_factory=lambda: {edition: {} for edition in EDITIONS})
    first_lines: dict[str, str] = field(default_factory=dict)
    varying: dict[str, set[str]] = field(
        default_factory=lambda: {edition: set() for edition in EDITIONS})  # ``(varies)``
    runs: dict[str, str] = field(default_factory=dict)  # edition: its accepted run's digest
    reads: dict[str, str] = field(default_factory=dict)  # a file the cells read: its digest
    lines: dict[tuple[str, str], int] = field(default_factory=dict)  # (edition, key): line


def run_digest(notebook: nbformat.NotebookNode) -> str:
    """What decides a chapter's outputs (accepted again from one run, another output varies):
    its code cells, their execution versions, and the platform."""
    cells = [[cell.source, {key: value for key, value in cell.metadata.items() if key != CELL_NOTE}]
             for cell in notebook.cells if cell.cell_type == "code"]
    return short_digest(json.dumps([platform.system(), platform.machine(), cells],
                                   sort_keys=True, default=str))


def read_expectations(path: Path, kind: str = "cell") -> Expectations | None:
    """The file's expectations, or None when there is none for this torch version (``kind``
    claim: the accepted claims, each entry's text by its claim's digest)."""
    if not path.is_file():
        return None
    found, entries = Expectations(), []  # each one's header fields, line and indented lines
    for number, line in enumerate(path.read_text(encoding="utf8").splitlines(), 1):
        if header := _HEADERS[kind].match(line):
            entries.append((header.groupdict(), number, []))
        elif line.startswith(INDENT) or not line:
            if entries:  # as shown_text, without trailing spaces (an editor's)
                entries[-1][2].append(line[len(INDENT):].rstrip())
        elif line.startswith("#") and not entries:  # the header, written by each acceptance
            for start, pairs in ((_RUNS, found.runs), (_READS, found.reads)):
                if line.startswith(start):  # a pair a merge left half: none
                    pairs.update(pair.rsplit(" ", 1) for pair in line[len(start):].split(", ")
                                 if " " in pair)
        else:
            # Accepting reads the file first: it cannot mend it.
            raise ExpectationsError(
                f"neither an indented line nor a header {_SHAPES[kind]}: correct it, or "
                f"delete the file and accept anew with `{ACCEPT_COMMAND}`", path, number)
    for header, number, lines in entries:
        key = header["key"]
        found.first_lines[key] = header.get("first", "")  # in the file's order
        for edition in [header["edition"]] if header["edition"] else EDITIONS:
            found.by_edition[edition][key] = "\n".join(lines).rstrip("\n")
            found.lines[(edition, key)] = number
            if header.get("varies"):
                found.varying[edition].add(key)
    return found


def write_expectations(path: Path, expectations: Expectations, order: Callable[[], list[str]],
                       header: list[str], kind: str = "cell") -> bool:
    """Write the file (``order()``: the chapter's keys, asked only then); False when
    nothing changed (accepting one chapter rewrites no other's file)."""
    old = read_expectations(path, kind)
    if old is not None and ((old.by_edition, old.varying, old.reads)
                            == (expectations.by_edition, expectations.varying, expectations.reads)):
        return False
    student, instructor = (expectations.by_edition[e] for e in EDITIONS)
    keys = [key for key in dict.fromkeys(order()) if key in student or key in instructor]
    keys += [key for key in {**instructor, **student} if key not in keys]
    runs = {e: expectations.runs[e] for e in EDITIONS if e in expectations.runs}
    out = header + [start + ", ".join(f"{name} {digest}" for name, digest in pairs.items())
                    for start, pairs in ((_RUNS, runs), (_READS, expectations.reads)) if pairs]
    out.append("")
    for key in keys:
        first = expectations.first_lines.get(key, "")
        texts = {e: (expectations.by_edition[e][key], key in expectations.varying[e])
                 for e in EDITIONS if key in expectations.by_edition[e]}
        if len(texts) == 2 and len(set(texts.values())) == 1:
            texts = {"": texts[Edition.STUDENT.value]}
        for edition, (text, varies) in texts.items():
            out += entry_lines(kind, key, text, edition, varies, first)
    write_whole(path, "\n".join(out) + "\n")
    return True


@dataclass(frozen=True)
class TimeOfRun:
    """An output that holds the time its run ran at: two runs of one minute print it alike,
    a later run does not."""
    cell: CellOutput
    read: tuple[str, ...]  # the times of day it printed
    edition: str | None  # the edition its proposed entry names, if one only

    def message(self, path: Path) -> str:
        return (f"code cell `{self.cell.first_line}` is not accepted: its output holds the "
                f"time it ran ({', '.join(self.read)}), which a later run changes: print a "
                "fixed time instead (`datetime(2026, 1, 1, 9, 30)`, not `datetime.now()`), "
                f"or give it an entry in {path} marked `{VARIES_MARK.strip()}`, its time a "
                f"pattern{_proposal(self.cell, self.cell.text, self.edition)}")


def _proposal(cell: CellOutput, shown: str, edition: str | None) -> str:
    """A ``(varies)`` entry that ``shown`` and the cell's output both match, as a message ends
    it, then where marking is taught (the last line, where the log appends Sphinx's [type])."""
    marked = suggest(shown, cell.text)
    entry = "" if marked is None else ":" + "".join(
        f"\n{INDENT}{line}" for line in entry_lines("cell", cell.key, marked, edition, True,
                                                    cell.first_line))
    return entry + '\n    See docs/authoring.md, "Outputs that vary".'


def accept(expectations: Expectations | None, edition: str, outputs: list[CellOutput],
           run: str | None = None, since: datetime | None = None
           ) -> tuple[Expectations, list[TimeOfRun]]:
    """This edition's outputs (from ``run``) accepted; a ``(varies)`` entry the output
    still matches is kept, an edited cell's too. Refused (its old entry kept): an output
    holding a time of day the clock read since ``since``, the runs' start."""
    updated = expectations or Expectations()
    old, marked = updated.by_edition[edition], updated.varying[edition]
    kept = {o.key for o in outputs if o.key in marked and matches(old[o.key], o.text)}
    # An edited cell (a new key) takes the pattern of a marked entry whose cell is gone, when
    # its output matches that pattern and no other: a mark survives an edit.
    gone = [key for key in marked - {o.key for o in outputs} if key in old]
    carried = {}
    for output in (o for o in outputs if o.key not in old and not o.unverified):
        fits = [key for key in gone if matches(old[key], output.text)]
        if len(fits) == 1:
            carried[output.key] = old[fits[0]]
            gone.remove(fits[0])
    old = {**old, **carried}
    kept |= set(carried)
    other = updated.by_edition[next(e for e in EDITIONS if e != edition)]
    now = datetime.now(UTC)
    refused = [] if since is None else [
        TimeOfRun(o, read, None if other.get(o.key, o.text) == o.text else edition)
        for o in outputs if not o.unverified and o.key not in kept
        and (read := tuple(clock_readings(o.text, since, now)))]
    refused_keys = {r.cell.key for r in refused}
    held = kept | (refused_keys & old.keys())  # their old entries
    updated.by_edition[edition] = {o.key: old[o.key] if o.key in held else o.text
                                   for o in outputs if not o.unverified
                                   and (o.key in held or o.key not in refused_keys)}
    updated.varying[edition] = kept | (refused_keys & marked)
    updated.first_lines.update({o.key: o.first_line for o in outputs})
    if run is not None:
        updated.runs[edition] = run
    return updated, refused


def accept_into(path: Path, expectations: Expectations | None, edition: str,
                outputs: list[CellOutput], order: Callable[[], list[str]], header: list[str],
                run: str | None = None, since: datetime | None = None,
                reads: dict[str, str] | None = None) -> tuple[list[str], list[TimeOfRun]]:
    """:func:`accept`, then :func:`write_expectations` (the book's and a runtime's): the lines
    to show (each ``(varies)`` entry outgrown, written unmarked; the file) and the refused."""
    before = expectations or Expectations()
    marked = before.varying[edition]  # before accepting, which updates it
    accepted, refused = accept(expectations, edition, outputs, run, since)
    accepted.reads = accepted.reads if reads is None else reads  # a runtime's run: as it was
    shown = [f"{path}:{before.lines[(edition, o.key)]}: the output of `{o.first_line}` no longer "
             "matches its pattern: written as it is, unmarked" for o in outputs
             if o.key in marked and not o.unverified and o.key not in accepted.varying[edition]]
    if write_expectations(path, accepted, order, header):
        shown.append(f"wrote {path} ({edition} edition)")
    return shown, refused


# --- Comparing -------------------------------------------------------------------------

@dataclass(frozen=True)
class Mismatch:
    cell: CellOutput
    expected: str | None
    marked: bool = False  # its entry is marked ``(varies)``
    same_run: bool = False  # this build ran what the entry was accepted from
    line: int | None = None  # the entry's line in the file
    edition: str | None = None  # the edition the entry names, if it holds for one only
    replaced: str | None = None  # an edited cell's: the entry of the code it replaced

    @property
    def varies(self) -> bool:
        """The same run printed another output when it was accepted."""
        return self.same_run and not self.marked and self.expected is not None

    def diff(self, path: Path) -> str:
        if self.expected is None and self.replaced is None:
            shown = "\n".join(f"{INDENT}{line}" for line in self.cell.text.splitlines())
            return (f"has no expected output in {path} (its code is new or changed); "
                    f"it shows:\n{shown or '    (nothing)'}")
        before, label = ((self.expected, f"expected ({path})") if self.expected is not None
                         else (self.replaced, f"expected before the edit ({path})"))
        shown = "\n".join(f"{INDENT}{line}" for line in difflib.unified_diff(
            before.splitlines(), self.cell.text.splitlines(), label, "this build", lineterm=""))
        if self.expected is None:
            return (f"has no expected output in {path} (its code changed); against the "
                    f"entry of the code it replaced:\n{shown or '    (the same output)'}")
        if self.varies:
            return ("shows an output that varies between runs: the same code, versions and "
                    "platform printed the expected one when it was accepted:\n" + shown)
        if self.marked:
            return ("shows an output outside the pattern of its expected output (marked "
                    "`(varies)`):\n" + shown)
        return "shows a different output:\n" + shown

    def fix(self, path: Path) -> str:
        if not self.varies:
            return (f"If the new output is right, accept it with `{ACCEPT_COMMAND}` and "
                    f"review the diff of {path.parent}.")
        where = f"{path}:{self.line}" if self.line else str(path)
        words = [sorted(re.findall(r"[\w.+-]+", text)) for text in (self.expected, self.cell.text)]
        ids = [re.sub(r"\d{12,}", "", text) for text in (self.expected, self.cell.text)]
        varies = what_varies(self.expected, self.cell.text)
        return ("Accepting it again would not help. " + (  # a cause no seed fixes, maybe
                "It printed the same in another order: a shuffle, or a set's order (of objects: "
                "by where they lie in memory), which no seed fixes: keep them in a list, or "
                "print them `sorted(...)`. " if words[0] == words[1] else
                "Only its numbers of 12 or more digits differ: a seed drawn at random, or "
                "objects' `id()`s (where they lie in memory), which no seed fixes: print "
                "something else. " if ids[0] == ids[1] else "Only times or sizes differ: a "
                "clock's or a memory's, which no seed fixes (print what does not vary), or "
                "simulated ones, drawn. " if varies == "measured" else "")
                + ("Only temporary names (a temporary file's or folder's) or "
                   "dates differ, which no seed fixes: print what does not vary" if varies ==
                   "made" else "Its code makes a set, whose order differs between runs (of "
                   "strings too: Python draws their hashes anew), which no seed fixes: iterate "
                   "`sorted(...)` of it" if _makes_set(self.cell.source) else
                   "Seed what varies before its draw (`torch.manual_seed(0)`, "
                   "`np.random.seed(0)` or `random.seed(0)`, as the cell draws; a tensor made by "
                   "`torch.empty` or `torch.Tensor(2, 3)` holds what its memory held: fill it)")
                + f", or mark the part that varies in {where}: "
                f"`{VARIES_MARK.strip()}` after the cell's key, and `<number>`, `<duration>`, "
                f"`<size>`, `<date>` or `...` where the output varies"
                f"{_proposal(self.cell, self.expected, self.edition)}")


def _makes_set(source: str) -> bool:
    """Whether the code makes a set (`set(...)`, `{a, b}`, `{w for w in words}`)."""
    return any(isinstance(node, (ast.Set, ast.SetComp)) or isinstance(node, ast.Call) and getattr(
        node.func, "id", "") in ("set", "frozenset") for node in ast.walk(
            parsed_cell(source) or ast.Module([], [])))


def _replaced(expected: dict[str, str], outputs: list[CellOutput]) -> dict[str, str]:
    """For each cell without an entry, the entry of the code it replaced: between the
    nearest cells that kept theirs, as many entries gone as new cells, paired in order."""
    entries, keys = list(expected), [o.key for o in outputs]  # each in the chapter's order
    found: dict[str, str] = {}
    for _, i1, i2, j1, j2 in difflib.SequenceMatcher(None, entries, keys,
                                                     autojunk=False).get_opcodes():
        gone = [key for key in entries[i1:i2] if key not in keys]
        new = [key for key in keys[j1:j2] if key not in expected]
        if new and len(gone) == len(new):
            found.update({key: expected[old] for key, old in zip(new, gone)})
    return found


def compare(expectations: Expectations, edition: str, outputs: list[CellOutput],
            run: str | None = None) -> list[Mismatch]:
    """Every verified cell whose shown text is not (or does not match) its expected text."""
    expected, marked = expectations.by_edition[edition], expectations.varying[edition]
    other = next(e for e in EDITIONS if e != edition)
    same_run = run is not None and expectations.runs.get(edition) == run
    replaced = _replaced(expected, [o for o in outputs if not o.unverified])
    return [Mismatch(o, expected.get(o.key), o.key in marked, same_run,
                     expectations.lines.get((edition, o.key)),
                     edition if expectations.by_edition[other].get(o.key)
                     != expected.get(o.key) else None, replaced.get(o.key))
            for o in outputs if not o.unverified
            and (not matches(expected.get(o.key), o.text) if o.key in marked
                 else expected.get(o.key) != o.text)]
