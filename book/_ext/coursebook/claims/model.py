"""Claims: a sentence of the prose, checked by the asserts under a ``# claim:`` line quoting
it (an exhibit's ``[[claim]]``), or cited by ``% source: URL`` (docs/authoring.md, "Claims")."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import nbformat

from coursebook.model.cell_notes import CELL_NOTE, line_within, place_at, source_line
from coursebook.model.faults import BookError
from coursebook.model.notebooks import RAISES_TAG, cell_tags, first_line, is_claim
from coursebook.model.toml_files import NOT_READ, TomlFile

CLAIM_LINE = re.compile(r"^#\s*claim:[ \t]*(?P<says>.*?)[ \t]*$", re.M)
# A cited claim in a chapter: a MyST comment line `% source: URL` (any case and spacing);
# one whose first word is a letter off "source" (`% souce:`) is misspelled, not ignored.
SOURCE_COMMENT = re.compile(r"^%[ \t]*(?P<word>\w+)[ \t]*:[ \t]*(?P<url>\S*).*", re.M)
CITED_URL = re.compile(r"^https?://\S+$")

# Markup a reader does not see, dropped before comparing (its groups, else the whole match).
_ROLE_NAME = re.compile(r"\{[\w:.-]+\}(?=`)")
_ROLE_TARGET = re.compile(r"(?<=\})`[^`]*?(\s*<[^`<>]+>)`")
_LINK = re.compile(r"(\[)[^\]]*(\]\([^)\s]*\))")
_EMPHASIS = re.compile(r"[`*]+|(?<!\w)_+|_+(?!\w)")
# A sentence ends at a full stop (! or ?) before a space or the end (not the dot of
# `x.grad`, nor of "e.g.", "i.e.", "w.r.t.": a word's one lower-case letter after another's;
# "2.x." and "x.T." end one), a blank line, or a directive's fence line (a dropdown's
# ``:::{dropdown} Title`` is no part of the sentence under it).
_SENTENCE_END = re.compile(
    r"(?<!\b[a-z]\.[a-z])[.!?](?=\s|$)|\n\s*\n|^[ \t]*(?::{3,}|`{3,})[^\n]*\n", re.M)


@dataclass(frozen=True)
class Claim:  # at its sentence's line, or found in no sentence, its ``# claim:`` line's
    says: str
    line: int = field(default=0, metadata=NOT_READ)
    sentence: str = field(default="", metadata=NOT_READ)
    check: str = ""
    source: str = ""
    toml: str = field(default="", metadata=NOT_READ)  # an exhibit's claim: its file


@dataclass(frozen=True)
class ClaimBlock:  # a ``# claim:`` line of a claim cell and the code below it
    says: str
    code: str
    at: int  # where the code starts in the cell


@dataclass(frozen=True)
class Found:  # a fragment in a list of prose texts
    text: int
    start: int
    sentence: str


def _a_letter_off(word: str, target: str = "source") -> bool:  # a letter changed, added, dropped
    if len(word) == len(target):
        return sum(a != b for a, b in zip(word, target)) <= 1
    short, long = sorted((word, target), key=len)
    return len(long) == len(short) + 1 and any(long[:i] + long[i + 1:] == short
                                                for i in range(len(long)))


def claim_blocks(source: str) -> list[ClaimBlock]:
    """A claim cell's claims; code before the first ``# claim:`` line goes with the first."""
    claims = list(CLAIM_LINE.finditer(source))
    cuts = [len(source) - len(source.lstrip("\n")), *(claim.start() for claim in claims[1:]),
            len(source)]
    return [ClaimBlock(" ".join(claim["says"].split()), source[begin:end].rstrip("\n"), begin)
            for claim, begin, end in zip(claims, cuts, cuts[1:])]


def normalised(text: str) -> tuple[str, list[int]]:
    """The text as compared, and for each of its characters its index in ``text``."""
    hidden = {index for pattern in (_ROLE_NAME, _ROLE_TARGET, _LINK, _EMPHASIS)
              for match in pattern.finditer(text)
              for start, end in ([match.span(g) for g in range(1, pattern.groups + 1)]
                                 or [match.span()])
              for index in range(start, end)}
    chars: list[str] = []
    where: list[int] = []
    for index, char in enumerate(text):
        if index in hidden:
            continue
        if char.isspace():
            if not chars or chars[-1] == " ":
                continue
            char = " "
        chars.append(char.lower())
        where.append(index)
    return "".join(chars), where


def sentences_of(text: str) -> list[str]:
    cuts = [0, *(m.end() for m in _SENTENCE_END.finditer(text)), len(text)]
    return [" ".join(text[a:b].split()) for a, b in zip(cuts, cuts[1:]) if text[a:b].strip()]


def find_in_prose(fragment: str, texts: list[str]) -> Found | None:
    """Where the fragment is in these texts, the last (nearest a check below it) first."""
    wanted = normalised(fragment)[0].strip()
    if not wanted:
        return None
    for number in reversed(range(len(texts))):
        text = texts[number]
        flat, where = normalised(text)
        position = flat.rfind(wanted)
        if position >= 0:
            start, end = where[position], where[position + len(wanted) - 1] + 1
            # Its sentence, over the whole text: cut at ``start``, a full stop inside a name
            # (`x.y`) would end the text.
            begin = max((m.end() for m in _SENTENCE_END.finditer(text) if m.end() <= start),
                        default=0)
            stop = next((m.end() for m in _SENTENCE_END.finditer(text, end)), len(text))
            return Found(number, start, " ".join(text[begin:stop].split()))
    return None


def toml_claim(claim: Claim, prose: list[str], file: TomlFile, where: str) -> Claim:
    """An exhibit's (or a wing's) ``[[claim]]`` table, found in its ``prose`` fields."""
    if "\n" in claim.says.strip():
        raise file.fault(f"{where}.says", "spans lines", "quote a fragment of one sentence")
    if bool(claim.check.strip()) == bool(claim.source):
        raise file.fault(where, "gives both 'check' and 'source', or neither",
                         "give either 'check' (code that asserts the claim) or 'source' (the "
                         "address that shows it)")
    if claim.source and not CITED_URL.match(claim.source):
        raise file.fault(f"{where}.source", f"is {claim.source!r}",
                         "make it an address, https://...")
    found = find_in_prose(claim.says, prose)
    if found is None:
        raise file.fault(f"{where}.says", f"is not in the prose (title, lesson, notes): "
                         f"{claim.says!r}", "quote the text as written")
    return Claim(" ".join(claim.says.split()), file.line(f"{where}.says"), found.sentence,
                 claim.check.strip("\n"), claim.source, str(file.path))


@dataclass(frozen=True)
class ClaimCell:  # a claim and its cell's index in the notebook the edition executes
    index: int
    claim: Claim


@dataclass(frozen=True)
class ChapterClaims:
    """The claims a chapter checks, how many it cites, and the source comments that cite
    nothing (misspelled, or no address): line and text."""

    checked: tuple[ClaimCell, ...] = ()
    cited: int = 0
    unsourced: tuple[tuple[int, str], ...] = ()


def _located(cell, says: str, prose: list) -> Claim:
    """A chapter's claim at its sentence's line, or at its `# claim:` line when the prose
    above lacks its fragment."""
    code = cell.source
    found = find_in_prose(says, [text.source for text in prose])
    here = line_within(cell, CLAIM_LINE.search(code).start())  # after any set-up
    if found is None:
        return Claim(says, here, check=code)
    return Claim(says, line_within(prose[found.text], found.start) or here, found.sentence, code)


# A claim's run may raise (its verdict), and nothing of it is shown.
_RUN_TAGS = (RAISES_TAG, "remove-cell")


def chapter_claims(notebook: nbformat.NotebookNode, from_exhibits: dict[str, Claim],
                   source_path: str = "", written: nbformat.NotebookNode | None = None
                   ) -> ChapterClaims:
    """Every claim of an edition's notebook, located, each claim cell split into one hidden
    cell per claim; the source comments of ``written`` (the student's edition has none)."""
    cells, checked, prose, cited, unsourced = [], [], [], 0, []
    for cell in (written or notebook).cells:
        for comment in SOURCE_COMMENT.finditer(cell.source if cell.cell_type == "markdown" else ""):
            if not _a_letter_off(comment["word"].lower()):
                continue
            if comment["word"].lower() == "source" and CITED_URL.match(comment["url"]):
                cited += 1
            else:
                unsourced.append((line_within(cell, comment.start()), comment[0]))
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            prose.append(cell)
        elif is_claim(cell):
            blocks = claim_blocks(cell.source)
            if not blocks:
                raise BookError(f"claim cell `{first_line(cell)}` names no claim: begin it with "
                                "`# claim: ` and a fragment of the sentence above it",
                                source_path or None, source_line(cell))
            tags = cell_tags(cell) + [tag for tag in _RUN_TAGS if tag not in cell_tags(cell)]
            metadata = {key: value for key, value in cell.metadata.items() if key != CELL_NOTE}
            for block in blocks:
                split = place_at(nbformat.v4.new_code_cell(
                    block.code, metadata={**metadata, "tags": tags}), line_within(cell, block.at),
                    cell)
                claim = (from_exhibits.get(split.source.strip())
                         or _located(split, block.says, prose))
                checked.append(ClaimCell(len(cells), claim))
                cells.append(split)
            continue
        elif cell.cell_type == "code":
            prose = []
        cells.append(cell)
    notebook.cells = cells
    return ChapterClaims(tuple(checked), cited, tuple(unsourced))
